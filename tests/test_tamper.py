"""The tamper catalogue: submissions that try to earn points without the work, from inside their
own kernel. Each is a 01-heads notebook with two tasks answered right (split_heads,
key_padding_mask: 4 points) and two wrong (merge_heads, MultiHead), plus one attack. Graded by
`grader check` and by `grader autograde`, each must earn exactly its honest 4 of 9 points, and the
checks its attack fooled in the notebook are flagged.

A right answer that warns and prints as it works is here too: it must keep full marks. And two ways
to break the grader's probe in the kernel, which can only cost the submission its own points.
"""

import json
import re
import subprocess
import sys

import nbformat
import pandas as pd
import pytest

from grader import catalogue, sample_class
from grader.autograde import autograde

SECTION = "01-heads"
# The wrong answers: the right shapes, wrong numbers, so that only comparing values can tell.
WRONG = {"merge_heads": "reshape without transposing back",
         "MultiHead": "scaled by sqrt(d_model) instead of sqrt(dh)"}
HONEST = 4.0

# Attack name -> (what it does, a cell before the first answer, a line after each answer (with
# {name}), a last cell, whether the notebook's own checks all pass).
ATTACKS = {
    "rebinds-check": (
        "rebinds the notebook's `check` to an object whose every check passes",
        "class _Always:\n    def __getattr__(self, name):\n        return lambda *args, **kwargs: print('Check passed')\n\n"
        "check = _Always()\n", "", "", True),
    "patches-the-checks": (
        "replaces the functions of grader.checks.heads",
        "import grader.checks.heads as _heads\n"
        "for _name in ('split_heads', 'merge_heads', 'key_padding_mask', 'multi_head'):\n"
        "    setattr(_heads, _name, lambda *args, **kwargs: print('Check passed'))\n", "", "", True),
    "patches-torch": (
        "makes torch.allclose and torch.equal always true",
        "torch.allclose = torch.equal = lambda *args, **kwargs: True\n", "", "", True),
    "tensor-subclass": (
        "answers return a tensor subclass for which allclose and equal are always true",
        "class _Agree(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        if func in (torch.allclose, torch.equal):\n"
        "            return True\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n\n"
        "def _sly(answer):\n"
        "    if isinstance(answer, type):\n"
        "        class Sly(answer):\n"
        "            def forward(self, *args, **kwargs):\n"
        "                return super().forward(*args, **kwargs).as_subclass(_Agree)\n"
        "        Sly.__name__ = Sly.__qualname__ = answer.__name__\n"
        "        return Sly\n"
        "    return lambda *args, **kwargs: answer(*args, **kwargs).as_subclass(_Agree)\n",
        "{name} = _sly({name})", "", True),
    "input-transformer": (
        "an IPython input transformer turns every later check cell into `pass`",
        "def _skip_checks(lines):\n"
        "    return ['pass\\n'] if any(line.startswith('check.') for line in lines) else lines\n\n"
        "get_ipython().input_transformers_cleanup.append(_skip_checks)\n", "", "", True),
    "writes-the-gradebook": (
        "gives itself 25 points of extra credit in the gradebook of its grading run",
        "", "", "import pathlib, sqlite3\n"
        "for _folder in pathlib.Path.cwd().parents:\n"
        "    if (_folder / 'gradebook.db').is_file():\n"
        "        _db = sqlite3.connect(_folder / 'gradebook.db')\n"
        "        _db.execute('UPDATE grade SET extra_credit = 25')\n"
        "        _db.commit()\n", False),
}
# Attacks that can only cost the submission its own points: the kernel's end of the probe is the
# student's to break. They never earn more than their honest points, and the tasks they break are flagged.
SABOTAGE = {
    "fakes-the-probe": (
        "replaces the grader's probe in the kernel with one that answers every call with None",
        "import grader.probe as _probe\n"
        "_probe._encode = lambda value: None\n"),
    "hides-from-the-probe": (
        "an input transformer turns the grader's probe into `pass`",
        "def _no_probe(lines):\n"
        "    return ['pass\\n'] if any('grader.probe' in line for line in lines) else lines\n\n"
        "get_ipython().input_transformers_cleanup.append(_no_probe)\n"),
}

# A right answer that warns and prints as it works: not an attack, and it keeps every point.
NOISY = ("import warnings\n\n"
         "def _noisy(answer):\n"
         "    def run(*args, **kwargs):\n"
         "        print('working on it')\n"
         "        warnings.warn('this answer warns as it works')\n"
         "        return answer(*args, **kwargs)\n"
         "    return run\n")


def _answer_cells(notebook):
    return [c for c in notebook.cells if c.cell_type == "code"
            and c.metadata.get("nbgrader", {}).get("solution") and not c.metadata["nbgrader"].get("grade")]


def submission(first, after_each, last, wrong=WRONG):
    """The release with the solutions, but the catalogue's `wrong` answers (task -> mistake), and
    the attack's cells and lines."""
    notebook, _ = sample_class.catalogue_variant(SECTION, "wrong", 0, tasks=set())
    answers = _answer_cells(notebook)
    entries = {e.name: e for e in catalogue.load(SECTION)[0] if wrong.get(e.name) == e.mistake}
    assert entries.keys() == wrong.keys(), "a wrong answer of the tamper catalogue left the catalogue"
    for cell in answers:
        if cell.metadata["nbgrader"]["grade_id"] in entries:
            cell.source = entries[cell.metadata["nbgrader"]["grade_id"]].code
    for cell in answers:
        if after_each:
            cell.source += "\n" + after_each.format(name=cell.metadata["nbgrader"]["grade_id"]) + "\n"
    if first:
        attack = nbformat.v4.new_code_cell(first)
        attack.id = "attack-first"
        notebook.cells.insert(notebook.cells.index(answers[0]), attack)
    if last:
        attack = nbformat.v4.new_code_cell(last)
        attack.id = "attack-last"
        notebook.cells.append(attack)
    return notebook


@pytest.fixture(scope="module")
def attacks(tmp_path_factory):
    """One folder per student: each attack, and the noisy right answers."""
    folder = tmp_path_factory.mktemp("attacks")
    for name, (_, first, after_each, last, _) in ATTACKS.items():
        (folder / name).mkdir()
        nbformat.write(submission(first, after_each, last), folder / name / f"{SECTION}.ipynb")
    for name, (_, first) in SABOTAGE.items():
        (folder / name).mkdir()
        nbformat.write(submission(first, "", ""), folder / name / f"{SECTION}.ipynb")
    (folder / "noisy").mkdir()
    nbformat.write(submission(NOISY, "{name} = _noisy({name})", "", wrong={}),
                   folder / "noisy" / f"{SECTION}.ipynb")
    return folder


def _check(path):
    run = subprocess.run([sys.executable, "-m", "grader", "check", "--json", str(path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.nbgrader
@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_earns_its_honest_points_from_grader_check(attacks, attack):
    result = _check(attacks / attack / f"{SECTION}.ipynb")
    assert result["score"] == HONEST, (ATTACKS[attack][0], result["tasks"])
    scores = {t["grade_id"]: t["score"] for t in result["tasks"]}
    assert scores["test_split_heads"] == 2 and scores["test_key_padding_mask"] == 2
    if ATTACKS[attack][4]:  # the notebook's own checks passed: the two wrong tasks are flagged
        assert len(result["flags"]) == 2 and all("passed in the notebook" in f for f in result["flags"])


@pytest.mark.nbgrader
@pytest.mark.parametrize("attack", SABOTAGE)
def test_breaking_the_probe_costs_only_the_submissions_own_points_and_is_flagged(attacks, attack):
    result = _check(attacks / attack / f"{SECTION}.ipynb")
    assert result["score"] <= HONEST, (SABOTAGE[attack][0], result["tasks"])
    flagged = {f.split()[0] for f in result["flags"]}
    lost = {t["grade_id"] for t in result["tasks"] if t["score"] == 0} - {"test_merge_heads", "test_MultiHead"}
    assert lost and lost <= flagged, (result["tasks"], result["flags"])


@pytest.mark.nbgrader
def test_a_right_answer_that_warns_and_prints_keeps_full_marks(attacks):
    result = _check(attacks / "noisy" / f"{SECTION}.ipynb")
    assert result["score"] == result["max_score"] == 9, result["tasks"]
    assert not result["flags"]


@pytest.mark.nbgrader
def test_the_whole_tamper_catalogue_through_autograde(attacks, tmp_path):
    results = autograde([attacks], tmp_path / "out", workers=2, timeout=30, echo=lambda line: None)
    by_student = {r["student"]: r for r in results.values()}
    assert set(by_student) == {*ATTACKS, *SABOTAGE, "noisy"}
    for attack, (what, *_, fooled) in ATTACKS.items():
        assert by_student[attack]["score"] == HONEST, (what, by_student[attack]["tasks"])
    assert by_student["noisy"]["score"] == 9
    grades = pd.read_csv(tmp_path / "out" / "grades.csv").set_index("student")
    assert (grades.loc[list(ATTACKS), "01-heads:total"] == HONEST).all()
    assert grades.loc["noisy", "01-heads:total"] == 9
    flagged = [a for a, (*_, fooled) in ATTACKS.items() if fooled]
    assert all("passed in the notebook" in grades.loc[a, "problems"] for a in flagged)
    report = (tmp_path / "out" / "report.html").read_text()
    assert all(f"<li>{a}, 01-heads.ipynb: test_" in report for a in flagged)
    assert all(by_student[a]["score"] <= HONEST for a in SABOTAGE)
    feedback = (tmp_path / "out" / "feedback" / "writes-the-gradebook" / "01-heads.html").read_text()
    total = 9 + by_student["writes-the-gradebook"]["written_max_score"]
    assert re.findall(r"Score: [\d.]+ / [\d.]+", feedback)[0] == f"Score: {HONEST} / {total}"  # not 104
