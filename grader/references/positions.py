"""The results the checks of section 2 compare with (grader/checks/positions.py): the sinusoid
table, right and with the usual slips, and the mean over the real tokens of the check's batch,
right and as the usual slips compute it."""

import torch

from grader.checks.positions import mean_pool_inputs


def _table(length, d, base=10000.0, exponent=lambda i2, d: i2 / d):
    """The interleaved table in float64."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    i2 = torch.arange(0, d, 2, dtype=torch.float64)  # the even columns 2i
    theta = pos / base ** exponent(i2, d)  # (length, d/2), one angle per pair of columns
    return torch.stack((theta.sin(), theta.cos()), dim=-1).flatten(1)  # sin, cos, sin, cos, ...


def sinusoid(length, d):
    """{"right": the (length, d) table in float32}: for lengths past those of sinusoid_tables, where
    a student edition keeps only a table's values."""
    return {"right": _table(length, d).float()}


def sinusoid_tables(length, d):
    """{name: table}: "right", and the tables of the usual slips."""
    return {"right": _table(length, d), "exponent i/d": _table(length, d, exponent=lambda i2, d: (i2 / 2) / d),
            "base 1000": _table(length, d, base=1000.0)}


def mean_pools(lengths, s, d, left, seed):
    """{name: (b, d)}: the mean of each row's real tokens ("right"), and what the usual slips give."""
    h, pad = mean_pool_inputs(lengths, s, d, left, seed)
    keep = (~pad).unsqueeze(-1).float()
    real = (~pad).sum(1, keepdim=True).float()
    return {
        "right": torch.stack([h[r][~pad[r]].mean(0) for r in range(len(h))]),
        "plain mean": h.mean(1), "divided by s": (h * keep).sum(1) / s, "sum": (h * keep).sum(1),
        "pads": (h * pad.unsqueeze(-1)).sum(1) / pad.sum(1, keepdim=True).clamp(min=1),
        "first n": torch.stack([h[r, :int(real[r])].mean(0) for r in range(len(h))]),
    }
