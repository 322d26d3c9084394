"""The results the checks compare with, recorded: the student edition ships them (grader.publish),
and the grading kernels' sandbox shows them in place of grader/references (grader.notebook_grader).

A check asks grader.references for each result it compares with; `record` runs every check with
the model answers and the catalogue inside `references.recording()`, and keeps what was asked.
For grading, a state of the course is recorded once, by a process of its own, into
KERNEL_REFERENCES, and kept there for every grading and publishing of that state.
"""

import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.course import EDITION_SOURCE, ROOT, SECTIONS, message_shape

EXPECTED_NAME = "expected.pt"  # the results the checks compare with, recorded (see record)
# where kernel_references() keeps its recordings, one folder for each state of the course
KERNEL_REFERENCES = Path.home() / ".cache" / "transformer-block-course" / "kernel-references"


def record(sections=SECTIONS, hidden=False, mistakes=None):
    """{key: value} of every result the checks ask grader.references for (see there): each
    section's solution notebook runs in this process, then every catalogue entry is checked, so
    that the results a check asks for only when an answer is wrong are there too. hidden=False (the
    student edition) leaves the hidden tests out: their settings are never recorded. `mistakes`, a
    dict, receives {"section, check, message shape": [the catalogue's names of the wrong answers
    that fail with it]} (grader.course.message_shape)."""
    from grader import catalogue, references
    with references.recording() as recorded:
        for section in sections:
            session = catalogue.Session(section, hidden=hidden)
            wrong, right = catalogue.load(section)
            for entry in [*wrong, *right]:
                message = session.verdict(entry.name, entry.code)
                if mistakes is not None and message and isinstance(entry, catalogue.Wrong):
                    key = ", ".join([section, f"test_{entry.name}", message_shape(message)])
                    mistakes.setdefault(key, []).append(entry.mistake)
    return recorded


def _course_state():
    """A digest of everything a recording of the checks' results depends on: the course's code,
    solutions and data, and torch. Not grader.fingerprint's, though it reads the same files: every
    nbgrader test of the fast suite would record the results again (a minute) for each mutant of
    the fingerprint that mutation testing tries."""
    digest = hashlib.sha256(importlib.metadata.version("torch").encode())
    for path in sorted({*ROOT.glob("grader/**/*.py"), *ROOT.glob("solutions/*/*.ipynb"), *ROOT.glob("data/*"),
                        ROOT / "ticketnet.py"}):
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + hashlib.sha256(path.read_bytes()).hexdigest().encode())
    return digest.hexdigest()[:16]


def record_for_kernels(folder, sections):
    """Record each of `sections` into folder/SECTION (run in a process of its own): the results of
    its visible checks (expected.pt, what a grading kernel's check cells ask for: never a hidden
    test's, which a submission could hand back as its own answer) and its catalogued mistakes,
    hidden tests included (mistakes.json). A section whose data cannot be read here (Banking77
    offline) gets `unavailable.txt`, saying why, instead: the other sections still grade."""
    import torch
    import ticketnet
    for section in sections:
        (Path(folder) / section).mkdir(mode=0o755)
        mistakes = {}
        try:
            record([section], hidden=True, mistakes=mistakes)
            recorded = record([section], hidden=False)
        except ticketnet.DataError as error:
            (Path(folder) / section / "unavailable.txt").write_text(str(error))
            continue
        torch.save(recorded, Path(folder) / section / EXPECTED_NAME)
        (Path(folder) / section / "mistakes.json").write_text(json.dumps(mistakes, indent=1, sort_keys=True))


def recorded():
    """The folder of this state of the course in KERNEL_REFERENCES: a folder per section recorded
    (see record_for_kernels), and `references`, the reader with every recorded section's results.
    A section not recorded yet is recorded now; one whose data was missing is tried again, so that
    a section 1 check needs no Banking77 and section 7 grades once its files are there."""
    import torch
    state = KERNEL_REFERENCES / _course_state()
    KERNEL_REFERENCES.mkdir(parents=True, exist_ok=True)
    with open(KERNEL_REFERENCES / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one recording at a time, also among parallel graders
        state.mkdir(exist_ok=True)
        todo = [section for section in SECTIONS if not (state / section / EXPECTED_NAME).is_file()]
        shown = state / "references"  # what the grading sandbox shows as grader/references
        if todo:
            with tempfile.TemporaryDirectory(dir=KERNEL_REFERENCES) as work:
                run = subprocess.run([sys.executable, "-c", "import sys; from grader import recordings; "
                                      "recordings.record_for_kernels(sys.argv[1], sys.argv[2:])", work, *todo],
                                     cwd=ROOT, capture_output=True, text=True)
                if run.returncode != 0:
                    raise RuntimeError("recording the results the checks compare with failed (the solution "
                                       f"notebooks and catalogues ran in {ROOT}):\n{run.stderr[-3000:]}")
                for section in todo:  # what a recording that died midway left is replaced
                    shutil.rmtree(state / section, ignore_errors=True)
                    (Path(work) / section).rename(state / section)
        if not (shown / "__init__.py").is_file() or any((state / s / EXPECTED_NAME).is_file() for s in todo):
            # files replaced one by one, in place: a sandbox running now may show this folder
            shown.mkdir(mode=0o755, exist_ok=True)
            torch.save(merged_results(state), shown / ".expected.new")
            shutil.copyfile(EDITION_SOURCE / "references.py", shown / ".init.new")
            for new, name in ((".expected.new", EXPECTED_NAME), (".init.new", "__init__.py")):
                (shown / new).chmod(0o644)  # the sandbox's user reads them
                os.replace(shown / new, shown / name)
        os.utime(state)
        week = time.time() - 7 * 24 * 3600
        for old in KERNEL_REFERENCES.iterdir():
            if old.is_dir() and old != state and old.stat().st_mtime < week:
                shutil.rmtree(old, ignore_errors=True)
    return state


def merged_results(state):
    """The results of every section recorded in the folder `state` (recorded), in one dict,
    sorted: the same results make the same bytes (an edition's manifest compares digests)."""
    import torch
    merged = {}
    for section in SECTIONS:
        if (state / section / EXPECTED_NAME).is_file():
            merged.update(torch.load(state / section / EXPECTED_NAME, weights_only=True))
    return dict(sorted(merged.items()))


def kernel_references():
    """A folder the grading sandbox shows in place of grader/references: the student edition's
    reader with the results of every visible check, as the student edition holds them. A kernel
    that could import the code computing them could hand the course's own attention in as its
    answer; one that could read a hidden test's result could hand that in (grader.judge runs the
    hidden tests outside the kernel, with the code itself). Recorded (about a minute) by a process
    of its own the first time a state of the course grades or is published, then kept in KERNEL_REFERENCES;
    recordings unused for a week are removed. A section whose data is missing here is left out
    (its own notebook then fails on the data, saying where to put it)."""
    return recorded() / "references"


def catalogued_mistakes():
    """{"section, check, message shape": [names of the catalogue's wrong answers failing with it]},
    recorded with kernel_references(), for the sections recorded."""
    state = recorded()
    mistakes = {}
    for section in SECTIONS:
        if (state / section / "mistakes.json").is_file():
            mistakes.update(json.loads((state / section / "mistakes.json").read_text()))
    return mistakes
