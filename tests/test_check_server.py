"""The warm server behind `grader check` (grader/check_server.py): it gives the grade a check in
its own process gives, faster; it is asked only with its own key, by its own user; and whatever
goes wrong with it, the check still grades."""

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from grader import check_server
from grader.course import SECTIONS
from grader.options import GradingOptions
from grader.sample_class import CLASS

ROOT = Path(__file__).resolve().parents[1]
SECTION = "01-heads"
OPTIONS = GradingOptions()  # what `grader check` passes


def _expected(student):
    with open(ROOT / "grader" / "examples" / "expected.csv") as table:
        return {row["task"]: row["full_marks"] == "yes" for row in csv.DictReader(table)
                if row["student"] == student and row["section"] == SECTION}


def _check(notebook, env, *options):
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "grader", "check", "--json", *options, str(notebook)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout), time.perf_counter() - start, run.stderr


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A runtime folder of this test's own, deeper than a Unix socket's path may be (107 bytes)."""
    folder = tmp_path / ("deep-" * 20)
    folder.mkdir()
    assert len(str(folder / "transformer-block-course-checks-0" / f"{'0' * 24}.sock")) > 107
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    check_server.stop()


@pytest.mark.nbgrader
def test_the_warm_server_gives_the_grade_of_a_check_in_its_own_process_faster(runtime):
    notebook = CLASS / "eli" / f"{SECTION}.ipynb"  # some tasks right, some wrong
    expected = _expected("eli")
    assert any(expected.values()) and not all(expected.values())
    alone, alone_seconds, _ = _check(notebook, os.environ, "--no-server")
    assert not check_server.running()
    first, _, _ = _check(notebook, os.environ)
    (pid,) = check_server.running().values()
    warm, warm_seconds, stderr = _check(notebook, os.environ)
    assert check_server.running() == {check_server.key(OPTIONS): pid}, "a second server started"
    assert "grading in this process" not in stderr
    for result in (alone, first, warm):
        assert {t["grade_id"]: t["score"] == t["max_score"] for t in result["tasks"]} == expected
        assert result["notebook"] == str(notebook)
    assert warm == alone
    assert warm_seconds < alone_seconds, (warm_seconds, alone_seconds)


def test_the_key_changes_with_the_code_the_environment_and_the_options(tmp_path, monkeypatch):
    """The key holds the course's fingerprint (grader.fingerprint, the one that re-grades a class's
    notebooks), so whatever re-grades them also starts a new server; and the server's own code and
    the command that starts it, which the fingerprint leaves out."""
    checkout = tmp_path / "course"
    edited = ["grader/notebook_grader.py", "grader/templates/feedback.tpl", "data/a.csv", "requirements.txt",
              "solutions/01-heads/01-heads.ipynb", "grader/check_server.py", "grader/__main__.py"]
    for name in {*edited, *(f"solutions/{s}/{s}.ipynb" for s in SECTIONS)}:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text("1")
    (checkout / "grader" / "examples").mkdir()
    monkeypatch.setattr(check_server, "ROOT", checkout)
    first = check_server.key(OPTIONS)
    assert check_server.key(GradingOptions()) == first and len(first) == 24
    (checkout / "grader" / "examples" / "ada.ipynb").write_text("the sample class: never read by grading")
    assert check_server.key(OPTIONS) == first
    keys = {first}
    for name in edited:
        (checkout / name).write_text("2")
        keys.add(check_server.key(OPTIONS))
    monkeypatch.setenv("BANKING77_DIR", "/elsewhere")
    keys.add(check_server.key(OPTIONS))
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    keys.add(check_server.key(OPTIONS))
    keys.add(check_server.key(replace(OPTIONS, warm=False)))
    keys.add(check_server.key(replace(OPTIONS, timeout=5)))
    monkeypatch.setattr(check_server, "ROOT", shutil.copytree(checkout, tmp_path / "another"))  # the same, elsewhere
    keys.add(check_server.key(OPTIONS))
    assert len(keys) == 13


def _fake_server(folder, answer):
    """A server on the key `grader check` will ask that answers `answer` to anything."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    opened = check_server._Folder(folder)
    (folder / f"{check_server.key(OPTIONS)}.sock").unlink(missing_ok=True)
    listener.bind(opened.address(f"{check_server.key(OPTIONS)}.sock"))
    opened.close()  # the socket stays bound to its file
    listener.listen(1)

    def answer_once():
        connection, _ = listener.accept()
        with connection:
            check_server._read_all(connection)
            connection.sendall(answer)
    threading.Thread(target=answer_once, daemon=True).start()
    return listener


@pytest.mark.nbgrader
def test_a_server_answering_nonsense_is_not_believed_and_the_check_still_grades(runtime):
    listener = _fake_server(check_server.base_folder(), b'{"result": {"score": 11')
    notebook = CLASS / "ada" / f"{SECTION}.ipynb"
    result, _, stderr = _check(notebook, os.environ)
    listener.close()
    assert "the check server's answer is not JSON: grading in this process" in stderr
    assert all(_expected("ada").values()) and result["score"] == result["max_score"] > 0
    with pytest.raises(check_server.Unusable, match="without an answer"):
        listener = _fake_server(check_server.base_folder(), b"")
        check_server.grade(notebook, OPTIONS)
    listener.close()


def test_a_runtime_folder_others_can_enter_or_a_link_is_refused(runtime):
    folder = check_server.base_folder()
    assert folder.stat().st_mode & 0o777 == 0o700
    folder.chmod(0o755)
    with pytest.raises(check_server.Unusable, match="not a folder of this user's alone"):
        check_server.base_folder()
    folder.rmdir()
    elsewhere = runtime / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    folder.symlink_to(elsewhere)
    with pytest.raises(check_server.Unusable, match="not a folder of this user's alone"):
        check_server.base_folder()
    folder.unlink()


def _serve(options, idle):
    code = (f"import sys; from grader import check_server; from grader.options import GradingOptions; "
            f"sys.exit(check_server.serve({check_server.key(options)!r}, GradingOptions.from_json({options.to_json()!r}), "
            f"idle={idle}))")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE, text=True)


def test_one_server_per_key_and_it_stops_when_idle(runtime):
    options = replace(OPTIONS, sandboxed=False, warm=False)  # the quickest course to open
    server_key = check_server.key(options)
    # idle long enough for the second to start while the first still holds the key, on a loaded machine
    first = _serve(options, idle=15)
    deadline = time.monotonic() + 60
    while not (check_server.base_folder() / f"{server_key}.sock").exists():
        assert time.monotonic() < deadline and first.poll() is None, first.stderr.read()
        time.sleep(0.1)
    assert check_server.running() == {server_key: first.pid}
    second = _serve(options, idle=3)
    assert second.wait(timeout=60) == 1, "a second server of the same key ran"
    assert first.wait(timeout=120) == 0
    assert "idle for 15 s: stopping" in first.stderr.read()
    assert not (check_server.base_folder() / f"{server_key}.sock").exists()
    assert check_server.running() == {}, "a stopped server is listed (its lock file stays)"
    assert (check_server.base_folder() / f"{server_key}.lock").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user (setpriv)")
def test_another_user_cannot_reach_the_server(monkeypatch):
    """With every folder above the servers' open to others, their own folder still keeps others out."""
    import shutil
    import tempfile
    runtime = Path(tempfile.mkdtemp())
    runtime.chmod(0o711)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    try:
        listener = _fake_server(check_server.base_folder(), b'{"result": {}}')
        address = check_server.base_folder() / f"{check_server.key(OPTIONS)}.sock"
        code = f"import socket; socket.socket(socket.AF_UNIX).connect({str(address)!r})"
        run = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                              sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        listener.close()
        assert run.returncode != 0 and "PermissionError" in run.stderr, run.stderr
    finally:
        shutil.rmtree(runtime)
