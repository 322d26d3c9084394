"""The sandbox of a grading kernel (grader/sandbox.py), tried from inside a fresh kernel: what it
may see and do, row by row of the README's list, and that interrupts and kills still reach it."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

from grader import notebook_grader, sandbox
from grader.judge import check_cells
from grader.options import GradingOptions

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = notebook_grader.NotebookGrader(tmp_path_factory.mktemp("course"), GradingOptions(warm=False, memory_mb=2048))
    yield course
    course.close()


@pytest.fixture
def kernel(course):
    manager = KernelManager(kernel_name=course.api.config.Execute.kernel_name, transport="ipc",
                            ip=str(course.folder / "sockets" / "k"))
    manager.start_kernel(env={**os.environ, "NBGRADER_EXECUTION": "autograde", "SECRET_TOKEN": "x"})
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    yield manager, client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def _value(client, code):
    """The JSON that the last line of `code` prints."""
    outputs = []
    reply = client.execute_interactive(code, timeout=60, output_hook=outputs.append)
    assert reply["content"]["status"] == "ok", reply["content"]
    text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
    return json.loads(text.strip().splitlines()[-1])


PROBE = '''
import errno, json, os, socket, subprocess
from pathlib import Path
course = Path(os.environ["COURSE_ROOT"])
def attempt(action):
    try:
        action()
        return "allowed"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))
def big():
    with open(Path.home() / "big", "wb") as f:
        f.write(b"x" * (300 * 1024 * 1024))
seen = {
    "uid": os.getuid(), "home": str(Path.home()), "cwd": os.getcwd(),
    "course": sorted(p.name for p in course.iterdir()),
    "catalogue": attempt(lambda: os.listdir(course / "grader" / "catalogue")),
    "references": sorted(os.listdir(course / "grader" / "references")),
    "write course": attempt(lambda: open(course / "grader" / "checks" / "heads.py", "a")),
    "write home": attempt(lambda: (Path.home() / "mine").write_text("x")),
    "big file": attempt(big),
    "loopback": attempt(lambda: socket.create_connection(("127.0.0.1", 22), timeout=2)),
    "internet": attempt(lambda: socket.create_connection(("1.1.1.1", 443), timeout=2)),
    "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "signal first": attempt(lambda: os.kill(1, 9)),
    "env": sorted(os.environ),
    "root files": sorted(os.listdir("/")),
}
print(json.dumps(seen))
'''


def test_a_kernel_sees_and_may_do_only_what_its_sandbox_allows(course, kernel):
    _, client = kernel
    seen = _value(client, PROBE)
    assert seen["uid"] == sandbox.STUDENT and seen["home"] == seen["cwd"] == sandbox.HOME
    # the course's own .venv (a link to its environment, `make`), shown for its Python
    venv_inside = any(p.is_relative_to(ROOT) for p in (Path(sys.prefix), Path(sys.prefix).resolve()))
    assert seen["course"] == sorted(["bench", "data", "grader", "ticketnet.py"] + ([".venv"] if venv_inside else []))
    assert seen["catalogue"] == "EACCES"  # hidden: an empty folder no one may read
    assert seen["references"] == ["__init__.py", "expected.pt"]  # results, not the code that computes them
    assert seen["write course"] in ("EROFS", "EACCES") and seen["write home"] == "allowed"
    assert seen["big file"] in ("EFBIG", "ENOSPC")  # over the file-size limit and the size of HOME
    assert seen["loopback"] in ("ECONNREFUSED", "ENETUNREACH") and seen["internet"] == "ENETUNREACH"
    assert len(seen["processes"]) == 2  # the sandbox's first process and this kernel
    assert seen["signal first"] == "EPERM"
    assert "SECRET_TOKEN" not in seen["env"] and "NBGRADER_EXECUTION" in seen["env"]
    # the system's folders, and the top folder of each path the sandbox itself shows (the course,
    # its Python, the Banking77 folder, the sockets), wherever they lie: /work, /check, /root...
    ways_in = {Path(p).parts[1] for p in [*course.settings["read_only"], course.settings["sockets"]]}
    assert set(seen["root files"]) <= {"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "proc", "sbin",
                                       "tmp", "usr"} | ways_in


def test_an_interrupt_reaches_a_fresh_kernel_and_a_kill_ends_its_sandbox(kernel, processes_named):
    manager, client = kernel
    name = f"fresh-{os.getpid()}"
    client.execute_interactive(f"import ctypes; ctypes.CDLL(None).prctl(15, b'{name}')", timeout=30)
    assert len(processes_named(name)) == 1
    msg_id = client.execute("import time; time.sleep(60)", stop_on_error=False)
    time.sleep(1)
    manager.interrupt_kernel()
    reply = client.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["ename"] == "KeyboardInterrupt"
    manager.shutdown_kernel(now=True)
    deadline = time.monotonic() + 10
    while processes_named(name) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_named(name), "the kernel outlived its launcher"


def test_without_bubblewrap_autograde_refuses_and_check_runs_unconfined_saying_so(tmp_path):
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    env = {**os.environ, "PATH": f"{bin_folder}:/nonexistent"}  # no bwrap on the PATH
    python = sys.executable
    run = subprocess.run([python, "-m", "grader", "autograde", str(tmp_path), "--out", str(tmp_path / "out")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "bubblewrap is not installed" in run.stderr and "--no-sandbox" in run.stderr
    assert not (tmp_path / "out").exists()
    # the student's own check runs unconfined, says so, and needs no util-linux (prlimit) either
    notebook = ROOT / "grader" / "examples" / "class" / "hal" / "03-norms.ipynb"
    env["PATH"] = f"{bin_folder}:{Path(sys.executable).parent}"
    checked = subprocess.run([python, "-m", "grader", "check", "--fresh-kernels", str(notebook)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert "not sandboxed (bubblewrap is not installed" in checked.stderr
    full = sum(points for _, points in check_cells("03-norms").values())
    assert f"score {full}/{full}" in checked.stdout
