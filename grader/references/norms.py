"""The results the checks of section 3 compare with (grader/checks/norms.py): the layer norm and
RMS norm of the check's inputs with the usual mistakes (the right ones are PyTorch's own, which the
checks compute as they run), and the shifts of a query under a test 'norm' whose answer is known."""

import torch

from grader.checks.norms import AddBatchMean, TokenBatchNorm, known_batches, norm_inputs, ticket_batches


def _normalized(x, dims, eps, unbiased=False, eps_outside=False):
    """(x - mean) / spread over `dims`: the right formula and the wrong ones."""
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, correction=1 if unbiased else 0)
    if eps_outside:
        return (x - mean) / (var.sqrt() + eps)
    return (x - mean) / torch.sqrt(var + eps)


def layer_norm_mistakes(shape, seed, eps):
    """[(output, message)] of each usual mistake on the inputs of `shape` and `seed`, in float64."""
    x, weight, bias = (t.double() for t in norm_inputs(shape, seed))
    last = (x.dim() - 1,)

    def scaled(y):
        return y * weight + bias
    versions = [
        (scaled(_normalized(x, last, eps, unbiased=True, eps_outside=True)),
         "it matches dividing by `x.std(-1) + eps`, two slips at once: `std` is unbiased by default "
         "(it divides by d - 1, LayerNorm divides by d) and eps belongs inside the square root, "
         "`torch.sqrt(var + eps)`."),
        (scaled(_normalized(x, last, eps, unbiased=True)),
         "it matches the unbiased variance (dividing by d - 1): `x.var()` and `x.std()` are unbiased "
         "by default, LayerNorm uses the biased variance. Use `x.var(-1, unbiased=False)` "
         "or `((x - mean) ** 2).mean(-1)`."),
        (scaled(_normalized(x, last, eps, eps_outside=True)),
         "it matches dividing by `std + eps`: eps belongs inside the square root, "
         "`torch.sqrt(var + eps)`. The two agree on ordinary rows and differ on a row of tiny "
         "spread, which this check includes."),
        (_normalized(x, last, eps) + bias,
         "it matches the normalized rows plus `bias` without `* weight`: multiply by weight, then add bias."),
        (_normalized(x, last, eps) * weight,
         "it matches the normalized rows times `weight` without `+ bias`: add bias after the scale."),
        (_normalized(x, last, eps),
         "it matches the normalized rows without `weight` and `bias`: finish with `* weight + bias`."),
        (scaled(_normalized(x, tuple(range(x.dim())), eps)),
         "it matches a mean and variance over ALL the elements of the tensor: each row (each "
         "token) needs its own, over the last dimension only: `mean(dim=-1, keepdim=True)`."),
        (scaled(_normalized(x, (0,), eps)),
         "it matches statistics over dim 0, the batch (that is what BatchNorm does): LayerNorm "
         "takes them over the last dimension, one token's features: `dim=-1`."),
    ]
    if x.dim() == 3:
        versions.append((scaled(_normalized(x, (1,), eps)),
                         "it matches statistics over dim 1, the tokens of each sequence: LayerNorm "
                         "takes them over the last dimension, one token's features: `dim=-1`."))
        versions.append((scaled(_normalized(x, (0, 1), eps)),
                         "it matches statistics over the batch and the positions (that is what "
                         "BatchNorm does): LayerNorm takes them over `dim=-1`, one token's features."))
    return versions


def known_shifts(widths_differ, swap):
    """What query_shift should return for the test 'norm' AddBatchMean on the known batches, and
    what the usual slips return instead."""
    norm = AddBatchMean()
    batch, other = known_batches(widths_differ)
    if swap:
        batch, other = other, batch
    with torch.no_grad():
        a, b = norm(batch), norm(other)
    n = min(a.shape[1], b.shape[1])
    diff = a[0, :n] - b[0, :n]
    whole = (a[:, :n] - b[:, :n]).abs()
    return {"right": diff.abs().max().item(), "whole batch": whole.max().item(),
            "first tokens": (a[:, 0] - b[:, 0]).abs().max().item(), "mean": diff.abs().mean().item(),
            "first position": diff[0].abs().max().item(),
            "whole mean": whole.mean().item(), "signed": diff.max().item()}


def batch_norm_shift(seed, b, s, d, extra_pads):
    """What query_shift should return for a new TokenBatchNorm(d) in training mode on the check's
    ticket batches: in that mode the output depends on the batch alone, not on the running
    statistics the call updates."""
    batch, other = ticket_batches(seed, b, s, d, extra_pads)
    norm = TokenBatchNorm(d).train()
    with torch.no_grad():
        a, b_ = norm(batch)[0], norm(other)[0]
    n = min(a.shape[0], b_.shape[0])
    return (a[:n] - b_[:n]).abs().max().item()


def _rms(x, dims, eps, squares="mean", eps_outside=False):
    """The divisor of each row: the root mean square (or a usual wrong one)."""
    total = (x ** 2).sum(dim=dims, keepdim=True) if squares == "sum" else (x ** 2).mean(dim=dims, keepdim=True)
    return total.sqrt() + eps if eps_outside else (total + eps).sqrt()


def rms_norm_mistakes(shape, seed, eps):
    """[(output, message)] of each usual mistake of rms_norm on the inputs, in float64."""
    x, weight, _ = (t.double() for t in norm_inputs(shape, seed))
    last = (x.dim() - 1,)
    mean = x.mean(dim=-1, keepdim=True)
    variance = x.var(dim=-1, keepdim=True, correction=0)
    return [
        ((x - mean) / (variance + eps).sqrt() * weight,
         "it matches LayerNorm without the bias: the mean is subtracted. RMSNorm does not centre the "
         "row; it divides the row as it is by its root mean square."),
        (x / (variance + eps).sqrt() * weight,
         "it matches dividing by the standard deviation (the spread about the mean). RMSNorm "
         "divides by the root mean square, sqrt(mean(x ** 2) + eps), where no mean is subtracted."),
        (x / _rms(x, last, eps, eps_outside=True) * weight,
         "it matches dividing by `rms + eps`: eps belongs inside the square root, "
         "sqrt(mean(x ** 2) + eps). The two differ on a row of tiny values, which this check includes."),
        (x / _rms(x, last, eps, squares="sum") * weight,
         "it matches the SUM of the squares (the row's length, torch.linalg.norm): RMSNorm takes "
         "their MEAN, so the rows leave with a root mean square of 1, not a length of 1."),
        (x / ((x ** 2).mean(dim=-1, keepdim=True) + eps) * weight,
         "it matches dividing by the mean square itself: take its square root."),
        (x / _rms(x, last, eps),
         "it matches the normalized rows without `* weight`: finish with the learned scale."),
        (x / _rms(x, tuple(range(x.dim())), eps) * weight,
         "it matches one root mean square over ALL the elements of the tensor: each row (each "
         "token's d numbers) gets its own, over the last dimension only (dim=-1, keepdim=True)."),
    ]
