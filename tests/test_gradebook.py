"""The class's course folder (grader/gradebook.py): one nbgrader gradebook for the whole class,
which Formgrader opens, with the written answers waiting beside their mark schemes; re-runs that
keep every grade entered by hand; grader export and formgrader on it."""

import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbgrader.api import Gradebook

from grader import gradebook
from grader.__main__ import main
from grader.course import release_notebook

SECTION = "01-heads"
OPTIONS = {"timeout": 30, "memory_mb": 2048, "sandboxed": True}
FIRST, SECOND, THIRD = gradebook.written_questions(SECTION)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prepared") / "class"
    gradebook.prepare(folder, [SECTION], OPTIONS)
    return folder


@pytest.fixture
def folder(prepared, tmp_path):
    """A class folder with section 1 registered and nobody graded yet."""
    return shutil.copytree(prepared, tmp_path / "class")


def _graded(student, answers=None, scores=None):
    """A result as a worker returns it: section 1's release notebook with `answers` written in
    ({grade_id: text}), autograded with the mark schemes added, and the checks scored `scores`
    (every check 0 by default)."""
    notebook = nbformat.read(release_notebook(SECTION), as_version=4)
    checks = [c.metadata["nbgrader"]["grade_id"] for c in notebook.cells
              if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    for cell in notebook.cells:
        cell.source = (answers or {}).get(cell.metadata.get("nbgrader", {}).get("grade_id"), cell.source)
    text = nbformat.writes(notebook)
    graded = nbformat.writes(gradebook.with_mark_schemes(notebook, SECTION))
    tasks = [{"grade_id": g, "score": (scores or {}).get(g, 0.0), "max_score": 2.0, "message": ""} for g in checks]
    return {"student": student, "section": SECTION, "notebook": f"{student}_{SECTION}.ipynb", "error": "",
            "tasks": tasks, "graded_files": {"submitted": text, "autograded": graded}}


def _nbgrader(args, folder, timeout):
    """Plain nbgrader run in the class folder, as an instructor types it. Under mutmut it runs the
    code as written: its config imports grader.gradebook, and a mutant cannot run outside
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
    assert f'COURSE = "{gradebook.ROOT}"' in config and "{course}" not in config
    assert (prepared / "release" / SECTION / f"{SECTION}.ipynb").is_file()
    with Gradebook(f"sqlite:///{prepared / 'gradebook.db'}") as book:
        assert [a.name for a in book.assignments] == [SECTION]
    # nbgrader's own command reads the config: the folder's gradebook, the checkout's solutions
    listed = _nbgrader(["db", "assignment", "list"], prepared, timeout=900)  # the first read records the checks' results
    assert listed.returncode == 0 and SECTION in listed.stdout, listed.stderr[-2000:]


def test_preparing_again_registers_only_a_changed_section(prepared, tmp_path, monkeypatch):
    folder = shutil.copytree(prepared, tmp_path / "class")
    registered = []

    class API:
        def generate_assignment(self, section, **options):
            registered.append(section)
            return {"success": True}
    monkeypatch.setattr(gradebook, "_api", lambda folder: API())
    gradebook.prepare(folder, [SECTION], {**OPTIONS, "timeout": 60})
    assert registered == []
    assert json.loads((folder / gradebook.OPTIONS).read_text()) == {**OPTIONS, "timeout": 60}  # the last run's
    (folder / "registered.json").write_text('{"01-heads": "an older solution"}')
    gradebook.prepare(folder, [SECTION], OPTIONS)
    assert registered == [SECTION]


def test_a_graded_submission_lands_in_the_gradebook_with_its_notebooks(folder):
    result = _graded("ada", answers={FIRST: "The batch lands on the heads."}, scores={"test_split_heads": 2.0})
    files = result["graded_files"]
    gradebook.record(folder, result)
    assert "graded_files" not in result
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
    marked, _ = gradebook.AddMarkSchemes().preprocess(notebook, resources)
    schemes = [c for c in marked.cells if gradebook.MARK_SCHEME in c.metadata.get("course", {})]
    assert [c.metadata["course"][gradebook.MARK_SCHEME] for c in schemes] == [FIRST, SECOND, THIRD]
    assert all("Mark scheme" in c.source and "For the grader" in c.source for c in schemes)
    answer = next(i for i, c in enumerate(marked.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == FIRST)
    assert marked.cells[answer + 1] is schemes[0]  # right under the answer it grades
    assert len(marked.cells) == cells + 3
    dropped, _ = gradebook.DropMarkSchemes().preprocess(marked, resources)
    assert len(dropped.cells) == cells and not any("For the grader" in c.source for c in dropped.cells)


def test_a_failed_submission_adds_its_student_and_nothing_else(folder):
    gradebook.record(folder, {"student": "ben", "section": None, "notebook": "ben_03-norms.ipynb", "tasks": []})
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as book:
        assert [s.id for s in book.students] == ["ben"] and book.find_student("ben").submissions == []


def test_a_rerun_keeps_every_grade_entered_by_hand_and_asks_again_for_a_rewritten_answer(folder):
    gradebook.record(folder, _graded("ada", answers={FIRST: "first try", SECOND: "stays"}))
    _enter(folder, "ada", FIRST, 1.0)
    _enter(folder, "ada", SECOND, 2.0)
    _enter(folder, "ada", "test_causal_mask", 1.0)  # a check's score overruled by hand
    # ada hands in again: her checks now pass, her first answer is rewritten
    gradebook.record(folder, _graded("ada", answers={FIRST: "second try", SECOND: "stays"},
                                     scores={"test_split_heads": 2.0}))
    grades = _grades(folder, "ada")
    assert grades["test_split_heads"] == (2.0, None, False)
    assert grades["test_causal_mask"] == (0.0, 1.0, False)
    assert grades[FIRST] == (None, 1.0, True)  # the old grade shown, the answer waiting again
    assert grades[SECOND] == (None, 2.0, False)
    assert gradebook.manual_grades(folder) == {
        ("ada", SECTION): {"test_causal_mask": (1.0, False), FIRST: (1.0, True), SECOND: (2.0, False),
                           THIRD: (0.0, False)}}
    assert gradebook.written_progress(folder) == [(SECTION, FIRST, 0, 1, 0, 2.0), (SECTION, SECOND, 1, 0, 2.0, 2.0),
                                                  (SECTION, THIRD, 1, 0, 0, 2.0)]


def test_an_answer_handed_in_as_released_gets_nothing_and_waits_for_nobody(folder):
    gradebook.record(folder, _graded("ben", answers={FIRST: "an answer"}))
    _enter(folder, "ben", FIRST, 2.0)
    assert _grades(folder, "ben")[SECOND] == (0.0, None, False)
    # ben hands in again with his first answer put back as released: the grade it had goes
    gradebook.record(folder, _graded("ben", answers={SECOND: "now written"}))
    grades = _grades(folder, "ben")
    assert grades[FIRST] == (0.0, None, False)
    assert grades[SECOND] == (None, None, True)


def test_without_a_gradebook_nothing_was_graded_by_hand(tmp_path):
    assert gradebook.manual_grades(tmp_path) == {} and gradebook.written_progress(tmp_path) == []


def test_the_feedback_nbgrader_writes_in_the_folder_leaves_the_mark_schemes_out(folder):
    gradebook.record(folder, _graded("ada"))
    made = _nbgrader(["generate_feedback", SECTION, "--student", "ada", "--force"], folder, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    page = (folder / "feedback" / "ada" / SECTION / f"{SECTION}.html").read_text()
    assert "Question 1" in page and "For the grader" not in page and "Mark scheme" not in page


def test_nbgrader_and_formgrader_stop_where_the_folder_cannot_grade_as_the_course_does(folder, capsys):
    """traitlets goes on with nbgrader's defaults after a config file fails: unsandboxed grading."""
    (folder / gradebook.OPTIONS).unlink()
    graded = _nbgrader(["autograde", SECTION], folder, timeout=300)
    assert graded.returncode != 0
    assert f"nbgrader cannot grade as the course does in {folder / 'nbgrader_config.py'}" in graded.stderr
    assert main(["formgrader", str(folder)]) == 1
    assert f"nbgrader cannot grade as the course does in {folder}: " in capsys.readouterr().err


@pytest.mark.parametrize("verb", ["formgrader", "export"])
def test_formgrader_and_export_refuse_a_folder_that_is_not_a_graded_class(verb, tmp_path, capsys):
    assert main([verb, str(tmp_path)]) == 2
    assert "is not a graded class: run `python -m grader autograde INPUT --out" in capsys.readouterr().err


def test_export_writes_the_grades_and_report_with_the_grades_entered_by_hand(folder, capsys):
    import csv
    result = _graded("ada", answers={q: "an answer" for q in (FIRST, SECOND, THIRD)}, scores={"test_split_heads": 2.0})
    gradebook.record(folder, result)
    (folder / "results.json").write_text(json.dumps({"ada/ada_01-heads.ipynb": {
        **result, "score": 2.0, "max_score": 11.0, "repairs": [], "interrupted": [], "flags": []}}))
    _enter(folder, "ada", FIRST, 1.5)
    assert main(["export", str(folder)]) == 0
    assert "written answers waiting for a grade: 2" in capsys.readouterr().out
    [row] = csv.DictReader((folder / "grades.csv").open())
    assert row[f"{SECTION}:{FIRST}"] == "1.5" and row["total"] == "3.5"
    assert row["waiting"] == f"{SECTION}:{SECOND}; {SECTION}:{THIRD}"
    report = (folder / "report.html").read_text()
    assert f"<td>{SECTION}</td><td>{FIRST}</td><td>1</td><td>0</td><td>1.5 / 2</td>" in report


def test_grades_entered_for_the_demo_never_overwrite_a_graders(folder):
    gradebook.record(folder, _graded("ada", answers={FIRST: "an answer", SECOND: "another"}))
    _enter(folder, "ada", FIRST, 0.5)
    entered = gradebook.enter_grades(folder, [("ada", SECTION, FIRST, 2.0), ("ada", SECTION, SECOND, 2.0),
                                              ("nobody", SECTION, FIRST, 2.0)])
    assert entered == 1
    grades = _grades(folder, "ada")
    assert grades[FIRST] == (None, 0.5, False) and grades[SECOND] == (None, 2.0, False)


@pytest.mark.nbgrader
def test_plain_nbgrader_in_the_class_folder_scores_the_sample_class_as_grader_autograde(tmp_path):
    """Section 1 of the sample class, broken submissions included, graded by `grader autograde`,
    then again by plain `nbgrader autograde` in its folder: the same points for every task."""
    from grader import autograde, judge
    from grader.sample_class import CLASS
    hand_in = tmp_path / "class"
    for path in sorted(CLASS.glob(f"*/{SECTION}.ipynb")):
        (hand_in / path.parent.name).mkdir(parents=True)
        shutil.copy(path, hand_in / path.parent.name)
    out = tmp_path / "graded"
    results = autograde.autograde([hand_in], out, workers=2, timeout=30, echo=lambda line: None)
    ours = {(r["student"], t["grade_id"]): t["score"] for r in results.values() if not r["error"] for t in r["tasks"]}
    assert {"jon", "ivy"} <= {student for student, _ in ours}  # repaired: metadata stripped, a check deleted
    graded = _nbgrader(["autograde", SECTION, "--force"], out, timeout=1800)
    assert "Traceback" not in graded.stderr, graded.stderr[-3000:]
    checks = judge.check_cells(SECTION)
    written = gradebook.written_questions(SECTION)
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as book:
        theirs = {(s.student.id, g.name): g.score for s in book.find_assignment(SECTION).submissions
                  for g in s.notebooks[0].grades if g.name in checks}
        untouched = {(s.student.id, g.name): g.needs_manual_grade for s in book.find_assignment(SECTION).submissions
                     for g in s.notebooks[0].grades if g.name in written}
    assert theirs == ours
    # nbgrader's own verdict on the written answers: an answer as released gets 0 and waits for nobody
    manual = gradebook.manual_grades(out)
    assert {key: (0.0, False) if not waiting else (None, True) for key, waiting in untouched.items()} == {
        (student, name): manual[student, SECTION][name] for student, name in untouched}
    assert untouched[("ben", written[0])] is False and untouched[("ada", written[0])] is True
    for student, _ in ours:  # nbgrader's autograded notebooks still show the mark schemes
        assert "For the grader" in (out / "autograded" / student / SECTION / f"{SECTION}.ipynb").read_text()
