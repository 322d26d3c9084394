"""The notebooks as files: nbgrader structure, the set-up cell, and a release in sync with the
solutions that gives nothing away. (nbval replays the solution notebooks themselves.)"""

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader import release, setup_cell
from grader.course import release_notebook, solution_notebook

import replay
from bench import copyable
from replay import Tolerance

SECTIONS = release.sections_with_solutions()
ROOT = Path(__file__).resolve().parents[1]


def read(path):
    return nbformat.read(path, as_version=4)


def grading(cell):
    return cell.metadata.get("nbgrader", {})


def test_there_are_section_notebooks():
    assert SECTIONS, "no solution notebooks found in solutions/"


@pytest.mark.parametrize("section", SECTIONS)
def test_the_first_code_cell_is_the_course_setup_cell(section):
    for path in (solution_notebook(section), release_notebook(section)):
        first = next(c for c in read(path).cells if c.cell_type == "code")
        assert first.source == setup_cell.SOURCE, f"{path}: the set-up cell differs from grader/setup_cell.py"
        assert setup_cell.TAG in first.metadata.get("tags", [])


@pytest.mark.parametrize("graded", [True, False], ids=["graded", "not graded"])
def test_the_set_up_cell_keeps_one_thread_only_when_graded(graded, tmp_path):
    """Graded kernels run side by side, one per core, so each keeps to one thread; a student's
    kernel keeps PyTorch's default (here two threads, as OMP_NUM_THREADS says)."""
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    env.update(COURSE_ROOT=str(ROOT), OMP_NUM_THREADS="2", **({"NBGRADER_EXECUTION": "autograde"} if graded else {}))
    code = setup_cell.SOURCE + "\nprint('threads', torch.get_num_threads())"
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == f"threads {1 if graded else 2}", run.stdout


@pytest.fixture(scope="module")
def git_host():
    """A web server on this machine that answers as a git host does for a missing repository
    (404) and for a private one (401, asking for a login)."""
    import http.server
    import threading

    class Host(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(401 if "private" in self.path else 404)
            if "private" in self.path:
                self.send_header("WWW-Authenticate", 'Basic realm="course"')
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Host)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("address, platform, why", [
    ("{host}/missing.git", "", "nothing is there: the address is wrong, or the course has moved"),
    ("file:///nowhere/course.git", "", "nothing is there: the address is wrong"),
    ("{host}/private.git", "", "the server asked for a login: the repository is private, or none is at that address"),
    ("http://127.0.0.1:9/course.git", "", "no network? Connect, or download the course"),
    ("http://127.0.0.1:9/course.git", "kaggle_secrets",
     "no network: switch on Internet in the editor's right-hand panel (Session options > Internet on"),
], ids=["not found", "no such folder", "login", "no network", "no network on Kaggle"])
def test_a_failed_clone_names_the_address_and_what_failed(address, platform, why, git_host, tmp_path):
    address = address.format(host=git_host)
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_ROOT", "NBGRADER_EXECUTION")}
    code = (f"import sys, types; sys.modules[{platform!r}] = types.ModuleType({platform!r})\n" if platform else "")
    run = subprocess.run([sys.executable, "-c", code + setup_cell.SOURCE], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**env, "COURSE_REPO": address})
    stopped = run.stderr.strip().splitlines()[-1]
    assert stopped.startswith(f"RuntimeError: Could not fetch the course from {address}: {why}"), stopped
    assert "(git said: fatal: " in stopped, stopped
    assert not (tmp_path / "transformer-block-course").exists()


@pytest.mark.parametrize("section", SECTIONS)
def test_each_answer_cell_is_followed_by_its_check_cell_with_points_and_hidden_tests(section):
    cells = read(solution_notebook(section)).cells
    ids = [grading(c)["grade_id"] for c in cells if grading(c)]
    assert len(ids) == len(set(ids)), f"duplicate grade_id in {section}"
    answers = [c for c in cells if c.cell_type == "code" and grading(c).get("solution") and not grading(c).get("grade")]
    checks = {grading(c)["grade_id"]: c for c in cells if grading(c).get("grade") and not grading(c).get("solution")}
    assert answers, f"{section} has no graded task"
    for answer in answers:
        name = grading(answer)["grade_id"]
        assert "### BEGIN SOLUTION" in answer.source, f"{name}: no solution region to replace"
        assert re.search(rf"^(def|class) {name}\b", answer.source, re.M), f"{name}: the cell must define {name}"
        check = checks.get(f"test_{name}")
        assert check is not None, f"{name} has no check cell test_{name}"
        assert check.cell_type == "code" and grading(check)["points"] > 0
        assert "### BEGIN HIDDEN TESTS" in check.source, f"test_{name} has no hidden tests"
        assert cells.index(check) > cells.index(answer)
    assert set(checks) == {f"test_{grading(a)['grade_id']}" for a in answers}, "a check cell without an answer"


@pytest.mark.parametrize("section", SECTIONS)
def test_written_questions_are_manually_graded_with_a_mark_scheme(section):
    questions = [c for c in read(solution_notebook(section)).cells
                 if c.cell_type == "markdown" and grading(c).get("solution") and grading(c).get("grade")]
    assert 2 <= len(questions) <= 4, f"{section} has {len(questions)} knowledge-check questions"
    for cell in questions:
        assert grading(cell)["points"] > 0 and "Mark scheme" in cell.source, grading(cell)["grade_id"]


@pytest.mark.parametrize("section", SECTIONS)
def test_code_cells_are_plain_python_without_magics(section):
    for cell in read(solution_notebook(section)).cells:
        if cell.cell_type == "code":
            assert not re.search(r"^\s*[%!]", cell.source, re.M), f"{section}: magic or shell line in\n{cell.source}"


@pytest.mark.parametrize("section", SECTIONS)
def test_solution_notebooks_are_stored_executed(section):
    code = [c for c in read(solution_notebook(section)).cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), f"{section}: a code cell was never executed"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{section}: cells were not run top to bottom in one go"


def test_release_is_in_sync_with_the_solutions():
    stale = release.out_of_sync()
    assert not stale, f"run `python -m grader release`; out of sync: {stale}"


@pytest.mark.parametrize("section", SECTIONS)
def test_release_gives_away_no_solution_hidden_test_or_mark_scheme(section):
    released = read(release_notebook(section))
    text = "\n".join(c.source for c in released.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "Mark scheme"):
        assert marker not in text, f"{section}: '{marker}' in the release"
    assert all(not c.get("outputs") for c in released.cells if c.cell_type == "code")
    secret = []
    for cell in read(solution_notebook(section)).cells:
        secret += re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S)
        secret += re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", cell.source, re.S)
        if cell.cell_type == "markdown" and grading(cell).get("solution"):
            secret.append(cell.source)
    code = "\n".join(c.source for c in released.cells if c.cell_type == "code")
    for block in secret:  # (a task's text may quote an interface the answer then uses)
        for line in block.splitlines():
            if len(line.strip()) > 25:  # long enough to be the answer, not a bracket or `return h`
                assert line.strip() not in code, f"{section}: release code shows the hidden line {line.strip()!r}"


def _bare(text):
    """Code without comments or whitespace, so that a reflowed or re-spaced copy still matches."""
    return re.sub(r"\s+", "", "\n".join(line.split("#")[0] for line in text.splitlines()))


@pytest.mark.parametrize("section", SECTIONS)
def test_no_answer_is_shown_above_its_task_nor_in_any_text(section):
    """A task must need thought: no line of its answer appears in a cell above it (where it could
    be copied from) nor in any markdown (the summary and reference tables included)."""
    released = read(release_notebook(section)).cells
    prose = _bare("\n".join(c.source for c in released if c.cell_type == "markdown"))
    position = {grading(c).get("grade_id"): i for i, c in enumerate(released)}
    for cell in read(solution_notebook(section)).cells:
        answer = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S)
        if cell.cell_type != "code" or not answer:
            continue
        above = _bare("\n".join(c.source for c in released[:position[grading(cell)["grade_id"]]]))
        for line in "\n".join(answer).splitlines():
            bare = _bare(line)
            if len(bare) > 20:  # long enough to be the answer, not `return h` or a bracket
                assert bare not in above, f"{section}: {line.strip()!r} of {grading(cell)['grade_id']} is shown above it"
                assert bare not in prose, f"{section}: {line.strip()!r} of {grading(cell)['grade_id']} is in the text"


def _answer_and_release(answer, shown_code="", shown_markdown=""):
    """A made-up solution cell holding `answer` and a release showing the given code and text."""
    solution = nbformat.v4.new_code_cell(f"def task(h):\n    ### BEGIN SOLUTION\n{answer}    ### END SOLUTION\n",
                                         metadata={"nbgrader": {"grade_id": "task", "solution": True}})
    stub = nbformat.v4.new_code_cell("def task(h):\n    raise NotImplementedError()\n",
                                     metadata={"nbgrader": {"grade_id": "task", "solution": True}})
    return [solution], [nbformat.v4.new_code_cell(shown_code), nbformat.v4.new_markdown_cell(shown_markdown), stub]


def test_the_copyable_share_counts_an_answer_shown_under_other_names_and_nothing_else():
    answer = "    b, s, d = h.shape\n    return h.view(b, s, 4, d // 4).transpose(1, 2)\n"
    renamed = "x, n, w = t.shape\nreturn t.view(x, n, 4, w // 4).transpose(1, 2)\n"
    assert copyable.shares(*_answer_and_release(answer, shown_code=renamed)) == {"task": (26, 26)}
    line = renamed.splitlines()[1]  # 22 tokens: its 17 6-grams, not those across "shape return"
    assert copyable.shares(*_answer_and_release(answer, shown_markdown=f"Write `{line}`."))["task"] == (17, 26)
    hidden = "# h.view(b, s, 4, d // 4).transpose(1, 2)\nnote = 'h.view(b, s, 4, d // 4).transpose(1, 2)'\n"
    assert copyable.shares(*_answer_and_release(answer, shown_code=hidden, shown_markdown=line)) == {"task": (0, 26)}


def test_a_worded_6_gram_holds_a_word_or_a_number_not_only_placeholders_and_punctuation():
    assert not copyable.worded(("(", "_", ",", "_", ",", "_"))
    assert not copyable.worded(("_", "//", "_", ")", "[", "_"))
    assert copyable.worded(("_", ",", "_", "=", "_", "shape"))  # an attribute
    assert copyable.worded(("(", "_", ",", "_", ",", "4"))  # a number
    answer = "    b, s, d = h.shape\n    return h.view(b, s, 4, d // 4).transpose(1, 2)\n"
    syntax = "a, b, c = 1, 2, 3\nf(a, b, c)\n"  # three names in a row, and nothing of the answer
    assert copyable.shares(*_answer_and_release(answer, shown_code=syntax))["task"][0] > 0
    assert copyable.shares(*_answer_and_release(answer, shown_code=syntax), counted=copyable.worded)["task"][0] == 0


def test_no_answer_can_be_copied_wholesale_from_the_release():
    """Issue 44 measured 25% of the answers' 6-grams in the release, six tasks at 40% or more; the
    worked examples and demonstrations were rewritten so that no task's share comes back near that,
    counting every 6-gram (bench/copyable.py prints the table)."""
    share, high = copyable.summary(copyable.course_shares(counted=lambda gram: True), limit=0.6)
    assert share <= 0.2 and not high, f"{share:.0%} in all; {high}"


def test_the_release_meets_issue_44s_copyable_targets():
    """At most 15% of the answers' worded 6-grams in the release, and no task at 40% or more."""
    share, high = copyable.summary(copyable.course_shares())
    assert share <= copyable.TOTAL_TARGET and not high, f"{share:.1%} in all; {high}"


def test_a_fork_sets_its_address_in_one_place_and_the_release_restamps_it():
    """grader.course.COURSE_REPO feeds the badges and every set-up cell (`python -m grader release`)."""
    code = """
import importlib, nbformat
import grader.course as course
course.COURSE_REPO = "https://github.com/a-college/their-course"
from grader import release, setup_cell
importlib.reload(setup_cell); importlib.reload(release)
notebook = release.stamp(nbformat.read(course.solution_notebook("01-heads"), as_version=4), "01-heads")
print(notebook.cells[0].source)
print(next(c.source for c in notebook.cells if c.cell_type == "code"))
"""
    printed = subprocess.run([sys.executable, "-c", code], cwd=release.ROOT, capture_output=True, text=True,
                             check=True).stdout
    assert "colab.research.google.com/github/a-college/their-course/blob/main/notebooks/01-heads" in printed
    assert 'os.environ.get("COURSE_REPO", "https://github.com/a-college/their-course")' in printed
    assert "larkfield-academy" not in printed


@pytest.mark.parametrize("section", SECTIONS)
def test_release_opens_with_colab_and_kaggle_badges(section):
    first = read(release_notebook(section)).cells[0]
    assert "colab.research.google.com/github/" in first.source and "kaggle.com/kernels/welcome" in first.source
    assert f"notebooks/{section}/{section}.ipynb" in first.source


def _printed(cell):
    """All the text a code cell printed or displayed."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        data = output.get("data", {})
        parts += [data.get("text/plain", ""), data.get("text/html", ""), data.get("text/markdown", "")]
    return "\n".join(parts)


# What the prose quotes: decimals (0.4747), counts with thousands separators (3,378), percentages
QUOTED = re.compile(r"(?<![\w.])(\d+\.\d{2,}|\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?%)(?![\w])")


def _value(number):
    """A printed or quoted number as a magnitude, a percentage as a fraction (the prose may spell
    the sign in words)."""
    value = abs(float(number.rstrip("%").replace(",", "")))
    return value / 100 if number.endswith("%") else value


def _quotes(number, printed):
    """Whether the prose `number` is one of the `printed` numbers, as printed or rounded to the
    prose's digits: 0.81 quotes 0.8133, 63% quotes 62.9% or 0.629."""
    digits = len(number.rstrip("%").partition(".")[2]) + (2 if number.endswith("%") else 0)
    return any(abs(_value(shown) - _value(number)) <= 0.5 * 10 ** -digits + 1e-9 for shown in printed)


@pytest.mark.parametrize("section", SECTIONS)
def test_every_measured_number_in_the_prose_was_printed_by_the_notebook(section):
    """Decimals, percentages and counts with thousands separators in the text must appear in the
    outputs of the same run, or be a constant of its code: prose may only quote what the notebook
    measured or set. A number that only a trained cell printed moves between machines (see
    tests/replay.py), so the prose quotes it with the digits that hold: two decimals, or a whole
    percentage."""
    notebook = read(solution_notebook(section))
    code = [c for c in notebook.cells if c.cell_type == "code"]
    exact = [n for c in code if not Tolerance.of(c) for n in replay.NUMBER.findall(_printed(c))]
    exact += [n for c in code for n in replay.NUMBER.findall(c.source)]
    trained = [n for c in code if Tolerance.of(c) for n in replay.NUMBER.findall(_printed(c))]
    stale, too_precise = set(), set()
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for number in QUOTED.findall(cell.source):
                if _quotes(number, exact):
                    continue
                if not _quotes(number, trained):
                    stale.add(number)
                elif "." in number and (number.endswith("%") or len(number.partition(".")[2]) > 2):
                    too_precise.add(number)
    assert not stale, f"{section}: the prose quotes numbers no output shows: {sorted(stale)}"
    assert not too_precise, (f"{section}: the prose quotes trained numbers to more digits than hold on "
                             f"another machine (two decimals, whole percentages): {sorted(too_precise)}")
