"""Mend a submission's graded cells before nbgrader sees it, from the release notebook.

Students' editors break notebooks in ways nbgrader refuses or mis-scores: metadata stripped by an
editor that does not know nbgrader's, a check cell deleted or duplicated. Each repair here is
written down, so the student and the instructor see what was done:

- a cell without nbgrader metadata gets it back from the release cell it matches (same cell id;
  else, for a check or other locked cell, the same text; else, for an answer cell, a definition
  of the graded name);
- a graded cell that appears twice keeps its metadata on the first copy only (the second still runs);
- a check cell that is missing is put back after its answer cell (nbgrader then restores its
  text, hidden tests included, from the source as it does for every check cell);
- the cell that loads parts of earlier sections gets its tag back when an editor dropped it (same
  cell id, else the same text), or is put back after the cell it follows when deleted: the grader
  runs the course's parts in its place (grader.judge), and without it every later cell would fail.

Under nbgrader, `RepairSubmission` does this as the first step of autograding, so that plain
`nbgrader autograde` in a class's folder repairs as `grader autograde` does; it hands the notes to
the function in its setting `on_repaired`, which the grader sets for each notebook (grader.notebook_grader).
"""

import copy
import functools
import re

from grader.course import PARTS_TAG, is_parts_cell, nbgrader_info

def _defines(source, name):
    return re.search(rf"^(def|class)\s+{re.escape(name)}\b", source, re.M) is not None


def repair(notebook, reference):
    """Repair `notebook` in place against the release notebook `reference`; returns the notes."""
    notes = []
    graded = [c for c in reference.cells if nbgrader_info(c).get("grade_id")]
    by_id = {c.get("id"): c for c in graded if c.get("id")}
    present = {nbgrader_info(c)["grade_id"] for c in notebook.cells if nbgrader_info(c).get("grade_id")}
    restored = []

    for cell in notebook.cells:
        if nbgrader_info(cell):
            continue
        match = by_id.get(cell.get("id"))
        if match is None:
            match = next((r for r in graded if nbgrader_info(r).get("locked") and r.source == cell.source
                          and r.cell_type == cell.cell_type), None)
        if match is None and cell.cell_type == "code":
            match = next((r for r in graded if nbgrader_info(r).get("solution") and not nbgrader_info(r).get("grade")
                          and _defines(cell.source, nbgrader_info(r)["grade_id"])), None)
        if match is not None and nbgrader_info(match)["grade_id"] not in present and match.cell_type == cell.cell_type:
            cell.metadata["nbgrader"] = copy.deepcopy(nbgrader_info(match))
            for key in ("editable", "deletable"):
                if key in match.metadata:
                    cell.metadata[key] = match.metadata[key]
            present.add(nbgrader_info(match)["grade_id"])
            restored.append(nbgrader_info(match)["grade_id"])
    if restored:
        notes.append(f"nbgrader metadata restored on {len(restored)} cell{'s' if len(restored) > 1 else ''} "
                     f"({', '.join(restored[:3])}"
                     f"{', ...' if len(restored) > 3 else ''})")

    seen = set()
    for cell in notebook.cells:
        grade_id = nbgrader_info(cell).get("grade_id")
        if grade_id in seen:
            del cell.metadata["nbgrader"]
            notes.append(f"a second copy of {grade_id} is graded as ordinary code")
        elif grade_id:
            seen.add(grade_id)

    for check in graded:
        grade_id = nbgrader_info(check)["grade_id"]
        if grade_id in seen or not nbgrader_info(check).get("grade") or nbgrader_info(check).get("solution") \
                or check.cell_type != "code":  # a hand-graded code answer is the student's, not a check
            continue
        answer = grade_id.removeprefix("test_")
        where = next((i for i, c in enumerate(notebook.cells) if nbgrader_info(c).get("grade_id") == answer), None)
        position = len(notebook.cells) if where is None else where + 1
        notebook.cells.insert(position, copy.deepcopy(check))
        seen.add(grade_id)
        notes.append(f"the deleted check cell {grade_id} was put back")
    notes += _restore_parts_cell(notebook, reference)
    return notes


def _position_of(notebook, cell):
    """Where the notebook holds `cell` (the same id, or the same text), or None."""
    if cell is None:
        return None
    return next((i for i, c in enumerate(notebook.cells)
                 if (cell.get("id") and c.get("id") == cell.get("id")) or c.source == cell.source), None)


def _restore_parts_cell(notebook, reference):
    """Tag the notebook's earlier-parts cell again, or put it back; returns the notes."""
    notes = []
    for position, wanted in enumerate(reference.cells):
        if not is_parts_cell(wanted) or any(map(is_parts_cell, notebook.cells)):
            continue
        match = next((c for c in notebook.cells if c.get("id") and c.get("id") == wanted.get("id")), None) \
            or next((c for c in notebook.cells if c.cell_type == "code" and c.source == wanted.source), None)
        if match is not None:
            match.metadata.setdefault("tags", []).append(PARTS_TAG)
            notes.append("the tag of the cell that loads earlier parts was put back")
            continue
        # after the cell it followed, else before the one that followed it, else where it was
        previous = _position_of(notebook, reference.cells[position - 1]) if position else None
        following = reference.cells[position + 1] if position + 1 < len(reference.cells) else None
        at = previous + 1 if previous is not None else _position_of(notebook, following)
        notebook.cells.insert(min(position, len(notebook.cells)) if at is None else at, copy.deepcopy(wanted))
        notes.append("the deleted cell that loads earlier parts was put back")
    return notes


@functools.cache
def _preprocessor():
    import nbformat
    from nbgrader.preprocessors import NbGraderPreprocessor
    from traitlets import Callable, Unicode

    class RepairSubmission(NbGraderPreprocessor):
        """`repair` against the release notebook, before nbgrader's own steps."""

        reference = Unicode("", help="the release notebook's path, with {section} for the "
                            "section's name").tag(config=True)
        on_repaired = Callable(None, allow_none=True, help="called with the notes of each notebook "
                               "repaired").tag(config=True)

        def preprocess(self, nb, resources):
            info = resources["nbgrader"]
            reference = nbformat.read(self.reference.format(section=info["assignment"]), as_version=4)
            notes = repair(nb, reference)
            if self.on_repaired:
                self.on_repaired(notes)
            return nb, resources

    return RepairSubmission


def __getattr__(name):  # nbgrader is imported only when asked for
    if name == "RepairSubmission":
        return _preprocessor()
    raise AttributeError(name)
