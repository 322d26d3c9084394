"""What the grader sees and the student's feedback does not: the written answers' model answers and
mark schemes, shown under each answer in the autograded notebook that Formgrader opens, and the
check cells' hidden tests. All are nbconvert preprocessors that nbgrader runs
(grader.nbconfig.nbgrader_config)."""

import functools

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from grader.course import nbgrader_info, solution_notebook
from grader.judge import without_hidden_tests


MARK_SCHEME = "mark_scheme"  # cell.metadata["course"][MARK_SCHEME]: the written answer it belongs to


class AddMarkSchemes(Preprocessor):
    """`with_mark_schemes` as nbgrader's last autograding step: the autograded notebook, which
    Formgrader shows, has each written answer's model answer and mark scheme under it."""

    enabled = Bool(True)  # nbconvert's preprocessors run only when enabled

    def preprocess(self, nb, resources):
        return with_mark_schemes(nb, resources["nbgrader"]["assignment"]), resources


class DropMarkSchemes(Preprocessor):
    """Take out the cells `with_mark_schemes` added: a student's feedback never shows them."""

    enabled = Bool(True)  # nbconvert's preprocessors run only when enabled

    def preprocess(self, nb, resources):
        nb.cells = [c for c in nb.cells if MARK_SCHEME not in c.metadata.get("course", {})]
        return nb, resources


class DropHiddenTests(Preprocessor):
    """Show each check cell of the feedback as the release does: the judge's verdict says how its
    hidden tests went, and their inputs stay the instructor's, for the next class too."""

    enabled = Bool(True)  # nbconvert's preprocessors run only when enabled

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.cell_type == "code" and "### BEGIN HIDDEN TESTS" in cell.source:
                cell.source = without_hidden_tests(cell.source).rstrip("\n")  # as the release ends it
        return nb, resources


def is_written(cell):
    """A written answer: a markdown cell graded by hand."""
    meta = nbgrader_info(cell)
    return cell.cell_type == "markdown" and meta.get("grade") and meta.get("solution")


@functools.cache
def _mark_schemes(section):
    """grade_id -> the solution's text of each written answer (model answer and mark scheme)."""
    notebook = nbformat.read(solution_notebook(section), as_version=4)
    return {nbgrader_info(c)["grade_id"]: c.source for c in notebook.cells if is_written(c)}


def with_mark_schemes(notebook, section):
    """The notebook with each written answer followed by its model answer and mark scheme."""
    schemes, cells = _mark_schemes(section), []
    for cell in notebook.cells:
        cells.append(cell)
        grade_id = nbgrader_info(cell).get("grade_id")
        if grade_id in schemes and is_written(cell):
            cells.append(nbformat.v4.new_markdown_cell(
                f"**For the grader: the model answer and its mark scheme** (`{grade_id}`; never in the "
                f"student's feedback)\n\n{schemes[grade_id]}", metadata={"course": {MARK_SCHEME: grade_id}}))
    notebook.cells = cells
    return notebook
