"""Section 5 (05-block): wrong answers that the checks must refuse, each with the words of its
message, and right answers written differently that they must accept."""

from grader.catalogue import Right, Wrong

# The parts of an answer that most entries share.
INIT = '''class Block(nn.Module):
    """Pre-norm transformer block: h + attn(norm1(h)), then h + ffn(norm2(h))."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)  # rescales each token before attention
        self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True, dropout=0.0)
        self.norm2 = nn.LayerNorm(d_model)  # and again before the feed-forward layer
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff),  # widen each token,
                                 nn.ReLU(), nn.Linear(d_ff, d_model))  # bend, narrow back
'''


def block(forward, init=INIT):
    """A whole Block answer cell with the given forward body (indented 8 spaces)."""
    return init + "\n    def forward(self, h, pad=None):\n" + forward


def reference(body):
    """A whole to_reference answer cell with the given body (indented 4 spaces)."""
    return "def to_reference(block):\n" + body


RIGHT_FORWARD = '''        x = self.norm1(h)
        h = h + self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        return h + self.ffn(self.norm2(h))
'''

# to_reference: the layer and the copy, written once; entries change one line.
LAYER = '''    d_model = block.attn.embed_dim
    layer = nn.TransformerEncoderLayer(d_model, block.attn.num_heads, block.ffn[0].out_features,
                                       dropout={dropout}, batch_first={batch_first},
                                       norm_first={norm_first})
'''
COPY = '''    with torch.no_grad():
        layer.self_attn.load_state_dict(block.attn.state_dict())
        layer.linear1.load_state_dict(block.ffn[{a}].state_dict())
        layer.linear2.load_state_dict(block.ffn[{b}].state_dict())
        layer.norm1.load_state_dict(block.{n1}.state_dict())
        layer.norm2.load_state_dict(block.{n2}.state_dict())
    return layer{end}
'''


def to_ref(dropout="0.0", batch_first="True", norm_first="True", a=0, b=2, n1="norm1",
           n2="norm2", end=".eval()"):
    return reference(LAYER.format(dropout=dropout, batch_first=batch_first, norm_first=norm_first)
                     + COPY.format(a=a, b=b, n1=n1, n2=n2, end=end))


WRONG = [
    # ---- Block: the silent failures of the section -------------------------------------------
    Wrong("Block", "post-norm: the norm after each addition", block('''        h = self.norm1(h + self.attn(h, h, h, key_padding_mask=pad, need_weights=False)[0])
        return self.norm2(h + self.ffn(h))
'''), ("post-norm", "norm after the addition")),
    Wrong("Block", "attn built without batch_first and fed (batch, seq, d)", block(
        RIGHT_FORWARD, INIT.replace("batch_first=True, dropout=0.0", "dropout=0.0")),
        ("tickets of one batch are mixed", "batch_first")),
    Wrong("Block", "residual after the norm: norm1(h) + attn(norm1(h))", block('''        h = self.norm1(h)
        h = h + self.attn(h, h, h, key_padding_mask=pad, need_weights=False)[0]
        h = self.norm2(h)
        return h + self.ffn(h)
'''), ("un-normalized",)),
    Wrong("Block", "first residual missing", block('''        x = self.norm1(h)
        h = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        return h + self.ffn(self.norm2(h))
'''), ("attention step", "missing residual")),
    Wrong("Block", "second residual missing", block('''        x = self.norm1(h)
        h = h + self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        return self.ffn(self.norm2(h))
'''), ("feed-forward step", "missing residual")),
    Wrong("Block", "mask inverted: key_padding_mask=~pad", block('''        x = self.norm1(h)
        h = h + self.attn(x, x, x, key_padding_mask=~pad if pad is not None else None,
                          need_weights=False)[0]
        return h + self.ffn(self.norm2(h))
'''), ("inverted", "~pad")),
    Wrong("Block", "mask ignored", block('''        x = self.norm1(h)
        h = h + self.attn(x, x, x, need_weights=False)[0]
        return h + self.ffn(self.norm2(h))
'''), ("mask is not used", "key_padding_mask=pad")),
    Wrong("Block", "norm1 and norm2 swapped in forward", block('''        x = self.norm2(h)
        h = h + self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        return h + self.ffn(self.norm1(h))
'''), ("norm1 and norm2 are swapped",)),
    Wrong("Block", "no ReLU in the feed-forward network", block(
        RIGHT_FORWARD, INIT.replace("nn.ReLU(), ", "")), ("no relu",)),
    Wrong("Block", "attention on the raw h, norm1 unused", block('''        h = h + self.attn(h, h, h, key_padding_mask=pad, need_weights=False)[0]
        return h + self.ffn(self.norm2(h))
'''), ("differs from nn.TransformerEncoderLayer", "h = h + attn(norm1(h))")),
    Wrong("Block", "h += on the caller's tensor", block('''        x = self.norm1(h)
        h += self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        h += self.ffn(self.norm2(h))
        return h
'''), ("in place",)),
    Wrong("Block", "a feed-forward network 64 -> 64 (d_ff ignored)", block(
        RIGHT_FORWARD, INIT.replace("nn.Linear(d_model, d_ff),", "nn.Linear(d_model, d_model),")
                                    .replace("nn.Linear(d_ff, d_model)", "nn.Linear(d_model, d_model)")),
        ("64->256",)),
    Wrong("Block", "attention dropout 0.1", block(
        RIGHT_FORWARD, INIT.replace("dropout=0.0", "dropout=0.1")), ("dropout",)),
    Wrong("Block", "an extra LayerNorm at the end of the block", block('''        x = self.norm1(h)
        h = h + self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        return self.final(h + self.ffn(self.norm2(h)))
''', INIT + "        self.final = nn.LayerNorm(d_model)\n"), ("50,112", "49,984")),

    # ---- to_reference ---------------------------------------------------------------------------
    Wrong("to_reference", "norm_first=False (post-norm)", to_ref(norm_first="False"),
          ("norm_first=True", "post-norm")),
    Wrong("to_reference", "linear1 and linear2 copied swapped", to_ref(a=2, b=0),
          ("swapped", "linear1")),
    Wrong("to_reference", "norm1 and norm2 copied swapped", to_ref(n1="norm2", n2="norm1"),
          ("swapped", "norm1")),
    Wrong("to_reference", "left in train mode with dropout 0.1", to_ref(dropout="0.1", end=""),
          ("training mode", "dropout")),
    Wrong("to_reference", "batch_first=False", to_ref(batch_first="False"), ("batch_first=True",)),
    Wrong("to_reference", "PyTorch's defaults: norm_first=False, dropout 0.1, batch_first=False",
          reference('''    return nn.TransformerEncoderLayer(block.attn.embed_dim, block.attn.num_heads,
                                      block.ffn[0].out_features)
'''), ("norm_first",)),
    Wrong("to_reference", "a fresh layer, weights not copied", reference(LAYER.format(
        dropout="0.0", batch_first="True", norm_first="True") + "    return layer.eval()\n"),
        ("does not hold the block's weights",)),
    Wrong("to_reference", "attention weights not copied", reference(LAYER.format(
        dropout="0.0", batch_first="True", norm_first="True") + COPY.format(
        a=0, b=2, n1="norm1", n2="norm2", end=".eval()").replace(
        "        layer.self_attn.load_state_dict(block.attn.state_dict())\n", "")),
        ("self_attn", "not the block's")),
    Wrong("to_reference", "dim_feedforward guessed as 2 * d_model", reference('''    d = block.attn.embed_dim
    layer = nn.TransformerEncoderLayer(d, block.attn.num_heads, 2 * d, dropout=0.0,
                                       batch_first=True, norm_first=True)
    with torch.no_grad():
        layer.self_attn.load_state_dict(block.attn.state_dict())
    return layer.eval()
'''), ("dim_feedforward",)),
]

RIGHT = [
    # ---- Block ----------------------------------------------------------------------------------
    Right("Block", "intermediate names, one line per step", block('''        normed = self.norm1(h)
        mixed, _ = self.attn(normed, normed, normed, key_padding_mask=pad, need_weights=False)
        h = h + mixed
        normed = self.norm2(h)
        changed = self.ffn(normed)
        return h + changed
''')),
    Right("Block", "need_weights=True, the weights ignored", block('''        x = self.norm1(h)
        out, weights = self.attn(x, x, x, key_padding_mask=pad)
        h = h + out
        return h + self.ffn(self.norm2(h))
''')),
    Right("Block", "nn.ReLU(inplace=True), children created in another order", '''class Block(nn.Module):
    """Pre-norm: the four children the task names."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(inplace=True),
                                 nn.Linear(d_ff, d_model))
        self.norm2 = nn.LayerNorm(d_model)  # and again before the feed-forward layer
        self.attn = nn.MultiheadAttention(embed_dim=d_model, num_heads=heads, dropout=0,
                                          batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)  # rescales each token before attention
        self.d_model, self.heads = d_model, heads  # extra plain attributes are fine

    def forward(self, h, pad=None):
        y = self.norm1(h)
        h = h + self.attn(query=y, key=y, value=y, key_padding_mask=pad, need_weights=False)[0]
        return h + self.ffn(self.norm2(h))
'''),
    Right("Block", "a helper method per step, other argument names", '''class Block(nn.Module):
    """Pre-norm: the four children the task names."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)  # rescales each token before attention
        self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True, dropout=0)
        self.norm2 = nn.LayerNorm(d_model)  # and again before the feed-forward layer
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff),  # widen each token,
                                 nn.ReLU(), nn.Linear(d_ff, d_model))  # bend, narrow back

    def _mix(self, x, pad):
        return self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]

    def forward(self, stream, pad=None):
        stream = stream + self._mix(self.norm1(stream), pad)
        stream = stream + self.ffn(self.norm2(stream))
        return stream
'''),
    Right("Block", "attn built batch_first=False, forward transposes by hand", block('''        x = self.norm1(h).transpose(0, 1)  # (seq, batch, d): what batch_first=False reads
        h = h + self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0].transpose(0, 1)
        return h + self.ffn(self.norm2(h))
''', INIT.replace("batch_first=True, dropout=0.0", "dropout=0.0"))),

    # ---- to_reference ---------------------------------------------------------------------------
    Right("to_reference", "load_state_dict with a renamed dict", reference('''    mine = block.state_dict()
    theirs = {"self_attn." + key[len("attn."):]: value for key, value in mine.items()
              if key.startswith("attn.")}
    renames = {"ffn.0": "linear1", "ffn.2": "linear2", "norm1": "norm1", "norm2": "norm2"}
    for old, new in renames.items():
        theirs[new + ".weight"] = mine[old + ".weight"]
        theirs[new + ".bias"] = mine[old + ".bias"]
    layer = nn.TransformerEncoderLayer(d_model=block.attn.embed_dim, nhead=block.attn.num_heads,
                                       dim_feedforward=block.ffn[0].out_features, dropout=0.0,
                                       batch_first=True, norm_first=True)
    layer.load_state_dict(theirs)
    layer.eval()
    return layer
''')),
    Right("to_reference", "tensors copied one by one with .copy_()", reference('''    first, second = block.ffn[0], block.ffn[2]
    layer = nn.TransformerEncoderLayer(block.norm1.normalized_shape[0], block.attn.num_heads,
                                       first.out_features, dropout=0.0, batch_first=True,
                                       norm_first=True).eval()
    pairs = [(layer.self_attn.in_proj_weight, block.attn.in_proj_weight),
             (layer.self_attn.in_proj_bias, block.attn.in_proj_bias),
             (layer.self_attn.out_proj.weight, block.attn.out_proj.weight),
             (layer.self_attn.out_proj.bias, block.attn.out_proj.bias),
             (layer.linear1.weight, first.weight), (layer.linear1.bias, first.bias),
             (layer.linear2.weight, second.weight), (layer.linear2.bias, second.bias),
             (layer.norm1.weight, block.norm1.weight), (layer.norm1.bias, block.norm1.bias),
             (layer.norm2.weight, block.norm2.weight), (layer.norm2.bias, block.norm2.bias)]
    with torch.no_grad():
        for target, source in pairs:
            target.copy_(source)
    return layer
''')),
    Right("to_reference", "dropout 0.1 but switched to eval mode", to_ref(dropout="0.1")),
    Right("to_reference", "train mode, dropout 0.0", to_ref(end="")),
    Right("to_reference", "modules deep-copied into the layer", reference('''    import copy
    layer = nn.TransformerEncoderLayer(block.attn.embed_dim, block.attn.num_heads,
                                       block.ffn[-1].in_features, dropout=0.0,
                                       batch_first=True, norm_first=True)
    layer.self_attn = copy.deepcopy(block.attn)
    layer.linear1 = copy.deepcopy(block.ffn[0])
    layer.linear2 = copy.deepcopy(block.ffn[-1])
    layer.norm1 = copy.deepcopy(block.norm1)
    layer.norm2 = copy.deepcopy(block.norm2)
    return layer.eval()
''')),
]
