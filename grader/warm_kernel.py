"""Kernels that start warm: forked from a process that has already imported the heavy libraries.

A fresh Python kernel spends most of a graded notebook's time starting: the interpreter, ipykernel,
then torch, pandas, matplotlib and scikit-learn (about 8 s on the course's 2-core machine, against
2-3 s for the notebook's own cells). When grading a class, every notebook pays that again.

Here a server process imports those libraries once and waits on a Unix socket. The kernel that
nbgrader launches is a small proxy: it hands the server its connection file, environment, folder
and standard streams; the server forks a child that becomes the real ipykernel (already holding
the libraries in memory), and the proxy stays in place of the kernel for jupyter_client:

- the proxy exits with the kernel's exit code when the kernel ends (so a crash, `os._exit` or an
  out-of-memory kill is seen as a dead kernel, exactly as with a normal kernel);
- a signal sent to the proxy (an interrupt) is passed on to the kernel;
- when the proxy is killed (nbgrader's timeout), the server kills the kernel.

Each fork is a new process with the libraries imported but nothing of any earlier notebook.
The libraries must not have run any computation before the fork (threads do not survive it), so
the server only imports. Course code (ticketnet, grader) is not preloaded: the notebook reads it.

    python -m grader.warm_kernel serve SOCKET OWNER_PID [MEMORY_MB]   # the server
    python grader/warm_kernel.py kernel SOCKET -f CONNECTION    # what the kernel spec runs
"""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import weakref
from pathlib import Path

NAME = "course-warm"  # the kernel spec's name
# torch._dynamo: the first optimizer a notebook creates imports it, about 2 s of some 800 modules.
# ipykernel.debugger: the kernel imports it while starting, and debugpy's import then scans every
# loaded module (torch's thousands): 0.5 s per kernel if it were left to the fork.
PRELOAD = ["numpy", "torch", "torch.nn", "torch.nn.functional", "torch.optim", "torch._dynamo",
           "pandas", "matplotlib.pyplot", "sklearn.feature_extraction.text", "sklearn.linear_model",
           "sklearn.pipeline", "tqdm.auto", "ipykernel.kernelapp", "ipykernel.ipkernel",
           "ipykernel.debugger"]
INLINE = "module://matplotlib_inline.backend_inline"  # what ipykernel would choose itself


# --- the server ------------------------------------------------------------------------------

def serve(path, owner, memory_mb=None):
    """Import the libraries, then fork a kernel for each proxy that connects, until process
    `owner` (the one that started the server) goes away. Each kernel may use `memory_mb` of
    memory at most."""
    os.environ.setdefault("MPLBACKEND", INLINE)  # matplotlib reads it once, on import
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's import-time warning
    import importlib
    for module in PRELOAD:
        importlib.import_module(module)
    # The owner is named on the command line, not read here: if it died during the imports, the
    # server has been re-parented already and would otherwise serve nobody forever.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen()
    kernels = {}  # kernel pid -> the proxy's connection
    while os.getppid() == owner:
        readable, _, _ = select.select([listener, *kernels.values()], [], [], 0.05)
        for sock in readable:
            if sock is listener:
                connection, _ = listener.accept()
                pid = _fork_kernel(connection, listener, memory_mb)
                kernels[pid] = connection
            else:  # the proxy is gone (killed on a timeout): its kernel goes too
                pid = next(p for p, c in kernels.items() if c is sock)
                _kill(pid)
        while kernels:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            connection = kernels.pop(pid, None)
            if connection is not None:
                try:
                    connection.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
                except OSError:
                    pass
                connection.close()
    for pid in kernels:
        _kill(pid)


def limit_memory(memory_mb):
    """Cap this process, and the processes it starts, at `memory_mb`: a bigger allocation then
    fails with a MemoryError in the notebook instead of bringing the machine down."""
    import resource
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _fork_kernel(connection, listener, memory_mb):
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    request = json.loads(message)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        connection.send(json.dumps({"pid": pid}).encode())
        return pid
    try:  # the child: become the kernel the proxy stands for
        listener.close()
        connection.close()
        if memory_mb:
            limit_memory(memory_mb)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        _become_kernel(request)
    except BaseException:
        import traceback
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def _become_kernel(request):
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL if number != signal.SIGINT else signal.default_int_handler)
    os.environ.clear()
    os.environ.update(request["env"])
    # ipykernel exits when its parent goes; the parent of this process is the server. (It reads
    # JPY_PARENT_PID when imported, in the server, hence the option.)
    os.environ["JPY_PARENT_PID"] = str(os.getppid())
    argv = [*request["argv"], f"--IPKernelApp.parent_handle={os.getppid()}"]
    backend = os.environ.setdefault("MPLBACKEND", INLINE)
    import matplotlib
    if matplotlib.rcParams["backend"] != backend:
        matplotlib.rcParams["backend"] = backend
    import random
    import numpy
    random.seed()  # a fresh process would not share the server's random state
    numpy.random.seed()
    os.chdir(request["cwd"])
    sys.path[0] = request["cwd"]  # as `python -m ipykernel_launcher` run in that folder has it
    sys.argv = ["ipykernel_launcher", *argv]
    from ipykernel.kernelapp import IPKernelApp
    IPKernelApp.launch_instance(argv=argv)


# --- the proxy -------------------------------------------------------------------------------

def proxy(path, argv):
    """Ask the server for a kernel and stand in for it until it ends."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        server.connect(str(path))
    except OSError as error:
        sys.exit(f"the warm-kernel server at {path} does not answer ({error}); "
                 "grade with fresh kernels (--fresh-kernels)")
    request = {"env": dict(os.environ), "cwd": os.getcwd(), "argv": argv}
    socket.send_fds(server, [json.dumps(request).encode()], [0, 1, 2])
    pid = json.loads(server.recv(1 << 16))["pid"]

    def forward(number, frame):
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
        signal.signal(number, forward)
    reply = server.recv(1 << 16)
    code = json.loads(reply)["exit"] if reply else 1  # no reply: the server died
    os._exit(code if code >= 0 else 128 - code)


# --- the grading side ------------------------------------------------------------------------

def use_warm_kernels(warm=None):
    """Whether to grade with warm kernels: as asked, and by default where forking a process that
    holds torch is safe (Linux; not macOS or Windows)."""
    return sys.platform.startswith("linux") if warm is None else bool(warm)


class WarmKernels:
    """A running server and a kernel spec named NAME that uses it, both in `folder`.

    Put `folder / "share"` first on JUPYTER_PATH (done here) and ask nbgrader for kernel NAME.
    Other processes use the same server through `WarmKernels.attach(folder)`.
    """

    def __init__(self, folder, memory_mb=None):
        self.folder = folder = Path(folder)
        self.socket = folder / "warm.sock"
        spec = folder / "share" / "kernels" / NAME
        spec.mkdir(parents=True, exist_ok=True)
        # The proxy runs as a script: it starts in the notebook's folder, where `grader` is not
        # importable, and needs nothing but the standard library.
        argv = [sys.executable, str(Path(__file__).resolve()), "kernel", str(self.socket),
                "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps(
            {"argv": argv, "display_name": "Python 3 (warm, for grading)", "language": "python"}))
        _put_first_on_jupyter_path(folder / "share")
        root = Path(__file__).resolve().parents[1]
        self.server = subprocess.Popen([sys.executable, "-m", "grader.warm_kernel", "serve", str(self.socket),
                                        str(os.getpid()), *([str(memory_mb)] if memory_mb else [])], cwd=root)
        weakref.finalize(self, _stop, self.server)  # also when the program ends without close()

    @classmethod
    def attach(cls, folder):
        """The kernels of a server that another process started in `folder`, waited for, and
        closes: this process only uses them."""
        kernels = cls.__new__(cls)
        kernels.folder = Path(folder)
        kernels.socket, kernels.server = kernels.folder / "warm.sock", None
        _put_first_on_jupyter_path(Path(folder) / "share")
        return kernels

    def wait(self, timeout=120):
        """Return once the server has imported everything and listens."""
        deadline = time.monotonic() + timeout
        while not self.socket.exists():
            if self.server is None or self.server.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("the warm-kernel server did not start; grade with --fresh-kernels")
            time.sleep(0.05)

    def close(self):
        _stop(self.server)


def _put_first_on_jupyter_path(share):
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p and p != str(share)]
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(share), *paths])


def _stop(server):
    if server is not None and server.poll() is None:
        server.terminate()
        server.wait()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) in (3, 4) and argv[0] == "serve":
        serve(argv[1], *map(int, argv[2:]))
    elif len(argv) >= 2 and argv[0] == "kernel":
        proxy(argv[1], argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
