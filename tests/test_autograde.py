"""Grading a class, without kernels: collecting the files, the worker's bookkeeping, the order the
notebooks are graded in, and what a run leaves in its folder (results.json, grades.csv, feedback,
the report) and leaves alone on a re-run.

A stand-in course scores a "notebook" from the JSON in its file, so a whole class runs in a
fraction of a second; test_grader.py grades real notebooks with nbgrader."""

import csv
import json
import re
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from grader import autograde, export, fingerprint, notebook_grader, schedule, worker
from grader import results as results_store
from grader.course import SECTIONS
from grader.class_folder import written_questions
from grader.options import GradingOptions
from grader.result import Result, Task


# --- collecting submissions ------------------------------------------------------------------

def test_collect_takes_single_notebooks_in_the_order_given(tmp_path):
    for name in ("ben_02-positions.ipynb", "ada_01-heads.ipynb"):
        (tmp_path / name).write_text("{}")
    found = autograde.collect([tmp_path / "ben_02-positions.ipynb", tmp_path / "ada_01-heads.ipynb"])
    assert found == [autograde.Submission("ben", tmp_path / "ben_02-positions.ipynb"),
                     autograde.Submission("ada", tmp_path / "ada_01-heads.ipynb")]


def test_collect_skips_jupyter_checkpoints_and_keeps_what_follows(tmp_path):
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "ada_01-heads-checkpoint.ipynb").write_text("{}")
    (tmp_path / "ada_01-heads.ipynb").write_text("{}")
    (tmp_path / "bob" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "bob" / ".ipynb_checkpoints" / "01-heads-checkpoint.ipynb").write_text("{}")
    (tmp_path / "bob" / "01-heads.ipynb").write_text("{}")
    (tmp_path / "notes.txt").write_text("not a notebook")
    found = autograde.collect([tmp_path])
    assert found == [autograde.Submission("ada", tmp_path / "ada_01-heads.ipynb"),
                     autograde.Submission("bob", tmp_path / "bob" / "01-heads.ipynb")]


def test_collect_unpacks_a_zip_into_a_folder_of_its_own_when_none_is_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may land in the working folder
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:
        archive.writestr("ada_01-heads.ipynb", '{"from": "zip"}')
    [found] = autograde.collect([tmp_path / "export.zip"])
    assert found.student == "ada" and found.path.name == "ada_01-heads.ipynb"
    assert found.path.read_text() == '{"from": "zip"}'
    assert tmp_path not in found.path.parents and found.path.parent.name == "export"


def test_collect_names_a_path_that_does_not_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere: no such file or folder"):
        autograde.collect([tmp_path / "nowhere"])


def test_a_file_name_without_a_student_id_is_refused_with_the_fix(tmp_path):
    (tmp_path / "_01-heads.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"_01-heads.ipynb: the pattern .* finds no student id "
                                         r"\(use --pattern with a group \(\?P<student>\.\.\.\)\)"):
        autograde.collect([tmp_path / "_01-heads.ipynb"])


# --- one worker ------------------------------------------------------------------------------

class StandInCourse:
    """Grades a "notebook" file holding JSON: {"section": ..., "scores": {task: points}} scores
    each task out of 2; {"refuse": why} is not gradable; {"crash": why} breaks the grader."""

    def __init__(self):
        self.graded = []  # (student, file name) in the order graded
        self.broken = False  # its gradebook cannot be read
        self.closed = 0

    def check_own_files(self):
        if self.broken:
            raise notebook_grader.GraderFailure("this worker's gradebook gradebook.db cannot be read (file is not a database)")

    def close(self):
        self.closed += 1

    def grade(self, path, student="self"):
        spec = json.loads(Path(path).read_text())
        self.graded.append((student, Path(path).name))
        if "refuse" in spec:
            raise notebook_grader.NotGradable(spec["refuse"])
        if "crash" in spec:
            raise RuntimeError(spec["crash"])
        if "grader_fails" in spec:
            raise notebook_grader.GraderFailure(spec["grader_fails"])
        tasks = tuple(Task(f"test_{name}", float(points), 2.0, "" if points == 2 else f"AssertionError: {name} is wrong")
                      for name, points in spec["scores"].items())
        return Result(str(path), spec["section"], student, tasks, 4.0, repairs=tuple(spec.get("repairs", [])),
                      interrupted=tuple(spec.get("interrupted", [])), flags=tuple(spec.get("flags", [])))

    def feedback_html(self, section, student="self"):
        return f"<html>feedback for {student}, {section}</html>"

    def graded_files(self, section, student="self"):
        return {"submitted": f"{student}'s {section}", "autograded": f"{student}'s {section}, graded"}


def test_a_worker_returns_the_course_result_with_its_student_time_and_feedback(monkeypatch, tmp_path):
    notebook = tmp_path / "ada_01-heads.ipynb"
    notebook.write_text(json.dumps({"section": "01-heads", "scores": {"split": 2, "merge": 0}}))
    monkeypatch.setattr(worker, "_course", StandInCourse())
    clock = iter([100.0, 103.14159])
    monkeypatch.setattr(worker.time, "perf_counter", lambda: next(clock))
    graded = worker.grade("ada", str(notebook))
    result = graded.result
    assert result.student == "ada" and result.error == "" and result.score == 2.0
    assert graded.feedback_html == "<html>feedback for ada, 01-heads</html>"
    assert graded.files == {"submitted": "ada's 01-heads", "autograded": "ada's 01-heads, graded"}
    assert result.seconds == 3.14


@pytest.mark.parametrize("spec, error", [
    ({"refuse": "the file is empty"}, "the file is empty"),
    ({"crash": "the kernel went away"}, "grading failed: RuntimeError: the kernel went away"),
], ids=["not gradable", "grader crash"])
def test_a_worker_records_a_failure_as_a_zero_with_the_reason_and_goes_on(monkeypatch, tmp_path, spec, error):
    notebook = tmp_path / "ada_01-heads.ipynb"
    notebook.write_text(json.dumps(spec))
    monkeypatch.setattr(worker, "_course", StandInCourse())
    graded = worker.grade("ada", str(notebook))
    assert graded == worker.Graded(Result(str(notebook), None, "ada", error=error, seconds=graded.result.seconds))
    assert (graded.result.score, graded.result.max_score) == (0.0, 0.0)


def _restarting(monkeypatch, first, fresh):
    """Worker `first` in place, with `fresh` the course a restart starts; returns the restarts' options."""
    restarts = []

    def start_worker(*options):
        restarts.append(options)
        worker._course = fresh
    monkeypatch.setattr(worker, "_course", first)
    monkeypatch.setattr(worker, "_started_with", ("template", 30, 1024, None, True))
    monkeypatch.setattr(worker, "start", start_worker)
    return restarts


def test_a_worker_records_the_graders_own_failure_as_such_after_a_fresh_course_fails_too(monkeypatch, tmp_path):
    class FailingCourse(StandInCourse):
        def grade(self, path, student="self"):
            raise notebook_grader.GraderFailure("the warm-kernel server stopped twice")
    first, fresh = FailingCourse(), FailingCourse()
    restarts = _restarting(monkeypatch, first, fresh)
    graded = worker.grade("ada", str(tmp_path / "ada_01-heads.ipynb"))
    assert graded == worker.Graded(Result(str(tmp_path / "ada_01-heads.ipynb"), None, "ada", grader_failure=True,
                                          error="grader failure: the warm-kernel server stopped twice",
                                          seconds=graded.result.seconds))
    assert restarts == [("template", 30, 1024, None, True)] and (first.closed, fresh.closed) == (1, 0)
    assert worker._course is fresh
    result = worker.grade("ada", str(tmp_path / "ada_01-heads.ipynb"), attempts=3).result
    assert result.grader_failure and len(restarts) == 3  # two more: one per attempt after the first


def test_a_gradebook_the_worker_cannot_read_is_its_failure_and_a_fresh_course_grades(monkeypatch, tmp_path):
    """Before, nbgrader's sqlite3.DatabaseError on the worker's own gradebook was the student's zero."""
    notebook = _hand_in(tmp_path, "ada_01-heads.ipynb", section="01-heads", scores={"split": 2})

    class BrokenCourse(StandInCourse):
        def grade(self, path, student="self"):
            raise notebook_grader.NotGradable("nbgrader could not grade it: sqlite3.DatabaseError: file is not a database")
    first, fresh = BrokenCourse(), StandInCourse()
    first.broken = True
    restarts = _restarting(monkeypatch, first, fresh)
    result = worker.grade("ada", str(notebook)).result
    assert result.error == "" and result.score == 2.0 and not result.grader_failure
    assert restarts == [("template", 30, 1024, None, True)] and fresh.graded == [("ada", "ada_01-heads.ipynb")]
    # still broken after the restart: no score at all, graded again next run; the message names the file
    fresh.broken, fresh.grade = True, first.grade
    result = worker.grade("ada", str(notebook)).result
    assert result.grader_failure and result.score == 0.0
    assert result.error == "grader failure: this worker's gradebook gradebook.db cannot be read (file is not a database)"
    # a sound gradebook: the submission's own failure stays its zero, with no restart
    fresh.broken = False
    result = worker.grade("ada", str(notebook)).result
    assert not result.grader_failure and result.error.startswith("nbgrader could not grade it")
    assert len(restarts) == 2


def test_a_worker_course_copies_the_template_with_the_options(monkeypatch):
    made = []
    monkeypatch.setattr(notebook_grader, "NotebookGrader", lambda **options: made.append(options) or "course")
    monkeypatch.setattr(worker, "_course", None)
    monkeypatch.setattr(worker, "_started_with", None)
    options = GradingOptions(timeout=45, memory_mb=2048)
    worker.start("template-folder", options)
    assert worker._course == "course" and worker._started_with == ("template-folder", options)
    assert made == [{"options": options, "template": "template-folder"}]



def test_a_worker_stops_its_course_once_and_says_whether_it_has_one(monkeypatch):
    closed = []

    class Course:
        def close(self):
            closed.append(self)
    course = Course()
    monkeypatch.setattr(worker, "_course", course)
    assert worker.running() is True
    worker.stop()
    assert closed == [course] and worker._course is None and worker.running() is False
    worker.stop()  # nothing left to close
    assert closed == [course]


def test_a_worker_course_is_warm_or_fresh_sandboxed_or_not_as_asked(monkeypatch):
    made = []
    monkeypatch.setattr(notebook_grader, "NotebookGrader", lambda **options: made.append(options) or "course")
    monkeypatch.setattr(worker, "_course", None)
    monkeypatch.setattr(worker, "_started_with", None)
    options = GradingOptions(timeout=30, memory_mb=1024, sandboxed=False, warm=False)
    worker.start("template-folder", options)
    assert made == [{"options": options, "template": "template-folder"}]


def test_a_submission_failure_is_the_students_zero_unless_said_otherwise(tmp_path):
    assert Result(str(tmp_path / "ada_01-heads.ipynb"), None, error="the file is empty").grader_failure is False


def test_a_progress_line_reads_a_result_of_an_older_run_with_no_flags():
    result = Result.from_json({"student": "ada", "notebook": "in/ada_01-heads.ipynb", "error": "", "score": 7.0,
                               "max_score": 9.0, "seconds": 2.4, "repairs": [], "section": "01-heads",
                               "tasks": [{"grade_id": "test_a", "score": 7.0, "max_score": 9.0, "message": "no"}],
                               "interrupted": ["cell 5 stopped after 60 s"]})
    assert autograde._line(result) == "ada ada_01-heads.ipynb: 7/9 (2 s; cell 5 stopped after 60 s)"
    assert autograde._line(replace(result, flags=("printed a verdict",))) == \
        "ada ada_01-heads.ipynb: 7/9 (2 s; cell 5 stopped after 60 s; printed a verdict)"

# --- the order of grading --------------------------------------------------------------------

def _items(*names):
    """Submissions named student_section, each placed in the section its name says (or none)."""
    return [(name, autograde.Submission(name.split("_")[0], Path(f"{name}.ipynb"),
                                        next((s for s in SECTIONS if name.endswith(s)), None)), "digest")
            for name in names]


def test_grading_keeps_one_notebook_per_worker_and_learns_which_section_is_longest(monkeypatch):
    seconds = {"01-heads": 5.0, "05-block": 1.0, "07-banking77": 3.0}
    started, in_flight, most = [], [0], [0]
    lock = threading.Lock()

    def grade(student, path):
        with lock:
            started.append(Path(path).stem)
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.02)
        with lock:
            in_flight[0] -= 1
        section = next(s for s in seconds if s in path)
        return worker.Graded(Result(path, section, student, seconds=seconds[section]))

    monkeypatch.setattr(worker, "grade", grade)
    todo = _items("ada_01-heads", "bob_01-heads", "cyd_01-heads", "ada_05-block", "bob_05-block",
                  "ada_07-banking77", "bob_07-banking77")
    # room for more than asked: the order alone keeps it to 1
    finished = list(schedule.longest_first(lambda: ThreadPoolExecutor(4), todo, workers=1))
    assert most[0] == 1
    # one of each untimed section first, later sections first; then the longest mean first
    assert started == ["ada_07-banking77", "ada_05-block", "ada_01-heads", "bob_01-heads",
                       "cyd_01-heads", "bob_07-banking77", "bob_05-block"]
    assert [item[0] for item, _ in finished] == started
    assert all(graded.result.notebook == str(item[1].path) for item, graded in finished)
    started.clear()
    assert len(list(schedule.longest_first(lambda: ThreadPoolExecutor(4), todo, workers=2))) == len(todo)
    assert most[0] == 2 and sorted(started) == sorted(name for name, _, _ in todo)


def test_a_free_worker_starts_the_next_notebook_without_waiting_for_the_others(monkeypatch):
    spans = {}

    def grade(student, path):
        started = time.perf_counter()
        time.sleep(1.0 if student == "ada" else 0.01)  # ada's notebook is long
        spans[student] = (started, time.perf_counter())
        return worker.Graded(Result(path, "01-heads", student))

    monkeypatch.setattr(worker, "grade", grade)
    list(schedule.longest_first(lambda: ThreadPoolExecutor(2), _items("ada_01-heads", "bob_01-heads", "cyd_01-heads"),
                                  workers=2))
    assert spans["cyd"][1] < spans["ada"][1]  # cyd came and went while ada's notebook ran


def test_a_broken_pool_is_replaced_and_its_notebooks_graded_again_then_recorded_as_the_graders_failure(monkeypatch):
    """A grading process that dies breaks the pool: the notebooks then running are graded again in
    a new pool; one that breaks it every time is recorded as a grader failure, not a zero."""
    from concurrent.futures.process import BrokenProcessPool
    pools, attempts = [], {}

    def grade(student, path):
        attempts[student] = attempts.get(student, 0) + 1
        if student == "ada" or (student == "bob" and attempts["bob"] == 1):
            raise BrokenProcessPool("a worker died")  # what a worker killed mid-notebook gives
        return worker.Graded(Result(path, "01-heads", student, seconds=1.0))

    def new_pool():
        pools.append(ThreadPoolExecutor(1))
        return pools[-1]
    monkeypatch.setattr(worker, "grade", grade)
    finished = {item[0]: graded.result for item, graded in
                schedule.longest_first(new_pool, _items("ada_01-heads", "bob_01-heads", "cyd_01-heads"), workers=1)}
    assert sorted(finished) == ["ada_01-heads", "bob_01-heads", "cyd_01-heads"]
    assert attempts["ada"] == 2 and finished["ada_01-heads"].grader_failure is True
    assert finished["ada_01-heads"].error.startswith("grader failure: a grading process died 2 times")
    assert finished["bob_01-heads"].error == "" and finished["cyd_01-heads"].error == ""
    assert attempts["bob"] == 2 and attempts["cyd"] == 1 and len(pools) == 4  # one, then one per break


def test_a_notebook_that_breaks_every_pool_is_recorded_whole_as_not_graded(monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    def grade(student, path):
        raise BrokenProcessPool("a worker died")
    monkeypatch.setattr(worker, "grade", grade)
    [(item, graded)] = schedule.longest_first(lambda: ThreadPoolExecutor(1), _items("ada_01-heads"), workers=1,
                                                attempts=3)
    assert graded == worker.Graded(Result("ada_01-heads.ipynb", None, "ada", grader_failure=True,
                                          error="grader failure: a grading process died 3 times while this "
                                                "notebook was being graded"))


def test_a_section_expected_length_is_its_mean_not_its_total():
    # 01-heads: one notebook of 4 s; 07-banking77: three of 2 s (6 s in all, 2 s on average)
    waiting = _items("ada_01-heads", "ada_07-banking77")
    assert schedule.next_longest(waiting, {0: [4.0], 6: [2.0, 2.0, 2.0]})[0] == "ada_01-heads"


def test_sections_not_yet_timed_come_before_any_timed_one_however_long():
    waiting = _items("ada_01-heads", "ada_07-banking77", "ada_notes")
    assert schedule.next_longest(waiting, {6: [1000.0], -1: [1.0]})[0] == "ada_01-heads"
    assert schedule.next_longest(waiting, {0: [1.0], 6: [1000.0]})[0] == "ada_notes"  # no section: index -1


def test_a_sections_checks_are_the_modules_its_solution_imports_and_theirs(tmp_path):
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "a.py").write_text("from grader.checks import call, expect\nfrom grader.checks.b import helper\n")
    (checks / "b.py").write_text("from grader.checks.a import other  # each imports the other\n")
    (checks / "c.py").write_text("")
    solution = tmp_path / "solution.ipynb"
    solution.write_text('"from grader.checks import a as check\\n", "from grader.checks import passed\\n"')
    assert fingerprint.check_modules(solution, checks) == ["a", "b"]  # `passed` is no module of its own


def test_a_section_is_placed_by_its_place_in_the_course():
    assert schedule.section_order("06-tiny-transformer") == 5 and schedule.section_order("01-heads") == 0
    assert schedule.section_order(None) == -1


def test_a_submission_is_placed_by_its_content_not_its_name(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook_grader, "read_notebook", _read_spec)
    monkeypatch.setattr(notebook_grader, "identify", _spec_section)
    named = _hand_in(tmp_path, "ada_01-heads.ipynb", section="03-norms", scores={})
    broken = _hand_in(tmp_path, "ben_03-norms.ipynb", refuse="not a notebook")
    assert autograde._placed([autograde.Submission("ada", named), autograde.Submission("ben", broken)]) == [
        autograde.Submission("ada", named, "03-norms"), autograde.Submission("ben", broken)]


# --- a class, start to end -------------------------------------------------------------------

@pytest.fixture
def stand_in_class(tmp_path, monkeypatch):
    """`grade(*inputs, **options)`: autograde with the stand-in course on threads; returns
    (results, the lines echoed). `grade.started` records the sandbox check and the folder, sections and
    options the class folder was prepared with, `grade.copies` the folders the workers' sections
    were copied from, `grade.pools` each pool's workers and what each worker started with,
    `grade.recorded` what went into the class's gradebook; `grade.manual` stands for the grades
    entered by hand there (grader/class_folder.py has its own tests)."""
    course = StandInCourse()
    started, pools, recorded, manual, copies = [], [], [], {}, []

    def start_worker(*options):
        pools[-1][1].append(options)
        worker._course, worker._started_with = course, options

    def pool(workers, initializer, initargs):
        pools.append((workers, []))
        return ThreadPoolExecutor(workers, initializer=initializer, initargs=initargs)

    def record(folder, result, files):
        recorded.append((folder, result.student, result.section, files))
    from grader import class_folder
    monkeypatch.setattr(class_folder, "prepare",
                        lambda folder, sections, options: started.append((folder, list(sections), options)))
    monkeypatch.setattr(class_folder, "sections_copy", lambda folder, target: copies.append(folder) or Path(target))
    monkeypatch.setattr(class_folder, "record", record)
    monkeypatch.setattr(class_folder, "manual_grades", lambda folder: manual)
    monkeypatch.setattr(worker, "start", start_worker)
    monkeypatch.setattr(autograde, "ProcessPoolExecutor", pool)
    monkeypatch.setattr(worker, "_course", None)
    monkeypatch.setattr(worker, "_started_with", None)
    from grader import sandbox
    monkeypatch.setattr(sandbox, "check_available", lambda: started.append("sandbox checked"))
    monkeypatch.setattr(notebook_grader, "read_notebook", _read_spec)
    monkeypatch.setattr(notebook_grader, "identify", _spec_section)
    out = tmp_path / "graded" / "fall 2026"

    def grade(*inputs, **options):
        lines = []
        results = autograde.autograde(inputs, out, echo=lines.append, **options)
        return results, lines

    grade.out, grade.course, grade.started, grade.pools = out, course, started, pools
    grade.recorded, grade.manual, grade.copies = recorded, manual, copies
    return grade


def _read_spec(path):
    try:
        return json.loads(Path(path).read_text())
    except ValueError:
        raise notebook_grader.NotGradable("not a readable notebook") from None


def _spec_section(spec):
    if "section" not in spec:
        raise notebook_grader.NotGradable("not a notebook of any section")
    return spec["section"]


def _hand_in(folder, name, **spec):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(spec))
    return folder / name


def test_a_class_run_writes_results_grades_feedback_and_report(stand_in_class, tmp_path, capsys):
    hand_in = tmp_path / "class"
    _hand_in(hand_in, "ada_01-heads.ipynb", section="01-heads", scores={"split": 2, "merge": 2},
             repairs=["metadata restored", "a check put back"], interrupted=["a cell ran past the 30 s limit", "another one too"])
    flag = "test_merge passed in the notebook but fails the grader's check"
    _hand_in(hand_in, "ben_01-heads.ipynb", section="01-heads", scores={"split": 2, "merge": 0}, flags=[flag])
    _hand_in(hand_in, "ben_03-norms.ipynb", refuse="not a readable notebook: <cut off>\nsecond line")
    options = GradingOptions(timeout=30, memory_mb=1024, warm=False)
    results, lines = stand_in_class(hand_in, options=options, workers=8)
    out = stand_in_class.out
    assert lines == ["3 submissions, 0 already graded, 3 to grade"]
    from grader import release
    assert stand_in_class.started == ["sandbox checked", (out, release.sections_with_solutions(), options)]
    [(workers, started)] = stand_in_class.pools
    assert workers == 3  # no more workers than notebooks
    # the workers' courses start from a copy of the class folder's sections, made elsewhere
    assert stand_in_class.copies == [out]
    [(template, started_with)] = set(started)
    assert started_with == options and not template.is_relative_to(out)
    assert sorted(stand_in_class.recorded, key=str) == sorted([
        (out, "ada", "01-heads", {"submitted": "ada's 01-heads", "autograded": "ada's 01-heads, graded"}),
        (out, "ben", "01-heads", {"submitted": "ben's 01-heads", "autograded": "ben's 01-heads, graded"}),
        (out, "ben", None, None)], key=str)
    assert sorted(results) == ["ada/ada_01-heads.ipynb", "ben/ben_01-heads.ipynb", "ben/ben_03-norms.ipynb"]
    ada, ben, broken = (results[k] for k in sorted(results))
    versions = fingerprint.grading_versions(options)
    assert ada.sha256 == autograde._sha256(hand_in / "ada_01-heads.ipynb")
    assert (ada.version, ben.version, broken.version) == (versions["01-heads"],) * 2 + (versions[None],)
    assert ada.feedback == "feedback/ada/01-heads/01-heads.html"  # nbgrader's layout
    assert (out / ada.feedback).read_text() == "<html>feedback for ada, 01-heads</html>"
    # a submission that could not be graded gets a page saying why, named after its file
    assert broken.feedback == "feedback/ben/ben_03-norms/ben_03-norms.html"
    page = (out / broken.feedback).read_text()
    assert "<h1>ben_03-norms.ipynb</h1>" in page and "could not be graded and scores 0" in page
    assert "&lt;cut off&gt;\nsecond line</pre>" in page and "<cut off>" not in page
    assert {k: Result.from_json(r) for k, r in json.loads((out / "results.json").read_text()).items()} == results
    assert not list(out.glob("*.tmp"))
    printed, progress = capsys.readouterr()
    printed = printed.splitlines()
    assert "grading: 100%" in progress and "3/3 [" in progress and re.search(r"notebook/s|s/notebook", progress)
    assert sorted(printed) == sorted([
        "ada ada_01-heads.ipynb: 4/4 (0 s; repaired: metadata restored, a check put back; a cell ran past the 30 s limit; another one too)",
        f"ben ben_01-heads.ipynb: 2/4 (0 s; {flag})",
        "ben ben_03-norms.ipynb: 0 points - not a readable notebook: <cut off>"])
    rows = list(csv.DictReader(open(out / "grades.csv")))
    assert [(r["student"], r["01-heads:test_split"], r["01-heads:test_merge"], r["total"]) for r in rows] == \
        [("ada", "2.0", "2.0", "4.0"), ("ben", "2.0", "0.0", "2.0")]
    assert rows[0]["problems"] == ("ada_01-heads.ipynb: a cell ran past the 30 s limit; "
                                   "ada_01-heads.ipynb: another one too")
    assert rows[1]["problems"] == (f"ben_01-heads.ipynb: {flag}; "
                                   "ben_03-norms.ipynb: not a readable notebook: <cut off>\nsecond line")
    assert "2/2" in (out / "report.html").read_text()


def test_a_rerun_grades_only_what_is_new_changed_or_graded_by_changed_checks(stand_in_class, tmp_path, monkeypatch):
    hand_in = tmp_path / "class"
    _hand_in(hand_in, "ada_01-heads.ipynb", section="01-heads", scores={"split": 2})
    _hand_in(hand_in, "ada_02-positions.ipynb", section="02-positions", scores={"sinusoid": 0})
    _hand_in(hand_in, "ben_01-heads.ipynb", section="01-heads", scores={"split": 0})
    first, _ = stand_in_class(hand_in, workers=1)
    again, lines = stand_in_class(hand_in, workers=1)
    assert lines == ["3 submissions, 3 already graded, 0 to grade"] and again == first
    # ben hands in again, cyd hands in late
    _hand_in(hand_in, "ben_01-heads.ipynb", section="01-heads", scores={"split": 2})
    _hand_in(hand_in, "cyd_02-positions.ipynb", section="02-positions", scores={"sinusoid": 2})
    stand_in_class.course.graded.clear()
    later, lines = stand_in_class(hand_in, workers=1)
    assert lines == ["4 submissions, 2 already graded, 2 to grade"]
    assert sorted(stand_in_class.course.graded) == [("ben", "ben_01-heads.ipynb"), ("cyd", "cyd_02-positions.ipynb")]
    assert later["ben/ben_01-heads.ipynb"].score == 2.0
    assert {k: later[k] for k in first if k != "ben/ben_01-heads.ipynb"} == \
        {k: first[k] for k in first if k != "ben/ben_01-heads.ipynb"}
    # a check of section 02 changes: its notebooks alone are graded again
    versions = fingerprint.grading_versions(GradingOptions())
    monkeypatch.setattr(fingerprint, "grading_versions", lambda *args, **kwargs: {**versions, "02-positions": "changed"})
    stand_in_class.course.graded.clear()
    _, lines = stand_in_class(hand_in, workers=1)
    assert lines == ["4 submissions, 2 already graded, 2 to grade"]
    assert sorted(stand_in_class.course.graded) == [("ada", "ada_02-positions.ipynb"), ("cyd", "cyd_02-positions.ipynb")]


def test_the_graders_failure_is_no_score_at_all_and_is_graded_again_next_run(stand_in_class, tmp_path, capsys):
    hand_in = tmp_path / "class"
    _hand_in(hand_in, "ada_01-heads.ipynb", section="01-heads", scores={"split": 2})
    _hand_in(hand_in, "ada_03-norms.ipynb", section="03-norms", grader_fails="the warm-kernel server stopped twice")
    _hand_in(hand_in, "ben_03-norms.ipynb", section="03-norms", scores={"norm": 1})
    results, _ = stand_in_class(hand_in, workers=1)
    assert "ada ada_03-norms.ipynb: not graded - grader failure: the warm-kernel server stopped twice" \
        in capsys.readouterr().out
    rows = {r["student"]: r for r in csv.DictReader(open(stand_in_class.out / "grades.csv"))}
    assert (rows["ada"]["03-norms:test_norm"], rows["ada"]["03-norms:total"], rows["ada"]["total"]) == ("", "", "2.0")
    assert rows["ada"]["problems"] == "ada_03-norms.ipynb: grader failure: the warm-kernel server stopped twice"
    assert rows["ben"]["01-heads:total"] == "0"  # not handed in: a zero, as before
    assert rows["ben"]["03-norms:total"] == "1.0"  # a failure blanks its own student's row only
    report = (stand_in_class.out / "report.html").read_text()
    assert "1 could not be graded" not in report and "1 not graded because the grader failed" in report
    stand_in_class.course.graded.clear()
    _, lines = stand_in_class(hand_in, workers=1)
    assert lines == ["3 submissions, 2 already graded, 1 to grade"]
    assert stand_in_class.course.graded == [("ada", "ada_03-norms.ipynb")] * 2  # and again on a fresh course
    assert stand_in_class.pools[-1][1] == [stand_in_class.pools[-1][1][0]] * 2


def test_a_class_with_nothing_new_starts_no_workers_and_still_writes_the_tables(stand_in_class, tmp_path):
    (tmp_path / "empty").mkdir()
    results, lines = stand_in_class(tmp_path / "empty")
    assert results == {} and lines == ["0 submissions, 0 already graded, 0 to grade"]
    assert stand_in_class.pools == []
    assert (stand_in_class.out / "grades.csv").read_text().splitlines() == ['"student","total","waiting","problems"']
    assert (stand_in_class.out / "report.html").is_file()


def test_the_pool_has_as_many_workers_as_asked_or_cores(stand_in_class, tmp_path, monkeypatch):
    hand_in = tmp_path / "class"
    for student in ("ada", "ben", "cyd", "dan"):
        _hand_in(hand_in, f"{student}_01-heads.ipynb", section="01-heads", scores={"split": 2})
    monkeypatch.setattr(autograde.os, "cpu_count", lambda: 3)
    stand_in_class(hand_in)
    (hand_in / "dan_01-heads.ipynb").unlink()
    _hand_in(hand_in, "eve_01-heads.ipynb", section="01-heads", scores={"split": 2})
    stand_in_class(hand_in, workers=2)
    assert [workers for workers, _ in stand_in_class.pools] == [3, 1]


def test_a_class_handed_in_as_an_lms_zip_is_unpacked_beside_the_grades_and_read_by_the_pattern(
        stand_in_class, tmp_path):
    with zipfile.ZipFile(tmp_path / "week 3.zip", "w") as archive:
        archive.writestr("attempt-ada-01-heads.ipynb", json.dumps({"section": "01-heads", "scores": {"split": 2}}))
    results, _ = stand_in_class(tmp_path / "week 3.zip", pattern=r"attempt-(?P<student>[a-z]+)-")
    [(key, result)] = results.items()
    assert key == "ada/attempt-ada-01-heads.ipynb" and result.score == 2.0
    assert result.notebook == str(stand_in_class.out / "unpacked" / "week 3" / "attempt-ada-01-heads.ipynb")
    # the defaults: a minute per cell, 4 GiB per kernel, warm kernels where the platform allows, sandboxed
    assert stand_in_class.started[0] == "sandbox checked"
    assert [options for _, options in stand_in_class.pools[0][1]] == [GradingOptions()]
    assert GradingOptions() == GradingOptions(timeout=60, memory_mb=4096, sandboxed=True, warm=None)


def test_without_a_core_count_the_class_is_graded_by_one_worker(stand_in_class, tmp_path, monkeypatch):
    hand_in = tmp_path / "class"
    for student in ("ada", "ben"):
        _hand_in(hand_in, f"{student}_01-heads.ipynb", section="01-heads", scores={"split": 2})
    monkeypatch.setattr(autograde.os, "cpu_count", lambda: None)
    stand_in_class(hand_in)
    assert [workers for workers, _ in stand_in_class.pools] == [1]


def test_each_result_is_kept_as_it_arrives_and_results_json_written_once(stand_in_class, tmp_path, monkeypatch):
    hand_in = tmp_path / "class"
    for student in ("ada", "ben", "cyd"):
        _hand_in(hand_in, f"{student}_01-heads.ipynb", section="01-heads", scores={"split": 2})
    store = stand_in_class.out / "results.json"
    kept, saves, real_line, real_save = [], [], autograde._line, results_store.save

    def line(result):  # the line printed once a result is kept
        kept.append(sorted(results_store.load(store)))
        return real_line(result)
    monkeypatch.setattr(autograde, "_line", line)
    monkeypatch.setattr(results_store, "save", lambda *args: saves.append(args) or real_save(*args))
    stand_in_class(hand_in, workers=1)
    assert [len(keys) for keys in kept] == [1, 2, 3] and len(saves) == 1
    assert not store.with_suffix(".jsonl").exists()  # all in results.json now
    text = store.read_text()
    assert len(json.loads(text)) == 3 and text == json.dumps(json.loads(text), indent=1, sort_keys=True)


def test_a_run_stopped_or_killed_midway_loses_no_result(stand_in_class, tmp_path, monkeypatch):
    hand_in = tmp_path / "class"
    for student in ("ada", "ben", "cyd"):
        _hand_in(hand_in, f"{student}_01-heads.ipynb", section="01-heads", scores={"split": 2})
    store, real_line = stand_in_class.out / "results.json", autograde._line

    def stop_at_the_second(result):
        if result.student == "ben":
            raise KeyboardInterrupt
        return real_line(result)
    monkeypatch.setattr(autograde, "_line", stop_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        stand_in_class(hand_in, workers=1)
    assert sorted(json.loads(store.read_text())) == ["ada/ada_01-heads.ipynb", "ben/ben_01-heads.ipynb"]
    # killed instead: results.json is older than the journal, whose last line was cut off
    journal = store.with_suffix(".jsonl")
    kept = json.loads(store.read_text())
    store.write_text(json.dumps({"ada/ada_01-heads.ipynb": kept["ada/ada_01-heads.ipynb"]}))
    journal.write_text(json.dumps(["ben/ben_01-heads.ipynb", kept["ben/ben_01-heads.ipynb"]]) + "\n" + '["cyd/cyd_01')
    assert results_store.load(store) == {k: Result.from_json(r) for k, r in kept.items()}
    monkeypatch.setattr(autograde, "_line", real_line)
    _, lines = stand_in_class(hand_in, workers=1)
    assert lines == ["3 submissions, 2 already graded, 1 to grade"]
    assert len(json.loads(store.read_text())) == 3 and not journal.exists()



def test_a_run_killed_twice_keeps_the_results_of_both(stand_in_class, tmp_path, monkeypatch):
    hand_in = tmp_path / "class"
    for student in ("ada", "ben", "cyd"):
        _hand_in(hand_in, f"{student}_01-heads.ipynb", section="01-heads", scores={"split": 2})
    _, real_save = stand_in_class(hand_in, workers=1), results_store.save
    store = stand_in_class.out / "results.json"
    journal, kept = store.with_suffix(".jsonl"), json.loads(store.read_text())
    # the first run was killed after ada and ben, the second line cut off; cyd still to grade
    store.write_text(json.dumps({"ada/ada_01-heads.ipynb": kept["ada/ada_01-heads.ipynb"]}))
    journal.write_text(json.dumps(["ben/ben_01-heads.ipynb", kept["ben/ben_01-heads.ipynb"]]) + "\n" + '["ben/ben_01')

    class Killed(BaseException):
        pass

    def killed_before_writing_results_json(store_, results):
        if len(results) == 3:  # the run's own save, after grading cyd: the kill comes first
            raise Killed
        real_save(store_, results)
    monkeypatch.setattr(results_store, "save", killed_before_writing_results_json)
    with pytest.raises(Killed):
        stand_in_class(hand_in, workers=1)
    assert journal.exists() and sorted(results_store.load(store)) == sorted(kept)
    assert sorted(json.loads(store.read_text())) == ["ada/ada_01-heads.ipynb", "ben/ben_01-heads.ipynb"]


def test_on_a_cluster_the_submissions_go_to_its_scheduler_and_this_machine_needs_no_sandbox(
        stand_in_class, tmp_path, monkeypatch):
    from grader import cluster
    hand_in = tmp_path / "class"
    for student in ("ada", "ben"):
        _hand_in(hand_in, f"{student}_01-heads.ipynb", section="01-heads", scores={"split": 2})
    sent = []

    def grade_on_the_cluster(address, todo, start, versions, echo):
        sent.append((address, [key for key, _, _ in todo], start, versions))
        echo("sent to the cluster")
        worker._course = stand_in_class.course
        for item in todo:  # a Dask worker grades a copy of the bytes sent, in a folder of its own
            copy = tmp_path / "on a worker" / item[1].path.name
            copy.parent.mkdir(exist_ok=True)
            copy.write_bytes(item[1].path.read_bytes())
            yield item, worker.grade(item[1].student, str(copy))
    monkeypatch.setattr(cluster, "grade", grade_on_the_cluster)
    options = GradingOptions(timeout=30, memory_mb=1024, warm=False)
    results, lines = stand_in_class(hand_in, options=options, scheduler="tcp://grading:8786")
    assert stand_in_class.pools == [] and "sandbox checked" not in stand_in_class.started  # the workers check theirs
    [(address, keys, (template, started_with), versions)] = sent
    assert address == "tcp://grading:8786" and keys == ["ada/ada_01-heads.ipynb", "ben/ben_01-heads.ipynb"]
    assert started_with == options and stand_in_class.copies == [stand_in_class.out]
    assert versions == fingerprint.grading_versions(options)
    assert lines == ["2 submissions, 0 already graded, 2 to grade", "sent to the cluster"]
    assert [results[key].score for key in keys] == [2.0, 2.0]
    assert [results[key].notebook for key in keys] == [str(hand_in / f"{s}_01-heads.ipynb") for s in ("ada", "ben")]
    assert results[keys[0]].version == versions["01-heads"]
    assert {k: Result.from_json(r) for k, r in json.loads((stand_in_class.out / "results.json").read_text()).items()} == results


# --- the grade table -------------------------------------------------------------------------

def test_a_grader_failure_blanks_the_section_of_its_content_and_no_other(tmp_path):
    """The section is the one found from the notebook's content, whatever its file is named
    (before, the file name decided, and a file named for no section got zeros)."""
    def graded(student, section):
        return Result(f"{student}_{section}.ipynb", section, student, (Task("test_x", 2.0, 2.0),))

    def failed(notebook, section):
        return Result(notebook, section, "ada", error="grader failure: it broke", grader_failure=True)
    results = {"1": graded("ben", SECTIONS[0]), "2": graded("ben", SECTIONS[6]), "3": graded("ben", SECTIONS[3]),
               "4": failed("ada_notes.ipynb", SECTIONS[0]), "5": failed(f"ada_{SECTIONS[3]}.ipynb", None),
               "6": failed("ada_a.ipynb", SECTIONS[2])}
    export.write_grades(tmp_path / "grades.csv", results, {})
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "grades.csv"))}
    assert rows["ada"][f"{SECTIONS[0]}:total"] == ""  # the first section too
    assert rows["ada"][f"{SECTIONS[6]}:total"] == "0"  # not handed in
    assert rows["ada"][f"{SECTIONS[3]}:total"] == "0"  # no section found: its name alone says nothing
    assert rows["ada"]["total"] == "0"
    # in course order of the sections found, not of the file names; no section found last
    assert rows["ada"]["problems"] == ("ada_notes.ipynb: grader failure: it broke; ada_a.ipynb: grader failure: it broke; "
                                       "ada_04-residuals.ipynb: grader failure: it broke")


def test_grades_csv_puts_sections_in_course_order_and_reads_results_of_older_runs(tmp_path):
    def result(student, section, score, **extra):
        return Result.from_json({"student": student, "section": section, "notebook": f"{student}_{section}.ipynb",
                                 "error": "", "score": score, "max_score": 2.0, **extra,
                                 "tasks": [{"grade_id": "test_x", "score": score, "max_score": 2.0, "message": ""}]})
    # results.json of an earlier version of the grader has no "interrupted" entry
    results = {"a": result("ada", SECTIONS[6], 2.0), "b": result("ada", SECTIONS[1], 1.5, interrupted=[])}
    export.write_grades(tmp_path / "grades.csv", results, {})
    with open(tmp_path / "grades.csv", newline="") as f:
        text = f.read()
    questions = {section: [f"{section}:{q}" for q in written_questions(section)] for section in (SECTIONS[1], SECTIONS[6])}
    assert text.splitlines()[0] == ",".join(f'"{name}"' for name in ["student", f"{SECTIONS[1]}:test_x", *questions[SECTIONS[1]],
                                             f"{SECTIONS[1]}:total", f"{SECTIONS[6]}:test_x", *questions[SECTIONS[6]],
                                             f"{SECTIONS[6]}:total", "total", "waiting", "problems"])
    waiting = "; ".join(questions[SECTIONS[1]] + questions[SECTIONS[6]])
    assert text.splitlines()[1] == f'"ada","1.5","","","","1.5","2.0","","","","","2.0","3.5","{waiting}",""'


def test_grades_csv_takes_the_grades_entered_by_hand(tmp_path):
    section = SECTIONS[0]
    first, second, third = written_questions(section)

    def result(student):
        return Result(f"{student}_{section}.ipynb", section, student, (Task("test_x", 0.0, 2.0, "AssertionError: wrong"),))
    # ada: her check overruled by hand, one answer graded, one graded but rewritten since, one waiting
    manual = {("ada", section): {"test_x": (1.5, False), first: (2.0, False), second: (1.0, True), third: (None, True)}}
    export.write_grades(tmp_path / "grades.csv", {"a": result("ada"), "b": result("ben")}, manual)
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "grades.csv"))}
    ada, ben = rows["ada"], rows["ben"]
    assert [ada[f"{section}:{name}"] for name in ("test_x", first, second, third)] == ["1.5", "2.0", "1.0", ""]
    assert ada[f"{section}:total"] == ada["total"] == "4.5"
    assert ada["waiting"] == f"{section}:{second}; {section}:{third}"
    assert [ben[f"{section}:{name}"] for name in ("test_x", first, second, third)] == ["0.0", "", "", ""]
    assert ben["total"] == "0.0" and ben["waiting"] == "; ".join(f"{section}:{q}" for q in (first, second, third))



def test_two_notebooks_of_one_section_for_one_student_are_held_until_one_is_removed(stand_in_class, tmp_path):
    hand_in = tmp_path / "class"
    _hand_in(hand_in, "bob_01-heads.ipynb", section="01-heads", scores={"split": 0, "merge": 0})
    _hand_in(hand_in, "bob_01-heads~.ipynb", section="01-heads", scores={"split": 2, "merge": 2})
    _hand_in(hand_in, "bob_03-norms.ipynb", section="03-norms", scores={"norm": 2})  # another section: graded
    _hand_in(hand_in, "ada_01-heads.ipynb", section="01-heads", scores={"split": 2, "merge": 2})
    _hand_in(hand_in, "ada_x.ipynb", refuse="not a notebook")  # no section: grading says why
    results, lines = stand_in_class(hand_in)
    assert lines == ["5 submissions, 0 already graded, 3 to grade, 2 held: a student's second notebook of a section"]
    assert sorted(stand_in_class.course.graded) == [("ada", "ada_01-heads.ipynb"), ("ada", "ada_x.ipynb"),
                                                    ("bob", "bob_03-norms.ipynb")]
    names = f"{hand_in / 'bob_01-heads.ipynb'}, {hand_in / 'bob_01-heads~.ipynb'}"
    for key in ("bob/bob_01-heads.ipynb", "bob/bob_01-heads~.ipynb"):
        assert results[key] == Result(str(hand_in / key.split("/")[1]), "01-heads", "bob", grader_failure=True, held=True, error=(
            f"not graded: bob has 2 notebooks of 01-heads ({names}); remove all but one and grade again"))
    assert sorted(student for _, student, *_ in stand_in_class.recorded) == ["ada", "ada", "bob"]
    rows = {r["student"]: r for r in csv.DictReader(open(stand_in_class.out / "grades.csv"))}
    assert rows["bob"]["01-heads:total"] == "" and rows["bob"]["03-norms:total"] == "2.0"
    assert rows["bob"]["problems"].count("remove all but one") == 2
    assert not (stand_in_class.out / "feedback" / "bob" / "01-heads").exists()

    (hand_in / "bob_01-heads~.ipynb").unlink()
    results, lines = stand_in_class(hand_in)
    assert lines == ["4 submissions, 3 already graded, 1 to grade"]
    assert "bob/bob_01-heads~.ipynb" not in results and results["bob/bob_01-heads.ipynb"].score == 0.0
    rows = {r["student"]: r for r in csv.DictReader(open(stand_in_class.out / "grades.csv"))}
    assert rows["bob"]["01-heads:total"] == "0.0" and rows["bob"]["problems"] == ""


def test_a_cell_a_spreadsheet_would_run_is_quoted_and_reads_back_as_text(tmp_path):
    def result(student, notebook):
        return Result(notebook, "01-heads", student, (Task("test_split", 2.0, 2.0),), flags=("-flag",))
    students = ["=2+5+cmd|' -C calc'!A0", "+1", "-1", "@SUM(A1)", "\tx", "\ry", "ada", "a=b"]
    results = {s: result(s, f"{s}_01-heads.ipynb") for s in students}
    export.write_grades(tmp_path / "grades.csv", results, {})
    with open(tmp_path / "grades.csv", newline="") as f:
        records = f.read().split("\r\n")  # csv's line end; a lone "\r" inside a quoted cell is no record's end
    assert all(line.startswith('"') and line.endswith('"') for line in records if line), records
    with open(tmp_path / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    read = [row["student"] for row in rows]
    assert sorted(read) == sorted(("'" + s if s[0] in "=+-@\t\r" else s) for s in students)
    assert all(row["01-heads:total"] == "2.0" and row["total"] == "2.0" for row in rows)
    assert {row["problems"][0] for row in rows} <= {"'", "a"}
    assert export.plain_text(-1.5) == -1.5 and export.plain_text("") == ""


def test_kept_grading_grades_only_what_changed_since_its_last_run(stand_in_class, kept_grading, tmp_path, monkeypatch):
    """The tests' kept grading (conftest.kept_grading): the next run starts from the last one's
    outputs, grades only what autograde's own rule says changed, and forgets files no longer
    handed in."""
    import conftest
    monkeypatch.setattr(conftest, "KEPT", tmp_path / "kept")
    hand_in = tmp_path / "class"
    _hand_in(hand_in, "ada_01-heads.ipynb", section="01-heads", scores={"split": 2})
    _hand_in(hand_in, "ben_01-heads.ipynb", section="01-heads", scores={"split": 0})
    _, lines = kept_grading("stand-in", [hand_in], tmp_path / "first")
    assert lines[0] == "2 submissions, 0 already graded, 2 to grade"
    (hand_in / "ben_01-heads.ipynb").unlink()
    _hand_in(hand_in, "cyd_01-heads.ipynb", section="01-heads", scores={"split": 1})
    stand_in_class.course.graded.clear()
    results, lines = kept_grading("stand-in", [hand_in], tmp_path / "second")
    assert lines[0] == "2 submissions, 1 already graded, 1 to grade"
    assert stand_in_class.course.graded == [("cyd", "cyd_01-heads.ipynb")]
    assert set(results) == {"ada/ada_01-heads.ipynb", "cyd/cyd_01-heads.ipynb"}  # ben's result forgotten
    assert (tmp_path / "second" / results["ada/ada_01-heads.ipynb"].feedback).is_file()  # the kept outputs
    assert "ben" not in (tmp_path / "second" / "grades.csv").read_text()
