"""The parts of grader/checks/positions.py that no catalogue entry reaches: the formula the
sinusoid check compares with, and the order test inside the LearnedPositions check."""

import math

import pytest
import torch
from torch import nn

from grader.checks import positions
from grader.references import positions as expected_positions


def test_the_sinusoid_compared_with_follows_the_formula_of_the_original_transformer():
    table = expected_positions.sinusoid_tables(30, 16)["right"]
    pos, i = 17, 3
    angle = pos / 10000 ** (2 * i / 16)
    assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle))
    assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle))
    assert torch.allclose(table.norm(dim=1), torch.full((30,), math.sqrt(8), dtype=torch.float64))


class SameVectorEverywhere(nn.Module):
    """Adds one vector to every position: positions that carry no position."""

    def __init__(self, d_model):
        super().__init__()
        self.vector = nn.Parameter(torch.randn(d_model))

    def forward(self, h):
        return h + self.vector


def test_positions_that_do_not_depend_on_the_position_leave_the_query_order_blind():
    with pytest.raises(AssertionError, match="same pooled vector"):
        positions._order_is_visible(SameVectorEverywhere(16), 16, seed=0)


def test_a_real_position_table_makes_a_reordered_query_pool_differently():
    table = nn.Embedding(8, 16)
    module = type("Placed", (nn.Module,), {"forward": lambda self, h: h + table(torch.arange(h.shape[1]))})()
    positions._order_is_visible(module, 16, seed=0)


def test_the_long_sinusoid_follows_the_formula_of_the_short_tables():
    long = expected_positions.sinusoid(2100, 8)["right"]
    assert torch.allclose(long[:30].double(), expected_positions.sinusoid_tables(30, 8)["right"], atol=1e-6)
    pos, i = 2099, 1
    assert long[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / 8)), abs=1e-4)


class Placed(nn.Module):
    def __init__(self, table):
        super().__init__()
        self.table = table

    def forward(self, h):
        return h + self.table(torch.arange(h.shape[1]))


def test_a_row_of_the_table_kept_out_of_training_is_named():
    h = torch.randn(2, 8, 16)
    with pytest.raises(AssertionError, match="row 0 of the position table .* no gradient"):
        positions._every_row_learns(Placed(nn.Embedding(8, 16, padding_idx=0)), h, 8, 16)
    positions._every_row_learns(Placed(nn.Embedding(8, 16)), h, 8, 16)


def test_a_sinusoid_whose_positions_wrap_around_is_told_so():
    def wrapping(length, d):
        return expected_positions.sinusoid(length, d)["right"][torch.arange(length) % 300]
    with pytest.raises(AssertionError, match="wrap around"):
        positions._long_table(wrapping, 2100, 8, 1e-3)
    positions._long_table(lambda length, d: expected_positions.sinusoid(length, d)["right"], 2100, 8, 1e-3)


def test_the_new_tokens_of_mean_pool_always_have_pads_between_real_tokens():
    generator = torch.Generator().manual_seed(0)
    for s in (3, 5, 8):
        for _ in range(50):
            pad = positions._pads_between(s, generator)
            words = (~pad).nonzero().flatten()
            assert pad[words[0]:words[-1] + 1].any()
