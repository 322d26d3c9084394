"""A release notebook opened alone, as a student opens it on Colab or Kaggle: copied into an empty
folder, with the course address pointed at a student edition published from this checkout
(`python -m grader publish`) and served as a git repository (a file:// address), executed
headless. Its set-up cell must fetch the edition through its own clone, and the notebook must run
as a student meets it, in one kernel:
- untouched, it runs up to the first task's check and stops there (sections 5 and 6 may stop
  first at the cell that reads the student's earlier notebooks, which asks for them to be written
  or pasted);
- then, with the model answers written in and the earlier sections' code pasted where the notebook
  asks for it on Colab or Kaggle, it runs on from the first cell the student changed to the last:
  no cell raises, every check passes. The cells before it ran untouched, as they are, so this is
  the notebook run from top to bottom, with its fetch and its training done once.

tests/test_platforms.py runs this file under each platform's versions; PLATFORM_STANDIN then
names the module that tells the set-up cell which platform it is on (google.colab,
kaggle_secrets), and a stand-in of it is imported in the kernel before any cell runs."""

import ast
import os
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import ticketnet
from grader.course import SECTIONS, is_parts_cell, release_notebook, solution_notebook

# the name the set-up cell prints for each module that marks a platform (grader.setup_cell)
PLATFORM_NAMES = {"google.colab": "Colab", "kaggle_secrets": "Kaggle", "": "this computer"}


@pytest.fixture(scope="module")
def course_clone(tmp_path_factory):
    """A student edition published from this checkout, standing in for the public repository (or,
    under another platform's versions, the one COURSE_EDITION names, published under our pins)."""
    if os.environ.get("COURSE_EDITION"):
        return Path(os.environ["COURSE_EDITION"])
    # imported here alone: a platform's kept pass is keyed by the checkout's files it opens
    # (test_platforms.kept_pass), and the edition it is handed holds what publishing read
    from grader import publish
    target = tmp_path_factory.mktemp("origin") / "course-student"
    publish.publish(target)
    return target


# The kernel's sitecustomize on a platform: its module stands in, and a sitecustomize further along
# PYTHONPATH (the suite's trace of what a run reads, tests/read_trace) still runs
STANDIN = """import os, sys, types
sys.modules[{module!r}] = types.ModuleType({module!r})
for folder in os.environ["PYTHONPATH"].split(os.pathsep)[1:]:
    if os.path.isfile(os.path.join(folder, "sitecustomize.py")):
        with open(os.path.join(folder, "sitecustomize.py")) as file:
            exec(compile(file.read(), file.name, "exec"))
        break
"""


@pytest.fixture
def alone(course_clone, tmp_path, monkeypatch):
    """An empty folder to open a notebook in, on the platform PLATFORM_STANDIN names: the kernel
    imports a stand-in of that module first (sitecustomize), as the platform's own kernel does."""
    standin = os.environ.get("PLATFORM_STANDIN", "")
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("COURSE_REPO", course_clone.as_uri())
    if standin:
        site = tmp_path / "platform-site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(STANDIN.format(module=standin))
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    folder = tmp_path / "opened"
    folder.mkdir()
    return folder, PLATFORM_NAMES[standin]


def _past_the_abort(client, tries=50):
    """Return once the kernel runs requests again. After a cell's error, ipykernel aborts the
    requests that reach it before it has finished aborting; ipykernel 6.17 (Colab's and Kaggle's)
    can still be aborting when the next cell arrives, and nbclient takes an "aborted" reply as a
    cell that ran. The answered run's first cell then never ran: a flake of this test under load
    (CI, 2026-12-07: section 2's LearnedPositions "not written yet"), never a student's, who runs
    cells seconds apart."""
    from jupyter_core.utils import run_sync
    for _ in range(tries):
        reply = run_sync(client.async_wait_for_reply)(client.kc.execute("pass", silent=True, store_history=False))
        if reply["content"]["status"] == "ok":
            return
        time.sleep(0.1)
    raise AssertionError(f"the kernel still aborted every request after {tries} tries")


def _assert_fetched(notebook, folder, platform_name):
    setup = next(c for c in notebook.cells if c.cell_type == "code")
    printed = "".join(o.get("text", "") for o in setup.outputs)
    assert "Fetching the course" in printed and f"Course ready on {platform_name}." in printed, printed
    fetched = folder / "transformer-block-course"
    assert (fetched / "ticketnet.py").is_file()
    assert not (fetched / "solutions").exists() and not (fetched / "grader" / "catalogue").exists()


def answered_alone(section):
    """The release notebook of `section` as a student who wrote the model answers holds it on Colab:
    each answer cell (code and written) as the solution's, without nbgrader's solution markers,
    and the cell that reads earlier notebooks with their code pasted in place of its load_parts
    lines, as that cell asks there."""
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source
               for c in nbformat.read(solution_notebook(section), as_version=4).cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    notebook = nbformat.read(release_notebook(section), as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "\n".join(line for line in answers[grade_id].splitlines()
                                    if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
        elif is_parts_cell(cell):
            pasted = []
            for statement in ast.parse(cell.source).body:
                loaded = ticketnet.loads_parts(statement)
                pasted.append(ticketnet.part_source(solution_notebook(loaded[0]), loaded[1]) if loaded
                              else ast.get_source_segment(cell.source, statement))
            cell.source = "\n".join(pasted)
    return notebook


@pytest.mark.parametrize("section", SECTIONS)
def test_a_release_notebook_alone_fetches_the_course_stops_at_the_first_task_and_passes_once_answered(
        section, alone):
    """From the set-up cell's own fetch to the last cell, as the student runs it (no grading mode):
    section 6 reads its recorded tables from the fetched edition, section 7 its data."""
    folder, platform_name = alone
    opened = folder / f"{section}.ipynb"
    opened.write_bytes(release_notebook(section).read_bytes())
    untouched = nbformat.read(opened, as_version=4)
    client = NotebookClient(untouched, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})
    with client.setup_kernel():
        with pytest.raises(CellExecutionError) as stopped:
            for index, cell in enumerate(untouched.cells):
                client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
        _assert_fetched(untouched, folder, platform_name)
        failed = next(i for i, c in enumerate(untouched.cells)
                      if any(o.output_type == "error" for o in c.get("outputs", [])))
        if is_parts_cell(untouched.cells[failed]):  # sections 5 and 6 read the earlier notebooks, none written yet
            assert "paste" in str(stopped.value), str(stopped.value)[-2000:]
        else:
            assert untouched.cells[failed].metadata.get("nbgrader", {}).get("grade"), \
                "the first error is not a task's check"
            assert "not written yet" in str(stopped.value)
        ran = [c for c in untouched.cells[:failed] if c.cell_type == "code"]
        assert all(c.execution_count for c in ran), "a cell before the first check did not run"
        written = [name for name in os.listdir(folder) if not name.endswith(".pt")]  # a trained model may be saved
        assert sorted(written) == sorted([opened.name, "transformer-block-course"])

        _past_the_abort(client)
        answered = answered_alone(section)
        nbformat.write(answered, opened)
        changed = next(i for i, (before, after) in enumerate(zip(untouched.cells, answered.cells))
                       if before.source != after.source)
        assert changed <= failed, "the student must change a cell the untouched run never reached"
        client.nb = answered
        for index in range(changed, len(answered.cells)):  # raises on the first cell that raises
            client.execute_cell(answered.cells[index], index, execution_count=client.code_cells_executed + 1)
    checks = [c for c in answered.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert checks and answered.cells.index(checks[0]) >= changed
    for cell in checks:
        printed = "".join(o.get("text", "") for o in cell.outputs)
        assert "Check passed" in printed, f"{cell.metadata['nbgrader']['grade_id']}: {printed[-500:]}"
