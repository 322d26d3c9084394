"""Catalogues of wrong answers and of alternative right answers, one module per section.

Every entry is the full text of an answer cell. tests/test_catalogue.py puts each entry in place
of the solution's answer cell and runs that task's check cell: a `Wrong` entry must fail with a
message containing each of its `expect` words (case ignored), a `Right` entry must pass.
"""

import contextlib
import importlib
import importlib.util
import io
import os
import time
import traceback
from dataclasses import dataclass

import nbformat

from grader.course import nbgrader_info, solution_notebook
from grader.judge import without_hidden_tests


@dataclass(frozen=True)
class Wrong:
    name: str  # the graded name (grade_id of the answer cell)
    mistake: str  # the mistake in a few words
    code: str  # the whole answer cell as the student wrote it
    expect: tuple  # words the failure message must contain


@dataclass(frozen=True)
class Right:
    name: str
    variant: str
    code: str


# section -> module of this package holding WRONG and RIGHT
MODULES = {"01-heads": "heads", "02-positions": "positions", "03-norms": "norms",
           "04-residuals": "residuals", "05-block": "block",
           "06-tiny-transformer": "tiny", "07-banking77": "banking"}


def load(section):
    """(WRONG, RIGHT) of a section."""
    module = importlib.import_module(f"grader.catalogue.{MODULES[section]}")
    return module.WRONG, module.RIGHT


def builds_on(section):
    """{task: the tasks its answers call}, for a section whose answers call earlier answers."""
    module = importlib.import_module(f"grader.catalogue.{MODULES[section]}")
    return getattr(module, "BUILDS_ON", {})


def answer_cells(notebook):
    """grade_id -> source of the autograded answer cells."""
    return {nbgrader_info(c)["grade_id"]: c.source for c in notebook.cells
            if c.cell_type == "code" and nbgrader_info(c).get("solution") and not nbgrader_info(c).get("grade")}


class Session:
    """A solution notebook executed once in this process; answer cells can be swapped and checks
    re-run. hidden=False leaves the hidden tests out of the check cells: the checks run as the
    student edition runs them."""

    def __init__(self, section, hidden=True):
        import matplotlib
        path = solution_notebook(section)
        self.notebook = nbformat.read(path, as_version=4)
        self.answers = answer_cells(self.notebook)
        shown = (lambda source: source) if hidden else without_hidden_tests
        self.checks = {nbgrader_info(c)["grade_id"]: shown(c.source) for c in self.notebook.cells
                       if c.cell_type == "code" and nbgrader_info(c).get("grade") and not nbgrader_info(c).get("solution")}
        self.namespace = {"__name__": "__main__"}
        self.folder = path.parent
        matplotlib.use("Agg")  # figures are drawn, not shown
        # As under nbgrader's autograder, so sections 6 and 7 train for a moment only. Set for
        # this run alone: kernels started later (nbval's) must not inherit it.
        os.environ["NBGRADER_EXECUTION"] = "autograde"
        start = time.process_time()
        try:
            for cell in self.notebook.cells:
                if cell.cell_type == "code":
                    grade_id = nbgrader_info(cell).get("grade_id")
                    self.run(self.checks.get(grade_id, cell.source))
        finally:
            del os.environ["NBGRADER_EXECUTION"]
        self.seconds = time.process_time() - start

    def run(self, source):
        with contextlib.chdir(self.folder), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            exec(compile(source, "<cell>", "exec"), self.namespace)

    def verdict(self, name, answer):
        """None when the check of `name` passes with `answer` in its cell, else the failure text.
        A check fails by AssertionError; anything else is a crash (of the answer cell or of the
        check) and is raised as one, so that no expected word can match it by chance."""
        try:
            self.run(answer)
            self.run(self.checks[f"test_{name}"])
            return None
        except AssertionError as error:
            return "".join(traceback.format_exception_only(type(error), error))
        finally:
            self.run(self.answers[name])
