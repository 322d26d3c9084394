"""Catalogues of wrong answers and of alternative right answers, one module per section.

Every entry is the full text of an answer cell. tests/test_catalogue.py puts each entry in place
of the solution's answer cell and runs that task's check cell: a `Wrong` entry must fail with a
message containing each of its `expect` words (case ignored), a `Right` entry must pass.
"""

import importlib
import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    name: str  # the graded name (grade_id of the answer cell)
    mistake: str  # the mistake in a few words
    code: str  # the whole answer cell as the student wrote it
    expect: tuple  # words the failure message must contain


@dataclass(frozen=True)
class Right:
    name: str
    variant: str
    code: str


# section -> module of this package holding WRONG and RIGHT
MODULES = {"01-heads": "heads", "02-positions": "positions", "03-norms": "norms",
           "04-residuals": "residuals", "05-block": "block",
           "06-tiny-transformer": "tiny", "07-banking77": "banking"}


def load(section):
    """(WRONG, RIGHT) of a section."""
    module = importlib.import_module(f"grader.catalogue.{MODULES[section]}")
    return module.WRONG, module.RIGHT


def builds_on(section):
    """{task: the tasks its answers call}, for a section whose answers call earlier answers."""
    module = importlib.import_module(f"grader.catalogue.{MODULES[section]}")
    return getattr(module, "BUILDS_ON", {})
