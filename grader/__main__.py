"""`python -m grader <verb>`: the one command of the course's grading tools."""

import argparse
import sys


def autograde(args):
    """Autograde a class in parallel; write grades.csv, feedback/ and report.html under --out.

    INPUT is a folder of notebooks (student id from each file name, see --pattern), a folder
    holding a folder per student, or the zip an LMS hands out. Re-running grades only new or
    changed submissions. A submission that cannot be graded scores 0 with the reason recorded.
    Example: python -m grader autograde submissions.zip --out graded --workers 2
    On a Dask cluster (README, "Grading on a cluster"):
             python -m grader autograde submissions.zip --out graded --scheduler tcp://head:8786
    """
    from grader.autograde import autograde as grade_class
    from grader.options import GradingOptions
    from grader.schedule import ClusterError
    from grader.similar import keep_threshold
    from grader.sandbox import Unavailable
    options = GradingOptions(timeout=args.timeout, memory_mb=args.memory_mb, sandboxed=not args.no_sandbox,
                             warm=False if args.fresh_kernels else None)
    keep_threshold(args.out, args.similar_threshold)
    try:
        results = grade_class(args.inputs, args.out, options, workers=args.workers, pattern=args.pattern,
                              scheduler=args.scheduler)
    except Unavailable as error:
        print(f"autograde will not run students' code unconfined: {error}. Install bubblewrap, or pass "
              "--no-sandbox to accept the risk (a submission can then read the solutions and reach "
              "other submissions).", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError) as error:  # a missing input or a pattern without ids
        print(f"cannot collect the submissions: {error}", file=sys.stderr)
        return 2
    except ClusterError as error:
        print(f"autograde stopped: {error}", file=sys.stderr)
        return 1
    print(f"grades: {args.out}/grades.csv   feedback: {args.out}/feedback/   report: {args.out}/report.html   "
          f"similar pairs: {args.out}/similar.csv\n"
          f"written answers: python -m grader formgrader {args.out}, then python -m grader export {args.out}")
    return 0 if results else 1


def formgrader(args):
    """Open Formgrader on a class graded by `autograde --out DIR`, to grade the written answers.

    JupyterLab starts in DIR at Formgrader's page. Each written answer waits there with its model
    answer and mark scheme. Then `python -m grader export DIR` writes the grades, yours included.
    Example: python -m grader formgrader graded
    """
    import os
    from pathlib import Path
    folder = Path(args.folder).resolve()
    if not (folder / "gradebook.db").is_file() or not (folder / "nbgrader_config.py").is_file():
        print(f"{args.folder} is not a graded class: run `python -m grader autograde INPUT --out "
              f"{args.folder}` first", file=sys.stderr)
        return 2
    from traitlets.config import Config
    from grader.class_folder import configure, write_config
    write_config(folder)  # a folder graded by an earlier grader reads this checkout's settings
    try:  # here, where an error reaches the instructor, and not in the server, which would log it and go on
        configure(Config(), folder / "nbgrader_config.py")  # records the checks' results if this state of the course has none
    except Exception as error:
        print(f"nbgrader cannot grade as the course does in {folder}: {error}", file=sys.stderr)
        return 1
    os.chdir(folder)  # nbgrader reads the config where the server starts
    # JupyterLab takes this process's place: stopping it (Ctrl+C, a signal) stops the server itself
    os.execv(sys.executable, [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={folder}",
                              "--ServerApp.default_url=/formgrader", *args.jupyter_options])


def export(args):
    """Write grades.csv and report.html of DIR again, with the grades entered in Formgrader.

    grades.csv then holds, per student, each task's points (written answers included), the
    totals, and the written answers still waiting for a grade.
    Example: python -m grader export graded
    """
    from pathlib import Path
    from grader import results as results_store
    from grader.export import write_tables
    from grader.class_folder import written_progress
    from grader.similar import keep_threshold
    folder = Path(args.folder)
    store = folder / "results.json"
    results = results_store.load(store)  # a run killed before its end left them in its journal alone
    if not results or not (folder / "gradebook.db").is_file():
        print(f"{args.folder} is not a graded class: run `python -m grader autograde INPUT --out "
              f"{args.folder}` first", file=sys.stderr)
        return 2
    keep_threshold(folder, args.similar_threshold)
    write_tables(folder, results)
    waiting = sum(row[3] for row in written_progress(folder))
    print(f"grades: {folder / 'grades.csv'}   report: {folder / 'report.html'}   "
          f"written answers waiting for a grade: {waiting}")
    return 0


def demo(args):
    """What `make demo` runs: build the release, autograde the sample class, grade a few written
    answers by hand."""
    from grader.autograde import autograde as grade_class
    from grader.export import write_tables
    from grader.course import ROOT
    from grader.class_folder import enter_grades
    from grader.options import GradingOptions
    from grader.release import release as build_release
    from grader.sample_class import CLASS, GRADED_BY_HAND
    for path in build_release():
        print(f"released {path.relative_to(ROOT)}")
    out = ROOT / "out" / "demo"
    results = grade_class([CLASS], out, GradingOptions(timeout=args.timeout), workers=args.workers)
    if enter_grades(out, GRADED_BY_HAND):  # as an instructor would in Formgrader
        write_tables(out, results)
    import pandas as pd
    grades = pd.read_csv(out / "grades.csv").set_index("student").fillna({"waiting": "", "problems": ""})
    totals = grades[[c for c in grades.columns if c.endswith("total")]]
    totals.columns = [c.removesuffix(":total") or c for c in totals.columns]
    totals = totals.assign(waiting=[len(w.split("; ")) if w else 0 for w in grades["waiting"]],
                           problems=grades["problems"].str.slice(0, 60))
    print(f"\nPoints per student and section, autograded and graded by hand so far, and the written answers "
          f"still waiting (every task: {out / 'grades.csv'}):\n")
    print(totals.to_string())
    print(f"\nfeedback per student: {out / 'feedback'}/<student>/<section>/<section>.html"
          f"\nclass report:         {out / 'report.html'}"
          f"\nsimilar pairs:        {out / 'similar.csv'} (and the report's last part)"
          f"\nwritten answers:      python -m grader formgrader {out}")
    return 0


def execute(args):
    """Execute notebooks in place (solution notebooks are stored with their outputs)."""
    from grader.execute import execute as run
    for path in args.notebooks:
        print(f"{path}: executed in {run(path):.1f} s")
    return 0


def release(args):
    """Regenerate the student release notebooks/ from solutions/ with nbgrader.

    With --check, change nothing: exit 1 and list the files when notebooks/ is out of sync.
    Example: python -m grader release --check
    """
    from grader import release as releasing
    if args.check:
        stale = releasing.out_of_sync()
        for path in stale:
            print(f"out of sync: {path}")
        if stale:
            print("Run `python -m grader release` and commit notebooks/.", file=sys.stderr)
            return 1
        print("notebooks/ is in sync with solutions/.")
        return 0
    for path in releasing.release():
        print(f"released {path.relative_to(releasing.ROOT)}")
    return 0


def _check(args, options):
    """The check's result: from the warm server, else graded in this process. A file no grader can
    grade raises check_server.NotGradable either way."""
    from grader import check_server
    if not args.no_server:
        try:
            return check_server.grade(args.notebook, options)
        except check_server.Unusable as error:
            print(f"{error}: grading in this process", file=sys.stderr)
    from grader.notebook_grader import NotebookGrader, NotGradable  # only here: torch alone takes 1.5 s, a third of a warm check
    try:
        return NotebookGrader(options=options).grade(args.notebook)
    except NotGradable as error:
        raise check_server.NotGradable(str(error)) from None


def check(args):
    """Grade one notebook exactly as the autograder will, hidden tests included.

    Works on any copy of a section notebook, wherever it lies; the section is found from the
    notebook. Prints a table of tasks, points and failure messages (--json: one JSON object).
    The grading runs in a server kept warm for the next check (grader/check_server.py), which
    stops after 15 idle minutes; --no-server grades in this process.
    Example: python -m grader check notebooks/01-heads/01-heads.ipynb
    """
    import json
    from grader import check_server
    from grader.options import GradingOptions
    from grader.sandbox import Unavailable, check_available
    try:
        check_available()
        sandboxed = True
    except Unavailable as error:  # your own code on your own machine: as in Jupyter
        print(f"not sandboxed ({error}): the notebook runs as you, as it does in Jupyter", file=sys.stderr)
        sandboxed = False
    options = GradingOptions(timeout=args.timeout, sandboxed=sandboxed, warm=False if args.fresh_kernels else None)
    try:
        result = _check(args, options)
    except check_server.NotGradable as error:
        print(f"cannot grade {args.notebook}: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
        return 0
    print(f"{result.notebook} ({result.section})")
    for note in result.repairs:
        print(f"  repaired: {note}")
    for note in result.interrupted:
        print(f"  {note}")
    for note in result.flags:
        print(f"  flagged: {note}")
    width = max(len(t.grade_id) for t in result.tasks)
    for task in result.tasks:
        verdict = task.message.splitlines()[0] if task.message else \
            "passed" if task.score == task.max_score else "failed, and nbgrader gave no reason"
        print(f"  {task.grade_id:<{width}}  {task.score:g}/{task.max_score:g}  {verdict}")
    print(f"score {result.score:g}/{result.max_score:g} "
          f"(+ {result.written_max_score:g} points of written answers, graded by hand)")
    return 0


def serve_checks(args):
    """Run the warm check server of KEY (grader/check_server.py)."""
    from grader import check_server
    from grader.options import GradingOptions
    return check_server.serve(args.key, GradingOptions.from_json(args.options))


def publish(args):
    """Build the student edition in DIR: a git repository to push to the address in
    grader/course.py (COURSE_REPO), which the notebooks' set-up cells and badges point at. It holds
    the release notebooks, ticketnet.py, data/, the checks with their expected results, and a
    student README, and no answer: publishing refuses any line of a model answer, hidden test or
    mark scheme. With --check, change nothing: exit 1 and list what is stale in DIR.
    Example: python -m grader publish ../course-student && git -C ../course-student push
    """
    from grader import publish as publishing
    try:
        if args.check:
            found = publishing.differences(args.folder)
        else:
            manifest, commit = publishing.publish(args.folder)
    except (publishing.Leak, publishing.Stale, publishing.DataMissing, FileExistsError) as error:
        print(error, file=sys.stderr)
        return 1
    if args.check:
        for line in found:
            print(line)
        if found:
            print(f"{args.folder} is not the edition this repository builds: run `python -m grader "
                  f"publish {args.folder}`.", file=sys.stderr)
            return 1
        print(f"{args.folder} is the edition this repository builds.")
        return 0
    print(f"{args.folder}: {len(manifest['files'])} files, built from {manifest['built from']}; "
          + (f"committed {commit[:12]}" if commit else "nothing changed"))
    return 0


def sample_class(args):
    """Rebuild grader/examples/ (the class `make demo` grades) from the release and catalogues."""
    from grader.sample_class import CLASS, build
    print(f"{build()} submissions written under {CLASS}")
    return 0


def _fresh_kernels_option(parser):
    parser.add_argument("--fresh-kernels", action="store_true",
                        help="start every kernel from scratch, as plain nbgrader does (slower; by "
                        "default, on Linux, kernels fork from a process that has imported the libraries)")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    _grading_verbs(verbs)
    _course_verbs(verbs)
    args = parser.parse_args(argv)
    return args.run(args)


def _verb(verbs, name, run):
    """A subcommand that runs `run`, its help the first line of run's docstring, its description all of it."""
    command = verbs.add_parser(name, help=run.__doc__.splitlines()[0], description=run.__doc__,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    command.set_defaults(run=run)
    return command


def _similar_threshold_option(command, default):
    command.add_argument("--similar-threshold", type=_share, default=None, metavar="SHARE",
                         help="list two students as similar when this share (0 to 1) of one's own answer code or "
                         f"text is in the other's ({default})")


def _share(text):
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a share between 0 and 1, not {text}")
    return value


def _grading_verbs(verbs):
    """autograde, formgrader, export, check and the check server."""
    from grader.autograde import DEFAULT_PATTERN
    from grader.similar import THRESHOLD
    from grader.options import GradingOptions
    defaults = GradingOptions()
    grader_ = _verb(verbs, "autograde", autograde)
    grader_.add_argument("inputs", nargs="+", metavar="INPUT", help="folder or .zip of submissions")
    grader_.add_argument("--out", required=True, help="folder for grades.csv, feedback/ and report.html")
    grader_.add_argument("--workers", type=int, default=None, help="parallel graders (default: all cores)")
    grader_.add_argument("--scheduler", metavar="ADDRESS", default=None,
                         help="grade on the workers of this Dask scheduler (e.g. tcp://head:8786) in place "
                         "of --workers processes here")
    grader_.add_argument("--timeout", type=int, default=defaults.timeout,
                         help=f"seconds a cell may run (default {defaults.timeout})")
    grader_.add_argument("--memory-mb", type=int, default=defaults.memory_mb,
                         help=f"memory a kernel may use, in MB (default {defaults.memory_mb})")
    grader_.add_argument("--no-sandbox", action="store_true",
                         help="run submissions unconfined where bubblewrap is missing: only for code you trust")
    grader_.add_argument("--pattern", default=DEFAULT_PATTERN,
                         help="regex with a group (?P<student>...) for the id in a file name")
    _fresh_kernels_option(grader_)
    _similar_threshold_option(grader_, f"default {THRESHOLD:g}, measured in BENCHMARKS.md")
    for verb, run in (("formgrader", formgrader), ("export", export)):
        command = _verb(verbs, verb, run)
        command.add_argument("folder", metavar="DIR", help="the --out folder of `grader autograde`")
        if verb == "formgrader":
            command.add_argument("jupyter_options", nargs=argparse.REMAINDER,
                                 help="passed on to `jupyter lab` (e.g. --no-browser --port 8890)")
        else:
            _similar_threshold_option(command, "default: the one DIR was last written with")
    checker = _verb(verbs, "check", check)
    checker.add_argument("notebook", help="a section notebook (.ipynb)")
    checker.add_argument("--json", action="store_true", help="print one JSON object")
    checker.add_argument("--timeout", type=int, default=defaults.timeout,
                         help=f"seconds per cell (default {defaults.timeout})")
    _fresh_kernels_option(checker)
    checker.add_argument("--no-server", action="store_true",
                         help="grade in this process, not in the warm check server (grader/check_server.py) "
                         "that keeps the libraries loaded between checks")
    server = verbs.add_parser("check-server", help="the warm server behind `check` (started by it, not by hand)")
    server.add_argument("key")
    server.add_argument("options", help="the check's options, as JSON")
    server.set_defaults(run=serve_checks)


def _course_verbs(verbs):
    """demo, sample-class, execute, release and publish."""
    from grader.options import SAMPLE_CLASS
    demoer = verbs.add_parser("demo", help=demo.__doc__)
    demoer.add_argument("--workers", type=int, default=None, help="grading processes (default: all cores)")
    demoer.add_argument("--timeout", type=int, default=SAMPLE_CLASS.timeout,
                        help=f"seconds a cell may run (default {SAMPLE_CLASS.timeout})")
    demoer.set_defaults(run=demo)
    verbs.add_parser("sample-class", help="rebuild the sample class in grader/examples/ from the release "
                     "and the catalogues").set_defaults(run=sample_class)
    runner = verbs.add_parser("execute", help=execute.__doc__)
    runner.add_argument("notebooks", nargs="+", help="paths of .ipynb files")
    runner.set_defaults(run=execute)
    _verb(verbs, "release", release).add_argument("--check", action="store_true", help="only report files out of sync")
    publisher = _verb(verbs, "publish", publish)
    publisher.add_argument("folder", metavar="DIR", help="the student edition's folder (a git repository)")
    publisher.add_argument("--check", action="store_true", help="only report what is stale in DIR")


if __name__ == "__main__":
    sys.exit(main())
