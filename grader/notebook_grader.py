"""One notebook at a time through nbgrader's autograder, graded from the solutions in this repository.

A `NotebookGrader` keeps an nbgrader course in a working folder whose source is `solutions/`: any copy
of a section notebook can be autograded there (the gradebook learns a section on its first
submission), with the check cells (hidden tests included) restored from the source. On Linux its
kernels fork from a warm process (grader.warm_kernel) unless asked for fresh ones. The scores
come from nbgrader's gradebook and the failure messages from the autograded notebook's errors.

A notebook grader can start as a copy of another one's folder (`template`) and knows the sections
registered there; with the warm kernels of another process, that is how autograde's workers start.
"""

import contextlib
import functools
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import warnings
from pathlib import Path

import nbformat

from grader import judge, nbconfig, recordings, release, sandbox
from grader.warm_kernel import WarmKernels, kernel_spec, use_warm_kernels
from grader.course import ROOT, SOLUTIONS, nbgrader_info, solution_notebook
from grader.options import GradingOptions
from grader.result import Result, Task

# nbgrader's gradebook trips SQLAlchemy warnings that say nothing to a student or instructor.
warnings.filterwarnings("ignore", module="nbgrader.api")


class NotGradable(Exception):
    """A file that cannot be graded at all; the message says why."""


def graded_ids(notebook):
    return {nbgrader_info(c)["grade_id"] for c in notebook.cells
            if nbgrader_info(c).get("grade_id")}


def _fingerprint(notebook):
    """What identifies a section's notebook even without nbgrader metadata: graded ids, cell
    ids, and the text of cells a student does not edit."""
    marks = {("grade_id", g) for g in graded_ids(notebook)}
    marks |= {("id", c.get("id")) for c in notebook.cells if c.get("id")}
    return marks | {("text", c.source) for c in notebook.cells if len(c.source) > 80}


@functools.cache
def _solution_fingerprint(section):
    return _fingerprint(nbformat.read(solution_notebook(section), as_version=4))


def identify(notebook):
    """The section a notebook belongs to: the one whose solution it shares most with."""
    mine = _fingerprint(notebook)
    best, overlap = None, 0
    for section in release.sections_with_solutions():
        shared = len(mine & _solution_fingerprint(section))
        if shared > overlap:
            best, overlap = section, shared
    if best is None:
        raise NotGradable("it is not a notebook of any section of this course (wrong file?)")
    return best


def _reason(log):
    """The cause of a failed nbgrader run, in one line."""
    if "the kernel stopped answering" in log:
        return ("the kernel stopped answering: two requests in a row ran past the time limit, the "
                "interrupt included (the notebook may have broken its own connection); every task scores 0")
    if "DeadKernelError" in log:
        return ("the kernel died while running the notebook (a crash, os._exit, or too much "
                "memory); every task scores 0")
    causes = re.findall(r"^\s*([\w.]*(?:Error|Exception|MissingEntry)): (.+)$", log, re.M)
    causes = [c for c in causes if "NbGraderException" not in c[0]]
    return f"nbgrader could not grade it: {causes[-1][0]}: {causes[-1][1]}" if causes else \
        "nbgrader could not grade it (see its log)"


def banking77_folder():
    """The Banking77 folder to show the kernels (they have no network to download it): the one in
    $BANKING77_DIR, else ticketnet's download cache if it holds the files, else None."""
    if os.environ.get("BANKING77_DIR"):
        return os.environ["BANKING77_DIR"]
    cache = Path(os.environ.get("TICKETNET_CACHE", Path.home() / ".cache" / "ticketnet")) / "banking77"
    return str(cache) if (cache / "train.csv").is_file() else None


def read_notebook(path):
    path = Path(path)
    if not path.is_file():
        raise NotGradable("no such file")
    if path.stat().st_size == 0:
        raise NotGradable("the file is empty")
    try:
        return nbformat.read(path, as_version=4)
    except Exception:  # nbformat raises several types for a damaged file
        raise NotGradable("not a readable notebook: the file is not valid notebook JSON (cut off, "
                          "or saved by a program that is not Jupyter)") from None


def _interrupted_cells(notebook, timeout):
    """A line for each cell of an autograded notebook that ran past the time limit: nbgrader
    interrupts it and goes on, so what it should have defined fails the checks after it."""
    return [f"a cell ran past the {timeout} s limit and was interrupted: In [{cell.execution_count}], "
            f"`{cell.source.strip().splitlines()[0][:60]}`"
            for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()
            and any(o.output_type == "error" and o.ename == "CellTimeoutError" for o in cell.outputs)]


def kernel_settings(folder, options):
    """The settings of the sandbox (grader.sandbox) every kernel of the course in `folder` runs in,
    with the memory and confinement of `options` (GradingOptions). Its kernels' Unix sockets go in
    folder/sockets, the one folder the sandbox shares."""
    sockets = Path(folder) / "sockets"
    sockets.mkdir(mode=0o700, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(sockets, sandbox.STUDENT, sandbox.STUDENT)
    return sandbox.settings(sockets, sandboxed=options.sandboxed, data=banking77_folder(),
                            limits={"memory_mb": options.memory_mb},
                            references=recordings.kernel_references() if options.sandboxed else None)


def fresh_kernels(folder, settings):
    """The kernel spec whose kernels start from scratch, each in a sandbox of its own."""
    folder = Path(folder) / "fresh"
    folder.mkdir(exist_ok=True)
    (folder / "sandbox.json").write_text(json.dumps(settings))
    return kernel_spec(folder, "fresh", [sys.executable, str(Path(sandbox.__file__).resolve()), "kernel",
                                         str(folder / "sandbox.json"), "-f", "{connection_file}"])


def grading_config(folder, timeout, kernel):
    """nbgrader's settings for grading in the course in `folder` with kernels of the spec `kernel`:
    the repairs, the judge, the sandbox's sockets. One definition for `grader check`, the workers
    of `grader autograde` and plain nbgrader in the class's folder (grader/class_folder.py)."""
    folder = Path(folder)
    return nbconfig.nbgrader_config(folder, folder / "release", folder / "gradebook.db", source=SOLUTIONS,
                                    timeout=timeout, kernel=kernel, judged=True, sockets=folder / "sockets" / "k")


class GraderFailure(Exception):
    """The grader, not the submission, failed (twice): the submission is graded again next run."""


class NotebookGrader:
    """An nbgrader course in `folder` whose source is the repository's solutions.

    `options` (grader.options.GradingOptions): each cell's time limit; every kernel in a sandbox
    (grader.sandbox) with the sandbox's limits and the options' memory, or unconfined, for code you
    trust; kernels forked from a warm process of this course's own (grader.warm_kernel) or started
    fresh. `template`: a course folder to copy registered sections from.
    """

    def __init__(self, folder=None, options=GradingOptions(), template=None):
        if options.sandboxed:
            sandbox.check_available()  # raises sandbox.Unavailable, saying why
        self._temporary = None if folder else tempfile.TemporaryDirectory()
        self.folder = Path(folder or self._temporary.name)
        self.folder.mkdir(parents=True, exist_ok=True)
        os.environ["COURSE_ROOT"] = str(ROOT)  # the kernels' set-up cell finds the course here
        self.db = self.folder / "gradebook.db"
        self.options = options
        self.registered = set()
        if template:
            shutil.copytree(Path(template) / "release", self.folder / "release", dirs_exist_ok=True)
            shutil.copy(Path(template) / "gradebook.db", self.db)
            self.registered = {p.name for p in (self.folder / "release").iterdir()}
        self.settings = kernel_settings(self.folder, options)
        self.kernels = None
        if use_warm_kernels(options.warm):
            self.kernels = WarmKernels(self.folder / "warm", self.settings)  # importing while nbgrader sets up
        kernel = self.kernels.name if self.kernels else fresh_kernels(self.folder, self.settings)
        from nbgrader.apps import NbGraderAPI
        self.api = NbGraderAPI(config=grading_config(self.folder, options.timeout, kernel))

    def register(self, section):
        """Make nbgrader's gradebook know the section (once, before its first submission)."""
        if section not in self.registered:
            result = self.api.generate_assignment(section, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader could not register {section}:\n{result['error']}")
            self.registered.add(section)

    def grade(self, path, student="self"):
        """Autograde one notebook of `student`: its Result (grader.results), as `python -m grader
        check` prints it."""
        notebook = read_notebook(path)
        section = identify(notebook)
        self.register(section)
        self._ready_kernels()
        submitted = self.folder / "submitted" / student / section
        shutil.rmtree(submitted, ignore_errors=True)
        submitted.mkdir(parents=True)
        nbformat.write(notebook, submitted / f"{section}.ipynb")
        for attempt in (1, 2):
            outcome, verdicts, repairs = self._autograde(section, student)
            if outcome["success"] or not self.kernels or self.kernels.alive():
                break
            # the warm-kernel server died under this notebook: a grader failure, not the student's
            if attempt == 2:
                raise GraderFailure("the warm-kernel server stopped twice while grading this notebook")
            self._ready_kernels()
        if not outcome["success"]:
            raise NotGradable(_reason(outcome["log"] or outcome["error"]))
        graded = nbformat.read(self.folder / "autograded" / student / section / f"{section}.ipynb",
                               as_version=4)
        # The scores are the judge's verdicts and the solutions' points: neither the gradebook nor
        # the autograded notebook, which the submission's kernel could have written to.
        tasks, flags = [], []
        for grade_id, (_, points) in judge.check_cells(section).items():
            verdict = verdicts.get(grade_id)
            message = ("not graded: its check cell did not run" if verdict is None else
                       "" if verdict["passed"] else ": ".join(verdict["error"]))
            tasks.append(Task(grade_id, float(points) if verdict and verdict["passed"] else 0.0, float(points), message))
            if verdict and verdict["in_notebook"] != verdict["passed"]:
                flags.append(f"{grade_id} {'passed' if verdict['in_notebook'] else 'failed'} in the notebook "
                             f"but {'passes' if verdict['passed'] else 'fails'} the grader's check "
                             "(the submission may interfere with its checks)")
        self._record(section, student, tasks)
        return Result(str(path), section, student, tuple(tasks), float(judge.written_points(section)),
                      repairs=tuple(repairs), interrupted=tuple(_interrupted_cells(graded, self.options.timeout)),
                      flags=tuple(flags))

    def _autograde(self, section, student):
        """nbgrader's autograde of the submission; returns its outcome, the judge's verdicts
        {grade_id: verdict} and the repairs' notes of this run alone (grader.judge, grader.repair)."""
        verdicts, repairs = {}, []

        def on_verdict(grade_id, verdict):
            verdicts[grade_id] = verdict
        # nbgrader makes its preprocessors for each run from these settings
        self.api.config.JudgedExecute.on_verdict = on_verdict
        self.api.config.RepairSubmission.on_repaired = repairs.extend
        outcome = self.api.autograde(section, student, force=True, create=True)
        return outcome, verdicts, repairs

    def _record(self, section, student, tasks):
        """Write the judge's scores over this submission's grades in the gradebook, which its
        kernel could reach: the feedback page then shows the judge's scores, and no extra credit."""
        from nbgrader.api import Gradebook
        scores = {t.grade_id: t.score for t in tasks}
        with Gradebook(f"sqlite:///{self.db}") as gradebook:
            for grade in gradebook.find_submission_notebook(section, section, student).grades:
                grade.extra_credit = None
                if grade.name in scores:
                    grade.auto_score, grade.manual_score = scores[grade.name], None
            gradebook.db.commit()

    def check_own_files(self):
        """GraderFailure, naming the file, when this course's gradebook cannot be read: a grade that
        fails then is the grader's failure, not the submission's."""
        try:
            with contextlib.closing(sqlite3.connect(f"{self.db.as_uri()}?mode=ro", uri=True)) as db:
                verdict = db.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as error:
            verdict = str(error)
        if verdict != "ok":
            raise GraderFailure(f"this worker's gradebook {self.db} cannot be read ({verdict})")

    def _ready_kernels(self):
        """Wait for the warm-kernel server; start a new one if it has stopped. Where it cannot
        serve, fall back to fresh kernels, saying so once."""
        if self.kernels is None:
            return
        if not self.kernels.alive():
            self.kernels = WarmKernels(self.folder / "warm", self.settings)
            self.api.config.Execute.kernel_name = self.kernels.name
        try:
            self.kernels.wait()
        except RuntimeError as error:
            print(f"{error}: grading with fresh kernels", file=sys.stderr)
            self.kernels = None
            self.api.config.Execute.kernel_name = fresh_kernels(self.folder, self.settings)

    def close(self):
        if self.kernels:
            self.kernels.close()

    def graded_files(self, section, student="self"):
        """The last graded submission of `student`: {"submitted": its notebook as handed in,
        "autograded": as graded, with its outputs}, as text."""
        return {kind: (self.folder / kind / student / section / f"{section}.ipynb").read_text()
                for kind in ("submitted", "autograded")}

    def feedback_html(self, section, student="self"):
        """nbgrader's feedback page for the last graded submission of `student`."""
        outcome = self.api.generate_feedback(section, student, force=True)
        if not outcome["success"]:
            raise RuntimeError(f"nbgrader could not write feedback:\n{outcome['error']}")
        return (self.folder / "feedback" / student / section / f"{section}.html").read_text()
