"""On PYTHONPATH with COURSE_READS_LOG set, records which files under COURSE_READS_ROOT this Python
process opens, and every Python process it starts (they inherit the environment): a line per file,
in a file per process under COURSE_READS_LOG. tests/test_platforms.py keys a platform's kept pass
by the files its last run read (conftest.reads_digest).

An audit hook sees every open by Python code (builtins.open, io.open_code for imports, os.open),
which is how the course's code reads anything; a library's C code reading a file by itself would
not show, and none of the checkout's files is read that way."""

import os
import sys


def _record_reads(log, root):
    root = os.path.normpath(root) + os.sep
    seen = set()

    def write(line):
        # Opened for each line, never held: a forked kernel closes the descriptors it inherited, and
        # a number held across that could name another file by the next write. A process that
        # cannot reach the log (a sandbox) records nothing.
        try:
            out = os.open(os.path.join(log, f"{os.getpid()}.txt"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                          0o644)
        except OSError:
            return
        try:
            os.write(out, line)  # one write, appended whole
        finally:
            os.close(out)

    def hook(event, args):
        if event != "open" or not isinstance(args[0], (str, bytes)):  # not a path: a descriptor
            return
        path = os.fsdecode(args[0])
        try:
            path = os.path.normpath(os.path.join(os.getcwd(), path))
        except OSError:  # the working folder is gone: a relative path names nothing we can tell
            return
        if path.startswith(root) and path not in seen:
            seen.add(path)
            write(path.encode() + b"\n")

    sys.addaudithook(hook)


if os.environ.get("COURSE_READS_LOG"):
    _record_reads(os.environ["COURSE_READS_LOG"], os.environ["COURSE_READS_ROOT"])
