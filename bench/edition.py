"""The student edition as a student meets it: how much a student's own install costs, and how long
the edition's `python -m grader check` takes.

- **Install.** A new virtual environment on this Python, `pip install -r requirements.txt` of the
  edition (the course's libraries and JupyterLab, nothing of grading), with pip's cache off, so
  every package comes from the index as on a student's new machine. PyTorch's CPU wheel is taken
  from PyTorch's index on Linux (the edition's README says so); where that index is out of reach,
  from this machine's own wheel of the pinned version, which is the same file. Measured: the time,
  and the size of the environment on disk.
- **Check.** The edition's own `grader check` on a release notebook of section 1, untouched, two
  times in a row (the first after nothing else ran), then with the model answers written in, and
  on section 6 with the model answers, which trains every network briefly as the autograder does.
  Each check is a process of its own, as when a student types it.

    python bench/edition.py [--write]
    python bench/edition.py --no-install
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.tables import BENCHMARKS, table, write_section  # noqa: E402

# What the tables measured: the edition's own files, the code its check runs, and the pins.
MEASURED = ["bench/edition.py", "grader/edition/*", "grader/publish.py", "grader/recordings.py", "grader/course.py", "grader/checks/*.py",
            "notebooks/*/*.ipynb", "ticketnet.py", "data/*.csv", "requirements.txt"]
CHECK_TARGET = 3  # seconds for a section 1 check once one has run (issue 40)
TRAINED_TARGET = 120  # seconds for the check of section 6 in the grading mode (issue 40)
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _size_mb(folder):
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def _index_reachable(url, timeout=5):
    import urllib.request
    try:
        urllib.request.urlopen(url, timeout=timeout).close()
        return True
    except OSError:
        return False


def install(edition, python=sys.executable):
    """{"seconds", "MB", "packages", "torch from"} of a student's install of the edition."""
    with tempfile.TemporaryDirectory() as folder:
        venv.EnvBuilder(with_pip=True).create(folder)
        pip = [str(Path(folder) / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-cache-dir",
               "--disable-pip-version-check"]
        cpu_index = sys.platform.startswith("linux") and _index_reachable(TORCH_CPU_INDEX + "/torch/")
        start = time.perf_counter()
        subprocess.run([*pip, *(["--extra-index-url", TORCH_CPU_INDEX] if cpu_index else []),
                        "-r", str(Path(edition) / "requirements.txt")], check=True)
        seconds = time.perf_counter() - start
        frozen = subprocess.run([str(Path(folder) / "bin" / "python"), "-m", "pip", "freeze"],
                                capture_output=True, text=True, check=True).stdout.split()
        torch = next(line for line in frozen if line.startswith("torch=="))
        return {"seconds": seconds, "MB": _size_mb(folder), "packages": len(frozen),
                "torch from": "PyTorch's CPU index" if cpu_index else f"this machine's wheel ({torch})"}


def check(edition, notebook):
    """Seconds of one `python -m grader check NOTEBOOK` in the edition, and its summary line."""
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_ROOT", "PYTHONPATH", "NBGRADER_EXECUTION")}
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "grader", "check", str(notebook)], cwd=edition, env=env,
                         capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - start
    summary = re.search(r"visible checks: \S+ points", run.stdout)
    if run.returncode != 0 or not summary:
        raise RuntimeError(f"grader check {notebook} failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return seconds, summary.group()


def answered_section_6(edition):
    """Sections 1 to 6 with the model answers, in the edition's own folders (section 6's
    load_parts reads the earlier ones); returns section 6's notebook."""
    import nbformat
    from grader.course import SECTIONS, solution_notebook
    from grader.judge import without_hidden_tests
    for section in SECTIONS[:SECTIONS.index("06-tiny-transformer") + 1]:
        notebook = nbformat.read(solution_notebook(section), as_version=4)
        for cell in notebook.cells:  # as the edition shows the checks: no hidden tests
            cell.source = without_hidden_tests(cell.source)
        nbformat.write(notebook, Path(edition) / "notebooks" / section / f"{section}.ipynb")
    return Path(edition) / "notebooks" / "06-tiny-transformer" / "06-tiny-transformer.ipynb"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-install", action="store_true", help="time the checks only")
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    parser.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file --write updates")
    args = parser.parse_args(argv)
    from grader import publish
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        edition = Path(folder) / "course-student"
        publish.build(edition)
        if not args.no_install:
            found = install(edition)
            print(f"install: {found}", flush=True)
            lines += ["### A student's own install of the edition", "",
                      table([{"Python": f"{sys.version_info.major}.{sys.version_info.minor}",
                              "packages": found["packages"], "time (s)": f"{found['seconds']:.0f}",
                              "size on disk (MB)": f"{found['MB']:,.0f}", "torch from": found["torch from"]}],
                            ["Python", "packages", "time (s)", "size on disk (MB)", "torch from"]), "",
                      "A new virtual environment and `pip install -r requirements.txt` of the edition with "
                      "pip's cache off: every other package downloaded from PyPI.", ""]
        release = edition / "notebooks" / "01-heads" / "01-heads.ipynb"
        rows, seconds = [], {}
        for name in ["section 1, untouched, first check", "section 1, untouched, next check",
                     "section 1, model answers", "section 6, model answers (grading mode)"]:
            if name == "section 1, model answers":  # sections 1 to 6 answered from here on
                notebook = answered_section_6(edition).parents[1] / "01-heads" / "01-heads.ipynb"
            elif name.startswith("section 6"):
                notebook = edition / "notebooks" / "06-tiny-transformer" / "06-tiny-transformer.ipynb"
            else:
                notebook = release
            seconds[name], summary = check(edition, notebook)
            print(f"{name}: {seconds[name]:.1f} s ({summary})", flush=True)
            rows.append({"check": name, "seconds": f"{seconds[name]:.1f}", "result": summary})
        next_check = seconds["section 1, untouched, next check"]
        trained = seconds["section 6, model answers (grading mode)"]
        lines += ["### The edition's `python -m grader check`", "", table(rows, ["check", "seconds", "result"]), "",
                  f"A check of section 1 once one has run: {next_check:.1f} s, "
                  f"{'within' if next_check < CHECK_TARGET else 'OVER'} the {CHECK_TARGET} s target. Section 6 "
                  f"in the grading mode: {trained:.0f} s, {'within' if trained < TRAINED_TARGET else 'OVER'} "
                  f"the {TRAINED_TARGET} s target."]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(__file__, text, MEASURED, path=args.benchmarks)
    return seconds


if __name__ == "__main__":
    main()
