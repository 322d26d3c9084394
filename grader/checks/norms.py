"""Checks of section 3 (03-norms): layer normalization by hand, and how far a query moves with its batch.

`check_layer_norm` compares the student's `layer_norm(x, weight, bias, eps)` with PyTorch's
F.layer_norm on inputs that include a row of tiny spread (where eps decides the result), and, when
they differ, names the mistake by matching the output against the usual wrong formulas. Then it
checks the two properties the section teaches: each row leaves with mean 0 and biased variance 1,
and a row times 1000 leaves unchanged.

`check_query_shift` runs the student's `query_shift(norm, batch, other)` on a "norm" whose answer is
known exactly, then on nn.LayerNorm (the query must not move) and on BatchNorm in training mode (it
must), and on BatchNorm in evaluation mode (it must not: running statistics).

`check_rms_norm` compares the student's `rms_norm(x, weight, eps)` with x / sqrt(mean(x ** 2) + eps)
* weight on inputs with a row of tiny numbers (eps decides it) and a row far from zero (centring
would show), refuses PyTorch's own RMSNorm, names the usual mistakes (the mean subtracted, the
standard deviation, eps outside the root, the sum of the squares, no root, no weight, one statistic
for the whole tensor, a fixed eps), and checks a root mean square of 1 per row and the scale taken
out.

Each check ends on inputs drawn as it runs (fresh_norm_inputs, and fresh batches for query_shift),
compared with PyTorch's own norm or a shift known in closed form, so that in the student edition
no recorded result (grader/references) can answer for the student's code.
"""

import torch
import torch.nn.functional as F
from torch import nn

from grader import references
from grader.checks import call, close, diagnose, expect, expect_shape, fresh_generator, passed, refusing, task

# ---------------------------------------------------------------------------------------------
# layer_norm
# ---------------------------------------------------------------------------------------------


def norm_inputs(shape, seed):
    """x (with a row of tiny spread and rows far from zero), weight and bias, all seeded."""
    g = torch.Generator().manual_seed(seed)
    d = shape[-1]
    x = torch.randn(*shape, generator=g) * 2 + torch.randn(*shape[:-1], 1, generator=g)
    rows = x.view(-1, d)
    rows[1] = torch.randn(d, generator=g) * 1e-3  # near-constant row: variance ~1e-6, below eps
    rows[-1] = torch.randn(d, generator=g) * 30 + 100  # large values far from zero
    weight = torch.rand(d, generator=g) * 1.5 + 0.25
    bias = torch.randn(d, generator=g)
    return x, weight, bias


def _untouched(name, given, kept):
    """Fail when the student's norm changed a tensor it was given."""
    changed = [label for label, tensor, copy in zip(("x", "weight", "bias"), given, kept)
               if not torch.equal(tensor, copy)]
    expect(not changed, f"{name} changed {' and '.join(changed)} in place: the caller's tensor is "
           "normalized too. In a pre-norm block that tensor is the stream the shortcut carries past the "
           "norm, which must leave it as it came. Build the result in new tensors.")


def _run_layer_norm(layer_norm, x, weight, bias, eps):
    """Call the student's function on the check's own tensors, and fail if it changes them; refuse
    PyTorch's own layer norm; catch keepdim slips."""
    args, kept = (x, weight, bias), (x.clone(), weight.clone(), bias.clone())
    kwargs = {} if eps is None else {"eps": eps}
    with refusing("torch.nn.functional:layer_norm", "torch:layer_norm", "torch:native_layer_norm") as used:
        try:
            out = call(layer_norm, *args, **kwargs)
        except AssertionError as error:
            if used:
                raise AssertionError("layer_norm called PyTorch's own layer norm (nn.LayerNorm or "
                                     "F.layer_norm); this task is to build it by hand from the mean "
                                     "and the variance.") from None
            if "must match the size" in str(error):
                raise AssertionError(f"{error}\nA shape clash like this usually means a mean or "
                                     "variance taken without `keepdim=True`, so it cannot broadcast "
                                     "back against x.") from None
            raise
    expect(not used, "layer_norm called PyTorch's own layer norm (nn.LayerNorm or F.layer_norm); "
                     "this task is to build it by hand from the mean and the variance.")
    _untouched("layer_norm", args, kept)
    expect_shape(out, x.shape, f"layer_norm(x of shape {tuple(x.shape)}, ...)")
    expect(out.dtype == x.dtype, f"layer_norm returned {out.dtype} for a {x.dtype} input")
    return out.detach()


def _matches_pytorch(layer_norm, shape, seed, eps):
    x, weight, bias = norm_inputs(shape, seed)
    use = 1e-5 if eps is None else eps
    mistakes = references.expected("norms", "layer_norm_mistakes", shape, seed, use)
    out = _run_layer_norm(layer_norm, x, weight, bias, eps)
    expected = F.layer_norm(x.double(), (x.shape[-1],), weight.double(), bias.double(), use)
    gap = (out.double() - expected).abs().max().item()
    where = f"layer_norm on x of shape {tuple(x.shape)} (eps={use:g}) differs from F.layer_norm by up to {gap:.3g}"
    if diagnose(out.double(), expected, mistakes, where):
        return
    if eps is not None:
        default = F.layer_norm(x.double(), (x.shape[-1],), weight.double(), bias.double(), 1e-5)
        if close(out.double(), default):
            raise AssertionError(f"{where}: it matches eps=1e-5 whatever eps it is given; use the "
                                 "`eps` argument, not a fixed number.")
    rows = out.view(-1, x.shape[-1])
    bad = (rows - expected.view(-1, x.shape[-1]).float()).abs().amax(1).argmax().item()
    raise AssertionError(f"{where}, most in row {bad} (of the rows flattened to (-1, {x.shape[-1]})). "
                         "Expected (x - mean) / sqrt(var + eps) * weight + bias with the mean and the "
                         "biased variance of each row over the last dimension.")


def _rows_are_standard(layer_norm, shape, seed):
    """With weight 1 and bias 0, ordinary rows leave with mean 0 and biased variance 1."""
    g = torch.Generator().manual_seed(seed + 1)
    d = shape[-1]
    x = torch.randn(*shape, generator=g) * 3 + 2
    out = _run_layer_norm(layer_norm, x, torch.ones(d), torch.zeros(d), None).view(-1, d)
    mean = out.mean(-1)
    var = out.var(-1, correction=0)
    expect(mean.abs().max().item() < 1e-4,
           f"with weight 1 and bias 0 the rows of layer_norm's output have means up to "
           f"{mean.abs().max().item():.3g}, expected 0: subtract each row's mean over the last dimension.")
    # var(out) = var / (var + eps): with row variances near 9 the eps effect is about 1e-6
    expect((var - 1).abs().max().item() < 1e-3,
           f"with weight 1 and bias 0 the rows of layer_norm's output have biased variances from "
           f"{var.min().item():.4f} to {var.max().item():.4f}, expected 1: divide each row by the square "
           "root of its biased variance (plus eps).")


def _scale_invariant(layer_norm, d, seed):
    """A row and the row times 1000 give the same output, within what eps changes.

    The row is standardized to biased variance 1 (values within about 3 of the mean). Then the
    outputs are (x - m) / sqrt(1 + eps) and (x - m) / sqrt(1 + eps / 1e6): they differ by a factor
    of about 1 + eps / 2 = 1 + 5e-6, at most 5e-6 * 3 = 1.5e-5 in absolute terms, and float32
    rounding adds ~1e-6. A tolerance of 1e-4 leaves a margin of more than 5 and still catches any
    formula that leaves a trace of the scale (a factor 1000 or 1/1000 off).
    """
    g = torch.Generator().manual_seed(seed + 2)
    row = torch.randn(1, d, generator=g)
    row = (row - row.mean()) / row.std(correction=0) + 0.5
    ones, zeros = torch.ones(d), torch.zeros(d)
    small = _run_layer_norm(layer_norm, row, ones, zeros, None)
    big = _run_layer_norm(layer_norm, row * 1000, ones, zeros, None)
    gap = (small - big).abs().max().item()
    expect(gap < 1e-4, f"layer_norm(row) and layer_norm(row * 1000) differ by up to {gap:.3g} (weight 1, "
                       "bias 0); a layer norm removes the scale of a row, so they should agree within "
                       "1e-4 (eps alone changes them by about 1.5e-5).")


@task
def check_layer_norm(layer_norm, shapes=((3, 8), (2, 5, 16)), seed=0, eps=None):
    """layer_norm(x, weight, bias[, eps]) equals F.layer_norm on every shape in `shapes` (eps=None:
    the default, not passed), rows leave with mean 0 and variance 1, and the scale of a row is gone."""
    for i, shape in enumerate(shapes):
        _matches_pytorch(layer_norm, tuple(shape), seed + i, eps)
    for i, shape in enumerate(shapes):
        _rows_are_standard(layer_norm, tuple(shape), seed + i)
    _scale_invariant(layer_norm, shapes[0][-1], seed)
    x, weight, bias = fresh_norm_inputs()
    out = _run_layer_norm(layer_norm, x, weight, bias, eps)
    use = 1e-5 if eps is None else eps
    expect(close(out.double(), F.layer_norm(x.double(), (x.shape[-1],), weight.double(), bias.double(), use)),
           f"layer_norm is right on the check's inputs but differs from F.layer_norm on new ones, of shape "
           f"{tuple(x.shape)}: does it depend on more than x, weight, bias and eps?")
    passed()


def fresh_norm_inputs():
    """x, weight and bias of a shape and values drawn as the check runs (fresh_generator), so
    that no recorded result answers them."""
    generator = fresh_generator()
    shape = tuple(torch.randint(2, 7, (2,), generator=generator).tolist()) + (8 * int(torch.randint(1, 5, (), generator=generator)),)
    x = torch.randn(shape, generator=generator) * 3 + torch.randn(shape[:-1] + (1,), generator=generator)
    weight = torch.rand(shape[-1], generator=generator) + 0.5
    return x, weight, torch.randn(shape[-1], generator=generator)


# ---------------------------------------------------------------------------------------------
# query_shift
# ---------------------------------------------------------------------------------------------


class TokenBatchNorm(nn.Module):
    """nn.BatchNorm1d over the features of (b, s, d) tensors: BatchNorm1d reads (b, d, s), so the
    features go to dim 1 and back. In training mode each feature's mean and variance are taken
    over every ticket and every position of the batch, pads included."""

    def __init__(self, d):
        super().__init__()
        self.bn = nn.BatchNorm1d(d)

    def forward(self, h):  # (b, s, d)
        return self.bn(h.transpose(1, 2)).transpose(1, 2)


class AddBatchMean(nn.Module):
    """Not a norm: adds, at each position, each feature's mean over the batch, so the shift of row 0
    between two batches is known exactly, and differs from one position to the next (an answer
    that compares one position only shows)."""

    def forward(self, h):  # (b, s, d)
        return h + h.mean(dim=0, keepdim=True)


def _shift(query_shift, norm, batch, other):
    kept = batch.clone(), other.clone()
    try:
        result = call(query_shift, norm, batch, other)
    except AssertionError as error:
        if "must match the size" in str(error) and batch.shape[1] != other.shape[1]:
            raise AssertionError(f"{error}\nHere `batch` has {batch.shape[1]} positions and `other` "
                                 f"{other.shape[1]} (more padding): compare row 0 over the positions "
                                 "both have, the first min(s, s') of them.") from None
        raise
    expect(torch.equal(batch, kept[0]) and torch.equal(other, kept[1]),
           "query_shift changed the batches it was given (an in-place operation on `batch` or "
           "`other`): it should only read them.")
    expect(not isinstance(result, torch.Tensor),
           "query_shift returned a tensor; return a Python float, e.g. with `.item()`.")
    expect(isinstance(result, float) and not isinstance(result, bool),
           f"query_shift returned {type(result).__name__}, expected a Python float (use `.item()`).")
    return result


def known_batches(widths_differ=False):
    """batch and other share row 0; other's row 1 holds v and w at its two positions, batch's is 0.
    With AddBatchMean row 0 moves by -v / 2 = [-3, 2, -1, 0] at its first position and by -w / 2 =
    [-5, 2, 1, 0] at its second: the largest absolute move is 5, at the first position alone 3, the
    largest signed one 2, the mean 1.75; position 0 of every row moves by up to 9 and the whole
    batch by up to 15, so each usual slip gives its own number."""
    row0 = torch.tensor([[1.0, 2.0, -1.0, 0.5], [0.0, -3.0, 4.0, 1.0]])
    v = torch.tensor([6.0, -4.0, 2.0, 0.0])
    w = torch.tensor([10.0, -4.0, -2.0, 0.0])
    batch = torch.stack([row0, torch.zeros(2, 4)])
    other = torch.stack([row0, torch.stack([v, w])])
    if widths_differ:  # other carries one more pad position (zeros) after every row
        other = torch.cat([other, torch.zeros(2, 1, 4)], dim=1)
    return batch, other


def _check_known(query_shift, widths_differ, swap=False):
    norm = AddBatchMean()
    batch, other = known_batches(widths_differ)
    if swap:  # the wider tensor comes first
        batch, other = other, batch
    got = _shift(query_shift, norm, batch, other)
    shifts = references.expected("norms", "known_shifts", widths_differ, swap)
    want = shifts["right"]
    if abs(got - want) <= 1e-6 * max(1.0, want):
        return
    what = (f"With a test 'norm' that adds the batch mean, row 0 of a {tuple(batch.shape)} batch moves by "
            f"up to {want:g} when only row 1 changes (the other batch has shape {tuple(other.shape)}), "
            f"but query_shift returned {got:g}.")
    if abs(got) < 1e-9:
        raise AssertionError(f"{what} A shift of 0 means the norm never saw the other rows: did you "
                             "normalize row 0 alone (`norm(batch[:1])`)? Pass the whole batch to the "
                             "norm and take row 0 of its output.")
    if abs(got - shifts["whole batch"]) < 1e-6 * max(1.0, got):
        raise AssertionError(f"{what} That is the largest difference over the whole batches: "
                             "compare row 0 only, `norm(batch)[0]` with `norm(other)[0]`.")
    if abs(got - shifts["first position"]) < 1e-6 * max(1.0, got):
        raise AssertionError(f"{what} That is the largest difference at row 0's first position alone; "
                             "the shift at the other positions differs, and the task asks for the largest "
                             "over every position both batches have.")
    if abs(got - shifts["first tokens"]) < 1e-6 * max(1.0, got):
        raise AssertionError(f"{what} That is the largest difference at position 0 of every row "
                             "(`[:, 0]`): compare row 0, all its positions, `norm(batch)[0]` with "
                             "`norm(other)[0]`.")
    if abs(got - shifts["mean"]) < 1e-6 or abs(got - shifts["whole mean"]) < 1e-6:
        raise AssertionError(f"{what} That is the mean absolute difference; the task asks for the "
                             "largest one, `.max()`.")
    if abs(got - shifts["signed"]) < 1e-6:
        raise AssertionError(f"{what} That is the largest signed difference: take `.abs()` before "
                             "`.max()`, a move down counts as much as a move up.")
    raise AssertionError(f"{what} Expected the largest absolute difference between `norm(batch)[0]` "
                         "and `norm(other)[0]` over the positions both have.")


def _check_fresh(query_shift):
    """AddBatchMean on two batches drawn as the check runs (fresh_generator), which share row 0:
    at each position both have, row 0 moves by the difference of the other rows' sums over b.
    `other`'s last position is a pad (zeros) in every row, as in known_batches, so an answer that
    widens `batch` with zeros is right here, whatever the draw, and is named by the BatchNorm stage."""
    generator = fresh_generator()
    b, s, d = (int(n) for n in torch.randint(2, 7, (3,), generator=generator))
    batch = torch.randn(b, s, d, generator=generator)
    other = torch.randn(b, s + 1, d, generator=generator)
    other[0, :s] = batch[0]
    other[:, s:] = 0
    want = ((batch[1:].sum(0) - other[1:, :s].sum(0)) / b).abs().max().item()
    got = _shift(query_shift, AddBatchMean(), batch, other)
    expect(abs(got - want) <= 1e-5 * max(1.0, want),
           f"query_shift is right on the check's own batches but not on new ones: with the test 'norm' "
           f"that adds the batch mean, row 0 of a {tuple(batch.shape)} batch moves by up to {want:.6g} "
           f"against one of shape {tuple(other.shape)}, and it returned {got:.6g}. Does it depend on more "
           "than the norm and the two batches?")


def ticket_batches(seed, b, s, d, extra_pads):
    """Two embedded-like batches sharing row 0: different neighbours, and `extra_pads` more pad
    columns (zero vectors) in `other`."""
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(s, d, generator=g)
    query[s - 2:] = 0  # the query's own last two positions are pads
    batch = torch.cat([query[None], torch.randn(b - 1, s, d, generator=g)])
    neighbours = torch.randn(b - 1, s, d, generator=g) * 2 + 1
    neighbours[:, s // 2:] = 0  # shorter neighbours: more padding
    other = torch.cat([query[None], neighbours])
    other = torch.cat([other, torch.zeros(b, extra_pads, d)], dim=1)
    return batch, other


@task
def check_query_shift(query_shift, seed=0, b=4, s=6, d=8, extra_pads=3):
    """query_shift returns a float; the exact shift for a known 'norm'; 0 for nn.LayerNorm; clearly
    non-zero for BatchNorm in training mode; 0 for BatchNorm in evaluation mode."""
    _check_known(query_shift, widths_differ=False)
    _check_known(query_shift, widths_differ=True)
    _check_known(query_shift, widths_differ=True, swap=True)
    _check_fresh(query_shift)

    batch, other = ticket_batches(seed, b, s, d, extra_pads)
    torch.manual_seed(seed)
    layer = nn.LayerNorm(d)
    with torch.no_grad():
        layer.weight.uniform_(0.5, 1.5)
        layer.bias.normal_()
    moved = _shift(query_shift, layer, batch, other)
    expect(moved < 1e-6,
           f"query_shift says nn.LayerNorm moved the query by {moved:.3g}, but LayerNorm normalizes "
           "each token with its own features, so row 0 must not move at all (0). Did you compare "
           "whole batches, or token 0 of every row (`[:, 0]`) instead of row 0 (`[0]`)?")

    bn = TokenBatchNorm(d).train()
    whole = references.expected("norms", "batch_norm_shift", seed, b, s, d, extra_pads)
    moved = _shift(query_shift, bn, batch, other)
    if not bn.training:
        raise AssertionError("query_shift put the norm in evaluation mode (`norm.eval()`): BatchNorm "
                             "then uses its running statistics and no longer depends on the batch, so "
                             "the shift vanishes. Batch statistics are only used in training mode: use "
                             "the norm in the mode it is given.")
    expect(moved > 1e-2,
           f"query_shift says BatchNorm (training mode) moved the query by only {moved:.3g}; in training "
           "mode it takes each feature's statistics over the whole batch, so changing the other rows "
           "must move row 0. Pass the WHOLE batch to the norm and take row 0 of its output (not "
           "`norm(batch[:1])`), and keep the norm in training mode: batch statistics are only used there.")
    expect(close(moved, whole),
           f"query_shift says BatchNorm (training mode) moved the query by {moved:.4g}; run on each whole "
           f"batch as given, it moves it by {whole:.4g}. Was one batch cut to the other's width, or "
           "widened, before the norm? Only the outputs are compared over the positions both have: the "
           "norm must see every position of each batch, pads included.")

    # Evaluation mode: running statistics, the same for both batches, so nothing moves.
    frozen = TokenBatchNorm(d)
    with torch.no_grad():
        frozen(torch.randn(b, s, d, generator=torch.Generator().manual_seed(seed + 1)) * 2 + 1)
    frozen.eval()
    moved = _shift(query_shift, frozen, batch, other)
    expect(frozen.training is False,
           "query_shift switched a norm that was given in evaluation mode to training mode; use the "
           "norm in the mode it is given.")
    expect(moved < 1e-6,
           f"query_shift says BatchNorm in evaluation mode moved the query by {moved:.3g}; in evaluation "
           "mode it uses its running statistics, the same for every batch, so the shift is 0. Did you "
           "call `norm.train()`? Use the norm in the mode it is given.")
    passed()


# ---------------------------------------------------------------------------------------------
# rms_norm: the variant without the mean
# ---------------------------------------------------------------------------------------------

RMS_EPS = 1e-6
PYTORCH_RMS_NORM = [path for path in ("torch.nn.functional:rms_norm", "torch:rms_norm")
                    if hasattr(F if path.startswith("torch.nn") else torch, path.split(":")[1])]


def _run_rms_norm(rms_norm, x, weight, eps):
    """Call the student's function on the check's own tensors, and fail if it changes them; refuse
    PyTorch's own RMSNorm."""
    args, kept = (x, weight), (x.clone(), weight.clone())
    kwargs = {} if eps is None else {"eps": eps}
    refused = ("rms_norm called PyTorch's own RMSNorm (nn.RMSNorm or F.rms_norm); this task is to "
               "build it by hand from the mean of the squares.")
    with refusing(*PYTORCH_RMS_NORM) as used:
        try:
            out = call(rms_norm, *args, **kwargs)
        except AssertionError as error:
            if used:
                raise AssertionError(refused) from None
            if "must match the size" in str(error):
                raise AssertionError(f"{error}\nA shape clash like this usually means a mean taken "
                                     "without `keepdim=True`, so it cannot broadcast back against x.") from None
            raise
    expect(not used, refused)
    _untouched("rms_norm", args, kept)
    expect_shape(out, x.shape, f"rms_norm(x of shape {tuple(x.shape)}, weight)")
    expect(out.dtype == x.dtype, f"rms_norm returned {out.dtype} for a {x.dtype} input")
    return out.detach()


@task
def check_rms_norm(rms_norm, shapes=((3, 8), (2, 5, 16)), seed=0, eps=None):
    """Check the student's rms_norm(x, weight, eps=1e-6) against the formula, name the usual
    mistakes, and check that each row leaves with root mean square 1 and a row times 1000 with the
    same numbers."""
    use = RMS_EPS if eps is None else eps
    for i, shape in enumerate(shapes):
        shape = tuple(shape)
        x, weight, _ = norm_inputs(shape, seed + i)
        kept = x.clone()
        expected = _pytorch_rms_norm(x, weight, use)
        mistakes = references.expected("norms", "rms_norm_mistakes", shape, seed + i, use)
        default = _pytorch_rms_norm(x, weight, RMS_EPS)
        out = _run_rms_norm(rms_norm, x, weight, eps)
        expect(torch.equal(x, kept), "rms_norm changed its input x in place; compute a new tensor")
        gap = (out.double() - expected).abs().max().item()
        where = f"rms_norm on x of shape {tuple(x.shape)} (eps={use:g}) differs from x / sqrt(mean(x ** 2) + eps) * weight by up to {gap:.3g}"
        if diagnose(out.double(), expected, mistakes, where):
            continue
        if eps is not None:
            if close(out.double(), default):
                raise AssertionError(f"{where}: it matches eps={RMS_EPS:g} whatever eps it is given; use "
                                     "the `eps` argument, not a fixed number.")
        raise AssertionError(f"{where}. Expected each row divided by the square root of the mean of "
                             "its squares plus eps, over the last dimension, then times weight.")
    x, _, _ = norm_inputs((4, 32), seed)
    ones = torch.ones(32)
    out = _run_rms_norm(rms_norm, x, ones, eps).double()
    rms = out.pow(2).mean(-1).sqrt()
    ordinary = torch.ones(4, dtype=torch.bool)
    ordinary[1] = False  # the quiet row: eps is a large part of its divisor
    expect(close(rms[ordinary], torch.ones_like(rms[ordinary]), "loose"),
           f"with weight 1 each row should leave with a root mean square of 1; got {rms.tolist()}")
    big = _run_rms_norm(rms_norm, x * 1000, ones, eps)
    expect(close(big[ordinary], out[ordinary].float(), "loose"),
           "a row times 1000 should leave with the same numbers (the norm takes out the scale)")
    x, weight, _ = fresh_norm_inputs()
    expect(close(_run_rms_norm(rms_norm, x, weight, eps).double(), _pytorch_rms_norm(x, weight, use)),
           f"rms_norm is right on the check's inputs but differs from F.rms_norm on new ones, of shape "
           f"{tuple(x.shape)}: does it depend on more than x, weight and eps?")
    passed()


def _pytorch_rms_norm(x, weight, eps):
    """PyTorch's own RMS norm, in float64, computed as the check runs (never recorded)."""
    return F.rms_norm(x.double(), (x.shape[-1],), weight.double(), eps)
