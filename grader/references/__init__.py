"""What the checks compare with: the right results and the usual wrong ones, kept apart from the
checks so that the student edition holds their values and not the code that computes them.

A check asks `references.expected(module, name, *settings)`. The settings are the check's own
(sizes, seeds, eps, flags), never anything the student's code produced, so they fix the result. In
this, the instructor's edition, grader/references/<module>.py computes it. `python -m grader
publish` runs every visible check with the model answers inside `recording()`, and writes
what they asked for into the student edition, whose grader/references/__init__.py
(grader/edition/references.py) reads the stored values instead.
"""

import contextlib
import copy
import functools
import importlib

import torch

from grader.course import reference_key

# The dicts of the recording() blocks open in this process, innermost last
_RECORDINGS = []


@contextlib.contextmanager
def recording():
    """While the block runs, every result `expected` gives is also kept in the dict it yields,
    under its key (grader.course.reference_key)."""
    recorded = {}
    _RECORDINGS.append(recorded)
    try:
        yield recorded
    finally:
        _RECORDINGS.pop()


def expected(module, name, *settings):
    """The result `name` of grader/references/<module>.py for the settings, the caller's own copy
    (as the student edition's reader gives it). Computed once a process: a grading worker asks the
    same for every student's notebook of a section."""
    value = copy.deepcopy(_computed(module, name, settings))
    for recorded in _RECORDINGS:
        recorded[reference_key(module, name, settings)] = value
    return value


@functools.lru_cache(maxsize=1024)
def _computed(module, name, settings):
    # The global generator left as it was: whether a result is computed now or was kept from an
    # earlier notebook, what the check draws next is the same.
    with torch.random.fork_rng(devices=[]):
        return getattr(importlib.import_module(f"grader.references.{module}"), name)(*settings)
