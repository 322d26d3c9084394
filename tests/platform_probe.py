"""Run by a platform's own Python (tests/test_platforms.py): execute solution notebooks as the
autograder does, briefly (NBGRADER_EXECUTION set), and print as JSON, for each notebook, what it
showed that a clean run does not: an error, or anything on stderr (a warning, a traceback)."""

import json
import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def problems(path):
    """What a run of the notebook at `path`, in its own folder, showed besides its outputs."""
    notebook = nbformat.read(path, as_version=4)
    found = []
    try:
        NotebookClient(notebook, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    except CellExecutionError as error:
        found.append(f"an error: {str(error)[-3000:]}")
    for number, cell in enumerate(c for c in notebook.cells if c.cell_type == "code"):
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and output.name == "stderr":
                found.append(f"code cell {number} wrote to stderr: {output.text[:1500]}")
    return found


if __name__ == "__main__":
    os.environ["NBGRADER_EXECUTION"] = "autograde"  # the kernels inherit it
    print(json.dumps({path: problems(path) for path in sys.argv[1:]}))
