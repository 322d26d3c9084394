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
import os
import sys
from unittest import mock

import torch
from torch import nn


# How near a result must come to another to count as the same: one table for every check, in
# torch.allclose's terms (|a - b| <= atol + rtol * |b|).
TOLERANCE = {
    # float32 arithmetic against a reference computed alike, or in float64
    "float32": {"atol": 1e-5, "rtol": 1e-4},
    # float32 arithmetic done another way: a known mistake's output, computed by other code than the
    # student's, or a property of the student's own outputs that rounding blurs (each row's root mean
    # square near 1; the same rows a thousand times larger)
    "loose": {"atol": 1e-4, "rtol": 1e-3},
    # what must come back untouched (a stack whose every block is switched off)
    "unchanged": {"atol": 1e-6, "rtol": 0.0},
    # numbers copied, not computed (weights put in place): torch.allclose's own defaults
    "copied": {"atol": 1e-8, "rtol": 1e-5},
    # a share of whole numbers (an accuracy)
    "count": {"atol": 1e-9, "rtol": 1e-6},
    # numbers that span orders of magnitude (a first layer's gradient, with and without shortcuts)
    "relative": {"atol": 0.0, "rtol": 1e-4},
}


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


def with_aliases(function, source, *args):
    """(function(*args), the names of the result's weights that hold no numbers of their own but
    share those of a tensor of args[source], its weights if it is a module): what assigning the
    source's Parameters or modules, or a view of its tensors, gives in place of a copy. A copy
    that is an alias changes with its source, and trains it. When grading, the kernel runs this,
    where the tensors and their memory are (grader.probe.Remote.with_aliases)."""
    result = function(*args)
    if not isinstance(result, nn.Module):
        return result, []
    memory = {t.untyped_storage().data_ptr() for t in _tensors_in(args[source]) if t.numel()}
    weights = list(result.named_parameters()) + list(result.named_buffers())
    return result, [name for name, w in weights if w.numel() and w.untyped_storage().data_ptr() in memory]


def _tensors_in(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, nn.Module):
        yield from value.parameters()
        yield from value.buffers()
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item)


def call_with_aliases(function, *args, source=0):
    """`call(function, *args)`, and `with_aliases`'s names of the weights that the result shares
    with args[source]."""
    __tracebackhide__ = True  # noqa: F841
    if hasattr(type(function), "with_aliases"):  # the judge's stand-in: the kernel finds them
        run = functools.wraps(function)(lambda *given: function.with_aliases(source, *given))
    else:
        run = functools.wraps(function)(lambda *given: with_aliases(function, source, *given))
    return call(run, *args)


def fresh_generator():
    """A generator seeded from the operating system as the check runs. Inputs drawn from it are
    new each run, so no recorded result (the student edition's grader/references) answers them:
    a check that ends on them is passed by code that computes, not by a lookup."""
    return torch.Generator().manual_seed(int.from_bytes(os.urandom(6), "little"))


@contextlib.contextmanager
def silenced(linears, biases):
    """Within the block, each nn.Linear of `linears` weighs nothing (weight 0) and outputs its bias
    of `biases` alone, whatever it reads; its own weight and bias come back after. A check that
    silences a layer this way knows the output from the biases, on any input it draws."""
    kept = [(linear.weight.detach().clone(), linear.bias.detach().clone()) for linear in linears]
    try:
        with torch.no_grad():
            for linear, bias in zip(linears, biases):
                linear.weight.zero_()
                linear.bias.copy_(bias)
        yield
    finally:
        with torch.no_grad():
            for linear, (weight, bias) in zip(linears, kept):
                linear.weight.copy_(weight)
                linear.bias.copy_(bias)


def first_output(out):
    """What a module's forward returns, or the first of what it returns (nn.MultiheadAttention's
    output beside its weights)."""
    return out[0] if isinstance(out, (tuple, list)) else out


def output_weights(out):
    """A weight for each number of an output, the same for a given shape: backpropagating
    (out * weights).sum() gives every output number its own say, so that none can cancel."""
    generator = torch.Generator().manual_seed(0)
    return torch.randn(out.shape, generator=generator, dtype=torch.float64).to(out.dtype)


def gradients(module, forward, *args):
    """{name: gradient, or None where none arrives} of `module`'s parameters, from the output of
    `forward(*args)` (the module itself, or a method of it) weighted by output_weights. A parameter
    gets None when it is frozen (requires_grad=False), detached, or read as a Python number."""
    module.zero_grad(set_to_none=True)
    with torch.enable_grad():
        out = first_output(forward(*args))
        if isinstance(out, torch.Tensor) and out.requires_grad:
            (out * output_weights(out)).sum().backward()
    found = {name: None if p.grad is None else p.grad.detach().clone() for name, p in module.named_parameters()}
    module.zero_grad(set_to_none=True)
    return found


def gradients_of(module, *args):
    """`gradients` of `module` called on `args`: in the kernel when the judge stands in for the
    student's module (grader.probe.RemoteModule.gradients), here otherwise."""
    return module.gradients(*args) if hasattr(type(module), "outputs_with") else gradients(module, module, *args)


def outputs_with(module, forward, changes, random_state, *args):
    """The output of `forward(*args)` with each of `changes` ({parameter name: value}) in turn put
    in `module`'s parameters and taken out again, each run from `random_state` (a dropout draws
    the same mask every time)."""
    parameters = dict(module.named_parameters())
    outputs = []
    for change in changes:
        kept = {name: parameters[name].detach().clone() for name in change}
        try:
            with torch.no_grad():
                for name, value in change.items():
                    parameters[name].copy_(value)
            torch.set_rng_state(random_state)
            with torch.enable_grad():  # the path the gradients took (no_grad may take a fast path)
                out = first_output(forward(*args))
            outputs.append(out.detach().clone() if isinstance(out, torch.Tensor) else out)
        finally:
            with torch.no_grad():
                for name, value in kept.items():
                    parameters[name].copy_(value)
    return outputs


# A nudge's length, against the parameter's norm (or 1 a number, for a small one): a long one
# where float32's rounding would drown a short one, a short one where the output bends sharply
# (DeepStack's twelve attentions, whose first layer a 1e-3 nudge already measures 30% off).
NUDGES = (1e-3, 1e-5)


def untrue_gradients(module, found, baseline, outputs):
    """The names among `found` (`gradients`) whose gradient disagrees with how the module's output
    moves when that parameter is nudged; `outputs(changes)` is `outputs_with` for the module, and
    `baseline` its output as the module's own call gives it. When grading, the kernel computes all
    three, but the nudges are the judge's, so gradients made up to pass (none missing, say) do not
    survive them. Each parameter is nudged both ways along a mix of its own direction and its
    gradient's (central differences), by each of NUDGES, all in one call; one length that agrees is
    enough, a shorter one only where the change it measures stands above its rounding. The nudged outputs must lie near the baseline, which also sets the rounding allowed:
    outputs made large to drown the differences in it are refused."""
    parameters = dict(module.named_parameters())
    generator = torch.Generator().manual_seed(0)
    nudged, changes = [], []
    for name, gradient in found.items():
        if gradient is None:
            continue
        if name not in parameters or not isinstance(gradient, torch.Tensor) or \
                gradient.shape != parameters[name].shape or not parameters[name].is_floating_point():
            return list(found)
        value, gradient = parameters[name].detach().double(), gradient.double()
        direction = value if value.norm() > 0 else torch.randn(value.shape, generator=generator, dtype=torch.float64)
        direction = direction / direction.norm()
        if gradient.norm() > 0:
            direction = direction + gradient / gradient.norm()
            direction = direction / direction.norm() if direction.norm() > 0 else gradient / gradient.norm()
        dtype = parameters[name].dtype
        for nudge in NUDGES:
            step = nudge * max(value.norm().item(), math.sqrt(value.numel()))
            nudged.append((name, nudge, float((gradient * direction).sum()), step))
            changes += [{name: (value + step * direction).to(dtype)}, {name: (value - step * direction).to(dtype)}]
    if not changes:
        return []
    got = outputs([{}, *changes])  # first the output unchanged, which must be the baseline
    names = list(dict.fromkeys(name for name, *_ in nudged))
    if not (isinstance(baseline, torch.Tensor) and baseline.is_floating_point() and isinstance(got, list)
            and len(got) == len(changes) + 1 and all(isinstance(o, torch.Tensor) and o.is_floating_point()
                                                     and o.shape == baseline.shape for o in got)):
        return names
    baseline = baseline.detach().double()
    got = [o.double() for o in got]
    scale = baseline.abs().max().item()
    if not torch.allclose(got[0], baseline, **TOLERANCE["float32"]) or any(
            (o - baseline).abs().max().item() > 10 * scale + 1e-3 for o in got[1:]):
        return names  # a nudge of a thousandth moves no output by ten times its size
    weights = output_weights(baseline)
    # float32's rounding of the output, seen through the division by the step
    rounding = 2e-6 * float((baseline.abs() * weights.abs()).sum())
    agrees = {}
    for i, (name, nudge, reported, step) in enumerate(nudged):
        up, down = got[1 + 2 * i], got[2 + 2 * i]
        measured = float(((up - down) * weights).sum()) / (2 * step)
        noise = rounding / step
        close = abs(measured - reported) <= 0.05 * max(abs(measured), abs(reported)) + noise
        # a shorter nudge is noisier: within its noise it would excuse a gradient of 0 for a change
        # the longest nudge sees, so it only confirms a change it sees itself
        heard = nudge == NUDGES[0] or abs(measured) > 2 * noise
        agrees[name] = agrees.get(name, False) or (close and heard)
    return [name for name, close in agrees.items() if not close]


def expect_learns(module, *args, what, frozen_allowed=False):
    """Fail unless every parameter of `module` gets from its output on `args` a gradient that is
    true to how the output changes (untrue_gradients): a task about a layer that trains must
    train. `frozen_allowed`: a parameter made not to train (requires_grad=False) is the student's
    choice, where the task trains nothing there. A module the judge stands in for computes its
    gradients and nudged outputs in the kernel, where its forward and autograd's graph are
    (grader.probe.RemoteModule); the nudges are the judge's."""
    remote = hasattr(type(module), "outputs_with")
    random_state = torch.get_rng_state()  # every output below draws what the gradients' output drew
    try:
        found = gradients_of(module, *args)
        after = torch.get_rng_state()
        frozen = [name for name, p in module.named_parameters()
                  if found.get(name) is None and (p.requires_grad or not frozen_allowed)]
        untrue = []
        if not frozen:
            torch.set_rng_state(random_state)
            with torch.enable_grad():  # the path the gradients took (no_grad may take a fast path)
                baseline = first_output(module(*args))  # the module's own call, as the check's others
            untrue = untrue_gradients(module, found, baseline, lambda changes: (
                module.outputs_with(changes, random_state, *args) if remote
                else outputs_with(module, module, changes, random_state, *args)))
        torch.set_rng_state(after)
    except RuntimeError as error:  # autograd's own complaint, e.g. about an in-place operation
        raise AssertionError(f"{what}: backpropagating through its output raised RuntimeError: {error}. "
                             "Training calls backward too: an in-place change of a tensor that autograd "
                             "still needs (h += ..., x.relu_()) breaks it; write h = h + ... instead.") from None
    expect(not frozen, f"{what}: {first_names(frozen)} get no gradient from its output, so training could not "
                       "change them. Is one frozen (requires_grad=False), detached, or read as a Python "
                       "number (.item(), float())?")
    expect(not untrue, f"{what}: the gradients of {first_names(untrue)} do not match how its output changes when "
                       "they change, so training would move them the wrong way. Is part of the forward "
                       "computed outside autograd (.detach(), .data, a hand-written backward)?")


def first_names(names):
    """The first four of `names` for a message, and whether there are more."""
    return f"{', '.join(names[:4])}{' and more' if len(names) > 4 else ''}"


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


def close(actual, expected, tolerance="float32"):
    """Whether `actual` is a tensor of `expected`'s shape whose values lie within `tolerance` (a
    name in TOLERANCE, or {"atol", "rtol"}) of `expected`'s, compared in `expected`'s dtype; when
    `expected` is a number, whether `actual` is that near it."""
    bounds = TOLERANCE[tolerance] if isinstance(tolerance, str) else tolerance
    if not isinstance(expected, torch.Tensor):
        return math.isclose(float(actual), float(expected), rel_tol=bounds["rtol"], abs_tol=bounds["atol"])
    return (isinstance(actual, torch.Tensor) and actual.shape == expected.shape
            and torch.allclose(actual.to(expected.dtype), expected, **bounds))


def diagnose(actual, right, mistakes, what, tolerance="float32", mistake_tolerance="loose"):
    """How most checks end: True when `actual` is `right`. When it is not, an AssertionError
    "what: message" for the first of `mistakes` ([(that mistake's output, what the mistake is)])
    that `actual` matches; False when it matches none, and the caller says what it expected."""
    if close(actual, right, tolerance):
        return True
    for output, message in mistakes:
        if close(actual, output, mistake_tolerance):
            raise AssertionError(f"{what}: {message}")
    return False


def expect_close(actual, expected, what, hint="", tolerance="float32"):
    """Shapes equal and values within `tolerance` (compared in float32); the message gives the
    largest difference and the hint."""
    expect_shape(actual, expected.shape, what)
    if not close(actual.float(), expected.float(), tolerance):
        gap = (actual.float() - expected.float()).abs().max().item()
        raise AssertionError(f"{what} differs from the expected values by up to {gap:.3g}. {hint}".strip())


# The refusing() blocks open in this process, innermost last: (("module:name", ...), their list of uses)
_REFUSING = []


@contextlib.contextmanager
def refusing(*paths):
    """While the block runs, calling any of `paths` ("module:name", e.g. "torch:layer_norm") from
    the student's code raises RuntimeError("refused"). Yields a list that grows by one entry for
    each such call. The student's code in a grading kernel meets them too: grader.probe sends
    `refused_now()` along with each call and tells `refused_in_kernel()` what the kernel refused."""
    used = []
    with refuse(paths, used):
        _REFUSING.append((paths, used))
        try:
            yield used
        finally:
            _REFUSING.pop()


def refused_now():
    """The paths the open refusing() blocks refuse."""
    return [path for paths, _ in _REFUSING for path in paths]


def refused_in_kernel():
    """Count a refused call, made by the student's code in the kernel, in every open refusing() block."""
    for _, used in _REFUSING:
        used.append(True)


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
