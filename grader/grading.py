"""Grade notebooks the way nbgrader's autograder does, from the solutions in this repository.

A `GradingCourse` is an nbgrader course in a working folder whose source is `solutions/`: its
gradebook knows every section, so any copy of a section notebook can be autograded there, with
the check cells (hidden tests included) restored from the source. The scores come from nbgrader's
gradebook and the failure messages from the autograded notebook's error outputs.
"""

import os
import shutil
import tempfile
import warnings
from pathlib import Path

import nbformat

from grader import release
from grader.course import ROOT, SOLUTIONS, solution_notebook

# nbgrader's gradebook trips SQLAlchemy warnings that say nothing to a student or instructor.
warnings.filterwarnings("ignore", module="nbgrader.api")


class NotGradable(Exception):
    """A file that cannot be graded at all; the message says why."""


def graded_ids(notebook):
    return {c.metadata["nbgrader"]["grade_id"] for c in notebook.cells
            if c.metadata.get("nbgrader", {}).get("grade_id")}


def identify(notebook):
    """The section a notebook belongs to, found from its graded cells' ids."""
    ids = graded_ids(notebook)
    best, overlap = None, 0
    for section in release.sections_with_solutions():
        shared = len(ids & graded_ids(nbformat.read(solution_notebook(section), as_version=4)))
        if shared > overlap:
            best, overlap = section, shared
    if best is None:
        raise NotGradable("no graded cell of any section of this course: is it the right notebook?")
    return best


def read_notebook(path):
    path = Path(path)
    if not path.is_file():
        raise NotGradable(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise NotGradable(f"{path}: the file is empty")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as error:  # nbformat raises several types for a damaged file
        raise NotGradable(f"{path}: not a notebook (not valid notebook JSON: {error})") from None


def _message(cell):
    """The failure text of an autograded check cell, or "" when it passed."""
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            return f"{output.ename}: {output.evalue}".strip()
    return ""


class GradingCourse:
    """An nbgrader course in `folder` whose source is the repository's solutions."""

    def __init__(self, folder=None, timeout=120):
        self._temporary = None if folder else tempfile.TemporaryDirectory()
        self.folder = Path(folder or self._temporary.name)
        self.folder.mkdir(parents=True, exist_ok=True)
        os.environ["COURSE_ROOT"] = str(ROOT)  # the kernels' set-up cell finds the course here
        self.db = self.folder / "gradebook.db"
        self.api = release._nbgrader_api(self.folder, self.folder / "release", self.db,
                                         source=SOLUTIONS, timeout=timeout)
        for section in release.sections_with_solutions():
            result = self.api.generate_assignment(section, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader could not register {section}:\n{result['error']}")

    def grade(self, path, student="self"):
        """Autograde one notebook; returns the result dict of `python -m grader check --json`."""
        notebook = read_notebook(path)
        section = identify(notebook)
        submitted = self.folder / "submitted" / student / section
        shutil.rmtree(submitted, ignore_errors=True)
        submitted.mkdir(parents=True)
        shutil.copy(path, submitted / f"{section}.ipynb")
        outcome = self.api.autograde(section, student, force=True, create=True)
        if not outcome["success"]:
            raise NotGradable(f"{path}: nbgrader could not grade it:\n{outcome['error']}")
        graded = nbformat.read(self.folder / "autograded" / student / section / f"{section}.ipynb",
                               as_version=4)
        messages = {c.metadata["nbgrader"]["grade_id"]: _message(c) for c in graded.cells
                    if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
        from nbgrader.api import Gradebook
        with Gradebook(f"sqlite:///{self.db}") as gradebook:
            grades = gradebook.find_submission_notebook(section, section, student).grades
            tasks = [{"grade_id": g.name, "score": float(g.score), "max_score": float(g.max_score),
                      "message": messages.get(g.name, "")}
                     for g in grades if g.cell_type == "code"]
            written = sum(g.max_score for g in grades if g.cell_type == "markdown")
        order = list(messages)
        tasks.sort(key=lambda t: order.index(t["grade_id"]) if t["grade_id"] in order else len(order))
        return {"notebook": str(path), "section": section,
                "score": sum(t["score"] for t in tasks), "max_score": sum(t["max_score"] for t in tasks),
                "written_max_score": float(written), "tasks": tasks}

    def feedback_html(self, section, student="self"):
        """nbgrader's feedback page for the last graded submission of `student`."""
        outcome = self.api.generate_feedback(section, student, force=True)
        if not outcome["success"]:
            raise RuntimeError(f"nbgrader could not write feedback:\n{outcome['error']}")
        return (self.folder / "feedback" / student / section / f"{section}.html").read_text()
