"""Shared fixtures (where the course and the shared Banking77 copy are) and the order of tests."""

import hashlib
import json
import locale
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def banking77_dir():
    """The read-only Banking77 copy beside the project (../shared/data/banking77), or $BANKING77_DIR."""
    folder = Path(os.environ.get("BANKING77_DIR", ROOT.parent / "shared" / "data" / "banking77"))
    if not (folder / "train.csv").is_file():
        pytest.fail(f"Banking77 copy not found at {folder}; set BANKING77_DIR to a folder with "
                    "train.csv and test.csv")
    return folder


@pytest.fixture(scope="session", autouse=True)
def own_check_servers(tmp_path_factory):
    """The warm servers behind `grader check` that this session starts, the instructor's
    (grader/check_server.py) and the student edition's (grader/edition/main.py, under any
    platform's Python), live in a runtime folder of its own, never the user's, and stop when the
    session ends."""
    from grader import check_server
    from grader.edition import main as edition_check
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("runtime"))
    try:
        yield
    finally:
        try:
            check_server.stop()
            edition_check.stop_servers()
        finally:
            if saved is None:
                os.environ.pop("XDG_RUNTIME_DIR")
            else:
                os.environ["XDG_RUNTIME_DIR"] = saved


# A class graded by an earlier run on this machine (kept_grading): autograde grades again only what
# changed, by each notebook's SHA-256 and its section's grading fingerprint (grading_versions).
KEPT = Path(os.environ.get("COURSE_KEPT_GRADING", Path.home() / ".cache" / "transformer-block-course" / "graded"))


def _this_cpu():
    """A digest of this machine's CPU (model and flags): what is graded on one CPU is not taken
    for another's."""
    lines = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []
    wanted = sorted({line for line in lines if line.startswith(("model name", "flags"))})
    return hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:12]


@pytest.fixture(scope="session")
def kept_grading():
    """`kept_grading(name, inputs, out, **options)`: grader.autograde.autograde(inputs, out,
    **options), started from the outputs that the last run under `name` left on this machine.

    autograde skips a notebook already graded with the same bytes, by a grader whose fingerprint
    for its section is the same (grader.fingerprint.grading_versions: the solution, its checks and
    those they import, the rest of the grader, ticketnet.py, the data, the options and the versions
    of Python and the libraries): the result it
    keeps is the one this run would compute. So a change to one section grades that section's
    notebooks again, and a change to the grader grades them all. Results of notebooks no longer
    handed in are dropped first. Returns (results, the lines echoed)."""
    from grader import autograde

    def grade(name, inputs, out, **options):
        kept = KEPT / f"{name}-{_this_cpu()}"
        if (kept / "results.json").is_file():
            shutil.copytree(kept, out, dirs_exist_ok=True)
            handed_in = {f"{s.student}/{s.path.name}" for s in autograde.collect(inputs)}
            results = json.loads((out / "results.json").read_text())
            (out / "results.json").write_text(json.dumps({k: v for k, v in results.items() if k in handed_in}))
        lines = []
        results = autograde.autograde(inputs, out, echo=lines.append, **options)
        _keep_whole(kept, lambda partial: shutil.copytree(out, partial, ignore=shutil.ignore_patterns("unpacked")))
        return results, lines
    return grade


def _keep_whole(kept, write):
    """Put in place of the folder `kept` what `write(folder)` writes, whole or not at all: a run
    killed midway leaves the last complete one."""
    partial = kept.with_name(f"{kept.name}.{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    write(partial)
    shutil.rmtree(kept, ignore_errors=True)
    partial.rename(kept)


def keep_run(name, key, folder, run):
    """`run()`, which writes into `folder`, or, when the last run under `name` on this machine had
    the same `key`, what it left in `folder` and returned (JSON) put back instead. `key` must hold
    everything the run's result depends on: for a grading, grader.fingerprint.grading_versions and
    the bytes of the notebooks it grades. It may be a function of what a run returned, for a run
    that returns what it read: the kept run is read back when `key(what it returned)` is still its
    key."""
    kept = KEPT / f"{name}-{_this_cpu()}"
    if (kept / "key.txt").is_file():
        returned = json.loads((kept / "returned.json").read_text())
        if (key(returned) if callable(key) else key) == (kept / "key.txt").read_text():
            shutil.copytree(kept / "folder", folder, dirs_exist_ok=True)
            return returned
    returned = run()

    def write(partial):
        shutil.copytree(folder, partial / "folder")
        (partial / "returned.json").write_text(json.dumps(returned))
        (partial / "key.txt").write_text(key(returned) if callable(key) else key)
    _keep_whole(kept, write)
    return returned


@pytest.fixture(scope="session")
def kept_run():
    """keep_run, as a fixture."""
    return keep_run


# What tools write after measuring the checkout, never read by a test run as its input: a new
# mutation score or benchmark table must not run the platforms' passes again
RECORDS = ("MUTATION.md", "BENCHMARKS.md")
READ_TRACE = ROOT / "tests" / "read_trace"


def checkout_files(root=ROOT):
    """The checkout's files, paths from `root`: every file git tracks, and the untracked ones it
    does not ignore, but RECORDS; None outside a git checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=root, capture_output=True)
    if listed.returncode != 0:
        return None
    return sorted(name for name in listed.stdout.decode().split("\0")
                  if name and name not in RECORDS and (root / name).is_file())


def tracing_reads(log, root=ROOT):
    """The environment under which a run, and every Python process it starts, writes into the
    folder `log` which files under `root` it opens (tests/read_trace; read them with files_read)."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(READ_TRACE), os.environ.get("PYTHONPATH")])),
            "COURSE_READS_LOG": str(log), "COURSE_READS_ROOT": str(root)}


def files_read(log, root=ROOT):
    """The checkout's files (checkout_files) that a run traced into `log` opened; a compiled module
    (__pycache__/NAME.*.pyc) counts as its source NAME.py."""
    opened = set()
    for record in Path(log).glob("*.txt"):
        for line in record.read_text().splitlines():
            path = Path(line)
            if path.parent.name == "__pycache__":
                path = path.parent.parent / f"{path.name.split('.')[0]}.py"
            opened.add(path.relative_to(root).as_posix())
    return sorted(opened.intersection(checkout_files(root) or ()))


def checkout_state(root=ROOT):
    """{path: SHA-256} of the checkout's files (checkout_files); None outside a git checkout."""
    files = checkout_files(root)
    return None if files is None else {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in files}


def reads_digest(reads, state):
    """A digest of what a run that opened the files `reads` (files_read) finds in the checkout whose
    state (checkout_state) was `state` when it started: the bytes of each of those files, and the
    names of the checkout's files outside tests/ (a file added, moved or removed can change what
    the run opens). A change to a file the run did not open, or to a test file it did not open,
    leaves it as it was."""
    digest = hashlib.sha256()
    for name in sorted(state):
        if not name.startswith("tests/"):
            digest.update(name.encode() + b"\0")
    for name in reads:
        digest.update(f"{name}={state.get(name, 'gone')}".encode() + b"\0")
    return digest.hexdigest()[:16]


# --- tests marked `kept`: run in a pytest of their own, kept by what they read -----------------

KEPT_INNER = "COURSE_KEPT_INNER"  # set in the pytest of its own, which runs the test's body
# What a grading kernel in its sandbox may read, where no trace reaches (the sandbox clears the
# environment): always counted as read
SANDBOX_READS = ("ticketnet.py", "requirements.txt", "solutions/", "notebooks/", "data/")
# The environment a test's result can depend on beyond the files it reads
KEPT_SETTINGS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ATEN_CPU_CAPABILITY", "MKL_CBWR", "NBGRADER_EXECUTION",
                 "BANKING77_DIR", "CI")


def banking77_digest(folder):
    """{file name: SHA-256} of the Banking77 copy in `folder`."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(folder).glob("*.csv"))}


def this_environment():
    """What a test's result depends on besides the checkout: the interpreter's version, every
    installed distribution's version, Banking77's bytes and the settings of KEPT_SETTINGS. No path
    into the checkout (.venv is one): CI's next clone lies elsewhere."""
    import importlib.metadata
    return {"python": sys.version,
            "packages": sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()),
            "banking77": banking77_digest(os.environ.get("BANKING77_DIR") or ROOT.parent / "shared" / "data" / "banking77"),
            "settings": {k: os.environ.get(k) for k in KEPT_SETTINGS}}


def keep_traced(name, what, run, settings, root=ROOT, always=()):
    """`run(env)`, a process (subprocess.CompletedProcess) run with the settings `env` that trace
    its reads (tracing_reads), or the record of its last pass on this machine and CPU (keep_run)
    when nothing it depends on has changed: the bytes of every file of the checkout under `root`
    it opened and of those whose paths start with one of `always`, the files outside tests/
    (reads_digest), and `settings`. The checkout is hashed before the run: what it read is what
    the files held then. A run that fails (`what` names it) is never kept. Returns (what the run
    printed, whether it ran)."""
    state = checkout_state(root)
    with tempfile.TemporaryDirectory() as scratch:
        log, folder = Path(scratch) / "reads", Path(scratch) / "kept"
        log.mkdir()
        folder.mkdir()
        ran = []

        def passed():
            done = run(tracing_reads(log, root))
            if done.returncode != 0:
                pytest.fail(f"{what}, exit {done.returncode}:\n{done.stdout[-8000:]}{done.stderr[-2000:]}", pytrace=False)
            ran.append(True)
            return {"printed": done.stdout, "reads": files_read(log, root)}
        if state is None:  # not a git checkout: nothing says what changed
            return passed()["printed"], True
        always_read = [path for path in state if path.startswith(always)] if always else []

        def key(returned):
            reads = returned.get("reads") if isinstance(returned, dict) else None
            return reads is not None and json.dumps(
                {"checkout": reads_digest(sorted({*reads, *always_read}), state), **settings}, sort_keys=True)
        return keep_run(name, key, folder, passed)["printed"], bool(ran)


def run_kept(nodeid, root=ROOT, environment=this_environment):
    """The test `nodeid` run by a pytest of its own under `root`, or read back as passed
    (keep_traced) while its reads, SANDBOX_READS and `environment()` are as they were. Returns
    whether the test ran."""
    def run(trace):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", nodeid], cwd=root,
                              env={**env, **trace, KEPT_INNER: "1"}, capture_output=True, text=True)
    # named by the test alone: a clone elsewhere reads back what this one kept
    _, ran = keep_traced("kept-" + hashlib.sha256(nodeid.encode()).hexdigest()[:16], f"{nodeid}, run by a pytest of its own",
                         run, {"test": nodeid, **environment()}, root=root, always=SANDBOX_READS)
    return ran


def pytest_pyfunc_call(pyfuncitem):
    """A test marked `kept` runs in a pytest of its own, or is read back (run_kept); in that pytest,
    and in a run that names no git checkout, it runs here as any other."""
    if pyfuncitem.get_closest_marker("kept") is None or os.environ.get(KEPT_INNER):
        return None
    run_kept(pyfuncitem.nodeid)
    return True


@pytest.fixture(scope="session", autouse=True)
def checks_recorded_before_mutants():
    """Under mutmut, record the checks' results (grader.recordings.kernel_references) from the code as
    written before any test grades. A mutant of the recordings would record them under another
    state, or wrongly, and keep them for every later mutant; the recording's child process would
    run the mutant too, with MUTANT_UNDER_TEST inherited, or fail on mutmut's call counting. So
    neither this process (mutmut keeps the mutant's name in it as well) nor the child runs one."""
    mutant = os.environ.pop("MUTANT_UNDER_TEST", None)
    if mutant is None:
        return
    from mutmut.mutation.trampoline import set_mutant_under_test
    set_mutant_under_test(None)
    try:
        from grader import recordings
        recordings.kernel_references()
    finally:
        set_mutant_under_test(mutant)  # and MUTANT_UNDER_TEST again


@pytest.fixture
def ascii_locale():
    """`with ascii_locale():` runs its body in the C locale. Python reads a file in the locale's
    encoding unless told otherwise: in the C locale that is ASCII, as on Windows it is cp1252."""
    @contextmanager
    def switched():
        old = locale.setlocale(locale.LC_CTYPE)
        locale.setlocale(locale.LC_CTYPE, "C")
        try:
            yield
        finally:
            locale.setlocale(locale.LC_CTYPE, old)
    return switched


@pytest.fixture
def processes_named():
    """`processes_named(name)`: the pids of live processes named `name`. A sandboxed kernel names
    itself (prctl PR_SET_NAME) to be found from outside, where its own pid means nothing."""
    def named(name):
        found = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if (proc / "comm").read_text().strip() == name and (proc / "stat").read_text().split()[2] != "Z":
                    found.append(int(proc.name))
            except OSError:
                continue
        return found
    return named


# The scopes (a module, or a class of one) that take longest, longest first, from the durations
# of a full `make test` (2 cores; a cold kept grading for the catalogue and the sample class). The
# parallel suite hands out whole scopes in the order they were collected (--dist loadscope
# --no-loadscope-reorder, the Makefile's PYTEST_ARGS): started first, the longest end with the
# rest, instead of one core running the last of them alone.
LONGEST_FIRST = (
    "tests/test_tamper.py", "tests/test_catalogue_nbgrader.py", "tests/test_bench.py",
    "tests/test_platforms.py::TestReleaseAloneOnKaggle", "tests/test_platforms.py::TestReleaseAloneOnColab",
    "tests/test_platforms.py::TestReleaseAloneOnNewest", "tests/test_cluster.py", "tests/test_grader.py",
    "tests/test_class_folder.py", "tests/test_release_alone.py", "tests/test_browser.py", "tests/test_replay.py",
    "solutions/06-tiny-transformer", "solutions/07-banking77",
)


def _longest_first(item):
    """The place of `item`'s scope in LONGEST_FIRST; the others after, as collected."""
    for place, scope in enumerate(LONGEST_FIRST):
        if item.nodeid == scope or item.nodeid.startswith((f"{scope}::", f"{scope}/")):
            return place
    return len(LONGEST_FIRST)


def _own_tests(mutant):
    """The test file of the module a mutmut mutant is in (grader.recordings.x_recorded__mutmut_5:
    tests/test_recordings.py), or None outside a mutation run."""
    return mutant and f"tests/test_{mutant.split('.x')[0].split('.')[-1]}.py"


def pytest_collection_modifyitems(config, items):
    """Spread over the cores (a pytest-xdist worker), the longest scopes go first. Otherwise the
    tests marked `nbgrader` (they grade notebooks in kernels, seconds each) run after the others,
    and in a mutation run (`make mutation`) the mutated module's own tests before all: the run
    stops at a mutant's first failing test, and a quick test that catches it spares the slow ones
    (and those that reach what it breaks: a mutant of the recordings' state records the checks'
    results again, a minute, in every test that grades)."""
    if hasattr(config, "workerinput"):
        items.sort(key=_longest_first)
    else:
        own = _own_tests(os.environ.get("MUTANT_UNDER_TEST"))
        items.sort(key=lambda item: (item.get_closest_marker("nbgrader") is not None,
                                     item.nodeid.split("::")[0] != own))
