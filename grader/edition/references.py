"""What the checks compare with, as stored values: the student edition's grader/references.

The instructor's edition computes these results; when it published this edition it ran every
check of the notebooks with the model answers and stored each result the checks asked for in
expected.pt, beside this file. (The instructor's grading kernels read theirs through this same
file, recorded by grader.recordings.kernel_references: as here, the visible checks' results only,
never a hidden test's, which a submission could hand back as its own answer.) A check that asks for
anything else (a check cell changed to other settings) gets a clear failure, not a wrong verdict.
"""

import copy
from pathlib import Path

import torch

from grader.course import reference_key

STORED = torch.load(Path(__file__).with_name("expected.pt"), weights_only=True)


def expected(module, name, *settings):
    found = reference_key(module, name, settings)
    if found not in STORED:
        raise AssertionError(f"this check has no stored result for {found}: the course's checks hold "
                             "the results of the check cells as the notebooks give them. Run the check "
                             "cell as it is, with its own arguments.")
    return copy.deepcopy(STORED[found])
