"""The parts of grader/checks/norms.py that the catalogue does not reach: the property checks that
run after the comparison with F.layer_norm, the numbers the query_shift check is built on, and
the BatchNorm wrapper."""

import pytest
import torch
from torch import nn

from grader.checks import norms
from grader.references import norms as expected_norms


def layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps) * weight + bias


def test_the_property_checks_accept_a_right_layer_norm_at_several_widths():
    for d in (2, 8, 64, 512):
        norms._rows_are_standard(layer_norm, (3, d), seed=d)
        norms._scale_invariant(layer_norm, d, seed=d)


def test_a_norm_that_keeps_a_trace_of_the_scale_breaks_scale_invariance_with_a_message():
    def leaky(x, weight, bias, eps=1e-5):  # divides by the variance, not its square root
        centred = x - x.mean(-1, keepdim=True)
        return centred / (centred.pow(2).mean(-1, keepdim=True) + eps) * weight + bias

    with pytest.raises(AssertionError, match="row \\* 1000"):
        norms._scale_invariant(leaky, 8, seed=0)


def test_rows_that_do_not_reach_variance_one_are_named():
    def half(x, weight, bias, eps=1e-5):
        return layer_norm(x, weight, bias, eps) / 2

    with pytest.raises(AssertionError, match="biased variances"):
        norms._rows_are_standard(half, (4, 16), seed=0)


def test_the_known_batches_move_row_zero_by_five_and_each_slip_by_its_own_number():
    """The numbers known_batches' docstring works out by hand. Row 0 moves by 3 at its first
    position and by 5 at its second: an answer that reads one position cannot pass as one that
    reads them all."""
    for widths_differ in (False, True):
        shifts = expected_norms.known_shifts(widths_differ, False)
        assert shifts == pytest.approx({"right": 5.0, "first position": 3.0, "signed": 2.0, "mean": 1.75,
                                        "first tokens": 9.0, "whole batch": 15.0, "whole mean": 3.5})
        assert expected_norms.known_shifts(widths_differ, True)["right"] == pytest.approx(5.0)


def test_the_batchnorm_wrapper_is_batchnorm1d_over_the_features():
    torch.manual_seed(0)
    h = torch.randn(3, 5, 8)
    wrapper = norms.TokenBatchNorm(8)
    reference = nn.BatchNorm1d(8)
    assert torch.allclose(wrapper(h), reference(h.transpose(1, 2)).transpose(1, 2), atol=1e-6)
    assert torch.allclose(wrapper.bn.running_mean, reference.running_mean)


def test_the_test_inputs_hold_a_row_whose_variance_is_below_eps():
    x, _, _ = norms.norm_inputs((3, 8), seed=0)
    assert x.view(-1, 8).var(-1, correction=0).min().item() < 1e-5
