"""nbval's replay, with the numbers that come out of training compared within a stated tolerance.

A pytest plugin (pytest.ini loads it with `-p replay`). nbval re-executes every solution notebook
and compares each cell's outputs with the stored ones, character for character. That is right for
almost every cell: text, shapes, parameter counts, check verdicts and tables of data come out the
same on every machine. It is wrong for the few cells that print what a training run produced:
MKL, oneDNN and PyTorch's own kernels pick other instructions on another CPU (AVX2, AVX-512,
arm64), the last bits of a sum differ, and ten epochs of training carry those bits into the third
decimal of an accuracy.

Such a cell says so in its metadata, and says how far its numbers may move:

    "replay": {"tolerance": 0.01}               decimals within 0.01, percentages within 1 point
    "replay": {"tolerance": 0.01, "counts": 3}  whole numbers within 3 as well (tickets that flip)

Everything else in that cell still compares exactly: the words and punctuation around the numbers
(runs of spaces may differ, since a column's width follows its numbers), how many numbers there
are, and every whole number unless the cell gives "counts". Cells without "replay" are nbval's.
"""

import copy
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from nbval.plugin import IPyNbCell

# A number as notebooks print it: 42, 3,425, 0.8133, -1.5, 62.9% (with the sign, not inside a word)
NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?(?![\w])|(?<![\w.])-?\d+(?:\.\d+)?%?(?![\w])")
SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Tolerance:
    """How far a trained number may move: `decimals` for numbers with a decimal point (a
    percentage gets 100 times as much), `counts` for whole numbers."""

    decimals: float
    counts: int = 0

    @classmethod
    def of(cls, cell):
        """The cell's tolerance from its "replay" metadata, or None when it must replay exactly."""
        rule = cell.get("metadata", {}).get("replay")
        if rule is None:
            return None
        unknown = set(rule) - {"tolerance", "counts"}
        if unknown or "tolerance" not in rule:
            raise ValueError(f'"replay" metadata takes "tolerance" and optionally "counts", got {rule}')
        return cls(float(rule["tolerance"]), int(rule.get("counts", 0)))

    def allows(self, stored, new):
        """Whether the printed number `new` is within tolerance of the printed `stored` one."""
        if stored.endswith("%") != new.endswith("%"):
            return False
        a, b = (float(text.rstrip("%").replace(",", "")) for text in (stored, new))
        if "." not in stored + new:
            return abs(a - b) <= self.counts
        limit = self.decimals * (100 if stored.endswith("%") else 1)
        return abs(a - b) <= limit + 1e-9  # printed decimals are exact; the margin is float noise


def disagreements(stored, new, tolerance):
    """What differs between a stored and a new output text, beyond the tolerance: [] when they agree."""
    stored_numbers, new_numbers = NUMBER.findall(stored), NUMBER.findall(new)
    stored_words = SPACES.sub(" ", NUMBER.sub("#", stored)).strip()
    new_words = SPACES.sub(" ", NUMBER.sub("#", new)).strip()
    if stored_words != new_words:
        return ["the text around the numbers differs (# stands for a number):\n"
                f"  stored: {stored_words[:600]}\n  new:    {new_words[:600]}"]
    if len(stored_numbers) != len(new_numbers):  # cannot happen when the words agree; kept as a guard
        return [f"{len(stored_numbers)} numbers stored, {len(new_numbers)} printed"]
    return [f"number {i + 1} of {len(stored_numbers)}: stored {a}, printed {b}; "
            f"beyond the cell's tolerance ({_describe(tolerance)})"
            for i, (a, b) in enumerate(zip(stored_numbers, new_numbers)) if not tolerance.allows(a, b)]


def _describe(tolerance):
    points = 100 * tolerance.decimals
    counts = f"within {tolerance.counts}" if tolerance.counts else "exact"
    return (f"decimals within {tolerance.decimals:g}, percentages within {points:g} "
            f"point{'' if points == 1 else 's'}, whole numbers {counts}")


def _texts(output):
    """The (container, key) of every text in an output that is compared: a stream's text and each
    text MIME type (text/plain, text/html, ...); images are nbval's affair (it skips them)."""
    if "text" in output:
        yield output, "text"
    for mime, value in output.get("data", {}).items():
        if isinstance(value, str) and mime.startswith("text/"):
            yield output["data"], mime


_nbval_compare = IPyNbCell.compare_outputs


def _coalesced(outputs):
    """The outputs with consecutive stream outputs of one name joined: how a cell's prints are cut
    into messages depends on when the kernel flushed, not on what the cell printed."""
    joined = []
    for output in copy.deepcopy(outputs):
        last = joined[-1] if joined else None
        if (output.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")):
            last["text"] += output["text"]
        else:
            joined.append(output)
    return joined


def compare_outputs(self, test, ref, skip_compare=None):
    """nbval's comparison, after replacing every new text that agrees within the cell's tolerance
    by the stored one; what still differs fails as nbval reports it, with the numbers named."""
    tolerance = Tolerance.of(self.cell)
    if tolerance is None:
        return _nbval_compare(self, test, ref, skip_compare)
    test, ref = _coalesced(test), _coalesced(ref)
    problems = []
    if len(test) == len(ref):
        for new_output, stored_output in zip(test, ref):
            stored_texts = dict((key, box[key]) for box, key in _texts(stored_output))
            for box, key in _texts(new_output):
                if key in stored_texts:
                    found = disagreements(stored_texts[key], box[key], tolerance)
                    if found:
                        problems += [f"{key}: {problem}" for problem in found]
                    else:
                        box[key] = stored_texts[key]
    same = _nbval_compare(self, test, ref, skip_compare)
    if not same and problems:
        self.comparison_traceback += ["", "Trained numbers compared within tolerance:", *problems]
    return same


def pytest_configure(config):
    # nbval has no hook for comparing outputs, so the plugin puts its comparison in place of nbval's.
    IPyNbCell.compare_outputs = compare_outputs


# ---------------------------------------------------------------------------------------------
# Another CPU code path on the same machine
# ---------------------------------------------------------------------------------------------

# One level below what PyTorch picks by default, for ATen's kernels and for MKL's.
LOWER = {"AVX512": ("avx2", "AVX2"), "AVX2": ("default", "AVX")}


def cpu_capability(env=None):
    """The instruction set PyTorch's kernels use in a Python started with `env`: AVX512, AVX2, ..."""
    run = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         env=env, capture_output=True, text=True, check=True)
    return run.stdout.strip()


def another_code_path():
    """Environment variables that make PyTorch and MKL take the next lower code path here, so that
    one machine can replay a notebook as a machine with an older CPU would; None where there is none."""
    default = {name: value for name, value in os.environ.items() if name not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
    lower = LOWER.get(cpu_capability(default).upper())
    if lower is None:
        return None
    aten, mkl = lower
    return {"ATEN_CPU_CAPABILITY": aten, "MKL_CBWR": mkl}
