"""Autograde a class: collect submissions, grade them in parallel with nbgrader, and write the
class's nbgrader course folder (grader/class_folder.py), its results (grader/results.py) and its
tables (grader/export.py).

Each worker process (grader.worker) owns a NotebookGrader (its own nbgrader course folder and
gradebook, which starts as a copy of the class's sections), so the workers never share a
database; grader.schedule hands them the notebooks, the longest expected first, and the main
process alone writes their results into the class's gradebook.

Each result is kept with the submission's SHA-256 and its section's grading fingerprint: a re-run
grades only what is new or changed, or was graded by another grader.
"""

import hashlib
import os
import re
import tempfile
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from grader import export, fingerprint, results as results_store, schedule, worker
from grader.options import GradingOptions
from grader.result import Result

# A file name's student id: what comes before the first "_" or ".", e.g. ada_01-heads.ipynb -> ada.
# LMS exports differ; pass --pattern with a named group (?P<student>...) for yours.
DEFAULT_PATTERN = r"^(?P<student>[^_.]+)"


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path
    section: str | None = None  # found from its content (notebook_grader.identify); None: none found


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
    from grader.notebook_grader import NotGradable, identify, read_notebook
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
                held[f"{student}/{submission.path.name}"] = Result(
                    str(submission.path), section, student, error=error, grader_failure=True, held=True)
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
    from grader import class_folder, release
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    submissions = _placed(collect(inputs, pattern, unpack_to=out / "unpacked"))
    class_folder.prepare(out, release.sections_with_solutions(), options)
    store = out / "results.json"
    results = results_store.settled(store)
    versions = fingerprint.grading_versions(options)
    held = _held(submissions)
    for key in [k for k, r in results.items() if r.held]:
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
            start = (class_folder.sections_copy(out, Path(template)), options)
            if scheduler:
                from grader import cluster
                graded = cluster.grade(scheduler, todo, start, versions, echo)
            else:
                def new_pool():
                    return ProcessPoolExecutor(workers, initializer=worker.start, initargs=start)
                graded = schedule.longest_first(new_pool, todo, workers)
            write_as_graded(graded, len(todo), out, store, results, versions)
    export.write_tables(out, results)
    return results


def write_as_graded(graded, count, out, store, results, versions):
    """Write each of the `count` notebooks of `graded` ((item, worker.Graded) as each finishes) as
    it comes: its feedback page, the class's gradebook, its Result in `results` and the store's
    journal, a line on the progress bar; then `store` whole (grader.results)."""
    from tqdm.auto import tqdm
    from grader import class_folder
    with tqdm(total=count, unit="notebook", desc="grading") as bar, results_store.Recording(store, results) as add:
        for (key, submission, digest), done in graded:
            section = done.result.section or submission.section  # a failed one's too
            result = replace(done.result, notebook=str(submission.path), section=section, sha256=digest,
                             version=versions.get(section))
            result = replace(result, feedback=_write_feedback(out, result, done.feedback_html))
            class_folder.record(out, result, done.files)
            add(key, result)
            bar.write(_line(result))
            bar.update(1)


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
        if (previous and previous.sha256 == digest and not previous.grader_failure
                and previous.version == versions.get(previous.section)):
            continue
        todo.append((key, submission, digest))
    return todo


def _line(result):
    where = f"{result.student} {Path(result.notebook).name}"
    if result.error:
        score = "not graded" if result.grader_failure else "0 points"
        return f"{where}: {score} - {result.error.splitlines()[0]}"
    repaired = f"; repaired: {', '.join(result.repairs)}" if result.repairs else ""
    stopped = "".join(f"; {note}" for note in [*result.interrupted, *result.flags])
    return f"{where}: {result.score:g}/{result.max_score:g} ({result.seconds:.0f} s{repaired}{stopped})"


def _write_feedback(out, result, html):
    """Write the feedback page `html` (nbgrader's; None for a notebook not graded, which gets a
    page saying why) where nbgrader keeps it in `out`; returns its path there."""
    name = result.section or Path(result.notebook).stem
    folder = out / "feedback" / result.student / name  # nbgrader's layout
    folder.mkdir(parents=True, exist_ok=True)
    if html is None:
        from html import escape
        html = (f"<html><body><h1>{escape(Path(result.notebook).name)}</h1><p>This submission "
                f"could not be graded and scores 0:</p><pre>{escape(result.error)}</pre></body></html>")
    (folder / f"{name}.html").write_text(html)
    return str((folder / f"{name}.html").relative_to(out))
