"""Autograde a class: collect submissions, grade them in parallel with nbgrader, and write the
class's nbgrader course folder (grader/gradebook.py), the grade table and a class report.

Each worker process (grader.worker) owns a GradingCourse (its own nbgrader course folder and
gradebook, which starts as a copy of the class's sections), so the workers never share a
database; grader.schedule hands them the notebooks, the longest expected first, and the main
process alone writes their results into the class's gradebook.

Results are kept in results.json, keyed by student and section with the submission's SHA-256:
a re-run grades only what is new or changed. Each result is also appended to results.jsonl the
moment it arrives, so an interrupted run loses nothing already graded; results.json is written
whole once, at the end of the run (for a class of thousands, writing it after every notebook
would take longer than the grading).
"""

import csv
import hashlib
import json
import os
import re
import tempfile
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from grader import fingerprint, schedule, worker
from grader.course import SECTIONS
from grader.options import GradingOptions

# A file name's student id: what comes before the first "_" or ".", e.g. ada_01-heads.ipynb -> ada.
# LMS exports differ; pass --pattern with a named group (?P<student>...) for yours.
DEFAULT_PATTERN = r"^(?P<student>[^_.]+)"
# What a spreadsheet reads as the start of a formula in a cell (OWASP, CSV injection)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path
    section: str | None = None  # found from its content (grading.identify); None: none found


def collect(inputs, pattern=DEFAULT_PATTERN, unpack_to=None):
    """Submissions from folders of notebooks, folders per student, or LMS zip files.

    In a folder, a notebook directly inside gets its student id from its file name by `pattern`;
    a notebook inside a sub-folder belongs to the student the sub-folder is named after.
    """
    regex = re.compile(pattern)
    found = []
    for item in map(Path, inputs):
        if item.suffix == ".zip":
            target = Path(unpack_to or tempfile.mkdtemp()) / item.stem
            with zipfile.ZipFile(item) as archive:
                archive.extractall(target)
            item = target
        if item.is_file():
            found.append(Submission(_student(item.name, regex), item))
            continue
        if not item.is_dir():
            raise FileNotFoundError(f"{item}: no such file or folder")
        for path in sorted(item.rglob("*.ipynb")):
            if ".ipynb_checkpoints" in path.parts:
                continue
            relative = path.relative_to(item)
            student = relative.parts[0] if len(relative.parts) > 1 else _student(path.name, regex)
            found.append(Submission(student, path))
    return found


def _student(name, regex):
    match = regex.search(name)
    if not match or not match.groupdict().get("student"):
        raise ValueError(f"{name}: the pattern {regex.pattern!r} finds no student id "
                         "(use --pattern with a group (?P<student>...))")
    return match.group("student")


def _placed(submissions):
    """The submissions with their sections, found from their content as grading finds them: the
    one place a notebook's section is decided. A notebook that cannot be read or placed keeps
    None, and grading says why."""
    from grader.grading import NotGradable, identify, read_notebook
    placed = []
    for submission in submissions:
        try:
            placed.append(replace(submission, section=identify(read_notebook(submission.path))))
        except NotGradable:
            placed.append(submission)
    return placed


def _held(submissions):
    """key -> a result of no score for each submission that shares its student and section with
    another: which one counts is the instructor's choice, so neither is graded."""
    by_owner = {}
    for submission in submissions:
        if submission.section:
            by_owner.setdefault((submission.student, submission.section), []).append(submission)
    held = {}
    for (student, section), group in by_owner.items():
        if len(group) > 1:
            names = ", ".join(str(s.path) for s in group)
            for submission in group:
                error = (f"not graded: {student} has {len(group)} notebooks of {section} ({names}); "
                         "remove all but one and grade again")
                held[f"{student}/{submission.path.name}"] = {
                    **worker.failed(submission.path, error, grader_failure=True, section=section), "student": student,
                    "seconds": 0.0, "held": True}
    return held


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --- the class side --------------------------------------------------------------------------

def autograde(inputs, out, options=GradingOptions(), workers=None, pattern=DEFAULT_PATTERN, scheduler=None,
              echo=print):
    """Grade every submission under `inputs` not graded before, with `options` (GradingOptions:
    the time limit, the memory, the sandbox, forked kernels); write the outputs under `out`.
    `scheduler`: the address of a Dask scheduler whose workers grade (grader.cluster) in place of
    `workers` processes on this machine.

    Returns the results of every submission, old and new.
    """
    from grader.sandbox import check_available
    if options.sandboxed and not scheduler:
        check_available()  # before anything is written: raises sandbox.Unavailable, saying why
    from grader import gradebook, release
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    submissions = _placed(collect(inputs, pattern, unpack_to=out / "unpacked"))
    gradebook.prepare(out, release.sections_with_solutions(), options)
    store = out / "results.json"
    results = load_results(store)
    if _journal(store).is_file():  # a killed run's: folded in first, so this run's lines never follow its cut-off one
        _save(store, results)
        _journal(store).unlink()
    versions = fingerprint.grading_versions(options)
    held = _held(submissions)
    for key in [k for k, r in results.items() if r.get("held")]:
        del results[key]  # held in a run before: this run's files decide again
    results.update(held)
    todo = to_grade(submissions, held, results, versions)
    echo(f"{len(submissions)} submissions, {len(submissions) - len(todo) - len(held)} already graded, "
         f"{len(todo)} to grade" + (f", {len(held)} held: a student's second notebook of a section" if held else ""))
    workers = min(workers or os.cpu_count() or 1, len(todo))
    if todo:
        with tempfile.TemporaryDirectory() as template:
            # the workers' courses start from a copy of the class's sections, which no worker
            # reads while the main process writes the class's gradebook
            start = (gradebook.sections_copy(out, Path(template)), options)
            if scheduler:
                from grader import cluster
                graded = cluster.grade(scheduler, todo, start, versions, echo)
            else:
                def new_pool():
                    return ProcessPoolExecutor(workers, initializer=worker.start, initargs=start)
                graded = schedule.longest_first(new_pool, todo, workers)
            write_as_graded(graded, len(todo), out, store, results, versions)
    write_tables(out, results)
    return results


def write_as_graded(graded, count, out, store, results, versions):
    """Write each of the `count` results of `graded` ((item, result) as each notebook finishes) as
    it comes: its feedback page, the class's gradebook, `results` and the journal beside `store`,
    a line on the progress bar; then `store` whole."""
    from tqdm.auto import tqdm
    from grader import gradebook
    journal = _journal(store)
    try:
        with tqdm(total=count, unit="notebook", desc="grading") as bar, journal.open("a") as lines:
            for (key, submission, digest), result in graded:
                result["section"] = result["section"] or submission.section  # a failed one's too
                _write_feedback(out, result)
                gradebook.record(out, result)
                result.update(sha256=digest, version=versions.get(result.get("section")))
                results[key] = result
                lines.write(json.dumps([key, result]) + "\n")
                lines.flush()  # after each one: an interrupted run loses nothing
                bar.write(_line(result))
                bar.update(1)
    finally:
        _save(store, results)
        journal.unlink()


def to_grade(submissions, held, results, versions):
    """[(key, submission, its SHA-256)] of the submissions not held that have no result yet of
    the same bytes graded under their section's fingerprint (`versions`), or whose result is a
    grader failure."""
    todo = []
    for submission in submissions:
        key = f"{submission.student}/{submission.path.name}"
        if key in held:
            continue
        digest = _sha256(submission.path)
        previous = results.get(key)
        if (previous and previous.get("sha256") == digest and not previous.get("grader_failure")
                and previous.get("version") == versions.get(previous.get("section"))):
            continue
        todo.append((key, submission, digest))
    return todo


def write_tables(out, results):
    """grades.csv, similar.csv and report.html under `out`, from the results and the grades entered
    by hand in the class's gradebook (what `python -m grader export` writes again after
    Formgrader); the similar pairs at the threshold the class folder keeps (grader.similar)."""
    from grader.gradebook import manual_grades
    from grader.report import write_report
    from grader.similar import table, write_similar
    _write_grades(out / "grades.csv", results, manual_grades(out))
    similar = write_similar(out, results)
    with open(out / "similar.csv", "w", newline="") as f:  # quoted and plain text, as grades.csv
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows([plain_text(v) for v in row] for row in table(similar[1]))
    write_report(out, results, similar)


def _journal(store):
    return store.with_suffix(".jsonl")


def load_results(store):
    """The results in `store` (results.json), with those its journal holds from a run stopped
    before it wrote them there."""
    results = json.loads(store.read_text()) if store.is_file() else {}
    journal = _journal(store)
    if journal.is_file():
        for line in journal.read_text().splitlines():
            try:
                key, result = json.loads(line)
            except ValueError:  # the last line, cut off where the run was killed
                continue
            results[key] = result
    return results


def _save(store, results):
    partial = store.with_suffix(".tmp")
    partial.write_text(json.dumps(results, indent=1, sort_keys=True))
    partial.replace(store)


def _line(result):
    where = f"{result['student']} {Path(result['notebook']).name}"
    if result["error"]:
        score = "not graded" if result.get("grader_failure") else "0 points"
        return f"{where}: {score} - {result['error'].splitlines()[0]}"
    repaired = f"; repaired: {', '.join(result['repairs'])}" if result["repairs"] else ""
    stopped = "".join(f"; {note}" for note in [*result["interrupted"], *result.get("flags", [])])
    return f"{where}: {result['score']:g}/{result['max_score']:g} ({result['seconds']:.0f} s{repaired}{stopped})"


def _write_feedback(out, result):
    html = result.pop("feedback_html")
    name = result["section"] or Path(result["notebook"]).stem
    folder = out / "feedback" / result["student"] / name  # nbgrader's layout
    folder.mkdir(parents=True, exist_ok=True)
    if html is None:
        from html import escape
        html = (f"<html><body><h1>{escape(Path(result['notebook']).name)}</h1><p>This submission "
                f"could not be graded and scores 0:</p><pre>{escape(result['error'])}</pre></body></html>")
    (folder / f"{name}.html").write_text(html)
    result["feedback"] = str((folder / f"{name}.html").relative_to(out))


def _write_grades(path, results, manual):
    """A row per student; a column per task (section:grade_id) in notebook order, the written
    answers after the checks, and a total per section and overall; the written answers waiting
    for a grade; and the problems: submissions that could not be graded, cells interrupted at the
    time limit, and checks that the notebook and the grader judged differently.

    `manual`: the grades entered by hand (grader.gradebook.manual_grades); one given to an
    autograded task replaces its score. A written answer is empty until graded."""
    from grader.gradebook import written_questions
    graded = [r for r in results.values() if not r["error"]]
    tasks = {}  # section -> task ids in notebook order, from its most complete submission
    for result in graded:
        if len(result["tasks"]) > len(tasks.get(result["section"], [])):
            tasks[result["section"]] = [t["grade_id"] for t in result["tasks"]]
    columns = [f"{section}:{name}" for section in sorted(tasks, key=SECTIONS.index)
               for name in tasks[section] + written_questions(section) + ["total"]]
    rows = {r["student"]: {"student": r["student"], "waiting": [], "problems": []} for r in results.values()}
    for result in results.values():  # the grader's failure is not the student's zero: no score at all
        if result.get("grader_failure"):
            rows[result["student"]].update({c: "" for c in columns if c.startswith(f"{result['section']}:")})
    for result in sorted(graded, key=lambda r: SECTIONS.index(r["section"])):
        row, section = rows[result["student"]], result["section"]
        by_hand = manual.get((result["student"], section), {})
        for task in result["tasks"]:
            points, _ = by_hand.get(task["grade_id"], (None, False))
            row[f"{section}:{task['grade_id']}"] = task["score"] if points is None else points
        for question in written_questions(section):
            points, waiting = by_hand.get(question, (None, True))
            row[f"{section}:{question}"] = "" if points is None else points
            if waiting:
                row["waiting"].append(f"{section}:{question}")
        row[f"{section}:total"] = sum(row[f"{section}:{name}"] or 0.0 for name in
                                      [t["grade_id"] for t in result["tasks"]] + written_questions(section))
    for result in sorted(results.values(), key=lambda r: (r["section"] is None, schedule.section_order(r["section"]), r["notebook"])):
        name = Path(result["notebook"]).name
        problems = [result["error"]] if result["error"] else [*result.get("interrupted", []),
                                                               *result.get("flags", [])]
        rows[result["student"]]["problems"] += [f"{name}: {problem}" for problem in problems]
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
