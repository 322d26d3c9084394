"""Section 7 (07-banking77): wrong answers each check must refuse, and right ones it must accept.

The answer cells run after the notebook's imports (torch, nn, PAD, TinyTransformer from ticketnet).

Why a reversal is wrong: shuffle_tokens is a probe of whether a model reads word order, and the
probe must give each query a random order drawn from the generator. A reversal is one fixed order
for every seed: it keeps every pair of neighbours side by side (only flipped), so a model that reads
short phrases can still recognise them, and repeating the probe with other seeds measures nothing
new. The check therefore asks that different seeds give different orders, which refuses the
identity, a reversal and any other fixed reordering alike. A rotation by a random shift is random
but no better a probe: it keeps every pair of neighbours but one, so the check also asks, over many
seeds, that the rows do not move as blocks, and that every position changes token in some draw (a
shuffle that leaves the first word in front keeps the word that often names the intent).
"""

from grader.catalogue import Right, Wrong

# --------------------------------------------------------------------------------------------- #
# shuffle_tokens
# --------------------------------------------------------------------------------------------- #

_SHUFFLE = '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    lengths = (ids != PAD).sum(dim=1)
    for row, n in enumerate(lengths.tolist()):
        out[row, :n] = ids[row, :n][torch.randperm(n, generator=generator)]
    return out
'''

WRONG = [
    Wrong("shuffle_tokens", "shuffles the pads too (a permutation of all the columns of each row)", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    for row in range(ids.shape[0]):
        out[row] = ids[row][torch.randperm(ids.shape[1], generator=generator)]
    return out
''', expect=("pads moved", "real tokens")),
    Wrong("shuffle_tokens", "modifies the input in place", '''\
def shuffle_tokens(ids, generator):
    for row in ids:
        n = int((row != PAD).sum())
        row[:n] = row[:n][torch.randperm(n, generator=generator)]
    return ids
''', expect=("in place", "clone")),
    Wrong("shuffle_tokens", "one permutation of the columns for every row, ignoring the lengths", '''\
def shuffle_tokens(ids, generator):
    order = torch.randperm(ids.shape[1], generator=generator)
    return ids[:, order]
''', expect=("pads moved",)),
    Wrong("shuffle_tokens", "one permutation of the shortest length applied to every row", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    n = int((ids != PAD).sum(dim=1).min())
    order = torch.randperm(n, generator=generator)
    out[:, :n] = ids[:, :n][:, order]
    return out
''', expect=("never move", "own length")),
    Wrong("shuffle_tokens", "torch.randperm without the generator (not repeatable)", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    for row in range(ids.shape[0]):
        n = int((ids[row] != PAD).sum())
        out[row, :n] = ids[row, :n][torch.randperm(n)]
    return out
''', expect=("generator", "seeded alike")),
    Wrong("shuffle_tokens", "returns the input unchanged", '''\
def shuffle_tokens(ids, generator):
    return ids.clone()
''', expect=("unchanged",)),
    Wrong("shuffle_tokens", "returns the very input tensor", '''\
def shuffle_tokens(ids, generator):
    return ids
''', expect=("unchanged",)),
    Wrong("shuffle_tokens", "reverses the real tokens instead of shuffling them (a fixed order)", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    for row in range(ids.shape[0]):
        n = int((ids[row] != PAD).sum())
        out[row, :n] = ids[row, :n].flip(0)
    return out
''', expect=("reverses", "fixed order")),
    Wrong("shuffle_tokens", "shuffles the rows of the batch, not the words", '''\
def shuffle_tokens(ids, generator):
    return ids[torch.randperm(ids.shape[0], generator=generator)]
''', expect=("same tokens", "rows of the batch")),
    Wrong("shuffle_tokens", "a rotation by one place (a fixed order)", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    for row in range(ids.shape[0]):
        n = int((ids[row] != PAD).sum())
        out[row, :n] = ids[row, :n].roll(1)
    return out
''', expect=("seeds", "same order")),
    Wrong("shuffle_tokens", "forgets to return", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    for row in range(ids.shape[0]):
        n = int((ids[row] != PAD).sum())
        out[row, :n] = ids[row, :n][torch.randperm(n, generator=generator)]
''', expect=("return",)),
    Wrong("shuffle_tokens", "a rotation by a random shift (neighbours stay together)", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    real = (ids != PAD).sum(dim=1)
    for row, n in enumerate(real.tolist()):
        if n > 1:
            shift = int(torch.randint(1, n, (1,), generator=generator))
            out[row, :n] = torch.roll(ids[row, :n], shift)
    return out
''', expect=("neighbours", "rotation")),
    Wrong("shuffle_tokens", "positions 1..n-1 shuffled, the first token never moved", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    real = (ids != PAD).sum(dim=1)
    for row, n in enumerate(real.tolist()):
        if n > 1:
            out[row, 1:n] = ids[row, 1:n][torch.randperm(n - 1, generator=generator)]
    return out
''', expect=("never moved", "first token")),
]

RIGHT = [
    Right("shuffle_tokens", "the solution", _SHUFFLE),
    Right("shuffle_tokens", "argsort of random keys, pads sorted last", '''\
def shuffle_tokens(ids, generator):
    keys = torch.rand(ids.shape, generator=generator)
    keys = keys.masked_fill(ids == PAD, 2.0)  # pads get the largest keys and stay at the right
    order = keys.argsort(dim=1)
    return ids.gather(1, order)
'''),
    Right("shuffle_tokens", "a list of rows rebuilt with torch.cat and torch.stack", '''\
def shuffle_tokens(ids, generator):
    rows = []
    for row in ids:
        real = row[row != PAD]
        mixed = real[torch.randperm(len(real), generator=generator)]
        rows.append(torch.cat([mixed, row[len(real):]]))
    return torch.stack(rows)
'''),
    Right("shuffle_tokens", "one permutation of the longest length, filtered for each row", '''\
def shuffle_tokens(ids, generator):
    out = ids.clone()
    order = torch.randperm(ids.shape[1], generator=generator)
    for row in range(ids.shape[0]):
        n = int((ids[row] != PAD).sum().item())
        out[row, :n] = ids[row, order[order < n]]
    return out
'''),
]

# --------------------------------------------------------------------------------------------- #
# SinusoidEncoder (one answer cell defines sinusoid and the class)
# --------------------------------------------------------------------------------------------- #

_SINUSOID = '''\
def sinusoid(length, d):
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    angle = position / 10000 ** (torch.arange(0, d, 2) / d)
    waves = torch.empty(length, d)  # even columns sine, odd columns cosine, pair by pair
    waves[:, 0::2] = torch.sin(angle)
    waves[:, 1::2] = torch.cos(angle)
    return waves

'''

_FORWARD = '''\
    def forward(self, ids):
        h = self.embed(ids) + sinusoid(ids.shape[1], self.embed.embedding_dim)
        h = self.blocks(h, src_key_padding_mask=ids == PAD)
        keep = (ids != PAD).unsqueeze(-1).float()
        return self.out((self.norm(h) * keep).sum(1) / keep.sum(1))
'''

_INIT = '''\
class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, positions=False)

'''


def _encoder(forward=_FORWARD, init=_INIT, table=_SINUSOID):
    return table + init + forward


# The audit's answers (issue: blind spots of the SinusoidEncoder check): the sinusoid of the stack and
# flatten form, and the subclass whose forward names each step.
_STACKED = '''\
def sinusoid(length, d):
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    angle = position / 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)

'''

_STEPS = '''\
class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, positions=False)

    def forward(self, ids):
        h = self.embed(ids)
        h = h + sinusoid(ids.shape[1], h.shape[2])
        pad = ids == PAD
        h = self.blocks(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        return self.out((self.norm(h) * keep).sum(1) / keep.sum(1))
'''

_TABLE_300 = '''\
class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, positions=False)
        self.register_buffer("table", sinusoid(300, 64), persistent=False)

    def forward(self, ids):
        h = self.embed(ids)
        h = h + self.table[:ids.shape[1]]
        pad = ids == PAD
        h = self.blocks(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        return self.out((self.norm(h) * keep).sum(1) / keep.sum(1))
'''


WRONG += [
    Wrong("SinusoidEncoder", "the learned table of 48 rows kept (fails on 200 tokens)", '''\
class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, max_tokens=48)
''', expect=("200 tokens", "fixed number of rows")),
    Wrong("SinusoidEncoder", "sin and cos swapped", _encoder(table=_SINUSOID.replace(
        "waves[:, 0::2] = torch.sin(angle)\n    waves[:, 1::2] = torch.cos(angle)",
        "waves[:, 0::2] = torch.cos(angle)\n    waves[:, 1::2] = torch.sin(angle)")),
        expect=("swapped",)),
    Wrong("SinusoidEncoder", "sines then cosines concatenated, not interleaved", _encoder(table='''\
def sinusoid(length, d):
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    angle = position / 10000 ** (torch.arange(0, d, 2) / d)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)

'''), expect=("interleaved",)),
    Wrong("SinusoidEncoder", "no positions at all", _SINUSOID + '''\
class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, positions=False)
''', expect=("nothing added", "before the blocks")),
    Wrong("SinusoidEncoder", "positions added after the blocks", _encoder(forward='''\
    def forward(self, ids):
        h = self.blocks(self.embed(ids), src_key_padding_mask=ids == PAD)
        h = h + sinusoid(ids.shape[1], h.shape[-1])
        keep = (ids != PAD).unsqueeze(-1).float()
        return self.out((self.norm(h) * keep).sum(1) / keep.sum(1))
'''), expect=("before the blocks",)),
    Wrong("SinusoidEncoder", "the table registered as a trainable nn.Parameter", _encoder(init='''\
class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, positions=False)
        self.table = nn.Parameter(sinusoid(512, self.embed.embedding_dim))

''', forward='''\
    def forward(self, ids):
        h = self.embed(ids) + self.table[:ids.shape[1]]
        h = self.blocks(h, src_key_padding_mask=ids == PAD)
        keep = (ids != PAD).unsqueeze(-1).float()
        return self.out((self.norm(h) * keep).sum(1) / keep.sum(1))
'''), expect=("trainable parameters", "register_buffer")),
    Wrong("SinusoidEncoder", "a table of 48 rows computed once (fails on 200 tokens)", _encoder(init='''\
class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, positions=False)
        self.register_buffer("table", sinusoid(48, self.embed.embedding_dim))

''', forward='''\
    def forward(self, ids):
        h = self.embed(ids) + self.table
        h = self.blocks(h, src_key_padding_mask=ids == PAD)
        keep = (ids != PAD).unsqueeze(-1).float()
        return self.out((self.norm(h) * keep).sum(1) / keep.sum(1))
'''), expect=("could not read", "length of the batch")),
    Wrong("SinusoidEncoder", "blocks run without the padding mask", _encoder(forward='''\
    def forward(self, ids):
        h = self.embed(ids) + sinusoid(ids.shape[1], self.embed.embedding_dim)
        h = self.blocks(h)
        keep = (ids != PAD).unsqueeze(-1).float()
        return self.out((self.norm(h) * keep).sum(1) / keep.sum(1))
'''), expect=("pad", "src_key_padding_mask")),
    Wrong("SinusoidEncoder", "mean over every column, pads included", _encoder(forward='''\
    def forward(self, ids):
        h = self.embed(ids) + sinusoid(ids.shape[1], self.embed.embedding_dim)
        h = self.blocks(h, src_key_padding_mask=ids == PAD)
        return self.out(self.norm(h).mean(dim=1))
'''), expect=("pad", "real tokens only")),
    Wrong("SinusoidEncoder", "base 100 instead of 10000", _encoder(table=_SINUSOID.replace(
        "10000 **", "100 **")), expect=("base is 100",)),
    Wrong("SinusoidEncoder", "final norm skipped", _encoder(forward='''\
    def forward(self, ids):
        h = self.embed(ids) + sinusoid(ids.shape[1], self.embed.embedding_dim)
        h = self.blocks(h, src_key_padding_mask=ids == PAD)
        keep = (ids != PAD).unsqueeze(-1).float()
        return self.out((h * keep).sum(1) / keep.sum(1))
'''), expect=("output", "final norm")),
    Wrong("SinusoidEncoder", "sinusoid divides by 64, not by d (right only at the encoder's width)",
          _STACKED.replace("/ d)", "/ 64)") + _STEPS, expect=("width", "its own d")),
    Wrong("SinusoidEncoder", "a buffer of 300 rows computed once (fails past 300 tokens)",
          _STACKED + _TABLE_300, expect=("could not read", "fixed number of rows")),
    Wrong("SinusoidEncoder", "positions capped at 119 in sinusoid", _STACKED.replace(
        "torch.arange(length, dtype=torch.float32).unsqueeze(1)",
        "torch.arange(length, dtype=torch.float32).clamp(max=119).unsqueeze(1)") + _STEPS,
        expect=("from position 120", "fixed length")),
    Wrong("SinusoidEncoder", "dropout 0.5 passed to TinyTransformer (eval mode hides it)", _STACKED + _STEPS.replace(
        "positions=False)", "positions=False, dropout=0.5)"), expect=("dropout", "TinyTransformer's default")),
    Wrong("SinusoidEncoder", "the sinusoid added only when not training", _STACKED + _STEPS.replace(
        "        h = h + sinusoid(ids.shape[1], h.shape[2])\n",
        "        if not self.training:\n            h = h + sinusoid(ids.shape[1], h.shape[2])\n"),
        expect=("training", "sinusoid is not added")),
    Wrong("SinusoidEncoder", "the token embeddings detached: they cannot train",
          _STACKED + _STEPS.replace("        h = self.embed(ids)\n", "        h = self.embed(ids).detach()\n"),
          ("embed.weight", "no gradient")),
]

RIGHT += [
    Right("SinusoidEncoder", "the solution: a subclass whose forward adds the table", _encoder()),
    Right("SinusoidEncoder", "a wrapper around TinyTransformer, table as a buffer of 1,024 rows", _SINUSOID + '''\
class SinusoidEncoder(nn.Module):
    def __init__(self, vocab_size, classes):
        super().__init__()
        self.net = TinyTransformer(vocab_size, classes=classes, positions=False)
        self.register_buffer("table", sinusoid(1024, self.net.embed.embedding_dim), persistent=False)

    def forward(self, ids):
        net = self.net
        s = ids.shape[1]
        h = net.embed(ids) + self.table[:s]          # (b, s, d)
        pad = ids == PAD
        for layer in net.blocks.layers:
            h = layer(h, src_key_padding_mask=pad)
        h = net.norm(h).masked_fill(pad.unsqueeze(-1), 0.0)
        return net.out(h.sum(1) / (~pad).sum(1, keepdim=True))
'''),
    Right("SinusoidEncoder", "a forward hook on the embedding, TinyTransformer's forward unchanged", '''\
def sinusoid(length, d):
    i = torch.arange(d // 2, dtype=torch.float32)
    p = torch.arange(length, dtype=torch.float32)
    angle = torch.outer(p, torch.exp(-math.log(10000.0) * 2 * i / d))
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)   # sin, cos interleaved

class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, positions=False)
        self.embed.register_forward_hook(
            lambda module, inputs, h: h + sinusoid(h.shape[1], h.shape[2]))
'''),
    Right("SinusoidEncoder", "the table as a frozen nn.Parameter, rebuilt when a batch is longer", _SINUSOID + '''\
class SinusoidEncoder(TinyTransformer):
    def __init__(self, vocab_size, classes):
        super().__init__(vocab_size, classes=classes, positions=False)
        self.table = nn.Parameter(sinusoid(64, 64), requires_grad=False)

    def forward(self, ids):
        s = ids.shape[1]
        table = self.table if s <= len(self.table) else sinusoid(s, self.table.shape[1])
        h = self.embed(ids) + table[:s].unsqueeze(0)
        h = self.blocks(h, src_key_padding_mask=ids.eq(PAD))
        real = ids.ne(PAD).float().unsqueeze(-1)
        return self.out((self.norm(h) * real).sum(dim=1) / real.sum(dim=1))
'''),
]
