"""Checks of section 5, the pre-norm block built from the course's own parts: `Block(d_model, heads,
d_ff)`, `to_reference(block)` and `PostNormBlock`.

A block's children are `norm1` and `norm2` (nn.LayerNorm), `attn`, section 1's `MultiHead` (the
nn.Linear children q, k, v and out; forward(h, mask) with a mask of shape (b, 1, 1, s), True at
the pads) and `ffn`, section 4's `FeedForward` (two nn.Linear, d_model -> d_ff -> d_model, a ReLU
between). In the notebook the two classes are the student's own, read by `load_parts`; when
grading they are the course's, so a mistake left in section 1 or 4 costs nothing here.

Every check puts fixed weights, drawn from its seed, in the block's parts (the norms too, every
part different from the others, so that swapping norm1 and norm2, linear1 and linear2, or two of
q, k and v changes the numbers), and compares with grader.references, which holds what PyTorch's
layers give with those weights. What they prove:

- `block(Block)`: the four children and the head count kept as `heads`, 49,984 parameters at
  (64, 4, 256); `attn` and `ffn` compute what PyTorch's layers compute (when they do not, the
  message points at section 1 or 4, not at the block); the input is left alone; a ticket's output
  does not depend on its neighbours; and the output equals, at every real position, that of an
  `nn.TransformerEncoderLayer(norm_first=True, batch_first=True, dropout=0)` holding the same
  weights, with `src_key_padding_mask`. The student's `to_reference` is never used here, so a
  wrong `to_reference` cannot fail `Block`.
- `to_reference(to_reference)`: given the parts of a block (its children with the fixed weights),
  the returned layer is pre-norm, batch-first, without active dropout, holds a copy of each weight
  in its place (none of its weights shares the block's numbers) and computes the block's function.
- `post_norm_block(PostNormBlock)`: a subclass of the student's Block whose forward is post-norm
  equals `nn.TransformerEncoderLayer(norm_first=False)` holding its weights.

Why only real positions are compared: the vector at a pad position is never read afterwards (pad
keys are masked, and pooling skips pads), PyTorch's fused fast path is free to compute it
differently, and a correct block may leave anything there. What matters is every real token.

When the output is wrong, the check compares it with the usual mistakes made with the same
weights, one to three at a time (the other norm order, a missing or misplaced residual, the mask
ignored or inverted, the norms swapped, no ReLU), and names the combination that reproduces the
student's numbers.

Block and PostNormBlock end on tokens drawn as the check runs, with each branch's output weights at
zero so that the block's output is known from the biases (`expect_branches_add`), and to_reference
must return PyTorch's class itself: in the student edition no recorded result can stand in for the
student's code.
"""

import itertools
import re

import torch
from torch import nn

from grader import references
from grader.checks import (TOLERANCE, call, call_with_aliases, close, expect, expect_learns, expect_shape, first_names, fresh_generator, load_fixed_norm,
                           passed, silenced, task)
from grader.checks.heads import load_fixed_projections
from grader.checks.residuals import load_fixed_weights

CHILDREN = ("norm1", "attn", "norm2", "ffn")
PROJECTIONS = ("q", "k", "v")


# ---------------------------------------------------------------------------------------------
# Building blocks of the checks
# ---------------------------------------------------------------------------------------------

@task
def expected_counts(d_model, d_ff):
    """Parameters per child of a block: two LayerNorms, the attention, the feed-forward network."""
    norm = 2 * d_model
    return {"norm1": norm, "attn": 4 * d_model * d_model + 4 * d_model, "norm2": norm,
            "ffn": 2 * d_model * d_ff + d_ff + d_model}


def _table(counts):
    return ", ".join(f"{name} {n:,}" for name, n in counts.items()) + f" -> {sum(counts.values()):,}"


def feed_forward_linears(block):
    """The block's feed-forward network's nn.Linear layers, the widening one first: section 4
    allowed any layout, even the second layer created first. By registration order when the
    shapes cannot tell (d_ff == d_model)."""
    d_model = block.norm1.normalized_shape[0]
    found = [m for m in block.ffn.modules() if isinstance(m, nn.Linear)]
    return sorted(found, key=lambda m: m.in_features != d_model)


def load_fixed_block(block, seed):
    """Put fixed weights, drawn from private generators, in the block's parts: the norms (not at
    their initial 1 and 0, which would hide norm1 and norm2 swapped), q, k, v and out, and the
    feed-forward network's two Linear layers."""
    generator = torch.Generator().manual_seed(40_000 + seed)
    for norm in (block.norm1, block.norm2):
        load_fixed_norm(norm, generator)
    load_fixed_projections({name: getattr(block.attn, name) for name in (*PROJECTIONS, "out")}, seed)
    load_fixed_weights(feed_forward_linears(block), seed)


class BlockParts(nn.Module):
    """Named children and nothing else: the parts of a block, given to to_reference."""

    def __init__(self, **children):
        super().__init__()
        for name, child in children.items():
            self.add_module(name, child)


def block_parts(d_model, heads, d_ff, seed):
    """A block's parts (norm1, attn with q, k, v, out and heads, norm2, ffn with up and down) with
    the fixed weights, and its head count as `heads`: what to_reference reads."""
    attn = BlockParts(**{name: nn.Linear(d_model, d_model) for name in (*PROJECTIONS, "out")})
    attn.heads = heads
    parts = BlockParts(norm1=nn.LayerNorm(d_model), attn=attn, norm2=nn.LayerNorm(d_model),
                   ffn=BlockParts(up=nn.Linear(d_model, d_ff), down=nn.Linear(d_ff, d_model)))
    parts.heads = heads
    load_fixed_block(parts, seed)
    return parts.eval()


def inputs(batch, seq, d_model, seed, every_row_padded):
    """Random token vectors (pads hold random vectors too, so reading them shows) and a mask with
    a different number of real tokens per ticket; each ticket keeps at least two real tokens."""
    generator = torch.Generator().manual_seed(seed + (0 if every_row_padded else 1))
    x = torch.randn(batch, seq, d_model, generator=generator)
    pad = torch.zeros(batch, seq, dtype=torch.bool)
    for i in range(batch):
        real = seq - 1 - (i * 2) % (seq - 2) if every_row_padded else seq - (i * 2) % (seq - 1)
        pad[i, max(real, 2):] = True
    return x, pad


def expect_branches_add(forward, block, name, norm_first=True):
    """The block on tokens drawn as it runs (fresh_generator), with the output weights of its two
    branches at zero (attn.out's, and the feed-forward's narrowing Linear's) and new biases b and c:
    each branch then gives its bias alone, whatever attention and the ReLU compute, so a pre-norm
    block returns h + b + c and a post-norm one norm2(norm1(h + b) + c). No recorded result answers
    new tokens."""
    generator = fresh_generator()
    batch, seq = int(torch.randint(2, 7, (), generator=generator)), int(torch.randint(3, 13, (), generator=generator))
    h = torch.randn(batch, seq, block.norm1.normalized_shape[0], generator=generator)
    pad = torch.arange(seq)[None, :] >= torch.randint(2, seq + 1, (batch, 1), generator=generator)
    outputs = (block.attn.out, feed_forward_linears(block)[1])
    b, c = (torch.randn(linear.bias.shape, generator=generator) for linear in outputs)
    with silenced(outputs, (b, c)), torch.no_grad():
        out = call(forward, h, pad)
        want = h + b + c if norm_first else block.norm2(block.norm1(h + b) + c)
    expect(isinstance(out, torch.Tensor) and out.shape == want.shape and close_at_real(out, want, pad),
           f"{name} on new tokens, of shape {tuple(h.shape)}, with the weights of attn.out and of the "
           "feed-forward's second Linear at zero, differs from "
           + ("h + their biases" if norm_first else "norm2(norm1(h + attn.out's bias) + the other's bias)")
           + ": each branch then gives its bias alone. It is right on the check's own tokens: does it "
           "depend on more than h, pad and its weights?")


def _named(model, name):
    """model(...) under a readable name for call()'s messages."""
    def run(*args):
        return model(*args)
    run.__qualname__ = name
    return run


def close_at_real(a, b, pad):
    real = ~pad if pad is not None else torch.ones(a.shape[:2], dtype=torch.bool)
    return bool(torch.allclose(a[real], b[real], **TOLERANCE["float32"]))


def _gap_at_real(a, b, pad):
    real = ~pad if pad is not None else torch.ones(a.shape[:2], dtype=torch.bool)
    return (a[real] - b[real]).abs().max().item()


# ---------------------------------------------------------------------------------------------
# The usual mistakes, to name what went wrong
# ---------------------------------------------------------------------------------------------

STEPS = ("the attention step", "the feed-forward step")
MODES = {  # how one step of a block combines its part, its norm and the stream h
    "pre": "adds part(norm(h)) to the raw h (pre-norm: h = h + part(norm(h)))",
    "post": "normalizes the sum (post-norm: h = norm(h + part(h)))",
    "none": "does not add its input back (missing residual: h = part(norm(h)))",
    "normed": "adds the normalized h (norm(h) + part(norm(h))), where the residual carries the "
              "un-normalized h",
}
OTHER_HINTS = {
    "ignored": "the padding mask is not used: pass the mask on to attn, so that real tokens do not "
               "read the pads",
    "inverted": "the padding mask is inverted: the mask must be True at the pads (pad), not at the "
                "real tokens (~pad)",
    "swapped": "norm1 and norm2 are swapped: norm1 belongs to the attention step, norm2 to the "
               "feed-forward step",
    "no_relu": "the feed-forward network has no ReLU between its two Linear layers",
}


def mistakes(order):
    """The combinations of mistakes the check can name in a block meant to be `order` ("pre" or
    "post") in both steps, one to three at a time, fewest first: (first step, second step, mask,
    norms swapped, ReLU)."""
    modes = (order, *(m for m in MODES if m != order))
    grid = itertools.product(modes, modes, ("right", "ignored", "inverted"), (False, True), (True, False))
    count = lambda g: (g[0] != order) + (g[1] != order) + (g[2] != "right") + g[3] + (not g[4])  # noqa: E731
    return [g for g in sorted(grid, key=count) if 1 <= count(g) <= 3]


def mistake_key(combination):
    return " ".join(str(part) for part in combination)


def _diagnose(variants, out, pad, order="pre"):
    """Hints naming the mistakes whose combination reproduces `out`, or None. `variants` holds
    the output of each combination of mistakes(order) (grader.references)."""
    found = None
    for combination in mistakes(order):
        candidate = variants[mistake_key(combination)]
        if torch.isfinite(candidate[~pad]).all() and close_at_real(out, candidate, pad):
            found = combination
            break
    if found is None:
        return None
    first, second, mask, swapped, relu = found
    if first == second != order:
        hints = [f"each step (attention and feed-forward) {MODES[first]}"]
    else:
        hints = [f"{name} {MODES[mode]}" for name, mode in zip(STEPS, (first, second)) if mode != order]
    if mask != "right":
        hints.append(OTHER_HINTS[mask])
    if swapped:
        hints.append(OTHER_HINTS["swapped"])
    if not relu:
        hints.append(OTHER_HINTS["no_relu"])
    return "; ".join(hints)


# ---------------------------------------------------------------------------------------------
# Block
# ---------------------------------------------------------------------------------------------

def _structure(block, d_model, d_ff, name="Block"):
    for child in CHILDREN:
        expect(isinstance(getattr(block, child, None), nn.Module),
               f"{name} has no child module `{child}`: create self.norm1, self.attn, self.norm2 and "
               "self.ffn in __init__ (after super().__init__())")
    for child in ("norm1", "norm2"):
        norm = getattr(block, child)
        expect(isinstance(norm, nn.LayerNorm) and tuple(norm.normalized_shape) == (d_model,),
               f"block.{child} should be nn.LayerNorm({d_model}), got {norm}")
    for projection in (*PROJECTIONS, "out"):
        linear = getattr(block.attn, projection, None)
        expect(isinstance(linear, nn.Linear) and (linear.in_features, linear.out_features) == (d_model, d_model),
               f"block.attn should be MultiHead({d_model}, heads) from section 1, with nn.Linear({d_model}, "
               f"{d_model}) children q, k, v and out; its `{projection}` is {linear}")
    linears = feed_forward_linears(block)
    sizes = [(m.in_features, m.out_features) for m in linears]
    expect(sizes == [(d_model, d_ff), (d_ff, d_model)],
           f"block.ffn should be FeedForward({d_model}, {d_ff}) from section 4: nn.Linear({d_model}, {d_ff}), "
           f"then nn.Linear({d_ff}, {d_model}); its Linear layers map {sizes} (in, out)")


def _count(block, d_model, d_ff):
    want = expected_counts(d_model, d_ff)
    got = {name: sum(p.numel() for p in getattr(block, name).parameters()) for name in CHILDREN}
    total = sum(p.numel() for p in block.parameters())
    expect(got == want and total == sum(want.values()),
           f"Block({d_model}, heads, {d_ff}) has {total:,} parameters ({_table(got)}), expected "
           f"{sum(want.values()):,} ({_table(want)}). Extra parameters outside the four children, "
           "or a bias switched off, change the count.")


def _parts_work(block, x, pad, results):
    """The block's attention and feed-forward network compute PyTorch's functions: otherwise the
    mistake is in section 1 or 4, and the message says so instead of blaming the block."""
    got = call(_named(block.attn, "block.attn"), x, pad[:, None, None, :])
    want = results["attention"]
    expect(isinstance(got, torch.Tensor) and got.shape == want.shape and close_at_real(got, want, pad),
           "block.attn, your MultiHead from section 1, does not compute what nn.MultiheadAttention "
           "holding its weights computes. The block is checked with it, so fix MultiHead first: its "
           "check in 01-heads names the mistake. Save that notebook and run the load_parts cell here "
           "again. (The autograder grades this block with the course's own MultiHead.)")
    got = call(_named(block.ffn, "block.ffn"), x)
    expect(isinstance(got, torch.Tensor) and got.shape == x.shape
           and torch.allclose(got, results["feed forward"], **TOLERANCE["float32"]),
           "block.ffn, your FeedForward from section 4, does not compute Linear -> ReLU -> Linear. Fix "
           "it first: its check in 04-residuals names the mistake; save that notebook and run the "
           "load_parts cell here again. (The autograder grades this block with the course's own.)")


def _build(cls, name, d_model, heads, d_ff, seed):
    """The student's block built and checked part by part, with the fixed weights, in eval mode."""
    model = call(cls, d_model, heads, d_ff)
    expect(isinstance(model, nn.Module), f"{name}(...) should be an nn.Module, got {type(model).__name__}")
    _structure(model, d_model, d_ff, name)
    expect(getattr(model, "heads", None) == heads,
           f"{name}({d_model}, {heads}, {d_ff}).heads is {getattr(model, 'heads', 'missing')}: keep the head "
           "count as self.heads; no weight's shape shows it, and to_reference needs it")
    load_fixed_block(model, seed)
    return model.eval()


@task
def block(Block, d_model=64, heads=4, d_ff=256, batch=5, seq=9, seed=0):
    """Check the student's Block class; see the module docstring for what it proves."""
    model = _build(Block, "Block", d_model, heads, d_ff, seed)
    _count(model, d_model, d_ff)
    results = references.expected("block", "block_outputs", d_model, heads, d_ff, batch, seq, seed)
    forward = _named(model, "block")
    x, pad = inputs(batch, seq, d_model, seed, every_row_padded=True)
    others = torch.Generator().manual_seed(seed + 2)  # the neighbours' numbers, drawn in this order
    with torch.no_grad():
        _parts_work(model, x, pad, results)
        out = _keeps_shape_and_input(forward, x)
        _keeps_tickets_apart(forward, x, out, others)
        _computes_as_pytorch(forward, x, pad, results)
        _reads_real_tokens_only(forward, results, x.shape, seed, others)
        expect(close_at_real(call(forward, x), results["right, no mask"], None),
               "block(h) without pad differs from the reference without src_key_padding_mask: "
               "pad=None should mean that no key is masked")
        expect_branches_add(forward, model, "block(h, pad)")
    expect_learns(model, x, pad, what=f"Block({d_model}, {heads}, {d_ff})")
    passed()


def _keeps_shape_and_input(forward, x):
    """block(h): the shape of h, pad=None by default, and h left as it was; returns the output."""
    kept = x.clone()
    try:
        out = call(forward, x)
    except AssertionError as error:
        if "NoneType" not in str(error):
            raise
        raise AssertionError(f"{error}. block(h) without pad must work too: pad=None means no "
                             "padding, so pass mask=None on to attn") from None
    expect_shape(out, x.shape, "block(h) for h of shape (batch, seq, d_model)")
    expect(torch.equal(x, kept), "block(h) changed its input tensor h in place (`h += ...` "
           "on the caller's tensor); write h = h + ... so that a new tensor is made")
    return out


def _keeps_tickets_apart(forward, x, out, others):
    """A ticket's output does not depend on its neighbours in the batch."""
    changed = x.clone()
    changed[1:] = torch.randn(changed[1:].shape, generator=others)
    alone = call(forward, changed)
    expect(torch.allclose(out[0], alone[0], **TOLERANCE["float32"]),
           "ticket 0's output changed when only the OTHER tickets of its batch changed: the "
           "tickets of one batch are mixed. Does forward transpose h, or average over dim 0?")


def _computes_as_pytorch(forward, x, pad, results):
    """Equal to PyTorch's layer with the padding mask at every real position (a known mistake named)."""
    out = call(forward, x, pad)
    expect_shape(out, x.shape, "block(h, pad)")
    expect(torch.isfinite(out[~pad]).all(), "block(h, pad) returned NaN or inf at real "
           "positions: is the mask inverted, or were the weights changed?")
    want = results["right"]
    if not close_at_real(out, want, pad):
        hint = _diagnose(results["mistakes"], out, pad)
        raise AssertionError(
            f"block(h, pad) differs from nn.TransformerEncoderLayer(norm_first=True, "
            f"batch_first=True, dropout=0) holding your block's weights by up to "
            f"{_gap_at_real(out, want, pad):.3g} at the real positions. "
            + (f"Your numbers are what you get when {hint}." if hint else
               "Pre-norm runs attention on norm1(h) with the padding mask and adds the result "
               "to h, then the feed-forward network on norm2(h), added to h again."))


def _reads_real_tokens_only(forward, results, shape, seed, others):
    """Tickets without padding, tickets of two real tokens, and neighbours with other pads."""
    batch, seq, d_model = shape
    x2, pad2 = inputs(batch, seq, d_model, seed, every_row_padded=False)
    out2 = call(forward, x2, pad2)
    expect(torch.isfinite(out2[~pad2]).all(),
           "block(h, pad) returned NaN for a ticket without any padding: every key of that "
           "ticket was masked. The mask must be True at the pads (pad), not ~pad.")
    want2 = results["right, unpadded tickets"]
    expect(close_at_real(out2, want2, pad2),
           f"block(h, pad) differs from the reference by up to {_gap_at_real(out2, want2, pad2):.3g} "
           "on a batch with unpadded tickets")
    mixed, mixed_pad = x2.clone(), pad2.clone()
    mixed[1:] = torch.randn(mixed[1:].shape, generator=others)
    mixed_pad[1:] = mixed_pad[1:].flip(0)
    moved = call(forward, mixed, mixed_pad)
    real0 = ~pad2[0]
    expect(torch.allclose(out2[0][real0], moved[0][real0], **TOLERANCE["float32"]),
           "ticket 0's output changed when only the other tickets (and their padding) changed: "
           "the tickets of one batch are mixed. Check the mask's shape: (batch, 1, 1, seq), "
           "one row of keys per ticket.")


# ---------------------------------------------------------------------------------------------
# to_reference
# ---------------------------------------------------------------------------------------------

def _in_proj_problem(layer, source):
    """What is wrong with the layer's in_proj (q, k and v, a block of d rows each) and out_proj,
    or None."""
    attn = layer.self_attn
    d = attn.embed_dim
    rows = {name: getattr(source.attn, name) for name in PROJECTIONS}
    weight, bias = attn.in_proj_weight, attn.in_proj_bias
    if weight is None or weight.shape != (3 * d, d):
        return (f"the layer's self_attn.in_proj_weight is {None if weight is None else tuple(weight.shape)}: "
                f"it should stack the block's q, k and v weights into one ({3 * d}, {d}) tensor")

    def holds(tensor, names, part):
        return all(close(tensor[i * d:(i + 1) * d], getattr(rows[name], part), "copied") for i, name in enumerate(names))
    if not holds(weight, PROJECTIONS, "weight"):
        for order in itertools.permutations(PROJECTIONS):
            if holds(weight, order, "weight"):
                return (f"self_attn.in_proj_weight stacks the weights in the order {', '.join(order)}: "
                        "PyTorch reads rows 0 to d-1 as the queries, d to 2d-1 as the keys and 2d to "
                        "3d-1 as the values, so stack q, k, v")
        return ("self_attn.in_proj_weight does not hold the block's q, k and v weights: stack "
                "block.attn.q.weight, block.attn.k.weight and block.attn.v.weight along dim 0")
    if not holds(bias, PROJECTIONS, "bias"):
        if bias.abs().max() == 0:
            return ("self_attn.in_proj_bias is still all zeros: the biases of q, k and v go there, "
                    "stacked in the same order as the weights")
        return "self_attn.in_proj_bias should stack the biases of q, k and v, in the order of the weights"
    out = source.attn.out
    if not (close(attn.out_proj.weight, out.weight, "copied") and close(attn.out_proj.bias, out.bias, "copied")):
        return "the layer's self_attn.out_proj does not hold the block's attn.out: copy it in"
    return None


def _weights_in_place(layer, source):
    """Name the first weight of the layer that is not the block's, and where it came from."""
    lin1, lin2 = feed_forward_linears(source)
    pairs = {"norm1": (layer.norm1, source.norm1, source.norm2, "norm2"),
             "norm2": (layer.norm2, source.norm2, source.norm1, "norm1"),
             "linear1": (layer.linear1, lin1, lin2, "the second Linear (ffn.down)"),
             "linear2": (layer.linear2, lin2, lin1, "the first Linear (ffn.up)")}
    for name, (mine, right, other, other_name) in pairs.items():
        if all(close(getattr(mine, p), getattr(right, p), "copied") for p in ("weight", "bias")):
            continue
        if all(close(getattr(mine, p), getattr(other, p), "copied") for p in ("weight", "bias")):
            return (f"the layer's {name} holds the block's {other_name}: copy block.norm1 -> norm1, "
                    "block.norm2 -> norm2, ffn.up -> linear1, ffn.down -> linear2")
        return f"the layer's {name} does not hold the block's weights: copy them in"
    return _in_proj_problem(layer, source)


@task
def to_reference(to_reference, d_model=32, heads=4, d_ff=32, batch=4, seq=8, seed=0):
    """Check the student's to_reference on a block's parts built here (default d_ff == d_model,
    so that linear1 and linear2 swapped still load without a shape error)."""
    source = block_parts(d_model, heads, d_ff, seed)
    kept = {name: value.clone() for name, value in source.state_dict().items()}
    settings = _settings(source)
    x, pad = inputs(batch, seq, d_model, seed, every_row_padded=False)
    want = references.expected("block", "block_function", d_model, heads, d_ff, batch, seq, seed)
    layer = _reference_layer(to_reference, source)
    _reference_settings(layer, source, d_model, heads, d_ff)
    problem = _weights_in_place(layer, source)
    expect(problem is None, f"{problem}." if problem else "")
    got = layer(x, src_key_padding_mask=pad)  # with gradients on: the layer's plain path
    expect(close_at_real(got.detach(), want, pad),
           f"the layer's output differs from the block's by up to {_gap_at_real(got.detach(), want, pad):.3g} "
           "at the real positions, although its weights are the block's: check its activation "
           "(relu) and layer_norm_eps (1e-5)")
    with torch.no_grad():  # eval mode without gradients: PyTorch may take its fused fast path
        fast = layer(x, src_key_padding_mask=pad)
    expect(close_at_real(fast, want, pad),
           "under torch.no_grad() the layer differs from the block at the real positions")
    expect(all(torch.equal(value, kept[name]) for name, value in source.state_dict().items()),
           "to_reference changed the block it was given: copy its weights into the new layer, do not "
           "modify the block")
    expect(_settings(source) == settings,
           "to_reference changed how the block it was given trains (which weights require gradients) or "
           "its mode (train or eval): leave the block as it came, and set up the new layer only")
    passed()


def _settings(module):
    """Which weights of `module` train, and which of its parts are in training mode."""
    return ([(name, p.requires_grad) for name, p in module.named_parameters()],
            [(name, m.training) for name, m in module.named_modules()])


def _reference_layer(to_reference, source):
    """to_reference(source): PyTorch's own nn.TransformerEncoderLayer, whatever the student's block
    layout (the check's block holds its feed-forward's Linear layers under other names)."""
    try:
        layer, shared = call_with_aliases(to_reference, source)
    except AssertionError as error:
        cause = error.__cause__  # a part of the student's own layout, looked for in the check's block?
        if not (isinstance(cause, (AttributeError, IndexError, KeyError))
                or isinstance(cause, TypeError) and "subscriptable" in str(cause)):
            raise
        missing = re.search(r"has no attribute '(\w+)'", str(cause))
        looked_for = f" looking for `.{missing[1]}`" if missing else ""
        raise AssertionError(
            f"to_reference raised {type(cause).__name__}{looked_for} on a block that "
            "the check built from its own parts: norm1, attn (q, k, v, out and heads), norm2, and an "
            "ffn holding its two nn.Linear under other names than your FeedForward's, perhaps. That is "
            "what the grader does too: it builds your block with the course's own FeedForward. Your "
            "layout is yours to choose, so to_reference must not depend on it: as the task says, tell "
            "the feed-forward's two nn.Linear apart by their shapes, not by their names.") from None
    # PyTorch's class itself, whose forward is PyTorch's: with the block's weights and settings in
    # place it is right on any tokens, and no subclass can answer the check's with recorded numbers.
    expect(type(layer) is nn.TransformerEncoderLayer,
           f"to_reference should return an nn.TransformerEncoderLayer, got {type(layer).__name__}")
    expect(not shared, f"the layer's {first_names(shared)} are the block's own tensors, not copies: change "
           "the block and the layer changes with it, train one and you train both. Put copies of the "
           "numbers into the layer's own weights; do not hand it the block's Parameters or modules.")
    return layer


def _reference_settings(layer, source, d_model, heads, d_ff):
    """Pre-norm, batch first, no dropout, the block's sizes and its norms' eps."""
    expect(layer.norm_first, "the layer has norm_first=False, PyTorch's default: that is the "
           "post-norm block (the norm after the addition), another function of the same weights. "
           "Build it with norm_first=True.")
    expect(layer.self_attn.batch_first, "the layer has batch_first=False: it would read "
           "(batch, seq, d_model) as (seq, batch, d_model) and mix the tickets of one batch. "
           "Build it with batch_first=True.")
    dropping = [m.p for m in layer.modules() if isinstance(m, nn.Dropout) and m.p > 0]
    if layer.self_attn.dropout > 0:
        dropping.append(layer.self_attn.dropout)
    expect(not (layer.training and dropping),
           f"the layer is in training mode with dropout {max(dropping) if dropping else 0}: it "
           "zeroes random numbers on every call, which the block never does. Build it with "
           "dropout=0.0 (and call .eval() on it).")
    expect(layer.self_attn.embed_dim == d_model and layer.self_attn.num_heads == heads
           and layer.linear1.out_features == d_ff,
           f"the layer has d_model {layer.self_attn.embed_dim}, {layer.self_attn.num_heads} heads and "
           f"dim_feedforward {layer.linear1.out_features}; the block has {d_model}, {heads} and "
           f"{d_ff}: read them from the block (the width of its projections, block.heads, the "
           "width of ffn's first Linear)")
    # An eps of 1e-6 or 0 moves the output by about 1e-6, under any tolerance a float comparison can
    # hold to: the setting itself is compared.
    eps = [layer.norm1.eps, layer.norm2.eps]
    expect(eps == [source.norm1.eps, source.norm2.eps],
           f"the layer's norms use eps {eps[0]:g} and {eps[1]:g}, the block's {source.norm1.eps:g}: the layer "
           "computes another function, if only slightly. Give it the block's eps (layer_norm_eps).")


# ---------------------------------------------------------------------------------------------
# PostNormBlock
# ---------------------------------------------------------------------------------------------

@task
def post_norm_block(PostNormBlock, d_model=64, heads=4, d_ff=256, batch=5, seq=9, seed=0):
    """Check the student's post-norm block against nn.TransformerEncoderLayer(norm_first=False)."""
    model = _build(PostNormBlock, "PostNormBlock", d_model, heads, d_ff, seed)
    forward = _named(model, "post_norm_block")
    results = references.expected("block", "post_norm_outputs", d_model, heads, d_ff, batch, seq, seed)
    with torch.no_grad():
        for every_row_padded in (True, False):
            x, pad = inputs(batch, seq, d_model, seed, every_row_padded)
            out = call(forward, x, pad)
            expect_shape(out, (batch, seq, d_model), "post_norm_block(h, pad)")
            want = results[f"right, padded {every_row_padded}"]
            if not close_at_real(out, want, pad):
                hint = _diagnose(results[f"mistakes, padded {every_row_padded}"], out, pad, order="post")
                raise AssertionError(
                    f"post_norm_block(h, pad) differs from nn.TransformerEncoderLayer(norm_first=False, "
                    f"batch_first=True, dropout=0) holding its weights by up to {_gap_at_real(out, want, pad):.3g} "
                    "at the real positions. " + (f"Your numbers are what you get when {hint}." if hint else
                                                 "Post-norm adds each part's output to h, then normalizes "
                                                 "the sum: norm1 after attention, norm2 after the "
                                                 "feed-forward network."))
        expect(close_at_real(call(forward, x), results["right, no mask"], None),
               "post_norm_block(h) without pad differs from the reference without a mask: pad=None "
               "should mean that no key is masked")
        expect_branches_add(forward, model, "post_norm_block(h, pad)", norm_first=False)
    expect_learns(model, x, pad, what=f"PostNormBlock({d_model}, {heads}, {d_ff})")
    passed()
