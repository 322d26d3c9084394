"""Similar submissions (grader/similar.py): the planted copies of the test class are listed and its
honest students are not, in every section; what a student wrote cannot reach the page or the
spreadsheet as markup or a formula; a re-run compares only the pairs of a changed notebook."""

import csv
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from grader import similar
from grader.export import write_tables
from grader.course import SECTIONS, nbgrader_info
from grader.result import Result, Task
from grader.sample_class import catalogue_variant

from bench import similar as bench  # bench/similar.py: the test class

ROOT = Path(__file__).resolve().parents[1]

SECTION = "02-positions"


@pytest.fixture(scope="module")
def test_class(tmp_path_factory):
    folder = tmp_path_factory.mktemp("test-class")
    bench.test_class(folder)
    return folder, bench.class_pairs(folder)


def _answers(notebook, section=SECTION):
    released = similar._released(section)
    return similar._answers({name: cell.source for name, cell in similar._answer_cells(notebook).items()}, released)


def test_every_planted_copy_is_listed_in_every_section_it_copies(test_class):
    _, found = test_class
    missed = [(key, pair.code_shares) for key, pair in found.items() if bench.planted(key[1], key[2])
              and pair.code_shared >= similar.LEAST_SHARED and not pair.listed(similar.THRESHOLD)]
    assert not missed, f"planted copies not listed at {similar.THRESHOLD}: {missed}"
    copied = {(original, copy) for original, copy in bench.PLANTED
              if sum(found.get((s, *sorted((original, copy))), None) is not None for s in SECTIONS) == len(SECTIONS)}
    assert copied == set(bench.PLANTED), "each planted copy shares code with its original in every section"


def test_no_honest_pair_is_listed_though_catalogue_answers_share_code(test_class):
    _, found = test_class
    honest = {key: pair for key, pair in found.items() if not bench.planted(key[1], key[2])}
    assert not [key for key, pair in honest.items() if pair.listed(similar.THRESHOLD)]
    # the measure is not blind: honest students do share code (the catalogue's answers to section
    # 5's Block build their layers alike), below the threshold
    assert max(p.share for p in honest.values() if p.code_shared >= similar.LEAST_SHARED) > similar.THRESHOLD / 2


def test_the_model_answer_and_the_release_pair_no_one(test_class):
    folder, found = test_class
    model = {"ada", "hal", "eli", "ben"}  # the solutions, half of them, the release untouched
    assert not [key for key, pair in found.items() if {key[1], key[2]} <= model]
    for section in SECTIONS:
        ada = similar.read_answers(folder / "ada" / f"{section}.ipynb", section)
        assert ada.code.count("# ") and ada.text  # it does hold the answers, all boilerplate


def test_renaming_and_restyling_change_no_fingerprint():
    notebook, entries = catalogue_variant(SECTION, "right", 1)
    original = _answers(notebook)
    for change in (bench.renamed, bench.restyled):
        copy = _answers(bench._changed(nbformat.reads(nbformat.writes(notebook), as_version=4), change))
        assert copy.code != original.code
        [pair], _ = similar.pairs(SECTION, {"a": original, "b": copy})
        assert pair.code_shares == (1.0, 1.0), change.__name__


def test_the_shares_are_the_same_in_every_process(test_class):
    """copydetect hashes k-grams with Python's hash(), seeded anew in each process: the grader's
    own hash makes the winnowing, and so the shares, the same in every run."""
    folder, _ = test_class
    code = ("import json; from bench import similar as b; "
            f"found = b.class_pairs({str(folder)!r}); "
            "print(json.dumps(sorted([list(k), p.code_shares, p.text_shares, p.code_runs] for k, p in found.items())))")
    outputs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                              env=dict(os.environ, PYTHONHASHSEED=seed)).stdout for seed in ("1", "2")}
    assert len(outputs) == 1


def test_a_rerun_compares_only_the_pairs_of_a_changed_notebook(test_class, tmp_path, monkeypatch):
    folder, _ = test_class
    results = {k: r for k, r in bench.class_results(folder).items() if r.section == SECTION}
    compared = []
    real = similar._compare
    monkeypatch.setattr(similar, "_compare", lambda cd, a, b: compared.append((a.filename, b.filename)) or real(cd, a, b))
    similar.write_similar(tmp_path, results)
    first = len(compared)
    assert first > 2
    compared.clear()
    similar.write_similar(tmp_path, results)
    assert compared == []  # nothing changed: every pair read back
    changed = tmp_path / "late" / f"{SECTION}.ipynb"
    notebook = nbformat.read(folder / "hon" / f"{SECTION}.ipynb", as_version=4)
    cell = next(c for c in notebook.cells if nbgrader_info(c).get("grade_id") == "sinusoid")
    cell.source += "\n\nunused = [step * 2 for step in range(10)]\n"
    changed.parent.mkdir()
    nbformat.write(notebook, changed)
    results[f"hon/{SECTION}.ipynb"] = replace(results[f"hon/{SECTION}.ipynb"], notebook=str(changed))
    similar.write_similar(tmp_path, results)
    assert compared and all("hon." in pair[0] or "hon." in pair[1] for pair in compared), compared
    assert len(compared) < first
    compared.clear()
    real_boilerplate = similar.boilerplate
    monkeypatch.setattr(similar, "boilerplate", lambda section: similar.Answers(
        real_boilerplate(section).code + "\nextra = 1\n", real_boilerplate(section).text))
    similar.write_similar(tmp_path, results)
    assert len(compared) == first  # a new solution or release: every pair again


def _tables(out, entries, monkeypatch):
    """grader.export.write_tables on results made of `entries` (Results of student, section, notebook),
    each scored 1 of 1 on one task; the gradebook and the catalogue's names left out (they have
    tests of their own). Returns similar.csv's rows as dicts."""
    from grader import class_folder, report
    monkeypatch.setattr(class_folder, "manual_grades", lambda out: {})
    monkeypatch.setattr(class_folder, "written_progress", lambda out: [])
    monkeypatch.setattr(report, "_catalogued", lambda: {})
    results = {key: replace(entry, tasks=(Task("test_sinusoid", 1.0, 1.0),)) for key, entry in entries.items()}
    Path(out).mkdir(parents=True, exist_ok=True)
    write_tables(Path(out), results)
    return list(csv.DictReader((Path(out) / "similar.csv").open()))


def test_pages_and_csv_keep_what_students_wrote_as_text(tmp_path, monkeypatch):
    """A student id and a cell are the students' to write: the page escapes them, the spreadsheet
    gets no formula."""
    notebook, _ = catalogue_variant(SECTION, "right", 1)
    for cell in similar._answer_cells(notebook).values():
        if cell.cell_type == "code":
            cell.source += "\n# </pre><script>alert('hi')</script>\n"
    entries = {}
    for number, student in enumerate(("=HYPERLINK(\"http://x\")", "<img src=x onerror=alert(1)>")):
        path = tmp_path / "in" / f"{number}.ipynb"
        path.parent.mkdir(exist_ok=True)
        nbformat.write(notebook, path)
        entries[student] = Result(str(path), SECTION, student)
    [row] = _tables(tmp_path / "out", entries, monkeypatch)
    header, line = (tmp_path / "out" / "similar.csv").read_text().splitlines()
    assert header.startswith('"section","student_a","student_b","code_share_a"') and '"1.0"' in line  # all quoted
    html = (tmp_path / "out" / row["view"]).read_text() + (tmp_path / "out" / "report.html").read_text()
    assert "<script>" not in html and "<img src=x" not in html and "&lt;/pre&gt;&lt;script&gt;" in html
    assert [row["student_a"], row["student_b"]] == ["<img src=x onerror=alert(1)>", "'=HYPERLINK(\"http://x\")"]


def test_the_pairs_are_read_from_the_class_folder_once_the_files_handed_in_are_gone(test_class, tmp_path,
                                                                                   monkeypatch):
    """export, months later: the submissions folder is gone, nbgrader's submitted/ copies stay."""
    folder, _ = test_class
    entries = {}
    for key, entry in bench.class_results(folder).items():
        if entry.section == SECTION:
            kept = tmp_path / "submitted" / entry.student / SECTION / f"{SECTION}.ipynb"
            kept.parent.mkdir(parents=True)
            kept.write_bytes(Path(entry.notebook).read_bytes())
            entries[key] = replace(entry, notebook=str(tmp_path / "gone" / f"{SECTION}.ipynb"))
    listed = _tables(tmp_path, entries, monkeypatch)
    assert {tuple(sorted(p)) for p in bench.PLANTED} <= {(row["student_a"], row["student_b"]) for row in listed}


def test_metadata_of_any_json_type_neither_raises_nor_hides_an_answer(tmp_path):
    """A file handed in is JSON of the student's making: nbgrader's metadata as a string, a grade
    id as a list. Such a cell is found by its id, as one whose metadata an editor stripped.
    (Before, both raised, and autograde wrote no report for the class.)"""
    notebook, _ = catalogue_variant(SECTION, "right", 1)
    expected = _answers(notebook)
    spoiled = json.loads(nbformat.writes(notebook))
    first, second, third = [c for c in spoiled["cells"] if c["metadata"].get("nbgrader", {}).get("solution")][:3]
    first["metadata"]["nbgrader"] = "oops"
    second["metadata"]["nbgrader"]["grade_id"] = ["x"]
    path = tmp_path / "spoiled.ipynb"
    path.write_text(json.dumps(spoiled))
    answers = similar.read_answers(path, SECTION)
    assert answers == expected
    third["metadata"] = []  # nbformat refuses the file: nothing to compare, and no error
    path.write_text(json.dumps(spoiled))
    assert similar.read_answers(path, SECTION) is None


def test_broken_foreign_and_flooded_notebooks_cost_nothing_else(tmp_path):
    cut = tmp_path / "cut.ipynb"
    cut.write_text('{"cells": [')
    assert similar.read_answers(cut, SECTION) is None
    assert similar.read_answers(tmp_path / "missing.ipynb", SECTION) is None
    foreign = tmp_path / "foreign.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('holiday')")]), foreign)
    assert similar.read_answers(foreign, SECTION).code == similar.CODE_BETWEEN
    notebook, _ = catalogue_variant(SECTION, "right", 1)
    next(c for c in similar._answer_cells(notebook).values() if c.cell_type == "code").source = "x = 1\n" * 2_000_000
    flooded = tmp_path / "flooded.ipynb"
    nbformat.write(notebook, flooded)
    answers = similar.read_answers(flooded, SECTION)
    assert len(answers.code) <= similar.MOST_READ + len(similar.CODE_BETWEEN)
    similar.pairs(SECTION, {"flood": answers, "other": answers})  # bounded by MOST_READ: returns


def test_the_readme_states_the_default_threshold():
    assert f"at least {similar.THRESHOLD:.0%} of one student's own answer code" in (ROOT / "README.md").read_text()


def test_the_threshold_is_kept_for_export_and_refused_out_of_range(tmp_path):
    assert similar.write_similar(tmp_path, {})[0] == similar.THRESHOLD
    similar.keep_threshold(tmp_path, 0.6)
    assert similar.write_similar(tmp_path, {})[0] == 0.6
    similar.keep_threshold(tmp_path, None)  # export without the option: as last written
    assert similar.write_similar(tmp_path, {})[0] == 0.6
    with pytest.raises(ValueError, match="between 0 and 1"):
        similar.keep_threshold(tmp_path, 1.5)
    run = subprocess.run([sys.executable, "-m", "grader", "export", str(tmp_path), "--similar-threshold", "80"],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and "a share between 0 and 1, not 80" in run.stderr


def test_write_tables_lists_the_pairs_in_the_report_and_similar_csv(test_class, tmp_path, monkeypatch):
    """The class's tables with the test class's section 2 as results (grading itself has its own
    tests: tests/test_browser.py grades a planted class whole)."""
    folder, found = test_class
    entries = {key: entry for key, entry in bench.class_results(folder).items() if entry.section == SECTION}
    listed = _tables(tmp_path, entries, monkeypatch)
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Similar pairs</h2>" in page and f"<h3>{SECTION}</h3>" in page
    expected = {(a, b) for (section, a, b), pair in found.items() if section == SECTION and bench.planted(a, b)
                and pair.code_shared >= similar.LEAST_SHARED}
    assert {tuple(sorted(p)) for p in bench.PLANTED} <= expected
    assert {(row["student_a"], row["student_b"]) for row in listed} == expected
    for row in listed:
        assert f'href="{row["view"]}"' in page and (tmp_path / row["view"]).is_file()
    assert "similar" not in (tmp_path / "grades.csv").read_text()
