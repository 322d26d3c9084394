"""A release notebook opened alone, as on Colab or Kaggle: copied into an empty folder, with the
course address pointed at a student edition published from this checkout (`python -m grader
publish`), executed headless. Its set-up cell must fetch the edition, and the notebook must run as
a student sees it, up to the first task's check (sections 5 and 6: up to the cell that reads the
student's earlier notebooks, which asks for them to be written or pasted)."""

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from grader import publish, release
from grader.course import is_parts_cell, release_notebook


@pytest.fixture(scope="module")
def course_clone(tmp_path_factory):
    """A student edition published from this checkout, standing in for the public repository (or,
    under another platform's versions, the one COURSE_EDITION names, published under our pins)."""
    if os.environ.get("COURSE_EDITION"):
        return Path(os.environ["COURSE_EDITION"])
    target = tmp_path_factory.mktemp("origin") / "course-student"
    publish.publish(target)
    return target


@pytest.mark.parametrize("section", release.sections_with_solutions())
def test_a_release_notebook_alone_in_an_empty_folder_fetches_the_course_and_runs_to_the_first_task(
        section, course_clone, tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    monkeypatch.setenv("COURSE_REPO", course_clone.as_uri())
    opened = tmp_path / f"{section}.ipynb"
    opened.write_bytes(release_notebook(section).read_bytes())
    notebook = nbformat.read(opened, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as stopped:
        client.execute()
    setup = next(c for c in notebook.cells if c.cell_type == "code")
    printed = "".join(o.get("text", "") for o in setup.outputs)
    assert "Fetching the course" in printed and "Course ready" in printed, printed
    assert (tmp_path / "transformer-block-course" / "ticketnet.py").is_file()
    failed = next(c for c in notebook.cells if any(o.output_type == "error" for o in c.get("outputs", [])))
    if is_parts_cell(failed):  # sections 5 and 6 read the earlier notebooks, none of them written yet
        assert "paste" in str(stopped.value), str(stopped.value)[-2000:]
    else:
        assert failed.metadata.get("nbgrader", {}).get("grade"), "the first error is not a task's check"
        assert "not written yet" in str(stopped.value)
    ran = [c for c in notebook.cells[:notebook.cells.index(failed)] if c.cell_type == "code"]
    assert all(c.execution_count for c in ran), "a cell before the first check did not run"
    written = [name for name in os.listdir(tmp_path) if not name.endswith(".pt")]  # a trained model may be saved
    assert sorted(written) == sorted([opened.name, "transformer-block-course"])
    fetched = tmp_path / "transformer-block-course"
    assert not (fetched / "solutions").exists() and not (fetched / "grader" / "catalogue").exists()
