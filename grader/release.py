"""Build the student release in notebooks/ from the solution notebooks in solutions/.

nbgrader's generate_assignment does the work (solutions become stubs, hidden tests and model
answers go, outputs are cleared, checksums are kept); this module then stamps each notebook with
"Open in Colab/Kaggle" badges and the current set-up cell, and can check that notebooks/ is in sync.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from grader import setup_cell
from grader.course import COURSE_REPO, RELEASE, ROOT, SECTIONS, solution_notebook
from grader.options import GradingOptions

BADGES_ID = "open-in-colab-kaggle"


def alembic_head():
    """The newest revision of nbgrader's database schema, which a new gradebook is stamped with.

    nbgrader asks the `alembic` command for it, in a subprocess that takes seconds (BENCHMARKS.md,
    "Paid once per run"), and every `grader check` starts a new gradebook. Reading the revision
    scripts in-process takes a fraction of that and gives the same answer (tests/test_grader.py).
    """
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR
    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(config).get_current_head()


def alembic_head_by_command():
    """The same revision asked the way nbgrader asks it: the `alembic` command, in a subprocess.
    Kept to check alembic_head against it (tests) and to time both (bench/grading.py)."""
    import subprocess
    from nbgrader.dbutil import _temp_alembic_ini
    with tempfile.TemporaryDirectory() as folder, \
            _temp_alembic_ini(f"sqlite:///{folder}/gradebook.db") as ini:
        printed = subprocess.run([Path(sys.executable).parent / "alembic", "-c", ini, "heads"],
                                 capture_output=True, text=True, check=True).stdout
    return printed.split()[0]


def nbgrader_api(*args, **kwargs):
    from nbgrader.apps import NbGraderAPI
    return NbGraderAPI(config=nbgrader_config(*args, **kwargs))


def nbgrader_config(root, release_dir, db, source="solutions", timeout=GradingOptions.timeout, kernel=None, judged=False,
                    sockets=None):
    """nbgrader's settings for a course in `root`: one definition for the release, the grading
    courses (grader/grading.py) and the class's course folder (grader/gradebook.py)."""
    import nbgrader.api
    from traitlets.config import Config
    nbgrader.api.get_alembic_version = alembic_head
    # nbgrader runs `alembic` to create its database; it lives beside this Python.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.source_directory = str(source)
    config.CourseDirectory.release_directory = str(release_dir)
    config.CourseDirectory.db_url = f"sqlite:///{db}"
    config.Application.log_level = "ERROR"
    config.Execute.timeout = timeout  # seconds a cell may run before the kernel is interrupted
    config.Execute.extra_arguments = kernel_arguments(warm=bool(kernel))
    # Killed at the end, not asked to stop: a message to a kernel whose end of the connection the
    # submission broke would wait for ever.
    config.Execute.shutdown_kernel = "immediate"
    config.KernelManager.client_class = "grader.judge.GradingKernelClient"  # and no heartbeat, for the same reason
    if kernel:  # a kernel spec other than the notebook's own (grader.sandbox, grader.warm_kernel)
        config.Execute.kernel_name = kernel
    if sockets:  # Unix sockets with this path prefix: a sandboxed kernel has no network, loopback included
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(sockets)
        config.JudgedExecute.exchange = str(Path(sockets).parent)  # the judge's files, in the kernel's view
    # No script or active content of a submission runs when the feedback page is opened.
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbconvert.preprocessors.sanitize import SanitizeHTML
    from nbgrader.preprocessors import GetGrades
    # what Formgrader shows the grader and the student's feedback never does
    from grader.marks import DropHiddenTests, DropMarkSchemes
    config.GenerateFeedback.preprocessors = [DropMarkSchemes, DropHiddenTests, GetGrades, SanitizeHTML,
                                             CSSHTMLHeaderPreprocessor]
    config.SanitizeHTML.enabled = True  # nbconvert's preprocessors are off until enabled
    config.GenerateFeedback.exporter_class = "grader.feedback.FeedbackPage"
    if judged:  # the submission repaired first (grader.repair); each check's outputs: the judge's verdict (grader.judge)
        from nbgrader.converters import Autograde
        from nbgrader.preprocessors import Execute
        from grader.judge import JudgedExecute
        from grader.repair import RepairSubmission
        defaults = Autograde.class_traits()
        config.Autograde.sanitize_preprocessors = [RepairSubmission, *defaults["sanitize_preprocessors"].default()]
        config.RepairSubmission.reference = str(Path(release_dir) / "{section}" / "{section}.ipynb")
        from grader.marks import AddMarkSchemes  # for Formgrader's eyes (its feedback drops them)
        config.Autograde.autograde_preprocessors = [
            *(JudgedExecute if p is Execute else p for p in defaults["autograde_preprocessors"].default()),
            AddMarkSchemes]
    return config


def kernel_arguments(warm):
    """The options every grading kernel starts with."""
    # Kernel warnings (ipykernel's about TCP without encryption, once per kernel) would reach the
    # instructor's terminal; a student's own output goes to the notebook either way.
    arguments = ["--IPKernelApp.log_level=ERROR"]
    if warm:  # input history in memory, not in ~/.ipython's database: nothing reads it back
        arguments.append("--HistoryManager.hist_file=:memory:")
    return arguments


def badges(section):
    path = f"notebooks/{section}/{section}.ipynb"
    github = COURSE_REPO.removeprefix("https://github.com/")
    colab = f"https://colab.research.google.com/github/{github}/blob/main/{path}"
    kaggle = f"https://kaggle.com/kernels/welcome?src={COURSE_REPO}/blob/main/{path}"
    return (f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab}) "
            f"[![Open in Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)]({kaggle})")


def stamp(notebook, section):
    """Put the badges first and the current set-up cell in place of the tagged one."""
    notebook.cells = [c for c in notebook.cells if c.get("id") != BADGES_ID]
    cell = nbformat.v4.new_markdown_cell(badges(section))
    cell.id = BADGES_ID
    notebook.cells.insert(0, cell)
    for cell in notebook.cells:
        if setup_cell.TAG in cell.metadata.get("tags", []):
            cell.source = setup_cell.SOURCE
    return notebook


def sections_with_solutions():
    return [s for s in SECTIONS if solution_notebook(s).is_file()]


def build(out_dir):
    """Write the release of every section that has a solution notebook under out_dir."""
    out_dir = Path(out_dir)
    written = []
    with tempfile.TemporaryDirectory() as work:
        api = nbgrader_api(ROOT, Path(work) / "release", Path(work) / "gradebook.db")
        for section in sections_with_solutions():
            result = api.generate_assignment(section, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader could not release {section}:\n{result['error']}")
            notebook = nbformat.read(Path(work) / "release" / section / f"{section}.ipynb", as_version=4)
            target = out_dir / section / f"{section}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(stamp(notebook, section), target)
            written.append(target)
    return written


def out_of_sync():
    """Paths (relative to the repository) where notebooks/ differs from a fresh release."""
    with tempfile.TemporaryDirectory() as fresh:
        build(fresh)
        expected = {p.relative_to(fresh): p.read_bytes() for p in Path(fresh).rglob("*.ipynb")}
    actual = {p.relative_to(RELEASE): p.read_bytes() for p in RELEASE.rglob("*.ipynb")} if RELEASE.exists() else {}
    return sorted(f"notebooks/{name}" for name in expected.keys() | actual.keys()
                  if expected.get(name) != actual.get(name))


def release():
    """Regenerate notebooks/ from solutions/ (removing release notebooks without a solution)."""
    if RELEASE.exists():
        for folder in RELEASE.iterdir():
            if folder.is_dir() and folder.name in SECTIONS and folder.name not in sections_with_solutions():
                shutil.rmtree(folder)
    return build(RELEASE)
