"""Markdown tables for BENCHMARKS.md, written by the benchmark scripts themselves.

Each script owns one section of BENCHMARKS.md, fenced by HTML comments that name it:

    <!-- bench/training.py -->
    ...table, the command that made it, the machine...
    <!-- /bench/training.py -->

`write_section` replaces what lies between the fences (or appends the section), so re-running one
script leaves the others' tables alone. Each section also records what it measured: the SHA-256 of
the files named by the script's MEASURED patterns (its own code, the course code it times, the
pinned requirements). tests/test_bench.py recomputes them, so a table older than its code fails.
"""

import hashlib
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "BENCHMARKS.md"


def table(rows, columns):
    """A markdown table from a list of dicts, columns in the given order."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def machine():
    """One line saying where the numbers come from."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
            f"PyTorch {torch.__version__}")


def command(script):
    """The command line that ran `script`, as a reader would retype it."""
    return " ".join(["python", f"bench/{Path(script).name}", *map(shlex.quote, sys.argv[1:])])


MEASURED_LINE = "What it measured (SHA-256 of the files, first 16 hex digits):"


def fingerprint(patterns, root=ROOT):
    """{pattern: (number of files, digest)} for glob patterns relative to `root`. The digest covers
    each file's path and bytes, so a file added, removed, renamed or edited changes it."""
    prints = {}
    for pattern in patterns:
        files = sorted(p for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts)
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        prints[pattern] = (len(files), digest.hexdigest()[:16])
    return prints


def measured_line(patterns, root=ROOT):
    """The line of a section that records what it measured."""
    return MEASURED_LINE + ";".join(f" `{pattern}` ({count} file{'s' * (count != 1)}) {digest}"
                                     for pattern, (count, digest) in fingerprint(patterns, root).items())


def write_section(script, body, measured, path=BENCHMARKS):
    """Put `body` (markdown) in the section of BENCHMARKS.md that `script` owns, with the command
    that made it, the machine it ran on and the fingerprint of the `measured` files."""
    name = f"bench/{Path(script).name}"
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    section = (f"{start}\n{body.strip()}\n\nMade by `{command(script)}` on {machine()}.\n"
               f"{measured_line(measured)}\n{end}")
    text = Path(path).read_text() if Path(path).is_file() else "# Benchmarks\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    Path(path).write_text(text)
    return path


class OtherLoad:
    """How many cores other processes kept busy between start() and cores(), from /proc/stat
    minus this process's own CPU time; None where /proc/stat is missing. On a shared machine
    this says how much the numbers may be slowed down by someone else."""

    def _sample(self):
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        except (OSError, ValueError):
            return None
        busy = sum(fields[:3]) + sum(fields[5:8])  # user nice system, irq softirq steal
        own = os.times()
        return busy / os.sysconf("SC_CLK_TCK"), own.user + own.system, time.perf_counter()

    def start(self):
        self.first = self._sample()
        return self

    def cores(self, everyone=False):
        """Cores kept busy on average by other processes (or, everyone=True, by all, this one
        and its children included)."""
        last = self._sample()
        if self.first is None or last is None or last[2] <= self.first[2]:
            return None
        (busy0, own0, wall0), (busy1, own1, wall1) = self.first, last
        own = 0.0 if everyone else own1 - own0
        return max(0.0, (busy1 - busy0) - own) / (wall1 - wall0)


def describe_load(cores):
    if cores is None:
        return "The load of other processes was not measured (no /proc/stat)."
    return (f"Other processes kept {cores:.1f} of the {os.cpu_count()} cores busy on average during "
            "the run" + (": the numbers are slower than a quiet machine's." if cores >= 0.2 else "."))
