"""The report an instructor reads after grading: the pass rate of each task, the most frequent
failure messages, the tasks not written yet, the submissions that could not be graded or had a
cell interrupted, and the histogram of scores in scores.png; cell by cell, bar by bar."""

import re
import struct
from html import escape

import matplotlib
import pytest
from matplotlib import cycler
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from grader.report import write_report
from grader.result import Result


def report_of(out, results, similar=None):
    """write_report on `results` as results.json keeps them, read back as each Result: the report's
    tests also read the results of earlier graders, which lack fields."""
    return write_report(out, {key: Result.from_json(result) for key, result in results.items()}, similar)


def _graded(student, section, tasks, notebook=None, interrupted=(), flags=()):
    """A graded submission; `tasks` maps a grade id to (score, failure message), out of 2 points."""
    return {"student": student, "section": section, "notebook": notebook or f"{student}/{section}.ipynb",
            "score": sum(score for score, _ in tasks.values()), "max_score": 2.0 * len(tasks),
            "tasks": [{"grade_id": grade_id, "score": score, "max_score": 2.0, "message": message}
                      for grade_id, (score, message) in tasks.items()],
            "error": "", "interrupted": list(interrupted), "flags": list(flags)}


def _broken(student, notebook, error):
    return {"student": student, "section": None, "notebook": notebook, "score": 0.0, "max_score": 0.0,
            "tasks": [], "error": error}


def _scored(student, score, max_score):
    """A graded submission with `score` of `max_score` points, in one task."""
    return {"student": student, "section": "01-heads", "notebook": f"{student}.ipynb", "score": score,
            "max_score": max_score, "error": "", "interrupted": [],
            "tasks": [{"grade_id": "test_all", "score": score, "max_score": max_score, "message": ""}]}


def _between(html, start, end):
    """The part of the page after `start` up to the next `end`."""
    return html.split(start, 1)[1].split(end, 1)[0]


def _rates(html):
    return _between(html, "<th>rate</th></tr>", "</table>")


def _failures(html):
    return _between(html, "<th>message</th></tr>", "</table>")


def _not_graded(html):
    return _between(html, "<h2>Submissions that could not be graded</h2><ul>", "</ul>")


def _interrupted(html):
    return _between(html, "this list the cause.</p>\n<ul>", "</ul>")


def _flagged(html):
    return _between(html, "may interfere with its checks: read it.</p>\n<ul>", "</ul>")


@pytest.fixture
def drawn(monkeypatch):
    """The figures write_report saves, kept to look at what they show."""
    figures, save = [], Figure.savefig

    def keep(figure, *args, **kwargs):
        figures.append(figure)
        return save(figure, *args, **kwargs)
    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


# --- the tables -------------------------------------------------------------------------------

def test_report_is_written_as_report_html_in_the_output_folder(tmp_path):
    path = report_of(tmp_path, {"a": _graded("ada", "01-heads", {"test_f": (2.0, "")})})
    assert path == tmp_path / "report.html"
    assert "<td>01-heads</td><td>test_f</td><td>1/1</td><td>100%</td>" in path.read_text()


def test_a_report_written_without_similar_pairs_has_no_such_part(tmp_path):
    page = report_of(tmp_path, {"a": _graded("ada", "01-heads", {"test_f": (2.0, "")})}).read_text()
    assert "Similar pairs" not in page and page.endswith("</table>\n</body></html>")


def test_pass_rates_follow_the_course_order_of_sections_and_the_notebook_order_of_tasks(tmp_path):
    # ada (listed first) handed in section 2 only; the tasks of section 1 come in notebook order,
    # not alphabetically: test_split_heads before test_merge_heads
    results = {"ada": _graded("ada", "02-positions", {"test_sinusoid": (2.0, "")}),
               "ben": _graded("ben", "01-heads", {"test_split_heads": (2.0, ""),
                                                  "test_merge_heads": (0.0, "AssertionError: shape")}),
               "cyd": _graded("cyd", "01-heads", {"test_split_heads": (0.0, "NameError: name 'split_heads'"),
                                                  "test_merge_heads": (0.0, "AssertionError: shape")})}
    html = report_of(tmp_path, results).read_text()
    assert _rates(html) == ("<tr><td>01-heads</td><td>test_split_heads</td><td>1/2</td><td>50%</td></tr>"
                            "<tr><td>01-heads</td><td>test_merge_heads</td><td>0/2</td><td>0%</td></tr>"
                            "<tr><td>02-positions</td><td>test_sinusoid</td><td>1/1</td><td>100%</td></tr>")


def test_failure_messages_are_counted_by_their_first_line_most_common_first(tmp_path):
    results = {"ada": _graded("ada", "01-heads", {"test_f": (0.0, "NameError: name 'f' is not defined"),
                                                  "test_g": (0.0, "AssertionError: shape (2, 4)\nexpected (4, 2)")}),
               "ben": _graded("ben", "01-heads", {"test_f": (2.0, ""),
                                                  "test_g": (0.0, "AssertionError: shape (2, 4)\nfrom line 3")})}
    html = report_of(tmp_path, results).read_text()
    assert _failures(html) == (
        "<tr><td>2</td><td>test_g</td><td></td><td><code>AssertionError: shape (2, 4)</code></td></tr>"
        "<tr><td>1</td><td>test_f</td><td></td><td><code>NameError: name &#x27;f&#x27; is not defined</code></td></tr>")


def _stub_message(name):
    """The failure a check gives for a task still raising NotImplementedError, as a task records it."""
    from grader.checks import call

    def stub():
        raise NotImplementedError()
    stub.__qualname__ = name
    with pytest.raises(AssertionError) as failed:
        call(stub)
    return f"AssertionError: {failed.value}"


def test_tasks_not_written_yet_are_counted_apart_from_the_mistakes(tmp_path):
    results = {"ada": _graded("ada", "01-heads", {"test_split_heads": (0.0, _stub_message("split_heads")),
                                                  "test_merge_heads": (0.0, "AssertionError: shape (2, 4)")}),
               "ben": _graded("ben", "01-heads", {"test_split_heads": (0.0, _stub_message("split_heads")),
                                                  "test_merge_heads": (0.0, _stub_message("merge_heads"))}),
               "cyd": _graded("cyd", "02-positions", {"test_sinusoid": (0.0, _stub_message("sinusoid"))})}
    html = report_of(tmp_path, results).read_text()
    assert _failures(html) == "<tr><td>1</td><td>test_merge_heads</td><td></td><td><code>AssertionError: shape (2, 4)</code></td></tr>"
    assert _between(html, "<th>submissions</th></tr>", "</table>") == (
        "<tr><td>01-heads</td><td>test_split_heads</td><td>2</td></tr>"
        "<tr><td>01-heads</td><td>test_merge_heads</td><td>1</td></tr>"
        "<tr><td>02-positions</td><td>test_sinusoid</td><td>1</td></tr>")


def test_a_message_on_other_numbers_counts_as_the_same_mistake_named_as_the_catalogue_names_it(tmp_path):
    from grader import recordings
    # the shape of the message with which section 1's check refuses `view` without `transpose`
    shape = next(key for key, named in recordings.catalogued_mistakes().items()
                 if key.startswith("01-heads, test_split_heads, ") and "view without transpose" in named)
    shape = shape.removeprefix("01-heads, test_split_heads, ")
    # the message given once comes first: only the counts make the other the one shown
    on_token = [f"AssertionError: {shape.replace('#', str(n))}" for n in (2, 1, 1)]
    results = {name: _graded(name, "01-heads", {"test_split_heads": (0.0, message)})
               for name, message in zip(["ada", "ben", "cyd"], on_token)}
    results["dan"] = _graded("dan", "01-heads", {"test_split_heads": (0.0, "AssertionError: no catalogue says this")})
    html = report_of(tmp_path, results).read_text()
    rows = re.findall(r"<tr><td>(\d+)</td><td>test_split_heads</td><td>([^<]*)</td><td><code>([^<]*)</code>", _failures(html))
    assert rows[0][:2] == ("3", "view without transpose; reshape without transpose"), rows
    assert rows[0][2] == escape(on_token[1][:300])  # the message given most often, cut as all are
    assert rows[1] == ("1", "", "AssertionError: no catalogue says this")


def test_without_the_catalogues_names_the_mistakes_are_still_counted(tmp_path, monkeypatch):
    from grader import recordings

    def cannot_record():
        raise RuntimeError("recording the results the checks compare with failed")
    monkeypatch.setattr(recordings, "catalogued_mistakes", cannot_record)
    results = {"ada": _graded("ada", "01-heads", {"test_f": (0.0, "AssertionError: shape (2, 4)")})}
    html = report_of(tmp_path, results).read_text()
    assert _failures(html) == "<tr><td>1</td><td>test_f</td><td></td><td><code>AssertionError: shape (2, 4)</code></td></tr>"


def test_a_long_failure_message_is_cut_at_300_characters(tmp_path):
    message = "AssertionError: " + "x" * 400
    html = report_of(tmp_path, {"a": _graded("ada", "01-heads", {"test_f": (0.0, message)})}).read_text()
    assert _failures(html) == f"<tr><td>1</td><td>test_f</td><td></td><td><code>{message[:300]}</code></td></tr>"


def test_the_report_lists_the_15_most_frequent_failures_only(tmp_path):
    # ada fails 16 tasks, ben the first 15 of them: the 16th, failed once, is left out
    ada = {f"test_{i:02}": (0.0, f"AssertionError: {i}") for i in range(16)}
    ben = {f"test_{i:02}": (0.0, f"AssertionError: {i}") for i in range(15)}
    html = report_of(tmp_path, {"a": _graded("ada", "01-heads", ada),
                                   "b": _graded("ben", "01-heads", ben)}).read_text()
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\w+)</td>", _failures(html))
    assert rows == [("2", f"test_{i:02}") for i in range(15)]


def test_submissions_that_could_not_be_graded_are_listed_by_student_then_file(tmp_path):
    results = {"1": _broken("cyd", "in/cyd_07-banking77.ipynb", "the file is empty"),
               "2": _broken("ben", "in/ben_01-heads.ipynb", "no such file"),
               "3": _broken("cyd", "in/cyd_01-heads.ipynb", "not a readable notebook"),
               "4": _graded("ada", "01-heads", {"test_f": (2.0, "")})}
    html = report_of(tmp_path, results).read_text()
    assert "<p>4 submissions: 1 graded, 3 could not be graded (scored 0).</p>" in html
    assert _not_graded(html) == ("<li>ben, ben_01-heads.ipynb: no such file</li>"
                                 "<li>cyd, cyd_01-heads.ipynb: not a readable notebook</li>"
                                 "<li>cyd, cyd_07-banking77.ipynb: the file is empty</li>")


def test_cells_interrupted_at_the_time_limit_are_listed_per_submission(tmp_path):
    limit = "a cell ran past the 30 s limit: In "
    results = {"b": _graded("ben", "01-heads", {"test_f": (0.0, "NameError: f")}, notebook="ben.ipynb",
                            interrupted=[limit + "[4]", limit + "[9]"]),
               "a": _graded("ada", "01-heads", {"test_f": (0.0, "NameError: f")}, notebook="ada.ipynb",
                            interrupted=[limit + "[2]"]),
               "c": _graded("cyd", "01-heads", {"test_f": (2.0, "")})}
    html = report_of(tmp_path, results).read_text()
    assert _interrupted(html) == ("<li>ada, ada.ipynb: a cell ran past the 30 s limit: In [2]</li>"
                                  "<li>ben, ben.ipynb: a cell ran past the 30 s limit: In [4]</li>"
                                  "<li>ben, ben.ipynb: a cell ran past the 30 s limit: In [9]</li>")


def test_a_result_stored_before_time_limits_were_recorded_has_no_interrupted_cells(tmp_path):
    old = _graded("ada", "01-heads", {"test_f": (2.0, "")})
    del old["interrupted"]  # results.json of an earlier grader, reused for an unchanged submission
    html = report_of(tmp_path, {"a": old}).read_text()
    assert _interrupted(html) == "<li>none</li>"


def test_checks_the_notebook_and_the_grader_judged_differently_are_listed_per_submission(tmp_path):
    flag = "test_f passed in the notebook but fails the grader's check"
    results = {"b": _graded("ben", "01-heads", {"test_f": (0.0, "AssertionError: f")}, notebook="ben.ipynb",
                            flags=[flag, "test_g failed in the notebook but passes"]),
               "a": _graded("<ada>", "01-heads", {"test_f": (0.0, "AssertionError: f")}, notebook="a.ipynb",
                            flags=[flag + " <b>&</b>"]),
               "c": _graded("cyd", "01-heads", {"test_f": (2.0, "")})}
    del results["c"]["flags"]  # results.json of a grader before the judge
    html = report_of(tmp_path, results).read_text()
    shown = "test_f passed in the notebook but fails the grader&#x27;s check"
    assert _flagged(html) == (f"<li>&lt;ada&gt;, a.ipynb: {shown} &lt;b&gt;&amp;&lt;/b&gt;</li>"
                              f"<li>ben, ben.ipynb: {shown}</li>"
                              "<li>ben, ben.ipynb: test_g failed in the notebook but passes</li>")


def test_empty_lists_say_none(tmp_path):
    html = report_of(tmp_path, {"a": _graded("ada", "01-heads", {"test_f": (2.0, "")})}).read_text()
    assert _not_graded(html) == "<li>none</li>" and _interrupted(html) == "<li>none</li>"
    assert _flagged(html) == "<li>none</li>"
    assert _failures(html) == ""


def test_names_and_messages_are_escaped_not_read_as_html(tmp_path):
    results = {"a": _graded("<b>ada</b>", "01-heads", {"test_<f>": (0.0, "AssertionError: x < 0 & y > 1")},
                            notebook="<i>.ipynb", interrupted=["`while x < 1 & True:`"]),
               "b": _broken("ben & co", "<script>.ipynb", "unexpected <EOF>")}
    html = report_of(tmp_path, results).read_text()
    assert "<tr><td>01-heads</td><td>test_&lt;f&gt;</td><td>0/1</td><td>0%</td></tr>" in _rates(html)
    assert _failures(html) == ("<tr><td>1</td><td>test_&lt;f&gt;</td><td></td>"
                               "<td><code>AssertionError: x &lt; 0 &amp; y &gt; 1</code></td></tr>")
    assert _not_graded(html) == "<li>ben &amp; co, &lt;script&gt;.ipynb: unexpected &lt;EOF&gt;</li>"
    assert _interrupted(html) == "<li>&lt;b&gt;ada&lt;/b&gt;, &lt;i&gt;.ipynb: `while x &lt; 1 &amp; True:`</li>"


# --- the histogram ----------------------------------------------------------------------------

def test_histogram_counts_graded_submissions_in_bins_of_ten_percent_full_marks_in_the_last(tmp_path, drawn):
    # one submission at each multiple of 10 % (0 %, 10 %, ..., 100 %), out of 100 points, one out
    # of 1 point at 99 %; one with nothing to score and one not graded, both left out
    results = {f"s{k}": _scored(f"s{k}", float(k), 100.0) for k in range(0, 101, 10)}
    results["nearly"] = _scored("nearly", 0.99, 1.0)
    results["nothing"] = _scored("nothing", 0.0, 0.0)
    results["broken"] = _broken("zed", "zed.ipynb", "the file is empty")
    report_of(tmp_path, results)
    [figure] = drawn
    [axes] = figure.axes
    bars = axes.patches
    assert [bar.get_height() for bar in bars] == [1, 1, 1, 1, 1, 1, 1, 1, 1, 3]
    assert [bar.get_x() for bar in bars] + [bars[-1].get_x() + bars[-1].get_width()] == \
        pytest.approx([0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100.01])
    assert axes.get_title() == "12 graded submissions"
    assert axes.get_xlabel() == "score (% of the autograded points)"
    assert axes.get_ylabel() == "submissions"


def test_histogram_looks_the_same_whatever_the_instructors_matplotlib_settings(tmp_path, drawn):
    """Blue bars parted by white edges, in a 600 x 350 pixel image, even under a style that
    changes the colour cycle, the edges and the resolution of saved figures."""
    results = {"a": _scored("ada", 1.0, 2.0), "b": _scored("ben", 2.0, 2.0)}
    settings = {"axes.prop_cycle": cycler(color=["red"]), "patch.force_edgecolor": True,
                "patch.edgecolor": "black", "savefig.dpi": 200, "figure.figsize": (8, 8)}
    with matplotlib.rc_context(settings):
        report_of(tmp_path, results)
    [figure] = drawn
    for bar in figure.axes[0].patches:
        assert bar.get_facecolor() == to_rgba("tab:blue")
        assert bar.get_edgecolor() == to_rgba("white")
    png = (tmp_path / "scores.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (600, 350)


def test_writing_the_report_leaves_the_callers_matplotlib_alone(tmp_path):
    """An instructor grading from a notebook keeps inline plots: no backend switch, no stray figure."""
    import matplotlib.pyplot as plt
    previous = matplotlib.get_backend()
    matplotlib.use("svg")  # any backend but the Agg the report draws with
    try:
        figures = plt.get_fignums()
        report_of(tmp_path, {"a": _scored("ada", 1.0, 2.0)})
        assert matplotlib.get_backend() == "svg" and plt.get_fignums() == figures
    finally:
        matplotlib.use(previous)


def test_the_graders_failures_have_their_own_list_and_no_place_among_the_zeros(tmp_path):
    graded = _graded("ada", "01-heads", {"test_f": (2.0, "")})
    failed = {"student": "ben", "notebook": "ben_01-heads.ipynb", "section": None, "score": 0.0, "max_score": 0.0,
              "tasks": [], "error": "grader failure: a grading process died 2 times", "grader_failure": True}
    html = report_of(tmp_path, {"a": graded, "b": failed}).read_text()
    assert "2 submissions: 1 graded, 0 could not be graded (scored 0), 1 not graded because the grader failed." in html
    assert ("<h2>Not graded: the grader failed</h2><p>Not the students' doing, and no score: the next run grades "
            "these again.</p><ul><li>ben, ben_01-heads.ipynb: grader failure: a grading process died 2 times</li></ul>") in html
    quiet = report_of(tmp_path, {"a": graded}).read_text()
    assert "the grader failed" not in quiet and "2 submissions" not in quiet
    assert "<p>1 submissions: 1 graded, 0 could not be graded (scored 0).</p>" in quiet
    assert "<ul><li>none</li></ul>\n<h2>Cells interrupted" in quiet  # nothing between the two lists


def test_held_submissions_are_listed_as_held_not_as_the_graders_failure(tmp_path):
    graded = _graded("ada", "01-heads", {"test_f": (2.0, "")})
    error = ("not graded: bob has 2 notebooks of 01-heads (bob_01-heads.ipynb, bob_01-heads~.ipynb); "
             "remove all but one and grade again")
    held = {name: {"student": "bob", "notebook": name, "section": "01-heads", "score": 0.0, "max_score": 0.0,
                   "tasks": [], "error": error, "grader_failure": True, "held": True}
            for name in ("bob_01-heads.ipynb", "bob_01-heads~.ipynb")}
    html = report_of(tmp_path, {"a": graded, **held}).read_text()
    assert "3 submissions: 1 graded, 0 could not be graded (scored 0), 2 held (two notebooks of one section)." in html
    assert "the grader failed" not in html and "Not the students' doing" not in html
    assert ("<h2>Held: a student handed in two notebooks of one section</h2><p>Neither is graded: which one "
            "counts is yours to say. Remove the others; the next run grades the one left.</p>"
            f"<ul><li>bob, bob_01-heads.ipynb: {error}</li><li>bob, bob_01-heads~.ipynb: {error}</li></ul>") in html
    failed = {"student": "cy", "notebook": "cy_01-heads.ipynb", "section": None, "score": 0.0, "max_score": 0.0,
              "tasks": [], "error": "grader failure: a grading process died 2 times", "grader_failure": True}
    both = report_of(tmp_path, {"a": graded, "c": failed, **held}).read_text()
    assert ", 1 not graded because the grader failed, 2 held (two notebooks of one section)." in both
    assert both.index("<h2>Not graded: the grader failed</h2>") < both.index("<h2>Held:")
    assert "bob" not in both[both.index("<h2>Not graded"):both.index("<h2>Held:")]
