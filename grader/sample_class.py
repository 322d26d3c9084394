"""The sample class that `make demo` grades: a folder per student in grader/examples/class/.

Every submission is made from the release notebook, as a student would hand it in, with answer
cells taken from the solutions or from the catalogue; a few are broken on purpose. What each
student should score per task follows from how the submission was made, and is written to
grader/examples/expected.csv for the tests to hold the autograder to.

    python -m grader sample-class      # rebuild grader/examples/ after a solution changes
"""

import csv
import json
from pathlib import Path

import nbformat

from grader import catalogue, release
from grader.course import ROOT, release_notebook, solution_notebook

EXAMPLES = Path(__file__).resolve().parent / "examples"
CLASS = EXAMPLES / "class"

STUDENTS = {
    "ada": "every answer right: the solutions",
    "ben": "the release handed in untouched",
    "cyd": "every answer right in other words: the catalogue's alternative right answers",
    "dot": "typical mistakes: the catalogue's first wrong answer for every task",
    "eli": "half done: the first half of the tasks answered, the rest untouched",
    "fay": "a file cut off in the middle: not valid JSON",
    "gus": "every answer right, but the first answer cell starts with an endless loop",
    "hal": "every answer right, and every check cell edited to print 'Check passed' alone",
}
LOOPING_SECTIONS = ("01-heads",)  # gus loops in these sections only: each loop costs a timeout


def _answer_cells(notebook):
    return [c for c in notebook.cells if c.cell_type == "code"
            and c.metadata.get("nbgrader", {}).get("solution") and not c.metadata["nbgrader"].get("grade")]


def _submission(section, student):
    """The notebook `student` hands in for `section`, and their expected score per task (None for
    a file that cannot be graded)."""
    notebook = nbformat.read(release_notebook(section), as_version=4)
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source
                 for c in _answer_cells(nbformat.read(solution_notebook(section), as_version=4))}
    wrong, right = catalogue.load(section) if catalogue.has_entries(section) else ([], [])
    answers = _answer_cells(notebook)
    names = [c.metadata["nbgrader"]["grade_id"] for c in answers]
    full = {name: True for name in names}
    if student in ("ada", "gus", "hal", "fay"):
        for cell in answers:
            cell.source = solutions[cell.metadata["nbgrader"]["grade_id"]]
    if student == "cyd":
        for cell in answers:
            name = cell.metadata["nbgrader"]["grade_id"]
            cell.source = next((e.code for e in right if e.name == name), solutions[name])
    if student == "dot":
        for cell in answers:
            name = cell.metadata["nbgrader"]["grade_id"]
            first = next((e for e in wrong if e.name == name), None)
            cell.source = first.code if first else solutions[name]
            full[name] = first is None
    if student == "ben":
        full = {name: False for name in names}
    if student == "eli":
        done = names[:(len(names) + 1) // 2]
        for cell in answers:
            if cell.metadata["nbgrader"]["grade_id"] in done:
                cell.source = solutions[cell.metadata["nbgrader"]["grade_id"]]
        full = {name: name in done for name in names}
    if student == "gus":
        answers[0].source = "while True:  # waiting for something that never comes\n    pass\n\n" + answers[0].source
        full[names[0]] = False
    if student == "hal":
        for cell in notebook.cells:
            if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code":
                cell.source = 'print("Check passed")'
    text = nbformat.writes(notebook)
    if student == "fay":
        return text[:len(text) // 2], None
    return text, full


def build(examples=EXAMPLES):
    """Write the class and expected.csv under `examples`; returns the number of submissions."""
    rows = []
    for section in release.sections_with_solutions():
        for student in STUDENTS:
            if student == "gus" and section not in LOOPING_SECTIONS:
                continue
            text, full = _submission(section, student)
            path = examples / "class" / student / f"{section}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if full is None:
                rows.append({"student": student, "section": section, "task": "", "full_marks": "unreadable"})
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
