"""Section 5 (05-block): wrong answers that the checks must refuse, each with the words of its
message, and right answers written differently that they must accept. The block's parts are the
course's MultiHead and FeedForward (the notebook's earlier-parts cell)."""

from grader.catalogue import Right, Wrong

BUILDS_ON = {"PostNormBlock": ("Block",)}  # a subclass of the student's Block

# The parts of an answer that most entries share.
INIT = '''class Block(nn.Module):
    """Pre-norm transformer block from the course's parts."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.norm1, self.attn = nn.LayerNorm(d_model), MultiHead(d_model, heads)
        self.norm2, self.ffn = nn.LayerNorm(d_model), FeedForward(d_model, d_ff)
'''
MASK = "        blocked = None if pad is None else pad[:, None, None, :]\n"


def block(forward, init=INIT):
    """A whole Block answer cell with the given forward body (indented 8 spaces)."""
    return init + "\n    def forward(self, h, pad=None):\n" + forward


def post(forward):
    """A whole PostNormBlock answer cell with the given forward body (indented 8 spaces)."""
    return "class PostNormBlock(Block):\n    def forward(self, h, pad=None):\n" + forward


def reference(body):
    """A whole to_reference answer cell with the given body (indented 4 spaces)."""
    return "def to_reference(block):\n" + body


RIGHT_FORWARD = MASK + '''        h = h + self.attn(self.norm1(h), blocked)
        return h + self.ffn(self.norm2(h))
'''

# to_reference: the layer and the copy, written once; entries change one part.
LAYER = '''    attn, up, down = block.attn, block.ffn.up, block.ffn.down
    layer = nn.TransformerEncoderLayer(attn.q.in_features, block.heads, up.out_features,
                                       dropout={dropout}, batch_first={batch_first},
                                       norm_first={norm_first})
'''
COPY = '''    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([attn.{p}.weight, attn.{q}.weight, attn.{r}.weight]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([attn.{p}.bias, attn.{q}.bias, attn.{r}.bias]))
        layer.self_attn.out_proj.load_state_dict(attn.out.state_dict())
        layer.linear1.load_state_dict({a}.state_dict())
        layer.linear2.load_state_dict({b}.state_dict())
        layer.norm1.load_state_dict(block.{n1}.state_dict())
        layer.norm2.load_state_dict(block.{n2}.state_dict())
    return layer{end}
'''


def to_ref(dropout="0.0", batch_first="True", norm_first="True", order="qkv", a="up", b="down",
           n1="norm1", n2="norm2", end=".eval()", drop=None):
    """to_reference with one setting or copy changed; `drop` leaves out the copy line holding it."""
    copy = COPY.format(p=order[0], q=order[1], r=order[2], a=a, b=b, n1=n1, n2=n2, end=end)
    if drop:
        copy = "".join(line for line in copy.splitlines(True) if drop not in line)
    return reference(LAYER.format(dropout=dropout, batch_first=batch_first, norm_first=norm_first) + copy)


WRONG = [
    # ---- Block: the silent failures of the section -------------------------------------------
    Wrong("Block", "post-norm: the norm after each addition", block(MASK + '''        h = self.norm1(h + self.attn(h, blocked))
        return self.norm2(h + self.ffn(h))
'''), ("post-norm", "normalizes the sum")),
    Wrong("Block", "residual after the norm: norm1(h) + attn(norm1(h))", block(MASK + '''        h = self.norm1(h)
        h = h + self.attn(h, blocked)
        h = self.norm2(h)
        return h + self.ffn(h)
'''), ("un-normalized",)),
    Wrong("Block", "first residual missing", block(MASK + '''        h = self.attn(self.norm1(h), blocked)
        return h + self.ffn(self.norm2(h))
'''), ("attention step", "missing residual")),
    Wrong("Block", "second residual missing", block(MASK + '''        h = h + self.attn(self.norm1(h), blocked)
        return self.ffn(self.norm2(h))
'''), ("feed-forward step", "missing residual")),
    Wrong("Block", "mask inverted: ~pad", block('''        blocked = None if pad is None else ~pad[:, None, None, :]
        h = h + self.attn(self.norm1(h), blocked)
        return h + self.ffn(self.norm2(h))
'''), ("inverted", "~pad")),
    Wrong("Block", "mask ignored", block('''        h = h + self.attn(self.norm1(h))
        return h + self.ffn(self.norm2(h))
'''), ("mask is not used",)),
    Wrong("Block", "pad passed as it is, (batch, seq)", block('''        h = h + self.attn(self.norm1(h), pad)
        return h + self.ffn(self.norm2(h))
'''), ("mask has 2 dimensions", "(batch, 1, 1, keys)")),
    Wrong("Block", "mask built as (batch, 1, seq): the shape of one head's scores", block('''        blocked = None if pad is None else pad[:, None, :]
        h = h + self.attn(self.norm1(h), blocked)
        return h + self.ffn(self.norm2(h))
'''), ("mask has 3 dimensions",)),
    Wrong("Block", "mask reshaped without a None check: pad=None crashes", block('''        h = h + self.attn(self.norm1(h), pad[:, None, None, :])
        return h + self.ffn(self.norm2(h))
'''), ("without pad must work", "mask=None")),
    Wrong("Block", "norm1 and norm2 swapped in forward", block(MASK + '''        h = h + self.attn(self.norm2(h), blocked)
        return h + self.ffn(self.norm1(h))
'''), ("norm1 and norm2 are swapped",)),
    Wrong("Block", "attention on the raw h, norm1 unused", block(MASK + '''        h = h + self.attn(h, blocked)
        return h + self.ffn(self.norm2(h))
'''), ("differs from nn.TransformerEncoderLayer", "norm1(h)")),
    Wrong("Block", "h += on the caller's tensor", block(MASK + '''        h += self.attn(self.norm1(h), blocked)
        h += self.ffn(self.norm2(h))
        return h
'''), ("in place",)),
    Wrong("Block", "a feed-forward network d_model -> d_model (d_ff ignored)", block(
        RIGHT_FORWARD, INIT.replace("FeedForward(d_model, d_ff)", "FeedForward(d_model, d_model)")),
        ("FeedForward(64, 256)",)),
    Wrong("Block", "PyTorch's nn.MultiheadAttention instead of the course's MultiHead", block('''        x = self.norm1(h)
        h = h + self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        return h + self.ffn(self.norm2(h))
''', INIT.replace("MultiHead(d_model, heads)", "nn.MultiheadAttention(d_model, heads, batch_first=True)")),
        ("MultiHead(64, heads) from section 1",)),
    Wrong("Block", "the head count not kept", block(RIGHT_FORWARD, INIT.replace("        self.heads = heads\n", "")),
          ("self.heads",)),
    Wrong("Block", "an extra LayerNorm at the end of the block", block(MASK + '''        h = h + self.attn(self.norm1(h), blocked)
        return self.final(h + self.ffn(self.norm2(h)))
''', INIT + "        self.final = nn.LayerNorm(d_model)\n"), ("50,112", "49,984")),

    # ---- to_reference ---------------------------------------------------------------------------
    Wrong("Block", "the first ticket's mask used for every ticket", block('''        blocked = None if pad is None else pad[:1, None, None, :]
        h = h + self.attn(self.norm1(h), blocked)
        return h + self.ffn(self.norm2(h))
'''), ("at the real positions",)),
    Wrong("to_reference", "norm_first=False (post-norm)", to_ref(norm_first="False"),
          ("norm_first=True", "post-norm")),
    Wrong("to_reference", "the feed-forward's layers read by one FeedForward's names (ffn.net[0])",
          to_ref().replace("block.ffn.up, block.ffn.down", "block.ffn.net[0], block.ffn.net[2]"),
          ("AttributeError looking for `.net`", "by their shapes, not by their names")),
    Wrong("to_reference", "the block's norms handed to the layer, not copied",
          to_ref(drop="layer.norm").replace("    return layer.eval()",
                                            "    layer.norm1, layer.norm2 = block.norm1, block.norm2\n    return layer.eval()"),
          ("norm1.weight", "not copies")),
    Wrong("to_reference", "linear1's Parameters assigned from the block",
          to_ref(drop="layer.linear1").replace("    return layer.eval()",
                                               "    layer.linear1.weight, layer.linear1.bias = up.weight, up.bias\n"
                                               "    return layer.eval()"),
          ("linear1.weight", "the block's own tensors")),
    Wrong("to_reference", "the block frozen and put in training mode",
          to_ref().replace("    return layer.eval()", "    block.requires_grad_(False)\n    block.train()\n    return layer.eval()"),
          ("changed how the block", "leave the block as it came")),
    Wrong("to_reference", "layer_norm_eps=1e-6, not the block's 1e-5",
          to_ref(norm_first="True, layer_norm_eps=1e-6"), ("eps 1e-06", "layer_norm_eps")),
    Wrong("to_reference", "q, k, v stacked as k, q, v", to_ref(order="kqv"), ("order k, q, v", "stack q, k, v")),
    Wrong("to_reference", "q, k, v stacked as v, k, q", to_ref(order="vkq"), ("order v, k, q",)),
    Wrong("to_reference", "in_proj_bias left at zero", to_ref(drop="in_proj_bias"), ("in_proj_bias", "zeros")),
    Wrong("to_reference", "out_proj not copied", to_ref(drop="out_proj"), ("out_proj",)),
    Wrong("to_reference", "linear1 and linear2 copied swapped", to_ref(a="down", b="up"),
          ("linear1", "ffn.up -> linear1")),
    Wrong("to_reference", "norm1 and norm2 copied swapped", to_ref(n1="norm2", n2="norm1"),
          ("norm1", "block.norm1 -> norm1")),
    Wrong("to_reference", "left in train mode with dropout 0.1", to_ref(dropout="0.1", end=""),
          ("training mode", "dropout")),
    Wrong("to_reference", "batch_first=False", to_ref(batch_first="False"), ("batch_first=True",)),
    Wrong("to_reference", "PyTorch's defaults: norm_first=False, dropout 0.1, batch_first=False",
          reference('''    return nn.TransformerEncoderLayer(block.attn.q.in_features, block.heads,
                                      block.ffn.up.out_features)
'''), ("norm_first",)),
    Wrong("to_reference", "a fresh layer, weights not copied", reference(LAYER.format(
        dropout="0.0", batch_first="True", norm_first="True") + "    return layer.eval()\n"),
        ("does not hold the block's weights",)),
    Wrong("to_reference", "dim_feedforward guessed as 2 * d_model", reference('''    d = block.attn.q.in_features
    return nn.TransformerEncoderLayer(d, block.heads, 2 * d, dropout=0.0, batch_first=True,
                                      norm_first=True).eval()
'''), ("dim_feedforward",)),
    Wrong("to_reference", "one head: the count read from no weight", to_ref().replace("block.heads", "1"),
          ("1 heads", "block.heads")),

    # ---- PostNormBlock ----------------------------------------------------------------------------
    Wrong("PostNormBlock", "pre-norm again: Block's forward", post(RIGHT_FORWARD),
          ("each step (attention and feed-forward) adds part(norm(h)) to the raw h",)),
    Wrong("PostNormBlock", "attention reads the normalized h, then the sum is normalized", post(MASK + '''        h = self.norm1(h + self.attn(self.norm1(h), blocked))
        return self.norm2(h + self.ffn(self.norm2(h)))
'''), ("differs from nn.TransformerEncoderLayer(norm_first=False",)),
    Wrong("PostNormBlock", "post-norm without the second norm", post(MASK + '''        h = self.norm1(h + self.attn(h, blocked))
        return h + self.ffn(h)
'''), ("norm2 after the feed-forward network",)),
    Wrong("PostNormBlock", "norms swapped", post(MASK + '''        h = self.norm2(h + self.attn(h, blocked))
        return self.norm1(h + self.ffn(h))
'''), ("norm1 and norm2 are swapped",)),
    Wrong("PostNormBlock", "mask ignored", post('''        h = self.norm1(h + self.attn(h))
        return self.norm2(h + self.ffn(h))
'''), ("mask is not used",)),
]

RIGHT = [
    # ---- Block ----------------------------------------------------------------------------------
    Right("Block", "intermediate names, one line per step", block('''        blocked = pad.unsqueeze(1).unsqueeze(2) if pad is not None else None
        normed = self.norm1(h)
        mixed = self.attn(normed, blocked)
        h = h + mixed
        changed = self.ffn(self.norm2(h))
        return h + changed
''')),
    Right("Block", "mask by view, children created in another order", '''class Block(nn.Module):
    """Pre-norm: the four children the task names."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.ffn = FeedForward(d_model=d_model, d_ff=d_ff)
        self.norm2 = nn.LayerNorm(d_model)
        self.attn = MultiHead(d_model, heads)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-5)
        self.d_model = d_model  # extra plain attributes are fine

    def forward(self, h, pad=None):
        b, s, _ = h.shape
        blocked = pad.view(b, 1, 1, s) if pad is not None else None
        h = h + self.attn(self.norm1(h), blocked)
        return h + self.ffn(self.norm2(h))
'''),
    Right("Block", "a helper method per step, other argument names", INIT + '''
    def _mix(self, x, pad):
        return self.attn(x, None if pad is None else pad[:, None, None])

    def forward(self, stream, pad=None):
        stream = stream + self._mix(self.norm1(stream), pad)
        stream = stream + self.ffn(self.norm2(stream))
        return stream
'''),
    Right("Block", "the mask made by key_padding_mask's rule from the pad itself", block('''        blocked = pad[:, None, None, :] if pad is not None else None
        x = h + self.attn(self.norm1(h), mask=blocked)
        y = x + self.ffn(self.norm2(x))
        return y
''')),

    Right("Block", "its own feed-forward layer, the second Linear created first (section 4 allows it)", '''
class BackwardsFeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.narrow = nn.Linear(d_ff, d_model)
        self.widen = nn.Linear(d_model, d_ff)

    def forward(self, h):
        return self.narrow(torch.relu(self.widen(h)))


''' + block(RIGHT_FORWARD, INIT.replace("FeedForward(d_model, d_ff)", "BackwardsFeedForward(d_model, d_ff)"))),

    # ---- to_reference ---------------------------------------------------------------------------
    Right("to_reference", "load_state_dict with a dict built by hand", reference('''    a = block.attn
    theirs = {"self_attn.in_proj_weight": torch.cat([a.q.weight, a.k.weight, a.v.weight], dim=0),
              "self_attn.in_proj_bias": torch.cat([a.q.bias, a.k.bias, a.v.bias]),
              "self_attn.out_proj.weight": a.out.weight, "self_attn.out_proj.bias": a.out.bias}
    for new, module in {"linear1": block.ffn.up, "linear2": block.ffn.down,
                        "norm1": block.norm1, "norm2": block.norm2}.items():
        theirs[new + ".weight"], theirs[new + ".bias"] = module.weight, module.bias
    layer = nn.TransformerEncoderLayer(d_model=block.norm1.normalized_shape[0], nhead=block.heads,
                                       dim_feedforward=block.ffn.up.out_features, dropout=0.0,
                                       batch_first=True, norm_first=True)
    layer.load_state_dict(theirs)
    layer.eval()
    return layer
''')),
    Right("to_reference", "the Linear layers found by shape, copied with .copy_()", reference('''    first, second = [m for m in block.ffn.modules() if isinstance(m, nn.Linear)]
    layer = nn.TransformerEncoderLayer(first.in_features, block.heads, first.out_features,
                                       dropout=0.0, batch_first=True, norm_first=True).eval()
    stacked = [torch.cat([getattr(block.attn, n).weight for n in "qkv"]),
               torch.cat([getattr(block.attn, n).bias for n in "qkv"])]
    pairs = [(layer.self_attn.in_proj_weight, stacked[0]), (layer.self_attn.in_proj_bias, stacked[1]),
             (layer.self_attn.out_proj.weight, block.attn.out.weight),
             (layer.self_attn.out_proj.bias, block.attn.out.bias),
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
    Right("to_reference", "norms and linears deep-copied into the layer", reference('''    import copy
    a = block.attn
    layer = nn.TransformerEncoderLayer(a.q.out_features, block.heads, block.ffn.down.in_features,
                                       dropout=0.0, batch_first=True, norm_first=True)
    with torch.no_grad():
        layer.self_attn.in_proj_weight[:] = torch.cat([a.q.weight, a.k.weight, a.v.weight])
        layer.self_attn.in_proj_bias[:] = torch.cat([a.q.bias, a.k.bias, a.v.bias])
    layer.self_attn.out_proj.weight = copy.deepcopy(a.out.weight)
    layer.self_attn.out_proj.bias = copy.deepcopy(a.out.bias)
    layer.linear1 = copy.deepcopy(block.ffn.up)
    layer.linear2 = copy.deepcopy(block.ffn.down)
    layer.norm1 = copy.deepcopy(block.norm1)
    layer.norm2 = copy.deepcopy(block.norm2)
    return layer.eval()
''')),

    # ---- PostNormBlock ----------------------------------------------------------------------------
    Right("PostNormBlock", "one line per step, the mask made inline", post('''        h = self.norm1(h + self.attn(h, None if pad is None else pad[:, None, None, :]))
        h = self.norm2(h + self.ffn(h))
        return h
''')),
    Right("PostNormBlock", "its own __init__ calling Block's", '''class PostNormBlock(Block):
    """Post-norm: the same children, each norm after its addition."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__(d_model, heads, d_ff)

    def forward(self, h, pad=None):
        blocked = pad[:, None, None, :] if pad is not None else None
        attended = self.attn(h, blocked)
        h = self.norm1(h + attended)
        return self.norm2(h + self.ffn(h))
'''),
]
