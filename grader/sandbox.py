"""Every grading kernel runs in a bubblewrap sandbox: a submission is untrusted code.

bubblewrap (Debian's `bubblewrap`, the `bwrap` command) builds the sandbox from Linux namespaces;
this module only says what goes in it. A kernel in the sandbox:

- has no network (its own, empty network namespace; it talks to the grader over Unix sockets in
  one folder, ZeroMQ's `ipc` transport);
- has its own process namespace: it sees no process of the grader, of other kernels or of the
  warm-kernel server, and every process it starts dies with it;
- sees the system's programs and Python read-only, and of the course only ticketnet.py, data/
  and grader/ without the catalogues and the sample class: no solutions/, no .git, no gradebook,
  no submissions and no output folder. In place of grader/references, the code that computes what
  the checks compare with, it sees the recorded results of the visible checks, as students have
  them, and of no hidden test (grader.recordings.kernel_references);
- writes only to a fresh HOME (also its IPYTHONDIR and working folder), /tmp and /dev/shm, all
  in memory and limited in size, and gone when it ends, and to its socket folder (the settings'
  `writable` list, which the warm server empties between kernels);
- runs as uid 65534 ("nobody") with no capabilities, and only the environment variables it needs;
- has limits on memory, CPU time, file size and processes (LIMITS).

A fresh kernel is `bwrap ... python -m ipykernel_launcher`: this file, run as a script, is the
command of its kernel spec (`kernel`); it starts bwrap, passes interrupts on to the kernel inside,
and exits with the kernel's code. A warm kernel is forked by a server that lives in a sandbox of its own
(grader.warm_kernel). Run as a script, the module needs only the standard library.

    python grader/sandbox.py kernel SETTINGS -f CONNECTION    # what the kernel spec runs
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

STUDENT = 65534  # the sandbox's user and group
HOME = "/home/student"
# What a kernel may use, the same for `grader check` and `grader autograde` (memory: the default of
# grader.options.GradingOptions, which may set another). Memory and disk are in MB; CPU in seconds
# of one process; processes count threads too (ipykernel and PyTorch start about a dozen).
MEMORY_MB = 4096
LIMITS = {"memory_mb": MEMORY_MB, "cpu_seconds": 900, "file_mb": 256, "disk_mb": 256, "processes": 256}
HIDDEN = ("grader/catalogue", "grader/examples")  # answers and the sample class
# Environment variables a kernel gets from the grader's, when set; the sandbox sets the rest.
PASSED_ON = ("NBGRADER_EXECUTION", "MPLBACKEND", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CI", "TZ",
             "LANG", "LC_ALL")


class Unavailable(RuntimeError):
    """bubblewrap is missing or cannot make a sandbox on this host."""


def check_available():
    """Raise Unavailable, saying why, unless bwrap can make the sandbox here."""
    if not sys.platform.startswith("linux"):
        raise Unavailable(f"the sandbox needs Linux (bubblewrap); this is {sys.platform}")
    if shutil.which("bwrap") is None:
        raise Unavailable("bubblewrap is not installed (Debian/Ubuntu: apt install bubblewrap)")
    import tempfile
    with tempfile.TemporaryDirectory() as sockets:
        trial = subprocess.run(command(settings(sockets), ["true"]), capture_output=True, text=True)
    if trial.returncode != 0:
        raise Unavailable(f"bubblewrap cannot make a sandbox on this host: {trial.stderr.strip()[:200]}")


def settings(sockets, sandboxed=True, course_root=None, limits=None, data=None, references=None):
    """What a sandbox is made of, as plain data (a kernel's launcher reads it from a file).

    `sockets`: the folder of the kernels' sockets, the one place the sandbox shares with the grader.
    `data`: a Banking77 folder to show read-only (section 7 cannot download it: no network).
    `references`: a folder shown read-only in place of grader/references.
    `sandboxed=False`: no sandbox, only the limits (for code you trust)."""
    course_root = Path(course_root or Path(__file__).resolve().parents[1])
    pythons = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parents[1]}
    shown = [course_root / "ticketnet.py", course_root / "data", course_root / "grader",
             course_root / "bench" / "results", *pythons]  # results: section 6 reads the tuning table
    env = {"HOME": HOME, "IPYTHONDIR": f"{HOME}/.ipython", "TMPDIR": "/tmp",
           "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "COURSE_ROOT": str(course_root), "PYDEVD_DISABLE_FILE_VALIDATION": "1",
           # the kernel's parent is the sandbox's first process: ipykernel then neither watches
           # it nor prints how to connect to the kernel
           "JPY_PARENT_PID": "1"}
    if data:
        shown.append(Path(data))
        env["BANKING77_DIR"] = str(data)
    limits = {**LIMITS, **(limits or {})}
    if not sandboxed:  # the process count would be the whole user's, not the kernel's
        import resource
        limits["processes"] = resource.RLIM_INFINITY
    # every folder a kernel can write to: in-memory ones (/tmp first: the runtime may lie in /tmp)
    # and the socket folder it shares with the grader; nothing else is writable (tests/test_warm_kernel.py)
    writable = ["/tmp", HOME, "/dev/shm", str(sockets)]
    return {"sandboxed": sandboxed, "sockets": str(sockets), "home": HOME, "env": env, "writable": writable,
            "passed_on": list(PASSED_ON), "read_only": sorted(str(p) for p in shown if p.exists()),
            "hidden": [str(course_root / h) for h in HIDDEN], "limits": limits,
            "replaced": {str(course_root / "grader" / "references"): str(references)} if references else {},
            "root": os.geteuid() == 0}


def command(config, argv, limits=True, pid_1=True):
    """The bwrap command line that runs `argv` in the sandbox `config` (from settings()).

    `limits`: start argv under prlimit with the sandbox's limits (a warm server sets them on each
    kernel itself). `pid_1`: argv is the sandbox's first process; when it ends, all end.
    Unsandboxed settings give argv as it is: its caller sets the limits (apply_limits), with no
    util-linux to count on (macOS)."""
    if not config["sandboxed"]:
        return list(argv)
    prlimit = ["prlimit", *(f"--{name}={value}" for name, value in rlimits(config["limits"]).items()), "--"]
    bwrap = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
             "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--dev", "/dev",
             "--proc", "/proc"]  # of this namespace only (ipykernel lists its own children there)
    if pid_1:
        bwrap.append("--as-pid-1")
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):  # merged /usr or not, as the host has it
        path = Path("/") / name
        if path.is_symlink():
            bwrap += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            bwrap += ["--ro-bind", str(path), str(path)]
    bwrap += ["--ro-bind", "/usr", "/usr"]
    bwrap += ["--perms", "0755", "--dir", "/etc"]  # bwrap would make it private (0700), as below
    for path in ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                 "/etc/fonts"):
        if Path(path).exists():
            bwrap += ["--ro-bind", path, path]
    size = str(config["limits"]["disk_mb"] * 1024 * 1024)
    for folder in config["writable"]:  # /dev/shm: multiprocessing's semaphores
        if folder != config["sockets"]:
            bwrap += ["--perms", "01777", "--size", size, "--tmpfs", folder]
    shown = [*config["read_only"], config["sockets"]]
    # bwrap makes the folders on the way to a mount point private (0700); ours must be traversable
    for folder in sorted({str(a) for p in shown for a in Path(p).parents} - {"/", "/tmp", HOME}):
        bwrap += ["--perms", "0755", "--dir", folder]
    for path in config["read_only"]:
        bwrap += ["--ro-bind", path, path]
    for path in config["hidden"]:
        if Path(path).exists():
            bwrap += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
    for path, shown_instead in config.get("replaced", {}).items():
        bwrap += ["--ro-bind", shown_instead, path]
    bwrap += ["--bind", config["sockets"], config["sockets"],
              "--remount-ro", "/dev",  # its own folder: writable by the sandbox's user when bwrap is not root
              "--chdir", HOME, "--clearenv"]
    for name, value in {**config["env"], **{k: os.environ[k] for k in PASSED_ON if k in os.environ}}.items():
        bwrap += ["--setenv", name, value]
    if config["root"]:  # bwrap as root makes the namespaces; setpriv then gives up root for good
        bwrap += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                  "setpriv", f"--reuid={STUDENT}", f"--regid={STUDENT}", "--clear-groups",
                  "--inh-caps=-all", "--no-new-privs", "--pdeathsig=SIGKILL"]
    else:  # an unprivileged user namespace, where uid 65534 is the instructor's own outside
        bwrap += ["--unshare-user", "--disable-userns", f"--uid={STUDENT}", f"--gid={STUDENT}", "--"]
    return [*bwrap, *(prlimit if limits else []), *argv]


def rlimits(limits):
    """prlimit's names and values for `limits` (resource.RLIMIT_<NAME upper-cased> in Python)."""
    return {"data": limits["memory_mb"] * 1024 * 1024, "cpu": limits["cpu_seconds"],
            "fsize": limits["file_mb"] * 1024 * 1024, "nproc": limits["processes"], "core": 0}


def apply_limits(limits):
    """Set `limits` on this process and those it starts (a forked kernel, an unsandboxed one).
    Where the platform lacks a limit (macOS has no RLIMIT_NPROC cap it enforces alike), it is skipped."""
    import resource
    for name, value in rlimits(limits).items():
        number = getattr(resource, f"RLIMIT_{name.upper()}", None)
        if number is not None and value != resource.RLIM_INFINITY:  # no limit: leave it as it is
            resource.setrlimit(number, (value, value))


# --- the fresh kernel's launcher -------------------------------------------------------------

def launch(settings_path, argv):
    """Run ipykernel in the sandbox, with the connection file of `argv` (`-f PATH`), and stand in
    for it: a signal (an interrupt) is passed on to the kernel, and the exit code is the kernel's."""
    config = json.loads(Path(settings_path).read_text())
    connection = argv[argv.index("-f") + 1]
    kernel = [sys.executable, "-m", "ipykernel_launcher", *argv]
    fds = []
    if config["sandboxed"]:  # the connection file is the grader's (mode 0600): the sandbox gets a copy
        inside = f"{HOME}/.kernel.json"
        kernel[kernel.index(connection)] = inside
        fds.append(os.open(connection, os.O_RDONLY))
    command_line = command(config, kernel, pid_1=False)
    if config["sandboxed"]:
        reading, writing = os.pipe()
        fds.append(writing)
        at = command_line.index("--clearenv")
        command_line[at:at] = ["--perms", "0444", "--ro-bind-data", str(fds[0]), inside, "--info-fd", str(writing)]
    else:  # inherited by the kernel
        apply_limits(config["limits"])
    # A session of its own: the interrupt jupyter_client sends this process's group must not reach
    # bwrap, which would end the sandbox.
    process = subprocess.Popen(command_line, pass_fds=fds, start_new_session=True)
    for fd in fds:
        os.close(fd)
    target = [process.pid]
    if config["sandboxed"]:  # the kernel is the child of the sandbox's first process
        with os.fdopen(reading) as info:
            first = json.loads(info.read() or "{}").get("child-pid")
        target = [first, None]

    def forward(number, frame):
        if target[-1] is None:
            target[-1] = _child_of(target[0])
        try:
            os.kill(target[-1], number)
        except (ProcessLookupError, TypeError):
            pass
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
        signal.signal(number, forward)
    code = process.wait()
    os._exit(code if code >= 0 else 128 - code)


def _child_of(pid):
    """The pid of a child of process `pid`, as this process sees it, or None."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid):
            return int(stat.parent.name)
    return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) >= 3 and argv[0] == "kernel":
        launch(argv[1], argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
