"""The grading options (grader/options.py): one record, read back as it was written, and the one
option no grade depends on kept out of what a grade is keyed by."""

from dataclasses import FrozenInstanceError, replace

import pytest

from grader import fingerprint
from grader.__main__ import main
from grader.options import SAMPLE_CLASS, GradingOptions


def test_the_options_come_back_from_their_json_as_they_went():
    for options in (GradingOptions(), SAMPLE_CLASS, GradingOptions(timeout=5, memory_mb=1536, sandboxed=False, warm=False)):
        assert GradingOptions.from_json(options.to_json()) == options
    assert GradingOptions.from_json('{"timeout": 7}') == GradingOptions(timeout=7)  # the rest: the defaults
    with pytest.raises(TypeError):
        GradingOptions.from_json('{"timeout": 7, "fresh_kernels": true}')  # a name it does not know


def test_a_grade_depends_on_every_option_but_forked_kernels():
    options = GradingOptions()
    assert options.graded_by() == {"timeout": 60, "memory_mb": 4096, "sandboxed": True}
    assert replace(options, warm=False).graded_by() == options.graded_by()
    assert fingerprint.grading_versions(replace(options, warm=False)) == fingerprint.grading_versions(options)
    for changed in (replace(options, timeout=30), replace(options, memory_mb=2048), replace(options, sandboxed=False)):
        assert fingerprint.grading_versions(changed)["01-heads"] != fingerprint.grading_versions(options)["01-heads"]
    with pytest.raises(FrozenInstanceError):
        options.timeout = 5


def test_the_command_line_says_the_defaults_the_options_hold(capsys):
    for verb in ("autograde", "check"):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
        assert "(default 60)" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert f"(default {SAMPLE_CLASS.timeout})" in " ".join(capsys.readouterr().out.split())
