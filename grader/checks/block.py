"""Checks of section 5, the pre-norm block: `Block(d_model, heads, d_ff)` and `to_reference(block)`.

What they prove:

- `block(Block)`: the children are the four PyTorch parts the section names, 49,984 parameters at
  (64, 4, 256); a ticket's output does not depend on the other tickets of its batch (the
  `batch_first` mistake); the output equals, at every real position, that of an
  `nn.TransformerEncoderLayer(norm_first=True, batch_first=True, dropout=0)` which this check
  builds ITSELF from the block's children, with `src_key_padding_mask`. The student's
  `to_reference` is never used here, so a wrong `to_reference` cannot fail `Block`.
- `to_reference(to_reference)`: on a block built here, with seeded random weights (LayerNorm
  weights and biases included, every part different from the others, so that swapping norm1 and
  norm2 or linear1 and linear2 changes the numbers), the returned layer is pre-norm, batch-first,
  without active dropout, holds the block's weights in the right places, and computes the block's
  function.

Why only real positions are compared: the vector at a pad position is never read afterwards (pad
keys are masked, and pooling skips pads), PyTorch's fused fast path is free to compute it
differently, and a correct block may leave anything there. What matters is every real token.

When the output is wrong, the check tries the usual mistakes on the same weights (post-norm, a
missing or misplaced residual, the mask ignored or inverted, the norms swapped, no ReLU) and names
the combination that reproduces the student's numbers.
"""

import itertools

import torch
from torch import nn

from grader.checks import call, expect, expect_shape, passed, task

ATOL = 1e-5
RTOL = 1e-4
CHILDREN = ("norm1", "attn", "norm2", "ffn")


# ---------------------------------------------------------------------------------------------
# Building blocks of the checks
# ---------------------------------------------------------------------------------------------

class _Block(nn.Module):
    """The check's own correct pre-norm block, for testing `to_reference`."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)  # rescales each token before attention
        self.attn = nn.MultiheadAttention(d_model, heads, dropout=0.0, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model)  # and again before the feed-forward layer
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff),  # widen each token,
                                 nn.ReLU(), nn.Linear(d_ff, d_model))  # bend, narrow back

    def forward(self, h, pad=None):
        x = self.norm1(h)
        h = h + self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        return h + self.ffn(self.norm2(h))


@task
def expected_counts(d_model, d_ff):
    """Parameters per child of a block: two LayerNorms, the attention, the feed-forward network."""
    norm = 2 * d_model
    return {"norm1": norm, "attn": 4 * d_model * d_model + 4 * d_model, "norm2": norm,
            "ffn": 2 * d_model * d_ff + d_ff + d_model}


def _table(counts):
    return ", ".join(f"{name} {n:,}" for name, n in counts.items()) + f" -> {sum(counts.values()):,}"


def _randomize_norms(block, generator):
    """LayerNorm starts at weight 1 and bias 0, which would hide norm1/norm2 swapped."""
    with torch.no_grad():
        for norm in (block.norm1, block.norm2):
            norm.weight.copy_(1 + 0.5 * torch.randn(norm.weight.shape, generator=generator))
            norm.bias.copy_(0.5 * torch.randn(norm.bias.shape, generator=generator))


def _linears(ffn):
    return [m for m in ffn.modules() if isinstance(m, nn.Linear)]


def _inputs(batch, seq, d_model, generator, every_row_padded):
    """Random token vectors (pads hold random vectors too, so reading them shows) and a mask with
    a different number of real tokens per ticket; each ticket keeps at least two real tokens."""
    x = torch.randn(batch, seq, d_model, generator=generator)
    pad = torch.zeros(batch, seq, dtype=torch.bool)
    for i in range(batch):
        real = seq - 1 - (i * 2) % (seq - 2) if every_row_padded else seq - (i * 2) % (seq - 1)
        pad[i, max(real, 2):] = True
    return x, pad


def _named(model, name):
    """model(...) under a readable name for call()'s messages."""
    def run(*args):
        return model(*args)
    run.__qualname__ = name
    return run


def _close_at_real(a, b, pad):
    real = ~pad if pad is not None else torch.ones(a.shape[:2], dtype=torch.bool)
    return bool(torch.allclose(a[real], b[real], atol=ATOL, rtol=RTOL))


def _gap_at_real(a, b, pad):
    real = ~pad if pad is not None else torch.ones(a.shape[:2], dtype=torch.bool)
    return (a[real] - b[real]).abs().max().item()


@task
def reference_layer(block):
    """An nn.TransformerEncoderLayer built here from the block's own children (not the student's
    to_reference): pre-norm, batch-first, no dropout, eval mode."""
    attn = block.attn
    first, second = _linears(block.ffn)
    layer = nn.TransformerEncoderLayer(attn.embed_dim, attn.num_heads, first.out_features,
                                       dropout=0.0, batch_first=True, norm_first=True,
                                       layer_norm_eps=block.norm1.eps)
    with torch.no_grad():
        layer.self_attn.load_state_dict(attn.state_dict())
        layer.linear1.load_state_dict(first.state_dict())
        layer.linear2.load_state_dict(second.state_dict())
        layer.norm1.load_state_dict(block.norm1.state_dict())
        layer.norm2.load_state_dict(block.norm2.state_dict())
    return layer.eval()


# ---------------------------------------------------------------------------------------------
# The usual mistakes, computed from the block's own weights, to name what went wrong
# ---------------------------------------------------------------------------------------------

STEPS = ("the attention step", "the feed-forward step")
STEP_HINTS = {
    "post": "{step} puts the norm after the addition (post-norm: h = norm(h + part(h))), where "
            "pre-norm normalizes first and adds to the raw stream: h = h + part(norm(h))",
    "none": "{step} does not add its input back (missing residual: h = part(norm(h))); "
            "write h = h + part(norm(h))",
    "normed": "{step} adds the normalized h (norm(h) + part(norm(h))): the residual must "
              "carry the un-normalized h, h = h + part(norm(h))",
}
OTHER_HINTS = {
    "ignored": "the padding mask is not used: pass key_padding_mask=pad to attn, so that real "
               "tokens do not read the pads",
    "inverted": "the padding mask is inverted: key_padding_mask must be True at the pads (pad), "
                "not at the real tokens (~pad)",
    "swapped": "norm1 and norm2 are swapped: norm1 goes before the attention, norm2 before the "
               "feed-forward network",
    "no_relu": "the feed-forward network has no ReLU between its two Linear layers",
}


def _attend(attn, x, pad):
    if attn.batch_first:
        return attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
    y = x.transpose(0, 1)
    return attn(y, y, y, key_padding_mask=pad, need_weights=False)[0].transpose(0, 1)


def _variant(block, h, pad, first="pre", second="pre", mask="right", swapped=False, relu=True):
    norm_a, norm_f = (block.norm2, block.norm1) if swapped else (block.norm1, block.norm2)
    lin1, lin2 = _linears(block.ffn)
    key_pad = {"right": pad, "ignored": None, "inverted": None if pad is None else ~pad}[mask]

    def attention(x):
        return _attend(block.attn, x, key_pad)

    def feed_forward(x):
        hidden = lin1(x)
        return lin2(torch.relu(hidden) if relu else hidden)

    def step(h, part, norm, mode):
        if mode == "pre":
            return h + part(norm(h))
        if mode == "post":
            return norm(h + part(h))
        if mode == "none":
            return part(norm(h))
        return norm(h) + part(norm(h))  # "normed"

    h = step(h, attention, norm_a, first)
    return step(h, feed_forward, norm_f, second)


def _diagnose(block, h, pad, out):
    """Hints naming the mistakes whose combination reproduces `out`, or None."""
    modes = ("pre", "post", "none", "normed")
    grid = itertools.product(modes, modes, ("right", "ignored", "inverted"), (False, True), (True, False))
    grid = sorted(grid, key=lambda g: (g[0] != "pre") + (g[1] != "pre") + (g[2] != "right") + g[3] + (not g[4]))
    found = None
    for first, second, mask, swapped, relu in grid[1:]:  # grid[0] is the right block
        try:
            candidate = _variant(block, h, pad, first, second, mask, swapped, relu)
        except Exception:  # noqa: BLE001 - a variant that cannot run is simply not the answer
            continue
        if torch.isfinite(candidate[~pad]).all() and _close_at_real(out, candidate, pad):
            found = (first, second, mask, swapped, relu)
            break
    if found is None:
        return None
    first, second, mask, swapped, relu = found
    hints = []
    if first == second != "pre":
        hints.append(STEP_HINTS[first].format(step="each step (attention and feed-forward)"))
    else:
        hints += [STEP_HINTS[mode].format(step=name) for name, mode in zip(STEPS, (first, second))
                  if mode != "pre"]
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

def _structure(block, d_model, heads, d_ff):
    for name in CHILDREN:
        expect(isinstance(getattr(block, name, None), nn.Module),
               f"Block has no child module `{name}`: create self.norm1, self.attn, self.norm2 and "
               "self.ffn in __init__ (after super().__init__())")
    for name in ("norm1", "norm2"):
        norm = getattr(block, name)
        expect(isinstance(norm, nn.LayerNorm) and tuple(norm.normalized_shape) == (d_model,),
               f"block.{name} should be nn.LayerNorm({d_model}), got {norm}")
    attn = block.attn
    expect(isinstance(attn, nn.MultiheadAttention),
           f"block.attn should be nn.MultiheadAttention({d_model}, {heads}, batch_first=True, "
           f"dropout=0), got {type(attn).__name__}")
    expect(attn.embed_dim == d_model and attn.num_heads == heads,
           f"block.attn has embed_dim {attn.embed_dim} and {attn.num_heads} heads, expected "
           f"{d_model} and {heads}: build it as nn.MultiheadAttention(d_model, heads, ...)")
    expect(attn.dropout == 0, f"block.attn has dropout {attn.dropout}; the block has no dropout "
           "(dropout=0), so that it is one fixed function the reference can match")
    linears = _linears(block.ffn)
    expect(len(linears) == 2, f"block.ffn should hold two nn.Linear layers (d_model -> d_ff, "
           f"d_ff -> d_model) with a ReLU between, found {len(linears)} Linear layers")
    first, second = linears
    expect((first.in_features, first.out_features, second.in_features, second.out_features)
           == (d_model, d_ff, d_ff, d_model),
           f"block.ffn's Linear layers are {first.in_features}->{first.out_features} and "
           f"{second.in_features}->{second.out_features}, expected {d_model}->{d_ff} and "
           f"{d_ff}->{d_model}")


def _count(block, d_model, d_ff):
    want = expected_counts(d_model, d_ff)
    got = {name: sum(p.numel() for p in getattr(block, name).parameters()) for name in CHILDREN}
    total = sum(p.numel() for p in block.parameters())
    expect(got == want and total == sum(want.values()),
           f"Block({d_model}, heads, {d_ff}) has {total:,} parameters ({_table(got)}), expected "
           f"{sum(want.values()):,} ({_table(want)}). Extra parameters outside the four children, "
           "or a bias switched off, change the count.")


@task
def block(Block, d_model=64, heads=4, d_ff=256, batch=5, seq=9, seed=0):
    """Check the student's Block class; see the module docstring for what it proves."""
    torch.manual_seed(seed)
    model = call(Block, d_model, heads, d_ff)
    expect(isinstance(model, nn.Module), f"Block(...) should be an nn.Module, got {type(model).__name__}")
    _structure(model, d_model, heads, d_ff)
    _count(model, d_model, d_ff)
    generator = torch.Generator().manual_seed(seed)
    _randomize_norms(model, generator)
    model.eval()
    forward = _named(model, "block")
    x, pad = _inputs(batch, seq, d_model, generator, every_row_padded=True)

    with torch.no_grad():
        # 1. Shape, default pad=None, and the input left alone.
        kept = x.clone()
        out = call(forward, x)
        expect_shape(out, (batch, seq, d_model), "block(h) for h of shape (batch, seq, d_model)")
        expect(torch.equal(x, kept), "block(h) changed its input tensor h in place (`h += ...` "
               "on the caller's tensor); write h = h + ... so that a new tensor is made")

        # 2. A ticket's output does not depend on its neighbours (batch_first).
        others = x.clone()
        others[1:] = torch.randn(others[1:].shape, generator=generator)
        alone = call(forward, others)
        expect(torch.allclose(out[0], alone[0], atol=ATOL, rtol=RTOL),
               "ticket 0's output changed when only the OTHER tickets of its batch changed: the "
               "tickets of one batch are mixed. Did you build nn.MultiheadAttention without "
               "batch_first=True? Then it reads (batch, seq, d_model) as (seq, batch, d_model) and "
               "attends across the tickets of the batch instead of across the words of a ticket.")

        # 3. Equal to PyTorch's layer, with the padding mask, at every real position.
        reference = reference_layer(model)
        out = call(forward, x, pad)
        expect_shape(out, (batch, seq, d_model), "block(h, pad)")
        expect(torch.isfinite(out[~pad]).all(), "block(h, pad) returned NaN or inf at real "
               "positions: is the mask inverted, or were the weights changed?")
        want = reference(x, src_key_padding_mask=pad)
        if not _close_at_real(out, want, pad):
            gap = _gap_at_real(out, want, pad)
            hint = _diagnose(model, x, pad, out)
            raise AssertionError(
                f"block(h, pad) differs from nn.TransformerEncoderLayer(norm_first=True, "
                f"batch_first=True, dropout=0) holding your block's weights by up to {gap:.3g} at "
                "the real positions. " + (f"Your numbers are what you get when {hint}." if hint else
                "Pre-norm is h = h + attn(norm1(h)) with key_padding_mask=pad, then "
                "h = h + ffn(norm2(h))."))

        # 4. Tickets without padding, tickets of two real tokens, and neighbours with other pads.
        x2, pad2 = _inputs(batch, seq, d_model, generator, every_row_padded=False)
        out2 = call(forward, x2, pad2)
        expect(torch.isfinite(out2[~pad2]).all(),
               "block(h, pad) returned NaN for a ticket without any padding: every key of that "
               "ticket was masked. key_padding_mask must be True at the pads (pad), not ~pad.")
        expect(_close_at_real(out2, reference(x2, src_key_padding_mask=pad2), pad2),
               f"block(h, pad) differs from the reference by up to "
               f"{_gap_at_real(out2, reference(x2, src_key_padding_mask=pad2), pad2):.3g} on a "
               "batch with unpadded tickets")
        mixed, mixed_pad = x2.clone(), pad2.clone()
        mixed[1:] = torch.randn(mixed[1:].shape, generator=generator)
        mixed_pad[1:] = mixed_pad[1:].flip(0)
        moved = call(forward, mixed, mixed_pad)
        real0 = ~pad2[0]
        expect(torch.allclose(out2[0][real0], moved[0][real0], atol=ATOL, rtol=RTOL),
               "ticket 0's output changed when only the other tickets (and their padding) changed: "
               "the tickets of one batch are mixed. Check batch_first=True and the mask's shape "
               "(batch, seq).")

        # 5. Without a mask, equal to the reference without a mask.
        expect(_close_at_real(call(forward, x), reference(x), None),
               "block(h) without pad differs from the reference without src_key_padding_mask: "
               "pad=None should mean that no key is masked")
    passed()


# ---------------------------------------------------------------------------------------------
# to_reference
# ---------------------------------------------------------------------------------------------

def _same(a, b):
    return a.shape == b.shape and torch.allclose(a, b)


def _weights_in_place(layer, source):
    """Name the first weight of the layer that is not the block's, and where it came from."""
    lin1, lin2 = _linears(source.ffn)
    pairs = {"norm1": (layer.norm1, source.norm1, source.norm2, "norm2"),
             "norm2": (layer.norm2, source.norm2, source.norm1, "norm1"),
             "linear1": (layer.linear1, lin1, lin2, "linear2 (ffn[2])"),
             "linear2": (layer.linear2, lin2, lin1, "linear1 (ffn[0])")}
    for name, (mine, right, other, other_name) in pairs.items():
        if all(_same(getattr(mine, p), getattr(right, p)) for p in ("weight", "bias")):
            continue
        if all(_same(getattr(mine, p), getattr(other, p)) for p in ("weight", "bias")):
            return (f"the layer's {name} holds the block's {other_name.split()[0]} weights: "
                    f"{name} and {other_name.split()[0]} are swapped (copy block.norm1 -> norm1, "
                    "block.norm2 -> norm2, ffn[0] -> linear1, ffn[2] -> linear2)")
        return f"the layer's {name} does not hold the block's weights: copy them in"
    theirs, ours = layer.self_attn.state_dict(), source.attn.state_dict()
    for key, value in ours.items():
        if key not in theirs or not _same(theirs[key], value):
            return (f"the layer's self_attn.{key} is not the block's attn.{key}: load "
                    "block.attn.state_dict() into layer.self_attn")
    return None


@task
def to_reference(to_reference, d_model=32, heads=4, d_ff=32, batch=4, seq=8, seed=0):
    """Check the student's to_reference on a correct block built here (default d_ff == d_model,
    so that linear1 and linear2 swapped still load without a shape error)."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    source = _Block(d_model, heads, d_ff)
    _randomize_norms(source, generator)
    source.eval()
    x, pad = _inputs(batch, seq, d_model, generator, every_row_padded=False)
    with torch.no_grad():
        want = source(x, pad)
    layer = call(to_reference, source)
    expect(isinstance(layer, nn.TransformerEncoderLayer),
           f"to_reference should return an nn.TransformerEncoderLayer, got {type(layer).__name__}")
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
           f"{d_ff}: read them from block.attn.embed_dim, block.attn.num_heads and "
           "block.ffn[0].out_features")
    problem = _weights_in_place(layer, source)
    expect(problem is None, f"{problem}." if problem else "")
    got = layer(x, src_key_padding_mask=pad)  # with gradients on: the layer's plain path
    expect(_close_at_real(got.detach(), want, pad),
           f"the layer's output differs from the block's by up to {_gap_at_real(got.detach(), want, pad):.3g} "
           "at the real positions, although its weights are the block's: check its activation "
           "(relu) and layer_norm_eps (1e-5)")
    with torch.no_grad():  # eval mode without gradients: PyTorch may take its fused fast path
        fast = layer(x, src_key_padding_mask=pad)
        again = source(x, pad)
    expect(_close_at_real(fast, want, pad),
           "under torch.no_grad() the layer differs from the block at the real positions")
    expect(torch.equal(again, want), "to_reference changed the block it was given: copy its "
           "weights into the new layer, do not modify the block")
    passed()
