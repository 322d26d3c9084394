"""The class's course folder (grader/class_folder.py): one nbgrader gradebook for the whole class,
which Formgrader opens, with the written answers waiting beside their mark schemes; re-runs that
keep every grade entered by hand; grader export and formgrader on it."""

import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace

import nbformat
import pytest
from nbgrader.api import Gradebook

from grader import class_folder, marks
from grader.result import Result, Task
from grader.worker import Graded
from grader.__main__ import main
from grader.course import SECTIONS, release_notebook, solution_notebook
from grader.options import SAMPLE_CLASS, GradingOptions

SECTION, SECOND_SECTION = SECTIONS[:2]
OPTIONS = GradingOptions(timeout=30, memory_mb=2048)
FIRST, SECOND, THIRD = class_folder.written_questions(SECTION)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prepared") / "class"
    class_folder.prepare(folder, [SECTION], OPTIONS)
    return folder


@pytest.fixture
def folder(prepared, tmp_path):
    """A class folder with section 1 registered and nobody graded yet."""
    return shutil.copytree(prepared, tmp_path / "class")


def _graded(student, answers=None, scores=None):
    """What a worker returns (worker.Graded): section 1's release notebook with `answers` written in
    ({grade_id: text}), autograded with the mark schemes added, and the checks scored `scores`
    (every check 0 by default)."""
    notebook = nbformat.read(release_notebook(SECTION), as_version=4)
    checks = [c.metadata["nbgrader"]["grade_id"] for c in notebook.cells
              if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    for cell in notebook.cells:
        cell.source = (answers or {}).get(cell.metadata.get("nbgrader", {}).get("grade_id"), cell.source)
    text = nbformat.writes(notebook)
    graded = nbformat.writes(marks.with_mark_schemes(notebook, SECTION))
    tasks = tuple(Task(g, (scores or {}).get(g, 0.0), 2.0) for g in checks)
    return Graded(Result(f"{student}_{SECTION}.ipynb", SECTION, student, tasks),
                  files={"submitted": text, "autograded": graded})


def _record(folder, graded):
    class_folder.record(folder, graded.result, graded.files)


def _nbgrader(args, folder, timeout):
    """Plain nbgrader run in the class folder, as an instructor types it. Under mutmut it runs the
    code as written: its config imports grader.class_folder, and a mutant cannot run outside
    mutmut's folder."""
    env = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _grades(folder, student):
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as book:
        return {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade)
                for g in book.find_submission_notebook(SECTION, SECTION, student).grades}


def _enter(folder, student, grade_id, points):
    """What Formgrader does when a grader types a score."""
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as book:
        grade = book.find_grade(grade_id, SECTION, SECTION, student)
        grade.manual_score, grade.needs_manual_grade = points, False
        book.db.commit()


def test_a_prepared_folder_is_an_nbgrader_course_of_the_checkout(prepared):
    config = (prepared / "nbgrader_config.py").read_text()
    assert f'COURSE = "{class_folder.ROOT}"' in config and "{course}" not in config
    assert (prepared / "release" / SECTION / f"{SECTION}.ipynb").is_file()
    # each section with the solution it was registered from, one entry a line, for an instructor to read
    digest = hashlib.sha256(solution_notebook(SECTION).read_bytes()).hexdigest()
    assert (prepared / "registered.json").read_text() == json.dumps({SECTION: digest}, indent=1)
    assert (prepared / class_folder.OPTIONS).read_text() == json.dumps(OPTIONS.graded_by(), indent=1, sort_keys=True)
    with Gradebook(f"sqlite:///{prepared / 'gradebook.db'}") as book:
        assert [a.name for a in book.assignments] == [SECTION]
    # nbgrader's own command reads the config: the folder's gradebook, the checkout's solutions
    listed = _nbgrader(["db", "assignment", "list"], prepared, timeout=900)  # the first read records the checks' results
    assert listed.returncode == 0 and SECTION in listed.stdout, listed.stderr[-2000:]


@pytest.fixture
def stand_in_nbgrader(monkeypatch):
    """nbgrader's API registering nothing: `.registered` lists the sections it was asked to
    register, `.outcome` is what it answers."""
    class API:
        def __init__(self):
            self.registered, self.outcome = [], {"success": True}

        def generate_assignment(self, section, **options):
            self.registered.append(section)
            return self.outcome
    api = API()
    monkeypatch.setattr(class_folder, "_api", lambda folder: api)
    return api


def test_a_section_is_registered_where_it_is_new_or_its_solution_changed(tmp_path, stand_in_nbgrader):
    """A folder whose parent does not exist yet."""
    registered = stand_in_nbgrader.registered
    folder = tmp_path / "fall 2026" / "class"
    class_folder.prepare(folder, [SECOND_SECTION, SECTION], OPTIONS)
    assert registered == [SECOND_SECTION, SECTION]
    digests = {s: hashlib.sha256(solution_notebook(s).read_bytes()).hexdigest() for s in (SECTION, SECOND_SECTION)}
    assert (folder / "registered.json").read_text() == json.dumps(digests, indent=1, sort_keys=True)
    # the second section's release is there, the first's is missing: only the first is registered
    (folder / "release" / SECOND_SECTION).mkdir(parents=True)
    class_folder.prepare(folder, [SECOND_SECTION, SECTION], OPTIONS)
    assert registered == [SECOND_SECTION, SECTION, SECTION]
    stand_in_nbgrader.outcome = {"success": False, "error": "a broken source"}
    (folder / "registered.json").write_text("{}")
    with pytest.raises(RuntimeError, match=rf"^nbgrader could not register {SECOND_SECTION} in "
                                           rf"{re.escape(str(folder))}:\na broken source$"):
        class_folder.prepare(folder, [SECOND_SECTION], OPTIONS)


def test_a_changed_solution_replaces_the_release_nbgrader_registered(folder):
    release = folder / "release" / SECTION / f"{SECTION}.ipynb"
    release.write_text("{}")  # what an older solution left
    (folder / "registered.json").write_text(json.dumps({SECTION: "an older solution"}))
    class_folder.prepare(folder, [SECTION], OPTIONS)
    assert nbformat.read(release, as_version=4).cells


def test_the_copy_a_worker_starts_from_holds_the_registered_sections(prepared, tmp_path):
    copied = class_folder.sections_copy(str(prepared), str(tmp_path / "worker"))
    assert copied == tmp_path / "worker"
    assert (copied / "gradebook.db").read_bytes() == (prepared / "gradebook.db").read_bytes()
    assert (copied / "release" / SECTION / f"{SECTION}.ipynb").read_bytes() == \
        (prepared / "release" / SECTION / f"{SECTION}.ipynb").read_bytes()
    class_folder.sections_copy(prepared, copied)  # a worker's folder used before: copied over
    assert (copied / "gradebook.db").is_file()


def test_the_folder_s_config_grades_as_the_last_run_did(folder, monkeypatch):
    """What nbgrader_config.py sets up, here read in this process: the last run's options, its
    kernels started fresh in their sandbox, the kernels' set-up cell pointed at this checkout."""
    from traitlets.config import Config
    monkeypatch.setenv("COURSE_ROOT", "elsewhere")
    monkeypatch.setenv("JUPYTER_PATH", os.environ.get("JUPYTER_PATH", ""))  # the kernel spec goes first on it
    (folder / class_folder.OPTIONS).write_text(json.dumps({"timeout": 7, "memory_mb": 1536, "sandboxed": False}))
    config = Config()
    class_folder.configure(config, folder / "nbgrader_config.py")
    assert os.environ["COURSE_ROOT"] == str(class_folder.ROOT)
    assert config.CourseDirectory.root == str(folder)
    assert config.CourseDirectory.db_url == f"sqlite:///{folder / 'gradebook.db'}"
    assert config.Execute.timeout == 7 and config.KernelManager.ip == str(folder / "sockets" / "k")
    spec = json.loads((folder / "fresh" / "share" / "kernels" / config.Execute.kernel_name / "kernel.json").read_text())
    assert spec["argv"][-3:] == [str(folder / "fresh" / "sandbox.json"), "-f", "{connection_file}"]
    settings = json.loads((folder / "fresh" / "sandbox.json").read_text())
    assert settings["sandboxed"] is False and settings["limits"]["memory_mb"] == 1536
    assert settings["sockets"] == str(folder / "sockets")


def test_preparing_again_registers_only_a_changed_section(prepared, tmp_path, stand_in_nbgrader):
    folder = shutil.copytree(prepared, tmp_path / "class")
    registered = stand_in_nbgrader.registered
    class_folder.prepare(folder, [SECTION], replace(OPTIONS, timeout=60))
    assert registered == []
    assert json.loads((folder / class_folder.OPTIONS).read_text()) == {**OPTIONS.graded_by(), "timeout": 60}  # the last run's
    (folder / "registered.json").write_text('{"01-heads": "an older solution"}')
    class_folder.prepare(folder, [SECTION], OPTIONS)
    assert registered == [SECTION]


def test_a_graded_submission_lands_in_the_gradebook_with_its_notebooks(folder):
    graded = _graded("ada", answers={FIRST: "The batch lands on the heads."}, scores={"test_split_heads": 2.0})
    files = graded.files
    _record(folder, graded)
    grades = _grades(folder, "ada")
    assert grades["test_split_heads"] == (2.0, None, False)
    assert grades["test_merge_heads"] == (0.0, None, False)
    assert grades[FIRST] == (None, None, True)  # written: waiting for a grader
    assert grades[SECOND] == grades[THIRD] == (0.0, None, False)  # as released: 0, as nbgrader gives it
    for kind in ("submitted", "autograded"):
        assert (folder / kind / "ada" / SECTION / f"{SECTION}.ipynb").read_text() == files[kind]


def test_each_written_answer_is_followed_by_its_mark_scheme_which_the_feedback_drops():
    notebook = nbformat.read(release_notebook(SECTION), as_version=4)
    cells = len(notebook.cells)
    resources = {"nbgrader": {"assignment": SECTION, "notebook": SECTION, "student": "ada"}}
    marked, _ = marks.AddMarkSchemes().preprocess(notebook, resources)
    schemes = [c for c in marked.cells if marks.MARK_SCHEME in c.metadata.get("course", {})]
    assert [c.metadata["course"][marks.MARK_SCHEME] for c in schemes] == [FIRST, SECOND, THIRD]
    assert all("Mark scheme" in c.source and "For the grader" in c.source for c in schemes)
    answer = next(i for i, c in enumerate(marked.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == FIRST)
    assert marked.cells[answer + 1] is schemes[0]  # right under the answer it grades
    assert len(marked.cells) == cells + 3
    dropped, _ = marks.DropMarkSchemes().preprocess(marked, resources)
    assert len(dropped.cells) == cells and not any("For the grader" in c.source for c in dropped.cells)
    # a written answer the solution does not have (a student's copy of an answer cell) gets no scheme
    notebook = nbformat.read(release_notebook(SECTION), as_version=4)
    extra = copy.deepcopy(next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == FIRST))
    extra.metadata.nbgrader.grade_id = "my_own_answer"
    notebook.cells.append(extra)
    marked = marks.with_mark_schemes(notebook, SECTION)
    assert len(marked.cells) == cells + 1 + 3 and marked.cells[-1] is extra


def test_the_feedback_shows_each_check_as_released_without_its_hidden_tests():
    """The autograded notebook holds the solutions' check cells, hidden tests included (Formgrader
    shows them); the feedback takes those out, and nothing else of any cell."""
    solution = nbformat.read(solution_notebook(SECTION), as_version=4)
    released = nbformat.read(release_notebook(SECTION), as_version=4)
    graded = copy.deepcopy(solution)
    markdown = nbformat.v4.new_markdown_cell("### BEGIN HIDDEN TESTS\nwritten, not code\n### END HIDDEN TESTS\n")
    graded.cells.append(markdown)
    hidden = [c for c in graded.cells if "### BEGIN HIDDEN TESTS" in c.source and c.cell_type == "code"]
    assert hidden, "the section has no hidden tests to take out"
    shown, _ = marks.DropHiddenTests().preprocess(graded, {})
    assert [c.source for c in shown.cells[:-1] if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
            and not c.metadata["nbgrader"].get("solution")] == \
        [c.source for c in released.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
         and not c.metadata["nbgrader"].get("solution")]
    assert all(a.source == b.source for a, b in zip(shown.cells, solution.cells) if "HIDDEN TESTS" not in b.source)
    assert shown.cells[-1].source == markdown.source  # a markdown cell is no check


def test_a_graded_notebook_without_an_answer_or_a_result_without_a_check_loses_no_grade(folder):
    """A stand-in for a worker's result that is short of something: the first answer's cell is not
    in its graded notebook, and it scores no check. The answer waits; each check gets 0."""
    result = _graded("ada", answers={FIRST: "an answer"})
    graded = nbformat.reads(result.files["autograded"], as_version=4)
    graded.cells = [c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade_id") != FIRST]
    class_folder.record(folder, replace(result.result, tasks=()), {**result.files, "autograded": nbformat.writes(graded)})
    grades = _grades(folder, "ada")
    assert grades[FIRST] == (None, None, True)
    assert grades["test_split_heads"] == grades["test_merge_heads"] == (0.0, None, False)


def test_a_failed_submission_adds_its_student_and_nothing_else(folder):
    class_folder.record(folder, Result("ben_03-norms.ipynb", None, "ben", error="not a notebook"), None)
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as book:
        assert [s.id for s in book.students] == ["ben"] and book.find_student("ben").submissions == []


def test_a_rerun_keeps_every_grade_entered_by_hand_and_asks_again_for_a_rewritten_answer(folder):
    _record(folder, _graded("ada", answers={FIRST: "first try", SECOND: "stays"}))
    _enter(folder, "ada", FIRST, 1.0)
    _enter(folder, "ada", SECOND, 2.0)
    _enter(folder, "ada", "test_causal_mask", 1.0)  # a check's score overruled by hand
    # ada hands in again: her checks now pass, her first answer is rewritten
    _record(folder, _graded("ada", answers={FIRST: "second try", SECOND: "stays"},
                                     scores={"test_split_heads": 2.0}))
    grades = _grades(folder, "ada")
    assert grades["test_split_heads"] == (2.0, None, False)
    assert grades["test_causal_mask"] == (0.0, 1.0, False)
    assert grades[FIRST] == (None, 1.0, True)  # the old grade shown, the answer waiting again
    assert grades[SECOND] == (None, 2.0, False)
    assert class_folder.manual_grades(folder) == {
        ("ada", SECTION): {"test_causal_mask": (1.0, False), FIRST: (1.0, True), SECOND: (2.0, False),
                           THIRD: (0.0, False)}}
    assert class_folder.written_progress(folder) == [(SECTION, FIRST, 0, 1, 0, 2.0), (SECTION, SECOND, 1, 0, 2.0, 2.0),
                                                  (SECTION, THIRD, 1, 0, 0, 2.0)]


def test_an_answer_handed_in_as_released_gets_nothing_and_waits_for_nobody(folder):
    _record(folder, _graded("ben", answers={FIRST: "an answer"}))
    _enter(folder, "ben", FIRST, 2.0)
    assert _grades(folder, "ben")[SECOND] == (0.0, None, False)
    _enter(folder, "ben", SECOND, 1.0)  # points given by hand for an answer as released
    _record(folder, _graded("ben", answers={FIRST: "an answer"}))
    assert _grades(folder, "ben")[SECOND] == (0.0, 1.0, False)  # kept: the answer did not change
    # ben hands in again with his first answer put back as released: the grade it had goes
    _record(folder, _graded("ben", answers={SECOND: "now written"}))
    grades = _grades(folder, "ben")
    assert grades[FIRST] == (0.0, None, False)
    assert grades[SECOND] == (None, 1.0, True)  # now written: waiting, the points given before shown


def test_without_a_gradebook_nothing_was_graded_by_hand(tmp_path):
    assert class_folder.manual_grades(tmp_path) == {} and class_folder.written_progress(tmp_path) == []


def test_a_section_nobody_handed_in_has_nothing_graded_and_nothing_waiting(tmp_path):
    """A gradebook that knows only the second section (an older class folder, before the first
    section was registered): the first is passed over, the second counted."""
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as book:
        book.add_assignment(SECOND_SECTION)
    assert class_folder.written_progress(tmp_path) == [
        (SECOND_SECTION, question, 0, 0, 0, 0) for question in class_folder.written_questions(SECOND_SECTION)]


def test_the_feedback_nbgrader_writes_in_the_folder_leaves_the_mark_schemes_out(folder):
    _record(folder, _graded("ada"))
    made = _nbgrader(["generate_feedback", SECTION, "--student", "ada", "--force"], folder, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    page = (folder / "feedback" / "ada" / SECTION / f"{SECTION}.html").read_text()
    assert "Question 1" in page and "For the grader" not in page and "Mark scheme" not in page


def test_nbgrader_and_formgrader_stop_where_the_folder_cannot_grade_as_the_course_does(folder, capsys):
    """traitlets goes on with nbgrader's defaults after a config file fails: unsandboxed grading."""
    (folder / class_folder.OPTIONS).unlink()
    graded = _nbgrader(["autograde", SECTION], folder, timeout=300)
    assert graded.returncode != 0
    assert f"nbgrader cannot grade as the course does in {folder / 'nbgrader_config.py'}" in graded.stderr
    assert main(["formgrader", str(folder)]) == 1
    assert f"nbgrader cannot grade as the course does in {folder}: " in capsys.readouterr().err


def test_nbgrader_stops_where_the_checkout_the_folder_reads_is_gone(folder):
    """The checkout moved or deleted: its config's import fails, and that too must stop nbgrader."""
    config = folder / "nbgrader_config.py"
    config.write_text(config.read_text().replace(f'COURSE = "{class_folder.ROOT}"', f'COURSE = "{folder / "moved"}"'))
    graded = _nbgrader(["autograde", SECTION], folder, timeout=300)
    assert graded.returncode != 0
    assert f"nbgrader cannot grade as the course does in {config}: No module named 'grader'" in graded.stderr


EARLIER_CONFIG = """import sys
COURSE = "{course}"
sys.path.insert(0, COURSE)
from grader.gradebook import configure
configure(get_config(), __file__)
"""


def test_a_folder_graded_by_an_earlier_grader_reads_this_checkout_s_config_once_graded_or_opened(folder, capsys):
    """A config written before grader/gradebook.py became class_folder.py imports a module gone since:
    `grader autograde` (prepare) and `grader formgrader` write the current one over it."""
    config = folder / "nbgrader_config.py"
    current = config.read_text()
    config.write_text(EARLIER_CONFIG)
    class_folder.prepare(folder, [SECTION], OPTIONS)
    assert config.read_text() == current
    config.write_text(EARLIER_CONFIG)
    (folder / class_folder.OPTIONS).unlink()  # so that formgrader stops before it starts JupyterLab
    assert main(["formgrader", str(folder)]) == 1
    assert config.read_text() == current


@pytest.mark.parametrize("verb", ["formgrader", "export"])
def test_formgrader_and_export_refuse_a_folder_that_is_not_a_graded_class(verb, tmp_path, capsys):
    assert main([verb, str(tmp_path)]) == 2
    assert "is not a graded class: run `python -m grader autograde INPUT --out" in capsys.readouterr().err


def test_export_writes_the_grades_and_report_with_the_grades_entered_by_hand(folder, capsys):
    import csv
    stored = {}
    for student in ("ada", "ben"):
        graded = _graded(student, answers={q: "an answer" for q in (FIRST, SECOND, THIRD)},
                         scores={"test_split_heads": 2.0})
        _record(folder, graded)
        stored[f"{student}/{student}_01-heads.ipynb"] = graded.result.to_json()
    (folder / "results.json").write_text(json.dumps(stored))
    _enter(folder, "ada", FIRST, 1.5)
    _enter(folder, "ben", FIRST, 0.5)
    assert main(["export", str(folder)]) == 0
    assert "written answers waiting for a grade: 4" in capsys.readouterr().out
    rows = {row["student"]: row for row in csv.DictReader((folder / "grades.csv").open())}
    assert rows["ada"][f"{SECTION}:{FIRST}"] == "1.5" and rows["ada"]["total"] == "3.5"
    assert rows["ada"]["waiting"] == f"{SECTION}:{SECOND}; {SECTION}:{THIRD}"
    report = (folder / "report.html").read_text()
    # the mean of the grades given; a question nobody has graded yet shows 0, the rows one after another
    assert (f"<tr><td>{SECTION}</td><td>{FIRST}</td><td>2</td><td>0</td><td>1.0 / 2</td></tr>"
            f"<tr><td>{SECTION}</td><td>{SECOND}</td><td>0</td><td>2</td><td>0.0 / 2</td></tr>") in report
    # the commands that go on from here name this folder
    assert f"python -m grader formgrader {folder}</code>" in report
    assert f"python -m grader export {folder}</code>" in report


def test_grades_entered_for_the_demo_never_overwrite_a_graders(folder):
    _record(folder, _graded("ada", answers={FIRST: "an answer", SECOND: "another"}))
    _enter(folder, "ada", FIRST, 0.5)
    entered = class_folder.enter_grades(folder, [("nobody", SECTION, FIRST, 2.0), ("ada", SECTION, FIRST, 2.0),
                                              ("ada", SECTION, SECOND, 2.0), ("ada", SECTION, THIRD, 1.0)])
    assert entered == 2
    grades = _grades(folder, "ada")
    assert grades[FIRST] == (None, 0.5, False) and grades[SECOND] == (None, 2.0, False)
    assert grades[THIRD] == (0.0, 1.0, False)


@pytest.mark.nbgrader
def test_plain_nbgrader_in_the_class_folder_scores_the_sample_class_as_grader_autograde(tmp_path, kept_grading,
                                                                                        kept_run):
    """Section 1 of the sample class, broken submissions included, graded by `grader autograde`,
    then again by plain `nbgrader autograde` in its folder: the same points for every task. Each
    grading is kept from the last run on this machine where neither the notebooks nor what grades
    them changed."""
    from grader import judge
    from grader.fingerprint import grading_versions
    from grader.sample_class import CLASS
    hand_in = tmp_path / "class"
    for path in sorted(CLASS.glob(f"*/{SECTION}.ipynb")):
        (hand_in / path.parent.name).mkdir(parents=True)
        shutil.copy(path, hand_in / path.parent.name)
    out = tmp_path / "graded"
    results, _ = kept_grading(f"sample-class-{SECTION}", [hand_in], out, options=SAMPLE_CLASS, workers=2)
    ours = {(r.student, t.grade_id): t.score for r in results.values() if not r.error for t in r.tasks}
    assert {"jon", "ivy"} <= {student for student, _ in ours}  # repaired: metadata stripped, a check deleted
    handed_in = hashlib.sha256(b"".join(str(p.relative_to(out)).encode() + p.read_bytes()
                                        for p in sorted((out / "submitted").rglob("*.ipynb"))))
    key = " ".join([grading_versions()[SECTION], handed_in.hexdigest(), (out / "grading.json").read_text()])
    stderr = kept_run(f"plain-nbgrader-{SECTION}", key, out,
                      lambda: _nbgrader(["autograde", SECTION, "--force"], out, timeout=1800).stderr)
    assert "Traceback" not in stderr, stderr[-3000:]
    checks = judge.check_cells(SECTION)
    written = class_folder.written_questions(SECTION)
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as book:
        theirs = {(s.student.id, g.name): g.score for s in book.find_assignment(SECTION).submissions
                  for g in s.notebooks[0].grades if g.name in checks}
        untouched = {(s.student.id, g.name): g.needs_manual_grade for s in book.find_assignment(SECTION).submissions
                     for g in s.notebooks[0].grades if g.name in written}
    assert theirs == ours
    # nbgrader's own verdict on the written answers: an answer as released gets 0 and waits for nobody
    manual = class_folder.manual_grades(out)
    assert {key: (0.0, False) if not waiting else (None, True) for key, waiting in untouched.items()} == {
        (student, name): manual[student, SECTION][name] for student, name in untouched}
    assert untouched[("ben", written[0])] is False and untouched[("ada", written[0])] is True
    for student, _ in ours:  # nbgrader's autograded notebooks still show the mark schemes
        assert "For the grader" in (out / "autograded" / student / SECTION / f"{SECTION}.ipynb").read_text()
