"""Section 2, positions: known wrong answers (each with words its message must contain) and
alternative right answers for LearnedPositions, sinusoid and mean_pool."""

from grader.catalogue import Right, Wrong

# ---------------------------------------------------------------------------------------------
# LearnedPositions
# ---------------------------------------------------------------------------------------------

_CHECKED = '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, h):
        s = h.shape[1]
        if s > self.max_len:
            raise ValueError(f"{s} tokens but the table has {self.max_len} rows")
        {body}
'''


def _learned(body):
    return _CHECKED.replace("{body}", body)


def _sinusoid(even="sin", odd="cos", steps="torch.arange(0, d, 2) / d", base="10000",
              positions="torch.arange(length)", tail=""):
    """A sinusoid answer cell with one thing changed."""
    odd_line = f"    out[:, 1::2] = theta.{odd}()\n" if odd else ""
    return (f"def sinusoid(length, d):\n"
            f"    theta = {positions}[:, None] / {base} ** ({steps})\n"
            f"    out = torch.zeros(length, d)\n"
            f"    out[:, ::2] = theta.{even}()\n{odd_line}"
            f"    return out{tail}\n")


WRONG = [
    Wrong("LearnedPositions", "the table read detached: it never learns",
          _learned("return h + self.table.weight.detach()[:s]"),
          expect=("table.weight", "no gradient", "detached")),
    Wrong("LearnedPositions", "positions indexed by token id (the values of h)",
          _learned("return h + self.table(h.long())"),
          expect=("positions 0 to s - 1", "not the values of h")),
    Wrong("LearnedPositions", "forward written for token ids, returns their embedding",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, ids):
        return self.table(ids)
''', expect=("raised", "positions 0 to s - 1")),
    Wrong("LearnedPositions", "position vectors sliced but not added (returned alone, no batch)",
          _learned("return self.table.weight[:s]"),
          expect=("alone", "add them to h")),
    Wrong("LearnedPositions", "position vectors returned alone, expanded to the batch",
          _learned("return self.table(torch.arange(s)).expand_as(h)"),
          expect=("alone", "add them to h")),
    Wrong("LearnedPositions", "positions never added (h returned unchanged)",
          _learned("return h"),
          expect=("unchanged",)),
    Wrong("LearnedPositions", "no length check: nn.Embedding's bare IndexError",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, h):
        return h + self.table(torch.arange(h.shape[1]))
''', expect=("does not name the limit", "index out of range")),
    Wrong("LearnedPositions", "no length check on a sliced nn.Parameter (broadcast RuntimeError)",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.table = nn.Parameter(torch.randn(max_len, d_model))

    def forward(self, h):
        return h + self.table[:h.shape[1]]
''', expect=("RuntimeError", "ValueError", "names the limit")),
    Wrong("LearnedPositions", "error message names the limit but not the length",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, h):
        if h.shape[1] > self.max_len:
            raise ValueError(f"sequence too long, the limit is {self.max_len}")
        return h + self.table(torch.arange(h.shape[1]))
''', expect=("does not name", "length asked for")),
    Wrong("LearnedPositions", "off by one: a sequence of exactly max_len refused",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, h):
        if h.shape[1] >= self.max_len:
            raise ValueError(f"cannot read {h.shape[1]} tokens, the table has {self.max_len}")
        return h + self.table(torch.arange(h.shape[1]))
''', expect=("exactly 120 tokens", "s > max_len")),
    Wrong("LearnedPositions", "indexed by the row of the batch instead of the position",
          _learned("return h + self.table(torch.arange(len(h)))[:, None, :]"),
          expect=("differs between the rows", "torch.arange(h.shape[0])")),
    Wrong("LearnedPositions", "table kept as a plain tensor (not trainable)",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.table = torch.randn(max_len, d_model)

    def forward(self, h):
        if h.shape[1] > self.max_len:
            raise ValueError(f"cannot read {h.shape[1]} tokens, the table has {self.max_len}")
        return h + self.table[:h.shape[1]]
''', expect=("no trainable parameters", "nn.Parameter")),
    Wrong("LearnedPositions", "an extra bias beside the table",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Embedding(max_len, d_model)
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, h):
        if h.shape[1] > self.max_len:
            raise ValueError(f"cannot read {h.shape[1]} tokens, the table has {self.max_len}")
        return h + self.table(torch.arange(h.shape[1])) + self.bias
''', expect=("parameters", "max_len x d_model")),
    Wrong("LearnedPositions", "table transposed (d_model, max_len)",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Parameter(torch.randn(d_model, max_len))

    def forward(self, h):
        if h.shape[1] > self.max_len:
            raise ValueError(f"cannot read {h.shape[1]} tokens, the table has {self.max_len}")
        return h + self.table[:, :h.shape[1]].T
''', expect=("one trainable table of shape (120, 64)",)),
    Wrong("LearnedPositions", "positions past the table clamped to its last row (no error)",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, h):
        where = torch.arange(h.shape[1]).clamp(max=self.table.num_embeddings - 1)
        return h + self.table(where)
''', expect=("raised no error",)),
    Wrong("LearnedPositions", "adds in place to the caller's h",
          _learned("h += self.table(torch.arange(s))\n        return h"),
          expect=("in place",)),
    Wrong("LearnedPositions", "nn.Embedding with padding_idx=0: row 0 never learns",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.rows = nn.Embedding(max_len, d_model, padding_idx=0)

    def forward(self, h):
        s = h.shape[1]
        if s > self.max_len:
            raise ValueError(f"cannot read a sequence of {s} tokens: the position table has {self.max_len} rows")
        return h + self.rows(torch.arange(s, device=h.device))
''', expect=("row 0", "no gradient", "padding_idx")),
    Wrong("LearnedPositions", "row 0 of the table read detached: it never learns",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Parameter(torch.randn(max_len, d_model))

    def forward(self, h):
        s = h.shape[1]
        if s > self.max_len:
            raise ValueError(f"cannot read {s} tokens: the position table has {self.max_len} rows")
        rows = torch.cat([self.table[:1].detach(), self.table[1:s]])
        return h + rows
''', expect=("row 0", "no gradient", "detached")),
    Wrong("LearnedPositions", "error message names the tokens of the whole batch, not the length",
          '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.rows = nn.Parameter(torch.randn(max_len, d_model))

    def forward(self, h):
        if h.shape[1] > self.max_len:
            raise ValueError(f"cannot read {h.numel() // h.shape[-1]} tokens: the position table has {self.max_len} rows")
        return h + self.rows[:h.shape[1]]
''', expect=("length asked for", "whole batch")),

    # -----------------------------------------------------------------------------------------
    # sinusoid
    # -----------------------------------------------------------------------------------------
    Wrong("sinusoid", "sin and cos swapped",
          _sinusoid(even="cos", odd="sin"), expect=("swapped",)),
    Wrong("sinusoid", "exponent i/d instead of 2i/d",
          _sinusoid(steps="torch.arange(d // 2) / d"), expect=("i/d", "2i/d")),
    Wrong("sinusoid", "sin on the first half, cos on the second (concatenated, not interleaved)",
          '''
def sinusoid(length, d):
    theta = torch.arange(length)[:, None] / 10000 ** (torch.arange(0, d, 2) / d)
    return torch.cat([theta.sin(), theta.cos()], dim=1)
''', expect=("interleaves",)),
    Wrong("sinusoid", "base 1000 instead of 10000",
          _sinusoid(base="1000"), expect=("1000", "10000")),
    Wrong("sinusoid", "integer division in the exponent (every pair turns at speed 1)",
          _sinusoid(steps="torch.arange(0, d, 2) // d"), expect=("differs", "10000^(2i/d)")),
    Wrong("sinusoid", "each column its own angle (j/d over all columns, pairs not sharing)",
          '''
def sinusoid(length, d):
    theta = torch.arange(length)[:, None] / 10000 ** (torch.arange(d) / d)
    out = theta.sin()
    out[:, 1::2] = theta[:, 1::2].cos()
    return out
''', expect=("norm", "same angle")),
    Wrong("sinusoid", "odd columns left at zero (sines only)",
          _sinusoid(odd=None), expect=("odd columns", "cosines")),
    Wrong("sinusoid", "positions counted from 1",
          _sinusoid(positions="torch.arange(1, length + 1)"), expect=("start at 0",)),
    Wrong("sinusoid", "table transposed (d, length)",
          _sinusoid(tail=".T"), expect=("transposed",)),
    Wrong("sinusoid", "a table of 512 rows, sliced (longer lengths get 512 rows)",
          '''
def sinusoid(length, d):
    exponents = torch.arange(0, d, 2, dtype=torch.float32) / d
    angles = torch.arange(512, dtype=torch.float32)[:, None] / 10000 ** exponents
    return torch.stack((angles.sin(), angles.cos()), dim=-1).reshape(512, d)[:length]
''', expect=("long table", "one row for every position", "fixed number of rows")),
    Wrong("sinusoid", "positions taken modulo 256 (the table wraps around)",
          _sinusoid(positions="(torch.arange(length) % 256)"), expect=("position 256", "wrap around")),

    # -----------------------------------------------------------------------------------------
    # mean_pool
    # -----------------------------------------------------------------------------------------
    Wrong("sinusoid", "the width fixed at 64 in the exponent", _sinusoid(steps="torch.arange(0, d, 2) / 64"),
          expect=("width", "2i/d")),
    Wrong("mean_pool", "plain mean over every position, pads included",
          '''
def mean_pool(h, pad):
    return h.mean(dim=1)
''', expect=("pads", "included")),
    Wrong("mean_pool", "real tokens summed but divided by the padded length",
          '''
def mean_pool(h, pad):
    keep = (~pad).unsqueeze(-1).float()
    return (h * keep).sum(1) / h.shape[1]
''', expect=("padded length",)),
    Wrong("mean_pool", "pad mask inverted (mean of the pads)",
          '''
def mean_pool(h, pad):
    keep = pad.unsqueeze(-1).float()
    return (h * keep).sum(1) / keep.sum(1)
''', expect=("averaged the pads", "~pad")),
    Wrong("mean_pool", "sum of the real tokens, never divided",
          '''
def mean_pool(h, pad):
    return h.masked_fill(pad.unsqueeze(-1), 0).sum(1)
''', expect=("sum",)),
    Wrong("mean_pool", "masked_fill_ zeroes the caller's pads in place",
          '''
def mean_pool(h, pad):
    h.masked_fill_(pad.unsqueeze(-1), 0.0)
    return h.sum(1) / (~pad).sum(1, keepdim=True)
''', expect=("in place",)),
    Wrong("mean_pool", "first n tokens of each row (assumes the pads come last)",
          '''
def mean_pool(h, pad):
    counts = (~pad).sum(1)
    return torch.stack([h[i, :n].mean(0) for i, n in enumerate(counts.tolist())])
''', expect=("pads first", "mask itself")),
    Wrong("mean_pool", "every position from the first real token to the last (assumes one block)",
          '''
def mean_pool(h, pad):
    rows = []
    for r in range(h.shape[0]):
        where = (~pad[r]).nonzero().flatten()
        rows.append(h[r, int(where[0]):int(where[-1]) + 1].mean(0))
    return torch.stack(rows)
''', expect=("pads between them", "those pads included", "anywhere")),
    Wrong("mean_pool", "count of real tokens not kept as a column",
          '''
def mean_pool(h, pad):
    return (h * (~pad).unsqueeze(-1)).sum(1) / (~pad).sum(1)
''', expect=("raised RuntimeError",)),
    Wrong("mean_pool", "averaged over the features instead of the tokens",
          '''
def mean_pool(h, pad):
    return h.masked_fill(pad.unsqueeze(-1), 0).sum(-1) / (~pad).sum(1, keepdim=True)
''', expect=("one number per token", "averaged over the features", "dim=1")),
]

RIGHT = [
    Right("LearnedPositions", "nn.Parameter table with slicing, IndexError naming both numbers", '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.limit = max_len
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, h):
        length = h.size(1)
        if length > self.limit:
            raise IndexError(f"position table holds {self.limit} positions; got a length of {length}")
        return h + self.weight[:length].unsqueeze(0)
'''),
    Right("LearnedPositions", "nn.Embedding with torch.arange and a buffer of positions", '''
class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.register_buffer("where", torch.arange(max_len), persistent=False)
        self.pos_embedding = nn.Embedding(max_len, d_model)

    def forward(self, h):
        b, s, d = h.shape
        if s > len(self.where):
            raise ValueError("max_len=%d but the sequence has %d tokens" % (len(self.where), s))
        return self.pos_embedding(self.where[:s]).expand(b, s, d) + h
'''),
    Right("LearnedPositions", "zero-initialised parameter, F.embedding, num_embeddings read back", '''
import torch.nn.functional as F

class LearnedPositions(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.P = nn.Parameter(torch.zeros(max_len, d_model))

    def forward(self, h):
        n = h.shape[-2]
        if n > self.P.shape[0]:
            raise ValueError(f"cannot read a sequence of {n} tokens, the position table has {self.P.shape[0]}")
        return h + F.embedding(torch.arange(n), self.P)
'''),

    Right("sinusoid", "slices assigned from one (length, d/2) table of angles", '''
def sinusoid(length, d):
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    angle = pos / torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.empty(length, d)
    pe[:, 0::2] = angle.sin()
    pe[:, 1::2] = angle.cos()
    return pe
'''),
    Right("sinusoid", "frequencies as exp(-log(10000) * 2i/d) and torch.outer", '''
import math

def sinusoid(length, d):
    freq = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    angles = torch.outer(torch.arange(length).float(), freq)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=2).flatten(1)
'''),
    Right("sinusoid", "NumPy in float64, returned as a tensor", '''
import numpy as np

def sinusoid(length, d):
    positions = np.arange(length)[:, None]
    i = np.arange(d // 2)[None, :]
    angles = positions / np.power(10000, 2 * i / d)
    table = np.zeros((length, d))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return torch.tensor(table)
'''),
    Right("sinusoid", "plain loops with math.sin and math.cos", '''
import math

def sinusoid(length, d):
    table = torch.zeros(length, d)
    for pos in range(length):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            table[pos, 2 * i] = math.sin(angle)
            table[pos, 2 * i + 1] = math.cos(angle)
    return table
'''),

    Right("mean_pool", "masked_fill, sum and count", '''
def mean_pool(h, pad):
    summed = h.masked_fill(pad.unsqueeze(-1), 0.0).sum(dim=1)
    count = (~pad).sum(dim=1).unsqueeze(-1)
    return summed / count
'''),
    Right("mean_pool", "einsum with a float mask", '''
def mean_pool(h, pad):
    w = (~pad).float()
    return torch.einsum("bs,bsd->bd", w, h) / w.sum(1, keepdim=True)
'''),
    Right("mean_pool", "a loop over rows with boolean indexing", '''
def mean_pool(h, pad):
    return torch.stack([row[~p].mean(dim=0) for row, p in zip(h, pad)])
'''),
    Right("mean_pool", "nanmean over pads set to nan", '''
def mean_pool(h, pad):
    return h.masked_fill(pad[:, :, None], float("nan")).nanmean(dim=1)
'''),
]
