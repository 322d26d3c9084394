"""Kernels that start warm: forked from a process that has already imported the heavy libraries.

A fresh Python kernel spends most of a graded notebook's time starting: the interpreter, ipykernel,
then torch, pandas, matplotlib and scikit-learn (about 8 s on the course's 2-core machine, against
2-3 s for the notebook's own cells). When grading a class, every notebook pays that again.

Here a server process imports those libraries once and waits on a Unix socket. The kernel that
nbgrader launches is a small proxy: it hands the server its connection file, environment and
standard streams; the server forks a child that becomes the real ipykernel (already holding the
libraries in memory), and the proxy stays in place of the kernel for jupyter_client:

- the proxy exits with the kernel's exit code when the kernel ends (so a crash, `os._exit` or an
  out-of-memory kill is seen as a dead kernel, exactly as with a normal kernel);
- a signal sent to the proxy (an interrupt) is passed on to the kernel, through the server;
- when the proxy is killed (nbgrader's timeout), the server kills the kernel.

Each fork is a new process with the libraries imported but nothing of any earlier notebook: it
keeps no descriptor but its own three, and the server forks only while it has a single thread
and no ZeroMQ context (checked before every fork; a server that fails the check stops, and
grading falls back to fresh kernels). Course code is not preloaded: the notebook reads it.

Sandboxed (grader.sandbox), each grading process has a server of its own in a sandbox, one kernel
at a time. The server is the sandbox's first process: its kernels can neither see nor signal it
(Linux drops a signal to a namespace's first process that it does not handle), nor trace it (it is
not dumpable). When a kernel ends, the server kills every other process in the sandbox and empties
every folder it can write to (the sandbox's `writable` list: HOME, /tmp, /dev/shm and the socket
folder), so nothing of one submission reaches the next.

    python grader/warm_kernel.py serve LISTENER LIFELINE [SANDBOX]   # the server
    python grader/warm_kernel.py kernel SOCKET -f CONNECTION         # what the kernel spec runs
"""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import weakref
from pathlib import Path

# torch._dynamo: the first optimizer a notebook creates imports it, about 2 s of some 800 modules.
# ipykernel.debugger: the kernel imports it while starting, and debugpy's import then scans every
# loaded module (torch's thousands): 0.5 s per kernel if it were left to the fork.
PRELOAD = ["numpy", "torch", "torch.nn", "torch.nn.functional", "torch.optim", "torch._dynamo",
           "pandas", "matplotlib.pyplot", "sklearn.feature_extraction.text", "sklearn.linear_model",
           "sklearn.pipeline", "tqdm.auto", "ipykernel.kernelapp", "ipykernel.ipkernel",
           "ipykernel.debugger"]
INLINE = "module://matplotlib_inline.backend_inline"  # what ipykernel would choose itself
UNFIT = 3  # the server's exit code when it is unfit to fork kernels


# --- the server ------------------------------------------------------------------------------

def serve(listener_fd, lifeline_fd, settings):
    """Import the libraries, say "ready" on the socket `lifeline_fd`, then fork a kernel for each
    proxy that connects on the listening socket `listener_fd`, until the lifeline closes (the
    grading process is gone). `settings`: the limits of each kernel and, when sandboxed, the
    sandbox this server runs in (grader.sandbox.settings)."""
    os.environ.setdefault("MPLBACKEND", INLINE)  # matplotlib reads it once, on import
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's import-time warning
    if os.getpid() == 1:  # the sandbox's first process: untouchable from inside, if it never handles a signal
        import ctypes
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace, no /proc/1/mem
    import importlib
    for module in PRELOAD:
        importlib.import_module(module)
    unfit = fork_hazards()
    if unfit:
        sys.exit(f"the warm-kernel server cannot fork kernels safely: {unfit}")
    listener = socket.socket(fileno=listener_fd)
    lifeline = socket.socket(fileno=lifeline_fd)
    lifeline.send(b"r")
    sandbox = settings if settings.get("sandboxed") else None
    kernel = None  # (pid, the proxy's connection)
    while True:
        watched = [listener, lifeline, *([kernel[1]] if kernel else [])]
        readable, _, _ = select.select(watched, [], [], 0.05)
        if lifeline in readable:  # the grading process is gone
            break
        if kernel and kernel[1] in readable:  # a signal for the kernel, or its proxy was killed
            _forward(kernel[0], _received(kernel[1]))
        if listener in readable:
            connection, _ = listener.accept()
            if kernel:  # one kernel at a time: the sweep below must not take a live one
                _kill(kernel[0])
                _wait_and_sweep(kernel, sandbox)
            kernel = _fork_kernel(connection, [listener, lifeline], settings)
        if kernel:
            pid, status = os.waitpid(kernel[0], os.WNOHANG)
            if pid:
                _reply(kernel[1], {"exit": os.waitstatus_to_exitcode(status)})
                _sweep(sandbox)
                kernel = None
    if kernel:
        _kill(kernel[0])


def fork_hazards():
    """Why forking this process now would give a broken kernel, or "" if it would not: a fork
    copies one thread only (another's locks stay held), and a ZeroMQ context owns threads too."""
    if threading.active_count() > 1:
        return f"{threading.active_count()} threads are running"
    zmq = sys.modules.get("zmq")
    if zmq is not None and zmq.Context._instance is not None:
        return "a ZeroMQ context exists"
    return ""


def _received(connection):
    try:
        return connection.recv(1 << 16)
    except OSError:
        return b""


def _forward(pid, message):
    """Pass the signal a proxy sent on to its kernel; no message: the proxy is gone, so is the kernel."""
    try:
        os.kill(pid, json.loads(message)["signal"] if message else 9)
    except (ProcessLookupError, ValueError, KeyError, TypeError):
        pass


def _reply(connection, message):
    try:
        connection.send(json.dumps(message).encode())
    except OSError:
        pass
    connection.close()


def _kill(pid):
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


def _wait_and_sweep(kernel, sandbox):
    os.waitpid(kernel[0], 0)
    _reply(kernel[1], {"exit": -9})
    _sweep(sandbox)


def _sweep(sandbox):
    """After a kernel: in a sandbox, end every process it left and empty the folders it could
    write to (the socket folder's files are the grader's to remove, but a kernel may leave more)."""
    if not sandbox or os.getpid() != 1:
        return
    while True:
        try:
            os.kill(-1, 9)  # every process of the namespace but this one
        except ProcessLookupError:
            break
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
    mounts = [sandbox["sockets"], *sandbox["read_only"]]
    for folder in sandbox["writable"]:
        for path in Path(folder).iterdir():
            # the folders bwrap made on the way to a mount are root's, and no kernel can write to them
            if not any(mount == str(path) or mount.startswith(f"{path}/") for mount in mounts):
                _remove(path)


def _remove(path):
    """Remove `path`, whatever its permissions (the kernel may have taken its own away)."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    path.chmod(0o700)
    for inner in path.iterdir():
        _remove(inner)
    path.rmdir()


def _fork_kernel(connection, inherited, settings):
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    request = json.loads(message)
    unfit = fork_hazards()
    if unfit:
        for fd in fds:
            os.close(fd)
        _reply(connection, {"error": f"the warm-kernel server cannot fork a kernel safely: {unfit}"})
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        connection.send(json.dumps({"pid": pid}).encode())
        return pid, connection
    try:  # the child: become the kernel the proxy stands for
        connection.close()
        for thing in inherited:
            thing.close()
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # no descriptor but its own three
        from sandbox import apply_limits  # grader/sandbox.py, beside this file
        apply_limits(settings["limits"])
        _become_kernel(request, settings if settings.get("sandboxed") else None)
    except BaseException:
        import traceback
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def _become_kernel(request, sandbox):
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL if number != signal.SIGINT else signal.default_int_handler)
    argv, cwd = request["argv"], request["cwd"]
    os.environ.clear()
    if sandbox:  # the sandbox's environment and folders, and a private copy of the connection file
        os.environ.update(sandbox["env"])
        os.environ.update({k: v for k, v in request["env"].items() if k in sandbox["passed_on"]})
        cwd = sandbox["home"]
        connection = Path(cwd) / ".kernel.json"
        connection.write_text(request["connection"])
        argv = [*argv[:argv.index("-f") + 1], str(connection), *argv[argv.index("-f") + 2:]]
    else:
        os.environ.update(request["env"])
    # ipykernel exits when its parent goes; the parent of this process is the server. (It reads
    # JPY_PARENT_PID when imported, in the server, hence the option.)
    os.environ["JPY_PARENT_PID"] = str(os.getppid())
    argv = [*argv, f"--IPKernelApp.parent_handle={os.getppid()}"]
    backend = os.environ.setdefault("MPLBACKEND", INLINE)
    import matplotlib
    if matplotlib.rcParams["backend"] != backend:
        matplotlib.rcParams["backend"] = backend
    import random
    import numpy
    random.seed()  # a fresh process would not share the server's random state
    numpy.random.seed()
    os.chdir(cwd)
    sys.path[0] = cwd  # as `python -m ipykernel_launcher` run in that folder has it
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
        sys.exit(f"the warm-kernel server at {path} does not answer ({error})")
    connection = argv[argv.index("-f") + 1]
    request = {"env": dict(os.environ), "cwd": os.getcwd(), "argv": argv,
               "connection": Path(connection).read_text()}
    socket.send_fds(server, [json.dumps(request).encode()], [0, 1, 2])
    started = json.loads(server.recv(1 << 16) or b'{"error": "the warm-kernel server stopped"}')
    if "error" in started:
        sys.exit(started["error"])

    def forward(number, frame):  # the kernel's pid is the server's to know: it lives in the sandbox
        try:
            server.send(json.dumps({"signal": number}).encode())
        except OSError:
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
    """A server, and a kernel spec in `folder` that uses it: ask nbgrader for kernel `.name`.

    `settings`: the server's sandbox (grader.sandbox.settings) and the limits of its kernels.
    """

    def __init__(self, folder, settings):
        self.folder = folder = Path(folder)
        self.socket = folder / "warm.sock"
        # The proxy runs as a script: it starts in the notebook's folder, where `grader` is not
        # importable, and needs nothing but the standard library.
        self.name = kernel_spec(folder, "warm", [sys.executable, str(Path(__file__).resolve()), "kernel",
                                                 str(self.socket), "-f", "{connection_file}"])
        # The listening socket is made here and handed down: in a sandbox, its folder is not in view.
        self.socket.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(str(self.socket))
        listener.listen()
        # The lifeline: the server says "ready" on it, and stops when it closes (this process gone).
        self.lifeline, theirs = socket.socketpair()
        self.ready = False
        fds = (listener.fileno(), theirs.fileno())
        command = [sys.executable, str(Path(__file__).resolve()), "serve", *map(str, fds), json.dumps(settings)]
        if settings.get("sandboxed"):
            from grader.sandbox import command as sandboxed
            command = sandboxed(settings, command, limits=False)
        self.server = subprocess.Popen(command, pass_fds=fds)
        listener.close()
        theirs.close()
        weakref.finalize(self, _stop, self.server)  # also when the program ends without close()

    def wait(self, timeout=120):
        """Return once the server has imported everything and listens; raise RuntimeError if it
        cannot serve (it stopped, or it is unfit to fork)."""
        if self.ready:
            return
        self.lifeline.settimeout(timeout)
        try:
            self.ready = self.lifeline.recv(1) == b"r"
        except OSError:
            pass
        if not self.ready:
            self.close()
            raise RuntimeError("the warm-kernel server did not start")

    def alive(self):
        return self.server.poll() is None

    def close(self):
        self.lifeline.close()
        _stop(self.server)


def kernel_spec(folder, kind, argv):
    """Write a grading kernel spec running `argv` in `folder`, put it first on JUPYTER_PATH and
    return its name, one of this folder's own: two courses in one process never mix theirs up."""
    import hashlib
    name = f"course-{kind}-{hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:12]}"
    spec = Path(folder) / "share" / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    # Interrupts are signals to the process of argv, which passes them on into the sandbox (a message
    # on the control channel would wait for ever on a kernel that broke its end of the connection).
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": f"Python 3 ({kind}, for grading)",
                                                  "language": "python"}))
    share = str(Path(folder) / "share")
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p and p != share]
    os.environ["JUPYTER_PATH"] = os.pathsep.join([share, *paths])
    return name


def _stop(server):
    if server is not None and server.poll() is None:
        server.terminate()
        server.wait()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 4 and argv[0] == "serve":
        serve(int(argv[1]), int(argv[2]), json.loads(argv[3]))
    elif len(argv) >= 2 and argv[0] == "kernel":
        proxy(argv[1], argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
