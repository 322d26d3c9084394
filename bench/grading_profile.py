"""Where one graded notebook's seconds go, this checkout against another commit, in one run.

Each section's solution is graded alone with warm kernels in their sandboxes
(bench/grading.py's `breakdown`), by this checkout and by a git worktree of the other commit,
taking turns section by section and round by round, so that the machine's drift falls on both.
Each process grades one notebook and writes its feedback page; the table gives each column's
median over the rounds, the other commit's first.

With --class-workers N, the whole sample class instead, graded with N workers as `grader
autograde` grades it (bench/grading.py's `ours`): what a worker keeps from one notebook for the
next shows there, and not in one notebook alone. A first round of each, not counted, records the
checks' results for the kernels (once per state of the course) and warms the caches.

    python bench/grading_profile.py --against 81dcb3f [--rounds 2]
    python bench/grading_profile.py --against 81dcb3f --class-workers 2 [--rounds 2]
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


CLASS = """import json, pathlib, sys, tempfile
sys.path[:0] = [{root!r}, {root!r} + '/bench']
import grading
with tempfile.TemporaryDirectory() as work:
    work = pathlib.Path(work)
    notebooks = grading.pick_class(work / 'class', {students!r}, {sections!r})
    seconds, _, _, _ = grading.ours(work / 'class', work, 'graded', 30, workers={workers})
print(json.dumps({{'notebooks': notebooks, 'class seconds': seconds}}))
"""


def _last_json(code, root):
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def breakdown(root, section):
    """bench/grading.py's row for `section`, as the checkout at `root` grades it."""
    return _last_json(ONE.format(root=str(root), section=section), root)


def whole_class(root, workers, students=None, sections=None):
    """{"notebooks", "class seconds"}: the sample class (the `students`' notebooks of `sections`,
    None for all) graded by the checkout at `root`."""
    return _last_json(CLASS.format(root=str(root), workers=workers, students=students, sections=sections), root)


def compare_classes(against, other, workers, rounds, students=None, sections=None):
    """Each round, the class graded by the other commit and by this checkout, in turns (the first
    round, warming up, not counted); prints each round and the ratio of the medians."""
    for root in (other, ROOT):
        whole_class(root, workers, students, sections)
    seconds = {against: [], "this checkout": []}
    for round_ in range(rounds):
        order = [(against, other), ("this checkout", ROOT)]
        for name, root in order if round_ % 2 == 0 else order[::-1]:
            run = whole_class(root, workers, students, sections)
            seconds[name].append(run["class seconds"])
            print(f"round {round_ + 1}: {name}, {run['notebooks']} notebooks, {workers} workers: "
                  f"{run['class seconds']:.1f} s", flush=True)
    before, after = (statistics.median(seconds[name]) for name in (against, "this checkout"))
    print(f"\nmedian over {rounds} round(s): {against} {before:.1f} s, this checkout {after:.1f} s: "
          f"{before / after:.2f}x")
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated (default: all)")
    parser.add_argument("--class-workers", type=int, help="time the sample class with this many workers instead")
    parser.add_argument("--students", help="with --class-workers: comma-separated ids (default: the whole class)")
    args = parser.parse_args(argv)
    sections = args.sections.split(",")
    with tempfile.TemporaryDirectory() as folder:
        other = Path(folder) / "other"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(other), args.against], cwd=ROOT, check=True)
        try:
            if args.class_workers:
                students = args.students.split(",") if args.students else None
                return compare_classes(args.against, other, args.class_workers, args.rounds, students, sections)
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
