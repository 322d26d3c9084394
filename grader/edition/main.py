"""`python -m grader check NOTEBOOK`: run a notebook of the course and say which checks pass.

This is the student edition of the course, so it runs the checks you see in the notebook and no
others. Your instructor's grader runs them too, and hidden tests on other inputs besides, so a
task that passes here can still lose points there; the written answers are graded by hand.

The notebook runs as the autograder runs it: top to bottom in a new Python process, the trained
sections training for a moment only, each cell within a time limit. Most of a check's time would
go into starting Python and importing PyTorch, so the first check starts a small server that has
imported them once; each later check runs in a fresh copy of it (a fork: nothing of an earlier
notebook is in it), in about the time the notebook's own cells take. The server serves only you
(its socket lies in a folder only you can enter, and it answers no other user), stops after 15
minutes without a check, and is started anew after you upgrade a library. `--no-server` runs the
notebook in a new process instead, as on systems where forking is unsafe (macOS, Windows).

    python -m grader check NOTEBOOK [--timeout SECONDS] [--no-server]
    python -m grader stop          # stop your check servers now
"""

import argparse
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

EDITION = Path(__file__).resolve().parents[1]
# Imported by the server once, so that a check does not wait for them.
PRELOAD = ["numpy", "torch", "torch.nn", "torch.nn.functional", "torch.optim", "torch._dynamo", "pandas",
           "matplotlib.pyplot", "sklearn.feature_extraction.text", "sklearn.linear_model", "sklearn.pipeline",
           "tqdm.auto", "IPython.core.interactiveshell", "nbformat"]
LIBRARIES = ["torch", "numpy", "pandas", "matplotlib", "scikit-learn", "tqdm", "ipython", "nbformat"]
ENVIRONMENT = ["BANKING77_DIR", "TICKETNET_CACHE", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PATH", "PYTHONPATH"]
IDLE = 900  # seconds a server waits for a check before it stops
START = 120  # seconds a check waits for a new server to listen


class CellTimeout(BaseException):
    """A cell ran past its time limit. Like Jupyter's interrupt (KeyboardInterrupt), no
    `except Exception` of a check or an answer catches it."""


# --- running a notebook -----------------------------------------------------------------------

def run_cells(path, timeout):
    """Run the code cells of the notebook at `path` in this process, in its folder, as the
    autograder would (NBGRADER_EXECUTION set). Returns {"ran": [cell numbers], "errors": {cell
    number: [name, message]}, "stopped": None or why the cells after one did not run}."""
    import matplotlib
    matplotlib.use("Agg")  # figures are drawn, never shown
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    notebook = nbformat.read(path, as_version=4)
    os.chdir(Path(path).parent)
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    sys.path.insert(0, str(Path(path).parent))
    config = Config()
    config.HistoryManager.enabled = False  # no history file, no thread saving it
    shell = InteractiveShell(config=config)
    # no traceback is shown, and formatting one costs a tenth of a second: each error is kept as is
    shell.showtraceback = shell.showsyntaxerror = lambda *args, **kwargs: None

    def stop(number, frame):
        raise CellTimeout()
    signal.signal(signal.SIGALRM, stop)
    ran, errors, stopped = [], {}, None
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        signal.alarm(timeout)
        try:
            result = shell.run_cell(cell.source, store_history=True)
        except CellTimeout:  # raised outside the cell's own code
            result = None
        finally:
            signal.alarm(0)
        ran.append(number)
        error = result.error_in_exec or result.error_before_exec if result else CellTimeout()
        if isinstance(error, CellTimeout):
            code = [line.strip() for line in cell.source.splitlines() if line.strip()]
            first = next((line for line in code if not line.startswith("#")), code[0] if code else "(empty)")
            code_number = sum(c.cell_type == "code" for c in notebook.cells[:number + 1])
            stopped = (f"code cell {code_number} ({first!r}) ran past the {timeout} s limit and was stopped; the "
                       "cells after it did not run (an endless loop? --timeout gives more time)")
            errors[number] = ["TimeoutError", f"the cell ran past the {timeout} s limit"]
            break
        if error is not None:
            errors[number] = [type(error).__name__, str(error)]
    return {"ran": ran, "errors": errors, "stopped": stopped}


def _run_quietly(path, timeout, answer):
    """In a process of its own: run the notebook with its output thrown away (only the verdicts
    matter here) and write the result as JSON to the file descriptor `answer`."""
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    try:
        result = run_cells(path, timeout)
    except Exception as error:  # noqa: BLE001 - a notebook nbformat cannot read, say
        result = {"ran": [], "errors": {}, "stopped": f"the notebook could not run: {error}"}
    data = json.dumps(result).encode()
    while data:
        data = data[os.write(answer, data):]


def run_alone(path, timeout):
    """Run the notebook in a new Python process (no server)."""
    read, write = os.pipe()
    child = subprocess.Popen([sys.executable, "-m", "grader", "_run", str(path), str(timeout), str(write)],
                             cwd=EDITION, pass_fds=[write], stdin=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        data = answer.read()
    return _result(data, child.wait())


def _result(data, status):
    if data:
        return json.loads(data)
    return {"ran": [], "errors": {}, "stopped": f"the notebook's process died (exit status {status}; out of memory?); "
            "its cells did not all run"}


# --- the server -------------------------------------------------------------------------------

def server_folder():
    """The folder of this user's servers, mode 0700, in $XDG_RUNTIME_DIR or the temporary folder;
    refused unless it is the user's own and closed to others."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    parent = Path(runtime) if runtime and Path(runtime).is_dir() else Path(tempfile.gettempdir())
    folder = parent / f"transformer-block-course-student-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not a folder of yours closed to others")
    return folder


def server_key():
    """Which server may run this edition's checks: this Python, this edition, these libraries and
    these settings (a server runs every check with the environment it started with)."""
    versions = [f"{name}={os.environ.get(name)}" for name in ENVIRONMENT]
    for name in LIBRARIES:
        try:
            versions.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}=none")
    return hashlib.sha256("\n".join([sys.executable, str(EDITION), *versions]).encode()).hexdigest()[:16]


def _peer_uid(connection):
    return struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]


def serve(path):
    """Import PRELOAD, listen on the socket `path`, and fork a runner for each check. (The server
    works in the socket's folder: a Unix socket's path may hold only 107 bytes, and a runtime
    folder can be deeper than that.)"""
    import importlib
    for name in PRELOAD:
        importlib.import_module(name)
    folder, name = os.path.split(path)
    os.chdir(folder)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    partial = f"{name}.{os.getpid()}"
    listener.bind(partial)
    listener.listen()
    os.replace(partial, name)  # a check connects only to a server that listens
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # runners are reaped by the system
    listener.settimeout(IDLE)
    try:
        while True:
            try:
                connection, _ = listener.accept()
            except socket.timeout:
                return
            if _peer_uid(connection) != os.getuid():
                connection.close()
                continue
            if os.fork() == 0:  # the runner: this warm process, without the listener
                listener.close()
                request = json.loads(connection.makefile("rb").readline())
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _run_quietly(request["notebook"], request["timeout"], connection.fileno())
                os._exit(0)
            connection.close()
    finally:
        if os.path.exists(name) and os.stat(name).st_ino == os.fstat(listener.fileno()).st_ino:
            os.unlink(name)


def run_on_server(path, timeout):
    """Run the notebook on this user's server for this edition, starting one if need be. Returns
    (result, None), or (None, why) when no server could run it (the caller then runs it alone)."""
    folder = server_folder()
    name = f"{server_key()}.sock"
    connection = _connect(folder, name)
    if connection is None:
        log = folder / f"{server_key()}.log"
        with open(log, "wb") as output:
            server = subprocess.Popen([sys.executable, "-m", "grader", "_serve", str(folder / name)], cwd=EDITION,
                                      stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True)
        deadline = time.monotonic() + START
        while connection is None and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            connection = _connect(folder, name)
        if connection is None:
            said = (log.read_text(errors="replace").strip().splitlines() or ["nothing"])[-1]
            return None, f"the check server did not start ({said[:200]})"
    with connection:
        if _peer_uid(connection) != os.getuid():
            return None, "the check server's socket belongs to another user"
        connection.sendall(json.dumps({"notebook": str(path), "timeout": timeout}).encode() + b"\n")
        data = connection.makefile("rb").read()
    return _result(data, "unknown"), None


def _connect(folder, name):
    """A connection to the server listening on folder/name, or None. (Reached through a descriptor
    of the folder: the full path may be longer than a Unix socket's 107 bytes.)"""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        connection.connect(f"/proc/self/fd/{fd}/{name}")
        return connection
    except OSError:
        connection.close()
        return None
    finally:
        os.close(fd)


def stop_servers():
    """Stop every check server of this user; returns how many there were."""
    stopped = 0
    folder = server_folder()
    for address in folder.glob("*.sock"):
        connection = _connect(folder, address.name)
        if connection is not None:
            with connection:
                pid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
            os.kill(pid, signal.SIGTERM)
            stopped += 1
        address.unlink(missing_ok=True)
    return stopped


# --- the command ------------------------------------------------------------------------------

def check(notebook_path, timeout, use_server=True):
    import nbformat
    from grader.course import nbgrader_info

    path = Path(notebook_path).resolve()
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:  # not JSON, not a notebook
        print(f"cannot read {path}: {error}", file=sys.stderr)
        return 2
    tasks = [(n, c) for n, c in enumerate(notebook.cells)
             if c.cell_type == "code" and nbgrader_info(c).get("grade")]
    if not tasks:
        print(f"{path} holds no check cell of the course", file=sys.stderr)
        return 2
    print(f"running {path.name} (every cell, top to bottom) ...", flush=True)
    result = None
    if use_server and sys.platform.startswith("linux"):
        try:
            result, why = run_on_server(path, timeout)
        except OSError as error:
            why = f"the check server cannot be reached ({error})"
        if result is None:
            print(f"  {why}: this check runs in a new process", flush=True)
    if result is None:
        result = run_alone(path, timeout)
    if result["stopped"]:
        print(f"  {result['stopped']}")
    width = max(len(nbgrader_info(c)["grade_id"]) for _, c in tasks)
    earned = total = 0
    for number, cell in tasks:
        points = nbgrader_info(cell).get("points", 0)
        error = result["errors"].get(str(number)) or (
            None if number in result["ran"] else ["not run", "the notebook stopped before this check"])
        verdict = "passed" if not error else f"{error[0]}: {error[1]}".splitlines()[0]
        earned += 0 if error else points
        total += points
        print(f"  {nbgrader_info(cell)['grade_id']:<{width}}  {0 if error else points:g}/{points:g}  {verdict}")
    print(f"visible checks: {earned:g}/{total:g} points. Only the checks in the notebook ran: the "
          "autograder also runs hidden tests, and the written answers are graded by hand.")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    checker = verbs.add_parser("check", help="run a notebook and list its visible checks")
    checker.add_argument("notebook", help="a section notebook, wherever it lies")
    checker.add_argument("--timeout", type=int, default=600, help="seconds a cell may run (default 600)")
    checker.add_argument("--no-server", action="store_true", help="run in a new process, without the server")
    verbs.add_parser("stop", help="stop your check servers")
    runner = verbs.add_parser("_run")  # what --no-server starts
    runner.add_argument("notebook")
    runner.add_argument("timeout", type=int)
    runner.add_argument("answer", type=int)
    server = verbs.add_parser("_serve")  # what a check starts
    server.add_argument("address")
    args = parser.parse_args(argv)
    if args.verb == "check":
        return check(args.notebook, args.timeout, use_server=not args.no_server)
    if args.verb == "stop":
        print(f"stopped {stop_servers()} check server(s)")
        return 0
    if args.verb == "_run":
        _run_quietly(args.notebook, args.timeout, args.answer)
        return 0
    serve(args.address)
    return 0


if __name__ == "__main__":
    sys.exit(main())
