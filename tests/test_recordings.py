"""grader/recordings.py's bookkeeping, with the checks' results stood in for: what is recorded once
and what again, what a failed recording says, what a grading kernel is shown, what is kept for a
week. Fast, for mutation testing. The real recordings run the solutions' checks in test_edition.py,
test_tamper.py and test_catalogue.py."""

import hashlib
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import ticketnet
from grader import catalogue, recordings, references
from grader.course import EDITION_SOURCE, message_shape

FIRST, LAST = "01-heads", "07-banking77"


class StandIn:
    """`record` as the solutions' checks would answer it: section S's visible results are
    {"S.visible": ...}, its hidden tests add "S.hidden", and each names one mistake. A section in
    `missing` has no data. `run` is the recording's process, run in this one from its command."""

    def __init__(self, monkeypatch):
        self.calls, self.missing, self.failure = [], set(), None
        self.monkeypatch = monkeypatch

    def record(self, sections, hidden=False, mistakes=None):
        (section,) = sections
        self.calls.append((section, hidden))
        if section in self.missing:
            raise ticketnet.DataError(f"no data for {section}: set BANKING77_DIR")
        if mistakes is not None:  # found in the catalogue's order, not the keys'
            mistakes[f"{section}, test_y, shape"] = [f"another mistake of {section}"]
            mistakes[f"{section}, test_x, shape"] = [f"a mistake of {section}"]
        results = {f"{section}.visible": torch.tensor([float(len(self.calls))])}
        return {**results, f"{section}.hidden": torch.tensor([-1.0])} if hidden else results

    def run(self, command, cwd, capture_output, text):
        assert command[:2] == [sys.executable, "-c"] and cwd == recordings.ROOT and capture_output and text
        # recorded beside the kept states, so that moving a section into its state is a rename
        assert Path(command[3]).parent == recordings.KERNEL_REFERENCES
        if self.failure:
            return subprocess.CompletedProcess(command, 1, "", self.failure)
        self.monkeypatch.setattr(sys, "argv", ["-c", *command[3:]])
        exec(command[2], {})
        return subprocess.CompletedProcess(command, 0, "", "")

    def recorded_sections(self):
        return [section for section, hidden in self.calls if not hidden]


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    monkeypatch.setattr(recordings, "KERNEL_REFERENCES", tmp_path / "cache" / "kept")  # made on first use
    monkeypatch.setattr(recordings, "SECTIONS", (FIRST, LAST))
    monkeypatch.setattr(recordings, "_course_state", lambda: "state")
    made = StandIn(monkeypatch)
    monkeypatch.setattr(recordings, "record", made.record)
    monkeypatch.setattr(subprocess, "run", made.run)
    return made


def _shown(folder):
    return torch.load(folder / recordings.EXPECTED_NAME, weights_only=True)


@pytest.fixture
def group_writable_umask():
    """The umask of a system with a group per user (002): a folder made plainly is group-writable."""
    old = os.umask(0o002)
    yield
    os.umask(old)


def test_a_state_of_the_course_is_recorded_once_and_its_kernels_see_the_visible_results_alone(
        stand_in, monkeypatch, group_writable_umask):
    monkeypatch.setattr(recordings, "SECTIONS", (LAST, FIRST))  # recorded in this order, shown sorted
    shown = recordings.kernel_references()
    state = recordings.KERNEL_REFERENCES / "state"
    assert shown == state / "references"
    assert stand_in.calls == [(LAST, True), (LAST, False), (FIRST, True), (FIRST, False)]
    assert _shown(shown) == {f"{FIRST}.visible": torch.tensor([4.0]), f"{LAST}.visible": torch.tensor([2.0])}
    assert list(_shown(shown)) == [f"{FIRST}.visible", f"{LAST}.visible"]  # the same results, the same bytes
    assert _shown(state / FIRST) == {f"{FIRST}.visible": torch.tensor([4.0])}
    # one entry a line, sorted: the same mistakes, the same file, for a person to read
    assert (state / LAST / "mistakes.json").read_text() == (
        "{\n" f' "{LAST}, test_x, shape": [\n  "a mistake of {LAST}"\n ],\n'
        f' "{LAST}, test_y, shape": [\n  "another mistake of {LAST}"\n ]\n' "}")
    assert (shown / "__init__.py").read_text() == (EDITION_SOURCE / "references.py").read_text()
    # the sandbox's user reads them; nothing half-written is left beside them
    assert {p.name: p.stat().st_mode & 0o777 for p in shown.iterdir()} == {"__init__.py": 0o644, "expected.pt": 0o644}
    assert (shown.stat().st_mode & 0o777, (state / FIRST).stat().st_mode & 0o777) == (0o755, 0o755)
    assert sorted(p.name for p in recordings.KERNEL_REFERENCES.iterdir()) == [".lock", "state"]

    written = {p.name: p.stat().st_mtime_ns for p in shown.iterdir()}
    assert recordings.kernel_references() == shown and len(stand_in.calls) == 4, "recorded twice"
    # a sandbox may show the folder now: nothing in it is written again when nothing changed
    assert {p.name: p.stat().st_mtime_ns for p in shown.iterdir()} == written
    assert sorted(recordings.catalogued_mistakes()) == [f"{section}, test_{task}, shape" for section in (FIRST, LAST)
                                                        for task in "xy"]


def test_a_section_without_its_data_says_why_and_is_recorded_alone_once_the_data_is_there(stand_in, monkeypatch):
    monkeypatch.setattr(recordings, "SECTIONS", (LAST, FIRST))  # the missing one first: the next still recorded
    stand_in.missing = {LAST}
    shown = recordings.kernel_references()
    state = shown.parent
    assert (state / LAST / "unavailable.txt").read_text() == f"no data for {LAST}: set BANKING77_DIR"
    assert list(_shown(shown)) == [f"{FIRST}.visible"]
    assert sorted(recordings.catalogued_mistakes()) == [f"{FIRST}, test_x, shape", f"{FIRST}, test_y, shape"]

    stand_in.missing = set()
    stand_in.calls.clear()
    assert recordings.kernel_references() == shown
    assert stand_in.recorded_sections() == [LAST], "only the section that was missing is recorded again"
    assert list(_shown(shown)) == [f"{FIRST}.visible", f"{LAST}.visible"]
    assert sorted(p.name for p in (state / LAST).iterdir()) == ["expected.pt", "mistakes.json"]


def test_the_kernels_reader_is_put_back_when_it_is_missing_without_recording_again(stand_in):
    shown = recordings.kernel_references()
    (shown / "__init__.py").unlink()
    stand_in.calls.clear()
    assert recordings.kernel_references() == shown and stand_in.calls == []
    assert (shown / "__init__.py").read_text() == (EDITION_SOURCE / "references.py").read_text()
    assert list(_shown(shown)) == [f"{FIRST}.visible", f"{LAST}.visible"]


def test_a_failed_recording_says_where_it_ran_and_why_and_leaves_no_section_behind(stand_in):
    stand_in.failure = "x" * 5000 + "Traceback: the solution of 01-heads failed"
    with pytest.raises(RuntimeError) as failed:
        recordings.kernel_references()
    message = str(failed.value)
    assert message.startswith(f"recording the results the checks compare with failed (the solution notebooks "
                              f"and catalogues ran in {recordings.ROOT}):\n")
    assert message.endswith(stand_in.failure[-3000:]) and not message.endswith(stand_in.failure[-3001:])
    assert sorted(p.name for p in (recordings.KERNEL_REFERENCES / "state").iterdir()) == []
    assert sorted(p.name for p in recordings.KERNEL_REFERENCES.iterdir()) == [".lock", "state"]


def test_a_section_a_recording_left_half_made_is_replaced(stand_in):
    half = recordings.KERNEL_REFERENCES / "state" / FIRST
    half.mkdir(parents=True)
    (half / "mistakes.json").write_text("{}")  # killed before expected.pt was written
    recordings.kernel_references()
    assert stand_in.recorded_sections() == [FIRST, LAST]
    assert sorted(p.name for p in half.iterdir()) == ["expected.pt", "mistakes.json"]
    assert json.loads((half / "mistakes.json").read_text()) != {}


def test_recordings_unused_for_a_week_are_removed_and_younger_ones_kept(stand_in, tmp_path):
    kept = recordings.KERNEL_REFERENCES
    kept.mkdir(parents=True)
    for name, seconds in (("stale", 7 * 24 * 3600 + 100), ("recent", 7 * 24 * 3600 - 100)):
        (kept / name).mkdir()
        then = time.time() - seconds
        os.utime(kept / name, (then, then))
    (kept / "stray-file").write_text("")
    os.utime(kept / "stray-file", (0, 0))
    # a stale entry that cannot be removed (rmtree refuses a link) is left, and grading goes on
    (tmp_path / "elsewhere").mkdir()
    os.utime(tmp_path / "elsewhere", (0, 0))
    (kept / "linked").symlink_to(tmp_path / "elsewhere")
    state = recordings.recorded()
    assert sorted(p.name for p in kept.iterdir()) == [".lock", "linked", "recent", "state", "stray-file"]
    # this state is used now: the next week counts from today
    os.utime(state, (0, 0))
    recordings.recorded()
    assert state.stat().st_mtime > time.time() - 60


class Planted:
    """Anything but tensors and plain values: unpickling it could run code."""


def test_a_recording_holding_anything_but_results_is_refused(stand_in):
    state = recordings.recorded()
    torch.save({f"{FIRST}.visible": Planted()}, state / FIRST / recordings.EXPECTED_NAME)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        recordings.merged_results(state)


def test_the_state_of_the_course_changes_with_its_code_solutions_data_library_and_torch(tmp_path, monkeypatch):
    for name in ("grader/checks/heads.py", "grader/sub/deeper.py", "solutions/01-heads/01-heads.ipynb",
                 "data/train.csv", "ticketnet.py", "README.md", "bench/grading.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    monkeypatch.setattr(recordings, "ROOT", tmp_path)
    torch_version = ["2.5.1"]
    monkeypatch.setattr(recordings.importlib.metadata, "version", lambda name: torch_version[0] if name == "torch" else "")
    # the same files, the same state on every machine and in every process: torch's version, then
    # each file read, by its path, as `path NUL sha256(bytes)`
    spelled_out = hashlib.sha256(b"2.5.1")
    for name in sorted(["grader/checks/heads.py", "grader/sub/deeper.py", "solutions/01-heads/01-heads.ipynb",
                        "data/train.csv", "ticketnet.py"]):
        spelled_out.update(f"{name}\0{hashlib.sha256(name.encode()).hexdigest()}".encode())
    assert recordings._course_state() == spelled_out.hexdigest()[:16]

    def changed(change):
        before = recordings._course_state()
        change()
        return recordings._course_state() != before

    for name in ("grader/checks/heads.py", "grader/sub/deeper.py", "solutions/01-heads/01-heads.ipynb",
                 "data/train.csv", "ticketnet.py"):
        assert changed(lambda: (tmp_path / name).write_text("edited")), name
    assert changed(lambda: (tmp_path / "data/train.csv").rename(tmp_path / "data/valid.csv")), "a file renamed"
    assert changed(lambda: torch_version.__setitem__(0, "2.6.0")), "another torch"
    assert not changed(lambda: (tmp_path / "README.md").write_text("edited")), "the README is read by no check"
    assert not changed(lambda: (tmp_path / "bench/grading.py").write_text("edited"))
    assert not changed(lambda: (tmp_path / "data/sub").mkdir()), "a folder is no file read"


def test_record_keeps_every_result_the_checks_ask_for_and_names_the_mistakes_by_message(monkeypatch):
    """A stand-in catalogue session: each check asks references for a cheap result (section 1's
    causal masks) and fails with a message for the wrong answers."""
    sessions = []

    class Session:
        def __init__(self, section, hidden):
            sessions.append((section, hidden))

        def verdict(self, name, code):
            references.expected("heads", "causal_masks", (2, 3), 4, len(code))
            return f"AssertionError: {name} is off by {len(code)}.5" if code.startswith("wrong") else None

    entries = {"s1": ([catalogue.Wrong("f", "the first slip", "wrong", ()), catalogue.Wrong("f", "the second slip", "wrong!", ()),
                       catalogue.Wrong("g", "passes anyway", "right", ())],
                      [catalogue.Right("f", "as in the solution", "right!"), catalogue.Right("g", "odd", "wrong but right")])}
    monkeypatch.setattr(catalogue, "Session", Session)
    monkeypatch.setattr(catalogue, "load", entries.get)
    mistakes = {}
    recorded = recordings.record(["s1"], hidden=True, mistakes=mistakes)
    assert sessions == [("s1", True)]
    assert sorted(recorded) == sorted(f"heads.causal_masks({(2, 3)!r}, 4, {n})" for n in (5, 6, 15))
    assert mistakes == {f"s1, test_f, {message_shape('f is off by 5.5')}": ["the first slip", "the second slip"]}
    # a right answer's failure (a bug of the catalogue, which test_catalogue.py finds) names no mistake
    assert sorted(recordings.record(["s1"])) == sorted(recorded) and sessions[-1] == ("s1", False)
