"""Markdown tables for BENCHMARKS.md, written by the benchmark scripts themselves.

Each script owns one section of BENCHMARKS.md, fenced by HTML comments that name it:

    <!-- bench/training.py -->
    ...table, the command that made it, the machine...
    <!-- /bench/training.py -->

`write_section` replaces what lies between the fences (or appends the section), so re-running one
script leaves the others' tables alone. Each section also records what it measured: the commit it
ran at, and the SHA-256 of the files named by the script's MEASURED patterns (its own code, the
course code it times, the pinned requirements), which must be committed as they were measured.

A table says when it was measured rather than blocking a change: tests/test_bench.py checks that
the digests are those of the files at the commit the table names (so a table cannot claim code it
did not measure), holds the committed figures to their targets, and lists the tables whose files
have changed since. `python bench/tables.py` prints those stale tables and the files changed;
`python bench/tables.py --run` (`make remeasure`) re-runs the command that made each of them.
"""

import argparse
import hashlib
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    import torch
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


MEASURED_AT = "Measured at commit"


def _git(*args, root=ROOT):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def measured_commit(patterns, root=ROOT):
    """The commit whose files the benchmark measures: HEAD, once every file of `patterns` is
    committed as it lies on disk (else a table would name code it did not measure)."""
    changed = _git("status", "--porcelain", "--untracked-files=all", "--",
                   *[f":(glob){pattern}" for pattern in patterns], root=root).stdout.strip()
    if changed:
        raise SystemExit("commit the files this benchmark measures first, so that its table can name "
                         f"their commit:\n{changed}")
    return _git("rev-parse", "HEAD", root=root).stdout.strip()


def fingerprint_at(commit, patterns, root=ROOT):
    """fingerprint(patterns) of the files as they were at `commit`."""
    with tempfile.TemporaryDirectory() as tree:
        archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=root, capture_output=True)
        if archive.returncode != 0:
            raise LookupError(f"this clone has no commit {commit} ({archive.stderr.decode().strip()}): a "
                              "clone with history (not --depth 1) can check the table")
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        return fingerprint(patterns, Path(tree))


def write_section(script, body, measured, path=BENCHMARKS, root=ROOT):
    """Put `body` (markdown) in the section of BENCHMARKS.md that `script` owns, with the command
    that made it, the machine it ran on, the commit it measured and the fingerprint of the
    `measured` files."""
    name = f"bench/{Path(script).name}"
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    commit = measured_commit(measured, root)
    section = (f"{start}\n{body.strip()}\n\nMade by `{command(script)}` on {machine()}.\n"
               f"{MEASURED_AT} `{commit[:12]}`.\n{measured_line(measured, root)}\n{end}")
    text = Path(path).read_text() if Path(path).is_file() else "# Benchmarks\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    Path(path).write_text(text)
    return path


def sections(path=BENCHMARKS):
    """{script name: its section of BENCHMARKS.md}, as write_section fenced them."""
    return dict(re.findall(r"<!-- (bench/\w+\.py) -->\n(.*?)<!-- /\1 -->", Path(path).read_text(), re.S))


def recorded(section):
    """What a section says it measured: (commit, {pattern: (count, digest)}, the command)."""
    commit = re.search(rf"^{MEASURED_AT} `([0-9a-f]+)`\.$", section, re.M)
    line = next((line for line in section.splitlines() if line.startswith(MEASURED_LINE)), "")
    prints = {pattern: (int(count), digest) for pattern, count, digest in
              re.findall(r" `([^`]+)` \((\d+) files?\) ([0-9a-f]{16})", line[len(MEASURED_LINE):])}
    made_by = re.search(r"Made by `([^`]+)`", section)
    return commit and commit[1], prints, made_by and made_by[1]


def changed_since(section, patterns, root=ROOT):
    """The patterns of `patterns` whose files differ from those the section measured (a pattern
    added to the script since counts as changed)."""
    _, prints, _ = recorded(section)
    today = fingerprint(patterns, root)
    return [pattern for pattern in patterns if prints.get(pattern) != today[pattern]]


def stale(path=BENCHMARKS, root=ROOT):
    """[(script, commit measured, [changed patterns], command)] for each table whose files changed."""
    found = []
    for script, section in sections(path).items():
        measured = _measured_patterns(root / script)
        changed = changed_since(section, measured, root)
        if changed:
            commit, _, made_by = recorded(section)
            found.append((script, commit, changed, made_by))
    return found


def _measured_patterns(script):
    """The MEASURED list of a benchmark script, read without running it (no torch to import)."""
    import ast
    for node in ast.parse(Path(script).read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MEASURED" for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{script} has no MEASURED list")


def main(argv=None):
    parser = argparse.ArgumentParser(description="List the tables of BENCHMARKS.md whose measured files "
                                     "changed since; --run re-runs the command that made each.")
    parser.add_argument("--run", action="store_true", help="re-run each stale table's command")
    args = parser.parse_args(argv)
    found = stale()
    if not found:
        print("Every table of BENCHMARKS.md measured the files of today.")
    for script, commit, changed, made_by in found:
        print(f"{script}: measured at {commit}; changed since in {', '.join(changed)}")
        if args.run:
            command_line = shlex.split(made_by)
            subprocess.run([sys.executable, *command_line[1:]], cwd=ROOT, check=True)
    return 0


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


if __name__ == "__main__":
    sys.exit(main())
