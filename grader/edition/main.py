"""`python -m grader check NOTEBOOK`: run a notebook of the course and say which checks pass.

This is the student edition of the course, so it runs the checks you see in the notebook and no
others. Your instructor's grader runs them too, and hidden tests on other inputs besides, so a
task that passes here can still lose points there; the written answers are graded by hand.
"""

import argparse
import sys
from pathlib import Path


def _first_line(cell):
    return next((line.strip() for line in cell.source.splitlines() if line.strip()), "(empty)")


def check(notebook_path, timeout):
    import os
    import tempfile
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    path = Path(notebook_path).resolve()
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:  # not JSON, not a notebook
        print(f"cannot read {path}: {error}", file=sys.stderr)
        return 2
    tasks = [c for c in notebook.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    if not tasks:
        print(f"{path} holds no check cell of the course", file=sys.stderr)
        return 2
    print(f"running {path.name} (every cell, top to bottom) ...", flush=True)
    # As the autograder runs it: the trained sections train briefly, each on one thread.
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # else the debugger warns at every start on Python 3.12+
    started = {}

    def note_start(cell, cell_index, **_):
        started["cell"] = cell_index

    with tempfile.TemporaryDirectory(prefix="course-check-") as sockets:
        # Unix sockets in a folder of this user's: nothing on the network, and no warning about it
        kernel = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
        client = NotebookClient(notebook, km=kernel, timeout=timeout, allow_errors=True,
                                on_cell_execute=note_start, resources={"metadata": {"path": str(path.parent)}})
        try:
            client.execute()
        except CellTimeoutError:
            index = started.get("cell", 0)
            number = sum(c.cell_type == "code" for c in notebook.cells[:index + 1])
            print(f"  code cell {number} ({_first_line(notebook.cells[index])!r}) ran past the {timeout} s "
                  "limit and was stopped; the cells after it did not run (an endless loop? --timeout gives "
                  "more time)")
        except DeadKernelError:
            print("  the kernel died while the notebook ran (out of memory?); the cells after that did not run")
        finally:
            if kernel.has_kernel:  # nbclient stops only a kernel it started itself
                kernel.shutdown_kernel(now=True)
    width = max(len(c.metadata["nbgrader"]["grade_id"]) for c in tasks)
    earned = total = 0
    for cell in tasks:
        points = cell.metadata["nbgrader"].get("points", 0)
        errors = [o for o in cell.outputs if o.output_type == "error"] or ([] if cell.get("execution_count") else
                                                                          [{"ename": "not run", "evalue": "the notebook stopped before this check"}])
        verdict = "passed" if not errors else f"{errors[0]['ename']}: {errors[0]['evalue']}".splitlines()[0]
        earned += 0 if errors else points
        total += points
        print(f"  {cell.metadata['nbgrader']['grade_id']:<{width}}  {0 if errors else points:g}/{points:g}  {verdict}")
    print(f"visible checks: {earned:g}/{total:g} points. Only the checks in the notebook ran: the "
          "autograder also runs hidden tests, and the written answers are graded by hand.")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    checker = verbs.add_parser("check", help="run a notebook and list its visible checks")
    checker.add_argument("notebook", help="a section notebook, wherever it lies")
    checker.add_argument("--timeout", type=int, default=600, help="seconds a cell may run (default 600)")
    args = parser.parse_args(argv)
    return check(args.notebook, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
