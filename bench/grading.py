"""How fast a class is graded: the sample class (grader/examples/class) graded, one after the
other in one run, by

1. plain nbgrader: `nbgrader autograde SECTION` for each section in turn, one notebook at a time,
   each in a fresh kernel (registration with generate_assignment is not timed), in every round;
2. `grader autograde` with 1 worker and fresh kernels (as before grader.warm_kernel existed);
3. `grader autograde` with all cores and no sandbox (as before grader.sandbox existed);
4. `grader autograde` with 1 worker (kernels forked from a warm process);
5. `grader autograde` with all cores;
6. `grader autograde --scheduler` on a Dask cluster of as many workers on this machine
   (grader.cluster; the cluster is started before the clock, as an instructor's would be).

Every configuration uses the same cell timeout. The times of `grader autograde` include what
plain nbgrader does not do: feedback pages, grades.csv and the class report. With --rounds K,
configurations 1, 4, 5 and 6 take turns K times and the table gives their medians: the speed-up from
more workers is a ratio of two runs, and on a shared machine one pair of runs can be off by more
than the difference being measured. Before each round, the host's own speed-up on as many processes
of pure computation says how much its cores can give at all. Each run's CPU seconds (the whole machine's) and its seconds outside
notebooks (start, end, idle workers) say where a speed-up short of the worker count goes.

From the Dask runs, the projection for a class of 35,000 notebooks on 10, 50 and 200 workers: the
CPU seconds per notebook, and the scheduler's own seconds per task, measured with tasks that do
nothing.

Then, where the time of one graded notebook goes, for each section's solution graded alone with
fresh and with warm kernels, in their sandboxes and without: starting the kernel (interpreter, ipykernel; measured apart), the
set-up and import cells, the notebook's other cells, the rest (nbgrader's and the grader's own
work, and whatever the kernel start costs inside nbgrader beyond what was measured apart), and
the feedback page.

Last, the costs paid once per run: a new gradebook's schema version, asked of the `alembic`
command as nbgrader does and read in-process as the grader does (grader.nbconfig.alembic_head);
and `python -m grader check` of one release notebook as a student types it: in its own process
(warm and fresh kernels), and from the warm check server (grader.check_server), first and after.

    python bench/grading.py [--rounds 5] [--write]   # the whole class: 20 minutes, and 7 more a round
    python bench/grading.py --students ada,dot --sections 02-positions --skip-breakdown
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.tables import BENCHMARKS, OtherLoad, table, write_section  # noqa: E402
from grader.autograde import autograde  # noqa: E402
from grader.course import SECTIONS, SOLUTIONS, is_check_cell  # noqa: E402
from grader.options import SAMPLE_CLASS, GradingOptions  # noqa: E402
from grader.sample_class import CLASS  # noqa: E402


# What the tables measured: the grader, the class it grades and all the notebooks import
# (tests/test_bench.py).
MEASURED = ["bench/grading.py", "grader/**/*.py", "grader/examples/class/*/*.ipynb", "solutions/*/*.ipynb",
            "ticketnet.py", "data/*.csv", "requirements.txt"]
PLAIN = "plain nbgrader, sequential"


def pick_class(folder, students=None, sections=None):
    """Copy the chosen students' notebooks of the chosen sections into `folder` (one sub-folder
    per student, as the sample class is laid out); returns the number of notebooks."""
    count = 0
    for student in sorted(p.name for p in CLASS.iterdir() if p.is_dir()):
        if students and student not in students:
            continue
        for path in sorted((CLASS / student).glob("*.ipynb")):
            if sections and path.stem not in sections:
                continue
            (folder / student).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, folder / student / path.name)
            count += 1
    return count


def plain_nbgrader(submissions, work, timeout, name="plain"):
    """Seconds for plain `nbgrader autograde`, section after section, on the same notebooks, in a
    course of its own (work/NAME), and the cores kept busy meanwhile."""
    course = work / name
    config = [f"--CourseDirectory.root={course}", f"--CourseDirectory.source_directory={SOLUTIONS}",
              f"--CourseDirectory.db_url=sqlite:///{course / 'gradebook.db'}",
              f"--Execute.timeout={timeout}", "--log-level=ERROR"]
    sections = sorted({p.stem for p in submissions.rglob("*.ipynb")} & set(SECTIONS))
    for path in submissions.rglob("*.ipynb"):
        target = course / "submitted" / path.parent.name / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    nbgrader = [sys.executable, "-m", "nbgrader"]
    env = {**os.environ, "COURSE_ROOT": str(ROOT),  # the set-up cell finds the course there
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for section in sections:
        subprocess.run([*nbgrader, "generate_assignment", section, "--force", *config],
                       env=env, check=True, capture_output=True)
    start, load = time.perf_counter(), OtherLoad().start()
    for section in sections:
        # Exit code 1 is expected: the class holds notebooks nbgrader cannot grade.
        subprocess.run([*nbgrader, "autograde", section, "--force", *config], env=env,
                       capture_output=True)
    seconds, cores = time.perf_counter() - start, load.cores(everyone=True)
    return seconds, None, cores, _cpu_seconds(seconds, cores)


def ours(submissions, work, name, timeout, workers=None, scheduler=None, **options):
    """Seconds for `grader autograde` (`options`: GradingOptions' others), the seconds each notebook
    took, the cores kept busy and the CPU seconds spent."""
    start, load = time.perf_counter(), OtherLoad().start()
    results = autograde([submissions], work / name, GradingOptions(timeout=timeout, **options), workers=workers,
                        scheduler=scheduler, echo=lambda line: None)
    seconds, cores = time.perf_counter() - start, load.cores(everyone=True)
    return seconds, [r.seconds for r in results.values()], cores, _cpu_seconds(seconds, cores)


def on_dask(submissions, work, name, timeout, workers):
    """`ours` on a Dask cluster of `workers` processes of one thread on this machine."""
    from grader.cluster import local_cluster
    with local_cluster(workers) as cluster:
        return ours(submissions, work, name, timeout, scheduler=cluster.scheduler_address)


def _nothing(i):
    return i


def scheduler_seconds_per_task(workers, tasks=2000):
    """Seconds per task of a cluster of `workers` running tasks that do nothing: what Dask itself
    spends per notebook (scheduling, messages), measured, not assumed."""
    from distributed import Client
    from grader.cluster import local_cluster
    with local_cluster(workers) as cluster, Client(cluster) as client:
        client.gather(client.map(_nothing, range(100), pure=False))  # connections made, code shipped
        start = time.perf_counter()
        client.gather(client.map(_nothing, range(tasks), pure=False))
        return (time.perf_counter() - start) / tasks


CLASS_SIZE = 35_000  # notebooks: 5,000 students, 7 sections


def projection(cpu_per_notebook, per_task, start):
    """Hours to grade CLASS_SIZE notebooks on 10, 50 and 200 one-core workers: the notebooks' CPU
    shared by the workers, unless the scheduler, handing out one task at a time, is slower; plus
    the start of the workers' courses."""
    rows = []
    for workers in (10, 50, 200):
        grading = CLASS_SIZE * cpu_per_notebook / workers
        scheduling = CLASS_SIZE * per_task
        rows.append({"workers": workers, "notebooks' CPU per worker (h)": f"{grading / 3600:.2f}",
                     "scheduler, all tasks (h)": f"{scheduling / 3600:.3f}",
                     "class (h)": f"{(max(grading, scheduling) + start) / 3600:.2f}"})
    return rows


def _cpu_seconds(seconds, cores):
    """The processor time the whole machine spent during a run (/proc/stat): on a quiet machine,
    the work the run did, however many workers shared it. Not this process's own count of its
    children: a kernel's sandbox is killed at the end of a notebook, never waited for, and the
    time of a process nobody waits for is missing from that count."""
    return None if cores is None else seconds * cores


# --- costs paid once per run -----------------------------------------------------------------

def once_per_run(section):
    """{what: seconds} for the fixed costs of a grading run."""
    from grader import nbconfig
    from grader.course import release_notebook
    seconds = {}
    start = time.perf_counter()
    nbconfig.alembic_head_by_command()
    seconds["schema version, from the alembic command (nbgrader)"] = time.perf_counter() - start
    start = time.perf_counter()
    nbconfig.alembic_head()
    seconds["schema version, read in-process (grader)"] = time.perf_counter() - start
    seconds.update(checks(release_notebook(section), section))
    return seconds


def checks(notebook, section, repeats=3):
    """{what: seconds} of `python -m grader check` as a student types it: in its own process with
    warm and fresh kernels, then the first check (which starts the warm check server) and the median
    of `repeats` checks the server answers. The servers live in a runtime folder of their own."""
    from grader import check_server
    seconds = {}
    saved = os.environ.get("XDG_RUNTIME_DIR")
    with tempfile.TemporaryDirectory() as runtime:
        os.environ["XDG_RUNTIME_DIR"] = runtime

        def check(*extra):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "grader", "check", *extra, str(notebook)], cwd=ROOT, check=True,
                           capture_output=True)
            return time.perf_counter() - start
        try:
            seconds[f"`grader check` of the {section} release, in its own process, warm kernel"] = check("--no-server")
            seconds[f"`grader check` of the {section} release, in its own process, fresh kernel"] = \
                check("--no-server", "--fresh-kernels")
            seconds[f"`grader check` of the {section} release, the first: starts the check server"] = check()
            seconds[f"`grader check` of the {section} release, answered by the check server (median of {repeats})"] = \
                statistics.median(check() for _ in range(repeats))
        finally:
            check_server.stop()
            os.environ.pop("XDG_RUNTIME_DIR")
            if saved is not None:
                os.environ["XDG_RUNTIME_DIR"] = saved
    return seconds


# --- where the time of one notebook goes ------------------------------------------------------

def kernel_start(warm, sandboxed, times=3):
    """Median seconds from asking for a grading course's kernel to its first reply."""
    from jupyter_client.manager import KernelManager
    from grader.notebook_grader import NotebookGrader
    course = NotebookGrader(options=GradingOptions(warm=warm, sandboxed=sandboxed))
    if course.kernels:
        course.kernels.wait()
    seconds = []
    for _ in range(times):
        start = time.perf_counter()
        manager = KernelManager(kernel_name=course.api.config.Execute.kernel_name, transport="ipc",
                                ip=str(course.folder / "sockets" / "k"))
        manager.start_kernel(extra_arguments=course.api.config.Execute.extra_arguments)
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=120)
        seconds.append(time.perf_counter() - start)
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    course.close()
    return statistics.median(seconds)


def host_speedup(workers, work=20_000_000, tries=3):
    """How much faster `workers` processes of pure computation (no grading, no I/O) finish than
    one doing the same work each, one after the other: the most this host's cores can give `workers`
    grading workers. A host whose cores contend (shared or throttled) gives less than `workers`.
    The median of `tries`: one try on a shared host ranged from 1.5x to 2.5x within a minute."""
    command = [sys.executable, "-c", f"sum(i * i for i in range({work}))"]

    def seconds(processes):
        start = time.perf_counter()
        for process in [subprocess.Popen(command) for _ in range(processes)]:
            process.wait()
        return time.perf_counter() - start
    return statistics.median(workers * seconds(1) / seconds(workers) for _ in range(tries))


def _cell_seconds(cell):
    timing = cell.metadata.get("execution", {})
    if "iopub.execute_input" not in timing or "shell.execute_reply" not in timing:
        return 0.0
    started, ended = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                      for k in ("iopub.execute_input", "shell.execute_reply"))
    return (ended - started).total_seconds()


class _Timed:
    """Seconds spent in calls of `owner.name` (and how many) while in a `with` block."""

    def __init__(self, owner, name):
        self.owner, self.name, self.seconds, self.calls = owner, name, 0.0, 0

    def __enter__(self):
        self.original = getattr(self.owner, self.name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1
        setattr(self.owner, self.name, timed)
        return self

    def __exit__(self, *exc):
        setattr(self.owner, self.name, self.original)


def breakdown(warm, timeout, sections=SECTIONS, sandboxed=True):
    """A row per section: the phases of grading its solution notebook. The judge's seconds (its
    second run of each check, in the grader, hidden tests included) are split into its requests to
    the kernel (each a cell the kernel runs: the student's code on the check's inputs) and its own
    work; the rest is nbgrader's and the grader's (reading, preprocessing, gradebook, writing)."""
    import nbformat
    from grader import judge, probe
    from grader.notebook_grader import NotebookGrader
    from grader.setup_cell import TAG
    start_kernel = kernel_start(warm, sandboxed)
    rows = []
    for section in sections:
        course = NotebookGrader(options=GradingOptions(timeout=timeout, warm=warm, sandboxed=sandboxed))
        course.register(section)  # registration is paid once per class, not per notebook
        if course.kernels:
            course.kernels.wait()
        with _Timed(judge, "judge") as judged, _Timed(probe.Link, "request") as requests:
            started = time.perf_counter()
            result = course.grade(SOLUTIONS / section / f"{section}.ipynb")
            graded = time.perf_counter()
        course.feedback_html(section)
        finished = time.perf_counter()
        notebook = nbformat.read(course.folder / "autograded" / "self" / section / f"{section}.ipynb",
                                 as_version=4)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        first = next(i for i, c in enumerate(code) if TAG in c.metadata.get("tags", []))
        imports = sum(_cell_seconds(c) for c in code[first:first + 2])  # set-up, then the imports
        checks = sum(_cell_seconds(c) for c in code if is_check_cell(c))  # the visible checks
        cells = sum(_cell_seconds(c) for c in code) - imports - checks
        course.close()
        rows.append({"section": section, "kernel start": start_kernel, "set-up and imports": imports,
                     "other cells": cells, "check cells, the kernel's run": checks,
                     "the judge's requests to the kernel": requests.seconds,
                     "requests": requests.calls, "the judge's own": judged.seconds - requests.seconds,
                     "the rest (nbgrader, grader)": graded - started - start_kernel - imports - cells - checks
                     - judged.seconds,
                     "feedback": finished - graded, "total": finished - started,
                     "score": f"{result.score:g}/{result.max_score:g}"})
    return rows


def _fmt(rows):
    return [{k: f"{v:.1f}" if isinstance(v, float) else v for k, v in row.items()} for row in rows]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", help="comma-separated ids (default: the whole sample class)")
    parser.add_argument("--sections", help="comma-separated sections (default: all)")
    parser.add_argument("--timeout", type=int, default=SAMPLE_CLASS.timeout,
                        help=f"seconds a cell may run (default {SAMPLE_CLASS.timeout}, as `make demo`)")
    parser.add_argument("--workers", type=int, default=os.cpu_count(), help="'all cores' (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=1, help="times 1 worker and all cores take turns "
                        "(default 1)")
    parser.add_argument("--skip-breakdown", action="store_true", help="only time the class")
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    parser.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file --write updates")
    args = parser.parse_args(argv)
    students = set(args.students.split(",")) if args.students else None
    sections = set(args.sections.split(",")) if args.sections else None

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        submissions = work / "class"
        count = pick_class(submissions, students, sections)
        print(f"{count} notebooks; timeout {args.timeout} s per cell")
        one, many = "grader, 1 worker", f"grader, {args.workers} workers"
        dask = f"grader, {args.workers} Dask workers"
        plan = [("grader, 1 worker, fresh kernels", {"workers": 1, "warm": False}),
                (f"{many}, no sandbox", {"workers": args.workers, "sandboxed": False})]
        plan += [(PLAIN, None), (one, {"workers": 1}), (many, {"workers": args.workers}), (dask, None)] * args.rounds
        rounds, host = {}, []
        for turn, (name, options) in enumerate(plan):
            if name == PLAIN:  # each round
                host.append(host_speedup(args.workers))
            folder_name = f"{turn}_" + name.replace(" ", "_").replace(",", "")
            measured = (plain_nbgrader(submissions, work, args.timeout, folder_name) if name == PLAIN else
                        ours(submissions, work, folder_name, args.timeout, **options) if options is not None
                        else on_dask(submissions, work, folder_name, args.timeout, args.workers))
            rounds.setdefault(name, []).append(measured)
            print(f"{name}: {rounds[name][-1][0]:.0f} s")
        per_task = scheduler_seconds_per_task(args.workers)
    speedups = [a[0] / b[0] for a, b in zip(rounds[one], rounds[many])]
    # against plain nbgrader of the same round: the host's speed drifts over the hour this takes
    against_plain = {name: statistics.median(p[0] / m[0] for p, m in zip(rounds[PLAIN], rounds[name]))
                     for name in (one, many, dask)}
    plains = rounds.pop(PLAIN)
    runs = {PLAIN: (statistics.median(m[0] for m in plains), None, statistics.median(m[2] for m in plains),
                    statistics.median(m[3] for m in plains))}
    overheads = [d[0] / b[0] for b, d in zip(rounds[many], rounds[dask])]
    workers = {name: args.workers if name.startswith((many, dask)) else 1 for name in rounds}
    for name, measured in rounds.items():  # each column's median over the rounds
        summed = [sum(m[1]) for m in measured]
        runs[name] = (statistics.median(m[0] for m in measured), [s for m in measured for s in m[1]],
                      statistics.median(m[2] for m in measured), statistics.median(m[3] for m in measured),
                      statistics.median(summed),
                      statistics.median(m[0] - total / workers[name] for m, total in zip(measured, summed)))

    plain = runs[PLAIN][0]
    rows = []
    for name, (seconds, per_notebook, cores, cpu, *split) in runs.items():
        against_one = statistics.median(speedups) if name == many else runs[one][0] / seconds
        rows.append({"configuration": name, "class seconds": f"{seconds:.0f}",
                     "cores busy": "" if cores is None else f"{cores:.2f}", "CPU seconds": "" if cpu is None else f"{cpu:.0f}",
                     "notebooks' seconds, summed": f"{split[0]:.0f}" if split else "",
                     "outside notebooks": f"{split[1]:.1f}" if split else "",
                     "seconds per notebook": f"{seconds / count:.1f}",
                     "median notebook (one worker's view)": f"{statistics.median(per_notebook):.1f}"
                     if per_notebook else "",
                     "vs plain nbgrader": f"{against_plain.get(name, plain / seconds):.2f}x",
                     "vs 1 worker": f"{against_one:.2f}x"})
    turns = ", ".join(f"{a[0]:.0f} s / {b[0]:.0f} s = {ratio:.2f}x"
                      for a, b, ratio in zip(rounds[one], rounds[many], speedups))
    body = [f"### Grading the sample class ({count} notebooks, cell timeout {args.timeout} s)", "",
            table(rows, list(rows[0])), "",
            f"{args.rounds} round(s) of 1 worker then {args.workers} workers, each round's speed-up: "
            f"{turns}. Their rows give the median of the rounds (the speed-up: the median of the "
            "rounds' speed-ups).", "",
            "Plain nbgrader runs first in each round, and a configuration of the rounds is compared "
            "with the plain nbgrader of its own round (the median of the rounds' ratios): an hour "
            "of a shared host is not one speed. Against plain nbgrader, each round's "
            f"{args.workers} workers: " + ", ".join(f"{p[0]:.0f} s / {m[0]:.0f} s = {p[0] / m[0]:.2f}x"
                                                    for p, m in zip(plains, rounds[many])) + ".", "",
            f"This host's own speed-up on {args.workers} processes of pure computation, measured before "
            f"each round's plain nbgrader run (bench/grading.py host_speedup, the median of 3 tries): "
            + ", ".join(f"{h:.2f}x" for h in host) + f"; the median {statistics.median(host):.2f}x. "
            f"No grading on {args.workers} workers can beat it; a host whose cores contend gives less than "
            f"{args.workers}x.", "",
            "Seconds per notebook is the class time divided by the notebooks (what an instructor waits); "
            "the median is the time one worker spent on a notebook, feedback page included. Notebooks "
            "that loop forever cost the timeout in every configuration. Cores busy is the average "
            "number of cores the whole machine kept busy during the run (/proc/stat). CPU seconds are "
            "the processor time the whole machine spent during the run (cores busy times class "
            "seconds; on a quiet machine, the run's own: grader, workers, kernels, warm-kernel "
            "servers): the work done, however many workers share it.", "",
            "Where a speed-up of 2 workers falls short of 2: the notebooks' seconds, summed over both "
            "workers, grow when two notebooks share the machine (each waits for a core now and then), "
            "and what is outside notebooks (class seconds minus the summed seconds per worker: the "
            "start, mostly the warm-kernel server's imports, the end, and a worker idle while the "
            "other finishes its last notebook) is not shared at all.", "",
            f"### Grading on a Dask cluster ({args.workers} workers on this machine, then a class of "
            f"{CLASS_SIZE:,} notebooks)", "",
            "Each round's Dask run against the local pool's: "
            + ", ".join(f"{d[0]:.0f} s / {b[0]:.0f} s = {ratio:.3f}" for b, d, ratio in zip(rounds[many], rounds[dask], overheads))
            + f"; Dask's overhead, the median: {100 * (statistics.median(overheads) - 1):+.1f}% (at most +10% wanted).",
            "", f"Dask's own seconds per task, {args.workers} workers running 2,000 tasks that do nothing: "
            f"{per_task * 1000:.2f} ms.", ""]
    cpu_per_notebook = runs[dask][3] / count
    start = runs[dask][5]
    body += [table(projection(cpu_per_notebook, per_task, start), ["workers", "notebooks' CPU per worker (h)",
                                                                  "scheduler, all tasks (h)", "class (h)"]), "",
             f"From this run: {cpu_per_notebook:.2f} CPU seconds per notebook (the Dask runs' whole-machine CPU "
             f"seconds over {count} notebooks: the sample class's mix, broken and endless ones included), "
             f"{per_task * 1000:.2f} ms of Dask per task, and {start:.0f} s outside notebooks (the workers' "
             "courses starting, the last notebook alone). Each worker is taken to have a core of this "
             "machine's speed, and the scheduler to hand out one task at a time; the instructor's "
             "machine writes each result into the class folder meanwhile, a few milliseconds each "
             "(outside notebooks here)."]
    if not args.skip_breakdown:
        for warm, sandboxed in ((False, True), (True, True), (False, False), (True, False)):
            detail = breakdown(warm, args.timeout, [s for s in SECTIONS if not sections or s in sections], sandboxed)
            kind = ("warm kernels (forked)" if warm else "fresh kernels") + ("" if sandboxed else ", no sandbox")
            body += ["", f"### One notebook, {kind}: where the seconds go (each section's solution)", "",
                     table(_fmt(detail), list(detail[0])), ""]
            mean = statistics.mean(r["total"] for r in detail)
            body.append(f"Mean seconds per graded notebook, {kind}: {mean:.1f}.")
            runs[f"breakdown {kind}"] = (mean,)
        first = next(s for s in SECTIONS if not sections or s in sections)
        fixed = once_per_run(first)
        body += ["", "### Paid once per run", "",
                 table([{"what": k, "seconds": f"{v:.1f}"} for k, v in fixed.items()], ["what", "seconds"]),
                 "", "A new gradebook needs the schema version; `grader check` makes one for every "
                 "notebook it checks, and `grader autograde` one per run. The check times include "
                 "starting Python, registering the section and grading the notebook; a check the "
                 "warm server answers pays only for starting Python and grading the notebook "
                 "(under 5 s wanted)."]
        runs.update({k: (v,) for k, v in fixed.items()})
    text = "\n".join(body)
    print(text)
    if args.write:
        write_section(__file__, text, MEASURED, path=args.benchmarks)
    return {name: measured[0] for name, measured in runs.items()}


if __name__ == "__main__":
    main()
