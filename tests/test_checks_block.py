"""The parts of grader/checks/block.py that the catalogue does not reach directly: the layer the
results come from, the variants that name mistakes, mistakes made two and three at a time, and a
block whose own parts (MultiHead, FeedForward) are wrong."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from grader.checks import block as check
from grader.references import block as results


class MultiHead(nn.Module):
    """Section 1's layer, written here with PyTorch's attention function."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        for name in ("q", "k", "v", "out"):
            setattr(self, name, nn.Linear(width, width))

    def forward(self, tokens, blocked=None):
        def by_head(x):  # (batch, length, width) -> (batch, heads, length, width / heads)
            return x.unflatten(-1, (self.heads, -1)).transpose(1, 2)
        allowed = None if blocked is None else ~blocked
        mixed = F.scaled_dot_product_attention(by_head(self.q(tokens)), by_head(self.k(tokens)),
                                               by_head(self.v(tokens)), attn_mask=allowed)
        return self.out(mixed.transpose(1, 2).flatten(2))


class FeedForward(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.up, self.down = nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, tokens):
        return self.down(self.up(tokens).relu())


class Block(nn.Module):
    def __init__(self, width, heads, hidden):
        super().__init__()
        self.heads = heads
        self.attn, self.ffn = MultiHead(width, heads), FeedForward(width, hidden)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)

    def forward(self, tokens, pad=None):
        blocked = None if pad is None else pad[:, None, None, :]
        stream = tokens + self.attn(self.norm1(tokens), blocked)
        return stream + self.ffn(self.norm2(stream))


class PostNorm(Block):
    def forward(self, tokens, pad=None):
        blocked = None if pad is None else pad[:, None, None, :]
        stream = self.norm1(tokens + self.attn(tokens, blocked))
        return self.norm2(stream + self.ffn(stream))


def parts_and_batch(seed=0, d_model=32, heads=4, d_ff=64):
    parts = check.block_parts(d_model, heads, d_ff, seed)
    x, pad = check.inputs(4, 7, d_model, seed, every_row_padded=True)
    return parts, results.attention_twin(parts, heads), x, pad


def test_blocks_written_here_pass_every_check(capsys):
    check.block(Block)
    check.to_reference(lambda parts: results.reference_layer(parts, parts.heads))
    check.post_norm_block(PostNorm)
    assert capsys.readouterr().out.count("Check passed") == 3


@pytest.mark.parametrize("broken, words", [
    ("attn", ("your MultiHead from section 1", "01-heads", "course's own MultiHead")),
    ("ffn", ("your FeedForward from section 4", "04-residuals")),
], ids=["MultiHead", "FeedForward"])
def test_a_wrong_earlier_part_is_blamed_and_not_the_block(broken, words):
    class Unmasked(MultiHead):  # the mask is dropped: MultiHead's own mistake
        def forward(self, tokens, blocked=None):
            return super().forward(tokens, None)

    class NoRelu(FeedForward):
        def forward(self, tokens):
            return self.down(self.up(tokens))

    class Built(Block):
        def __init__(self, width, heads, hidden):
            super().__init__(width, heads, hidden)
            if broken == "attn":
                self.attn = Unmasked(width, heads)
            else:
                self.ffn = NoRelu(width, hidden)
    with pytest.raises(AssertionError) as failure:
        check.block(Built)
    for word in words:
        assert word in str(failure.value)


def test_the_reference_and_the_right_variant_agree_with_and_without_gradients():
    parts, twin, x, pad = parts_and_batch()
    reference = results.reference_layer(parts, 4)
    assert reference.norm_first and reference.self_attn.batch_first and not reference.training
    right = results.variant(parts, twin, x, pad)
    assert check.close_at_real(reference(x, src_key_padding_mask=pad).detach(), right.detach(), pad)
    with torch.no_grad():  # the fused fast path
        assert check.close_at_real(reference(x, src_key_padding_mask=pad), right, pad)


def test_every_single_mistake_gives_numbers_different_from_the_right_block():
    parts, twin, x, pad = parts_and_batch()
    with torch.no_grad():
        right = results.variant(parts, twin, x, pad)
        for kwargs in [dict(first="post"), dict(second="none"), dict(first="normed"),
                       dict(mask="ignored"), dict(mask="inverted"), dict(swapped=True), dict(relu=False)]:
            assert not check.close_at_real(results.variant(parts, twin, x, pad, **kwargs), right, pad), kwargs


def test_the_right_output_is_not_diagnosed_as_a_mistake():
    parts, twin, x, pad = parts_and_batch()
    with torch.no_grad():
        right = results.variant(parts, twin, x, pad)
        assert check._diagnose(results._mistakes(parts, twin, x, pad, "pre"), right, pad) is None
        post = results.variant(parts, twin, x, pad, first="post", second="post")
        assert check._diagnose(results._mistakes(parts, twin, x, pad, "post"), post, pad, order="post") is None


@pytest.mark.parametrize("kwargs, words", [
    (dict(first="post", second="post", mask="ignored"), ("each step", "post-norm", "mask is not used")),
    (dict(second="none", swapped=True), ("feed-forward step", "missing residual", "swapped")),
    (dict(first="normed", relu=False), ("attention step", "un-normalized", "no relu")),
])
def test_mistakes_made_together_are_all_named(kwargs, words):
    parts, twin, x, pad = parts_and_batch(seed=3)
    with torch.no_grad():
        hint = check._diagnose(results._mistakes(parts, twin, x, pad, "pre"),
                               results.variant(parts, twin, x, pad, **kwargs), pad)
    assert hint is not None
    for word in words:
        assert word.lower() in hint.lower(), hint


def test_counts_per_child_match_pytorchs_layer():
    counts = check.expected_counts(64, 256)
    assert counts == {"norm1": 128, "attn": 16_640, "norm2": 128, "ffn": 33_088}
    layer = nn.TransformerEncoderLayer(64, 4, 256, batch_first=True, norm_first=True)
    assert sum(counts.values()) == sum(p.numel() for p in layer.parameters()) == 49_984


def test_to_reference_refuses_a_subclass_whose_forward_could_answer_from_a_record():
    """Issue 41: to_reference's check compares with a recorded result on fixed tokens only; the
    layer must be PyTorch's class itself, whose forward no student code replaces."""
    class Replayed(nn.TransformerEncoderLayer):
        def forward(self, src, *args, **kwargs):
            return super().forward(src, *args, **kwargs)

    with pytest.raises(AssertionError, match="got Replayed"):
        check.to_reference(lambda parts: Replayed(32, 4, 32, dropout=0.0, batch_first=True, norm_first=True))
