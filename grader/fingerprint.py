"""What a grade depends on, decided here alone: a fingerprint per section of everything that grades
its notebooks. A notebook graded under another fingerprint is graded again (grader.autograde), a
Dask worker whose checkout would grade differently is refused (grader.cluster), and a check server
of another fingerprint is never asked (grader.check_server)."""

import hashlib
import re
from pathlib import Path

from grader.course import ROOT, SECTIONS
from grader.options import GradingOptions

# The files that grade every section (a section's own solution and checks are added to its own):
# the library, the pins, the grader with its templates, and the data the notebooks read.
SHARED = ["ticketnet.py", "requirements.txt", "grader/**/*.py", "grader/templates/*", "data/**/*",
          "bench/results/**/*"]
# Never read by grading, so a change to them grades nothing again: the sample class and its
# builder; the class's tables, report and similar pairs, written anew from the results at the end
# of every run (export); the store that keeps the results (results: what a grade is, and whether it
# is current, autograde decides); the command line, which hands its choices over as GradingOptions
# (in the fingerprint); the order and the machines notebooks are graded on (schedule, cluster),
# whose only result of their own is a grader failure, graded again in the next run; running
# notebooks (execute); building the student edition (publish: what grading reads of the edition,
# the recorded results, is grader.recordings); the check server, whose key adds its own code.
# tests/test_package.py holds that no module outside this list but autograde imports one in it.
NOT_READ = ("grader/examples/", "grader/sample_class.py", "grader/export.py", "grader/results.py",
            "grader/report.py", "grader/similar.py",
            "grader/__main__.py", "grader/schedule.py", "grader/cluster.py", "grader/execute.py",
            "grader/publish.py", "grader/check_server.py")
# The libraries that run a grade.
LIBRARIES = ["torch", "numpy", "pandas", "matplotlib", "scikit-learn", "tqdm", "nbgrader", "nbclient",
             "nbconvert", "nbformat", "ipykernel", "jupyter_client", "traitlets"]


def grading_versions(options=GradingOptions(), root=ROOT):
    """section -> a fingerprint of everything that grades it: its solution notebook (check cells,
    hidden tests), the modules of grader/checks/ it imports, the SHARED files, the grading
    `options` that a grade depends on, and the versions of Python and the LIBRARIES. Key None
    covers notebooks of no known section, and is the fingerprint of the whole course."""
    import platform
    from importlib import metadata
    root = Path(root)
    checks = root / "grader" / "checks"
    shared = hashlib.sha256(repr(sorted(options.graded_by().items())).encode())
    for path in _shared_files(root):
        if path.parent != checks or path.name == "__init__.py":  # a section's own checks count for it alone
            shared.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    for name in LIBRARIES:
        shared.update(f"{name}=={_version(metadata, name)}".encode())
    shared.update(f"python=={platform.python_version()}".encode())
    versions = {}
    for section in SECTIONS:
        solution = root / "solutions" / section / f"{section}.ipynb"
        digest = shared.copy()
        for path in [solution, *(checks / f"{m}.py" for m in check_modules(solution, checks))]:
            digest.update(path.read_bytes())
        versions[section] = digest.hexdigest()[:16]
    versions[None] = hashlib.sha256("".join(versions.values()).encode()).hexdigest()[:16]
    return versions


def _shared_files(root):
    found = {path for pattern in SHARED for path in root.glob(pattern)}
    return sorted(path for path in found if path.is_file() and "__pycache__" not in path.parts
                  and not path.relative_to(root).as_posix().startswith(NOT_READ))


def _version(metadata, name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def check_modules(solution, checks):
    """The modules of grader/checks/ that a section's solution imports, and those they import."""
    found, todo = set(), re.findall(r"from grader\.checks import (\w+)", solution.read_text())
    while todo:
        module = todo.pop()
        if module not in found and (checks / f"{module}.py").is_file():
            found.add(module)
            todo += re.findall(r"from grader\.checks\.(\w+) import", (checks / f"{module}.py").read_text())
    return sorted(found)
