"""What the check cells of the notebooks call.

Each check takes the student's function or class, runs it on small inputs, and either prints
"Check passed" or raises AssertionError with a message in the student's terms: what came out,
what was expected, and the likely mistake. One module per section; this file holds the helpers
they share.

In the notebook a check receives the student's own objects. When grading, it runs in the grader
and receives stand-ins (grader/probe.py) that run the student's code in the kernel: the same code
must work on both, so a check reaches the student's code only by calling it and reading what
modules hold (children, parameters, settings), never through its source or frames.
"""

import contextlib
import functools
import importlib
import math
import sys
from unittest import mock

import torch
from torch import nn


class Counted:
    """A stand-in that a check hands to the student's function and counts the calls of, in
    `calls`. When grading, the student's code gets a line to the judge in its place
    (grader.probe.CallLine): the judge's own object answers each call, and counts it, where the
    student's code cannot rewrite the count or read an answer without asking."""

    def __init__(self):
        self.calls = []


def task(check):
    """Mark a check a notebook calls: when it fails, the student's traceback shows the check cell
    and the message, not the check's own lines (IPython hides frames that set __tracebackhide__,
    all but the last). The student's own error, if any, stays attached as the cause.

    What the student's code writes to stderr while the check runs (a warning, say) is shown on
    stdout instead: nbgrader scores a check cell with any stderr output as failed, and a right
    answer that warns must not lose its points."""
    @functools.wraps(check)
    def run(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 (read by IPython)
        try:
            with contextlib.redirect_stderr(sys.stdout):
                return check(*args, **kwargs)
        except AssertionError as error:
            raise AssertionError(*error.args) from error.__cause__
    return run


def passed():
    print("Check passed")


def expect(condition, message):
    """Fail with `message` unless `condition` holds."""
    if not condition:
        raise AssertionError(message)


def call(function, *args, **kwargs):
    """Call the student's code; an unwritten stub or a crash becomes a readable failure."""
    __tracebackhide__ = True  # noqa: F841 (the student's frames are what matter)
    name = getattr(function, "__qualname__", getattr(function, "__name__", "your code"))
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        raise AssertionError(f"{name} is not written yet: replace `raise NotImplementedError()` "
                             "with your code, run its cell, then this check.") from None
    except AssertionError:
        raise
    except Exception as error:
        shapes = ", ".join(str(tuple(a.shape)) if isinstance(a, torch.Tensor) else
                           type(a).__name__ if isinstance(a, nn.Module) else repr(a)[:30] for a in args)
        raise AssertionError(f"{name}({shapes}) raised {type(error).__name__}: {error}") from error


def gradient_free(module, forward, *args):
    """The names of `module`'s parameters that get no gradient from the output of `forward(*args)`
    (the module itself, or a method of it): frozen (requires_grad=False), detached, or read as a
    Python number. Every output number counts, each with its own weight, so none can cancel."""
    module.zero_grad(set_to_none=True)
    with torch.enable_grad():
        out = forward(*args)
        out = out[0] if isinstance(out, (tuple, list)) else out
        if isinstance(out, torch.Tensor) and out.requires_grad:
            weights = torch.linspace(-1.0, 1.0, out.numel(), dtype=out.dtype).view_as(out)
            (out * weights).sum().backward()
    names = [name for name, p in module.named_parameters() if not p.requires_grad or p.grad is None]
    module.zero_grad(set_to_none=True)
    return names


def expect_learns(module, *args, what, frozen_allowed=False):
    """Fail unless every parameter of `module` gets a gradient from its output on `args`: a task
    about a layer that trains must train. `frozen_allowed`: a parameter made not to train
    (requires_grad=False) is the student's choice, where the task trains nothing there. A student's
    module that the judge stands in for runs the forward and the backward in the kernel
    (grader.probe.RemoteModule.gradient_free)."""
    try:
        frozen = (module.gradient_free(*args) if hasattr(type(module), "gradient_free")
                  else gradient_free(module, module, *args))
        if frozen_allowed:
            trains = {name for name, p in module.named_parameters() if p.requires_grad}
            frozen = [name for name in frozen if name in trains]
    except RuntimeError as error:  # autograd's own complaint, e.g. about an in-place operation
        raise AssertionError(f"{what}: backpropagating through its output raised RuntimeError: {error}. "
                             "Training calls backward too: an in-place change of a tensor that autograd "
                             "still needs (h += ..., x.relu_()) breaks it; write h = h + ... instead.") from None
    expect(not frozen, f"{what}: {', '.join(frozen[:4])}{' and more' if len(frozen) > 4 else ''} get no "
                       "gradient from its output, so training could not change them. Is one frozen "
                       "(requires_grad=False), detached, or read as a Python number (.item(), float())?")


def load_fixed_linears(linears, generator):
    """Fill nn.Linear layers, in order, from `generator` the way nn.Linear draws its own weights
    (uniform within 1/sqrt(in_features)). A check that puts such weights in the student's layers
    gets outputs fixed by its own settings, which grader.references can hold."""
    with torch.no_grad():
        for linear in linears:
            bound = 1 / math.sqrt(linear.in_features)
            for p in (linear.weight, linear.bias):
                if p is not None:
                    p.copy_(torch.rand(p.shape, generator=generator) * 2 * bound - bound)


def load_fixed_norm(norm, generator):
    """Move an nn.LayerNorm away from weight 1 and bias 0, which would hide it used in the wrong
    place (or two norms swapped)."""
    with torch.no_grad():
        norm.weight.copy_(1 + 0.5 * torch.randn(norm.weight.shape, generator=generator))
        norm.bias.copy_(0.5 * torch.randn(norm.bias.shape, generator=generator))


def expect_shape(tensor, shape, what):
    expect(isinstance(tensor, torch.Tensor), f"{what} should be a tensor, got {type(tensor).__name__}")
    expect(tuple(tensor.shape) == tuple(shape),
           f"{what} has shape {tuple(tensor.shape)}, expected {tuple(shape)}")


def expect_close(actual, expected, what, hint="", atol=1e-5, rtol=1e-4):
    """Shapes equal and values allclose; the message gives the largest difference and the hint."""
    expect_shape(actual, expected.shape, what)
    if not torch.allclose(actual.float(), expected.float(), atol=atol, rtol=rtol):
        gap = (actual.float() - expected.float()).abs().max().item()
        raise AssertionError(f"{what} differs from the expected values by up to {gap:.3g}. {hint}".strip())


# Functions refused to the student's code right now: [(("module:name", ...), the list of uses)].
# grader.probe sends them along with each call, so the student's code meets them in the kernel too.
REFUSED = []


@contextlib.contextmanager
def refusing(*paths):
    """While the block runs, calling any of `paths` ("module:name", e.g. "torch:layer_norm") from
    the student's code raises RuntimeError("refused"). Yields a list that grows by one entry for
    each such call."""
    used = []
    with refuse(paths, used):
        REFUSED.append((paths, used))
        try:
            yield used
        finally:
            REFUSED.pop()


def refuse(paths, used):
    """The patches behind `refusing`, in this process."""
    def refused(*args, **kwargs):
        used.append(True)
        raise RuntimeError("refused")

    patches = contextlib.ExitStack()
    for path in paths:
        module, _, name = path.partition(":")
        patches.enter_context(mock.patch.object(importlib.import_module(module), name, refused))
    return patches


def prediction(predicted, counted, what="parameters"):
    """A prediction cell: the counted number is shown only next to a prediction written first."""
    if predicted is None:
        print(f"Write your prediction first: replace None with the number of {what} you expect, "
              "then run this cell again.")
    else:
        verdict = "right" if predicted == counted else "not right: read on to see why"
        print(f"predicted {predicted:,}, counted {counted:,}: {verdict}")
