"""Section 6 (06-tiny-transformer): wrong answers that the checks must refuse, each with the words
of its message, and right answers written differently that they must accept."""

from grader.catalogue import Right, Wrong

STYLE_HEAD = '''def style_accuracy(rows, predicted):
    """Accuracy per ticket style, with a last row `all`."""
    if isinstance(predicted, torch.Tensor):
        predicted = [TEAMS[i] for i in predicted.tolist()]
'''
FRAME = '''    frame = pd.DataFrame({"style": [row["style"] for row in rows],
                          "right": [team == row["team"] for team, row in zip(predicted, rows)]})
'''


def style(body, head=STYLE_HEAD, frame=FRAME):
    return head + frame + body


CHOOSE_HEAD = '''def choose_and_test(valid_accuracy, score_on_test):
    """Choose on validation, score the chosen model on test once."""
'''


def choose(body):
    return CHOOSE_HEAD + body


# Encoder: the constructor and the forward, written once; entries change one part.
ENCODER_INIT = '''class Encoder(nn.Module):
    """TinyTransformer of my own parts."""

    def __init__(self, vocab_size, dim=64, heads=4, blocks=2, ffn=256, max_tokens=MAX_TOKENS,
                 classes=len(TEAMS)):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=PAD)
        self.position = nn.Embedding(max_tokens, dim)
{blocks}
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, classes)
'''
MODULE_LIST = "        self.blocks = nn.ModuleList([Block(dim, heads, ffn) for _ in range(blocks)])"
ENCODER_FORWARD = '''
    def forward(self, ids):
        pad = ids == PAD
        h = self.embed(ids) + self.position(torch.arange(ids.shape[1]))
        for layer in self.blocks:
            h = layer(h, pad)
        h = self.norm(h)
        real = (~pad).unsqueeze(-1).float()
        return self.out((h * real).sum(1) / real.sum(1))
'''


def encoder(forward=ENCODER_FORWARD, blocks=MODULE_LIST, replace=()):
    """A whole Encoder answer cell; `replace` pairs (old, new) change lines of the forward."""
    for old, new in replace:
        assert old in forward, old
        forward = forward.replace(old, new)
    return ENCODER_INIT.format(blocks=blocks) + forward


# from_tiny: the copy written once; entries change one part.
FROM_TINY = '''def from_tiny(encoder, tiny):
    """Copy every weight of tiny into encoder."""
    with torch.no_grad():
        for name in ("embed", "position", "norm", "out"):
            getattr(encoder, name).load_state_dict(getattr(tiny, name).state_dict())
        for block, layer in zip(encoder.blocks, tiny.blocks.layers):
            q, k, v = layer.self_attn.in_proj_weight.chunk(3)
            bq, bk, bv = layer.self_attn.in_proj_bias.chunk(3)
            block.attn.q.weight.copy_(q)
            block.attn.k.weight.copy_(k)
            block.attn.v.weight.copy_(v)
            block.attn.q.bias.copy_(bq)
            block.attn.k.bias.copy_(bk)
            block.attn.v.bias.copy_(bv)
            block.attn.out.load_state_dict(layer.self_attn.out_proj.state_dict())
            block.ffn.up.load_state_dict(layer.linear1.state_dict())
            block.ffn.down.load_state_dict(layer.linear2.state_dict())
            block.norm1.load_state_dict(layer.norm1.state_dict())
            block.norm2.load_state_dict(layer.norm2.state_dict())
    return encoder.eval()
'''


def copying(*replace):
    """A whole from_tiny answer cell, with lines (old, new) replaced."""
    code = FROM_TINY
    for old, new in replace:
        assert old in code, old
        code = code.replace(old, new)
    return code


WRONG = [
    # ---- style_accuracy --------------------------------------------------------------------
    Wrong("style_accuracy", "accuracy over all rows, not per style", style('''    table = frame.groupby("style")["right"].agg(tickets="size")
    table.insert(0, "accuracy", frame["right"].mean())
    table.loc["all"] = [frame["right"].mean(), len(frame)]
    return table
'''), ("same accuracy", "all rows", "per style")),
    Wrong("style_accuracy", "missing `all` row", style('''    return frame.groupby("style")["right"].agg(accuracy="mean", tickets="size")
'''), ("no `all` row",)),
    Wrong("style_accuracy", "`all` row first", style('''    table = frame.groupby("style")["right"].agg(accuracy="mean", tickets="size")
    top = pd.DataFrame({"accuracy": [frame["right"].mean()], "tickets": [len(frame)]}, index=["all"])
    return pd.concat([top, table])
'''), ("`all` row should come last",)),
    Wrong("style_accuracy", "tickets counts the right predictions", style('''    table = frame.groupby("style")["right"].agg(accuracy="mean", tickets="sum")
    table.loc["all"] = [frame["right"].mean(), int(frame["right"].sum())]
    return table
'''), ("number of right predictions", "tickets")),
    Wrong("style_accuracy", "counts wrong: every style gets the total", style('''    table = frame.groupby("style")["right"].agg(accuracy="mean")
    table["tickets"] = len(frame)
    table.loc["all"] = [frame["right"].mean(), len(frame)]
    return table
'''), ("every ticket of the table", "each style's own tickets")),
    Wrong("style_accuracy", "index not sorted (order of first appearance)", style('''    table = frame.groupby("style", sort=False)["right"].agg(accuracy="mean", tickets="size")
    table.loc["all"] = [frame["right"].mean(), len(frame)]
    return table
'''), ("not sorted",)),
    Wrong("style_accuracy", "`all` row is the mean of the style accuracies", style('''    table = frame.groupby("style")["right"].agg(accuracy="mean", tickets="size")
    table.loc["all"] = [table["accuracy"].mean(), len(frame)]
    return table
'''), ("mean of the style accuracies",)),
    Wrong("style_accuracy", "percentages instead of fractions", style('''    table = frame.groupby("style")["right"].agg(accuracy="mean", tickets="size")
    table.loc["all"] = [frame["right"].mean(), len(frame)]
    table["accuracy"] = 100 * table["accuracy"]
    return table
'''), ("fraction", "percent")),
    Wrong("style_accuracy", "tickets as fractions of the style's tickets", style('''    table = frame.groupby("style")["right"].agg(accuracy="mean", tickets="size")
    table["tickets"] = table["tickets"] / table["tickets"].sum()
    table.loc["all"] = [frame["right"].mean(), 1.0]
    return table
'''), ("whole numbers", "counts of tickets")),
    Wrong("style_accuracy", "a tensor of class ids compared with team names", '''def style_accuracy(rows, predicted):
    """Accuracy per ticket style, with a last row `all`."""
    frame = pd.DataFrame({"style": [row["style"] for row in rows],
                          "right": [team == row["team"] for team, row in zip(predicted, rows)]})
    table = frame.groupby("style")["right"].agg(accuracy="mean", tickets="size")
    table.loc["all"] = [frame["right"].mean(), len(frame)]
    return table
''', ("tensor of class ids", "TEAMS[i]")),
    Wrong("style_accuracy", "a plain dict instead of a DataFrame", '''def style_accuracy(rows, predicted):
    """Accuracy per ticket style, with a last row `all`."""
    counts = {}
    for row, team in zip(rows, predicted):
        right, n = counts.get(row["style"], (0, 0))
        counts[row["style"]] = (right + (team == row["team"]), n + 1)
    return {style: right / n for style, (right, n) in counts.items()}
''', ("pandas DataFrame",)),

    # ---- choose_and_test --------------------------------------------------------------------
    Wrong("choose_and_test", "choosing on test: score every model, keep the best test score", choose('''    scores = {name: score_on_test(name) for name in valid_accuracy}
    chosen = max(scores, key=scores.get)
    return chosen, scores[chosen]
'''), ("uses the test set to choose", "validation only")),
    Wrong("choose_and_test", "calls score_on_test for every model, then chooses on validation", choose('''    scores = {name: score_on_test(name) for name in valid_accuracy}
    chosen = max(valid_accuracy, key=valid_accuracy.get)
    return chosen, scores[chosen]
'''), ("called 4 times", "test set to choose")),
    Wrong("choose_and_test", "choosing the lowest validation accuracy", choose('''    chosen = min(valid_accuracy, key=valid_accuracy.get)
    return chosen, score_on_test(chosen)
'''), ("lowest", "max, not min")),
    Wrong("choose_and_test", "max over the names (alphabetical), not the accuracies", choose('''    chosen = max(valid_accuracy)
    return chosen, score_on_test(chosen)
'''), ("best on validation is",)),
    Wrong("choose_and_test", "returning the validation accuracy instead of the test score", choose('''    chosen = max(valid_accuracy, key=valid_accuracy.get)
    score_on_test(chosen)
    return chosen, valid_accuracy[chosen]
'''), ("validation accuracy", "test score")),
    Wrong("choose_and_test", "never scoring on test", choose('''    chosen = max(valid_accuracy, key=valid_accuracy.get)
    return chosen, valid_accuracy[chosen]
'''), ("never called",)),
    Wrong("choose_and_test", "scoring the chosen model twice", choose('''    chosen = max(valid_accuracy, key=valid_accuracy.get)
    print(chosen, score_on_test(chosen))
    return chosen, score_on_test(chosen)
'''), ("called 2 times", "once")),
    Wrong("choose_and_test", "returning the validation accuracy as the name", choose('''    best = max(valid_accuracy.values())
    return best, score_on_test(max(valid_accuracy, key=valid_accuracy.get))
'''), ("return the name",)),
    # ---- Encoder ---------------------------------------------------------------------------
    Wrong("Encoder", "the unknown word taken for a pad (ids <= 1)",
          encoder(replace=[("        pad = ids == PAD\n", "        pad = ids <= 1\n")]),
          ("differs from tinytransformer's function",)),
    Wrong("Encoder", "the embedding without padding_idx",
          encoder().replace("nn.Embedding(vocab_size, dim, padding_idx=PAD)", "nn.Embedding(vocab_size, dim)"),
          ("padding_idx",)),
    Wrong("Encoder", "defaults of another size (dim 32, 2 heads, 1 block)",
          encoder().replace("dim=64, heads=4, blocks=2, ffn=256, max_tokens=MAX_TOKENS",
                            "dim=32, heads=2, blocks=1, ffn=64, max_tokens=48"),
          ("left at its default", "tinytransformer's")),
    Wrong("Encoder", "blocks in a plain list", encoder(blocks="        self.blocks = [Block(dim, heads, ffn) for _ in range(blocks)]"),
          ("plain python list", "nn.ModuleList", "parameters()")),
    Wrong("Encoder", "one block repeated", encoder(blocks="        self.blocks = nn.ModuleList([Block(dim, heads, ffn)] * blocks)"),
          ("share", "repeats one block")),
    Wrong("Encoder", "always two blocks", encoder(blocks="        self.blocks = nn.ModuleList([Block(dim, heads, ffn) for _ in range(2)])"),
          ("has 2 blocks", "blocks=3")),
    Wrong("Encoder", "the number of classes fixed at the five teams", encoder().replace(
        "nn.Linear(dim, classes)", "nn.Linear(dim, len(TEAMS))"), ("classes=3",)),
    Wrong("Encoder", "a position table of the vocabulary's size", encoder().replace(
        "nn.Embedding(max_tokens, dim)", "nn.Embedding(vocab_size, dim)"), ("self.position", "max_tokens")),
    Wrong("Encoder", "no position vectors", encoder(replace=[(
        "self.embed(ids) + self.position(torch.arange(ids.shape[1]))", "self.embed(ids)")]),
          ("no position vectors",)),
    Wrong("Encoder", "the blocks get no mask", encoder(replace=[("layer(h, pad)", "layer(h)")]),
          ("no padding mask", "block(h, pad)")),
    Wrong("Encoder", "the mean over every position, pads included", encoder(replace=[(
        "self.out((h * real).sum(1) / real.sum(1))", "self.out(h.mean(1))")]), ("pads included",)),
    Wrong("Encoder", "the sum of the real tokens", encoder(replace=[(
        "self.out((h * real).sum(1) / real.sum(1))", "self.out((h * real).sum(1))")]), ("sum over the real tokens",)),
    Wrong("Encoder", "the first token only", encoder(replace=[(
        "self.out((h * real).sum(1) / real.sum(1))", "self.out(h[:, 0])")]), ("first token",)),
    Wrong("Encoder", "the final norm after pooling", encoder(replace=[
        ("        h = self.norm(h)\n", ""),
        ("self.out((h * real).sum(1) / real.sum(1))", "self.out(self.norm((h * real).sum(1) / real.sum(1)))")]),
          ("after pooling",)),
    Wrong("Encoder", "no final norm", encoder(replace=[("        h = self.norm(h)\n", "")]),
          ("no final norm",)),
    Wrong("Encoder", "no mask and the mean over every position", encoder(replace=[
        ("layer(h, pad)", "layer(h)"), ("self.out((h * real).sum(1) / real.sum(1))", "self.out(h.mean(1))")]),
          ("no padding mask", "pads included")),
    Wrong("Encoder", "the pooled vector returned, not the scores", encoder(replace=[(
        "self.out((h * real).sum(1) / real.sum(1))", "(h * real).sum(1) / real.sum(1)")]), ("has shape", "(4, 5)")),
    Wrong("Encoder", "only the last block applied", encoder(replace=[(
        "        for layer in self.blocks:\n            h = layer(h, pad)\n", "        h = self.blocks[-1](h, pad)\n")]),
          ("differs from tinytransformer",)),

    # ---- from_tiny -------------------------------------------------------------------------
    Wrong("Encoder", "the position vectors detached: the table cannot train",
          encoder(replace=[("self.position(torch.arange(ids.shape[1]))", "self.position(torch.arange(ids.shape[1])).detach()")]),
          ("position.weight", "no gradient")),
    Wrong("Encoder", "the final LayerNorm's eps at 1e-3",
          encoder().replace("        self.norm = nn.LayerNorm(dim)\n", "        self.norm = nn.LayerNorm(dim, eps=1e-3)\n"),
          ("differs from tinytransformer's function",)),
    Wrong("from_tiny", "keys and queries swapped", copying(("q, k, v = layer", "k, q, v = layer")),
          ("attn.q.weight holds the k rows", "the queries")),
    Wrong("from_tiny", "slices transposed", copying(("block.attn.q.weight.copy_(q)", "block.attn.q.weight.copy_(q.T)"),
                                                     ("block.attn.k.weight.copy_(k)", "block.attn.k.weight.copy_(k.T)"),
                                                     ("block.attn.v.weight.copy_(v)", "block.attn.v.weight.copy_(v.T)")),
          ("transposed", "without .t")),
    Wrong("from_tiny", "biases left out", copying(("            block.attn.q.bias.copy_(bq)\n", ""),
                                                  ("            block.attn.k.bias.copy_(bk)\n", ""),
                                                  ("            block.attn.v.bias.copy_(bv)\n", "")),
          ("attn.q.bias", "in_proj_bias")),
    Wrong("from_tiny", "out_proj forgotten", copying(
        ("            block.attn.out.load_state_dict(layer.self_attn.out_proj.state_dict())\n", "")),
          ("attn.out", "out_proj")),
    Wrong("from_tiny", "the two Linear layers swapped (same shapes)", copying(
        ("block.ffn.up.load_state_dict(layer.linear1", "block.ffn.up.load_state_dict(layer.linear2"),
        ("block.ffn.down.load_state_dict(layer.linear2", "block.ffn.down.load_state_dict(layer.linear1")),
          ("size mismatch",)),
    Wrong("from_tiny", "norm1 and norm2 swapped", copying(
        ("block.norm1.load_state_dict(layer.norm1", "block.norm1.load_state_dict(layer.norm2"),
        ("block.norm2.load_state_dict(layer.norm2", "block.norm2.load_state_dict(layer.norm1")),
          ("norm1 and norm2 are swapped",)),
    Wrong("from_tiny", "the position table left out", copying(('("embed", "position", "norm", "out")', '("embed", "norm", "out")')),
          ("encoder.position",)),
    Wrong("from_tiny", "the final norm left out", copying(('("embed", "position", "norm", "out")', '("embed", "position", "out")')),
          ("encoder.norm",)),
    Wrong("from_tiny", "nothing returned", copying(("    return encoder.eval()\n", "    encoder.eval()\n")),
          ("returned none", "return the encoder")),
    Wrong("from_tiny", "the embedding and the output layer taken over, not copied", copying(
        ('("embed", "position", "norm", "out")', '("position", "norm")'),
        ("    return encoder.eval()\n", "    encoder.embed, encoder.out = tiny.embed, tiny.out\n    return encoder.eval()\n")),
          ("embed.weight", "tiny's own tensors")),
    Wrong("from_tiny", "the q, k and v rows set as views of in_proj_weight (.data, no clone)", copying(
        ("            block.attn.q.weight.copy_(q)\n            block.attn.k.weight.copy_(k)\n"
         "            block.attn.v.weight.copy_(v)\n",
         "            block.attn.q.weight.data, block.attn.k.weight.data, block.attn.v.weight.data = q, k, v\n")),
          ("attn.q.weight", "not copies")),
    Wrong("from_tiny", "the encoder returned in training mode", copying(("    return encoder.eval()\n", "    return encoder\n")),
          ("training mode", "evaluation mode")),
    Wrong("from_tiny", "the TinyTransformer changed", copying(
        ("            q, k, v = layer", "            layer.self_attn.in_proj_weight.mul_(1.0001)\n            q, k, v = layer")),
          ("changed the tinytransformer",)),
]

RIGHT = [
    # ---- style_accuracy --------------------------------------------------------------------
    Right("style_accuracy", "groupby then mean and size, ids compared as ids", '''def style_accuracy(rows, predicted):
    """Accuracy per ticket style, with a last row `all`."""
    if isinstance(predicted, torch.Tensor):
        truth = labels(rows)
        right = (predicted == truth).tolist()
    else:
        right = [p == r["team"] for p, r in zip(predicted, rows)]
    frame = pd.DataFrame({"style": [r["style"] for r in rows], "right": right})
    grouped = frame.groupby("style")["right"]
    table = pd.DataFrame({"accuracy": grouped.mean(), "tickets": grouped.size()})
    overall = pd.DataFrame({"accuracy": [frame["right"].mean()], "tickets": [len(frame)]}, index=["all"])
    return pd.concat([table.sort_index(), overall])
'''),
    Right("style_accuracy", "counts summed as floats (whole numbers all the same)", style('''    frame["one"] = 1.0
    table = frame.groupby("style").agg(accuracy=("right", "mean"), tickets=("one", "sum"))
    table.loc["all"] = [frame["right"].mean(), float(len(frame))]
    return table
''')),
    Right("style_accuracy", "pivot_table", style('''    frame["right"] = frame["right"].astype(float)
    table = frame.pivot_table(index="style", values="right", aggfunc=["mean", "count"])
    table.columns = ["accuracy", "tickets"]
    table["tickets"] = table["tickets"].astype(int)
    table.loc["all"] = [frame["right"].mean(), len(frame)]
    return table
''')),
    Right("style_accuracy", "loop with a dict, then sorted", '''def style_accuracy(rows, predicted):
    """Accuracy per ticket style, with a last row `all`."""
    if isinstance(predicted, torch.Tensor):
        predicted = [TEAMS[int(i)] for i in predicted]
    right, count = {}, {}
    for row, team in zip(rows, predicted):
        s = row["style"]
        right[s] = right.get(s, 0) + int(team == row["team"])
        count[s] = count.get(s, 0) + 1
    index = sorted(count) + ["all"]
    accuracy = [right[s] / count[s] for s in sorted(count)] + [sum(right.values()) / len(rows)]
    tickets = [count[s] for s in sorted(count)] + [len(rows)]
    return pd.DataFrame({"accuracy": accuracy, "tickets": tickets}, index=index)
'''),
    Right("style_accuracy", "value_counts and an extra column", style('''    tickets = frame["style"].value_counts().sort_index()
    correct = frame.groupby("style")["right"].sum()
    table = pd.DataFrame({"right": correct, "tickets": tickets})
    table["accuracy"] = table["right"] / table["tickets"]
    table.loc["all"] = [table["right"].sum(), len(frame), frame["right"].mean()]
    table["right"] = table["right"].astype(int)
    table["tickets"] = table["tickets"].astype(int)
    return table
''')),

    # ---- choose_and_test --------------------------------------------------------------------
    Right("choose_and_test", "sorted by accuracy", choose('''    ranked = sorted(valid_accuracy.items(), key=lambda item: item[1], reverse=True)
    name = ranked[0][0]
    test_accuracy = score_on_test(name)
    return name, test_accuracy
''')),
    Right("choose_and_test", "a loop that keeps the best", choose('''    best_name, best_valid = None, -1.0
    for name, accuracy in valid_accuracy.items():
        if accuracy > best_valid:
            best_name, best_valid = name, accuracy
    return (best_name, score_on_test(best_name))
''')),
    Right("choose_and_test", "pandas idxmax", choose('''    chosen = pd.Series(valid_accuracy).idxmax()
    return chosen, score_on_test(chosen)
''')),

    # ---- Encoder ---------------------------------------------------------------------------
    Right("Encoder", "an nn.Sequential of blocks, called one by one", encoder(
        blocks="        self.blocks = nn.Sequential(*(Block(dim, heads, ffn) for _ in range(blocks)))")),
    Right("Encoder", "a ModuleList filled by append, the mask as a float mean", '''class Encoder(nn.Module):
    def __init__(self, vocab_size, dim=64, heads=4, blocks=2, ffn=256, max_tokens=MAX_TOKENS, classes=5):
        super().__init__()
        self.blocks = nn.ModuleList()
        for _ in range(blocks):
            self.blocks.append(Block(dim, heads, ffn))
        self.out = nn.Linear(dim, classes)
        self.norm = nn.LayerNorm(dim)
        self.position = nn.Embedding(max_tokens, dim)
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=PAD)

    def forward(self, ids):
        b, t = ids.shape
        places = torch.arange(t).expand(b, t)
        x = self.embed(ids) + self.position(places)
        padding = ids.eq(PAD)
        for layer in self.blocks:
            x = layer(x, pad=padding)
        x = self.norm(x)
        weights = (~padding).float()
        weights = weights / weights.sum(dim=1, keepdim=True)
        return self.out(torch.einsum("bt,btd->bd", weights, x))
'''),
    Right("Encoder", "masked_fill then a division by the counts", encoder(replace=[(
        "        real = (~pad).unsqueeze(-1).float()\n        return self.out((h * real).sum(1) / real.sum(1))\n",
        "        summed = h.masked_fill(pad.unsqueeze(-1), 0.0).sum(1)\n"
        "        return self.out(summed / (~pad).sum(1, keepdim=True))\n")])),

    # ---- from_tiny -------------------------------------------------------------------------
    Right("from_tiny", "one state_dict renamed, then load_state_dict", '''def from_tiny(encoder, tiny):
    state = {}
    for key, value in tiny.state_dict().items():
        if key.startswith("blocks.layers."):
            _, _, i, rest = key.split(".", 3)
            head = f"blocks.{i}."
            if rest == "self_attn.in_proj_weight" or rest == "self_attn.in_proj_bias":
                kind = rest.rsplit("_", 1)[1]
                for name, part in zip("qkv", value.chunk(3)):
                    state[f"{head}attn.{name}.{kind}"] = part.clone()
                continue
            rest = (rest.replace("self_attn.out_proj", "attn.out").replace("linear1", "ffn.up")
                    .replace("linear2", "ffn.down"))
            state[head + rest] = value.clone()
        else:
            state[key] = value.clone()
    encoder.load_state_dict(state)
    encoder.eval()
    return encoder
'''),
    Right("from_tiny", "slices by rows, parameters set through .data", '''def from_tiny(encoder, tiny):
    d = tiny.embed.embedding_dim
    encoder.embed.weight.data = tiny.embed.weight.data.clone()
    encoder.position.weight.data = tiny.position.weight.data.clone()
    encoder.norm.load_state_dict(tiny.norm.state_dict())
    encoder.out.load_state_dict(tiny.out.state_dict())
    for i, layer in enumerate(tiny.blocks.layers):
        block = encoder.blocks[i]
        w, b = layer.self_attn.in_proj_weight.data, layer.self_attn.in_proj_bias.data
        for j, linear in enumerate([block.attn.q, block.attn.k, block.attn.v]):
            linear.weight.data = w[j * d:(j + 1) * d].clone()
            linear.bias.data = b[j * d:(j + 1) * d].clone()
        block.attn.out.weight.data = layer.self_attn.out_proj.weight.data.clone()
        block.attn.out.bias.data = layer.self_attn.out_proj.bias.data.clone()
        for mine, theirs in [(block.ffn.up, layer.linear1), (block.ffn.down, layer.linear2),
                             (block.norm1, layer.norm1), (block.norm2, layer.norm2)]:
            mine.load_state_dict(theirs.state_dict())
    return encoder.eval()
'''),
]
