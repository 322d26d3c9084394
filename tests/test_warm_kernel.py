"""The grading kernels forked from a warm process (grader/warm_kernel.py) behave as fresh ones:
their own random state and matplotlib backend, a fresh HOME in their own sandbox; interrupts reach
them; a killed proxy takes its kernel along; nothing of one kernel reaches the next; and a notebook
grades the same with fresh and with warm kernels."""

import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

from grader import notebook_grader, sample_class, sandbox, warm_kernel
from grader.options import GradingOptions
from grader.warm_kernel import WarmKernels

ROOT = Path(__file__).resolve().parents[1]


def _settings(folder, **limits):
    sockets = Path(folder) / "sockets"
    sockets.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(sockets, sandbox.STUDENT, sandbox.STUDENT)
    return sandbox.settings(sockets, limits=limits)


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    saved = os.environ.get("JUPYTER_PATH")
    folder = tmp_path_factory.mktemp("warm")
    kernels = WarmKernels(folder / "server", _settings(folder))
    kernels.wait()
    yield kernels
    kernels.close()
    if saved is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = saved


def start_kernel(kernels, **env):
    """A kernel of `kernels` as nbgrader starts one (Unix sockets in the sandbox's folder)."""
    manager = KernelManager(kernel_name=kernels.name, transport="ipc",
                            ip=str(Path(kernels.folder).parent / "sockets" / "k"))
    manager.start_kernel(env={**os.environ, **env})
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return manager, client


def _run(client, code, timeout=60):
    """Execute `code`; returns (status, the text of the last expression or the error name)."""
    msg_id = client.execute(code)
    reply = client.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=timeout)
    value = None
    while True:
        message = client.get_iopub_msg(timeout=timeout)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "execute_result":
            value = message["content"]["data"]["text/plain"]
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    content = reply["content"]
    return content["status"], value if content["status"] == "ok" else content.get("ename", content["status"])


def _wait_until(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return condition()


def test_a_forked_kernel_is_a_fresh_process_in_a_fresh_home(warm):
    seen = []
    for _ in range(2):
        manager, client = start_kernel(warm)
        try:
            status, value = _run(client, "import os, random, sys, torch, matplotlib\n"
                                 "(os.getcwd(), sys.path[0], os.environ['HOME'], os.listdir(), random.random(), "
                                 "matplotlib.get_backend(), os.getuid(), 'torch' in sys.modules)")
            assert status == "ok"
            cwd, path0, home, listed, number, backend, uid, _ = eval(value)
            assert cwd == path0 == home == sandbox.HOME
            assert "left-behind" not in listed  # nothing of the kernel before
            assert backend == "module://matplotlib_inline.backend_inline"
            assert uid == sandbox.STUDENT
            seen.append(number)
            _run(client, "open('left-behind', 'w').write('x'); open('/tmp/left-behind', 'w').write('x')")
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    assert seen[0] != seen[1], "two forks share the server's random state"


def test_an_interrupt_reaches_the_kernel_and_a_kill_takes_it_down(warm, processes_named):
    manager, client = start_kernel(warm)
    name = f"kernel-{os.getpid()}"
    try:
        _run(client, f"import ctypes; ctypes.CDLL(None).prctl(15, b'{name}')")  # PR_SET_NAME
        assert len(processes_named(name)) == 1
        # stop_on_error=False: after the KeyboardInterrupt the kernel would otherwise abort the
        # requests that reach it in the next moments, the 1 + 1 below among them
        msg_id = client.execute("import time; time.sleep(60)", stop_on_error=False)
        time.sleep(1)
        manager.interrupt_kernel()
        reply = client.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        assert _run(client, "1 + 1")[1] == "2"  # still alive after the interrupt
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)  # SIGKILL to the proxy, as nbgrader's last resort
    assert _wait_until(lambda: not processes_named(name)), "the kernel outlived its proxy"


def test_a_kernel_that_exits_ends_its_proxy_with_its_code(warm):
    manager, client = start_kernel(warm)
    try:
        client.execute("import os; os._exit(7)")
        assert _wait_until(lambda: not manager.is_alive())
        assert manager.provisioner.process.returncode == 7
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_nothing_of_one_kernel_reaches_the_next_and_none_can_touch_the_server(warm):
    """A kernel that leaves a detached process, files, and tries to kill or trace its server:
    the server lives on, and the next kernel finds no process and no file of it."""
    manager, client = start_kernel(warm)
    try:
        code = ("import os, signal, subprocess\n"
                "subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
                "open('/tmp/planted', 'w').write('x'); os.makedirs('own/locked'); os.chmod('own', 0)\n"
                "for number in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP, signal.SIGINT):\n"
                "    os.kill(1, number)\n"
                "import ctypes; traced = ctypes.CDLL(None).ptrace(16, 1, 0, 0)\n"  # PTRACE_ATTACH
                "(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), traced)")
        status, value = _run(client, code)
        assert status == "ok"
        processes, traced = eval(value)
        assert 1 in processes and len(processes) >= 3  # the server, the kernel, the sleep
        assert traced == -1, "a kernel could trace its server"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert warm.alive(), "a kernel's signals reached the server"
    manager, client = start_kernel(warm)
    try:
        status, value = _run(client, "import os; (sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), "
                             "os.listdir('/tmp'), os.listdir())")
        processes, in_tmp, at_home = eval(value)
        assert len(processes) == 2, f"processes left by the kernel before: {processes}"  # the server, this kernel
        assert "planted" not in in_tmp and "own" not in at_home
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_kernel_writes_only_to_the_sandboxs_writable_folders_and_the_next_finds_them_empty(warm):
    """The folders a kernel can write to are exactly the sandbox's `writable` list (read from the
    kernel's own mount table, so a mount added without the list is caught), and the server empties
    each of them, /dev/shm included, before the next kernel."""
    sockets = str(Path(warm.folder).parent / "sockets")
    writable = sandbox.settings(sockets)["writable"]
    assert {"/tmp", "/dev/shm", sandbox.HOME, sockets} == set(writable)
    find = ("import os\n"
            "found = set()\n"
            "for line in open('/proc/self/mountinfo'):\n"
            "    point, options = line.split()[4], line.split()[5]\n"
            "    if 'rw' in options.split(',') and os.path.isdir(point) and os.access(point, os.W_OK):\n"
            "        found.add(point)\n")
    manager, client = start_kernel(warm)
    try:
        plant = "".join(f"open({folder + '/planted-' + str(n)!r}, 'w').write('x')\n" for n, folder in enumerate(writable))
        status, value = _run(client, find + plant + "sorted(found)")
        assert status == "ok", value
        assert set(eval(value)) == set(writable), "a writable mount the server does not empty"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    manager, client = start_kernel(warm)
    try:
        status, value = _run(client, f"import os; sorted(n for f in {writable!r} for n in os.listdir(f) if 'planted' in n)")
        assert status == "ok", value
        assert eval(value) == [], "a file of the previous kernel reached this one"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_fresh_and_warm_kernels_grade_a_notebook_alike(tmp_path):
    notebook = sample_class.CLASS / "dot" / "02-positions.ipynb"  # the catalogue's typical mistakes
    results = [notebook_grader.NotebookGrader(tmp_path / kind, GradingOptions(warm=kind == "warm")).grade(notebook)
               for kind in ("fresh", "warm")]
    fresh, warm_ = (replace(r, notebook="") for r in results)  # every field but the notebook
    assert fresh == warm_
    assert fresh.score < fresh.max_score and all(t.message for t in fresh.tasks if not t.score)


def test_a_kernel_has_its_memory_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", os.environ.get("JUPYTER_PATH", ""))  # restored afterwards
    kernels = WarmKernels(tmp_path / "server", _settings(tmp_path, memory_mb=1536))
    try:
        kernels.wait()
        manager, client = start_kernel(kernels)
        try:
            assert _run(client, "import numpy; numpy.ones(2**20).nbytes") == ("ok", str(2**23))
            assert _run(client, "numpy.ones(2**28)") == ("error", "MemoryError")  # 2 GiB
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    finally:
        kernels.close()


def test_a_server_with_a_second_thread_refuses_to_fork():
    """In fresh interpreters: this test's own process may hold threads of earlier tests."""
    def hazards(setup):
        code = f"import sys, threading; sys.path.insert(0, 'grader'); import warm_kernel as w\n{setup}\nprint(w.fork_hazards())"
        return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                              check=True).stdout.strip()

    assert hazards("") == ""
    assert hazards("threading.Thread(target=threading.Event().wait, daemon=True).start()") == "2 threads are running"
    assert hazards("import zmq; zmq.Context.instance()") == "a ZeroMQ context exists"
    code = ("import socket, threading, sys; sys.path.insert(0, 'grader'); import warm_kernel as w\n"
            "w.PRELOAD = []; threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
            "listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); ours, theirs = socket.socketpair()\n"
            "w.serve(listener.fileno(), theirs.fileno(), {'limits': {}})")
    stopped = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 1
    assert "cannot fork kernels safely: 2 threads are running" in stopped.stderr


def test_a_stopped_server_is_started_again_and_one_that_cannot_start_leaves_fresh_kernels(tmp_path, monkeypatch, capsys):
    notebook = sample_class.CLASS / "hal" / "03-norms.ipynb"
    course = notebook_grader.NotebookGrader(tmp_path / "course")
    course.kernels.wait()
    course.kernels.server.kill()
    course.kernels.server.wait()
    result = course.grade(notebook)
    assert result.score == result.max_score and course.kernels.alive()

    def cannot_start(self, timeout=120):
        self.close()
        raise RuntimeError("the warm-kernel server did not start")
    monkeypatch.setattr(WarmKernels, "wait", cannot_start)
    course = notebook_grader.NotebookGrader(tmp_path / "another")
    result = course.grade(notebook)
    assert result.score == result.max_score and course.kernels is None
    assert "the warm-kernel server did not start: grading with fresh kernels" in capsys.readouterr().err
