"""Section 3 (03-norms): wrong answers each check must refuse with its message, and right answers
written differently that it must accept."""

from grader.catalogue import Right, Wrong

# ---------------------------------------------------------------------------------------------
# layer_norm(x, weight, bias, eps=1e-5)
# ---------------------------------------------------------------------------------------------

_LN = '''def layer_norm(x, weight, bias, eps=1e-5):
{body}
'''


def _ln(body):
    return _LN.format(body=body)


WRONG = [
    Wrong("layer_norm", "x normalized in place (sub_, div_)", _ln(
        "    x.sub_(x.mean(-1, keepdim=True))\n"
        "    x.div_(torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps))\n"
        "    return x * weight + bias"),
        expect=("changed x in place", "stream")),
    Wrong("layer_norm", "statistics over dim 0, the batch", _ln(
        "    mean = x.mean(dim=0, keepdim=True)\n"
        "    var = x.var(dim=0, keepdim=True, unbiased=False)\n"
        "    return (x - mean) / torch.sqrt(var + eps) * weight + bias"),
        expect=("dim 0", "dim=-1")),
    Wrong("layer_norm", "statistics over dim 1 (the tokens of a 3-D input)", _ln(
        "    mean = x.mean(dim=1, keepdim=True)\n"
        "    var = x.var(dim=1, keepdim=True, unbiased=False)\n"
        "    return (x - mean) / torch.sqrt(var + eps) * weight + bias"),
        expect=("dim 1", "tokens", "dim=-1")),
    Wrong("layer_norm", "mean and variance over all the elements", _ln(
        "    mean = x.mean()\n"
        "    var = x.var(unbiased=False)\n"
        "    return (x - mean) / torch.sqrt(var + eps) * weight + bias"),
        expect=("all the elements", "last dimension")),
    Wrong("layer_norm", "unbiased variance (torch.var default)", _ln(
        "    mean = x.mean(-1, keepdim=True)\n"
        "    var = x.var(-1, keepdim=True)\n"
        "    return (x - mean) / torch.sqrt(var + eps) * weight + bias"),
        expect=("unbiased", "unbiased=False")),
    Wrong("layer_norm", "x.std() + eps (unbiased and eps outside)", _ln(
        "    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps) * weight + bias"),
        expect=("std", "unbiased", "inside the square root")),
    Wrong("layer_norm", "eps outside the square root", _ln(
        "    mean = x.mean(-1, keepdim=True)\n"
        "    std = x.var(-1, keepdim=True, unbiased=False).sqrt()\n"
        "    return (x - mean) / (std + eps) * weight + bias"),
        expect=("inside the square root", "tiny spread")),
    Wrong("layer_norm", "forgets the weight", _ln(
        "    mean = x.mean(-1, keepdim=True)\n"
        "    var = ((x - mean) ** 2).mean(-1, keepdim=True)\n"
        "    return (x - mean) / torch.sqrt(var + eps) + bias"),
        expect=("weight",)),
    Wrong("layer_norm", "forgets the bias", _ln(
        "    mean = x.mean(-1, keepdim=True)\n"
        "    var = ((x - mean) ** 2).mean(-1, keepdim=True)\n"
        "    return (x - mean) / torch.sqrt(var + eps) * weight"),
        expect=("bias",)),
    Wrong("layer_norm", "forgets both weight and bias", _ln(
        "    mean = x.mean(-1, keepdim=True)\n"
        "    var = ((x - mean) ** 2).mean(-1, keepdim=True)\n"
        "    return (x - mean) / torch.sqrt(var + eps)"),
        expect=("without `weight` and `bias`",)),
    Wrong("layer_norm", "mean without keepdim", _ln(
        "    mean = x.mean(-1)\n"
        "    var = ((x - mean[..., None]) ** 2).mean(-1)\n"
        "    return (x - mean) / torch.sqrt(var + eps) * weight + bias"),
        expect=("keepdim",)),
    Wrong("layer_norm", "only subtracts the mean", _ln(
        "    return (x - x.mean(-1, keepdim=True)) * weight + bias"),
        expect=("F.layer_norm", "variance")),
    Wrong("layer_norm", "a fixed eps of 1e-5 instead of the argument", _ln(
        "    mean = x.mean(-1, keepdim=True)\n"
        "    var = x.var(-1, keepdim=True, unbiased=False)\n"
        "    return (x - mean) / torch.sqrt(var + 1e-5) * weight + bias"),
        expect=("eps", "argument")),
    Wrong("layer_norm", "calls F.layer_norm", _ln(
        "    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)"),
        expect=("by hand",)),
    Wrong("layer_norm", "wraps nn.LayerNorm", _ln(
        "    norm = nn.LayerNorm(x.shape[-1], eps=eps)\n"
        "    with torch.no_grad():\n"
        "        norm.weight.copy_(weight)\n"
        "        norm.bias.copy_(bias)\n"
        "    return norm(x)"),
        expect=("by hand",)),
]

RIGHT = [
    Right("layer_norm", "var(unbiased=False) and sqrt", _ln(
        "    spread = x.var(dim=-1, unbiased=False, keepdim=True)  # biased, as LayerNorm's\n"
        "    mean = x.mean(dim=-1, keepdim=True)\n"
        "    return weight * (x - mean) / torch.sqrt(spread + eps) + bias")),
    Right("layer_norm", "torch.rsqrt", _ln(
        "    centred = x - x.mean(-1, keepdim=True)\n"
        "    return centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + eps) * weight + bias")),
    Right("layer_norm", "correction=0 without keepdim, then unsqueeze", _ln(
        "    mu = x.mean(-1)\n"
        "    sigma2 = x.var(-1, correction=0)\n"
        "    z = (x - mu.unsqueeze(-1)) / (sigma2.unsqueeze(-1) + eps).sqrt()\n"
        "    return torch.addcmul(bias, z, weight)")),
    Right("layer_norm", "torch.var_mean and [..., None]", _ln(
        "    var, mean = torch.var_mean(x, dim=-1, correction=0)\n"
        "    return (x - mean[..., None]) / (var[..., None] + eps) ** 0.5 * weight + bias")),
    Right("layer_norm", "unbiased variance rescaled by (d-1)/d", _ln(
        "    d = x.shape[-1]\n"
        "    var = x.var(-1, keepdim=True) * (d - 1) / d\n"
        "    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(var + eps) * weight + bias")),
]

# ---------------------------------------------------------------------------------------------
# query_shift(norm, batch, other)
# ---------------------------------------------------------------------------------------------

_QS = '''def query_shift(norm, batch, other):
{body}
'''


def _qs(body):
    return _QS.format(body=body)


_ROW0 = ("    a = norm(batch)[0]\n"
         "    b = norm(other)[0]\n"
         "    n = min(a.shape[0], b.shape[0])\n")

WRONG += [
    Wrong("query_shift", "compares the whole batches", _qs(
        "    a = norm(batch)\n"
        "    b = norm(other)\n"
        "    n = min(a.shape[1], b.shape[1])\n"
        "    return (a[:, :n] - b[:, :n]).abs().max().item()"),
        expect=("whole batches", "row 0")),
    Wrong("query_shift", "both batches cut to the shorter width before the norm", _qs(
        "    n = min(batch.shape[1], other.shape[1])\n"
        "    with torch.no_grad():\n"
        "        a, b = norm(batch[:, :n])[0], norm(other[:, :n])[0]\n"
        "    return (a - b).abs().max().item()"),
        expect=("each whole batch", "cut")),
    Wrong("query_shift", "the narrower batch padded with zeros before the norm", _qs(
        "    n = max(batch.shape[1], other.shape[1])\n"
        "    with torch.no_grad():\n"
        "        a = norm(torch.nn.functional.pad(batch, (0, 0, 0, n - batch.shape[1])))[0]\n"
        "        b = norm(torch.nn.functional.pad(other, (0, 0, 0, n - other.shape[1])))[0]\n"
        "    return (a - b).abs().max().item()"),
        expect=("each whole batch", "widened")),
    Wrong("query_shift", "row 0's first position only", _qs(
        _ROW0 + "    return (a[0] - b[0]).abs().max().item()"),
        expect=("first position", "every position")),
    Wrong("query_shift", "the mean instead of the max", _qs(
        _ROW0 + "    return (a[:n] - b[:n]).abs().mean().item()"),
        expect=("mean", "largest", ".max()")),
    Wrong("query_shift", "signed max without abs", _qs(
        _ROW0 + "    return (a[:n] - b[:n]).max().item()"),
        expect=("abs",)),
    Wrong("query_shift", "puts the norm in eval mode", _qs(
        "    norm.eval()\n"
        "    with torch.no_grad():\n"
        "        a = norm(batch)[0]\n"
        "        b = norm(other)[0]\n"
        "    n = min(len(a), len(b))\n"
        "    return (a[:n] - b[:n]).abs().max().item()"),
        expect=("evaluation mode", "batch statistics are only used in training mode")),
    Wrong("query_shift", "forces training mode", _qs(
        "    norm.train()\n" + _ROW0 + "    return (a[:n] - b[:n]).abs().max().item()"),
        expect=("mode it is given",)),
    Wrong("query_shift", "normalizes row 0 alone", _qs(
        "    a = norm(batch[:1])[0]\n"
        "    b = norm(other[:1])[0]\n"
        "    n = min(a.shape[0], b.shape[0])\n"
        "    return (a[:n] - b[:n]).abs().max().item()"),
        expect=("whole batch", "batch[:1]")),
    Wrong("query_shift", "returns a tensor", _qs(
        _ROW0 + "    return (a[:n] - b[:n]).abs().max()"),
        expect=("float", ".item()")),
    Wrong("query_shift", "token 0 of every row instead of row 0", _qs(
        "    a = norm(batch)[:, 0]\n"
        "    b = norm(other)[:, 0]\n"
        "    n = min(a.shape[0], b.shape[0])\n"
        "    return (a[:n] - b[:n]).abs().max().item()"),
        expect=("position 0 of every row", "[:, 0]")),
    Wrong("query_shift", "trims only the second output to the first's width", _qs(
        "    a = norm(batch)[0]\n"
        "    b = norm(other)[0][:a.shape[0]]\n"
        "    return (a - b).abs().max().item()"),
        expect=("raised", "positions both have")),
    Wrong("query_shift", "ignores a different width", _qs(
        "    return (norm(batch)[0] - norm(other)[0]).abs().max().item()"),
        expect=("raised", "positions both have")),
]

RIGHT += [
    Right("query_shift", "no_grad, (a - b).abs().max().item()", _qs(
        "    with torch.no_grad():\n"
        "        a = norm(batch)[0]\n"
        "        b = norm(other)[0]\n"
        "    n = min(a.shape[0], b.shape[0])\n"
        "    return (a[:n] - b[:n]).abs().max().item()")),
    Right("query_shift", "float(torch.max(torch.abs(...))) with detach and other names", _qs(
        "    mine, theirs = norm(batch).detach()[0], norm(other).detach()[0]\n"
        "    common = min(len(mine), len(theirs))\n"
        "    return float(torch.max(torch.abs(mine[:common] - theirs[:common])))")),
    Right("query_shift", "narrow to the shorter width, then amax", _qs(
        "    width = min(batch.shape[1], other.shape[1])\n"
        "    out_a = norm(batch)[0].narrow(0, 0, width)\n"
        "    out_b = norm(other)[0].narrow(0, 0, width)\n"
        "    return (out_a - out_b).abs().amax().item()")),
    Right("query_shift", "inference_mode and max of the absolute difference as a norm", _qs(
        "    with torch.inference_mode():\n"
        "        a, b = norm(batch)[0], norm(other)[0]\n"
        "        s = min(a.size(0), b.size(0))\n"
        "        return torch.linalg.vector_norm(a[:s] - b[:s], ord=float('inf')).item()")),
]

# ---------------------------------------------------------------------------------------------
# rms_norm(x, weight, eps=1e-6)
# ---------------------------------------------------------------------------------------------

_RMS = '''def rms_norm(x, weight, eps=1e-6):
{body}
'''


def _rms(body):
    return _RMS.format(body=body)


WRONG += [
    Wrong("rms_norm", "x divided in place by its root mean square (x /= ...)", _rms(
        "    x /= torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)\n"
        "    return x * weight"),
        expect=("rms_norm changed x in place",)),
    Wrong("rms_norm", "the mean subtracted: LayerNorm without its bias", _rms(
        "    centred = x - x.mean(-1, keepdim=True)\n"
        "    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps) * weight"),
        expect=("layernorm", "does not centre")),
    Wrong("rms_norm", "divided by the standard deviation", _rms(
        "    return x / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps) * weight"),
        expect=("standard deviation", "root mean square")),
    Wrong("rms_norm", "eps outside the square root", _rms(
        "    return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight"),
        expect=("rms + eps", "inside the square root")),
    Wrong("rms_norm", "the sum of the squares (the row's length)", _rms(
        "    return x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * weight"),
        expect=("sum of the squares", "mean")),
    Wrong("rms_norm", "no square root", _rms(
        "    return x / (x.pow(2).mean(-1, keepdim=True) + eps) * weight"),
        expect=("mean square itself", "square root")),
    Wrong("rms_norm", "no weight", _rms(
        "    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)"),
        expect=("without `* weight`",)),
    Wrong("rms_norm", "one root mean square over the whole tensor", _rms(
        "    return x / torch.sqrt(x.pow(2).mean() + eps) * weight"),
        expect=("all the elements", "last dimension")),
    Wrong("rms_norm", "a fixed eps", _rms(
        "    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight"),
        expect=("whatever eps", "`eps` argument")),
    Wrong("rms_norm", "PyTorch's own RMSNorm", _rms(
        "    return F.rms_norm(x, (x.shape[-1],), weight, eps)"),
        expect=("pytorch's own rmsnorm", "by hand")),
    Wrong("rms_norm", "a mean without keepdim", _rms(
        "    return x / torch.sqrt(x.pow(2).mean(-1) + eps) * weight"),
        expect=("keepdim=True",)),
]

RIGHT += [
    Right("rms_norm", "rsqrt of the mean square", _rms(
        "    return x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps) * weight")),
    Right("rms_norm", "the vector norm over sqrt(d), in steps", _rms(
        "    d = x.shape[-1]\n"
        "    mean_square = torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2 / d\n"
        "    scale = 1.0 / (mean_square + eps) ** 0.5\n"
        "    return weight * (x * scale)")),
    Right("rms_norm", "einsum for the squares, unsqueeze instead of keepdim", _rms(
        "    mean_square = torch.einsum('...d,...d->...', x, x) / x.size(-1)\n"
        "    return x / (mean_square + eps).sqrt().unsqueeze(-1) * weight")),
]
