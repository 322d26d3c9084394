"""The class folder: what `python -m grader autograde --out DIR` leaves in DIR beside
grades.csv and the report. It is an ordinary nbgrader course, which Formgrader opens:

    nbgrader_config.py   from grader/templates/: nbgrader's settings, read from this checkout
    gradebook.db         every student, section and autograded score, and the grades of the
                         written answers as entered in Formgrader
    release/<section>/   each section as nbgrader registered it (its source: solutions/)
    submitted/<student>/<section>/<section>.ipynb    each submission as handed in
    autograded/<student>/<section>/<section>.ipynb   the same, repaired, with its outputs, and each
                                                     written answer followed by its model answer
                                                     and mark scheme, for the grader's eyes only
    feedback/<student>/<section>/<section>.html      what the student gets back

The grading workers keep courses of their own. Only the main process writes here, one graded
submission at a time (`record`), so the gradebook has one writer. A re-run updates the autograded
scores and keeps every manual grade; a written answer that changed since it was graded waits for
the grader again, its old grade shown. An answer handed in as released gets 0 and waits for nobody,
as plain nbgrader has it.
"""

import functools
import hashlib
import json
import shutil
import warnings
from pathlib import Path

import nbformat

from grader.course import ROOT, SECTIONS, SOLUTIONS, nbgrader_info, solution_notebook
from grader.marks import is_written

# nbgrader's gradebook trips SQLAlchemy warnings that say nothing to an instructor.
warnings.filterwarnings("ignore", module="nbgrader.api")

TEMPLATE = Path(__file__).resolve().parent / "templates" / "nbgrader_config.py"
OPTIONS = "grading.json"  # the options of the last `grader autograde` run that its grades depend on


def write_config(folder):
    """Write the folder's nbgrader_config.py from the template, for this checkout: again each time,
    so that a folder graded by an earlier grader (whose config may import what has moved since)
    reads the current one."""
    (Path(folder) / "nbgrader_config.py").write_text(TEMPLATE.read_text().replace("{course}", str(ROOT)))


def configure(config, config_file):
    """What DIR/nbgrader_config.py runs: the settings `grader autograde` graded the class in DIR
    with (grader.notebook_grader.grading_config), its kernels started fresh, each in its sandbox."""
    import os
    from grader.notebook_grader import fresh_kernels, grading_config, kernel_settings
    from grader.options import GradingOptions
    folder = Path(config_file).resolve().parent
    options = GradingOptions.from_json((folder / OPTIONS).read_text())
    os.environ["COURSE_ROOT"] = str(ROOT)  # the kernels' set-up cell finds the course here
    kernel = fresh_kernels(folder, kernel_settings(folder, options))
    config.merge(grading_config(folder, options.timeout, kernel))


def _answers(path):
    """grade_id -> each written answer (its cell) in a graded notebook (none if no file)."""
    if not path.is_file():
        return {}
    notebook = nbformat.read(path, as_version=4)
    return {nbgrader_info(c)["grade_id"]: c for c in notebook.cells if is_written(c)}


def _untouched(cell):
    """The answer cell as released: nbgrader gives it 0 points and no grader needs to read it."""
    from nbgrader.utils import determine_grade
    return cell is not None and determine_grade(cell)[0] == 0


def _api(folder):
    """An nbgrader API for registering sections (it grades nothing: no kernels)."""
    from grader.nbconfig import nbgrader_api
    return nbgrader_api(folder, folder / "release", folder / "gradebook.db", source=SOLUTIONS)


def _gradebook(folder):
    from nbgrader.api import Gradebook
    return Gradebook(f"sqlite:///{folder / 'gradebook.db'}")


def prepare(folder, sections, options):
    """Make `folder` the class's course folder, or bring it up to date: its nbgrader config, the
    grading options it reads (those of `options`, a GradingOptions, that grades depend on), and
    each section registered in its gradebook from the current solution (again when it changed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_config(folder)
    (folder / OPTIONS).write_text(json.dumps(options.graded_by(), indent=1, sort_keys=True))
    store = folder / "registered.json"
    registered = json.loads(store.read_text()) if store.is_file() else {}
    api = None
    for section in sections:
        digest = hashlib.sha256(solution_notebook(section).read_bytes()).hexdigest()
        if registered.get(section) == digest and (folder / "release" / section).is_dir():
            continue
        api = api or _api(folder)
        outcome = api.generate_assignment(section, force=True, create=True)
        if not outcome["success"]:
            raise RuntimeError(f"nbgrader could not register {section} in {folder}:\n{outcome['error']}")
        registered[section] = digest
        store.write_text(json.dumps(registered, indent=1, sort_keys=True))


def sections_copy(folder, target):
    """Copy the folder's registered sections (release/ and the gradebook) to `target`, where a
    grading course can start from them (grader.notebook_grader.NotebookGrader's template); returns it."""
    shutil.copytree(Path(folder) / "release", Path(target) / "release", dirs_exist_ok=True)
    shutil.copy(Path(folder) / "gradebook.db", Path(target) / "gradebook.db")
    return Path(target)


def record(folder, result, files):
    """Put one submission into the course folder: its student, and when it was graded its
    notebooks (`files`, worker.Graded's) and its Result's scores in the gradebook."""
    folder = Path(folder)
    student, section = result.student, result.section
    with _gradebook(folder) as gradebook:
        gradebook.update_or_create_student(student)
        if not files:
            return
        autograded = folder / "autograded" / student / section / f"{section}.ipynb"
        before = _answers(autograded)
        for kind, text in files.items():
            path = folder / kind / student / section / f"{section}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        now = _answers(autograded)
        from nbgrader.api import MissingEntry
        try:
            gradebook.find_submission(section, student)
        except MissingEntry:
            gradebook.add_submission(section, student)
        scores = {t.grade_id: t.score for t in result.tasks}
        for grade in gradebook.find_submission_notebook(section, section, student).grades:
            if grade.name in written_questions(section):  # graded by hand, again if the student rewrote it
                answer = now.get(grade.name)
                rewritten = getattr(before.get(grade.name), "source", None) != getattr(answer, "source", None)
                if _untouched(answer):
                    grade.auto_score, grade.needs_manual_grade = 0.0, False
                    grade.manual_score = None if rewritten else grade.manual_score
                else:
                    grade.auto_score = None
                    grade.needs_manual_grade = grade.manual_score is None or rewritten
            else:
                grade.auto_score, grade.needs_manual_grade = scores.get(grade.name, 0.0), False
            grade.extra_credit = None
        gradebook.db.commit()


@functools.cache
def written_questions(section):
    """The grade ids of the section's written answers, in notebook order."""
    notebook = nbformat.read(solution_notebook(section), as_version=4)
    return [nbgrader_info(c)["grade_id"] for c in notebook.cells if is_written(c)]


def manual_grades(folder):
    """The grades entered by hand in the folder's gradebook: {(student, section): {grade_id:
    (points or None, waiting)}}, where `waiting` says a written answer still needs a grade; an
    autograded task appears only where a grader gave it points by hand. {} without a gradebook."""
    folder = Path(folder)
    if not (folder / "gradebook.db").is_file():
        return {}
    found = {}
    with _gradebook(folder) as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    marks = found.setdefault((submission.student.id, assignment.name), {})
                    for grade in notebook.grades:
                        written = grade.name in written_questions(assignment.name)
                        if written or grade.manual_score is not None:
                            points = grade.auto_score if grade.manual_score is None else grade.manual_score
                            marks[grade.name] = (points, written and grade.needs_manual_grade)
    return found


def written_progress(folder):
    """How far the grading by hand has come: [(section, grade_id, graded, waiting, points given,
    max points)] per written answer, in course order; [] where the folder holds no gradebook."""
    from nbgrader.api import MissingEntry
    folder = Path(folder)
    if not (folder / "gradebook.db").is_file():
        return []
    progress = []
    with _gradebook(folder) as gradebook:
        for section in SECTIONS:
            try:
                submissions = gradebook.find_assignment(section).submissions
            except MissingEntry:
                continue
            for task in written_questions(section):
                grades = [gradebook.find_grade(task, section, section, s.student.id) for s in submissions]
                done = [g for g in grades if not g.needs_manual_grade]
                progress.append((section, task, len(done), len(grades) - len(done),
                                 sum(g.score or 0 for g in done), grades[0].max_score if grades else 0))
    return progress


def enter_grades(folder, grades):
    """Enter grades by hand, as Formgrader does: (student, section, grade_id, points) each, where
    the student's submission has none yet (a grade already there is never overwritten). Returns
    how many were entered."""
    from nbgrader.api import MissingEntry
    entered = 0
    with _gradebook(Path(folder)) as gradebook:
        for student, section, grade_id, points in grades:
            try:
                grade = gradebook.find_grade(grade_id, section, section, student)
            except MissingEntry:
                continue
            if grade.manual_score is None:
                grade.manual_score, grade.needs_manual_grade = points, False
                entered += 1
        gradebook.db.commit()
    return entered
