"""The results the checks of section 1 compare with (grader/checks/heads.py): the padding and
causal masks of the check's tickets, right and with the usual slips, and the output of multi-head
attention holding the check's fixed weights, right and with each usual mistake."""

import itertools
import math

import torch
from torch import nn

from grader.checks.heads import load_fixed_projections, padded_ids, seeded_randn
from ticketnet import PAD, UNK


def padding_masks(lengths, seq, seed):
    """{name: (b, 1, 1, s) bool}: True at the PAD keys ("right"), and two slips."""
    ids = padded_ids(lengths, seq, seed)
    pad = (ids == PAD)[:, None, None, :]
    return {"right": pad, "inverted": ~pad, "unknown words too": (ids <= UNK)[:, None, None, :]}


def causal_masks(lengths, seq, seed):
    """{name: (b, 1, s, s) bool}: True where the key is a PAD or after the query ("right"), and
    what each usual slip gives."""
    ids = padded_ids(lengths, seq, seed)
    b, s = ids.shape
    later = torch.ones(s, s, dtype=torch.bool).triu(1)  # key j after query i
    pad_keys = (ids == PAD)[:, None, None, :]
    right = later | pad_keys
    masks = {"right": right, "inverted": ~right, "pads not blocked": later, "no causal part": pad_keys,
             "diagonal blocked": torch.ones(s, s, dtype=torch.bool).triu(0) | pad_keys,
             "transposed": torch.ones(s, s, dtype=torch.bool).tril(-1) | pad_keys,
             "pads as queries": later | (ids == PAD)[:, None, :, None], "and": later & pad_keys}
    return {name: mask.expand(b, 1, s, s).clone() for name, mask in masks.items()}


def _attention(projections, h, mask, heads, sources=("q", "k", "v"), scale=None, mask_mode="keys",
               project=True):
    """Multi-head attention with the given projections, optionally with one mistake."""
    b, s, d = h.shape
    q, k, v = (projections[name](h).view(b, s, heads, d // heads).transpose(1, 2) for name in sources)
    scores = q @ k.transpose(-2, -1) / math.sqrt(scale or d // heads)
    if mask_mode == "keys":
        scores = scores.masked_fill(mask, float("-inf"))
    elif mask_mode == "inverted":
        scores = scores.masked_fill(~mask, float("-inf"))
    merged = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
    return projections["out"](merged) if project else merged


def multi_head(d_model, heads, lengths, seed):
    """{name: (b, s, d_model)} of attention over the check's tickets with the fixed weights: "right"
    (nn.MultiheadAttention holding them) and each usual mistake."""
    ids = padded_ids(lengths, seed=seed)
    pad = ids == PAD
    mask = pad[:, None, None, :]
    h = seeded_randn((*ids.shape, d_model), seed + 1)
    projections = {name: nn.Linear(d_model, d_model) for name in ("q", "k", "v", "out")}
    load_fixed_projections(projections, seed)
    twin = nn.MultiheadAttention(d_model, heads, batch_first=True).train()  # dropout 0: the plain path
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.cat([projections[n].weight for n in ("q", "k", "v")]))
        twin.in_proj_bias.copy_(torch.cat([projections[n].bias for n in ("q", "k", "v")]))
        twin.out_proj.load_state_dict(projections["out"].state_dict())
        results = {"right": twin(h, h, h, key_padding_mask=pad, need_weights=False)[0],
                   "no mask": _attention(projections, h, mask, heads, mask_mode="none"),
                   "inverted mask": _attention(projections, h, mask, heads, mask_mode="inverted"),
                   "scaled by d_model": _attention(projections, h, mask, heads, scale=d_model),
                   "no output projection": _attention(projections, h, mask, heads, project=False)}
        for sources in itertools.product("qkv", repeat=3):
            if sources != ("q", "k", "v"):
                results["sources " + "".join(sources)] = _attention(projections, h, mask, heads, sources=sources)
    return results
