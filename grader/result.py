"""What grading one notebook gives: its `Result`, the one record of a graded notebook (or of one
that could not be graded) that `grader check`, the workers, the cluster, the gradebook, the store
(grader.results) and the class's tables share."""

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class Task:
    """One autograded task: the points its check gave out of its points, and why it failed ("" if
    it passed)."""
    grade_id: str
    score: float
    max_score: float
    message: str = ""


@dataclass(frozen=True)
class Result:
    """One notebook's grade. `error` says why it was not graded ("" when it was): then it has no
    tasks and scores 0, and `grader_failure` says whether the grader, not the submission, failed
    (no score: graded again next run); `held` that it is a student's second notebook of a section.
    The class run adds what the store keys a re-run on (`sha256`, `version`: grader.fingerprint) and
    the feedback page's path in the class folder."""
    notebook: str
    section: str | None  # found from its content (grader.notebook_grader.identify); None: none found
    student: str = "self"
    tasks: tuple[Task, ...] = ()
    written_max_score: float = 0.0  # the points of the written answers, graded by hand
    repairs: tuple[str, ...] = ()  # what grader.repair put back
    interrupted: tuple[str, ...] = ()  # cells stopped at the time limit
    flags: tuple[str, ...] = ()  # checks the notebook and the grader judged differently
    error: str = ""
    grader_failure: bool = False
    held: bool = False
    seconds: float = 0.0
    sha256: str | None = None
    version: str | None = None
    feedback: str | None = None

    @classmethod
    def grader_failed(cls, notebook, student, why):
        """A notebook the grader failed to grade, saying `why`: no score, graded again next run."""
        return cls(str(notebook), None, student, error=f"grader failure: {why}", grader_failure=True)

    @property
    def score(self):
        return sum(task.score for task in self.tasks)

    @property
    def max_score(self):
        return sum(task.max_score for task in self.tasks)

    def to_json(self):
        """The result as `grader check --json` prints it and results.json keeps it."""
        return {**asdict(self), "score": self.score, "max_score": self.max_score}

    @classmethod
    def from_json(cls, data):
        """The result that `to_json` gave, or that an earlier grader kept with fewer fields (those
        missing take their defaults; the sums are counted again from the tasks)."""
        known = {f.name for f in fields(cls)} - {"tasks"}
        lists = {"repairs", "interrupted", "flags"}
        return cls(tasks=tuple(Task(**task) for task in data.get("tasks", ())),
                   **{k: tuple(v) if k in lists else v for k, v in data.items() if k in known})
