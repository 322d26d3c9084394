"""The grader: collecting a class, repairing broken submissions, grading one notebook as the
autograder does, and the whole sample class against what each student should score."""

import copy
import csv
import gc
import html
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from grader import autograde, export, fingerprint, notebook_grader, judge, nbconfig, release, sample_class, schedule
from grader.course import ROOT, SECTIONS, release_notebook, solution_notebook
from grader.class_folder import written_questions
from grader.options import SAMPLE_CLASS, GradingOptions
from grader.repair import repair
from grader.result import Result, Task

FRESH = GradingOptions(warm=False)  # kernels started from scratch

FIRST = release.sections_with_solutions()[0]


def grading_meta(cell):
    return cell.metadata.get("nbgrader", {})


# --- collecting submissions ------------------------------------------------------------------

def test_collect_reads_folders_per_student_flat_folders_and_lms_zips(tmp_path):
    (tmp_path / "perstudent" / "ada").mkdir(parents=True)
    (tmp_path / "perstudent" / "ada" / "01-heads.ipynb").write_text("{}")
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "ben_01-heads.ipynb").write_text("{}")
    with zipfile.ZipFile(tmp_path / "lms.zip", "w") as archive:
        archive.writestr("cyd_attempt_2026-11-01_01-heads.ipynb", "{}")
    found = autograde.collect([tmp_path / "perstudent", tmp_path / "flat", tmp_path / "lms.zip"],
                              unpack_to=tmp_path / "unpacked")
    assert [s.student for s in found] == ["ada", "ben", "cyd"]
    custom = autograde.collect([tmp_path / "lms.zip"], pattern=r"_attempt_(?P<student>[\d-]+)_",
                               unpack_to=tmp_path / "unpacked2")
    assert custom[0].student == "2026-11-01"


def test_collect_refuses_a_pattern_without_a_student_group(tmp_path):
    (tmp_path / "x.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"\(\?P<student>"):
        autograde.collect([tmp_path], pattern=r"^nomatch")


# --- reading, identifying and repairing ------------------------------------------------------

def test_unreadable_files_are_refused_with_the_reason(tmp_path):
    (tmp_path / "empty.ipynb").write_text("")
    (tmp_path / "cut.ipynb").write_text(release_notebook(FIRST).read_text()[:500])
    with pytest.raises(notebook_grader.NotGradable, match="empty"):
        notebook_grader.read_notebook(tmp_path / "empty.ipynb")
    with pytest.raises(notebook_grader.NotGradable, match="not valid notebook JSON"):
        notebook_grader.read_notebook(tmp_path / "cut.ipynb")


@pytest.mark.parametrize("section", release.sections_with_solutions())
def test_a_notebook_is_identified_with_or_without_its_metadata(section):
    notebook = nbformat.read(release_notebook(section), as_version=4)
    assert notebook_grader.identify(notebook) == section
    for cell in notebook.cells:
        cell.metadata = {}
    assert notebook_grader.identify(notebook) == section


def test_a_notebook_of_no_section_is_not_gradable():
    other = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    with pytest.raises(notebook_grader.NotGradable, match="not a notebook of any section"):
        notebook_grader.identify(other)


def test_repair_restores_stripped_metadata_by_id_and_by_content():
    reference = nbformat.read(release_notebook(FIRST), as_version=4)
    answers = {grading_meta(c)["grade_id"]: c.source
               for c in nbformat.read(solution_notebook(FIRST), as_version=4).cells
               if grading_meta(c).get("solution") and c.cell_type == "code"}
    broken = copy.deepcopy(reference)
    for cell in broken.cells:
        if grading_meta(cell).get("solution") and cell.cell_type == "code":
            cell.source = answers[grading_meta(cell)["grade_id"]]
        cell.metadata = {}
    by_id = copy.deepcopy(broken)
    notes = repair(by_id, reference)
    assert [grading_meta(c).get("grade_id") for c in by_id.cells] == \
        [grading_meta(c).get("grade_id") for c in reference.cells]
    assert notes and all("metadata restored" in n for n in notes)
    no_ids = copy.deepcopy(broken)
    for i, cell in enumerate(no_ids.cells):
        cell.id = f"new-{i}"
    repair(no_ids, reference)
    code_ids = lambda nb: [grading_meta(c).get("grade_id") for c in nb.cells if c.cell_type == "code"]
    assert code_ids(no_ids) == code_ids(reference)


def test_repair_puts_back_a_deleted_check_and_ungrades_a_duplicate():
    reference = nbformat.read(release_notebook(FIRST), as_version=4)
    notebook = copy.deepcopy(reference)
    checks = [c for c in notebook.cells if grading_meta(c).get("grade") and c.cell_type == "code"]
    notebook.cells.remove(checks[0])
    duplicate = copy.deepcopy(checks[-1])
    duplicate.id = "dup"
    notebook.cells.append(duplicate)
    notes = repair(notebook, reference)
    ids = [grading_meta(c).get("grade_id") for c in notebook.cells if grading_meta(c)]
    assert ids == [grading_meta(c).get("grade_id") for c in reference.cells if grading_meta(c)]
    assert any("put back" in n for n in notes) and any("second copy" in n for n in notes)
    # the second copy stays, as ordinary code that still runs: only its grading goes
    assert len(notebook.cells) == len(reference.cells) + 1
    kept = [c for c in notebook.cells if c.get("id") == "dup"]
    assert len(kept) == 1 and kept[0].source == checks[-1].source and not grading_meta(kept[0])


def test_a_dead_kernel_is_named_in_one_line():
    log = 'Traceback...\n    nbclient.exceptions.DeadKernelError: Kernel died\n[ERROR] There was an error'
    assert "kernel died" in notebook_grader._reason(log)


def test_grading_starts_untimed_sections_then_the_longest_and_keeps_students_in_order():
    def item(student, section):
        return (f"{student}/{section}", autograde.Submission(student, Path(f"{student}_{section}.ipynb"),
                                                             section if section in SECTIONS else None), "")
    sections = ["01-heads", "05-block", "07-banking77", "nothing-known"]
    waiting = [item(student, section) for section in sections for student in ("ada", "bob")]
    assert schedule.next_longest(waiting, {}) == item("ada", "07-banking77")  # nothing timed: later first
    timed = {6: [7.0, 8.0], 4: [2.8]}  # 07 and 05 timed; 01 and the unknown file not yet
    assert schedule.next_longest(waiting, timed) == item("ada", "01-heads")
    order = []
    while waiting:
        order.append(schedule.next_longest(waiting, {**timed, 0: [3.5], -1: [0.1]}))
        waiting.remove(order[-1])
    assert [i[0] for i in order] == ["ada/07-banking77", "bob/07-banking77", "ada/01-heads", "bob/01-heads",
                                     "ada/05-block", "bob/05-block", "ada/nothing-known", "bob/nothing-known"]


# --- grades and report from results ----------------------------------------------------------

def _result(student, section, scores, error="", interrupted=()):
    tasks = tuple(Task(f"test_{k}", v, 2.0, "" if v else "AssertionError: no") for k, v in scores.items())
    return Result(f"{student}.ipynb", section if not error else None, student, tasks, error=error,
                  interrupted=tuple(interrupted))


def test_grades_csv_has_a_row_per_student_a_column_per_task_and_zeros_for_failures(tmp_path):
    results = {"a": _result("ada", "01-heads", {"f": 2.0, "g": 0.0}),
               "b": _result("ben", "01-heads", {}, error="the file is empty"),
               "c": _result("ada", "02-positions", {"h": 2.0}, interrupted=["a cell ran past the limit"]),
               "d": _result("cyd", "07-banking77", {}, error="not JSON"),
               "e": _result("cyd", "01-heads", {}, error="no such file")}
    for key, section in (("d", "07-banking77"), ("e", "01-heads")):  # finished in this order
        results[key] = replace(results[key], notebook=f"cyd/{section}.ipynb")
    results["f"] = _result("abe", "02-positions", {"h": 0.0})  # graded last, listed first
    export.write_grades(tmp_path / "grades.csv", results, {})
    rows = list(csv.DictReader(open(tmp_path / "grades.csv")))
    assert [row["student"] for row in rows] == ["abe", "ada", "ben", "cyd"]
    rows = rows[1:]
    written = {s: [f"{s}:{q}" for q in written_questions(s)] for s in ("01-heads", "02-positions")}
    assert list(rows[0]) == ["student", "01-heads:test_f", "01-heads:test_g", *written["01-heads"], "01-heads:total",
                             "02-positions:test_h", *written["02-positions"], "02-positions:total", "total",
                             "waiting", "problems"]
    assert rows[0]["total"] == "4.0" and rows[1]["01-heads:total"] == "0"
    assert rows[0]["problems"] == "ada.ipynb: a cell ran past the limit"
    assert "the file is empty" in rows[1]["problems"]
    assert rows[2]["problems"] == "01-heads.ipynb: no such file; 07-banking77.ipynb: not JSON"  # section order


def test_report_counts_pass_rates_and_failure_messages(tmp_path):
    from grader.report import write_report
    results = {"a": _result("ada", "01-heads", {"f": 2.0}),
               "b": _result("ben", "01-heads", {"f": 0.0}, interrupted=["a cell ran past the limit"]),
               "c": _result("cyd", "01-heads", {}, error="the file is empty")}
    results["d"] = _result("dan", "01-heads", {"f": 2.0})
    html = write_report(tmp_path, results).read_text()
    # the rate is over the task's graded submissions (3), not the class (4)
    assert "<tr><td>01-heads</td><td>test_f</td><td>2/3</td><td>67%</td></tr>" in html
    assert "<tr><td>1</td><td>test_f</td><td></td><td><code>AssertionError: no</code></td></tr>" in html
    assert "4 submissions: 3 graded, 1 could not be graded" in html and "the file is empty" in html
    assert "ben, ben.ipynb: a cell ran past the limit" in html
    late, early = _result("dan", "07-banking77", {}, error="not JSON"), _result("dan", "01-heads", {}, error="empty")
    late, early = replace(late, notebook="dan/07-banking77.ipynb"), replace(early, notebook="dan/01-heads.ipynb")
    html = write_report(tmp_path, {"late": late, "early": early}).read_text()  # finished in this order
    assert html.index("dan, 01-heads.ipynb") < html.index("dan, 07-banking77.ipynb")
    assert (tmp_path / "scores.png").stat().st_size > 1000


# --- grading for real ------------------------------------------------------------------------

def test_the_schema_revision_read_in_process_is_the_one_alembic_prints():
    assert nbconfig.alembic_head() == nbconfig.alembic_head_by_command()


def test_an_alembic_command_that_fails_gives_no_revision(tmp_path, monkeypatch):
    """What a failing `alembic` printed is not taken for the revision."""
    fake = tmp_path / "alembic"
    fake.write_text("#!/bin/sh\necho 'f00d (head)'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(subprocess.CalledProcessError):
        nbconfig.alembic_head_by_command()


def test_check_json_gives_the_solution_full_marks_and_the_release_zero(tmp_path):
    course = notebook_grader.NotebookGrader(tmp_path / "course")
    solved = course.grade(sample_class.CLASS / "ada" / f"{FIRST}.ipynb")
    assert solved.section == FIRST and solved.score == solved.max_score > 0
    assert all(t.message == "" for t in solved.tasks)
    untouched = course.grade(release_notebook(FIRST))
    assert untouched.score == 0
    assert all("not written yet" in t.message for t in untouched.tasks)
    command = [sys.executable, "-m", "grader", "check", "--json", str(release_notebook(FIRST))]
    printed = json.loads(subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True).stdout)
    assert set(printed) >= {"notebook", "score", "max_score", "tasks"}
    assert set(printed["tasks"][0]) == {"grade_id", "score", "max_score", "message"}
    assert printed["score"] == 0 and printed["max_score"] == solved.max_score


def test_a_kernels_sandbox_shows_banking77_and_only_the_visible_checks_results_behind_private_sockets(
        tmp_path, banking77_dir, monkeypatch):
    """The sandbox every kernel of a course runs in: its sockets in a folder closed to others, the
    Banking77 copy shown (a kernel has no network), the options' memory, and grader/references
    replaced by the recording of the visible checks' results alone (none for an unsandboxed course,
    which would not hide them anyway)."""
    from grader import recordings
    monkeypatch.setenv("BANKING77_DIR", str(banking77_dir))
    sandboxed = notebook_grader.kernel_settings(tmp_path, GradingOptions(memory_mb=1536))
    assert stat.S_IMODE((tmp_path / "sockets").stat().st_mode) == 0o700
    assert sandboxed["sockets"] == str(tmp_path / "sockets") and sandboxed["limits"]["memory_mb"] == 1536
    assert sandboxed["env"]["BANKING77_DIR"] == str(banking77_dir)
    assert sandboxed["replaced"] == {str(ROOT / "grader" / "references"): str(recordings.kernel_references())}
    (tmp_path / "trusted").mkdir()
    unconfined = notebook_grader.kernel_settings(tmp_path / "trusted", GradingOptions(sandboxed=False))
    assert unconfined["sandboxed"] is False and unconfined["replaced"] == {}


def test_a_course_hands_nbgrader_its_kernels_with_their_sandbox_and_where_the_course_is(tmp_path, monkeypatch):
    """What a course gives nbgrader for its kernels: fresh ones read their sandbox's settings from a
    file; forked ones come from the course's own warm server; and kernels that are not sandboxed
    inherit this process's environment, so it says where the course is."""
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    fresh = notebook_grader.NotebookGrader(tmp_path / "fresh", GradingOptions(sandboxed=False, warm=False))
    assert os.environ["COURSE_ROOT"] == str(ROOT)
    assert json.loads((fresh.folder / "fresh" / "sandbox.json").read_text()) == json.loads(json.dumps(fresh.settings))
    warm = notebook_grader.NotebookGrader(tmp_path / "warm", GradingOptions(sandboxed=False))
    try:
        assert warm.kernels is not None and warm.api.config.Execute.kernel_name == warm.kernels.name
        assert fresh.api.config.Execute.kernel_name != warm.kernels.name
    finally:
        warm.close()


def test_a_notebook_whose_warm_kernel_server_stopped_is_graded_once_more_then_given_up(tmp_path, monkeypatch):
    """grade() without nbgrader's run: nbgrader failing while the warm-kernel server has stopped
    is the grader's doing, so the notebook runs once more on kernels made ready again; a second
    such failure is a GraderFailure, never the student's zero."""
    section, outcomes, readied = "05-block", [], []
    course = notebook_grader.NotebookGrader(tmp_path / "course", FRESH)

    def autograde(assignment, student, **options):
        if not outcomes.pop(0):
            return {"success": False, "log": "", "error": "the kernel died"}
        folder = course.folder / "autograded" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(solution_notebook(assignment), folder / f"{assignment}.ipynb")
        return {"success": True, "log": "", "error": ""}

    class Stopped:  # a warm-kernel server that has stopped under the notebook
        def alive(self):
            return False
    monkeypatch.setattr(course.api, "autograde", autograde)
    monkeypatch.setattr(course, "_ready_kernels", lambda: readied.append(section))
    monkeypatch.setattr(course, "_record", lambda *args: None)
    course.kernels = Stopped()
    outcomes += [False, True]
    result = course.grade(solution_notebook(section))
    assert outcomes == [] and len(readied) == 2  # before the first run, and again before the second
    assert result.section == section and result.repairs == ()  # no repair ran: nothing to say
    outcomes += [False, False]
    with pytest.raises(notebook_grader.GraderFailure, match="^the warm-kernel server stopped twice while grading this notebook$"):
        course.grade(solution_notebook(section))
    assert outcomes == [] and len(readied) == 4


def test_the_scores_are_the_judges_verdicts_and_each_disagreement_is_flagged(tmp_path, monkeypatch):
    """grade() without nbgrader's run: the verdicts it would leave are set here, one run at a time."""
    section, runs, recorded, late = "05-block", [], [], []
    course = notebook_grader.NotebookGrader(tmp_path / "course", FRESH)

    def autograde(assignment, student, **options):
        folder = course.folder / "autograded" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(solution_notebook(assignment), folder / f"{assignment}.ipynb")
        for on_verdict in late:  # an earlier run's judge, still sending
            on_verdict("test_to_reference", verdict(True, True))
        for grade_id, sent in (runs[0] or {}).items():  # as JudgedExecute sends them: one check cell at a time
            course.api.config.JudgedExecute.on_verdict(grade_id, sent)
        runs.pop(0)
        return {"success": True, "log": "", "error": ""}

    monkeypatch.setattr(course.api, "autograde", autograde)
    monkeypatch.setattr(course, "_record", lambda *args: recorded.append(args))

    def verdict(passed, in_notebook, error=None):
        return {"passed": passed, "in_notebook": in_notebook, "stdout": "", "error": error}

    runs += [{"test_Block": verdict(False, True, ("AssertionError", "scaled by sqrt(d_model)"))},
             {"test_Block": verdict(True, False), "test_to_reference": verdict(True, True),
              "test_PostNormBlock": verdict(True, True)},
             {"test_Block": verdict(True, True)},
             None]  # the last run leaves no verdict: its check cells never ran
    first = course.grade(solution_notebook(section), student="ada")
    assert [(t.grade_id, t.score, t.max_score, t.message) for t in first.tasks] == [
        ("test_Block", 0.0, 3.0, "AssertionError: scaled by sqrt(d_model)"),
        ("test_to_reference", 0.0, 2.0, "not graded: its check cell did not run"),
        ("test_PostNormBlock", 0.0, 2.0, "not graded: its check cell did not run")]
    assert list(first.flags) == ["test_Block passed in the notebook but fails the grader's check (the submission "
                              "may interfere with its checks)"]
    assert recorded == [(section, "ada", list(first.tasks))] and first.score == 0.0
    second = course.grade(solution_notebook(section), student="ada")
    assert second.score == second.max_score == 7.0 and all(t.message == "" for t in second.tasks)
    assert list(second.flags) == ["test_Block failed in the notebook but passes the grader's check (the submission "
                               "may interfere with its checks)"]
    # a verdict sent to an earlier run's grader counts for nothing in this one
    late.append(course.api.config.JudgedExecute.on_verdict)
    third = course.grade(solution_notebook(section), student="ada")
    assert [(t.score, t.message) for t in third.tasks] == [
        (3.0, ""), (0.0, "not graded: its check cell did not run"), (0.0, "not graded: its check cell did not run")]
    fourth = course.grade(solution_notebook(section), student="ada")
    assert fourth.score == 0.0 and fourth.flags == ()
    assert {t.message for t in fourth.tasks} == {"not graded: its check cell did not run"}


def test_a_worker_sends_the_last_submission_as_handed_in_and_as_graded(tmp_path, monkeypatch):
    """The files `grader autograde` puts in the class's folder, as a worker's course has them;
    nbgrader's run stands in, leaving the solution as the graded notebook."""
    section = "05-block"
    course = notebook_grader.NotebookGrader(tmp_path / "course", FRESH)

    def autograde(assignment, student, **options):
        folder = course.folder / "autograded" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(solution_notebook(assignment), folder / f"{assignment}.ipynb")
        return {"success": True, "log": "", "error": ""}
    monkeypatch.setattr(course.api, "autograde", autograde)
    monkeypatch.setattr(course, "_record", lambda *args: None)
    course.grade(release_notebook(section))  # the default student, as `grader check` grades
    files = course.graded_files(section)
    assert files["autograded"] == solution_notebook(section).read_text()
    assert nbformat.reads(files["submitted"], as_version=4) == nbformat.read(release_notebook(section), as_version=4)


PASTED_PARTS = """class MultiHead(nn.Module):  # pasted from section 1, with its bug
    def __init__(self, d_model, heads):
        super().__init__()
        self.q, self.k, self.v, self.out = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, h, mask=None):
        return self.out(self.v(h))  # no attention at all


FeedForward = load_parts("04-residuals", "FeedForward")"""


@pytest.mark.nbgrader
def test_one_notebook_is_graded_task_by_task_with_its_repairs_time_limit_feedback_and_gradebook(tmp_path, monkeypatch):
    """Section 5 by nbgrader, value by value: one answer right (its cell stripped of metadata),
    one stuck in a loop until the time limit, one left unwritten, and a MultiHead of section 1
    pasted with a bug into the cell of earlier parts (the course's own runs in its place, and the
    feedback shows the student's). The course starts from another course's folder (the section
    registered there), its kernels forked from its own sandboxed server."""
    monkeypatch.delenv("COURSE_ROOT", raising=False)  # the course must tell its kernels itself
    section = "05-block"
    solution = nbformat.read(solution_notebook(section), as_version=4)
    answers = {grading_meta(c)["grade_id"]: c.source for c in solution.cells if grading_meta(c).get("solution")}
    notebook = nbformat.read(release_notebook(section), as_version=4)
    for cell in notebook.cells:
        if grading_meta(cell).get("grade_id") == "Block":
            cell.source, cell.metadata, block = answers["Block"], {}, cell
        elif grading_meta(cell).get("grade_id") == "to_reference":
            cell.source = "while True:  # stuck\n    pass"
        elif "earlier-parts" in cell.metadata.get("tags", []):
            cell.source = PASTED_PARTS
    notebook.cells.append(nbformat.v4.new_code_cell("import os\nprint('kernel parent', os.getppid())"))
    handed_in = tmp_path / "handed in" / "ada_05-block.ipynb"
    handed_in.parent.mkdir()
    nbformat.write(notebook, handed_in)
    template = notebook_grader.NotebookGrader(tmp_path / "template", FRESH)
    template.register(section)
    assert template.registered == {section} and template.kernels is None
    course = notebook_grader.NotebookGrader(tmp_path / "course" / "nested", GradingOptions(timeout=4, memory_mb=1536),
                                   template=template.folder)
    try:
        assert course.registered == {section} and course.settings["limits"]["memory_mb"] == 1536
        started = time.perf_counter()
        result = course.grade(handed_in, student="ada")
        assert time.perf_counter() - started < 60  # the loop stopped at the course's limit, not nbgrader's 120 s
        assert result.notebook == str(handed_in) and result.section == section
        assert list(result.repairs) == ["nbgrader metadata restored on 1 cell (Block)"]
        assert (result.score, result.max_score, result.written_max_score) == (3.0, 7.0, 6.0)
        assert [(t.grade_id, t.score, t.max_score) for t in result.tasks] == \
            [("test_Block", 3.0, 3.0), ("test_to_reference", 0.0, 2.0), ("test_PostNormBlock", 0.0, 2.0)]
        assert result.tasks[0].message == ""
        assert result.tasks[1].message.startswith("NameError: name 'to_reference' is not defined")
        [stopped] = result.interrupted
        assert stopped.startswith("a cell ran past the 4 s limit and was interrupted: In [")
        assert stopped.endswith("`while True:  # stuck`")
        # the notebook ran in a kernel forked from the warm server, the first process of its sandbox
        graded = nbformat.read(tmp_path / "course" / "nested" / "autograded" / "ada" / section / f"{section}.ipynb",
                               as_version=4)
        assert graded.cells[-1].outputs[0].text == "kernel parent 1\n"
        setup = next(c for c in graded.cells if c.cell_type == "code")  # it found the course it was told of
        assert [o.get("text") for o in setup.outputs] == ["Course ready on this computer.\n"]
        from nbgrader.api import Gradebook
        with Gradebook(f"sqlite:///{course.db}") as gradebook:  # the judge's scores, and nothing extra
            grades = gradebook.find_submission_notebook(section, section, "ada").grades
            assert {g.name: (g.auto_score, g.manual_score, g.extra_credit) for g in grades if g.cell_type == "code"} \
                == {"test_Block": (3.0, None, None), "test_to_reference": (0.0, None, None),
                    "test_PostNormBlock": (0.0, None, None)}
        [parts] = [c for c in graded.cells if "earlier-parts" in c.metadata.get("tags", [])]
        assert parts.source == PASTED_PARTS  # what ada wrote, not the course's code that ran
        # each check cell as the solutions hold it (hidden tests restored), with the judge's verdict
        # as its output; none of the judge's requests to the kernel is left in the notebook
        checks = {grading_meta(c)["grade_id"]: c for c in graded.cells
                  if grading_meta(c).get("grade") and not grading_meta(c).get("solution")}
        assert list(checks) == ["test_Block", "test_to_reference", "test_PostNormBlock"]
        assert {name: c.source for name, c in checks.items()} == \
            {name: source for name, (source, _) in judge.check_cells(section).items()}
        assert [o.output_type for o in checks["test_Block"].outputs] == ["stream"]
        assert checks["test_to_reference"].outputs[-1].evalue.startswith("name 'to_reference' is not defined")
        assert not any("grader.probe" in c.source for c in graded.cells)
        page = course.feedback_html(section, "ada")
        shown = html.unescape(re.sub(r"<[^>]+>", "", page))  # the page's text, as the student reads it
        assert "grader.probe" not in shown and "NameError: name 'to_reference' is not defined" in shown
        # the student sees each check as released, never the inputs of its hidden tests
        assert "check.to_reference(to_reference)" in shown
        assert "HIDDEN TESTS" not in shown and "d_model=64, heads=4" not in shown
        assert "<h4>05-block (Score: 3.0 / 13.0)</h4>" in page  # 3 of 7 autograded, written answers to come
        assert "no attention at all" in page and "def split_heads" not in page
        # the autograded notebook shows the grader each mark scheme; the student's page never does
        assert sum("For the grader" in c.source for c in graded.cells) == len(written_questions(section))
        assert "For the grader" not in page and "Mark scheme" not in page
        assert "NameError</span>: name 'to_reference' is not defined" in html.unescape(page)  # in the error's colour
        # ada hands in again: a notebook that kills its kernel, then the model answer
        block.source = "import os\nos._exit(3)"
        nbformat.write(notebook, handed_in)
        with pytest.raises(notebook_grader.NotGradable, match=r"^the kernel died while running the notebook"):
            course.grade(handed_in, student="ada")
        shutil.copy(solution_notebook(section), handed_in)
        assert course.grade(handed_in, student="ada").score == 7.0
        assert "<h4>05-block (Score: 7.0 / 13.0)</h4>" in course.feedback_html(section, "ada")  # written afresh
    finally:
        course.close()
    assert not course.kernels.alive()  # the course's server goes with it


def test_a_course_lives_in_its_folder_or_a_temporary_one_and_restarts_from_a_template(tmp_path):
    """No kernel runs here: the course's folder, its default time limit, and a worker's course
    started again from the template in the folder it used before."""
    course = notebook_grader.NotebookGrader(tmp_path, FRESH)  # a folder that exists already
    course.register("05-block")
    assert course.folder == tmp_path and (tmp_path / "gradebook.db").is_file()
    assert (tmp_path / "release" / "05-block" / "05-block.ipynb").is_file()
    assert course.options.timeout == 60  # seconds a cell may run, unless the caller says otherwise
    # a folder used before, its release since changed: registering again writes it afresh
    release = tmp_path / "release" / "05-block" / "05-block.ipynb"
    release.write_text("{}")
    notebook_grader.NotebookGrader(tmp_path, FRESH).register("05-block")
    assert nbformat.read(release, as_version=4).cells
    scratch = [notebook_grader.NotebookGrader(options=FRESH) for _ in range(2)]  # grader check's: a folder of its own
    folders = [c.folder for c in scratch]
    assert folders[0] != folders[1] and all(f.is_dir() and tmp_path not in f.parents for f in folders)
    del scratch
    gc.collect()
    assert not any(f.exists() for f in folders)  # nothing left behind once the course is gone
    for _ in range(2):
        again = notebook_grader.NotebookGrader(tmp_path / "worker", FRESH, template=tmp_path)
        assert again.registered == {"05-block"}
        assert (tmp_path / "worker" / "gradebook.db").read_bytes() == (tmp_path / "gradebook.db").read_bytes()


def test_a_course_whose_gradebook_cannot_be_read_says_so_and_names_it(tmp_path):
    """Issue 41: a worker's gradebook overwritten (through a link the judge once followed) gave the
    next students nbgrader's sqlite3.DatabaseError as their zero. The course now tells its own
    failure from theirs (worker.grade asks it after every failed grade)."""
    course = notebook_grader.NotebookGrader(tmp_path, FRESH)
    course.register("05-block")
    course.check_own_files()  # sound: nothing to say
    db = tmp_path / "gradebook.db"
    sound = db.read_bytes()
    for damage in (b"SQLite format 3\0" + b"\xff" * (len(sound) - 16), b"not a database\n" * 300, b""):
        db.write_bytes(damage)
        if damage:
            with pytest.raises(notebook_grader.GraderFailure, match=rf"^this worker's gradebook {re.escape(str(db))} cannot be read \(.+\)$"):
                course.check_own_files()
    db.unlink()
    with pytest.raises(notebook_grader.GraderFailure, match=r"cannot be read \(unable to open database file\)"):
        course.check_own_files()
    db.write_bytes(sound)
    course.check_own_files()


def test_each_failed_nbgrader_step_is_named_with_nbgrader_s_reason(tmp_path):
    course = notebook_grader.NotebookGrader(tmp_path, FRESH)
    course.register("05-block")
    course.api.generate_assignment = lambda *args, **kwargs: {"success": False, "error": "a broken source"}
    with pytest.raises(RuntimeError, match=r"^nbgrader could not register 02-positions:\na broken source$"):
        course.register("02-positions")
    # nbgrader fails with no log to read: the reason comes from its error
    course.api.autograde = lambda *args, **kwargs: {"success": False, "log": "",
                                                    "error": "Traceback (most recent call last):\nValueError: no kernel"}
    with pytest.raises(notebook_grader.NotGradable, match=r"^nbgrader could not grade it: ValueError: no kernel$"):
        course.grade(release_notebook("05-block"), student="ada")
    course.api.generate_feedback = lambda *args, **kwargs: {"success": False, "error": "no such submission"}
    with pytest.raises(RuntimeError, match=r"^nbgrader could not write feedback:\nno such submission$"):
        course.feedback_html("05-block", "ada")


def test_sample_class_is_in_sync_with_the_release_and_catalogues(tmp_path):
    sample_class.build(tmp_path)
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    stored = {p.relative_to(sample_class.EXAMPLES): p.read_bytes()
              for p in sample_class.EXAMPLES.rglob("*") if p.is_file()}
    assert fresh == stored, "run `python -m grader sample-class` and commit grader/examples/"


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, kept_grading):
    out = tmp_path_factory.mktemp("demo")
    results, lines = kept_grading("sample-class", [sample_class.CLASS], out, options=SAMPLE_CLASS, workers=2)
    return out, results, lines


def test_every_sample_student_scores_what_their_submission_deserves(graded_class):
    out, results, _ = graded_class
    by_student = {}
    for result in results.values():
        by_student[(result.student, result.section)] = result
    with open(sample_class.EXAMPLES / "expected.csv") as f:
        expected = list(csv.DictReader(f))
    for row in expected:
        if row["full_marks"] == "error":
            result = next(r for r in results.values() if r.student == row["student"]
                          and Path(r.notebook).stem == row["section"])
            assert result.error and result.score == 0, row
            continue
        result = by_student[(row["student"], row["section"])]
        assert not result.error, (row, result.error)
        task = next(t for t in result.tasks if t.grade_id == row["task"])
        full = task.score == task.max_score
        assert full == (row["full_marks"] == "yes"), (row, task.message)
        if not full:
            assert task.message, row


def _written_cell(student, section, question):
    """grades.csv's cell for a written answer of the sample class nobody graded yet (jon's found
    as the grader finds it: repaired, his metadata being stripped)."""
    def answer(notebook):
        return next((c.source for c in notebook.cells if grading_meta(c).get("grade_id") == question), None)
    released = nbformat.read(release_notebook(section), as_version=4)
    handed_in = nbformat.read(sample_class.CLASS / student / f"{section}.ipynb", as_version=4)
    repair(handed_in, released)
    return "0.0" if answer(handed_in) == answer(released) else ""


def test_grades_csv_gives_each_sample_student_the_points_deserved_cell_by_cell(graded_class):
    """Every cell of the instructor's table, derived from expected.csv and the solutions' points:
    task columns in notebook order, sections in course order, a section total, a class total."""
    out, _, _ = graded_class
    points = {section: [(grading_meta(c)["grade_id"], float(grading_meta(c)["points"]))
                        for c in nbformat.read(solution_notebook(section), as_version=4).cells
                        if grading_meta(c).get("grade") and c.cell_type == "code"]
              for section in release.sections_with_solutions()}
    with open(sample_class.EXAMPLES / "expected.csv") as f:
        expected = list(csv.DictReader(f))
    deserved, broken = {}, set()
    for row in expected:
        if row["full_marks"] == "error":
            broken.add(row["student"])
        else:
            full = dict(points[row["section"]])[row["task"]]
            deserved[(row["student"], row["section"], row["task"])] = full if row["full_marks"] == "yes" else 0.0
    sections = sorted({section for _, section, _ in deserved}, key=SECTIONS.index)
    with open(out / "grades.csv", newline="") as f:
        header, *rows = list(csv.reader(f))
    assert header == ["student", *[f"{s}:{name}" for s in sections
                                   for name in [g for g, _ in points[s]] + written_questions(s) + ["total"]],
                      "total", "waiting", "problems"]
    assert [row[0] for row in rows] == sorted({row["student"] for row in expected})
    for row in rows:
        cells, student = dict(zip(header, row)), row[0]
        class_total = 0.0
        for section in sections:
            got = [float(cells[f"{section}:{name}"]) for name, _ in points[section]]
            assert got == [deserved.get((student, section, name), 0.0) for name, _ in points[section]], (student, section)
            assert float(cells[f"{section}:total"]) == sum(got), (student, section)
            graded = any(key[:2] == (student, section) for key in deserved)  # else: a zero, not a wait
            # none graded by hand: a written answer waits (empty), one handed in as released gets 0.0
            assert [cells[f"{section}:{q}"] for q in written_questions(section)] == \
                [_written_cell(student, section, q) if graded else "0" for q in written_questions(section)], \
                (student, section)
            class_total += sum(got)
        assert float(cells["total"]) == class_total, student
        assert bool(cells["problems"]) == (student in broken or student == "gus"), (student, cells["problems"])
    # the report's pass rates: full marks over the task's graded submissions, in course order
    report = (out / "report.html").read_text()
    rates = []
    for section in sections:
        for name, _ in points[section]:
            marks = [row["full_marks"] for row in expected if (row["section"], row["task"]) == (section, name)]
            passed, graded = marks.count("yes"), len(marks)
            rates.append(f"<tr><td>{section}</td><td>{name}</td><td>{passed}/{graded}</td>"
                         f"<td>{100 * passed / graded:.0f}%</td></tr>")
    assert all(rate in report for rate in rates), [rate for rate in rates if rate not in report]
    assert [report.index(rate) for rate in rates] == sorted(report.index(rate) for rate in rates)
    handed_in = len(list(sample_class.CLASS.rglob("*.ipynb")))
    errors = sum(row["full_marks"] == "error" for row in expected)
    assert f"<p>{handed_in} submissions: {handed_in - errors} graded, {errors} could not be graded" in report


def test_the_class_outputs_are_written_and_a_rerun_grades_nothing_again(graded_class):
    out, results, lines = graded_class
    grades = list(csv.DictReader(open(out / "grades.csv")))
    assert {r["student"] for r in grades} == {r.student for r in results.values()}
    assert (out / "report.html").is_file() and (out / "scores.png").is_file()
    for result in results.values():
        assert (out / result.feedback).is_file()
    gus = results["gus/01-heads.ipynb"]  # his last answer cell loops forever
    assert len(gus.interrupted) == 1 and "ran past the 30 s limit" in gus.interrupted[0], gus
    assert "In [" in gus.interrupted[0] and "`while True:" in gus.interrupted[0]
    assert gus.interrupted[0] in autograde._line(gus)
    assert "ran past the 30 s limit" in next(r for r in grades if r["student"] == "gus")["problems"]
    assert "gus, 01-heads.ipynb: a cell ran past" in (out / "report.html").read_text()
    # honest students all: the model answers, the catalogue's, the release (issue 45)
    assert list(csv.reader(open(out / "similar.csv")))[1:] == []
    assert "<h2>Similar pairs</h2>" in (out / "report.html").read_text() and "<p>No pair.</p>" in (out / "report.html").read_text()
    again = []
    rerun = autograde.autograde([sample_class.CLASS], out, SAMPLE_CLASS, workers=2, echo=again.append)
    assert "0 to grade" in again[0]
    assert rerun == results


def test_a_changed_submission_alone_is_graded_again(graded_class, tmp_path):
    out, results, _ = graded_class
    late = tmp_path / "class"
    shutil.copytree(sample_class.CLASS, late)
    edited = late / "ada" / "05-block.ipynb"
    notebook = nbformat.read(edited, as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell("Handed in again, with a note."))
    nbformat.write(notebook, edited)
    lines = []
    rerun = autograde.autograde([late], out, SAMPLE_CLASS, workers=1, echo=lines.append)
    assert "1 to grade" in lines[0], lines[0]
    assert rerun["ada/05-block.ipynb"].sha256 != results["ada/05-block.ipynb"].sha256
    assert rerun["ada/05-block.ipynb"].score == results["ada/05-block.ipynb"].score
    assert {k: v for k, v in rerun.items() if k != "ada/05-block.ipynb"} == \
        {k: v for k, v in results.items() if k != "ada/05-block.ipynb"}


def test_a_change_to_what_grades_a_section_regrades_that_section_only(tmp_path):
    """A solution or a check module moves the fingerprint of each section whose checks use it;
    ticketnet.py, the pins, the rest of the grader and its templates, the data, the grading options
    and the versions of Python and the libraries move them all."""
    for part in ("solutions", "grader", "data", "bench/results"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "examples"))
    for name in ("ticketnet.py", "requirements.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "data" / "__pycache__").mkdir()  # what Python leaves beside the data's scripts is no data
    (tmp_path / "data" / "__pycache__" / "generate.cpython-311.pyc").write_bytes(b"compiled")
    before = fingerprint.grading_versions(root=tmp_path)
    assert before == fingerprint.grading_versions()

    def changed(path):
        with open(tmp_path / path, "a") as f:
            f.write("\n# edited\n")
        after = fingerprint.grading_versions(root=tmp_path)
        moved = {section for section in before if before[section] != after[section]}
        before.update(after)
        return moved

    # section 5's checks build on sections 1 and 4's, and section 6's on section 5's
    assert changed("grader/checks/heads.py") == {"01-heads", "05-block", "06-tiny-transformer", None}
    assert changed("grader/checks/block.py") == {"05-block", "06-tiny-transformer", None}
    assert changed("grader/checks/tiny.py") == {"06-tiny-transformer", None}
    assert changed("grader/checks/banking.py") == {"07-banking77", None}
    assert changed("solutions/03-norms/03-norms.ipynb") == {"03-norms", None}
    for shared in ("ticketnet.py", "requirements.txt", "grader/judge.py", "grader/probe.py", "grader/checks/__init__.py",
                   "grader/sandbox.py", "grader/repair.py", "grader/templates/nbgrader_config.py", "data/valid.csv",
                   "bench/results/tuning.csv"):
        assert changed(shared) == set(before), shared
    for not_read in ("grader/report.py", "grader/similar.py", "grader/__main__.py", "grader/schedule.py",
                     "grader/cluster.py", "grader/execute.py", "grader/sample_class.py", "grader/publish.py",
                     "grader/check_server.py", "grader/export.py", "grader/results.py"):
        assert changed(not_read) == set(), not_read
    import platform
    python = platform.python_version
    try:
        platform.python_version = lambda: "3.99.0"
        assert fingerprint.grading_versions(root=tmp_path)["01-heads"] != before["01-heads"]
    finally:
        platform.python_version = python
    assert fingerprint.grading_versions(SAMPLE_CLASS, root=tmp_path) != before  # an option
    from importlib import metadata
    real = metadata.version
    try:
        for library in fingerprint.LIBRARIES:
            metadata.version = lambda name: "0.0" if name == library else real(name)
            assert fingerprint.grading_versions(root=tmp_path)["01-heads"] != before["01-heads"], library
    finally:
        metadata.version = real
