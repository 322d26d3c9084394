"""Grading on a Dask cluster (grader/cluster.py): section 1 of the sample class graded on a
LocalCluster, and on a real scheduler and workers started as processes on loopback, gives the
grades of one machine; a worker killed halfway, or the scheduler lost, costs no student a grade."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import autograde, fingerprint, worker
from grader import results as results_store
from grader.course import ROOT
from grader.options import SAMPLE_CLASS, GradingOptions
from grader.result import Result
from grader.sample_class import CLASS

SECTION = "01-heads"
# gus's endless loop would cost each run the 30 s time limit; the rest of the class is here,
# broken files, repairs and a kernel that dies included
STUDENTS = sorted(p.name for p in CLASS.iterdir() if p.name != "gus")


@pytest.fixture(scope="module")
def hand_in(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    for student in STUDENTS:
        (folder / student).mkdir()
        shutil.copy(CLASS / student / f"{SECTION}.ipynb", folder / student)
    return folder


def _grade(hand_in, out, **where):
    return autograde.autograde([hand_in], out, SAMPLE_CLASS, echo=lambda line: None, **where)


def _grades(out):
    """grades.csv, similar.csv (the pairs computed where the grades are gathered), and what
    results.json records of each submission but its timing."""
    results = json.loads((out / "results.json").read_text())
    kept = {key: {k: v for k, v in result.items() if k != "seconds"} for key, result in results.items()}
    return (out / "grades.csv").read_text(), (out / "similar.csv").read_text(), kept


@pytest.fixture(scope="module")
def on_one_machine(hand_in, tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "graded"
    _grade(hand_in, out, workers=2)
    return _grades(out)


class Cluster:
    """`dask scheduler` and `dask worker` processes on loopback, as an instructor starts them."""

    def __init__(self, folder):
        self.folder, self.workers = Path(folder), []
        self.folder.mkdir(parents=True, exist_ok=True)
        address_file = self.folder / "scheduler.json"
        self.scheduler = self._start("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                                     "--no-dashboard", "--scheduler-file", str(address_file))
        for _ in range(300):
            if address_file.is_file() and address_file.stat().st_size:
                break
            time.sleep(0.1)
        self.address = json.loads(address_file.read_text())["address"]

    def _start(self, module, *args):
        # a session of its own: killing one takes its nanny, worker and kernels together
        log = (self.folder / f"{module.rsplit('.', 1)[-1]}-{len(self.workers)}.log").open("w")
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def add_worker(self):
        self.workers.append(self._start("distributed.cli.dask_worker", self.address, "--nthreads", "1",
                                        "--host", "127.0.0.1", "--no-dashboard"))

    @staticmethod
    def kill(process):
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def close(self):
        for process in [*self.workers, self.scheduler]:
            if process.poll() is None:
                self.kill(process)


@pytest.fixture
def cluster(tmp_path):
    started = Cluster(tmp_path / "cluster")
    yield started
    started.close()


def _after_results(out, count, action):
    """Run `action` in a thread once the run has kept `count` results."""
    def watch():
        while len(results_store.load(out / "results.json")) < count:
            time.sleep(0.2)
        action()
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.nbgrader
def test_a_local_cluster_grades_the_class_as_one_machine_does(hand_in, on_one_machine, tmp_path):
    from grader.cluster import local_cluster
    out = tmp_path / "graded"
    before = dict(os.environ)
    with local_cluster(2) as local:
        _grade(hand_in, out, scheduler=local.scheduler_address)
    assert _grades(out) == on_one_machine
    # Dask's nanny set MKL_NUM_THREADS=1 here, which gave a later test's kernel one thread
    assert dict(os.environ) == before


@pytest.mark.nbgrader
def test_a_scheduler_and_workers_on_the_network_grade_the_class_as_one_machine_does(
        hand_in, on_one_machine, cluster, tmp_path):
    for _ in range(2):
        cluster.add_worker()
    out = tmp_path / "graded"
    _grade(hand_in, out, scheduler=cluster.address)
    assert _grades(out) == on_one_machine


@pytest.mark.nbgrader
def test_a_worker_killed_halfway_leaves_nobody_ungraded(hand_in, on_one_machine, cluster, tmp_path):
    for _ in range(2):
        cluster.add_worker()
    out = tmp_path / "graded"
    killed = _after_results(out, 3, lambda: cluster.kill(cluster.workers[0]))
    _grade(hand_in, out, scheduler=cluster.address)
    killed.join(timeout=1)
    assert cluster.workers[0].poll() is not None  # it was killed while the class was being graded
    assert _grades(out) == on_one_machine


@pytest.mark.nbgrader
def test_a_run_whose_scheduler_was_lost_is_completed_by_the_next(hand_in, on_one_machine, tmp_path, capsys):
    first = Cluster(tmp_path / "first")
    try:
        for _ in range(2):
            first.add_worker()
        out = tmp_path / "graded"
        _after_results(out, 3, lambda: first.kill(first.scheduler))
        from grader.__main__ import main
        assert main(["autograde", str(hand_in), "--out", str(out), "--timeout", "30",
                     "--scheduler", first.address]) == 1
        error = capsys.readouterr().err
        assert f"autograde stopped: the connection to the Dask scheduler at {first.address} was lost" in error
        assert "run the same command again to grade them" in error
        graded = json.loads((out / "results.json").read_text())
        assert 3 <= len(graded) < len(STUDENTS)
        assert f"; {len(STUDENTS) - len(graded)} notebooks were not graded: " in error
    finally:
        first.close()
    second = Cluster(tmp_path / "second")
    try:
        for _ in range(2):
            second.add_worker()
        lines = []
        autograde.autograde([hand_in], out, SAMPLE_CLASS, echo=lines.append, scheduler=second.address)
        assert lines[0] == (f"{len(STUDENTS)} submissions, {len(graded)} already graded, "
                            f"{len(STUDENTS) - len(graded)} to grade")
    finally:
        second.close()
    assert _grades(out) == on_one_machine


def test_the_cluster_grades_one_notebook_per_worker_at_a_time_the_longest_expected_first(tmp_path, monkeypatch):
    """Workers that are threads of this process (LocalCluster(processes=False)), and a stand-in for
    grading that takes 0.6 s for a section-7 notebook and 0.2 s for a section-1 one."""
    from contextlib import nullcontext
    from distributed import LocalCluster
    from grader import cluster
    seconds, busy, handed_out, lock = {"07-banking77": 0.6, "01-heads": 0.2}, [0, 0], [], threading.Lock()

    def grade(student, path):
        section = Path(path).stem
        with lock:
            busy[0] += 1
            busy[1] = max(busy)
            handed_out.append(section)
        time.sleep(seconds[section])
        with lock:
            busy[0] -= 1
        return worker.Graded(Result(str(path), None, student, seconds=seconds[section]))

    class Course:
        def close(self):
            pass
    monkeypatch.setattr(worker, "grade", grade)
    monkeypatch.setattr(worker, "start", lambda *options: None)
    monkeypatch.setattr(worker, "_course", Course())
    monkeypatch.setattr(cluster, "_one_at_a_time", nullcontext())  # one lock, shared by these workers
    todo = []
    for student in "abcdefgh":
        for section in ("01-heads", "07-banking77"):
            (tmp_path / student).mkdir(exist_ok=True)
            (tmp_path / student / f"{section}.ipynb").write_text("{}")
            todo.append((f"{student}/{section}", autograde.Submission(student, tmp_path / student / f"{section}.ipynb", section), ""))
    options = GradingOptions(timeout=30, memory_mb=1024, warm=False)
    versions = fingerprint.grading_versions(options)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as local:
        start = time.perf_counter()
        graded = list(cluster.grade(local.scheduler_address, todo, (tmp_path, options), versions, lambda line: None))
        took = time.perf_counter() - start
    assert sorted(item[0] for item, _ in graded) == sorted(key for key, _, _ in todo)
    assert busy[1] == 2  # both workers busy, never more than one notebook each
    assert took < 0.8 * 8 * (0.6 + 0.2)  # 6.4 s one at a time; 3.2 s on two workers
    # as the local pool: the later section first; once a notebook of it is done, the untimed
    # section (one or two of it, as the first two finish together); then the longer one's
    assert handed_out[:2] == ["07-banking77"] * 2
    short = [i for i, section in enumerate(handed_out) if section == "01-heads"]
    assert max(i for i, section in enumerate(handed_out) if section == "07-banking77") < short[3], handed_out


def test_a_scheduler_out_of_reach_stops_the_run_saying_where(hand_in, tmp_path, capsys):
    import dask
    import distributed  # noqa: F401  (its settings loaded first: leaving the `with` restores them)
    from grader.__main__ import main
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        assert main(["autograde", str(hand_in), "--out", str(tmp_path / "graded"),
                     "--scheduler", "tcp://127.0.0.1:9"]) == 1
    assert "autograde stopped: cannot reach the Dask scheduler at tcp://127.0.0.1:9" in capsys.readouterr().err
