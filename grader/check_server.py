"""A warm `grader check`: a server per user and checkout keeps a notebook grader open between checks.

A check in a new process spends most of its time starting: Python, nbgrader, and the warm-kernel
server importing torch, pandas, matplotlib and scikit-learn (grader.warm_kernel). Students check
often, so `python -m grader check` hands the notebook to a server that has done all that once, and
the grading itself is the same `NotebookGrader.grade` as in process: each notebook in a fresh
sandboxed kernel forked from the warm one, the judge outside it.

- **Which server.** Each server has a key: a SHA-256 of everything a grade depends on (the
  course's fingerprint, grader.fingerprint: its code, data and pins, the versions of Python and
  the grading libraries, the check's options; and the checkout's path, the Python that runs it and
  the environment variables grading reads). A check asks only the server of
  its own key, so a server that graded with older code or another data folder is never asked; it
  stops after IDLE seconds without a request, as every server does.
- **Whose server.** The servers' sockets and locks live in a folder only their user may enter
  (checked: the user's own, mode 0700). The server answers only a client of its own uid, and the
  client only a server of its own uid (SO_PEERCRED).
- **When it fails.** A server that cannot start, dies, or answers something else than a result
  never fails a check: `grader check` then grades in its own process, saying why in one line.

A Unix socket's path may hold at most 107 bytes, and a runtime folder can be deeper than that
(pytest's are), so the socket is reached through a descriptor of its folder: /proc/self/fd/N/KEY.sock.

    python -m grader check NOTEBOOK               # asks the server, starting it when there is none
    python -m grader check --no-server NOTEBOOK   # grades in its own process
"""

import fcntl
import hashlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from grader import fingerprint
from grader.course import ROOT
from grader.result import Result
from grader.sandbox import PASSED_ON

IDLE = 900  # seconds a server waits for a check before it stops
START = 120  # seconds a check waits for a new server to listen
ANSWER = 3600  # seconds a check waits for the server's answer (its cells have their own time limits)
# The environment variables grading reads, besides those the sandbox passes to each kernel.
ENVIRONMENT = ("BANKING77_DIR", "TICKETNET_CACHE", "PATH", *PASSED_ON)


class Unusable(Exception):
    """No server could grade this check; the message says why, and the check grades in process."""


class NotGradable(Exception):
    """The server's notebook_grader.NotGradable: a file no grader can grade; the message says why. (Its own
    class: the client does not import notebook_grader, and with it torch.)"""


# --- where the servers live ------------------------------------------------------------------

def base_folder():
    """The folder of this user's servers: in $XDG_RUNTIME_DIR (a per-user folder on most Linux
    desktops) or else the temporary folder, created mode 0700 and refused unless it is the user's
    own and closed to others."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    parent = Path(runtime) if runtime and Path(runtime).is_dir() else Path(tempfile.gettempdir())
    folder = parent / f"transformer-block-course-checks-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as error:
        raise Unusable(f"cannot use {folder}: {error}") from None
    if not Path(folder).is_dir() or folder.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise Unusable(f"{folder} is not a folder of this user's alone (owner uid {info.st_uid}, "
                       f"mode {info.st_mode & 0o777:o})")
    return folder


def key(options):
    """The key of the server that may grade a check with these `options` (GradingOptions), here and
    now: 24 hex digits."""
    # The course's fingerprint leaves out the server's own code and the command that starts it.
    server = b"".join((ROOT / "grader" / name).read_bytes() for name in ("check_server.py", "__main__.py"))
    facts = {"checkout": str(ROOT), "course": fingerprint.grading_versions(options, ROOT)[None],
             "server": hashlib.sha256(server).hexdigest(),
             "python": [sys.executable, sys.version], "options": options.to_json(),
             "environment": {name: os.environ.get(name) for name in ENVIRONMENT}}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:24]


class _Folder:
    """The servers' folder, opened: `address(name)` is a path to a file in it short enough for a
    Unix socket, whatever the folder's own path."""

    def __init__(self, path):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)

    def address(self, name):
        return f"/proc/self/fd/{self.fd}/{name}"

    def close(self):
        os.close(self.fd)


def _peer_uid(connection):
    pid, uid, gid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                              struct.calcsize("3i")))
    return uid


def _lock_holder(path):
    """The pid written in a lock file whose lock some process holds, else None."""
    try:
        with open(path) as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return int(lock.read().strip() or 0) or None
            return None  # nobody holds it: a server that has stopped
    except (OSError, ValueError):
        return None


def running(folder=None):
    """{key: pid} of the servers running in `folder` (default: this user's): those holding their lock."""
    folder = Path(folder) if folder else base_folder()
    found = {}
    for lock in folder.glob("*.lock"):
        pid = _lock_holder(lock)
        if pid:
            found[lock.stem] = pid
    return found


def stop(folder=None):
    """Stop the servers running in `folder`; returns their pids."""
    pids = list(running(folder).values())
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    return pids


# --- the server --------------------------------------------------------------------------------

def serve(server_key, options, idle=IDLE):
    """Hold the lock of `server_key`, open a notebook grader with `options`, and grade the
    notebooks clients send until `idle` seconds pass without one. Returns 0, or 1 when another
    server of the same key already runs."""
    from grader.notebook_grader import NotebookGrader, NotGradable
    folder = _Folder(base_folder())
    lock = open(folder.path / f"{server_key}.lock", "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 1
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(0))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = folder.path / f"{server_key}.sock"
    path.unlink(missing_ok=True)  # a server of this key that stopped without cleaning up
    listener.bind(folder.address(path.name))
    listener.listen(8)
    course = None
    try:
        course = NotebookGrader(options=options)
        print(f"serving {server_key} for {ROOT}", file=sys.stderr, flush=True)
        while select.select([listener], [], [], idle)[0]:
            connection, _ = listener.accept()
            with connection:
                if _peer_uid(connection) != os.getuid():
                    continue  # only this user's checks
                connection.settimeout(10)
                try:
                    request = json.loads(_read_all(connection))
                    reply = {"result": course.grade(request["notebook"]).to_json()}
                except NotGradable as error:
                    reply = {"not_gradable": str(error)}
                except Exception as error:  # the check falls back to grading in its own process
                    reply = {"error": f"{type(error).__name__}: {error}"}
                try:
                    connection.sendall(json.dumps(reply).encode())
                except OSError:
                    pass  # the client gave up waiting
        print(f"idle for {idle} s: stopping", file=sys.stderr, flush=True)
        return 0
    finally:
        path.unlink(missing_ok=True)
        if course:
            course.close()


def _read_all(connection):
    chunks = []
    while chunk := connection.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


# --- the client --------------------------------------------------------------------------------

def _connect(folder, server_key):
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(folder.address(f"{server_key}.sock"))
    except (FileNotFoundError, ConnectionRefusedError):
        client.close()
        return None
    return client


def _start(folder, server_key, options):
    """Start a server of `server_key` in the background, its output in KEY.log, detached from this
    terminal so that it outlives the check."""
    command = [sys.executable, "-m", "grader", "check-server", server_key, options.to_json()]
    with open(folder.path / f"{server_key}.log", "ab") as log:
        return subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)


def grade(notebook, options):
    """Grade `notebook` in the server of these `options`, starting one if none runs: its Result
    (grader.result). Raises NotGradable for a file no grader can grade, and
    Unusable when no server could answer."""
    server_key = key(options)
    folder = _Folder(base_folder())
    try:
        client = _connect(folder, server_key)
        if client is None:
            started, deadline = _start(folder, server_key, options), time.monotonic() + START
            while client is None:
                if time.monotonic() > deadline:
                    raise Unusable(f"the check server did not start within {START} s "
                                   f"(see {folder.path / server_key}.log)")
                if started.poll() not in (None, 1):  # 1: another check started this key's server first
                    raise Unusable(f"the check server stopped at its start (see {folder.path / server_key}.log)")
                time.sleep(0.1)
                client = _connect(folder, server_key)
        with client:
            if _peer_uid(client) != os.getuid():
                raise Unusable("the check server runs as another user")
            client.settimeout(ANSWER)
            client.sendall(json.dumps({"notebook": str(Path(notebook).resolve())}).encode())
            client.shutdown(socket.SHUT_WR)
            answer = _read_all(client)
    except OSError as error:
        raise Unusable(f"the check server could not be reached: {error}") from None
    finally:
        folder.close()
    try:
        reply = json.loads(answer)
    except ValueError:
        raise Unusable("the check server's answer is not JSON" if answer else
                       "the check server closed the connection without an answer") from None
    if "not_gradable" in reply:
        raise NotGradable(reply["not_gradable"])
    if "result" not in reply:
        raise Unusable(f"the check server could not grade: {reply.get('error', reply)}")
    return replace(Result.from_json(reply["result"]), notebook=str(notebook))
