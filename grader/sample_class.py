"""The sample class that `make demo` grades: a folder per student in grader/examples/class/.

Every submission is made from the release notebook, as a student would hand it in, with answer
cells taken from the solutions or from the catalogue; a few are broken on purpose. What each
student should score per task follows from how the submission was made, and is written to
grader/examples/expected.csv for the tests to hold the autograder to.

    python -m grader sample-class      # rebuild grader/examples/ after a solution changes
"""

import copy
import csv
import json
from pathlib import Path

import nbformat

from grader import catalogue, release
from grader.course import ROOT, nbgrader_info, release_notebook, solution_notebook

EXAMPLES = Path(__file__).resolve().parent / "examples"
CLASS = EXAMPLES / "class"

STUDENTS = {
    "ada": "every answer right: the solutions, and the model answers to the written questions",
    "ben": "the release handed in untouched",
    "cyd": "every answer right in other words: the catalogue's alternative right answers, and the "
           "first sentence of each model answer to the written questions",
    "dot": "typical mistakes: the catalogue's first wrong answer for every task",
    "eli": "half done: the first half of the tasks answered, the rest untouched",
    "fay": "a file cut off in the middle: not valid JSON",
    "gus": "every answer right, but the last answer cell starts with an endless loop",
    "hal": "every answer right, and every check cell edited to print 'Check passed' alone",
    # broken in other ways, in the first section only (each costs grading time)
    "ivy": "every answer right; one check cell deleted, another duplicated",
    "jon": "every answer right; an editor stripped every cell's metadata",
    "kim": "the first answer cell kills the kernel (os._exit)",
    "lea": "every answer right; the first answer prints 200,000 lines, the last asks for 64 GiB",
    "max": "an empty file",
    "ned": "the wrong file: a notebook of no section of this course",
}
FIRST_SECTION_ONLY = ("gus", "ivy", "jon", "kim", "lea", "max", "ned")
# Grades of written answers, as an instructor enters them in Formgrader: `make demo` enters these
# after grading, so that its report and grades.csv show grading by hand part done.
GRADED_BY_HAND = [("ada", "01-heads", "question_mask_shape", 2.0), ("ada", "01-heads", "question_parameters", 2.0),
                  ("cyd", "01-heads", "question_mask_shape", 1.0)]


def _answer_cells(notebook):
    return [c for c in notebook.cells if c.cell_type == "code"
            and nbgrader_info(c).get("solution") and not nbgrader_info(c).get("grade")]


def _solutions(section):
    return {nbgrader_info(c)["grade_id"]: c.source
            for c in _answer_cells(nbformat.read(solution_notebook(section), as_version=4))}


def _model_answers(section):
    """grade_id -> the model answer of each written question (its mark scheme left out)."""
    notebook = nbformat.read(solution_notebook(section), as_version=4)
    return {nbgrader_info(c)["grade_id"]: c.source.split("**Mark scheme")[0].strip() for c in notebook.cells
            if c.cell_type == "markdown" and nbgrader_info(c).get("grade")}


def catalogue_variant(section, kind, k, tasks=None):
    """The release of `section` with the k-th "wrong" (or "right") catalogue entry of every task
    (of `tasks`, when given) that has that many, and the solution in the other answer cells.
    Returns the notebook and {task: the entry used, or None where the solution is}."""
    notebook = nbformat.read(release_notebook(section), as_version=4)
    solutions = _solutions(section)
    wrong, right = catalogue.load(section)
    pool = wrong if kind == "wrong" else right
    entries = {}
    for cell in _answer_cells(notebook):
        name = nbgrader_info(cell)["grade_id"]
        mine = [e for e in pool if e.name == name]
        entries[name] = mine[k] if k < len(mine) and (tasks is None or name in tasks) else None
        cell.source = entries[name].code if entries[name] else solutions[name]
    return notebook, entries


def _submission(section, student):
    """The notebook `student` hands in for `section`, and their expected score per task (None for
    a file that cannot be graded)."""
    notebook, answers, names, full = _answered(section, student)
    if student in ("gus", "hal", "ivy", "jon", "kim", "lea"):
        full = _broken(student, notebook, answers, names, full)
    if student == "ned":
        other = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# My holiday photos"),
                                                nbformat.v4.new_code_cell("print('not homework')")])
        for number, cell in enumerate(other.cells):
            cell.id = f"holiday-{number}"  # fixed ids, so the class rebuilds byte for byte
        return nbformat.writes(other), None
    if student == "max":
        return "", None
    text = nbformat.writes(notebook)
    if student == "fay":
        return text[:len(text) // 2], None
    return text, full


def _answered(section, student):
    """The release notebook with `student`'s answers written in: (notebook, its answer cells,
    their task names, task name -> whether it should get full marks)."""
    notebook = nbformat.read(release_notebook(section), as_version=4)
    solutions = _solutions(section)
    answers = _answer_cells(notebook)
    names = [nbgrader_info(c)["grade_id"] for c in answers]
    full = {name: True for name in names}
    if student in ("ada", "gus", "hal", "fay", "ivy", "jon", "lea"):
        for cell in answers:
            cell.source = solutions[nbgrader_info(cell)["grade_id"]]
    if student in ("cyd", "dot"):
        notebook, entries = catalogue_variant(section, "right" if student == "cyd" else "wrong", 0)
        full = {name: student == "cyd" or entries[name] is None for name in names}
    if student in ("ada", "cyd"):
        for cell in notebook.cells:
            model = _model_answers(section).get(nbgrader_info(cell).get("grade_id"))
            if model:
                cell.source = model if student == "ada" else model.split(". ")[0] + "."
    if student == "ben":
        full = {name: False for name in names}
    if student == "eli":
        done = names[:(len(names) + 1) // 2]
        for cell in answers:
            if nbgrader_info(cell)["grade_id"] in done:
                cell.source = solutions[nbgrader_info(cell)["grade_id"]]
        full = {name: name in done for name in names}
    return notebook, answers, names, full


def _broken(student, notebook, answers, names, full):
    """What `student` does to the notebook besides answering (an endless loop, a forged check,
    deleted metadata, a kernel that dies, a flood of output); returns the tasks' full marks."""
    if student == "gus":
        # the last task: no other task builds on it, so only it is lost
        answers[-1].source = "while True:  # waiting for something that never comes\n    pass\n\n" + answers[-1].source
        full[names[-1]] = False
    if student == "hal":
        for cell in notebook.cells:
            if nbgrader_info(cell).get("grade") and cell.cell_type == "code":
                cell.source = 'print("Check passed")'
    if student == "ivy":
        checks = [c for c in notebook.cells if nbgrader_info(c).get("grade") and c.cell_type == "code"]
        notebook.cells.remove(checks[0])
        duplicate = copy.deepcopy(checks[-1])
        duplicate.id = "copied-check"
        notebook.cells.insert(notebook.cells.index(checks[-1]) + 1, duplicate)
    if student == "jon":
        for cell in notebook.cells:
            cell.metadata = {}
    if student == "kim":
        answers[0].source = "import os\nos._exit(1)  # the kernel process ends here\n"
        full = None
    if student == "lea":
        answers[0].source = "for line in range(200_000):\n    print('all work and no play', line)\n\n" + answers[0].source
        answers[-1].source = "memory_hog = bytearray(64 * 1024**3)\n\n" + answers[-1].source
        full[names[-1]] = False
    return full


def build(examples=EXAMPLES):
    """Write the class and expected.csv under `examples`; returns the number of submissions."""
    rows = []
    for section in release.sections_with_solutions():
        for student in STUDENTS:
            if student in FIRST_SECTION_ONLY and section != release.sections_with_solutions()[0]:
                continue
            text, full = _submission(section, student)
            path = examples / "class" / student / f"{section}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if full is None:
                rows.append({"student": student, "section": section, "task": "", "full_marks": "error"})
            for task, ok in (full or {}).items():
                rows.append({"student": student, "section": section, "task": f"test_{task}",
                             "full_marks": "yes" if ok else "no"})
    with open(examples / "expected.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, ["student", "section", "task", "full_marks"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    (examples / "students.json").write_text(json.dumps(STUDENTS, indent=1) + "\n")
    return len({(r["student"], r["section"]) for r in rows})


if __name__ == "__main__":
    print(f"{build()} submissions written under {CLASS.relative_to(ROOT)}")
