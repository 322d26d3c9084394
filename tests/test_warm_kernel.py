"""The grading kernels forked from a warm process (grader/warm_kernel.py) behave as fresh ones:
their own folder, random state and matplotlib backend; interrupts reach them; a killed proxy
takes its kernel along; and a notebook grades the same with fresh and with warm kernels."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

from grader import grading, sample_class
from grader.warm_kernel import NAME, WarmKernels

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    saved = os.environ.get("JUPYTER_PATH")
    kernels = WarmKernels(tmp_path_factory.mktemp("warm"))
    kernels.wait()
    yield kernels
    kernels.close()
    if saved is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = saved


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


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_a_forked_kernel_is_a_fresh_process_in_the_notebooks_folder(warm, tmp_path):
    seen = []
    for folder in (tmp_path / "one", tmp_path / "two"):
        folder.mkdir()
        manager, client = start_new_kernel(kernel_name=NAME, cwd=str(folder))
        try:
            status, value = _run(client, "import os, random, sys, torch, matplotlib\n"
                                 "(os.getcwd(), sys.path[0], random.random(), matplotlib.get_backend(), "
                                 "'torch' in sys.modules)")
            assert status == "ok"
            cwd, path0, number, backend, _ = eval(value)
            assert cwd == path0 == str(folder)
            assert backend == "module://matplotlib_inline.backend_inline"
            seen.append(number)
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    assert seen[0] != seen[1], "two forks share the server's random state"


def test_an_interrupt_reaches_the_kernel_and_a_kill_takes_it_down(warm, tmp_path):
    manager, client = start_new_kernel(kernel_name=NAME, cwd=str(tmp_path))
    try:
        status, pid = _run(client, "import os; os.getpid()")
        pid = int(pid)
        assert pid != manager.provisioner.process.pid  # the kernel is the fork, not the proxy
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
        manager.shutdown_kernel(now=True)  # kills the proxy's process group
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the kernel outlived its proxy"


def test_a_kernel_that_exits_ends_its_proxy_with_its_code(warm, tmp_path):
    manager, client = start_new_kernel(kernel_name=NAME, cwd=str(tmp_path))
    try:
        client.execute("import os; os._exit(7)")
        deadline = time.monotonic() + 10
        while manager.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not manager.is_alive()
        assert manager.provisioner.process.returncode == 7
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_fresh_and_warm_kernels_grade_a_notebook_alike(tmp_path):
    notebook = sample_class.CLASS / "dot" / "02-positions.ipynb"  # the catalogue's typical mistakes
    results = [grading.GradingCourse(tmp_path / kind, timeout=60, warm=kind == "warm").grade(notebook)
               for kind in ("fresh", "warm")]
    fresh, warm_ = ({k: v for k, v in r.items() if k != "notebook"} for r in results)
    assert fresh == warm_
    assert fresh["score"] < fresh["max_score"] and all(t["message"] for t in fresh["tasks"] if not t["score"])


def test_a_shared_server_limits_each_kernels_memory_and_outlives_its_users(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", os.environ.get("JUPYTER_PATH", ""))  # restored afterwards
    owner = WarmKernels(tmp_path / "server", memory_mb=1536)
    try:
        owner.wait()
        user = WarmKernels.attach(tmp_path / "server")  # as an autograde worker does
        user.wait()
        manager, client = start_new_kernel(kernel_name=NAME, cwd=str(tmp_path))
        try:
            assert _run(client, "import numpy; numpy.ones(2**20).nbytes") == ("ok", str(2**23))
            assert _run(client, "numpy.ones(2**28)") == ("error", "MemoryError")  # 2 GiB
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
        user.close()
        assert owner.server.poll() is None, "a user's close() stopped the owner's server"
    finally:
        owner.close()


def _servers_of(socket):
    """The pids of warm-kernel servers listening (or about to listen) on `socket`."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and str(socket).encode() in argv:
            pids.append(int(proc.name))
    return pids


def test_a_server_whose_owner_died_during_its_imports_stops(tmp_path):
    """The owner may die before the server has imported torch (a grader killed at once): the
    server must not then wait for connections from nobody, forever."""
    folder = tmp_path / "warm"
    starter = ("import os, sys; from grader.warm_kernel import WarmKernels; "
               f"kernels = WarmKernels({str(folder)!r}); os._exit(0)")  # no close(), no finalizer
    # Not capture_output: the server inherits the pipes and would hold them open.
    subprocess.run([sys.executable, "-c", starter], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket = folder / "warm.sock"
    assert _servers_of(socket), "the server was not started"
    deadline = time.monotonic() + 120
    while _servers_of(socket) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _servers_of(socket), "the server outlived the process that started it"
