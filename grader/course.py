"""Facts about the course that the grader, the set-up cell and the tests share."""

import platform
import re
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
RELEASE = ROOT / "notebooks"
EDITION_SOURCE = ROOT / "grader" / "edition"  # the files written for the student edition alone

# The one place the address students fetch the course from is written: that of the student
# edition (`python -m grader publish`), never this repository, which holds the answers. The set-up
# cell of every notebook and the Colab/Kaggle badges are made from it. COURSE_REPO in the
# environment overrides it.
COURSE_REPO = "https://github.com/larkfield-academy/transformer-block-course-student"

SECTIONS = ("01-heads", "02-positions", "03-norms", "04-residuals", "05-block",
            "06-tiny-transformer", "07-banking77")


# The tag of the cell of a later notebook that loads parts of earlier ones (ticketnet.load_parts):
# when grading, the course's own parts run in its place (grader.judge.course_parts).
PARTS_TAG = "earlier-parts"


def nbgrader_info(cell):
    """A notebook cell's nbgrader metadata (grade_id, grade, solution, points, ...), {} for a cell
    nbgrader does not know: the one way the grader reads it."""
    return cell.metadata.get("nbgrader", {})


def reference_key(module, name, settings):
    """The name of a result the checks compare with (grader.references): the settings are ints,
    floats, bools, strings and tuples of them, whose repr is the same on every machine."""
    return f"{module}.{name}{settings!r}"


# A number as the checks print one: a count, a size, a difference like -1.5e-05 (the minus of a
# range, as in "features 0-15", is not a sign)
NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?")


def message_shape(message):
    """The first line of a check's failure message, its numbers blanked: the same mistake made on
    other numbers (another student's draw) reads the same."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    return NUMBER.sub("#", first.removeprefix("AssertionError: "))


def is_parts_cell(cell):
    return cell.cell_type == "code" and PARTS_TAG in cell.metadata.get("tags", [])


def is_check_cell(cell):
    return cell.cell_type == "code" and nbgrader_info(cell).get("grade") and not nbgrader_info(cell).get("solution")


def solution_notebook(section):
    return SOLUTIONS / section / f"{section}.ipynb"


def release_notebook(section):
    return RELEASE / section / f"{section}.ipynb"


# The versions the course supports, oldest and newest: from the oldest platform students use
# (Kaggle's image, built on an older Colab runtime than Colab's own) to the newest releases.
# platforms/ locks one environment per platform (its README says where each one's versions come
# from); CI runs the course under each, and tests/test_platforms.py holds this table to them.
# Every notebook's set-up cell checks it.
SUPPORTED = {
    "python": ("3.11", "3.13"),
    "torch": ("2.10.0", "2.15.0"),
    "numpy": ("2.0.2", "2.5.5"),
    "pandas": ("2.2.2", "3.1.1"),
    "matplotlib": ("3.10.0", "3.11.2"),
    "scikit-learn": ("1.6.1", "1.9.1"),
}


def _release(version):
    """'2.11.0+cu130' -> (2, 11, 0): the numbers of a version, without a build or a pre-release tag."""
    return tuple(int(part) for part in re.match(r"\d+(?:\.\d+)*", version).group().split("."))


def unsupported(found):
    """(too old, newer than tested): one phrase per library of `found` (name -> version) that lies
    outside SUPPORTED."""
    old, new = [], []
    for name, version in found.items():
        oldest, newest = SUPPORTED[name]
        if _release(version) < _release(oldest):
            old.append(f"{name} {version} (the course needs {oldest} or newer)")
        elif _release(version)[:len(_release(newest))] > _release(newest):
            new.append(f"{name} {version} (tested up to {newest})")
    return old, new


def installed_versions():
    """The running Python's version and that of each supported library it has."""
    found = {"python": platform.python_version()}
    for name in SUPPORTED:
        if name != "python":
            try:
                found[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                pass  # a missing library fails at its import, with its own message
    return found


def check_versions():
    """Stop with one line if a library is older than the course supports; say so in one line if one
    is newer than the newest version tested. The set-up cell of every notebook calls this."""
    old, new = unsupported(installed_versions())
    if old:
        raise RuntimeError("Too old for this course: " + "; ".join(old) + ". Upgrade, then restart "
                           "the kernel.")
    if new:
        print("Newer than this course was tested with: " + "; ".join(new) + ".")
