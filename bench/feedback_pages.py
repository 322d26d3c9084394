"""What keeping the highlighted code cells saves on a class's feedback pages, in one run.

Every autograded notebook of a graded class folder (`autograde --out DIR` leaves them in
DIR/autograded) is rendered by the feedback exporter twice per round: once highlighting every code
cell anew, as nbconvert's filter does, and once with grader.feedback's kept highlights, emptied at
the start of the round, as in a new grading worker. The rounds alternate which goes first, so that
the machine's drift falls on both. Prints the seconds of each and their ratio per round, and the
median.

    python bench/feedback_pages.py DIR [--rounds 3]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from grader import feedback  # noqa: E402
from grader.course import nbgrader_info  # noqa: E402


def pages(folder):
    """The autograded notebooks of the class folder `folder`, read, with their section."""
    paths = sorted(Path(folder).glob("autograded/*/*/*.ipynb"))
    if not paths:
        raise SystemExit(f"{folder} holds no autograded notebook (autograded/STUDENT/SECTION/SECTION.ipynb)")
    notebooks = []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:  # what nbgrader's GetGrades adds from the gradebook
            if nbgrader_info(cell).get("grade"):
                cell.metadata.nbgrader.setdefault("score", 0)
                cell.metadata.nbgrader.setdefault("comment", "")
        notebooks.append((path.parent.name, notebook))
    return notebooks


def exporter():
    """The page's exporter as nbgrader's GenerateFeedback makes it."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    converter = GenerateFeedback(coursedir=CourseDirectory(), config=Config())
    return feedback.FeedbackPage(parent=converter, config=converter.config)


def render_all(notebooks, kept):
    """Seconds to render every page; `kept`: with the kept highlights, emptied first."""
    from nbconvert.filters.highlight import Highlight2HTML
    feedback.HIGHLIGHTED.clear()
    highlighter = feedback.KeptHighlights if kept else Highlight2HTML
    started = time.perf_counter()
    for section, notebook in notebooks:
        page = exporter()
        page.filters = {"highlight_code": highlighter(pygments_lexer="ipython3", parent=page)}
        page.from_notebook_node(nbformat.from_dict(notebook), {"nbgrader": {
            "notebook": section, "score": 0, "max_score": 1, "late_penalty": 0}})
    return time.perf_counter() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="a graded class folder (autograde's --out)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    notebooks = pages(args.folder)
    render_all(notebooks[:1], kept=False)  # imports and compiled templates, paid once by both
    ratios = []
    for round_ in range(args.rounds):
        order = [False, True] if round_ % 2 == 0 else [True, False]
        seconds = {kept: render_all(notebooks, kept) for kept in order}
        ratios.append(seconds[False] / seconds[True])
        print(f"round {round_ + 1}: {len(notebooks)} pages, each cell highlighted anew {seconds[False]:.2f} s, "
              f"kept highlights {seconds[True]:.2f} s: {ratios[-1]:.2f}x")
    print(f"median over {args.rounds} rounds: {statistics.median(ratios):.2f}x "
          f"(from {min(ratios):.2f}x to {max(ratios):.2f}x)")
    return ratios


if __name__ == "__main__":
    main()
