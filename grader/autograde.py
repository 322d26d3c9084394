"""Autograde a class: collect submissions, grade them in parallel with nbgrader, and write the
class's nbgrader course folder (grader/gradebook.py), the grade table and a class report.

Each worker process owns a GradingCourse (its own nbgrader course folder and gradebook, which
starts as a copy of the class's sections), so the workers never share a database; the main
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
import time
import zipfile
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

from grader.course import ROOT, SECTIONS
from grader.sandbox import MEMORY_MB, TIMEOUT

# A file name's student id: what comes before the first "_" or ".", e.g. ada_01-heads.ipynb -> ada.
# LMS exports differ; pass --pattern with a named group (?P<student>...) for yours.
DEFAULT_PATTERN = r"^(?P<student>[^_.]+)"
# What a spreadsheet reads as the start of a formula in a cell (OWASP, CSV injection)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class ClusterError(Exception):
    """The Dask cluster cannot grade (grader.cluster): its scheduler is out of reach or was lost,
    or a worker refused. What was graded before is saved; the message says what to do."""


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
                    **_failed(submission.path, error, grader_failure=True, section=section), "student": student,
                    "seconds": 0.0, "held": True}
    return held


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def grading_versions(options=(), root=ROOT):
    """section -> a fingerprint of everything that grades it: its solution notebook (check cells,
    hidden tests), the modules of grader/checks/ it imports, the rest of the grader, ticketnet.py,
    the grading `options`, the data the notebooks read (data/, bench/results/) and the versions
    of Python and the libraries. A notebook whose section's fingerprint changed is graded again;
    key None covers notebooks of no known section."""
    import platform
    from importlib import metadata
    root = Path(root)
    checks = root / "grader" / "checks"
    shared = hashlib.sha256(repr(sorted(options)).encode())
    data = [p for folder in ("data", "bench/results") for p in sorted((root / folder).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts]
    for path in [root / "ticketnet.py", *sorted((root / "grader").rglob("*.py")), *data]:
        if path.parent != checks or path.name == "__init__.py":  # a section's own checks count for it alone
            shared.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    for name in ("torch", "numpy", "nbgrader", "nbconvert", "nbclient", "ipykernel", "jupyter_client",
                 "pandas", "matplotlib", "scikit-learn"):
        shared.update(f"{name}=={metadata.version(name)}".encode())
    shared.update(f"python=={platform.python_version()}".encode())
    versions = {}
    for section in SECTIONS:
        solution = root / "solutions" / section / f"{section}.ipynb"
        digest = shared.copy()
        for path in [solution, *(checks / f"{m}.py" for m in _check_modules(solution, checks))]:
            digest.update(path.read_bytes())
        versions[section] = digest.hexdigest()[:16]
    versions[None] = hashlib.sha256("".join(versions.values()).encode()).hexdigest()[:16]
    return versions


def _check_modules(solution, checks):
    """The modules of grader/checks/ that a section's solution imports, and those they import."""
    found, todo = set(), re.findall(r"from grader\.checks import (\w+)", solution.read_text())
    while todo:
        module = todo.pop()
        if module not in found and (checks / f"{module}.py").is_file():
            found.add(module)
            todo += re.findall(r"from grader\.checks\.(\w+) import", (checks / f"{module}.py").read_text())
    return sorted(found)


# --- the worker side -------------------------------------------------------------------------

_course = None  # this worker's GradingCourse
_started_with = None  # what it was started with, to start a fresh one after a grader failure


def _start_worker(template, timeout, memory_mb, warm, sandboxed):
    global _course, _started_with
    from grader.grading import GradingCourse
    # Each worker has its own warm-kernel server (in a sandbox of its own): no submission of one
    # worker can reach another's kernels.
    _course = GradingCourse(timeout=timeout, template=template, warm=warm, memory_mb=memory_mb,
                            sandboxed=sandboxed)
    _started_with = (template, timeout, memory_mb, warm, sandboxed)


def _grade(student, path, attempts=2):
    """Grade one submission in this worker; never raises: a failure is recorded, as the student's
    zero when the submission caused it, as a grader failure when the grader did. After a grader
    failure the worker starts a fresh course and grades the notebook again, `attempts` in all."""
    from grader.grading import GraderFailure, NotGradable
    started = time.perf_counter()
    try:
        try:
            result = _course.grade(path, student=student)
            result["error"] = ""
            result["feedback_html"] = _course.feedback_html(result["section"], student)
            result["graded_files"] = _course.graded_files(result["section"], student)
        except Exception:
            _course.check_own_files()  # a gradebook it cannot read fails whatever it grades: not the student's doing
            raise
    except NotGradable as error:
        result = _failed(path, str(error))
    except GraderFailure as error:
        if attempts > 1:
            _course.close()
            _start_worker(*_started_with)
            return _grade(student, path, attempts - 1)
        result = _failed(path, f"grader failure: {error}", grader_failure=True)
    except Exception as error:  # an nbgrader crash: record it and go on
        result = _failed(path, f"grading failed: {type(error).__name__}: {error}")
    result["student"] = student
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _failed(path, error, grader_failure=False, section=None):
    return {"notebook": str(path), "section": section, "score": 0.0, "max_score": 0.0, "tasks": [],
            "error": error, "grader_failure": grader_failure, "feedback_html": None}


# --- the class side --------------------------------------------------------------------------

def autograde(inputs, out, workers=None, timeout=None, memory_mb=None, pattern=DEFAULT_PATTERN,
              warm=None, sandboxed=True, scheduler=None, echo=print):
    """Grade every submission under `inputs` not graded before; write the outputs under `out`.
    Every kernel runs in a sandbox (grader.sandbox); `sandboxed=False` runs submissions unconfined.
    `warm=False` starts every kernel from scratch instead of forking it (grader.warm_kernel); the
    default forks on Linux only. `scheduler`: the address of a Dask scheduler whose workers grade
    (grader.cluster) in place of `workers` processes on this machine.

    Returns the results of every submission, old and new.
    """
    from tqdm.auto import tqdm
    from grader.sandbox import check_available
    timeout, memory_mb = timeout or TIMEOUT, memory_mb or MEMORY_MB
    if sandboxed and not scheduler:
        check_available()  # before anything is written: raises sandbox.Unavailable, saying why
    from grader import gradebook, release
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    submissions = _placed(collect(inputs, pattern, unpack_to=out / "unpacked"))
    gradebook.prepare(out, release.sections_with_solutions(),
                      {"timeout": timeout, "memory_mb": memory_mb, "sandboxed": sandboxed})
    store = out / "results.json"
    results = load_results(store)
    if _journal(store).is_file():  # a killed run's: folded in first, so this run's lines never follow its cut-off one
        _save(store, results)
        _journal(store).unlink()
    versions = grading_versions([("timeout", timeout), ("memory_mb", memory_mb), ("sandboxed", sandboxed)])
    held = _held(submissions)
    for key in [k for k, r in results.items() if r.get("held")]:
        del results[key]  # held in a run before: this run's files decide again
    results.update(held)
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
    echo(f"{len(submissions)} submissions, {len(submissions) - len(todo) - len(held)} already graded, "
         f"{len(todo)} to grade" + (f", {len(held)} held: a student's second notebook of a section" if held else ""))
    workers = min(workers or os.cpu_count() or 1, len(todo))
    if todo:
        with tempfile.TemporaryDirectory() as template:
            # the workers' courses start from a copy of the class's sections, which no worker
            # reads while the main process writes the class's gradebook
            start = (gradebook.sections_copy(out, Path(template)), timeout, memory_mb, warm, sandboxed)
            if scheduler:
                from grader import cluster
                graded = cluster.grade(scheduler, todo, start, versions, echo)
            else:
                def new_pool():
                    return ProcessPoolExecutor(workers, initializer=_start_worker, initargs=start)
                graded = _longest_first(new_pool, todo, workers)
            journal = _journal(store)
            try:
                with tqdm(total=len(todo), unit="notebook", desc="grading") as bar, journal.open("a") as lines:
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
    write_tables(out, results)
    return results


def write_tables(out, results):
    """grades.csv and report.html under `out`, from the results and the grades entered by hand
    in the class's gradebook (what `python -m grader export` writes again after Formgrader)."""
    from grader.gradebook import manual_grades
    from grader.report import write_report
    _write_grades(out / "grades.csv", results, manual_grades(out))
    write_report(out, results)


def _longest_first(new_pool, todo, workers, attempts=2):
    """Grade `todo` on a pool of `workers` processes from `new_pool()`, one notebook per worker at
    a time, always starting the one expected to take longest; yields (item, result) as each
    finishes.

    Long notebooks first keep a worker from starting one alone at the end while the others wait.
    A section's expected length is the mean time of its notebooks graded so far in this run.
    Sections with none graded yet come first, later ones first (sections 6 and 7 train a model):
    one notebook of each shows how long the section takes, and the shortest section ends the run.

    A worker that dies (the pool breaks) takes the notebooks then running with it: the pool starts
    again and grades them again, up to `attempts` times each, then records a grader failure.
    """
    from concurrent.futures.process import BrokenProcessPool
    waiting, seconds, tries = list(todo), {}, {}
    while waiting:
        running = {}
        with new_pool() as pool:
            try:
                while waiting or running:
                    while waiting and len(running) < workers:
                        item = _next(waiting, seconds)
                        waiting.remove(item)
                        tries[item[0]] = tries.get(item[0], 0) + 1
                        running[pool.submit(_grade, item[1].student, str(item[1].path))] = item
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for job in finished:
                        item, result = running[job], job.result()  # a broken pool raises here
                        del running[job]
                        seconds.setdefault(section_order(item[1].section), []).append(result["seconds"])
                        yield item, result
            except BrokenProcessPool:
                for item in running.values():
                    if tries[item[0]] < attempts:
                        waiting.append(item)
                    else:
                        result = _failed(item[1].path, f"grader failure: a grading process died {attempts} "
                                         "times while this notebook was being graded", grader_failure=True)
                        yield item, {**result, "student": item[1].student, "seconds": 0.0}


def _next(waiting, seconds):
    """The waiting item expected to take longest (the first such one, so students keep their
    order): by the mean seconds of its section so far, after every section not yet timed."""
    means = {section: sum(times) / len(times) for section, times in seconds.items()}

    def expected(item):
        section = section_order(item[1].section)
        return (0, means[section]) if section in means else (1, section)
    return max(waiting, key=expected)


def section_order(section):
    """A section's place in the course (06-tiny-transformer -> 5); -1 for None, no section found."""
    return SECTIONS.index(section) if section else -1


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
    for result in sorted(results.values(), key=lambda r: (r["section"] is None, section_order(r["section"]), r["notebook"])):
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
