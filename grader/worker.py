"""One grading process, a worker of the local pool (grader.schedule) or of a Dask cluster
(grader.cluster): its own NotebookGrader, started once, grading one notebook at a time. `grade`
never raises: whatever happens becomes the notebook's result."""

import time
from dataclasses import dataclass, replace

from grader.result import Result

_course = None  # this worker's NotebookGrader
_started_with = None  # what it was started with, to start a fresh one after a grader failure


@dataclass(frozen=True)
class Graded:
    """What a worker hands back for one notebook: its Result, and for the class's folder the
    feedback page and the notebooks (grader.notebook_grader.NotebookGrader.graded_files) when it was graded."""
    result: Result
    feedback_html: str | None = None
    files: dict | None = None


def start(template, options):
    """Start this process's grading course from the class's sections in `template`, grading with
    `options` (grader.options.GradingOptions)."""
    global _course, _started_with
    from grader.notebook_grader import NotebookGrader
    # Each worker has its own warm-kernel server (in a sandbox of its own): no submission of one
    # worker can reach another's kernels.
    _course = NotebookGrader(options=options, template=template)
    _started_with = (template, options)


def running():
    """Whether this process has a grading course (`start` ran and `stop` did not)."""
    return _course is not None


def stop():
    """Close this process's grading course (its warm-kernel server), if it has one."""
    global _course
    if _course is not None:
        _course.close()
        _course = None


def grade(student, path, attempts=2):
    """Grade one submission in this worker: its Graded; never raises: a failure is recorded, as the
    student's zero when the submission caused it, as a grader failure when the grader did. After a
    grader failure the worker starts a fresh course and grades the notebook again, `attempts` in
    all."""
    from grader.notebook_grader import GraderFailure, NotGradable
    started = time.perf_counter()
    try:
        try:
            result = _course.grade(path, student=student)
            graded = Graded(result, _course.feedback_html(result.section, student),
                            _course.graded_files(result.section, student))
        except Exception:
            _course.check_own_files()  # a gradebook it cannot read fails whatever it grades: not the student's doing
            raise
    except NotGradable as error:
        graded = Graded(Result(str(path), None, student, error=str(error)))
    except GraderFailure as error:
        if attempts > 1:
            _course.close()
            start(*_started_with)
            return grade(student, path, attempts - 1)
        graded = Graded(Result.grader_failed(path, student, error))
    except Exception as error:  # an nbgrader crash: record it and go on
        graded = Graded(Result(str(path), None, student, error=f"grading failed: {type(error).__name__}: {error}"))
    return replace(graded, result=replace(graded.result, seconds=round(time.perf_counter() - started, 2)))
