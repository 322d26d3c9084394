"""The results the checks of section 4 compare with (grader/checks/residuals.py): the seeded
recipe's gradients, and the outputs of the feed-forward layer and of the deep and ReZero stacks
with the check's fixed weights, right and with the usual mistakes."""

import copy

import torch
import torch.nn.functional as F
from torch import nn

from grader.checks.residuals import load_fixed_weights, rezero_alphas, seeded_tokens
from ticketnet import attention


def _recipe(residual, depth, order, which):
    """The recipe, in one of the orders a reasonable reading of it allows.

    order "layers": seed, build the layers, draw the batch; "batch": seed, draw the batch, build
    the layers; "reseed": seed, build the layers, seed again, draw the batch.
    which: the layer whose weight gradient is returned (0 the first, -1 the last).
    """
    torch.manual_seed(0)
    if order == "batch":
        h = torch.randn(32, 64)
    linears = [nn.Linear(64, 64) for _ in range(depth)]   # a sigmoid follows each
    if order == "reseed":
        torch.manual_seed(0)
    if order != "batch":
        h = torch.randn(32, 64)
    with torch.enable_grad():
        for linear in linears:
            change = torch.sigmoid(linear(h))
            h = h + change if residual else change
        h.pow(2).mean().backward()
    return linears[which].weight.grad.norm().item()


def first_layer_gradients(residual, depth):
    """{"ORDER WHICH": gradient norm} for each reading of the recipe and for the first (0) and
    last (-1) layer. The generator's state is kept: the student's next draw does not move."""
    with torch.random.fork_rng():
        return {f"{order} {which}": _recipe(residual, depth, order, which)
                for order in ("layers", "batch", "reseed") for which in (0, -1)}


def _fixed_linears(shapes, seed):
    linears = [nn.Linear(n_in, n_out) for n_in, n_out in shapes]
    load_fixed_weights(linears, seed)
    return linears


def feed_forward(d_model, d_ff, seed):
    """{name: output} on the check's tokens, with the fixed weights: "right" and each mistake."""
    h = seeded_tokens(3, 7, d_model, seed)
    first, second = _fixed_linears([(d_model, d_ff), (d_ff, d_model)], seed)
    with torch.no_grad():
        hidden = first(h)
        right = second(torch.relu(hidden))
        return {"right": right, "no relu": second(hidden), "gelu": second(F.gelu(hidden)),
                "relu after": torch.relu(right), "sigmoid": second(torch.sigmoid(hidden)),
                "tanh": second(torch.tanh(hidden)), "input": h, "residual inside": right + h}


def _stack(h, linears, residual, block=None):
    """The forward of the stack: h = h + block(h) or h = block(h), block = Linear(attention(h, h, h))."""
    block = block or (lambda linear, h: linear(attention(h, h, h)[0]))
    for linear in linears:
        change = block(linear, h)
        h = h + change if residual else change
    return h


def _rezero(h, linears, alphas, step=None):
    """For block i, h = h + alphas[i] * linear_i(attention(h, h, h)), or what `step(h, linear,
    alpha)` makes of one block (a likely mistake)."""
    step = step or (lambda h, linear, alpha: h + alpha * linear(attention(h, h, h)[0]))
    for linear, alpha in zip(linears, alphas):
        h = step(h, linear, alpha)
    return h


def _exact(forward, reference, h, linears, *args):
    """`forward` (_stack or _rezero) in float64, and the tolerance to judge a float32 answer by.
    Some stacks amplify rounding: a softmax of large scores on large residual vectors can move a
    float32 result by 5e-4 (seen on one CPU and not another), so the tolerance grows with the
    float32 result's own distance from the float64 one."""
    exact = forward(h.double(), [copy.deepcopy(linear).double() for linear in linears], *args)
    return exact, 1e-4 + 10 * (reference.double() - exact).abs().max().item()


def deep_stack(d_model, depth, seed, residual):
    """{name: output} of the stack with the fixed weights on the check's tokens: "right" in
    float64 with its tolerance "atol", and each mistake."""
    h = seeded_tokens(2, 10, d_model, seed)
    linears = _fixed_linears([(d_model, d_model)] * depth, seed)
    with torch.no_grad():
        right, atol = _exact(_stack, _stack(h, linears, residual), h, linears, residual)
        return {"right": right, "atol": atol, "flag ignored": _stack(h, linears, not residual),
                "added once": _stack(h, linears, False) + h,
                "no mixing": _stack(h, linears, residual, lambda linear, h: linear(h)),
                "relu": _stack(h, linears, residual, lambda linear, h: torch.relu(linear(attention(h, h, h)[0]))),
                "linear first": _stack(h, linears, residual,
                                       lambda linear, h: attention(linear(h), linear(h), linear(h))[0])}


def rezero_at_start(d_model, depth, seed):
    """{name: output} of the usual mistakes of a ReZero stack whose alphas are all 0."""
    h = seeded_tokens(2, 10, d_model, seed)
    linears = _fixed_linears([(d_model, d_model)] * depth, seed)
    with torch.no_grad():
        return {"no alpha": _stack(h, linears, True),
                "bias escapes": _rezero(h, linears, [0.0] * depth,
                                        lambda h, linear, a: h + linear(a * attention(h, h, h)[0]))}


def rezero(d_model, depth, seed):
    """{name: output} of the ReZero stack with the fixed weights and the check's alphas: "right"
    in float64 with its tolerance "atol", and each mistake."""
    h = seeded_tokens(2, 10, d_model, seed)
    linears = _fixed_linears([(d_model, d_model)] * depth, seed)
    values = rezero_alphas(depth)
    with torch.no_grad():
        right, atol = _exact(_rezero, _rezero(h, linears, values), h, linears, values.double())
        return {
            "right": right, "atol": atol, "no alpha": _stack(h, linears, True),
            "alpha 0 everywhere": _rezero(h, linears, values[:1].expand(depth)),
            "alphas reversed": _rezero(h, linears, values.flip(0)),
            "bias escapes": _rezero(h, linears, values, lambda h, linear, a: h + linear(a * attention(h, h, h)[0])),
            "average": _rezero(h, linears, values, lambda h, linear, a: (1 - a) * h + a * linear(attention(h, h, h)[0])),
            "no mixing": _rezero(h, linears, values, lambda h, linear, a: h + a * linear(h)),
            "linear first": _rezero(h, linears, values,
                                    lambda h, linear, a: h + a * attention(linear(h), linear(h), linear(h))[0]),
        }
