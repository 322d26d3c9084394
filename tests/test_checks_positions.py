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
