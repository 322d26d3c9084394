"""Section 1 (01-heads): wrong answers each check must refuse, and right ones it must accept.

The answer cells run after the notebook's imports (torch, nn, F, math, PAD, attention) and, for
MultiHead, after the solution's split_heads, merge_heads and key_padding_mask.
"""

from grader.catalogue import Right, Wrong

# MultiHead's answers call the student's split_heads, merge_heads and key_padding_mask: a wrong
# helper changes how MultiHead fails, so its wrong answers are graded beside right helpers.
BUILDS_ON = {"MultiHead": ("split_heads", "merge_heads", "key_padding_mask")}

# --------------------------------------------------------------------------------------------- #
# The solution's MultiHead, with one line to swap for each mistake.
# --------------------------------------------------------------------------------------------- #

_INIT = '''\
class MultiHead(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
        self.q = nn.Linear(d_model, d_model)    # queries: what each token asks
        self.k = nn.Linear(d_model, d_model)    # keys: what each token is matched on
        self.v = nn.Linear(d_model, d_model)    # values: what each token passes on
        self.out = nn.Linear(d_model, d_model)  # mixes the heads' results
        self.heads = heads
'''


def _multihead(forward, init=_INIT):
    return init + "\n" + forward


_FORWARD = '''\
    def forward(self, h, mask=None):
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.k(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        mixed, _ = attention(q, k, v, mask)
        return self.out(merge_heads(mixed))
'''

WRONG = [
    # split_heads ---------------------------------------------------------------------------------
    Wrong("split_heads", "view without transpose", '''\
def split_heads(h, heads):
    b, s, d = h.shape
    return h.view(b, heads, s, d // heads)
''', expect=("transpose", "head 0 does not hold features 0-15")),
    Wrong("split_heads", "reshape without transpose", '''\
def split_heads(h, heads):
    b, s, d = h.shape
    return h.reshape(b, heads, s, d // heads)
''', expect=("transpose",)),
    Wrong("split_heads", "view to (b, s, heads, dh) and no transpose", '''\
def split_heads(h, heads):
    b, s, d = h.shape
    return h.view(b, s, heads, d // heads)
''', expect=("(b, s, heads, dh)", "transpose(1, 2)")),
    Wrong("split_heads", "transpose of the wrong axes", '''\
def split_heads(h, heads):
    b, s, d = h.shape
    return h.view(b, s, heads, d // heads).transpose(2, 3)
''', expect=("expected (2, 4, 6, 16)",)),
    Wrong("split_heads", "heads interleaved: feature j goes to head j % heads", '''\
def split_heads(h, heads):
    b, s, d = h.shape
    return h.view(b, s, d // heads, heads).permute(0, 3, 1, 2)
''', expect=("head 0 does not hold features 0-15", "transpose(1, 2)")),
    Wrong("split_heads", "head size fixed at 16", '''\
def split_heads(h, heads):
    b, s, d = h.shape
    return h.view(b, s, -1, 16).transpose(1, 2)
''', expect=("expected (3, 4, 4, 12)",)),

    # merge_heads ---------------------------------------------------------------------------------
    Wrong("merge_heads", "view without transposing back", '''\
def merge_heads(h):
    b, heads, s, dh = h.shape
    return h.view(b, s, heads * dh)
''', expect=("mixes tokens", "transpose(1, 2)")),
    Wrong("merge_heads", "reshape without transposing back", '''\
def merge_heads(h):
    b, heads, s, dh = h.shape
    return h.reshape(b, s, heads * dh)
''', expect=("mixes tokens", "transpose(1, 2)")),
    Wrong("merge_heads", "view after transpose (refused on attention's output)", '''\
def merge_heads(h):
    b, heads, s, dh = h.shape
    return h.transpose(1, 2).view(b, s, heads * dh)
''', expect=("view size is not compatible", "reshape")),
    Wrong("merge_heads", "keeps the heads dimension", '''\
def merge_heads(h):
    return h.transpose(1, 2)
''', expect=("has shape (2, 6, 4, 16), expected (2, 6, 64)",)),
    Wrong("merge_heads", "sums the heads instead of joining them", '''\
def merge_heads(h):
    return h.sum(dim=1)
''', expect=("expected (2, 6, 64)",)),
    Wrong("merge_heads", "joins the heads in reverse order", '''\
def merge_heads(h):
    b, heads, s, dh = h.shape
    return h.flip(1).transpose(1, 2).reshape(b, s, heads * dh)
''', expect=("not the inverse of split_heads",)),

    # key_padding_mask ----------------------------------------------------------------------------
    Wrong("key_padding_mask", "inverted: True at the real tokens", '''\
def key_padding_mask(ids):
    return (ids != PAD)[:, None, None, :]
''', expect=("inverted",)),
    Wrong("key_padding_mask", "shaped (b, 1, s)", '''\
def key_padding_mask(ids):
    return (ids == PAD).unsqueeze(1)
''', expect=("(b, 1, 1, s)", "heads", "broadcast")),
    Wrong("key_padding_mask", "shaped (b, s)", '''\
def key_padding_mask(ids):
    return ids == PAD
''', expect=("(b, 1, 1, s)", "query positions")),
    Wrong("key_padding_mask", "eq_ overwrites the caller's ids with the mask", '''\
def key_padding_mask(ids):
    return ids.eq_(PAD).bool()[:, None, None, :]
''', expect=("changed the ids it was given", "in place")),
    Wrong("key_padding_mask", "float instead of bool", '''\
def key_padding_mask(ids):
    return (ids == PAD).float()[:, None, None, :]
''', expect=("bool", "torch.float32")),
    Wrong("key_padding_mask", "blocks the pad queries, not the pad keys (b, 1, s, 1)", '''\
def key_padding_mask(ids):
    return (ids == PAD)[:, None, :, None]
''', expect=("keys", "(b, 1, 1, s)")),
    Wrong("key_padding_mask", "also blocks the unknown word", '''\
def key_padding_mask(ids):
    return (ids <= 1)[:, None, None, :]
''', expect=("unknown word",)),
    Wrong("key_padding_mask", "a mask of zeros and ones as integers", '''\
def key_padding_mask(ids):
    return (ids == 0).long().view(ids.shape[0], 1, 1, ids.shape[1])
''', expect=("bool",)),
    Wrong("key_padding_mask", "built from a count of real tokens (assumes the pads come last)", '''\
def key_padding_mask(ids):
    lengths = (ids != PAD).sum(dim=1)
    return (torch.arange(ids.shape[1])[None, :] >= lengths[:, None])[:, None, None, :]
''', expect=("count of pads", "not where they are", "wherever")),
    Wrong("key_padding_mask", "True from the first PAD on (cumsum: assumes the pads come last)", '''\
def key_padding_mask(ids):
    return ((ids == PAD).cumsum(dim=1) > 0)[:, None, None, :]
''', expect=("first pad on", "word after a pad", "wherever")),

    # MultiHead -----------------------------------------------------------------------------------
    Wrong("MultiHead", "split with view and no transpose, inside the layer", _multihead('''\
    def forward(self, h, mask=None):
        batch, seq, width = h.shape
        q, k, v = (p(h).view(batch, self.heads, seq, width // self.heads) for p in (self.q, self.k, self.v))
        mixed, _ = attention(q, k, v, mask)
        return self.out(mixed.transpose(1, 2).reshape(batch, seq, width))
'''), expect=("transpose", "only some of the words", "last word")),
    Wrong("MultiHead", "split and merge both without transpose", _multihead('''\
    def forward(self, h, mask=None):
        batch, seq, width = h.shape
        q, k, v = (p(h).reshape(batch, self.heads, seq, width // self.heads) for p in (self.q, self.k, self.v))
        mixed, _ = attention(q, k, v, mask)
        return self.out(mixed.reshape(batch, seq, width))
'''), expect=("transpose",)),
    Wrong("MultiHead", "a mask that may not be left out (mask=None crashes)", _multihead('''\
    def forward(self, h, mask=None):
        q, k, v = (split_heads(p(h), self.heads) for p in (self.q, self.k, self.v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        return self.out(merge_heads(weights @ v))
'''), expect=("without a mask", "mask=None")),
    Wrong("MultiHead", "keys from self.q", _multihead('''\
    def forward(self, h, mask=None):
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.q(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        mixed, _ = attention(q, k, v, mask)
        return self.out(merge_heads(mixed))
'''), expect=("keys from self.q", "nn.MultiheadAttention")),
    Wrong("MultiHead", "queries and keys swapped", _multihead('''\
    def forward(self, h, mask=None):
        q = split_heads(self.k(h), self.heads)
        k = split_heads(self.q(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        mixed, _ = attention(q, k, v, mask)
        return self.out(merge_heads(mixed))
'''), expect=("queries from self.k", "keys from self.q")),
    Wrong("MultiHead", "scaled by sqrt(d_model) instead of sqrt(dh)", _multihead('''\
    def forward(self, h, mask=None):
        d = h.shape[-1]
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.k(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        return self.out(merge_heads(scores.softmax(dim=-1) @ v))
'''), expect=("sqrt(d_model)", "sqrt(dh)")),
    Wrong("MultiHead", "no output projection", _multihead('''\
    def forward(self, h, mask=None):
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.k(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        mixed, _ = attention(q, k, v, mask)
        return merge_heads(mixed)
'''), expect=("self.out",)),
    Wrong("MultiHead", "mask not passed to attention", _multihead('''\
    def forward(self, h, mask=None):
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.k(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        mixed, _ = attention(q, k, v)
        return self.out(merge_heads(mixed))
'''), expect=("without the padding mask",)),
    Wrong("MultiHead", "F.scaled_dot_product_attention with attn_mask=mask (not ~mask)", _multihead('''\
    def forward(self, h, mask=None):
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.k(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        return self.out(merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=mask)))
'''), expect=("attn_mask=~mask",)),
    Wrong("MultiHead", "no ValueError for a bad head count (floor division)", _multihead(_FORWARD, init='''\
class MultiHead(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.q = nn.Linear(d_model, d_model)    # queries: what each token asks
        self.k = nn.Linear(d_model, d_model)    # keys: what each token is matched on
        self.v = nn.Linear(d_model, d_model)    # values: what each token passes on
        self.out = nn.Linear(d_model, d_model)  # mixes the heads' results
        self.heads = heads
'''), expect=("ValueError", "64", "5")),
    Wrong("MultiHead", "a bad head count silently rounded down", _multihead('''\
    def forward(self, h, mask=None):
        b, s, d = h.shape
        dh = d // self.heads
        used = self.heads * dh
        q, k, v = (p(h)[..., :used].reshape(b, s, self.heads, dh).transpose(1, 2)
                   for p in (self.q, self.k, self.v))
        mixed, _ = attention(q, k, v, mask)
        merged = torch.zeros_like(h)
        merged[..., :used] = mixed.transpose(1, 2).reshape(b, s, used)
        return self.out(merged)
''', init=_INIT.replace('''        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
''', "")), expect=("ran without complaint", "ValueError")),
    Wrong("MultiHead", "ValueError whose message does not name the numbers", _multihead(_FORWARD, init=_INIT.replace(
        'f"d_model={d_model} is not divisible by heads={heads}"', '"bad head count"')),
        expect=("should name both numbers",)),
    Wrong("MultiHead", "one fused Linear for q, k, v (no q, k, v children)", '''\
class MultiHead(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, h, mask=None):
        q, k, v = (split_heads(t, self.heads) for t in self.qkv(h).chunk(3, dim=-1))
        mixed, _ = attention(q, k, v, mask)
        return self.out(merge_heads(mixed))
''', expect=("no nn.Linear called `q`",)),
    Wrong("MultiHead", "projections per head (parameters grow with heads)", '''\
class MultiHead(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
        self.q = nn.Linear(d_model, d_model)    # queries: what each token asks
        self.k = nn.Linear(d_model, d_model)    # keys: what each token is matched on
        self.v = nn.Linear(d_model, d_model)    # values: what each token passes on
        self.out = nn.Linear(d_model, d_model)  # mixes the heads' results
        self.heads = heads
        self.mix = nn.ModuleList(nn.Linear(d_model // heads, d_model // heads) for _ in range(heads))

    def forward(self, h, mask=None):
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.k(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        mixed, _ = attention(q, k, v, mask)
        return self.out(merge_heads(mixed))
''', expect=("parameters", "16,640")),
    Wrong("MultiHead", "returns (output, weights)", _multihead('''\
    def forward(self, h, mask=None):
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.k(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        mixed, weights = attention(q, k, v, mask)
        return self.out(merge_heads(mixed)), weights
'''), expect=("tuple",)),
    Wrong("MultiHead", "the value projection's output detached: it cannot train", _multihead(_FORWARD.replace(
        "split_heads(self.v(h), self.heads)", "split_heads(self.v(h).detach(), self.heads)")),
        ("v.weight", "no gradient")),
]

RIGHT = [
    # split_heads ---------------------------------------------------------------------------------
    Right("split_heads", "unflatten then transpose", '''\
def split_heads(h, heads):
    return h.unflatten(-1, (heads, -1)).transpose(1, 2)
'''),
    Right("split_heads", "reshape then permute", '''\
def split_heads(x, n_heads):
    batch, seq, width = x.shape
    return x.reshape(batch, seq, n_heads, width // n_heads).permute(0, 2, 1, 3)
'''),
    Right("split_heads", "torch.stack of slices", '''\
def split_heads(h, heads):
    size = h.shape[-1] // heads
    return torch.stack([h[..., i * size:(i + 1) * size] for i in range(heads)], dim=1)
'''),
    Right("split_heads", "view then swapaxes, contiguous copy", '''\
def split_heads(h, heads):
    b, s, d = h.shape
    return h.view(b, s, heads, d // heads).swapaxes(1, 2).contiguous()
'''),

    # merge_heads ---------------------------------------------------------------------------------
    Right("merge_heads", "transpose, contiguous, view", '''\
def merge_heads(h):
    b, heads, s, dh = h.shape
    return h.transpose(1, 2).contiguous().view(b, s, heads * dh)
'''),
    Right("merge_heads", "right, and it warns and prints as it works", '''\
import warnings


def merge_heads(h):
    warnings.warn(f"merge_heads copies {h.shape[1]} heads into one tensor")
    print("merging", tuple(h.shape))
    return h.transpose(1, 2).flatten(2)
'''),
    Right("merge_heads", "transpose then flatten(2)", '''\
def merge_heads(h):
    return h.transpose(1, 2).flatten(2)
'''),
    Right("merge_heads", "permute then reshape with -1", '''\
def merge_heads(x):
    return x.permute(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)
'''),
    Right("merge_heads", "torch.cat of the heads", '''\
def merge_heads(h):
    return torch.cat(h.unbind(dim=1), dim=-1)
'''),

    # key_padding_mask ----------------------------------------------------------------------------
    Right("key_padding_mask", "eq and two unsqueezes", '''\
def key_padding_mask(ids):
    return ids.eq(PAD).unsqueeze(1).unsqueeze(2)
'''),
    Right("key_padding_mask", "view to (b, 1, 1, s), literal 0", '''\
def key_padding_mask(token_ids):
    b, s = token_ids.shape
    return (token_ids == 0).view(b, 1, 1, s)
'''),
    Right("key_padding_mask", "logical_not of the real tokens", '''\
def key_padding_mask(ids):
    real = ids != PAD
    return torch.logical_not(real)[:, None, None, :]
'''),

    # MultiHead -----------------------------------------------------------------------------------
    Right("MultiHead", "F.scaled_dot_product_attention with attn_mask=~mask", _multihead('''\
    def forward(self, h, mask=None):
        q = split_heads(self.q(h), self.heads)
        k = split_heads(self.k(h), self.heads)
        v = split_heads(self.v(h), self.heads)
        keep = None if mask is None else ~mask
        return self.out(merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=keep)))
''')),
    Right("MultiHead", "einsum attention, its own split, other names, modules built out in another order",
          '''\
class MultiHead(nn.Module):
    def __init__(self, width, n_heads):
        super().__init__()
        if width % n_heads != 0:
            raise ValueError(f"{n_heads} heads cannot split {width} features evenly")
        self.out = nn.Linear(width, width)
        self.v = nn.Linear(width, width)
        self.k = nn.Linear(width, width)
        self.q = nn.Linear(width, width)
        self.n_heads = n_heads
        self.head_size = width // n_heads
        self.scale = 1 / math.sqrt(self.head_size)

    def forward(self, x, mask=None):
        b, t, _ = x.shape
        def cut(y):
            return y.unflatten(-1, (self.n_heads, self.head_size)).permute(0, 2, 1, 3)
        q, k, v = cut(self.q(x)), cut(self.k(x)), cut(self.v(x))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.scale
        if mask is not None:
            scores = scores.masked_fill(mask, -torch.inf)
        mixed = torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v)
        return self.out(mixed.permute(0, 2, 1, 3).flatten(2))
'''),
    Right("MultiHead", "check of the head count inside forward, ValueError there", '''\
class MultiHead(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.q, self.k, self.v, self.out = (nn.Linear(d_model, d_model) for _ in range(4))
        self.heads = heads  # checked in forward, where the width is known

    def forward(self, h, mask=None):
        d = h.shape[-1]
        if d % self.heads:
            raise ValueError(f"{self.heads} heads do not divide d_model {d}")
        q, k, v = (split_heads(p(h), self.heads) for p in (self.q, self.k, self.v))
        mixed, _ = attention(q, k, v, mask)
        return self.out(merge_heads(mixed))
'''),
    Right("MultiHead", "stores the attention weights as a helper attribute", _multihead('''\
    def forward(self, h, mask=None):
        q, k, v = (split_heads(p(h), self.heads) for p in (self.q, self.k, self.v))
        mixed, self.last_weights = attention(q, k, v, mask)
        return self.out(merge_heads(mixed))
''')),
]

# causal_mask(ids) -------------------------------------------------------------------------------

_CAUSAL = '''def causal_mask(ids):
    s = ids.shape[1]
{body}
'''


def _causal(body):
    return _CAUSAL.format(body=body)


WRONG += [
    Wrong("causal_mask", "eq_ overwrites the caller's ids with the pads", '''\
def causal_mask(ids):
    s = ids.shape[1]
    later = torch.ones(s, s, dtype=torch.bool).triu(1)
    return ids.eq_(PAD).bool()[:, None, None, :] | later
''', expect=("changed the ids it was given", "in place")),
    Wrong("causal_mask", "the diagonal blocked too", _causal(
        "    return torch.ones(s, s, dtype=torch.bool).triu(0) | (ids == PAD)[:, None, None, :]"),
        expect=("diagonal", "read itself", "nan")),
    Wrong("causal_mask", "the triangle transposed", _causal(
        "    return torch.ones(s, s, dtype=torch.bool).tril(-1) | (ids == PAD)[:, None, None, :]"),
        expect=("transposed", "before each query")),
    Wrong("causal_mask", "no padding", _causal(
        "    return torch.ones(s, s, dtype=torch.bool).triu(1).expand(ids.shape[0], 1, s, s)"),
        expect=("pads are not blocked",)),
    Wrong("causal_mask", "no causal part", _causal(
        "    return (ids == PAD)[:, None, None, :].expand(-1, 1, s, s)"),
        expect=("no causal part", "diagonal=1")),
    Wrong("causal_mask", "inverted: True where a query may read", _causal(
        "    return ~(torch.ones(s, s, dtype=torch.bool).triu(1) | (ids == PAD)[:, None, None, :])"),
        expect=("inverted",)),
    Wrong("causal_mask", "the pads blocked as queries", _causal(
        "    return torch.ones(s, s, dtype=torch.bool).triu(1) | (ids == PAD)[:, None, :, None]"),
        expect=("as queries", "keys")),
    Wrong("causal_mask", "& where | is needed", _causal(
        "    return torch.ones(s, s, dtype=torch.bool).triu(1) & (ids == PAD)[:, None, None, :]"),
        expect=("combined with &",)),
    Wrong("causal_mask", "no heads dimension", _causal(
        "    return torch.ones(s, s, dtype=torch.bool).triu(1) | (ids == PAD)[:, None, :]"),
        expect=("one dimension short", "(b, 1, s, s)")),
    Wrong("causal_mask", "the causal part alone, (s, s)", _causal(
        "    return torch.ones(s, s, dtype=torch.bool).triu(1)"),
        expect=("causal part alone", "(b, 1, s, s)")),
    Wrong("causal_mask", "a float mask", _causal(
        "    return (torch.ones(s, s).triu(1) + (ids == PAD)[:, None, None, :].float()).clamp(max=1)"),
        expect=("dtype", "bool")),
    Wrong("causal_mask", "pads from a count of real tokens (assumes the pads come last)", '''\
def causal_mask(ids):
    s = ids.shape[1]
    lengths = (ids != PAD).sum(dim=1)
    pads = torch.arange(s)[None, :] >= lengths[:, None]
    ahead = torch.arange(s)[None, :] > torch.arange(s)[:, None]
    return ahead | pads[:, None, None, :]
''', expect=("count of pads", "not where they are", "wherever")),
    Wrong("causal_mask", "pads from the first PAD on (cumsum: assumes the pads come last)", _causal(
        "    pads = (ids == PAD).cumsum(dim=1) > 0\n"
        "    return torch.ones(s, s, dtype=torch.bool).triu(1) | pads[:, None, None, :]"),
        expect=("first pad on", "word after a pad", "wherever")),
]

RIGHT += [
    Right("causal_mask", "tril of allowed keys, negated", _causal(
        "    allowed = torch.tril(torch.ones(s, s, dtype=torch.bool))\n"
        "    return ~allowed.view(1, 1, s, s) | (ids == PAD).view(-1, 1, 1, s)")),
    Right("causal_mask", "logical_or of two broadcast masks", _causal(
        "    positions = torch.arange(s)\n"
        "    later = positions.unsqueeze(0) > positions.unsqueeze(1)\n"
        "    return torch.logical_or(later, ids.eq(PAD).unsqueeze(1).unsqueeze(2))")),
    Right("causal_mask", "a loop filling each ticket's table", _causal(
        "    out = torch.zeros(ids.shape[0], 1, s, s, dtype=torch.bool)\n"
        "    for b in range(ids.shape[0]):\n"
        "        for i in range(s):\n"
        "            for j in range(s):\n"
        "                out[b, 0, i, j] = j > i or bool(ids[b, j] == PAD)\n"
        "    return out")),
]
