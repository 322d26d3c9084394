"""Every check is proven against the catalogue: each wrong answer fails its task with the message
it must give, each alternative right answer passes, the solution passes everything, and the
untouched release answer (the stub) fails every task.

A section's solution notebook is executed once, in this process, in the notebook's folder; then
each entry is put in place of the answer cell, the task's check cell runs, and the solution's own
answer cell is put back. Running only the check instead of the whole notebook keeps a catalogue
of dozens of entries within seconds. One test class per section lets pytest-xdist (--dist
loadscope) spread the sections over the cores. tests/test_catalogue_nbgrader.py grades the same
entries again through nbgrader, as a student's submission is graded.
"""

import contextlib
import io
import os
import time
import traceback

import matplotlib
import nbformat
import pytest

from grader import catalogue
from grader.course import SECTIONS, release_notebook, solution_notebook

# Seconds of CPU to execute a section in this process (CPU time, so that the other tests running
# beside it do not count): 1-5 under a minute; 6-7, which train, under 20 s when shortened.
BUDGET_SECONDS = {"06-tiny-transformer": 20, "07-banking77": 20}


def nbgrader(cell):
    return cell.metadata.get("nbgrader", {})


def answer_cells(notebook):
    """grade_id -> source of the autograded answer cells."""
    return {nbgrader(c)["grade_id"]: c.source for c in notebook.cells
            if c.cell_type == "code" and nbgrader(c).get("solution") and not nbgrader(c).get("grade")}


class NotebookSession:
    """A solution notebook executed once; answer cells can be swapped and checks re-run."""

    def __init__(self, section):
        path = solution_notebook(section)
        self.notebook = nbformat.read(path, as_version=4)
        self.answers = answer_cells(self.notebook)
        self.checks = {nbgrader(c)["grade_id"]: c.source for c in self.notebook.cells
                       if c.cell_type == "code" and nbgrader(c).get("grade") and not nbgrader(c).get("solution")}
        self.namespace = {"__name__": "__main__"}
        self.folder = path.parent
        matplotlib.use("Agg")  # figures are drawn, not shown
        # As under nbgrader's autograder, so sections 6 and 7 train for a moment only. Set for
        # this run alone: kernels that pytest starts later (nbval) must not inherit it.
        os.environ["NBGRADER_EXECUTION"] = "autograde"
        start = time.process_time()
        try:
            for cell in self.notebook.cells:
                if cell.cell_type == "code":
                    self.run(cell.source)
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


_sessions = {}


def session(section):
    if section not in _sessions:
        _sessions[section] = NotebookSession(section)
    return _sessions[section]


class CatalogueOfASection:
    SECTION = None

    def test_solution_executes_within_budget_and_passes_every_check(self):
        run = session(self.SECTION)
        budget = BUDGET_SECONDS.get(self.SECTION, 60)
        assert run.seconds < budget, f"{self.SECTION} took {run.seconds:.1f} s of CPU (budget {budget} s)"
        for name, answer in run.answers.items():
            assert run.verdict(name, answer) is None, f"the solution fails its own check {name}"

    def test_untouched_release_answer_fails_every_check_and_says_it_is_not_written(self):
        run = session(self.SECTION)
        release = answer_cells(nbformat.read(release_notebook(self.SECTION), as_version=4))
        assert release.keys() == run.answers.keys()
        for name, stub in release.items():
            message = run.verdict(name, stub)
            assert message is not None, f"the untouched release passes the check of {name}"
            assert "not written yet" in message, message

    def test_wrong_answer_loses_the_task_with_its_message(self, wrong):
        message = session(self.SECTION).verdict(wrong.name, wrong.code)
        assert message is not None, f"wrong answer accepted: {wrong.mistake}"
        missing = [word for word in wrong.expect if word.lower() not in message.lower()]
        assert not missing, f"the message lacks {missing}:\n{message}"

    def test_alternative_right_answer_keeps_full_marks(self, right):
        message = session(self.SECTION).verdict(right.name, right.code)
        assert message is None, f"right answer refused ({right.variant}):\n{message}"


def pytest_generate_tests(metafunc):
    section = getattr(metafunc.cls, "SECTION", None)
    if section is None:
        return
    wrong, right = catalogue.load(section)
    if "wrong" in metafunc.fixturenames:
        metafunc.parametrize("wrong", wrong, ids=[f"{e.name}: {e.mistake}" for e in wrong])
    if "right" in metafunc.fixturenames:
        metafunc.parametrize("right", right, ids=[f"{e.name}: {e.variant}" for e in right])


for _section in SECTIONS:  # every section; a catalogue module missing fails at collection
    _name = "TestCatalogue_" + _section.replace("-", "_")
    globals()[_name] = type(_name, (CatalogueOfASection,), {"SECTION": _section})


GENERIC = {"differs", "shape", "expected", "got", "should", "tickets", "the table says", "wrong"}


@pytest.mark.parametrize("section", SECTIONS)
def test_every_section_has_a_catalogue_that_names_each_mistake(section):
    """No section loses its catalogue tests silently, every graded task has wrong and right entries,
    and every wrong entry expects at least one word that names its mistake, not only a generic one."""
    wrong, right = catalogue.load(section)  # a missing module fails here, not by vanishing
    tasks = set(answer_cells(nbformat.read(solution_notebook(section), as_version=4)))
    assert {e.name for e in wrong} == tasks and {e.name for e in right} <= tasks
    generic = [e.mistake for e in wrong if all(word.lower() in GENERIC for word in e.expect)]
    assert not generic, f"expected words that name no mistake: {generic}"
