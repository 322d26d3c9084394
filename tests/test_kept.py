"""The tests marked `kept` (conftest.run_kept): run by a pytest of their own with their reads
traced, and read back as passed only while nothing they read, nor the environment, has changed."""

import shutil
import subprocess

import pytest

import conftest


def test_a_kept_test_is_read_back_only_while_what_it_read_and_its_environment_hold(tmp_path, monkeypatch):
    repo, runs = tmp_path / "checkout", tmp_path / "runs.txt"
    monkeypatch.setattr(conftest, "KEPT", tmp_path / "kept")
    monkeypatch.setenv("RUNS_LOG", str(runs))
    test = ("import os\n\ndef test_reads_its_data():\n    open(os.environ['RUNS_LOG'], 'a').write('ran\\n')\n"
            "    assert open('data.csv').read().startswith('x')\n")
    for name, text in [("tests/test_case.py", test), ("tests/test_other.py", "y = 1\n"), ("data.csv", "x\n"),
                       ("README.md", "one\n"), ("notebooks/unread.ipynb", "{}\n")]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    environment = {"python": "3.x"}

    def kept_run(root=repo):
        ran = conftest.run_kept("tests/test_case.py::test_reads_its_data", root=root, environment=lambda: environment)
        return ran, runs.read_text().count("ran")

    assert kept_run() == (True, 1)
    assert kept_run() == (False, 1)  # read back: the body did not run
    shutil.copytree(repo, tmp_path / "a clone elsewhere")
    assert kept_run(tmp_path / "a clone elsewhere") == (False, 1)  # as CI's next clone
    for name, text in [("README.md", "two\n"), ("tests/test_other.py", "y = 2\n")]:  # never read
        (repo / name).write_text(text)
        assert kept_run() == (False, 1), name
    (repo / "data.csv").write_text("x2\n")  # read by the test
    assert kept_run() == (True, 2)
    (repo / "notebooks" / "unread.ipynb").write_text("{\"cells\": []}\n")  # what a sandboxed kernel may read
    assert kept_run() == (True, 3)
    environment["python"] = "3.y"
    assert kept_run() == (True, 4)
    (repo / "data.csv").write_text("y\n")
    with pytest.raises(pytest.fail.Exception, match=r"(?s)test_reads_its_data, run by a pytest of its own, exit 1.*"
                                                     r"assert False"):
        kept_run()
    with pytest.raises(pytest.fail.Exception):  # a failure is not kept: it runs, and fails, again
        kept_run()
    assert runs.read_text().count("ran") == 6
