"""Build the student release in notebooks/ from the solution notebooks in solutions/.

nbgrader's generate_assignment does the work (solutions become stubs, hidden tests and model
answers go, outputs are cleared, checksums are kept); this module then stamps each notebook with
"Open in Colab/Kaggle" badges and the current set-up cell, and can check that notebooks/ is in sync.
"""

import shutil
import tempfile
from pathlib import Path

import nbformat

from grader import setup_cell
from grader.course import COURSE_REPO, RELEASE, ROOT, SECTIONS, solution_notebook
from grader.nbconfig import nbgrader_api

BADGES_ID = "open-in-colab-kaggle"


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
