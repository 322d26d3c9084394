"""Repairing a broken submission before nbgrader sees it: which cells get their nbgrader metadata
back, which copies stop being graded, where a deleted check goes back, and the notes that tell
the student and the instructor what was done."""

import copy

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grader.course import release_notebook
from grader.repair import repair

SECTION = "01-heads"  # answers split_heads, merge_heads, key_padding_mask, MultiHead, each with its check


def grading(cell):
    return cell.metadata.get("nbgrader", {})


@pytest.fixture
def reference():
    return nbformat.read(release_notebook(SECTION), as_version=4)


def cell_of(notebook, grade_id):
    [cell] = [c for c in notebook.cells if grading(c).get("grade_id") == grade_id]
    return cell


def graded_ids(notebook):
    return [grading(c).get("grade_id") for c in notebook.cells if grading(c)]


@pytest.mark.parametrize("stripped, note", [
    (["test_MultiHead"], "nbgrader metadata restored on 1 cell (test_MultiHead)"),
    (["split_heads", "test_MultiHead"], "nbgrader metadata restored on 2 cells (split_heads, test_MultiHead)"),
    (["split_heads", "test_split_heads", "merge_heads"],
     "nbgrader metadata restored on 3 cells (split_heads, test_split_heads, merge_heads)"),
    (["split_heads", "test_split_heads", "merge_heads", "test_MultiHead"],
     "nbgrader metadata restored on 4 cells (split_heads, test_split_heads, merge_heads, ...)"),
])
def test_the_note_names_the_first_three_cells_whose_metadata_was_restored(reference, stripped, note):
    notebook = copy.deepcopy(reference)
    for grade_id in stripped:
        cell_of(notebook, grade_id).metadata = {}
    assert repair(notebook, reference) == [note]
    assert graded_ids(notebook) == graded_ids(reference)


def test_a_restored_cell_gets_the_release_cells_grading_and_locks_back(reference):
    # the last check only, after cells that kept their metadata; an editor dropped all of its own
    notebook = copy.deepcopy(reference)
    for grade_id in ("test_MultiHead", "MultiHead"):
        cell_of(notebook, grade_id).metadata = {}
    repair(notebook, reference)
    for grade_id in ("test_MultiHead", "MultiHead"):
        restored, release = cell_of(notebook, grade_id).metadata, cell_of(reference, grade_id).metadata
        assert restored == {key: release[key] for key in ("nbgrader", "editable", "deletable") if key in release}
    assert cell_of(notebook, "test_MultiHead").metadata["editable"] is False
    assert cell_of(notebook, "test_MultiHead").metadata["deletable"] is False


def test_an_answer_cell_is_recognised_by_its_definition_below_its_imports(reference):
    notebook = copy.deepcopy(reference)
    answer = cell_of(notebook, "merge_heads")
    answer.metadata, answer.id = {}, "retyped"  # a new cell: neither its id nor its text is the release's
    answer.source = "import torch\n\n\ndef merge_heads(h):\n    b, heads, s, dh = h.shape\n    return h.transpose(1, 2)"
    assert repair(notebook, reference) == ["nbgrader metadata restored on 1 cell (merge_heads)"]
    assert grading(answer) == grading(cell_of(reference, "merge_heads"))


def test_a_definition_never_restores_a_manually_graded_code_answer():
    # an instructor's own notebook: a code answer graded by hand, not by its check
    answer = new_code_cell("# YOUR CODE HERE", metadata={"nbgrader": {
        "grade": True, "solution": True, "locked": False, "grade_id": "plot_attention", "points": 2,
        "schema_version": 3, "task": False}})
    reference = new_notebook(cells=[answer])
    student = new_code_cell("def plot_attention(weights):\n    pass")
    notebook = new_notebook(cells=[student])
    # neither restored by its definition nor put back as if it were a deleted check
    assert repair(notebook, reference) == []
    assert notebook.cells == [student] and not grading(student)


def test_a_pasted_copy_of_a_check_is_not_graded_beside_the_original(reference):
    notebook = copy.deepcopy(reference)
    pasted = new_code_cell(cell_of(reference, "test_split_heads").source)  # new id, no metadata
    notebook.cells.append(pasted)
    assert repair(notebook, reference) == []
    assert not grading(pasted)
    assert graded_ids(notebook) == graded_ids(reference)


def test_a_check_that_lost_its_metadata_twice_is_graded_once(reference):
    notebook = copy.deepcopy(reference)
    check = cell_of(notebook, "test_split_heads")
    pasted = new_code_cell(check.source)
    check.metadata = {}
    notebook.cells.append(pasted)
    assert repair(notebook, reference) == ["nbgrader metadata restored on 1 cell (test_split_heads)"]
    assert grading(check)["grade_id"] == "test_split_heads" and not grading(pasted)


def test_a_deleted_check_goes_back_right_after_its_answer(reference):
    notebook = copy.deepcopy(reference)
    notebook.cells.remove(cell_of(notebook, "test_split_heads"))
    assert repair(notebook, reference) == ["the deleted check cell test_split_heads was put back"]
    assert [c.id for c in notebook.cells] == [c.id for c in reference.cells]
    assert cell_of(notebook, "test_split_heads") == cell_of(reference, "test_split_heads")


def test_a_check_deleted_with_its_answer_goes_back_at_the_end(reference):
    notebook = copy.deepcopy(reference)
    for grade_id in ("merge_heads", "test_merge_heads"):
        notebook.cells.remove(cell_of(notebook, grade_id))
    assert repair(notebook, reference) == ["the deleted check cell test_merge_heads was put back"]
    assert notebook.cells[-1] == cell_of(reference, "test_merge_heads")
    assert len(notebook.cells) == len(reference.cells) - 1


def test_deleted_answers_and_written_answers_are_not_put_back(reference):
    notebook = copy.deepcopy(reference)
    for grade_id in ("key_padding_mask", "question_mask_shape"):
        notebook.cells.remove(cell_of(notebook, grade_id))
    assert repair(notebook, reference) == []
    assert len(notebook.cells) == len(reference.cells) - 2


def test_running_a_put_back_check_leaves_the_release_notebook_as_it_was(reference):
    notebook = copy.deepcopy(reference)
    notebook.cells.remove(cell_of(notebook, "test_merge_heads"))
    repair(notebook, reference)
    before = copy.deepcopy(reference)
    put_back = cell_of(notebook, "test_merge_heads")
    # what executing it does: nbclient records timings in the metadata and appends the outputs
    put_back.metadata["execution"] = {"iopub.status.busy": "2026-12-01T10:00:00Z"}
    put_back.outputs.append(nbformat.v4.new_output("stream", name="stdout", text="ok\n"))
    assert reference == before


# --- the cell that loads earlier parts ---------------------------------------------------------

def _with_parts():
    """A release notebook with an earlier-parts cell between its imports and its code."""
    parts = new_code_cell('MultiHead = load_parts("01-heads", "MultiHead")', id="parts-cell")
    parts.metadata["tags"] = ["earlier-parts"]
    return new_notebook(cells=[new_code_cell("from ticketnet import load_parts", id="imports"), parts,
                               new_code_cell("block = MultiHead(64, 4)", id="use")])


@pytest.mark.parametrize("editor", ["metadata stripped", "metadata and ids stripped"])
def test_an_earlier_parts_cell_whose_tag_was_stripped_gets_it_back(editor):
    reference = _with_parts()
    notebook = copy.deepcopy(reference)
    for cell in notebook.cells:
        cell.metadata = {}
        if "ids" in editor:
            cell.id = f"other-{cell.id}"
    assert repair(notebook, reference) == ["the tag of the cell that loads earlier parts was put back"]
    assert [c.metadata.get("tags") for c in notebook.cells] == [None, ["earlier-parts"], None]


def test_a_deleted_earlier_parts_cell_goes_back_after_the_cell_it_followed():
    reference = _with_parts()
    notebook = copy.deepcopy(reference)
    del notebook.cells[1]
    notebook.cells.insert(0, new_code_cell("# a note of the student's"))
    assert repair(notebook, reference) == ["the deleted cell that loads earlier parts was put back"]
    assert [c.source for c in notebook.cells] == ["# a note of the student's", "from ticketnet import load_parts",
                                                  reference.cells[1].source, "block = MultiHead(64, 4)"]
    # a cell of the student's between the cell it followed and the next: right after the former
    notebook = copy.deepcopy(reference)
    notebook.cells[1] = new_code_cell("# mine")
    before = copy.deepcopy(reference)
    repair(notebook, reference)
    assert [c.source for c in notebook.cells] == ["from ticketnet import load_parts", reference.cells[1].source,
                                                  "# mine", "block = MultiHead(64, 4)"]
    notebook.cells[1].metadata["execution"] = {"iopub.status.busy": "2026-12-01T10:00:00Z"}  # as running it does
    notebook.cells[1].outputs.append(nbformat.v4.new_output("stream", name="stdout", text="ok\n"))
    assert reference == before  # the cell put back is a copy, not the release's own
    # the cell it followed edited by the student: found by its id; ids changed: found by its text
    notebook = copy.deepcopy(reference)
    notebook.cells[0].source = "from ticketnet import load_parts  # mine"
    notebook.cells[1] = new_code_cell("# mine")
    repair(notebook, reference)
    assert [c.source for c in notebook.cells][:3] == ["from ticketnet import load_parts  # mine",
                                                      reference.cells[1].source, "# mine"]
    notebook = new_notebook(cells=[new_code_cell("# a"), new_code_cell("# b"), copy.deepcopy(reference.cells[0]),
                                   copy.deepcopy(reference.cells[2])])
    for cell in notebook.cells:
        cell.id = f"other-{cell.id}"
    repair(notebook, reference)
    assert [c.source for c in notebook.cells] == ["# a", "# b", "from ticketnet import load_parts",
                                                  reference.cells[1].source, "block = MultiHead(64, 4)"]
    # the release's last cell: after the cell it followed
    last = new_notebook(cells=copy.deepcopy(reference.cells[:2]))
    notebook = new_notebook(cells=copy.deepcopy(last.cells[:1]))
    repair(notebook, last)
    assert [c.source for c in notebook.cells] == [c.source for c in last.cells]
    # the cell it followed deleted too: it goes back where the release has it
    notebook = copy.deepcopy(reference)
    del notebook.cells[:2]
    assert repair(notebook, reference) == ["the deleted cell that loads earlier parts was put back"]
    assert [c.source for c in notebook.cells] == [reference.cells[1].source, "block = MultiHead(64, 4)"]
    # a release that opens with it: it goes back first, not after the release's last cell
    first = new_notebook(cells=[copy.deepcopy(reference.cells[1]), copy.deepcopy(reference.cells[2])])
    notebook = copy.deepcopy(first)
    del notebook.cells[0]
    assert repair(notebook, first) == ["the deleted cell that loads earlier parts was put back"]
    assert [c.source for c in notebook.cells] == [first.cells[0].source, "block = MultiHead(64, 4)"]
    # neither neighbour left: where the release has it, as far as the notebook reaches
    notebook = new_notebook(cells=[new_code_cell("# all rewritten"), new_code_cell("# by the student")])
    repair(notebook, reference)
    assert [c.source for c in notebook.cells] == ["# all rewritten", reference.cells[1].source, "# by the student"]


def test_an_earlier_parts_cell_with_the_students_own_code_is_left_as_it_is():
    reference = _with_parts()
    notebook = copy.deepcopy(reference)
    notebook.cells[1].source = "class MultiHead(nn.Module):\n    pass  # pasted from section 1"
    assert repair(notebook, reference) == []
    assert notebook.cells[1].source.startswith("class MultiHead")
    notebook.cells[1].metadata = {}  # and an editor then strips its tag: found again by its id
    assert repair(notebook, reference) == ["the tag of the cell that loads earlier parts was put back"]
    assert [c.metadata.get("tags") for c in notebook.cells] == [None, ["earlier-parts"], None]
    assert len(notebook.cells) == 3 and notebook.cells[1].source.startswith("class MultiHead")
