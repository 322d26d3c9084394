"""Every catalogue entry graded for real: through nbgrader's autograder, as `grader check` and
`grader autograde` grade a student's notebook (release notebook, check cells and hidden tests
restored from the source, a kernel per notebook).

tests/test_catalogue.py runs each entry in-process, one at a time, and says precisely which one
broke; this test proves the same verdicts survive the real grading path. To keep it affordable,
one notebook carries an entry for every task at once: variant k of a section holds the k-th wrong
(or right) entry of each task that has one, and the solution elsewhere. A section's wrong entries
thus need as many notebooks as its longest list, not one per entry. A task whose answers call
earlier answers (catalogue BUILDS_ON) gets its wrong entries in notebooks of their own, beside
the solution's helpers, so that each wrong answer fails for its own mistake.
"""

import re

import nbformat
import pytest

from grader import catalogue, release, sample_class
from grader.options import GradingOptions

SECTIONS = release.sections_with_solutions()


def _variants():
    """(section, kind, group, k, tasks): the notebooks to grade."""
    for section in SECTIONS:
        wrong, right = catalogue.load(section)
        apart = catalogue.builds_on(section)
        for kind, pool in (("wrong", wrong), ("right", right)):
            names = {e.name for e in pool}
            groups = [names - set(apart)] + [{name} for name in apart] if kind == "wrong" else [names]
            for group, tasks in enumerate(groups):
                longest = max((sum(e.name == name for e in pool) for name in tasks), default=0)
                for k in range(longest):
                    yield section, kind, group, k, tasks


@pytest.fixture(scope="module")
def graded(tmp_path_factory, kept_grading):
    """{(section, kind, group, k): (entries used, grading result)} for every variant notebook."""
    folder = tmp_path_factory.mktemp("variants")
    entries = {}
    for section, kind, group, k, tasks in _variants():
        notebook, entries[section, kind, group, k] = sample_class.catalogue_variant(section, kind, k, tasks)
        path = folder / "class" / f"{kind}-{group}-{k}" / f"{section}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
    results, _ = kept_grading("catalogue", [folder / "class"], folder / "out", options=GradingOptions(), workers=2)
    by_key = {}
    for result in results.values():
        kind, group, k = re.fullmatch(r"(wrong|right)-(\d+)-(\d+)", result.student).groups()
        by_key[result.section, kind, int(group), int(k)] = result
    return {key: (entries[key], by_key.get(key)) for key in entries}


@pytest.mark.parametrize("section", SECTIONS)
def test_each_wrong_entry_loses_its_task_with_its_words(graded, section):
    for (where, kind, _, k), (entries, result) in graded.items():
        if where != section or kind != "wrong":
            continue
        assert result and not result.error, (section, k, result and result.error)
        tasks = {t.grade_id.removeprefix("test_"): t for t in result.tasks}
        for name, entry in entries.items():
            if entry is None:
                continue
            task = tasks[name]
            assert task.score == 0, f"{section} {name}: '{entry.mistake}' was given marks"
            for word in entry.expect:
                assert word.lower() in task.message.lower(), (
                    f"{section} {name}: '{entry.mistake}' failed without {word!r}: {task.message}")


@pytest.mark.parametrize("section", SECTIONS)
def test_each_right_entry_earns_full_marks(graded, section):
    for (where, kind, _, k), (entries, result) in graded.items():
        if where != section or kind != "right":
            continue
        assert result and not result.error, (section, k, result and result.error)
        for task in result.tasks:
            name = task.grade_id.removeprefix("test_")
            variant = entries[name].variant if entries.get(name) else "the solution"
            assert task.score == task.max_score, f"{section} {name} ({variant}): {task.message}"
