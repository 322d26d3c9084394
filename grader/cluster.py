"""Grading a class on a Dask cluster: `python -m grader autograde INPUT --out DIR --scheduler ADDRESS`.

A Dask worker grades as a local worker process does (grader.worker): a notebook grader of its
own, with its warm-kernel server and its sandbox. `CourseOnWorker`, a
Dask worker plugin, starts it once per worker from the class's registered sections,
which it carries as bytes. Nothing assumes a shared filesystem: each task takes a submission's
bytes to its worker and brings back the result (scores, messages, the feedback page and the
graded notebooks), which the instructor's process writes into DIR as on one machine.

Each worker needs this course checkout and its environment (README, "Grading on a cluster"),
and grades one notebook at a time: start one worker per core, each with `--nthreads 1`.
"""

import asyncio
import contextlib
import io
import os
import tempfile
import threading
import zipfile
from concurrent.futures import CancelledError
from pathlib import Path

from distributed import Client, LocalCluster, WorkerPlugin, as_completed
from distributed.client import FutureCancelledError
from distributed.scheduler import KilledWorker

from grader import fingerprint, schedule
from grader import worker as grading_worker  # Dask names its plugins' argument `worker`
from grader.result import Result
from grader.schedule import ClusterError


class CourseOnWorker(WorkerPlugin):
    """Starts the worker's notebook grader when the plugin reaches it, and refuses a worker whose
    checkout or libraries would grade differently from the instructor's (`versions`)."""

    name = "grading-course"  # registering it again (the next run) replaces it

    def __init__(self, sections, options, versions):
        self.sections = sections  # release/ and gradebook.db of the class's course folder, zipped
        self.options = options    # the class's GradingOptions
        self.versions = versions  # fingerprint.grading_versions on the instructor's machine

    async def setup(self, worker):
        # Dask's statistical profiler reads every thread's stack each 10 ms, CPU and the GIL taken
        # from the notebook being graded; nobody reads its profiles of grading.
        for name in ("profile", "profile-cycle"):
            callback = worker.periodic_callbacks.pop(name, None)
            if callback is not None:
                callback.stop()
        # In a thread: starting a course can take minutes the first time (the checks' results
        # are recorded), and the worker must go on answering the scheduler meanwhile.
        await asyncio.to_thread(self._start)

    def _start(self):
        here = fingerprint.grading_versions(self.options)
        if here != self.versions:
            differ = sorted(str(s) for s in here if here[s] != self.versions.get(s))
            raise RuntimeError(f"this worker's course checkout or libraries grade differently from the "
                               f"instructor's (sections {', '.join(differ)}): update its checkout and "
                               "install requirements.txt")
        self.folder = tempfile.TemporaryDirectory(prefix="grading-course-")
        with zipfile.ZipFile(io.BytesIO(self.sections)) as archive:
            archive.extractall(self.folder.name)
        grading_worker.start(self.folder.name, self.options)

    def teardown(self, worker):
        grading_worker.stop()
        if hasattr(self, "folder"):
            self.folder.cleanup()


@contextlib.contextmanager
def local_cluster(workers):
    """A Dask cluster of `workers` processes of one thread on this machine, as an instructor's
    cluster would be. Dask's nanny writes its settings for the workers it starts into this
    process's environment (MKL_NUM_THREADS=1, PYTHONHASHSEED, ...) and leaves them there; they are
    taken out again, so that what runs here afterwards keeps its own threads."""
    saved = dict(os.environ)
    try:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            yield cluster
    finally:
        os.environ.clear()
        os.environ.update(saved)


_one_at_a_time = threading.Lock()  # one course per worker: a worker given several threads still grades serially


def grade_sent(student, name, data):
    """The task: grade the submission `data` (its bytes; `name`, its file name) on this worker.
    Never raises, as worker.grade."""
    with _one_at_a_time:
        if not grading_worker.running():
            return grading_worker.Graded(Result.grader_failed(
                name, student, "this Dask worker has no notebook grader (its log says why)"))
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / name
            path.write_bytes(data)
            return grading_worker.grade(student, str(path))


def _zipped(folder):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder))
    return buffer.getvalue()


def grade(address, todo, start, versions, echo=print):
    """Grade `todo` ([(key, Submission, sha256)]) on the cluster whose scheduler is at `address`;
    `start` are worker.start's arguments. Yields (item, worker.Graded) as each finishes.

    The cluster holds one notebook per worker thread at a time, the next one chosen as the local
    pool chooses (schedule.next_longest: the longest expected first). Handed every notebook at once,
    Dask queues a second one on each worker, and at the end of a class one worker's queued
    notebook waits behind a long one while another worker idles. Workers that join take notebooks
    as soon as one finishes.

    A worker that dies mid-notebook has it graded again on another (the scheduler allows a task 3
    such deaths); past that, the notebook is a grader failure, graded again next run. A scheduler
    out of reach or lost, or a worker that cannot grade, raises ClusterError."""
    template, options = start
    try:
        client = Client(address)  # waits for it up to Dask's distributed.comm.timeouts.connect, 30 s
    except (OSError, TimeoutError) as error:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {error}") from None
    try:
        try:
            client.register_plugin(CourseOnWorker(_zipped(template), options, versions))
        except Exception as error:  # a worker's own error, raised again here
            raise ClusterError(f"a Dask worker cannot grade: {type(error).__name__}: {error}") from None
        workers = len(client.scheduler_info()["workers"])
        echo(f"grading on the Dask cluster at {address}: {workers} workers now"
             + (" (notebooks wait until one joins)" if not workers else ""))
        waiting, running, seconds, finished, yielded = list(todo), {}, {}, as_completed(), 0

        def hand_out():
            threads = sum(client.nthreads().values())
            while waiting and len(running) < max(threads, 1):
                item = schedule.next_longest(waiting, seconds)
                waiting.remove(item)
                _, submission, _ = item
                job = client.submit(grade_sent, submission.student, submission.path.name,
                                    submission.path.read_bytes(), pure=False)
                running[job] = item
                finished.add(job)
        try:
            hand_out()
            for job in finished:
                item = running.pop(job)
                try:
                    graded = job.result()
                except KilledWorker:
                    graded = grading_worker.Graded(Result.grader_failed(
                        item[1].path, item[1].student, "the Dask workers grading this notebook died each time"))
                job.release()
                seconds.setdefault(schedule.section_order(item[1].section), []).append(graded.result.seconds)
                hand_out()  # before the result is written: no worker waits for the instructor's disk
                yielded += 1
                yield item, graded
        except (CancelledError, FutureCancelledError, OSError) as error:  # OSError: Dask's CommClosedError
            raise ClusterError(f"the connection to the Dask scheduler at {address} was lost ({error}); "
                               f"{len(todo) - yielded} notebooks were not graded: run the same "
                               "command again to grade them") from None
    finally:
        client.close()
