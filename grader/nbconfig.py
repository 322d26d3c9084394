"""nbgrader's settings, one definition for every course folder of the grader: the release
(grader.release), the grading courses (grader.notebook_grader) and the class's course folder
(grader.class_folder); and the schema version a new gradebook is stamped with."""

import os
import sys
import tempfile
from pathlib import Path

from grader.options import GradingOptions


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
    courses (grader/notebook_grader.py) and the class's course folder (grader/class_folder.py)."""
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
    config.KernelManager.client_class = "grader.kernel_client.GradingKernelClient"  # and no heartbeat, for the same reason
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
