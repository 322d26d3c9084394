"""The results the checks of section 7 compare with (grader/checks/banking.py): the sinusoid to add
to the embeddings, right and with the usual slips, and the scores of an encoder with sinusoidal
positions holding the check's fixed weights."""

import torch

from grader.checks.banking import PAD, final_ids, load_fixed_parameters
from ticketnet import TinyTransformer


def _sinusoid(length, d, base=10000.0, swap=False, width=None):
    """The interleaved table: columns 2i and 2i+1 hold sin and cos of p / base^(2i/d) (cos and
    sin when `swap`; with `width`, p / base^(2i/width), a width written as a number)."""
    wavelengths = base ** (torch.arange(0, d, 2, dtype=torch.float32) / (width or d))  # one per pair of columns
    angle = torch.arange(length, dtype=torch.float32)[:, None] / wavelengths
    pair = (angle.cos(), angle.sin()) if swap else (angle.sin(), angle.cos())
    return torch.stack(pair, dim=2).reshape(length, d)


def sinusoid(length, d, width=None):
    """{"right": the (length, d) sinusoid, and given `width`, "another width": the table whose
    exponent divides by `width` where it divides by d}: lengths and widths past added_tables'."""
    found = {"right": _sinusoid(length, d)}
    if width:
        found["another width"] = _sinusoid(length, d, width=width)
    return found


def added_tables(s, d):
    """{name: (s, d)}: the sinusoid ("right") and the tables of the usual slips."""
    angle = torch.arange(s, dtype=torch.float32)[:, None] / 10000.0 ** (torch.arange(0, d, 2) / d)
    return {"right": _sinusoid(s, d), "swapped": _sinusoid(s, d, swap=True),
            "halves": torch.cat([angle.sin(), angle.cos()], dim=1), "base 100": _sinusoid(s, d, base=100.0)}


def encoder_scores(vocab_size, classes, seed):
    """The scores for the check's final batch of TinyTransformer(positions=False) with the check's
    fixed parameters and the sinusoid added to the embeddings before the blocks."""
    net = TinyTransformer(vocab_size, classes=classes, positions=False).eval()
    load_fixed_parameters(dict(net.named_parameters()), seed)
    ids = final_ids(vocab_size, seed)
    with torch.no_grad():
        h = net.embed(ids) + _sinusoid(ids.shape[1], net.embed.embedding_dim)
        pad = ids == PAD
        h = net.blocks(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        return net.out((net.norm(h) * keep).sum(1) / keep.sum(1).clamp(min=1))
