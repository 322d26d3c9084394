"""The class's tables, written from its results and the grades entered by hand: grades.csv (a row
per student), similar.csv and report.html. `grader autograde` writes them after grading, and
`python -m grader export` again after Formgrader."""

import csv
from pathlib import Path

from grader import schedule
from grader.course import SECTIONS

# What a spreadsheet reads as the start of a formula in a cell (OWASP, CSV injection)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def write_tables(out, results):
    """grades.csv, similar.csv and report.html under `out`, from the results and the grades entered
    by hand in the class's gradebook (what `python -m grader export` writes again after
    Formgrader); the similar pairs at the threshold the class folder keeps (grader.similar)."""
    from grader.class_folder import manual_grades
    from grader.report import write_report
    from grader.similar import table, write_similar
    write_grades(out / "grades.csv", results, manual_grades(out))
    similar = write_similar(out, results)
    with open(out / "similar.csv", "w", newline="") as f:  # quoted and plain text, as grades.csv
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows([plain_text(v) for v in row] for row in table(similar[1]))
    write_report(out, results, similar)


def write_grades(path, results, manual):
    """A row per student; a column per task (section:grade_id) in notebook order, the written
    answers after the checks, and a total per section and overall; the written answers waiting
    for a grade; and the problems: submissions that could not be graded, cells interrupted at the
    time limit, and checks that the notebook and the grader judged differently.

    `manual`: the grades entered by hand (grader.class_folder.manual_grades); one given to an
    autograded task replaces its score. A written answer is empty until graded."""
    from grader.class_folder import written_questions
    graded = [r for r in results.values() if not r.error]
    tasks = {}  # section -> task ids in notebook order, from its most complete submission
    for result in graded:
        if len(result.tasks) > len(tasks.get(result.section, [])):
            tasks[result.section] = [t.grade_id for t in result.tasks]
    columns = [f"{section}:{name}" for section in sorted(tasks, key=SECTIONS.index)
               for name in tasks[section] + written_questions(section) + ["total"]]
    rows = {r.student: {"student": r.student, "waiting": [], "problems": []} for r in results.values()}
    for result in results.values():  # the grader's failure is not the student's zero: no score at all
        if result.grader_failure:
            rows[result.student].update({c: "" for c in columns if c.startswith(f"{result.section}:")})
    for result in sorted(graded, key=lambda r: SECTIONS.index(r.section)):
        row, section = rows[result.student], result.section
        by_hand = manual.get((result.student, section), {})
        for task in result.tasks:
            points, _ = by_hand.get(task.grade_id, (None, False))
            row[f"{section}:{task.grade_id}"] = task.score if points is None else points
        for question in written_questions(section):
            points, waiting = by_hand.get(question, (None, True))
            row[f"{section}:{question}"] = "" if points is None else points
            if waiting:
                row["waiting"].append(f"{section}:{question}")
        row[f"{section}:total"] = sum(row[f"{section}:{name}"] or 0.0 for name in
                                      [t.grade_id for t in result.tasks] + written_questions(section))
    for result in sorted(results.values(), key=lambda r: (r.section is None, schedule.section_order(r.section), r.notebook)):
        name = Path(result.notebook).name
        problems = [result.error] if result.error else [*result.interrupted, *result.flags]
        rows[result.student]["problems"] += [f"{name}: {problem}" for problem in problems]
    with open(path, "w", newline="") as f:
        # every cell quoted, and text a spreadsheet would run as a formula made plain text (OWASP's
        # advice on CSV injection): a student id or a file name is the student's to choose
        writer = csv.DictWriter(f, ["student", *columns, "total", "waiting", "problems"], restval=0,
                                quoting=csv.QUOTE_ALL)
        writer.writeheader()
        for student in sorted(rows):
            row = rows[student]
            row["total"] = sum(v for k, v in row.items() if k.endswith(":total") and v != "")
            row["waiting"] = "; ".join(row["waiting"])
            row["problems"] = "; ".join(row["problems"])
            writer.writerow({k: plain_text(v) for k, v in row.items()})


def plain_text(value):
    """A table cell that no spreadsheet runs: text that begins like a formula gets a leading
    apostrophe, which spreadsheets show as text and hide; numbers stay numbers."""
    return f"'{value}" if isinstance(value, str) and value[:1] in FORMULA_STARTS else value
