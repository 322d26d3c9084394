"""The results the checks of section 5 compare with (grader/checks/block.py): what PyTorch's
nn.TransformerEncoderLayer computes with a block's fixed weights, pre-norm and post-norm, and what
the usual mistakes (and combinations of them) compute with the same weights."""

import torch
from torch import nn

from grader.checks.block import PROJECTIONS, block_parts, feed_forward_linears, inputs, mistake_key, mistakes


def attention_twin(parts, heads):
    """nn.MultiheadAttention holding the q, k, v and out of `parts.attn`, in training mode with
    dropout 0, so that it takes the plain path and computes every position."""
    d_model = parts.attn.q.in_features
    twin = nn.MultiheadAttention(d_model, heads, batch_first=True)
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.cat([getattr(parts.attn, name).weight for name in PROJECTIONS]))
        twin.in_proj_bias.copy_(torch.cat([getattr(parts.attn, name).bias for name in PROJECTIONS]))
        twin.out_proj.load_state_dict(parts.attn.out.state_dict())
    return twin.train()


def reference_layer(parts, heads, norm_first=True):
    """nn.TransformerEncoderLayer holding the weights of a block's parts: batch-first, no dropout,
    eval mode; pre-norm unless norm_first=False."""
    first, second = feed_forward_linears(parts)
    layer = nn.TransformerEncoderLayer(first.in_features, heads, first.out_features, dropout=0.0,
                                       batch_first=True, norm_first=norm_first,
                                       layer_norm_eps=parts.norm1.eps)
    with torch.no_grad():
        layer.self_attn.load_state_dict(attention_twin(parts, heads).state_dict())
        layer.linear1.load_state_dict(first.state_dict())
        layer.linear2.load_state_dict(second.state_dict())
        layer.norm1.load_state_dict(parts.norm1.state_dict())
        layer.norm2.load_state_dict(parts.norm2.state_dict())
    return layer.eval()


def variant(parts, twin, h, pad, first="pre", second="pre", mask="right", swapped=False, relu=True):
    """The block's function with the parts' weights, arranged as given: `twin` is its attention as
    nn.MultiheadAttention."""
    norm_a, norm_f = (parts.norm2, parts.norm1) if swapped else (parts.norm1, parts.norm2)
    lin1, lin2 = feed_forward_linears(parts)
    key_pad = {"right": pad, "ignored": None, "inverted": None if pad is None else ~pad}[mask]

    def attention(x):
        return twin(x, x, x, key_padding_mask=key_pad, need_weights=False)[0]

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


def _mistakes(parts, twin, h, pad, order):
    return {mistake_key(combination): variant(parts, twin, h, pad, *combination) for combination in mistakes(order)}


def block_outputs(d_model, heads, d_ff, batch, seq, seed):
    """What Block's check compares with: the parts' own functions, the pre-norm layer on the padded
    and the unpadded batch and without a mask, and each combination of mistakes."""
    parts = block_parts(d_model, heads, d_ff, seed)
    twin, layer = attention_twin(parts, heads), reference_layer(parts, heads)
    x, pad = inputs(batch, seq, d_model, seed, every_row_padded=True)
    x2, pad2 = inputs(batch, seq, d_model, seed, every_row_padded=False)
    first, second = feed_forward_linears(parts)
    with torch.no_grad():
        return {"attention": twin(x, x, x, key_padding_mask=pad, need_weights=False)[0],
                "feed forward": second(torch.relu(first(x))),
                "right": layer(x, src_key_padding_mask=pad),
                "right, unpadded tickets": layer(x2, src_key_padding_mask=pad2),
                "right, no mask": layer(x), "mistakes": _mistakes(parts, twin, x, pad, "pre")}


def block_function(d_model, heads, d_ff, batch, seq, seed):
    """The pre-norm block's output on to_reference's check's batch (the unpadded one)."""
    parts = block_parts(d_model, heads, d_ff, seed)
    x, pad = inputs(batch, seq, d_model, seed, every_row_padded=False)
    with torch.no_grad():
        return variant(parts, attention_twin(parts, heads), x, pad)


def post_norm_outputs(d_model, heads, d_ff, batch, seq, seed):
    """What PostNormBlock's check compares with: the post-norm layer and each combination of
    mistakes on both batches, and the layer without a mask."""
    parts = block_parts(d_model, heads, d_ff, seed)
    twin, layer = attention_twin(parts, heads), reference_layer(parts, heads, norm_first=False)
    results = {}
    with torch.no_grad():
        for every_row_padded in (True, False):
            x, pad = inputs(batch, seq, d_model, seed, every_row_padded)
            results[f"right, padded {every_row_padded}"] = layer(x, src_key_padding_mask=pad)
            results[f"mistakes, padded {every_row_padded}"] = _mistakes(parts, twin, x, pad, "post")
        results["right, no mask"] = layer(x)
    return results
