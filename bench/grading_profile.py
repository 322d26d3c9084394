"""Where one graded notebook's seconds go, this checkout against another commit, in one run.

Each section's solution is graded alone with warm kernels in their sandboxes
(bench/grading.py's `breakdown`), by this checkout and by a git worktree of the other commit,
taking turns section by section and round by round, so that the machine's drift falls on both.
Each process grades one notebook and writes its feedback page; the table gives each column's
median over the rounds, the other commit's first.

    python bench/grading_profile.py --against 81dcb3f [--rounds 2]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.tables import table  # noqa: E402
from grader.course import SECTIONS  # noqa: E402

ONE = ("import json, sys; sys.path[:0] = [{root!r}, {root!r} + '/bench']; import grading; "
       "print(json.dumps(grading.breakdown(True, 30, [{section!r}], True)[0]))")


def breakdown(root, section):
    """bench/grading.py's row for `section`, as the checkout at `root` grades it."""
    done = subprocess.run([sys.executable, "-c", ONE.format(root=str(root), section=section)], cwd=root,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated (default: all)")
    args = parser.parse_args(argv)
    sections = args.sections.split(",")
    with tempfile.TemporaryDirectory() as folder:
        other = Path(folder) / "other"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(other), args.against], cwd=ROOT, check=True)
        try:
            rows = {}
            for _ in range(args.rounds):
                for section in sections:
                    for name, root in ((args.against, other), ("this checkout", ROOT)):
                        rows.setdefault((section, name), []).append(breakdown(root, section))
                        print(section, name, f"{rows[section, name][-1]['total']:.1f} s", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=True)
    columns = [c for c in rows[sections[0], "this checkout"][0] if c not in ("section", "score")]
    lines = []
    for (section, name), runs in rows.items():
        line = {"section": section, "code": name}
        for column in columns:
            line[column] = f"{statistics.median(r.get(column, 0) for r in runs):.2f}"
        lines.append(line)
    for name in (args.against, "this checkout"):
        mean = statistics.mean(float(line["total"]) for line in lines if line["code"] == name)
        lines.append({"section": "mean", "code": name, "total": f"{mean:.2f}"})
    print(table(lines, ["section", "code", *columns]))
    print(f"\n{args.rounds} round(s), the median of each; warm kernels, sandboxed, cell timeout 30 s.")


if __name__ == "__main__":
    main()
