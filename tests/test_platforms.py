"""The course under each platform's own versions, not only under our pins.

On Colab and Kaggle the set-up cell installs only what is missing, so the course runs on their
Python and libraries; a student who installs today gets the newest releases. platforms/ is the
one place that says which platforms exist: each platforms/NAME.in names its versions, where they
come from, its Python (`# python: X.Y`) and the module its kernel holds (`# platform module:`),
and platforms/NAME.txt locks it. `make test` builds one environment per lock and sets
PLATFORM_PYTHONS ("NAME=/path/to/python ..."); the tests of each platform (two classes, the
release notebooks alone being the longest, so that the parallel suite spreads them over its
workers) run the course in it: every solution
notebook clean, every catalogue entry with the verdict and message it gets under our pins, the
edition's own check, and every release notebook opened alone in an empty folder, fetched by its
set-up cell, untouched and with the model answers written in. The supported range
(grader.course.SUPPORTED) runs from the oldest platform's versions to the newest, and every
notebook's set-up cell checks it.
"""

import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import (banking77_digest, checkout_files, checkout_state, files_read, keep_traced, reads_digest,
                      tracing_reads)
from grader import course, publish
from grader.course import SECTIONS, SUPPORTED, solution_notebook
from test_edition import assert_model_answers_pass_the_editions_check
from test_environment import pins

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = ("torch", "numpy", "pandas", "matplotlib", "scikit-learn")


def _header(name, field):
    found = re.search(rf"^# {field}: *(\S+)", (ROOT / "platforms" / f"{name}.in").read_text(), re.M)
    assert found, f"platforms/{name}.in has no line '# {field}: ...'"
    return found[1]


PLATFORMS = sorted(path.stem for path in (ROOT / "platforms").glob("*.in"))
PYTHON_OF = {name: _header(name, "python") for name in PLATFORMS}
MODULE_OF = {name: "" if _header(name, "platform module") == "none" else _header(name, "platform module")
             for name in PLATFORMS}


def _release(version):
    return course._release(version)


def test_the_platforms_are_kaggle_colab_and_the_newest_releases_each_locked():
    assert PLATFORMS == ["colab", "kaggle", "newest"]
    assert MODULE_OF == {"colab": "google.colab", "kaggle": "kaggle_secrets", "newest": ""}
    for name in PLATFORMS:
        locked = pins(ROOT / "platforms" / f"{name}.txt")
        for requirement in (ROOT / "platforms" / f"{name}.in").read_text().splitlines():
            spec = requirement.split("#")[0].strip()
            if "==" in spec:
                package, _, version = spec.partition("==")
                assert locked.get(package) == version, f"platforms/{name}.txt does not pin {spec} as {name}.in does"


def test_the_supported_range_runs_from_the_oldest_platform_to_the_newest():
    every = {name: pins(ROOT / "platforms" / f"{name}.txt") for name in PLATFORMS}
    every["our pins"] = pins(ROOT / "requirements.txt")
    for library in LIBRARIES:
        versions = sorted((found[library] for found in every.values()), key=_release)
        assert SUPPORTED[library] == (versions[0], versions[-1]), library
    pythons = sorted([*PYTHON_OF.values(), "3.11"], key=_release)  # our pins are made on 3.11
    assert SUPPORTED["python"] == (pythons[0], pythons[-1])


def test_the_readme_states_the_supported_range():
    readme = (ROOT / "README.md").read_text()
    for name, (oldest, newest) in SUPPORTED.items():
        assert re.search(rf"\| {re.escape(name)} \| {re.escape(oldest)} \| {re.escape(newest)} \|", readme), \
            f"README.md's table of supported versions lacks | {name} | {oldest} | {newest} |"


def test_a_library_older_than_the_oldest_platform_stops_the_set_up_cell_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(course, "installed_versions",
                        lambda: {"python": "3.12.13", "pandas": "2.1.4", "torch": "2.10.0+cpu"})
    with pytest.raises(RuntimeError) as stopped:
        course.check_versions()
    assert str(stopped.value) == ("Too old for this course: pandas 2.1.4 (the course needs 2.2.2 or "
                                  "newer). Upgrade, then restart the kernel.")
    monkeypatch.setattr(course, "installed_versions", lambda: {"python": "3.14.0", "numpy": "2.6.0"})
    course.check_versions()
    assert capsys.readouterr().out == ("Newer than this course was tested with: python 3.14.0 (tested "
                                       "up to 3.13); numpy 2.6.0 (tested up to 2.5.5).\n")


def test_within_the_range_the_set_up_cell_says_nothing(capsys):
    for name, (oldest, newest) in SUPPORTED.items():
        assert course.unsupported({name: oldest}) == course.unsupported({name: newest}) == ([], [])
    assert course.unsupported({"python": "3.12.13", "torch": "2.10.0+cpu", "numpy": "2.0.2"}) == ([], [])
    course.check_versions()  # this environment: our pins
    assert capsys.readouterr().out == ""


def _run(python, *args, timeout=1800, env=None):
    return subprocess.run([python, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})


# What a run of the course's tests under a platform's Python reads besides the checkout: the
# platform's interpreter (its libraries are the lock's, a file of the checkout), git (the set-up
# cell clones the edition with it), the CPU, Banking77 and the settings below.
SETTINGS = ("OMP_NUM_THREADS", "ATEN_CPU_CAPABILITY", "MKL_CBWR", "NBGRADER_EXECUTION")


def kept_pass(banking77_dir, name, python, run, edition=None):
    """`run(env)`, a platform's pytest of the checkout under the settings `env`, or the record of
    its last pass on this machine when nothing it read has changed since (conftest.keep_traced):
    the files of the checkout it opened, the student `edition` it fetched, the platform's
    interpreter, git, Banking77 and SETTINGS. A change to what the platform's run never opens (the
    class tools, the README, the benchmarks) runs none of the passes again. A run that fails is
    never kept: it runs again next time. Returns the run's output."""
    settings = {
        "edition": edition and edition_digest(edition),
        "python": _run(python, "-c", "import sys; print(sys.executable, sys.version)").stdout,
        "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout,
        "banking77": banking77_digest(banking77_dir),
        "settings": {k: os.environ.get(k) for k in SETTINGS}}
    return keep_traced(name, name, run, settings)[0]


def edition_digest(folder):
    """A digest of a published student edition's files (not its git history, nor the commit of the
    checkout it was built from, which EDITION.json names and no notebook reads)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.relative_to(folder).parts):
        data = path.read_bytes()
        if path.relative_to(folder).as_posix() == publish.MANIFEST:
            data = json.dumps({k: v for k, v in json.loads(data).items() if k != "built from"}, sort_keys=True).encode()
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


@pytest.fixture(scope="session")
def edition(tmp_path_factory):
    """A student edition published here, under our pins: publishing needs nbgrader, which the
    platforms lack, so the edition comes from our pins, as in real life."""
    folder = tmp_path_factory.mktemp("edition") / "course-student"
    publish.publish(folder)
    return folder


def test_a_kept_pass_is_read_back_only_while_nothing_the_run_read_has_changed(tmp_path):
    """The key of kept_pass. A traced run (tests/read_trace) records the checkout's files that it
    and the Python processes it starts open, a module imported from its compiled file included.
    Their digest changes with any of them, or with a file added outside tests/; not with a file the
    run never opened (the README, another test), nor with the records of measurements."""
    repo, plain = tmp_path / "checkout", tmp_path / "plain"
    plain.mkdir()
    run = ("import subprocess, sys\nsys.path.insert(0, '.')\nimport ticketnet\nopen('data.csv').read()\n"
           "open('MUTATION.md').read()\nsubprocess.run([sys.executable, '-c', 'import helper'], cwd='lib', check=True)\n")
    for name, text in [("ticketnet.py", "a = 1\n"), ("lib/helper.py", "b = 1\n"), ("data.csv", "x\n"),
                       ("tests/test_alone.py", run), ("tests/test_other.py", "y = 1\n"), ("MUTATION.md", "92%\n"),
                       ("README.md", "one\n"), ("unread.py", "c = 1\n")]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)

    def traced():
        log = Path(tempfile.mkdtemp(dir=tmp_path))
        subprocess.run([sys.executable, "tests/test_alone.py"], cwd=repo, check=True,
                       env={**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                            **tracing_reads(log, root=repo)})
        return files_read(log, root=repo)
    reads = traced()
    assert reads == ["data.csv", "lib/helper.py", "tests/test_alone.py", "ticketnet.py"]
    assert (repo / "__pycache__").is_dir() and traced() == reads  # imported from the compiled file this time
    def digest():
        return reads_digest(reads, checkout_state(root=repo))
    first = digest()
    for name, text in [("README.md", "two\n"), ("tests/test_other.py", "y = 2\n"), ("MUTATION.md", "93%\n"),
                       ("unread.py", "c = 2\n"), ("tests/test_new.py", "z = 1\n")]:
        (repo / name).write_text(text)
    assert digest() == first
    for name, text in [("ticketnet.py", "a = 2\n"), ("lib/helper.py", "b = 2\n"), ("data.csv", "y\n"),
                       ("tests/test_alone.py", run + "\n"), ("grader.py", "new = True\n")]:
        before = digest()
        (repo / name).write_text(text)
        assert digest() != before, name
    assert checkout_files(root=plain) is None and checkout_state(root=plain) is None


class PlatformPython:
    """The Python of one platform's environment; a subclass per platform names it."""
    name = None

    @pytest.fixture(scope="class")
    @classmethod
    def python(cls):
        given = dict(entry.split("=", 1) for entry in os.environ.get("PLATFORM_PYTHONS", "").split())
        if cls.name not in given:
            pytest.skip(f"PLATFORM_PYTHONS names no {cls.name} environment: `make test` builds one per "
                        "platforms/*.txt and sets it (`make test PLATFORMS=` leaves them out)")
        assert Path(given[cls.name]).is_file(), f"{given[cls.name]} does not exist; run `make test`"
        return given[cls.name]


class OnPlatform(PlatformPython):
    """The course under one platform's locked versions."""

    def test_the_environment_holds_exactly_the_locked_versions(self, python):
        frozen = _run(python, "-m", "pip", "freeze")
        installed = {line.partition("==")[0].lower().replace("_", "-"): line.partition("==")[2]
                     for line in frozen.stdout.splitlines() if "==" in line}
        assert installed == pins(ROOT / "platforms" / f"{self.name}.txt")
        version = _run(python, "-c", "import platform; print(platform.python_version())").stdout
        assert version.startswith(PYTHON_OF[self.name] + "."), version

    @pytest.mark.parametrize("section", SECTIONS)
    def test_each_solution_notebook_runs_clean(self, python, section):
        """No error and nothing on stderr (no warning), as the autograder runs it (briefly)."""
        run = _run(python, "tests/platform_probe.py", str(solution_notebook(section)))
        assert run.returncode == 0, run.stderr[-3000:]
        (problems,) = json.loads(run.stdout).values()
        assert problems == [], "\n".join(problems)

    def test_every_catalogue_entry_gets_the_same_verdict(self, python, banking77_dir):
        """tests/test_catalogue.py holds every wrong answer to its message and every right answer to
        full marks; here it runs in the platform's environment (without our pins' pytest plugins),
        or its last pass is read back when nothing it reads has changed (kept_pass)."""
        printed = kept_pass(banking77_dir, f"catalogue-on-{self.name}", python,
                            lambda env: _run(python, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider",
                                             "-q", "-W", "ignore::DeprecationWarning", "tests/test_catalogue.py",
                                             "-k", "not TestStudentEdition", env=env))
        assert re.search(r"\b\d+ passed\b", printed) and " failed" not in printed

    @pytest.mark.parametrize("section", ["01-heads", "05-block"])
    def test_an_edition_published_under_our_pins_checks_the_model_answers(self, python, edition, section):
        """The results a student's checks compare with are recorded where the instructor
        publishes; the student runs them on the platform's versions."""
        assert_model_answers_pass_the_editions_check(edition, section, python=python)



class ReleaseAloneOnPlatform(PlatformPython):
    """The release notebooks alone under one platform's versions: a class of its own, so that the
    parallel suite runs it beside the platform's other tests (it takes the longest)."""

    def test_every_release_notebook_alone_fetches_the_edition_and_passes_with_the_model_answers(
            self, python, edition, banking77_dir):
        """tests/test_release_alone.py, run by the platform's Python against the edition served as
        a git repository, with the platform's module standing in the kernel; or its last pass read
        back when nothing it reads has changed (kept_pass: the edition is published from the
        checkout)."""
        printed = kept_pass(banking77_dir, f"release-alone-on-{self.name}", python,
                            lambda env: _run(python, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider",
                                             "-q", "tests/test_release_alone.py", env={
                                                 **env, "COURSE_EDITION": str(edition),
                                                 "PLATFORM_STANDIN": MODULE_OF[self.name]}),
                            edition=edition)
        assert re.search(rf"\b{len(SECTIONS)} passed\b", printed), printed[-2000:]


for _name in PLATFORMS:  # TestOnColab, TestReleaseAloneOnColab, TestOnKaggle, ...
    for _kind, _base in (("TestOn", OnPlatform), ("TestReleaseAloneOn", ReleaseAloneOnPlatform)):
        globals()[f"{_kind}{_name.title()}"] = type(f"{_kind}{_name.title()}", (_base,), {"name": _name})


def test_make_takes_torch_from_pytorchs_cpu_index_unless_this_machine_has_the_wheel(tmp_path):
    """The install command as make resolves it (make -n): nothing is downloaded."""
    def install_command(*settings, **env):
        printed = subprocess.run(["make", "-n", "-B", ".venv/.installed", *settings], cwd=ROOT,
                                 capture_output=True, text=True, check=True,
                                 env=dict(os.environ, **env)).stdout
        (line,) = [line for line in printed.splitlines() if " pip install " in line]
        return line

    no_wheel_here = {"PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": str(tmp_path), "PIP_NO_INDEX": "1"}
    index = "--extra-index-url https://download.pytorch.org/whl/cpu"
    if platform.system() == "Linux":
        assert index in install_command(**no_wheel_here), "no wheel of torch here: pip must read the CPU index"
    assert "--extra-index-url" not in install_command("TORCH_CPU_INDEX=", **no_wheel_here)
    pinned = pins(ROOT / "requirements.txt")["torch"]
    local = [folder for folder in os.environ.get("PIP_FIND_LINKS", "").split()
             if list(Path(folder).glob(f"torch-{pinned}-*.whl"))]
    if local:  # as on the course's own machines: a wheel of the pinned torch lies on disk
        assert "--extra-index-url" not in install_command(), f"{local[0]} holds torch {pinned}: no index needed"


def test_make_builds_one_environment_per_platform_lock():
    """make -n test: each platform's venv from its own lock, on its own Python, and the tests told
    where each is."""
    printed = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")}).stdout
    for name in PLATFORMS:
        assert re.search(rf"PLATFORM_PYTHONS=\"[^\"]*\b{name}=\S*venv-{name}-[0-9a-f]{{12}}/bin/python", printed), printed[-3000:]
