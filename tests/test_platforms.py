"""The course under a platform's own versions, not only under our pins.

On Colab and Kaggle the set-up cell installs only what is missing, so the course runs on their
Python and libraries. `make test` builds .venv-colab from platforms/colab.txt (Colab's runtime,
Python 3.13) and sets COLAB_PYTHON; these tests run the course in it: every solution notebook
clean, every catalogue entry with the verdict and message it gets under our pins, and a release
notebook opened alone in an empty folder. The supported range (grader.course.SUPPORTED) runs from
that platform's versions to our pins, and every notebook's set-up cell checks it.
"""

import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import course
from grader.course import SECTIONS, SUPPORTED, solution_notebook
from test_edition import assert_model_answers_pass_the_editions_check
from test_environment import pins

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def colab():
    """The Python of the Colab environment that `make test` built."""
    python = os.environ.get("COLAB_PYTHON")
    if not python:
        pytest.skip("COLAB_PYTHON is not set: `make test` builds .venv-colab and sets it "
                    "(`make test PLATFORMS=` leaves the platform out)")
    assert Path(python).is_file(), f"COLAB_PYTHON={python} does not exist; run `make test`"
    return python


def _run(python, *args, timeout=1200, env=None):
    return subprocess.run([python, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})


def test_the_colab_environment_holds_exactly_the_locked_versions(colab):
    frozen = _run(colab, "-m", "pip", "freeze")
    installed = {line.partition("==")[0].lower().replace("_", "-"): line.partition("==")[2]
                 for line in frozen.stdout.splitlines() if "==" in line}
    assert installed == pins(ROOT / "platforms" / "colab.txt")
    version = _run(colab, "-c", "import platform; print(platform.python_version())").stdout
    assert version.startswith("3.13."), version


def test_the_supported_range_runs_from_the_platforms_versions_to_our_pins():
    colab, ours = pins(ROOT / "platforms" / "colab.txt"), pins(ROOT / "requirements.txt")
    for name, (oldest, newest) in SUPPORTED.items():
        if name == "python":
            assert (oldest, newest) == ("3.11", "3.13"), "our pins are for 3.11, Colab runs 3.13"
        else:
            assert (oldest, newest) == (colab[name], ours[name]), name
    for name in ("torch", "numpy", "pandas", "matplotlib", "scikit-learn", "tqdm", "ipykernel",
                 "nbclient", "nbformat"):
        assert re.search(rf"^{name}=={re.escape(colab[name])}\b", (ROOT / "platforms" / "colab.in").read_text(),
                         re.M), f"platforms/colab.in does not pin {name} as colab.txt does"


def test_the_readme_states_the_supported_range():
    readme = (ROOT / "README.md").read_text()
    for name, (oldest, newest) in SUPPORTED.items():
        assert re.search(rf"\| {re.escape(name)} \| {re.escape(oldest)} \| {re.escape(newest)} \|", readme), \
            f"README.md's table of supported versions lacks | {name} | {oldest} | {newest} |"


def test_a_library_older_than_the_platforms_stops_the_set_up_cell_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(course, "installed_versions",
                        lambda: {"python": "3.13.2", "pandas": "2.1.4", "torch": "2.11.0+cu126"})
    with pytest.raises(RuntimeError) as stopped:
        course.check_versions()
    assert str(stopped.value) == ("Too old for this course: pandas 2.1.4 (the course needs 2.2.3 or "
                                  "newer). Upgrade, then restart the kernel.")
    monkeypatch.setattr(course, "installed_versions", lambda: {"python": "3.14.0", "numpy": "2.5.0"})
    course.check_versions()
    assert capsys.readouterr().out == ("Newer than this course was tested with: python 3.14.0 (tested "
                                       "up to 3.13); numpy 2.5.0 (tested up to 2.4.6).\n")


def test_within_the_range_the_set_up_cell_says_nothing(capsys):
    for name, (oldest, newest) in SUPPORTED.items():
        assert course.unsupported({name: oldest}) == course.unsupported({name: newest}) == ([], [])
    assert course.unsupported({"python": "3.13.7", "torch": "2.11.0+cu130"}) == ([], [])
    course.check_versions()  # this environment: our pins
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("section", SECTIONS)
def test_each_solution_notebook_runs_clean_under_colabs_versions(colab, section):
    """No error and nothing on stderr (no warning), as the autograder runs it (briefly)."""
    run = _run(colab, "tests/platform_probe.py", str(solution_notebook(section)))
    assert run.returncode == 0, run.stderr[-3000:]
    (problems,) = json.loads(run.stdout).values()
    assert problems == [], "\n".join(problems)


def test_every_catalogue_entry_gets_the_same_verdict_under_colabs_versions(colab):
    """tests/test_catalogue.py holds every wrong answer to its message and every right answer to
    full marks; here it runs in the Colab environment (without our pins' pytest plugins)."""
    run = _run(colab, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q",
               "-W", "ignore::DeprecationWarning", "tests/test_catalogue.py", "-k", "not TestStudentEdition")
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", run.stdout) and " failed" not in run.stdout


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    """A student edition published here, under our pins."""
    from grader import publish
    folder = tmp_path_factory.mktemp("edition") / "course-student"
    publish.publish(folder)
    return folder


@pytest.mark.parametrize("section", ["01-heads", "05-block"])
def test_an_edition_published_under_our_pins_checks_the_model_answers_under_colabs_versions(
        colab, edition, section):
    """The results a student's checks compare with are recorded where the instructor publishes;
    the student runs them on Colab's versions."""
    assert_model_answers_pass_the_editions_check(edition, section, python=colab)


def test_a_release_notebook_alone_fetches_the_course_under_colabs_versions(colab, edition):
    """Publishing needs nbgrader, which Colab lacks: the edition comes from our pins, as in real life."""
    run = _run(colab, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q", "tests/test_colab.py",
               env={"COURSE_EDITION": str(edition)})
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]


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
