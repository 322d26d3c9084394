"""The parts of grader/checks/block.py that the catalogue does not reach directly: the reference
the check builds, the variants it uses to name mistakes, mistakes made two at a time, and a block
whose own parts (MultiHead, FeedForward) are wrong."""

import pytest
import torch
from torch import nn

from grader.checks import block as check


def make_block(seed=0, d_model=32, heads=4, d_ff=64):
    torch.manual_seed(seed)
    block = check._Block(d_model, heads, d_ff).eval()
    check._randomize_norms(block, torch.Generator().manual_seed(seed))
    return block


def batch(d_model=32, seed=0):
    return check._inputs(4, 7, d_model, torch.Generator().manual_seed(seed), every_row_padded=True)


class _PostNorm(check._Block):
    def forward(self, h, pad=None):
        mask = None if pad is None else pad[:, None, None, :]
        h = self.norm1(h + self.attn(h, mask))
        return self.norm2(h + self.ffn(h))


def test_the_checks_own_blocks_pass_every_check(capsys):
    check.block(check._Block)
    check.to_reference(lambda block: check.reference_layer(block, block.heads))
    check.post_norm_block(_PostNorm)
    assert capsys.readouterr().out.count("Check passed") == 3


@pytest.mark.parametrize("broken, words", [
    ("attn", ("your MultiHead from section 1", "01-heads", "course's own MultiHead")),
    ("ffn", ("your FeedForward from section 4", "04-residuals")),
], ids=["MultiHead", "FeedForward"])
def test_a_wrong_earlier_part_is_blamed_and_not_the_block(broken, words):
    class Unmasked(check._MultiHead):  # the mask is dropped: MultiHead's own mistake
        def forward(self, h, mask=None):
            return super().forward(h, None)

    class NoRelu(check._FeedForward):
        def forward(self, h):
            return self.down(self.up(h))

    class Built(check._Block):
        def __init__(self, d_model, heads, d_ff):
            super().__init__(d_model, heads, d_ff)
            if broken == "attn":
                self.attn = Unmasked(d_model, heads)
            else:
                self.ffn = NoRelu(d_model, d_ff)
    with pytest.raises(AssertionError) as failure:
        check.block(Built)
    for word in words:
        assert word in str(failure.value)


def test_the_reference_and_the_right_variant_agree_with_and_without_gradients():
    block = make_block()
    x, pad = batch()
    reference = check.reference_layer(block, 4)
    assert reference.norm_first and reference.self_attn.batch_first and not reference.training
    right = check._variant(block, check.attention_twin(block.attn, 4), x, pad)
    assert check._close_at_real(reference(x, src_key_padding_mask=pad).detach(), right.detach(), pad)
    with torch.no_grad():  # the fused fast path
        assert check._close_at_real(reference(x, src_key_padding_mask=pad), right, pad)


def test_every_single_mistake_gives_numbers_different_from_the_right_block():
    block = make_block()
    x, pad = batch()
    twin = check.attention_twin(block.attn, 4)
    with torch.no_grad():
        right = check._variant(block, twin, x, pad)
        for kwargs in [dict(first="post"), dict(second="none"), dict(first="normed"),
                       dict(mask="ignored"), dict(mask="inverted"), dict(swapped=True), dict(relu=False)]:
            assert not check._close_at_real(check._variant(block, twin, x, pad, **kwargs), right, pad), kwargs


def test_the_right_output_is_not_diagnosed_as_a_mistake():
    block = make_block()
    x, pad = batch()
    twin = check.attention_twin(block.attn, 4)
    with torch.no_grad():
        assert check._diagnose(block, twin, x, pad, check._variant(block, twin, x, pad)) is None
        post = check._variant(block, twin, x, pad, first="post", second="post")
        assert check._diagnose(block, twin, x, pad, post, order="post") is None


@pytest.mark.parametrize("kwargs, words", [
    (dict(first="post", second="post", mask="ignored"), ("each step", "post-norm", "mask is not used")),
    (dict(second="none", swapped=True), ("feed-forward step", "missing residual", "swapped")),
    (dict(first="normed", relu=False), ("attention step", "un-normalized", "no relu")),
])
def test_two_mistakes_at_once_are_both_named(kwargs, words):
    block = make_block(seed=3)
    x, pad = batch(seed=3)
    twin = check.attention_twin(block.attn, 4)
    with torch.no_grad():
        hint = check._diagnose(block, twin, x, pad, check._variant(block, twin, x, pad, **kwargs))
    assert hint is not None
    for word in words:
        assert word.lower() in hint.lower(), hint


def test_counts_per_child_match_pytorchs_layer():
    counts = check.expected_counts(64, 256)
    assert counts == {"norm1": 128, "attn": 16_640, "norm2": 128, "ffn": 33_088}
    layer = nn.TransformerEncoderLayer(64, 4, 256, batch_first=True, norm_first=True)
    assert sum(counts.values()) == sum(p.numel() for p in layer.parameters()) == 49_984
