"""Execute a notebook in place in its own folder, so its stored outputs are those of a fresh run."""

import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

from grader.nbconfig import kernel_arguments


def execute(path, timeout=600):
    """Run every cell of the notebook at `path` in a new kernel and save it with its outputs.

    A cell's printed lines are kept as one output per stream: how the kernel happened to flush them
    would otherwise show in the stored notebook and its diff."""
    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=timeout, kernel_name="python3", extra_arguments=kernel_arguments(warm=False),
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    notebook, _ = CoalesceStreamsPreprocessor().preprocess(notebook, {})
    nbformat.write(notebook, path)
    return time.perf_counter() - start
