"""The student edition (`python -m grader publish`): what it holds, what it leaves out, that its
own checks pass the model answers and name the mistakes without the reference code, and that
`publish --check` tells a fresh edition from a stale one."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import nbformat
import pytest

from grader import publish, recordings
from grader.course import ROOT, SECTIONS, solution_notebook
from grader.judge import without_hidden_tests


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edition") / "course-student"
    manifest, commit = publish.publish(folder)
    return folder, manifest, commit


def _run(args, cwd, **kwargs):
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_ROOT", "PYTHONPATH", "NBGRADER_EXECUTION")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, **kwargs)


def test_the_edition_is_a_git_repository_of_the_release_library_data_and_checks(edition):
    folder, manifest, commit = edition
    tracked = _run(["git", "ls-files"], folder).stdout.split()
    assert commit and set(tracked) == set(manifest["files"]) | {publish.MANIFEST}
    assert {path.split("/")[0] for path in tracked} == {
        ".gitignore", "EDITION.json", "LICENSE", "README.md", "bench", "data", "environment.yml", "grader",
        "notebooks", "requirements.txt", "ticketnet.py"}
    assert sorted(p for p in tracked if p.startswith("bench/")) == [
        "bench/positions.py", "bench/results/positions.csv", "bench/results/tuning.csv", "bench/tuning.py"]
    assert sorted(p for p in tracked if p.startswith("notebooks/")) == [
        f"notebooks/{s}/{s}.ipynb" for s in SECTIONS]
    assert {p for p in tracked if p.startswith("grader/references/")} == {
        "grader/references/__init__.py", publish.EXPECTED}
    for absent in ("solutions/", "grader/catalogue/", "grader/examples/", "tests/", "bench/grading.py"):
        assert not any(p.startswith(absent) for p in tracked), absent
    assert json.loads((folder / publish.MANIFEST).read_text())["files"] == manifest["files"]


def files_the_release_reads():
    """Every path a code cell of a release notebook builds from the course's folder, as in
    `ROOT / "bench" / "results" / "tuning.csv"`, and every script a cell runs
    (`python bench/tuning.py`)."""
    found = set()
    for section in SECTIONS:
        for cell in nbformat.read(ROOT / "notebooks" / section / f"{section}.ipynb", as_version=4).cells:
            if cell.cell_type == "code":
                for chain in re.findall(r"\bROOT((?:\s*/\s*\"[^\"]+\")+)", cell.source):
                    found.add("/".join(re.findall(r'"([^"]+)"', chain)))
            found.update(re.findall(r"python (bench/\w+\.py)", cell.source))
    return found


def test_every_file_a_release_notebook_reads_is_in_the_edition(edition):
    folder, manifest, _ = edition
    read = files_the_release_reads()
    assert {"bench/results/positions.csv", "bench/results/tuning.csv", "bench/positions.py",
            "bench/tuning.py"} <= read, read  # the search finds section 6's tables and scripts
    assert sorted(read - set(manifest["files"])) == []


def test_the_students_requirements_hold_the_course_and_nothing_of_grading(edition):
    from test_environment import pins
    folder, _, _ = edition
    student, ours = pins(folder / "requirements.txt"), pins(ROOT / "requirements.txt")
    assert {name: ours.get(name) for name in student} == student, "a pin differs from requirements.txt"
    for needed in ("torch", "numpy", "pandas", "matplotlib", "scikit-learn", "tqdm", "jupyterlab", "ipykernel",
                   "ipython", "nbformat", "traitlets"):
        assert needed in student, needed
    for grading in ("nbgrader", "nbval", "pytest", "pytest-xdist", "distributed", "dask", "playwright", "coverage"):
        assert grading not in student, grading
    text = (folder / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text and "Linux" in text
    assert "download.pytorch.org/whl/cpu" in (folder / "README.md").read_text()


def test_the_edition_holds_no_line_of_any_solution_hidden_test_or_mark_scheme(edition):
    folder, _, _ = edition
    assert publish.leaks(folder) == []
    for path in folder.rglob("*"):
        if path.is_file() and ".git" not in path.parts and path.suffix not in (".pt", ".csv"):
            text = path.read_text(errors="replace")
            for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "Mark scheme"):
                assert marker not in text or path.name == "publish.py", f"{path}: {marker}"


def test_a_leak_is_found(edition, tmp_path):
    """The search finds an answer line wherever it is put, reflowed or not."""
    folder, _, _ = edition
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(".git"))
    cells = nbformat.read(solution_notebook("01-heads"), as_version=4).cells
    answers = "".join(re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", "\n".join(c.source for c in cells), re.S))
    line = next(line for line in answers.splitlines() if len(line.strip()) > 25)
    with open(copy / "grader" / "checks" / "heads.py", "a") as checks:
        checks.write("\n# " + line.replace(" ", "  ") + "\n")
    assert [found.split(":")[0] for found in publish.leaks(copy)] == ["grader/checks/heads.py"]


def test_the_editions_checks_run_without_the_reference_code(edition):
    folder, _, _ = edition
    run = _run([sys.executable, "-c", "import grader.checks.heads, grader.checks.tiny, grader.references\n"
                "import grader.references.heads"], folder)
    assert "No module named 'grader.references.heads'" in run.stderr, run.stderr


def assert_model_answers_pass_the_editions_check(folder, section, python=sys.executable):
    """The section's model answers, put in a notebook of the edition `folder`, earn every point of
    the visible checks when the edition's own `python -m grader check` runs it under `python`."""
    def answered(name):
        notebook = nbformat.read(solution_notebook(name), as_version=4)
        for cell in notebook.cells:  # the checks as the edition shows them: no hidden tests
            cell.source = without_hidden_tests(cell.source)
        return notebook

    # the earlier sections answered too, where the student saved them: load_parts reads them there
    earlier = {name: folder / "notebooks" / name / f"{name}.ipynb" for name in SECTIONS[:SECTIONS.index(section)]}
    released = {name: path.read_bytes() for name, path in earlier.items()}
    mine = folder / "notebooks" / section / "mine.ipynb"
    try:
        for name, path in earlier.items():
            nbformat.write(answered(name), path)
        nbformat.write(answered(section), mine)
        run = _run([python, "-m", "grader", "check", str(mine)], folder, timeout=900)
    finally:
        mine.unlink()
        for name, path in earlier.items():
            path.write_bytes(released[name])
    assert run.returncode == 0, run.stderr[-3000:]
    points = re.search(r"visible checks: (\d+)/(\d+) points", run.stdout)
    assert points and points[1] == points[2], run.stdout
    assert "hidden tests" in run.stdout
    assert "this check runs in a new process" not in run.stdout, run.stdout  # its warm server ran it


@pytest.mark.parametrize("section", ["01-heads", "04-residuals", "06-tiny-transformer"])
def test_the_model_answers_pass_every_visible_check_run_by_the_editions_own_command(edition, section):
    """Section 6 in the grading mode, as the autograder runs it: every network trains briefly
    (a student's full run takes about a minute on 2 cores; the check must not)."""
    started = time.monotonic()
    assert_model_answers_pass_the_editions_check(edition[0], section)
    assert time.monotonic() - started < 120


def test_the_editions_check_names_an_unwritten_task(edition):
    folder, _, _ = edition
    run = _run([sys.executable, "-m", "grader", "check", "notebooks/03-norms/03-norms.ipynb"], folder, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr == "", run.stderr  # no kernel warning (over TCP, the debugger's, a parent gone)
    assert re.search(r"test_layer_norm\s+0/2\s+AssertionError: layer_norm is not written yet", run.stdout), run.stdout


def test_the_editions_check_runs_on_a_warm_server_of_its_users_and_without_one_alike(edition):
    """The first check starts the server, the next ones fork from it; --no-server runs the
    notebook in a new process. All three give the same table; `grader stop` stops the server."""
    folder, _, _ = edition
    notebook = "notebooks/02-positions/02-positions.ipynb"
    runs = [_run([sys.executable, "-m", "grader", "check", *extra, notebook], folder, timeout=600)
            for extra in ([], [], ["--no-server"])]
    assert all(run.returncode == 0 and run.stderr == "" for run in runs), [run.stderr for run in runs]
    assert "this check runs in a new process" not in runs[0].stdout + runs[1].stdout  # the server ran them
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout
    assert re.search(r"visible checks: 0/\d+ points", runs[0].stdout), runs[0].stdout
    from grader.edition import main as edition_check
    assert list(edition_check.server_folder().glob("*.sock"))
    assert oct(edition_check.server_folder().stat().st_mode)[-3:] == "700"
    stopped = _run([sys.executable, "-m", "grader", "stop"], folder)
    assert re.fullmatch(r"stopped [1-9]\d* check server\(s\)\n", stopped.stdout), stopped.stdout + stopped.stderr
    assert not list(edition_check.server_folder().glob("*.sock"))


def test_publish_check_tells_a_fresh_edition_from_a_stale_one(edition, tmp_path):
    folder, _, _ = edition
    fresh = _run([sys.executable, "-m", "grader", "publish", "--check", str(folder)], ROOT)
    assert fresh.returncode == 0 and "is the edition this repository builds" in fresh.stdout, fresh.stdout + fresh.stderr
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / "README.md").write_text("edited by hand\n")
    (copy / "notes.txt").write_text("mine\n")
    (copy / "notebooks" / "06-tiny-transformer" / "tiny.pt").write_bytes(b"a model a notebook saved")  # .gitignore'd
    (copy / "ticketnet.py").unlink()
    stale = _run([sys.executable, "-m", "grader", "publish", "--check", str(copy)], ROOT)
    assert stale.returncode == 1
    assert stale.stdout.splitlines() == ["stale: README.md", "missing: ticketnet.py", "not ours: notes.txt"]


def test_publishing_again_changes_nothing_and_refuses_a_folder_of_other_files(edition, tmp_path):
    folder, manifest, _ = edition
    again, commit = publish.publish(folder)
    assert commit is None and again["files"] == manifest["files"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "thesis.tex").write_text("\\begin{document}")
    with pytest.raises(FileExistsError, match="not a git repository"):
        publish.publish(other)
    assert [p.name for p in other.iterdir()] == ["thesis.tex"]


def test_a_release_out_of_step_with_the_solutions_is_not_published(tmp_path, monkeypatch):
    from grader import release
    monkeypatch.setattr(release, "out_of_sync", lambda: ["notebooks/01-heads/01-heads.ipynb"])
    with pytest.raises(publish.Stale, match="grader release"):
        publish.publish(tmp_path / "edition")
    assert not (tmp_path / "edition").exists()


def test_the_editions_check_reports_an_endless_loop_and_the_checks_it_kept_from_running(edition):
    folder, _, _ = edition
    notebook = nbformat.read(folder / "notebooks" / "01-heads" / "01-heads.ipynb", as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "split_heads":
            cell.source = cell.source.replace("raise NotImplementedError()", "while True:\n        pass")
    looping = folder / "notebooks" / "01-heads" / "looping.ipynb"
    nbformat.write(notebook, looping)
    try:
        run = _run([sys.executable, "-m", "grader", "check", str(looping), "--timeout", "5"], folder, timeout=300)
    finally:
        looping.unlink()
    assert run.returncode == 0, run.stderr[-3000:]
    # the check is the first cell to call split_heads; an answer's or a check's `except Exception`
    # does not catch the time limit
    assert re.search(r"code cell \d+ \('check.split_heads\(split_heads\)'\) ran past the 5 s limit", run.stdout), run.stdout
    assert re.search(r"test_split_heads\s+0/2\s+TimeoutError: the cell ran past the 5 s limit", run.stdout), run.stdout
    assert re.search(r"test_key_padding_mask\s+0/2\s+not run: the notebook stopped before this check", run.stdout), run.stdout


@pytest.fixture
def offline(banking77_dir, tmp_path, monkeypatch):
    """No Banking77 on this machine and no way to download it: an empty download cache, no
    BANKING77_DIR, and every download sent to a proxy that refuses it (this process and the
    recording's own). Returns where the shared copy is, to put it back."""
    import ticketnet
    monkeypatch.delenv("BANKING77_DIR", raising=False)
    monkeypatch.setenv("TICKETNET_CACHE", str(tmp_path / "empty-cache"))
    for proxy in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")
    with pytest.raises(ticketnet.DataError, match="could not download"):
        ticketnet.load_banking77()
    return banking77_dir


def test_offline_a_section_1_check_records_section_1_and_section_7_once_its_data_is_there(
        offline, tmp_path, monkeypatch):
    """The grading kernels' recorded results (recordings.kernel_references) are made section by
    section: without Banking77, section 7 is left out, saying why, and the other sections grade;
    given the files, the next grading records section 7 alone."""
    import torch
    monkeypatch.setattr(recordings, "KERNEL_REFERENCES", tmp_path / "references")
    monkeypatch.setattr(recordings, "SECTIONS", ("01-heads", "07-banking77"))
    shown = recordings.kernel_references()
    keys = torch.load(shown / recordings.EXPECTED_NAME, weights_only=True).keys()
    assert keys and all(key.startswith("heads.") for key in keys), sorted(keys)[:5]
    state = shown.parent
    assert "set BANKING77_DIR" in (state / "07-banking77" / "unavailable.txt").read_text()
    first = (state / "01-heads" / recordings.EXPECTED_NAME).stat().st_mtime_ns
    assert recordings.catalogued_mistakes() and all(k.startswith("01-heads") for k in recordings.catalogued_mistakes())

    monkeypatch.setenv("BANKING77_DIR", str(offline))
    assert recordings.kernel_references() == shown
    keys = torch.load(shown / recordings.EXPECTED_NAME, weights_only=True).keys()
    assert {key.split(".")[0] for key in keys} == {"heads", "banking"}, sorted({key.split(".")[0] for key in keys})
    assert not (state / "07-banking77" / "unavailable.txt").exists()
    assert (state / "01-heads" / recordings.EXPECTED_NAME).stat().st_mtime_ns == first, "section 1 recorded twice"


def test_publishing_without_banking77_says_where_to_put_it(offline, tmp_path, monkeypatch):
    monkeypatch.setattr(recordings, "KERNEL_REFERENCES", tmp_path / "references")
    monkeypatch.setattr(publish, "SECTIONS", ("07-banking77",))
    with pytest.raises(publish.DataMissing, match=r"put its train.csv and test.csv in a folder and set "
                                                   r"BANKING77_DIR to that folder"):
        publish.publish(tmp_path / "edition")
    assert not (tmp_path / "edition").exists()
