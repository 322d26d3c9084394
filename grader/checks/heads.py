"""Checks of section 1, multi-head attention by hand.

One public function per graded name: split_heads, merge_heads, key_padding_mask, multi_head.
Each builds its own small inputs from a seed, runs the student's code through `call`, prints
"Check passed" or raises AssertionError naming the likely mistake. The masks are compared with
grader.references, right and with the usual slips. The MultiHead check puts fixed weights in the
student's q, k, v and out, compares the output with nn.MultiheadAttention holding them (from
grader.references), and when they differ, with the usual mistakes (no mask, the wrong scale,
projections swapped, no output projection) to say which one the output matches. Each check ends on
tickets drawn as it runs (fresh_tickets), where no recorded result can answer for the student's
code: the masks against where the check put the pads (after the words, before them, and between
them, which no mask built from a count of words or from the first PAD on gets right), MultiHead
with its query and key weights at zero, where every token reads the mean of its ticket's values.
"""

import itertools

import torch
from torch import nn

from grader import references
from grader.checks import (TOLERANCE, call, close, expect, expect_close, expect_learns, expect_shape, fresh_generator,
                           load_fixed_linears, passed, silenced, task)
from ticketnet import PAD, UNK

_TRANSPOSE_HINT = ("did you `view` (or `reshape`) straight to (b, heads, s, dh) without `transpose`? "
                   "That keeps every shape but cuts the numbers in memory order, so a head's rows hold "
                   "whole tokens, four at a time, instead of one slice of every token. View to "
                   "(b, s, heads, dh), then `transpose(1, 2)`.")


def fresh_tickets(batch=4, seq=12):
    """tickets_with_pads_anywhere drawn as the check runs (fresh_generator): no recorded result
    answers them."""
    return tickets_with_pads_anywhere(fresh_generator(), batch, seq)


def tickets_with_pads_anywhere(generator, batch=4, seq=12):
    """Token ids (batch, seq) drawn from `generator`, and `pads`, (batch, seq) True where an id is
    PAD. The PADs are not only at the end: of the first three tickets (in an order drawn too) one
    has its PADs after its words, one before them, and one between two of them; the others have
    PADs drawn anywhere. Every ticket keeps a real word (and one UNK), so no row of attention is
    blocked entirely. Needs batch >= 3 and seq >= 3."""
    pads = torch.zeros(batch, seq, dtype=torch.bool)
    kinds = ["end", "start", "middle"] + ["anywhere"] * (batch - 3)
    for row, r in enumerate(torch.randperm(batch, generator=generator).tolist()):
        kind = kinds[row]
        if kind in ("end", "start"):
            real = int(torch.randint(1, seq, (), generator=generator))  # at least one PAD, one word
            if kind == "end":
                pads[r, real:] = True
            else:
                pads[r, :seq - real] = True
        else:
            pads[r] = torch.rand(seq, generator=generator) < 0.4
            first, between, last = torch.randperm(seq, generator=generator)[:3].sort().values.tolist()
            pads[r, first] = pads[r, last] = False  # a word on each side of a PAD
            if kind == "middle":
                pads[r, between] = True
    ids = torch.randint(2, 60, (batch, seq), generator=generator)
    for r in range(batch):
        words = (~pads[r]).nonzero().flatten()
        ids[r, words[int(torch.randint(len(words), (), generator=generator))]] = UNK  # a real token
    ids[pads] = PAD
    return ids, ids == PAD


def pads_from_the_end(ids):
    """{what the mask holds: (b, s) bool} for two masks that are right only when every PAD comes
    after the words: one True at the last n positions of a ticket with n PADs (a count), one True
    from a ticket's first PAD on."""
    s = ids.shape[1]
    count = (ids == PAD).sum(1, keepdim=True)
    return {"count": torch.arange(s)[None, :] >= s - count, "first PAD on": (ids == PAD).cumsum(1) > 0}


def _pads_anywhere(task, out, pads, ids, blocked="the mask"):
    """The message for a mask's pads `out` (b, s) that are right on the check's first tickets, whose
    PADs come last, and differ from `pads` on tickets_with_pads_anywhere; `blocked` names what must
    hold the PADs."""
    t, p = (out != pads).nonzero()[0].tolist()
    where = (f"(ticket {t}, position {p}, token id {ids[t, p].item()}, is wrong). {blocked[0].upper()}{blocked[1:]} "
             f"must be True exactly where an id is PAD (PAD = {PAD}), wherever it is in the ticket.")
    start = (f"{task} is right on the check's first tickets, whose PADs all come after their words, but "
             "not on others whose PADs also come before or between words: ")
    ending = pads_from_the_end(ids)
    if torch.equal(out, ending["count"]):
        return (start + "it blocks the last n positions of a ticket with n PADs, as if every PAD came at "
                "the end. A count of PADs (or of words) says how many a ticket has, not where they "
                "are " + where)
    if torch.equal(out, ending["first PAD on"]):
        return (start + "it blocks every position from a ticket's first PAD on, as if nothing but PADs "
                "came after it, so a word after a PAD is blocked too " + where)
    return start + "it does not block exactly the PADs " + where


def seeded_randn(shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def load_fixed_projections(projections, seed):
    """Give the layers {name: nn.Linear} weights drawn from a private generator in the order q, k,
    v, out, the way nn.Linear draws its own: the layer's output then depends on the check's settings
    alone, and grader.references can hold it."""
    load_fixed_linears([projections[name] for name in ("q", "k", "v", "out")],
                       torch.Generator().manual_seed(30_000 + seed))


def padded_ids(lengths, seq=None, seed=0, vocab_size=60):
    """Token ids (len(lengths), seq): real ids 2.. (one UNK per row), PAD after each length."""
    seq = seq or max(lengths)
    g = torch.Generator().manual_seed(seed)
    ids = torch.full((len(lengths), seq), PAD, dtype=torch.long)
    for row, length in enumerate(lengths):
        ids[row, :length] = torch.randint(2, vocab_size, (length,), generator=g)
        ids[row, length // 2] = UNK  # an unknown word is a real token, never a pad
    return ids


# ---------------------------------------------------------------------------------------------
# split_heads
# ---------------------------------------------------------------------------------------------

@task
def split_heads(split_heads, batch=2, seq=6, d_model=64, heads=4, seed=0):
    """(b, s, d) -> (b, heads, s, d // heads), head i holding features i*dh:(i+1)*dh of every token."""
    h = seeded_randn((batch, seq, d_model), seed)
    before = h.clone()
    dh = d_model // heads
    out = call(split_heads, h, heads)
    expect(isinstance(out, torch.Tensor), f"split_heads should return a tensor, got {type(out).__name__}")
    if tuple(out.shape) == (batch, seq, heads, dh) and seq != heads:
        raise AssertionError(f"split_heads(h, {heads}) on h of shape {(batch, seq, d_model)} returned "
                             f"{tuple(out.shape)} = (b, s, heads, dh); attention needs the heads before "
                             "the tokens, (b, heads, s, dh): add `transpose(1, 2)` after the view.")
    expect_shape(out, (batch, heads, seq, dh), f"split_heads(h, {heads}) with h of shape {(batch, seq, d_model)}")
    expect(torch.equal(h, before), "split_heads changed its input in place; return a new view instead")
    for i in range(heads):
        want = h[..., i * dh:(i + 1) * dh]  # (b, s, dh)
        if not torch.allclose(out[:, i], want, **TOLERANCE["copied"]):
            token = next(t for t in range(seq) if not torch.allclose(out[:, i, t], want[:, t], **TOLERANCE["copied"]))
            hint = _TRANSPOSE_HINT if torch.equal(out, h.reshape(batch, heads, seq, dh)) else (
                "Head i must be features i*dh to (i+1)*dh - 1 of every token: view to "
                "(b, s, heads, dh), then `transpose(1, 2)`.")
            raise AssertionError(f"head {i} does not hold features {i * dh}-{(i + 1) * dh - 1} of token "
                                 f"{token} (row {token} of head {i} should be h[:, {token}, "
                                 f"{i * dh}:{(i + 1) * dh}]): {hint}")
    passed()


# ---------------------------------------------------------------------------------------------
# merge_heads
# ---------------------------------------------------------------------------------------------

@task
def merge_heads(merge_heads, batch=2, seq=6, heads=4, dh=16, seed=0, contiguous=True):
    """(b, heads, s, dh) -> (b, s, heads * dh), the inverse of the split.

    contiguous=True passes a tensor laid out as attention returns it (heads, then tokens, in
    memory), which is the case where `transpose(1, 2).view` is refused."""
    d = heads * dh
    h = seeded_randn((batch, seq, d), seed)
    # head i holds features i*dh:(i+1)*dh of every token, laid out as a split leaves them
    split = torch.stack([h[..., i * dh:(i + 1) * dh] for i in range(heads)], dim=2).transpose(1, 2)
    if contiguous:
        split = split.contiguous()
    try:
        out = call(merge_heads, split)
    except AssertionError as error:
        if "view size is not compatible" in str(error):
            raise AssertionError(f"{error}\nAfter `transpose(1, 2)` the numbers of one token are no "
                                 "longer next to each other in memory, so `view` refuses to join them: "
                                 "use `reshape`, `flatten(2)` or `.contiguous().view(...)`.") from None
        raise
    expect(isinstance(out, torch.Tensor), f"merge_heads should return a tensor, got {type(out).__name__}")
    expect_shape(out, (batch, seq, d), f"merge_heads(x) with x of shape {(batch, heads, seq, dh)}")
    if not torch.allclose(out, h, **TOLERANCE["copied"]):
        if torch.allclose(out, split.reshape(batch, seq, d), **TOLERANCE["copied"]):
            raise AssertionError(
                "merge_heads returned the right shape but mixes tokens: token 0's features hold head 0's "
                "rows 0, 1, ... instead of row 0 of every head. You reshaped (b, heads, s, dh) straight "
                "to (b, s, d); `transpose(1, 2)` first, so the heads come after the tokens, then reshape.")
        raise AssertionError(f"merge_heads is not the inverse of split_heads: features i*{dh} to "
                             f"(i+1)*{dh} - 1 of token t must be row t of head i. Undo the split's two "
                             "steps in the opposite order: tokens in front of the heads again, then one "
                             "row per token.")
    passed()


# ---------------------------------------------------------------------------------------------
# key_padding_mask
# ---------------------------------------------------------------------------------------------

_CHANGED_IDS = ("{} changed the ids it was given: an operation ending in `_` (such as eq_) works in "
                "place and overwrote the caller's tokens. Build the mask as a new tensor.")


@task
def key_padding_mask(key_padding_mask, lengths=(5, 2, 7), seq=None, seed=0):
    """token ids (b, s) -> bool (b, 1, 1, s), True exactly at the PAD keys."""
    lengths = tuple(lengths)
    ids = padded_ids(lengths, seq, seed)
    b, s = ids.shape
    masks = references.expected("heads", "padding_masks", lengths, seq, seed)
    kept = ids.clone()
    out = call(key_padding_mask, ids)
    expect(torch.equal(ids, kept), _CHANGED_IDS.format("key_padding_mask"))
    expect(isinstance(out, torch.Tensor), f"key_padding_mask should return a tensor, got {type(out).__name__}")
    shape = tuple(out.shape)
    if shape != (b, 1, 1, s):
        if shape in {(b, 1, s), (b, s)}:
            why = (f"Broadcasting lines shapes up from the right, so against (b, heads, s, s) scores a "
                   f"{'(b, 1, s)' if len(shape) == 3 else '(b, s)'} mask puts its batch where the "
                   f"{'heads' if len(shape) == 3 else 'query positions'} are. ")
        elif shape == (b, 1, s, 1):
            why = "The pads must lie along the last dimension, the keys; (b, 1, s, 1) blocks queries. "
        else:
            why = ""
        raise AssertionError(f"key_padding_mask(ids) on ids of shape {(b, s)} returned shape {shape}, "
                             f"expected {(b, 1, 1, s)} = (b, 1, 1, s) so that it broadcasts over the heads "
                             f"and the query positions. {why}The mask needs a size-1 dimension for the "
                             "heads and one for the queries, both between the batch and the keys.")
    expect(out.dtype == torch.bool,
           f"key_padding_mask returned dtype {out.dtype}; the mask must be bool (True at PAD): "
           "ticketnet.attention and masked_fill refuse other dtypes. A comparison gives bools.")
    pad = masks["right"]
    if not torch.equal(out, pad):
        if torch.equal(out, masks["inverted"]):
            raise AssertionError("the mask is inverted: it is True at the real tokens and False at the "
                                 "pads. It must be True where a key is blocked, i.e. at PAD: ids == PAD.")
        if torch.equal(out, masks["unknown words too"]):
            raise AssertionError(f"the mask is also True at the unknown word (id {UNK}); an unknown word is "
                                 f"a real token that attention must read. Block only PAD (id {PAD}).")
        wrong = (out != pad).nonzero()[0].tolist()
        raise AssertionError(f"the mask is wrong at ticket {wrong[0]}, position {wrong[-1]} (token id "
                             f"{ids[wrong[0], wrong[-1]].item()}): it must be True exactly where ids == PAD "
                             f"(PAD = {PAD}).")
    # the check's own tickets with PADs before and between words (seeded: the same message in the
    # notebook and when grading), then new ones drawn as it runs
    for ids, pads in (tickets_with_pads_anywhere(torch.Generator().manual_seed(40_000 + seed), seq=10),
                      fresh_tickets()):
        out = call(key_padding_mask, ids)
        expect(isinstance(out, torch.Tensor) and out.shape == (len(ids), 1, 1, ids.shape[1]) and out.dtype == torch.bool,
               f"key_padding_mask is right on the check's first tickets but not on others, with "
               f"{(~pads).sum(1).tolist()} real tokens: it must return a bool (b, 1, 1, s) mask, True "
               "exactly where ids == PAD, whatever the tickets.")
        if not torch.equal(out[:, 0, 0], pads):
            raise AssertionError(_pads_anywhere("key_padding_mask(ids)", out[:, 0, 0], pads, ids))
    passed()


# ---------------------------------------------------------------------------------------------
# causal_mask: the padding mask, and no key after its query
# ---------------------------------------------------------------------------------------------

CAUSAL_SHAPES = {
    3: "one dimension short: keep a size-1 dimension for the heads, (b, 1, s, s)",
    2: "the causal part alone, the same for every ticket: combine it with each ticket's pads, "
       "which gives one (s, s) table per ticket, (b, 1, s, s)",
}


@task
def causal_mask(causal_mask, lengths=(5, 2, 7), seq=None, seed=0):
    """token ids (b, s) -> bool (b, 1, s, s), True where key j is a PAD or comes after query i."""
    lengths = tuple(lengths)
    ids = padded_ids(lengths, seq, seed)
    b, s = ids.shape
    masks = references.expected("heads", "causal_masks", lengths, seq, seed)
    kept = ids.clone()
    out = call(causal_mask, ids)
    expect(torch.equal(ids, kept), _CHANGED_IDS.format("causal_mask"))
    expect(isinstance(out, torch.Tensor), f"causal_mask should return a tensor, got {type(out).__name__}")
    shape = tuple(out.shape)
    if shape != (b, 1, s, s):
        why = ("that is the padding mask's shape: the causal part differs from one query to the next, "
               "so it needs one row per query, (b, 1, s, s)" if shape == (b, 1, 1, s) else
               CAUSAL_SHAPES.get(len(shape), "expected (b, 1, s, s): batch, heads, queries, keys"))
        raise AssertionError(f"causal_mask(ids) on ids of shape {(b, s)} returned shape {shape}: {why}.")
    expect(out.dtype == torch.bool, f"causal_mask returned dtype {out.dtype}; the mask must be bool "
           "(True where a key is blocked): ticketnet.attention and masked_fill refuse other dtypes.")
    want = masks["right"]
    if torch.equal(out, want):
        # the check's own tickets with PADs before and between words (seeded: the same message in
        # the notebook and when grading), then new ones drawn as it runs
        for ids, pads in (tickets_with_pads_anywhere(torch.Generator().manual_seed(40_000 + seed), seq=10),
                          fresh_tickets()):
            _causal_on_pads_anywhere(causal_mask, ids, pads)
        passed()
        return
    known = [
        ("inverted", "the mask is inverted: it is True where a query may read. True must mean blocked: "
                     "the pads and the keys after the query"),
        ("pads not blocked", "the pads are not blocked: combine the causal part with ids == PAD "
                             "along the keys, with | (a key is blocked if it is later OR a pad)"),
        ("no causal part", "there is no causal part: each query still reads the keys after it. "
                           "Block key j wherever j > i (torch.triu with diagonal=1)"),
        ("diagonal blocked",
         "the diagonal is blocked too: each token must read itself (diagonal=1). Otherwise the first "
         "token has no key left, and its softmax row is NaN"),
        ("transposed",
         "the causal part is transposed: it blocks the keys BEFORE each query. Rows are queries, "
         "columns keys, and key j must be blocked when j > i (the upper triangle)"),
        ("pads as queries",
         "the pads are blocked as queries (rows) instead of keys (columns): the pads lie along the last "
         "dimension, the keys, as in key_padding_mask"),
        ("and", "the two parts are combined with &, which blocks only keys that are both "
                "later and pads: a key is blocked if it is later OR a pad, |"),
    ]
    for wrong, why in known:
        if torch.equal(out, masks[wrong]):
            raise AssertionError(f"causal_mask(ids): {why}.")
    where = (out != want).nonzero()[0].tolist()
    raise AssertionError(f"causal_mask(ids) is wrong at ticket {where[0]}, query {where[2]}, key {where[3]}: "
                         f"it should be {bool(want[tuple(where)])} there (key {where[3]} is "
                         f"{'a pad' if ids[where[0], where[3]] == PAD else 'a real token'}, "
                         f"{'after' if where[3] > where[2] else 'not after'} the query).")


def _causal_on_pads_anywhere(causal_mask, ids, pads):
    """causal_mask on tickets whose PADs are not only at the end: the keys after the query, and
    exactly the PAD keys."""
    positions = torch.arange(ids.shape[1])
    later = positions[None, :] > positions[:, None]  # [query, key]: the key comes after the query
    out = call(causal_mask, ids)
    expect(isinstance(out, torch.Tensor) and out.shape == (len(ids), 1, *later.shape) and out.dtype == torch.bool,
           f"causal_mask is right on the check's first tickets but not on others, with "
           f"{(~pads).sum(1).tolist()} real tokens: it must return a bool (b, 1, s, s) mask, True "
           "exactly where the key is a PAD or comes after the query, whatever the tickets.")
    if torch.equal(out[:, 0], later | pads[:, None, :]):
        return
    # the keys blocked in the last query's row are the pads alone: no key comes after it
    keys = out[:, 0, -1]
    if torch.equal(out[:, 0], later | keys[:, None, :]):
        raise AssertionError(_pads_anywhere("causal_mask(ids)", keys, pads, ids,
                                            blocked="its padding part, along the keys,"))
    where = (out[:, 0] != (later | pads[:, None, :])).nonzero()[0].tolist()
    raise AssertionError(
        f"causal_mask is right on the check's first tickets but not on others, whose PADs also come "
        f"before or between words: it is wrong at ticket {where[0]}, query {where[1]}, key "
        f"{where[2]}. It must be True exactly where the key is a PAD (ids == PAD, wherever it "
        "is) or comes after the query, whatever the tickets.")


# ---------------------------------------------------------------------------------------------
# MultiHead
# ---------------------------------------------------------------------------------------------

def _diagnose(results, heads, d, out):
    """A hint naming the mistake whose output `out` matches, or None (a correct output gives None)."""
    def same(candidate):
        """Equal wherever the candidate is defined (a row whose keys are all blocked is NaN in ours,
        and some kernels return another filler there)."""
        if candidate.shape != out.shape:
            return False
        defined = torch.isfinite(candidate)
        return bool(defined.any()) and torch.allclose(candidate[defined], out[defined], **TOLERANCE["float32"])

    if same(results["no mask"]):
        return ("It equals attention WITHOUT the padding mask: pass `mask` on to attention, so that no "
                "token reads the pads.")
    if same(results["inverted mask"]):
        return ("It equals attention that reads ONLY the pads. The mask is True at pads; if you use "
                "F.scaled_dot_product_attention, its bool attn_mask means the opposite (True = may "
                "attend), so pass attn_mask=~mask.")
    if heads > 1 and same(results["scaled by d_model"]):
        return (f"It equals attention with scores divided by sqrt(d_model) = sqrt({d}). Each head "
                f"compares vectors of dh = {d // heads} numbers: divide by sqrt(dh).")
    if same(results["no output projection"]):
        return "It equals the merged heads before the output projection: apply self.out to them."
    for sources in itertools.product("qkv", repeat=3):
        if sources != ("q", "k", "v") and same(results["sources " + "".join(sources)]):
            return (f"It equals attention with queries from self.{sources[0]}, keys from self.{sources[1]} "
                    f"and values from self.{sources[2]}: queries come from self.q, keys from self.k, "
                    "values from self.v.")
    if torch.isnan(out).any():
        return ("It holds NaN: some row of scores was blocked entirely. Is the mask True at the pads "
                "and passed the right way round?")
    return None


@task
def multi_head(MultiHead, d_model=64, heads=4, lengths=(5, 24, 11), seed=0, bad_heads=5):
    """The whole layer: children, parameter count, shape, every word read, nn.MultiheadAttention,
    and a ValueError for a head count that does not divide d_model.

    The first ticket must be short enough (max(lengths) >= heads * lengths[0]) that a split
    without transpose cannot read its last word."""
    name = f"MultiHead({d_model}, {heads})"
    lengths = tuple(lengths)
    layer = call(MultiHead, d_model, heads)
    _four_projections(MultiHead, layer, name, d_model)
    load_fixed_projections({name: getattr(layer, name) for name in ("q", "k", "v", "out")}, seed)
    ids = padded_ids(lengths, seed=seed)
    b, s = ids.shape
    mask = (ids == PAD)[:, None, None, :]
    h = seeded_randn((b, s, d_model), seed + 1)
    results = references.expected("heads", "multi_head", d_model, heads, lengths, seed)
    with torch.no_grad():
        _computes_as_pytorch(layer, name, h, mask, lengths, results, heads, d_model, seed)
        _reads_evenly(layer, name, d_model)
    expect_learns(layer, h, mask, what=f"MultiHead({d_model}, {heads})")
    _bad_head_count(MultiHead, d_model, bad_heads)
    passed()


def _four_projections(MultiHead, layer, name, d_model):
    """Four nn.Linear(d_model, d_model) with biases, q, k, v and out, and 4d² + 4d parameters for
    any head count."""
    expect(isinstance(layer, nn.Module), f"{name} should be an nn.Module, got {type(layer).__name__}")
    for child in ("q", "k", "v", "out"):
        linear = getattr(layer, child, None)
        expect(isinstance(linear, nn.Linear),
               f"{name} has no nn.Linear called `{child}`: the layer needs self.q, self.k, self.v and self.out, "
               f"each nn.Linear(d_model, d_model)" + (f" (found {type(linear).__name__})" if linear is not None else ""))
        expect(linear.in_features == d_model and linear.out_features == d_model,
               f"self.{child} maps {linear.in_features} -> {linear.out_features} numbers; every projection "
               f"maps d_model -> d_model ({d_model} -> {d_model}), whatever the head count")
        expect(linear.bias is not None, f"self.{child} has no bias; keep nn.Linear's default bias=True")

    want = 4 * d_model * d_model + 4 * d_model
    for n in (1, 4, 8):
        count = sum(p.numel() for p in call(MultiHead, d_model, n).parameters())
        expect(count == want, f"MultiHead({d_model}, {n}) holds {count:,} parameters, expected 4d² + 4d = "
                              f"{want:,} for any head count: four {d_model} x {d_model} weights and four "
                              f"biases, no parameters of its own per head")


def _computes_as_pytorch(layer, name, h, mask, lengths, results, heads, d_model, seed):
    """nn.MultiheadAttention's output with the same weights (a known mistake named), every real
    word of the short first ticket read by each of its tokens, and the same without a mask."""
    b, s, _ = h.shape
    out = call(layer, h, mask)
    if isinstance(out, tuple):
        raise AssertionError(f"{name}(h, mask) returned a tuple of {len(out)}; forward should return only "
                             "the output tensor (b, s, d_model), without the attention weights")
    expect_shape(out, (b, s, d_model), f"{name}(h, mask) with h of shape {(b, s, d_model)}")

    expected = results["right"]
    agrees = close(out, expected)
    known = None if agrees else _diagnose(results, heads, d_model, out)
    if known is not None:
        expect_close(out, expected, f"{name}(h, mask) compared with nn.MultiheadAttention holding the "
                     "same weights", hint=known)

    # The last real word of the first (short) ticket must reach every one of its real tokens.
    last = lengths[0] - 1
    changed = h.clone()
    changed[0, last] = seeded_randn((d_model,), seed + 2)
    moved = (call(layer, changed, mask)[0, :lengths[0]] - out[0, :lengths[0]]).abs().amax(-1)
    still = [t for t in range(lengths[0]) if moved[t] <= 1e-6]
    if still:
        raise AssertionError(
            f"changing the last word of a {lengths[0]}-token query (padded to {s}) left the output of "
            f"{len(still)} of its {lengths[0]} real tokens unchanged (tokens {still}); with attention every "
            "token reads every real word. A split written as view(b, heads, s, dh) without "
            "`transpose` keeps every shape but lets each token read only some of the words. Split "
            "and merge with your split_heads and merge_heads, whose checks test exactly this.")

    expect_close(out, expected, f"{name}(h, mask) compared with nn.MultiheadAttention holding the same weights",
                 hint="Check the order: split -> attention (scale sqrt(dh), mask True at pads) -> merge "
                      "with transpose(1, 2) -> self.out.")
    try:
        unmasked = layer(h)
        problem = None if close(unmasked, results["no mask"]) else "gave other numbers"
    except Exception as error:  # noqa: BLE001 - any crash is the student's verdict
        problem = f"raised {type(error).__name__}: {error}"
    expect(problem is None, f"{name}(h) without a mask should read every key, as nn.MultiheadAttention does "
                            f"without a key_padding_mask, but it {problem}. forward(h, mask=None) must work "
                            "with the mask left out (section 5's block calls it so).")


def _reads_evenly(layer, name, d_model):
    """On new tickets (fresh_tickets), with the query and key weights at zero, every score of a
    query is the same: each token reads the mean of the values of its ticket's real words, and
    the layer gives self.out of that mean at every position (a pad's too: the mask blocks pad keys,
    not pad queries). A property of attention, whatever the heads and wherever the pads, that
    no recorded result answers."""
    ids, pads = fresh_tickets()
    h = torch.randn(*ids.shape, d_model, generator=fresh_generator())
    with silenced((layer.q, layer.k), (layer.q.bias, layer.k.bias)), torch.no_grad():
        out = call(layer, h, pads[:, None, None, :])
        real = (~pads).unsqueeze(-1).float()
        want = layer.out((layer.v(h) * real).sum(1) / real.sum(1))[:, None, :].expand(*h.shape)
    expect_close(out, want, f"{name}(h, mask) on new tickets, with {(~pads).sum(1).tolist()} real tokens, with "
                 "self.q and self.k weighing nothing,", hint="Then every score of a query is the same, and "
                 "each token should read the mean of its ticket's real values. It is right on the check's own "
                 "tickets: does it depend on more than h, the mask and its weights?")


def _bad_head_count(MultiHead, d_model, heads):
    name = f"MultiHead({d_model}, {heads})"
    needed = (f"{name} must raise ValueError with a message naming {d_model} and {heads}, e.g. "
              f"'d_model={d_model} is not divisible by heads={heads}'")
    h = seeded_randn((2, 3, d_model), 7)
    try:
        layer = MultiHead(d_model, heads)
        layer(h)
    except NotImplementedError:
        raise AssertionError(f"{name} is not written yet: replace `raise NotImplementedError()` with your "
                             "code, run its cell, then this check.") from None
    except ValueError as error:
        text = str(error)
        expect(str(d_model) in text and str(heads) in text,
               f"{name} raised ValueError({text!r}); its message should name both numbers, "
               f"{d_model} and {heads}, so the reader knows what to change")
        return
    except Exception as error:  # noqa: BLE001 - any other failure is the student's mistake
        raise AssertionError(f"{name} raised {type(error).__name__}: {error}. {heads} heads cannot share "
                             f"{d_model} numbers evenly; {needed} in __init__, before any tensor is "
                             "shaped.") from None
    raise AssertionError(f"{name} ran without complaint, silently dropping {d_model % heads} of the {d_model} "
                         f"numbers or reading heads of unequal size; {needed} in __init__.")
