"""How long each solution notebook takes to execute from top to bottom in a fresh kernel: as a
student runs it (every core), the same on one thread, and as the autograder runs it
(NBGRADER_EXECUTION set: one thread, training shortened), against the course's budgets (sections
1-5 under 60 s, 6 and 7 under 5 minutes, and under 2 minutes for a student on every core; under
20 s per submitted notebook when graded).

Each notebook runs on a copy in a temporary folder (the stored outputs are not touched), beside
copies of the other sections' notebooks laid out as in the course (sections 5 and 6 read earlier
parts from them with load_parts); the set-up cell finds the course through COURSE_ROOT.

    python bench/notebooks.py [--write]
    python bench/notebooks.py --sections 06-tiny-transformer --modes student,one-thread
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.tables import BENCHMARKS, table, write_section  # noqa: E402
from grader.course import SECTIONS, solution_notebook  # noqa: E402

# What the table measured: the notebooks and all they import (tests/test_bench.py).
MEASURED = ["bench/notebooks.py", "solutions/*/*.ipynb", "grader/__init__.py", "grader/course.py",
            "grader/checks/*.py", "ticketnet.py", "data/*.csv", "requirements.txt"]

LONG = {"06-tiny-transformer", "07-banking77"}  # trained sections: 5 minutes
BUDGET = {"student": lambda section: 300 if section in LONG else 60,
          "one-thread": lambda section: 300 if section in LONG else 60, "grading": lambda section: 20}
STUDENT_TARGET = 120  # seconds for a trained section on every core (issue 24)
# The environment of each mode's kernel; a student's kernel keeps PyTorch's default threads.
MODES = {"student": {}, "one-thread": {"OMP_NUM_THREADS": "1"}, "grading": {"NBGRADER_EXECUTION": "autograde"}}


def execute(section, mode, timeout=900):
    """Seconds to execute a copy of the section's solution notebook in a fresh kernel, the kernel's
    environment set as MODES[mode] says."""
    import nbformat
    from nbclient import NotebookClient
    saved = dict(os.environ)
    os.environ["COURSE_ROOT"] = str(ROOT)
    for name in ("NBGRADER_EXECUTION", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.pop(name, None)
    os.environ.update(MODES[mode])
    try:
        with tempfile.TemporaryDirectory() as folder:
            for other in SECTIONS:  # a student's notebooks, each in its own folder
                (Path(folder) / other).mkdir()
                shutil.copy(solution_notebook(other), Path(folder) / other / f"{other}.ipynb")
            here = Path(folder) / section
            notebook = nbformat.read(here / f"{section}.ipynb", as_version=4)
            start = time.perf_counter()
            NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(here)}}).execute()
            return time.perf_counter() - start
    finally:
        os.environ.clear()
        os.environ.update(saved)


def trained_lines(seconds):
    """A line per trained section run both ways: every core against one thread, and the target."""
    lines = []
    for section in sorted(LONG):
        if (section, "student") in seconds and (section, "one-thread") in seconds:
            every, one = seconds[section, "student"], seconds[section, "one-thread"]
            verdict = "within" if every < STUDENT_TARGET else "OVER"
            lines += ["", f"{section}: {every:.1f} s on every core against {one:.1f} s on one thread "
                      f"({one / every:.2f}x), {verdict} the {STUDENT_TARGET} s target for a student."]
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", help="comma-separated sections (default: all)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)} (default: all)")
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    parser.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file --write updates")
    args = parser.parse_args(argv)
    sections = args.sections.split(",") if args.sections else SECTIONS
    modes = args.modes.split(",")
    if set(modes) - set(MODES):
        parser.error(f"unknown mode {', '.join(sorted(set(modes) - set(MODES)))}: choose among {', '.join(MODES)}")
    rows, seconds = [], {}
    for section in sections:
        row = {"section": section}
        for mode in modes:
            seconds[section, mode] = execute(section, mode)
            budget = BUDGET[mode](section)
            verdict = "within" if seconds[section, mode] < budget else "OVER"
            row[f"{mode} run (s)"] = f"{seconds[section, mode]:.1f}"
            row[f"{mode} budget"] = f"{budget} s, {verdict}"
            print(f"{section} {mode}: {seconds[section, mode]:.1f} s ({verdict} {budget} s)", flush=True)
        rows.append(row)
    text = "\n".join([
        "### Executing each solution notebook in a fresh kernel", "",
        table(rows, list(rows[0])), "",
        "A student run executes every cell as written, on PyTorch's default threads (every core); "
        "a one-thread run is the same with OMP_NUM_THREADS=1, as every student run was before "
        "the set-up cell kept one thread for graded kernels only. A grading run sets "
        "NBGRADER_EXECUTION, as nbgrader does: one thread, and the trained sections shorten their "
        "training. Grading a submission adds nbgrader's own work and the feedback page (see the "
        "grading tables).", *trained_lines(seconds)])
    print(text)
    if args.write:
        write_section(__file__, text, MEASURED, path=args.benchmarks)
    return seconds


if __name__ == "__main__":
    main()
