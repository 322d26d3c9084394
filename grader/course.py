"""Facts about the course that the grader, the set-up cell and the tests share."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
RELEASE = ROOT / "notebooks"

# The one place the course's public address is written; the set-up cell of every notebook and
# the Colab/Kaggle badges are made from it. COURSE_REPO in the environment overrides it.
COURSE_REPO = "https://github.com/larkfield-academy/transformer-block-course"

SECTIONS = ("01-heads", "02-positions", "03-norms", "04-residuals", "05-block",
            "06-tiny-transformer", "07-banking77")


def solution_notebook(section):
    return SOLUTIONS / section / f"{section}.ipynb"


def release_notebook(section):
    return RELEASE / section / f"{section}.ipynb"
