"""The judge: a section's check cells run in the grader, on the student's code in the kernel.

A check cell of the course holds only lines `check.NAME(StudentName, literal arguments)` (and
comments). The judge reads that text from the solutions, never from the submission; it calls
the section's check NAME in its own process with a stand-in for StudentName (grader.probe), so
the student's code runs in the kernel and only plain data comes back. The check's verdict is the
task's: nothing the submission does to its own process (rebinding `check`, patching torch or the
checks, input transformers) reaches it.

Under nbgrader, `JudgedExecute` takes the place of nbgrader's Execute preprocessor: every cell
runs in the kernel as usual, check cells included, but without their hidden tests (what the
student would see: the in-notebook result; the kernel never learns the hidden tests' results,
which its sandbox does not hold); then the judge checks the task, hidden tests included, and its
verdict becomes the cell's output, which is what nbgrader scores. Each verdict is also handed to
the function in its setting `on_verdict`, which the grader sets for each notebook it grades
(grader.notebook_grader) and takes the scores from: not from a gradebook the submission could have written
to.
"""

import ast
import contextlib
import functools
import importlib
import io
import re

import nbformat
import torch

from grader.course import SOLUTIONS, is_check_cell, is_parts_cell, nbgrader_info, solution_notebook
from grader.probe import Exchange, Link, NotPlainData

class NotACheckCell(ValueError):
    """A check cell holding something other than calls of the section's checks."""


def without_hidden_tests(source):
    """A check cell's code as the release shows it: its hidden tests left out."""
    return re.sub(r"### BEGIN HIDDEN TESTS\n.*?### END HIDDEN TESTS\n?", "", source, flags=re.S)


@functools.cache
def check_cells(section):
    """grade_id -> (source, points) of the section's check cells, from the solutions."""
    notebook = nbformat.read(solution_notebook(section), as_version=4)
    return {nbgrader_info(c)["grade_id"]: (c.source, nbgrader_info(c)["points"]) for c in notebook.cells if is_check_cell(c)}


@functools.cache
def written_points(section):
    """The points of the section's written answers, graded by hand."""
    notebook = nbformat.read(solution_notebook(section), as_version=4)
    return sum(nbgrader_info(c)["points"] for c in notebook.cells
               if c.cell_type == "markdown" and nbgrader_info(c).get("grade"))


@functools.cache
def check_module(section):
    """The module of grader.checks that the section's notebook imports as `check`."""
    text = solution_notebook(section).read_text()
    found = re.search(r"from grader\.checks import (\w+) as check", text)
    return importlib.import_module(f"grader.checks.{found.group(1)}")


@functools.cache
def course_parts(section):
    """The code the grader runs in place of the section's earlier-parts cell, whatever the student
    wrote there: the cell as the solutions have it, each `load_parts` line replaced by the course's
    own code of what it loads, which reads no notebook (ticketnet.resolved)."""
    from ticketnet import loads_parts, resolved
    notebook = nbformat.read(solution_notebook(section), as_version=4)
    return "\n".join(resolved(statement, SOLUTIONS) if loads_parts(statement) else ast.unparse(statement)
                     for cell in filter(is_parts_cell, notebook.cells) for statement in ast.parse(cell.source).body)


def parse(source):
    """[(check name, the student's name, positional literals, keyword literals)] of a check cell."""
    calls = []
    for statement in ast.parse(source).body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "check"
                and call.args and isinstance(call.args[0], ast.Name)):
            raise NotACheckCell(f"not a call `check.NAME(answer, ...)`: {ast.unparse(statement)[:80]}")
        try:
            args = [ast.literal_eval(a) for a in call.args[1:]]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        except ValueError:
            raise NotACheckCell(f"a check's arguments must be literals: {ast.unparse(statement)[:80]}") from None
        calls.append((call.func.attr, call.args[0].id, args, kwargs))
    return calls


def judge(section, grade_id, link, hidden=True):
    """Run the check cell `grade_id` of `section` here, on the student's code behind `link`
    (hidden=False: without its hidden tests). Returns {"passed", "stdout", "error": (name,
    message) or None}."""
    source, _ = check_cells(section)[grade_id]
    source = source if hidden else without_hidden_tests(source)
    module = check_module(section)
    stdout = io.StringIO()
    error = None
    threads = torch.get_num_threads()
    # One thread, as the kernels have: a check's products are small, and the workers share the cores.
    torch.set_num_threads(1)
    with contextlib.redirect_stdout(stdout):
        try:
            for name, answer, args, kwargs in parse(source):
                getattr(module, name)(link.name(answer), *args, **kwargs)
        except NotPlainData as failure:
            error = ("NotPlainData", f"{failure}: the submission interferes with the grader")
        except Exception as failure:  # noqa: BLE001 - the student's failure, as the cell would show it
            error = (type(failure).__name__, str(failure))
        finally:
            torch.set_num_threads(threads)
    return {"passed": error is None, "stdout": stdout.getvalue(), "error": error}


def outputs(verdict):
    """The outputs of a check cell that show `verdict`, as nbgrader scores and shows them."""
    cells = []
    if verdict["stdout"]:
        cells.append(nbformat.v4.new_output("stream", name="stdout", text=verdict["stdout"]))
    if verdict["error"]:
        name, message = verdict["error"]
        cells.append(nbformat.v4.new_output("error", ename=name, evalue=message,
                                            traceback=[f"{name}: {message}"]))
    return cells


def failed_in_notebook(cell):
    """What nbgrader would have scored from the kernel's own run of a check cell."""
    return any(o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")
               for o in cell.outputs)


@functools.cache
def _execute_preprocessor():
    from jupyter_core.utils import run_sync
    from nbgrader.preprocessors import Execute
    from traitlets import Callable, Unicode

    from grader.kernel_client import StopsASilentKernel

    class JudgedExecute(StopsASilentKernel, Execute):
        """nbgrader's Execute, with each check cell's outputs replaced by the judge's verdict."""

        exchange = Unicode("", help="the folder for requests and answers, in view of the kernel").tag(config=True)
        # A function, not a container: traitlets gives each instance a deep copy of its settings
        on_verdict = Callable(None, allow_none=True, help="called as on_verdict(grade_id, verdict) "
                              "for each check cell judged").tag(config=True)

        def preprocess_cell(self, cell, resources, index):
            if is_parts_cell(cell):  # runs the course's parts; the feedback shows the student's cell
                own, cell.source = cell.source, course_parts(resources["nbgrader"]["assignment"])
                cell, resources = super().preprocess_cell(cell, resources, index)
                cell.source = own
                return cell, resources
            if not is_check_cell(cell):
                return super().preprocess_cell(cell, resources, index)
            full, cell.source = cell.source, without_hidden_tests(cell.source)
            cell, resources = super().preprocess_cell(cell, resources, index)
            cell.source = full
            info = resources["nbgrader"]
            section, grade_id = info["assignment"], nbgrader_info(cell)["grade_id"]

            def run(code):
                # Silent, and past nbclient's cell bookkeeping: the probe sends back what the
                # student's code printed, and a request costs half the time of a cell run
                reply = self.kc.execute(code, silent=True, store_history=False, allow_stdin=False)
                run_sync(self.async_wait_for_reply)(reply)

            def judged(hidden):
                try:
                    with Exchange(self.exchange or None) as exchange:
                        return judge(section, grade_id, Link(run, exchange), hidden)
                except NotPlainData as failure:  # the kernel swapped the folder before the judge held it
                    return {"passed": False, "stdout": "",
                            "error": ("NotPlainData", f"{failure}: the submission interferes with the grader")}

            verdict = judged(hidden=True)
            # What the notebook said, as the judge says it of the same checks: the kernel ran the
            # visible ones only, so a task that fails only hidden tests is no contradiction.
            in_notebook = not failed_in_notebook(cell)
            if in_notebook and not verdict["passed"] and judged(hidden=False)["passed"]:
                in_notebook = False
            verdict["in_notebook"] = in_notebook
            if self.on_verdict:
                self.on_verdict(grade_id, verdict)
            cell.outputs = outputs(verdict)
            return cell, resources

    return JudgedExecute


def __getattr__(name):  # nbgrader is imported only when asked for
    if name == "JudgedExecute":
        return _execute_preprocessor()
    raise AttributeError(name)
