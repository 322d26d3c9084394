"""One notebook's Result: the record that check, the workers, the store and the tables share, and
its JSON, which results.json and `grader check --json` hold."""

import json

from grader.result import Result, Task


def _graded():
    return Result("in/ada_01-heads.ipynb", "01-heads", "ada",
                  (Task("test_split_heads", 2.0, 2.0), Task("test_merge_heads", 0.0, 3.0, "AssertionError: no")),
                  written_max_score=4.0, repairs=("a check put back",), interrupted=("a cell ran past 30 s",),
                  flags=("test_merge_heads passed in the notebook",), seconds=2.5, sha256="ab", version="v1",
                  feedback="feedback/ada/01-heads/01-heads.html")


def test_a_results_score_is_its_tasks_points_and_none_is_zero_of_zero():
    assert (_graded().score, _graded().max_score) == (2.0, 5.0)
    assert (Result("x.ipynb", None, error="not JSON").score, Result("x.ipynb", None).max_score) == (0.0, 0.0)


def test_a_result_reads_back_from_its_json_as_it_was():
    for result in (_graded(), Result("b.ipynb", None, "ben", error="gone", grader_failure=True, held=True)):
        data = json.loads(json.dumps(result.to_json()))
        assert Result.from_json(data) == result
    data = _graded().to_json()
    assert (data["score"], data["max_score"], data["tasks"][1]) == (
        2.0, 5.0, {"grade_id": "test_merge_heads", "score": 0.0, "max_score": 3.0, "message": "AssertionError: no"})
    assert data["student"] == "ada" and data["repairs"] == ("a check put back",) and data["error"] == ""


def test_a_result_kept_by_an_earlier_grader_reads_with_the_fields_it_lacks_at_their_defaults():
    old = {"notebook": "ada.ipynb", "section": "01-heads", "student": "ada", "score": 2.0, "max_score": 2.0,
           "error": "", "repairs": [], "tasks": [{"grade_id": "test_f", "score": 2.0, "max_score": 2.0, "message": ""}]}
    result = Result.from_json(old)
    assert (result.interrupted, result.flags, result.held, result.grader_failure, result.sha256) == ((), (), False, False, None)
    assert result.tasks == (Task("test_f", 2.0, 2.0),) and result.score == 2.0 and result.repairs == ()
    # the sums are counted from the tasks, never read: a record cannot disagree with itself
    assert Result.from_json({**old, "score": 9.0, "max_score": 9.0}).score == 2.0
    # a record of a notebook not graded may hold no tasks at all
    assert Result.from_json({"notebook": "x.ipynb", "section": None, "error": "not JSON"}) == \
        Result("x.ipynb", None, error="not JSON")


def test_the_graders_failure_is_no_score_and_says_so():
    failed = Result.grader_failed("in/ada_01-heads.ipynb", "ada", "the warm-kernel server stopped twice")
    assert failed == Result("in/ada_01-heads.ipynb", None, "ada", grader_failure=True,
                            error="grader failure: the warm-kernel server stopped twice")
