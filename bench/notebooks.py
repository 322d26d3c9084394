"""How long each solution notebook takes to execute from top to bottom in a fresh kernel: as a
student runs it, and as the autograder runs it (NBGRADER_EXECUTION set, training shortened),
against the course's budgets (sections 1-5 under 60 s, 6 and 7 under 5 minutes; under 20 s
per submitted notebook when graded).

Each notebook runs on a copy in a temporary folder (the stored outputs are not touched), beside
copies of the other sections' notebooks laid out as in the course (sections 5 and 6 read earlier
parts from them with load_parts); the set-up cell finds the course through COURSE_ROOT.

    python bench/notebooks.py [--write]
    python bench/notebooks.py --sections 02-positions --modes grading
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
BUDGET = {"student": lambda section: 300 if section in LONG else 60, "grading": lambda section: 20}


def execute(section, grading, timeout=900):
    """Seconds to execute a copy of the section's solution notebook in a fresh kernel."""
    import nbformat
    from nbclient import NotebookClient
    saved = dict(os.environ)
    os.environ["COURSE_ROOT"] = str(ROOT)
    os.environ.pop("NBGRADER_EXECUTION", None)
    if grading:
        os.environ["NBGRADER_EXECUTION"] = "autograde"
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", help="comma-separated sections (default: all)")
    parser.add_argument("--modes", default="student,grading", help="student, grading or both (default)")
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    parser.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file --write updates")
    args = parser.parse_args(argv)
    sections = args.sections.split(",") if args.sections else SECTIONS
    modes = args.modes.split(",")
    rows, seconds = [], {}
    for section in sections:
        row = {"section": section}
        for mode in modes:
            seconds[section, mode] = execute(section, grading=mode == "grading")
            budget = BUDGET[mode](section)
            verdict = "within" if seconds[section, mode] < budget else "OVER"
            row[f"{mode} run (s)"] = f"{seconds[section, mode]:.1f}"
            row[f"{mode} budget"] = f"{budget} s, {verdict}"
            print(f"{section} {mode}: {seconds[section, mode]:.1f} s ({verdict} {budget} s)", flush=True)
        rows.append(row)
    text = "\n".join([
        "### Executing each solution notebook in a fresh kernel", "",
        table(rows, list(rows[0])), "",
        "A student run executes every cell as written (one thread, set by the set-up cell); a "
        "grading run sets NBGRADER_EXECUTION, as nbgrader does, and the trained sections shorten "
        "their training. Grading a submission adds nbgrader's own work and the feedback page "
        "(see the grading tables)."])
    print(text)
    if args.write:
        write_section(__file__, text, MEASURED, path=args.benchmarks)
    return seconds


if __name__ == "__main__":
    main()
