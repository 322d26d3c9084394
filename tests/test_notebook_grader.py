"""The parts of grading one notebook that need no kernel: reading the file, telling its section,
the one-line reason when nbgrader fails, the failure message of each check, and the cells
interrupted at the time limit."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader import notebook_grader
from grader.course import release_notebook, solution_notebook

FIRST = "01-heads"


def _error(ename, evalue):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _stream(text):
    return new_output("stream", name="stdout", text=text)


# --- reading ----------------------------------------------------------------------------------

def test_a_notebook_is_read_as_nbformat_4(tmp_path):
    assert notebook_grader.read_notebook(release_notebook(FIRST)) == nbformat.read(release_notebook(FIRST), as_version=4)
    old = tmp_path / "old.ipynb"  # saved by a Jupyter of 2015
    nbformat.write(nbformat.v3.new_notebook(worksheets=[nbformat.v3.new_worksheet(
        cells=[nbformat.v3.new_code_cell("x = 1")])]), old, version=3)
    read = notebook_grader.read_notebook(old)
    assert (read.nbformat, [c.source for c in read.cells]) == (4, ["x = 1"])


@pytest.mark.parametrize("content, reason", [
    (None, "no such file"),
    ("", "the file is empty"),
    ('{"cells": [{"cell_type": "code", "sou', "not a readable notebook: the file is not valid notebook JSON "
                                             "(cut off, or saved by a program that is not Jupyter)"),
])
def test_an_unreadable_file_is_refused_with_its_reason_in_full(tmp_path, content, reason):
    path = tmp_path / "ada_01-heads.ipynb"
    if content is not None:
        path.write_text(content)
    with pytest.raises(notebook_grader.NotGradable) as refused:
        notebook_grader.read_notebook(path)
    assert str(refused.value) == reason


def test_a_folder_is_no_such_file(tmp_path):
    with pytest.raises(notebook_grader.NotGradable) as refused:
        notebook_grader.read_notebook(tmp_path)
    assert str(refused.value) == "no such file"


# --- identifying ------------------------------------------------------------------------------

def test_the_graded_ids_are_those_of_cells_with_nbgrader_metadata():
    notebook = new_notebook(cells=[
        new_code_cell("def f(): ...", metadata={"nbgrader": {"grade_id": "f", "solution": True}}),
        new_code_cell("assert f()", metadata={"nbgrader": {"grade_id": "test_f", "grade": True}}),
        new_code_cell("x = 1", metadata={"nbgrader": {"solution": False}}),
        new_markdown_cell("a note", metadata={"tags": ["f"]})])
    assert notebook_grader.graded_ids(notebook) == {"f", "test_f"}


def _one_cell(**mark):
    """A notebook sharing a single mark with a section: a graded id, a cell id, or a long text."""
    cell = new_code_cell(mark.get("text", "pass"), metadata=mark.get("metadata", {}))
    cell.id = mark.get("id", "handed-in-0")
    return new_notebook(cells=[cell])


def _solution_cell(section, grade_id):
    notebook = nbformat.read(solution_notebook(section), as_version=4)
    [cell] = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return cell


@pytest.mark.parametrize("section, grade_id", [("03-norms", "test_layer_norm"), ("05-block", "Block")])
@pytest.mark.parametrize("kind", ["grade_id", "id", "text"])
def test_one_shared_cell_tells_the_section_by_its_graded_id_its_cell_id_or_its_text(section, grade_id, kind):
    solution = _solution_cell(section, grade_id)
    shared = {"grade_id": {"metadata": {"nbgrader": {"grade_id": grade_id}}},
              "id": {"id": solution.id},
              "text": {"text": solution.source}}[kind]
    assert notebook_grader.identify(_one_cell(**shared)) == section


def test_cells_of_80_characters_or_fewer_do_not_mark_a_notebook_by_their_text():
    notebook = new_notebook()
    notebook.cells = [new_code_cell("x" * 80), new_code_cell("y" * 81), new_markdown_cell("import torch")]
    for cell in notebook.cells:
        del cell["id"]  # as in a notebook of nbformat 4.4, before cell ids
    marks = notebook_grader._fingerprint(notebook)
    assert [text for _, text in marks] == ["y" * 81]


def test_a_notebook_of_no_section_is_refused_with_the_reason_in_full():
    with pytest.raises(notebook_grader.NotGradable) as refused:
        notebook_grader.identify(_one_cell(text="print('my own notebook')"))
    assert str(refused.value) == "it is not a notebook of any section of this course (wrong file?)"


# --- why nbgrader failed ----------------------------------------------------------------------

LOG = """\
[AutogradeApp | INFO] Copying /course/submitted/ada/01-heads/01-heads.ipynb
[AutogradeApp | ERROR] There was an error processing assignment: /course/submitted/ada/01-heads
[AutogradeApp | ERROR] Traceback (most recent call last):
      File "/venv/lib/python3.12/site-packages/nbgrader/converters/base.py", line 375, in _convert
        output, resources = self.exporter.from_notebook_node(notebook, resources=resources)
    KeyError: 'nbgrader'

    During handling of the above exception, another exception occurred:

    Traceback (most recent call last):
      File "/venv/lib/python3.12/json/decoder.py", line 355, in raw_decode
    json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
    Traceback (most recent call last):
      File "/venv/lib/python3.12/site-packages/nbgrader/preprocessors/checkcellmetadata.py", line 51
    nbgrader.preprocessors.checkcellmetadata.SchemaTooOldError: Notebook '01-heads' uses an old schema
[AutogradeApp | ERROR] Traceback (most recent call last):
      File "/venv/lib/python3.12/site-packages/nbgrader/converters/base.py", line 420, in convert_notebooks
    nbgrader.converters.base.NbGraderException: Please see the error log above for details.
"""


@pytest.mark.parametrize("log, reason", [
    ('Traceback...\n    nbclient.exceptions.DeadKernelError: Kernel died\n[ERROR] There was an error',
     "the kernel died while running the notebook (a crash, os._exit, or too much memory); every task scores 0"),
    (LOG, "nbgrader could not grade it: nbgrader.preprocessors.checkcellmetadata.SchemaTooOldError: "
          "Notebook '01-heads' uses an old schema"),
    ("Traceback (most recent call last):\n    nbgrader.api.MissingEntry: No such grade cell\n"
     "    nbgrader.converters.base.NbGraderException: Please see the error log",
     "nbgrader could not grade it: nbgrader.api.MissingEntry: No such grade cell"),
    ("[AutogradeApp | ERROR] Killed\n    nbgrader.converters.base.NbGraderException: Please see the error log",
     "nbgrader could not grade it (see its log)"),
    ("", "nbgrader could not grade it (see its log)"),
])
def test_a_failed_nbgrader_run_is_named_by_its_last_error_in_one_line(log, reason):
    assert notebook_grader._reason(log) == reason


# --- interrupted cells of the autograded notebook ----------------------------------

def test_each_cell_that_ran_past_the_time_limit_is_named_by_its_number_and_first_line():
    cells = [new_markdown_cell("## Training"),
             new_code_cell("x = 1", execution_count=3, outputs=[_stream("1\n")]),
             new_code_cell("\n# train until it converges\nwhile loss > 0.01:\n    step()", execution_count=4,
                           outputs=[_error("CellTimeoutError", "A cell timed out while it was being executed")]),
             new_code_cell("assert f(2) == 4", execution_count=5, outputs=[_error("AssertionError", "")]),
             new_code_cell("for epoch in range(1_000_000):  # far more epochs than the time limit allows\n    step()",
                           execution_count=7, outputs=[_stream("epoch 0\n"), _error("CellTimeoutError", "timed out")]),
             # a blank cell has no line to quote (and nbclient never runs one)
             new_code_cell("  \n", outputs=[_error("CellTimeoutError", "timed out")])]
    assert notebook_grader._interrupted_cells(new_notebook(cells=cells), 30) == [
        "a cell ran past the 30 s limit and was interrupted: In [4], `# train until it converges`",
        "a cell ran past the 30 s limit and was interrupted: In [7], "
        "`for epoch in range(1_000_000):  # far more epochs than the t`"]
