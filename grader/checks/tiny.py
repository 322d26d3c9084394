"""Checks of section 6, the tiny transformer judged honestly: `style_accuracy(rows, predicted)`,
`choose_and_test(valid_accuracy, score_on_test)`, `Encoder` and `from_tiny(encoder, tiny)`.

What they prove, on small made-up inputs (no model is trained here):

- `style_accuracy(style_accuracy)`: the answer is a pandas DataFrame indexed by style, the styles
  sorted and a row `all` last, with a column `accuracy` (the share of that style's tickets whose
  predicted team is the true team, a fraction in [0, 1]) and a column `tickets` (how many tickets
  the style has, whole numbers in an int or a float column: pandas 2 and 3 differ there). The `all` row is the accuracy over every ticket, not the mean
  of the style accuracies. `predicted` may be a list of team names or a tensor of class ids
  (positions in ticketnet.TEAMS); both must give the same table. The inputs are chosen so that
  each usual mistake gives different numbers: the styles appear out of order, their accuracies
  differ from the overall one, and the mean of the style accuracies differs from the overall one.
- `choose_and_test(choose_and_test)`: with validation accuracies in which the best model on
  validation is NOT the best on test, the answer returns (the best name on validation, the test
  score of that model exactly as `score_on_test` returned it), and calls `score_on_test` exactly
  once, for that model. Calling it for several models (to look at their test scores) fails with a
  message about using the test set to choose. With a tie on validation, any of the tied names is
  accepted, still scored once.
- `encoder(Encoder)`: built at small sizes, the encoder has TinyTransformer's children (`embed`,
  `position`, `blocks` an nn.ModuleList of distinct blocks, `norm`, `out`) and parameter count.
  With fixed weights put in every child, it computes TinyTransformer's function (grader.references):
  positions added, every block called with the padding mask, the final norm, the mean of the real
  tokens, `out`. Its first block is tried alone first, so a wrong Block (the student's, in the
  notebook) is named as section 5's mistake, not this one's. A plain list of blocks, one block
  repeated, and the usual mistakes of the forward (no positions, no mask, pads in the mean, a sum
  or the first token, the norm after pooling or missing) are named. Adding pads at the end
  changes no score.
- `from_tiny(from_tiny)`: on a TinyTransformer whose every weight is random and distinct, and on
  the parts of an encoder (built here, so a wrong Encoder cannot fail this task), the returned
  encoder holds each weight in its place (q, k and v split out of in_proj in that order, not
  transposed; the biases; out_proj; linear1 and linear2; norm1 and norm2; embed, position, norm,
  out), which makes its scores the TinyTransformer's. The TinyTransformer is left unchanged, and
  the encoder holds copies: no weight of it shares its numbers with the TinyTransformer's.
"""

import itertools

import pandas as pd
import torch
from torch import nn

from grader import references
from grader.checks import (Counted, call, call_with_aliases, close, expect, expect_learns, expect_shape, first_names, fresh_generator, load_fixed_linears,
                           load_fixed_norm, passed, silenced, task)
from grader.checks import prediction  # noqa: F401 (for the notebook)
from grader.checks.block import (BlockParts, block_parts, close_at_real, expected_counts, feed_forward_linears,
                                 load_fixed_block)

TEAMS = ("delivery", "returns", "payment", "warranty", "account")  # as ticketnet.TEAMS

# ---------------------------------------------------------------------------------------------
# style_accuracy
# ---------------------------------------------------------------------------------------------

# (style, true team, predicted team): styles out of alphabetical order, one style all wrong, one
# all right, so that per-style, overall and mean-of-styles accuracies all differ.
VISIBLE = [
    ("typos", "payment", "returns"), ("plain", "delivery", "delivery"),
    ("short", "account", "account"), ("plain", "returns", "returns"),
    ("typos", "warranty", "delivery"), ("plain", "payment", "payment"),
    ("short", "delivery", "delivery"), ("plain", "warranty", "account"),
    ("short", "returns", "returns"),
]


def named_case(name, seed=0):
    """(rows, predicted team names) of a named case."""
    if name == "visible":
        triples = VISIBLE
    elif name == "one_style":
        triples = [("long", t, p) for t, p in [("payment", "payment"), ("account", "returns"),
                                               ("delivery", "delivery"), ("warranty", "warranty")]]
    elif name == "random":  # seven styles of unequal size, about 70% right
        g = torch.Generator().manual_seed(seed)
        styles = ("plain", "short", "long", "typos", "negation", "two_topics", "boundary")
        triples = []
        for i in range(60):
            style = styles[int(torch.randint(len(styles), (1,), generator=g)) if i >= 7 else i]
            true = TEAMS[int(torch.randint(5, (1,), generator=g))]
            right = torch.rand(1, generator=g).item() < 0.7
            predicted = true if right else TEAMS[(TEAMS.index(true) + 1 + i % 4) % 5]
            triples.append((style, true, predicted))
    else:
        raise ValueError(f"unknown case {name!r}")
    rows = [{"ticket_id": f"T-{i:03d}", "text": "a made-up ticket", "team": t, "style": s}
            for i, (s, t, _) in enumerate(triples)]
    return rows, [p for _, _, p in triples]


def _show(frame):
    try:
        return "\n" + frame.to_string()
    except Exception:  # noqa: BLE001 - only for the message
        return repr(frame)[:400]


def _same(a, b):
    """Whether two accuracies are one share of whole numbers."""
    return close(a, b, "count")


def style_counts(rows, predicted):
    """{style: (accuracy, tickets, right)} of predicted team names against the rows, the styles
    sorted, then "all": what style_accuracy's table should hold, counted ticket by ticket."""
    counted = {}
    for row, team in zip(rows, predicted):
        right, n = counted.get(row["style"], (0, 0))
        counted[row["style"]] = (right + (team == row["team"]), n + 1)
    out = {s: (r / n, n, r) for s, (r, n) in sorted(counted.items())}
    right = sum(r for _, _, r in out.values())
    out["all"] = (right / len(rows), len(rows), right)
    return out


@task
def style_accuracy(style_accuracy, case="visible", as_tensor=False, seed=0):
    """Check `style_accuracy(rows, predicted)` on a made-up case; `as_tensor` passes the
    predictions as a LongTensor of class ids (positions in TEAMS) instead of team names."""
    rows, names = named_case(case, seed)
    predicted = torch.tensor([TEAMS.index(t) for t in names]) if as_tensor else list(names)
    given = "a tensor of class ids" if as_tensor else "a list of team names"
    snapshot = [dict(r) for r in rows]
    kept = predicted.clone() if as_tensor else list(predicted)
    table = call(style_accuracy, rows, predicted)
    expect(rows == snapshot, "style_accuracy changed the rows it was given; build a new table instead")
    expect(torch.equal(predicted, kept) if as_tensor else predicted == kept,
           "style_accuracy changed the predictions it was given; read them, build a new table")
    want = references.expected("tiny", "style_table", case, seed)
    styles = [s for s in want if s != "all"]
    _style_table_layout(table, styles)
    _style_table_counts(table, want, styles)
    _style_table_accuracies(table, want, styles, given, as_tensor)
    _style_table_all_row(table, want, styles)
    _style_accuracy_on_new_rows(style_accuracy, as_tensor)
    passed()


def _style_table_layout(table, styles):
    """A DataFrame with the columns accuracy and tickets, a row per style, sorted, then `all`."""
    expect(isinstance(table, pd.DataFrame),
           f"style_accuracy should return a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in ("accuracy", "tickets") if c not in table.columns]
    expect(not missing, f"the table has no column {' or '.join(map(repr, missing))}; its columns are "
                        f"{list(table.columns)}. Name them 'accuracy' and 'tickets'.{_show(table)}")
    index = [str(i) for i in table.index]
    expect("all" in index, f"the table has no `all` row: add one last row named 'all' with the "
                           f"accuracy over every ticket and their number.{_show(table)}")
    expect(index.count("all") == 1 and index[-1] == "all",
           f"the `all` row should come last, once; the index is {index}.{_show(table)}")
    expect(sorted(index[:-1]) == sorted(styles),
           f"the index should hold each style once, then 'all': expected {styles + ['all']}, "
           f"got {index}. Index the table by the `style` column.{_show(table)}")
    expect(index[:-1] == styles,
           f"the styles are not sorted: expected {styles + ['all']}, got {index} (the order the "
           f"styles first appear in?). Sort the index, then add 'all'.{_show(table)}")


def _style_table_counts(table, want, styles):
    """Accuracies that are fractions, and each style's count of tickets."""
    accuracy, tickets = table["accuracy"], table["tickets"]
    values = [float(a) for a in accuracy]
    expect(all(0 <= a <= 1 for a in values),
           f"accuracy should be a fraction in [0, 1], got {values} (percentages? divide by 100, or "
           f"do not multiply).{_show(table)}")
    # Counts, whatever the dtype: pandas 2 turns an int column into floats when a row is appended
    # with a list (`table.loc["all"] = [...]`), pandas 3 keeps it int, and both are right answers.
    expect(pd.api.types.is_numeric_dtype(tickets) and not pd.api.types.is_bool_dtype(tickets)
           and all(float(n).is_integer() for n in tickets),
           f"tickets should be counts of tickets, whole numbers; got {tickets.tolist()} (dtype "
           f"{tickets.dtype}): count with len(...) or .size().{_show(table)}")
    for style in styles:
        a, n, r = want[style]
        got_n = int(tickets.loc[style])
        if got_n != n:
            hint = (" That is the number of RIGHT predictions; tickets counts every ticket of the "
                    "style." if got_n == r else
                    " That is every ticket of the table: count each style's own tickets (group by "
                    "style)." if got_n == want["all"][1] else "")
            raise AssertionError(f"style {style!r} has {n} tickets, the table says {got_n}.{hint}"
                                 f"{_show(table)}")


def _style_table_accuracies(table, want, styles, given, as_tensor):
    """Each style's accuracy, counted on its own tickets."""
    accuracy, overall = table["accuracy"], want["all"][0]
    for style in styles:
        a, n, r = want[style]
        got = float(accuracy.loc[style])
        if not _same(got, a):
            if len(styles) > 1 and all(_same(float(accuracy.loc[s]), overall) for s in styles):
                raise AssertionError(
                    f"every style shows the same accuracy {overall:.4f}, the accuracy over all "
                    f"rows: compute it per style, on that style's tickets only (group by style)."
                    f"{_show(table)}")
            hint = ""
            if as_tensor:
                hint = (" predicted was " + given + ": turn each id into a team name with "
                        "TEAMS[i] (or compare ids with ids) before comparing with row['team'].")
            raise AssertionError(f"style {style!r}: {r} of its {n} tickets are right, so its accuracy "
                                 f"is {a:.4f}, the table says {got:.4f} (predicted given as {given})."
                                 f"{hint}{_show(table)}")


def _style_table_all_row(table, want, styles):
    """The `all` row: every ticket, and the accuracy over them all (not the mean of the styles')."""
    a, n, r = want["all"]
    got, got_n = float(table["accuracy"].loc["all"]), int(table["tickets"].loc["all"])
    expect(got_n == n, f"the `all` row should count every ticket, {n}; it says {got_n}.{_show(table)}")
    if not _same(got, a):
        mean = sum(want[s][0] for s in styles) / len(styles)
        hint = (" That is the mean of the style accuracies; styles have different sizes, so use "
                "right / tickets over every ticket." if _same(got, mean) else "")
        raise AssertionError(f"the `all` row: {r} of {n} tickets are right, accuracy {a:.4f}; the "
                             f"table says {got:.4f}.{hint}{_show(table)}")


def _style_accuracy_on_new_rows(style_accuracy, as_tensor):
    """The same table, counted here, for rows drawn as the check runs."""
    rows, names = named_case("random", int(torch.randint(2**31, (), generator=fresh_generator())))
    predicted = torch.tensor([TEAMS.index(t) for t in names]) if as_tensor else list(names)
    table = call(style_accuracy, rows, predicted)
    counted = {style: (right, n) for style, (_, n, right) in style_counts(rows, names).items()}
    expect(isinstance(table, pd.DataFrame) and {"accuracy", "tickets"} <= set(table.columns)
           and sorted(str(i) for i in table.index) == sorted(counted) and all(
               int(table["tickets"].loc[style]) == n and _same(table["accuracy"].loc[style], r / n)
               for style, (r, n) in counted.items()),
           f"style_accuracy is right on the check's own tickets but not on {len(rows)} new ones: does it "
           f"depend on more than the rows and the predictions?{_show(table)}")


# ---------------------------------------------------------------------------------------------
# choose_and_test
# ---------------------------------------------------------------------------------------------

# name -> (validation accuracy, test accuracy): the best on test is not the best on validation,
# the worst on validation is not the worst on test either.
VISIBLE_MODELS = {"tfidf": (0.985, 0.9717), "bag_of_words": (0.9617, 0.9867),
                  "transformer": (0.9283, 0.905), "average_embedding": (0.91, 0.9383)}
CASES = {
    "visible": VISIBLE_MODELS,
    # two models tie on validation, and they differ on test
    "tie": {"bag_of_words": (0.97, 0.9633), "tfidf": (0.97, 0.9783), "transformer": (0.91, 0.995)},
    # the best on validation is neither first nor last, and its test score is its own number
    "middle": {"a": (0.41, 0.99), "b": (0.8123, 0.7071), "c": (0.6, 0.95), "d": (0.55, 0.5)},
    "one": {"transformer": (0.9, 0.8765)},
}


class _Test(Counted):
    """A stand-in for scoring a model on the test split, that remembers every call."""

    def __init__(self, models):
        super().__init__()
        self.models = models

    def __call__(self, name):
        self.calls.append(name)
        if name not in self.models:
            raise KeyError(f"no model named {name!r}; the models are {list(self.models)}")
        return self.models[name][1]


@task
def choose_and_test(choose_and_test, case="visible"):
    """Check `choose_and_test(valid_accuracy, score_on_test)` on a named set of models."""
    models = CASES[case]
    valid = {name: v for name, (v, _) in models.items()}
    snapshot = dict(valid)
    test = _Test(models)
    result = call(choose_and_test, valid, test)
    expect(valid == snapshot, "choose_and_test changed valid_accuracy; read it, do not modify it")
    chosen_ok = references.expected("tiny", "best_on_validation", case)
    best = valid[chosen_ok[0]]
    named = " or ".join(chosen_ok)

    calls = test.calls
    if len(calls) > 1:
        several = len(set(calls)) > 1
        raise AssertionError(
            (f"score_on_test was called {len(calls)} times, for {calls}: that uses the test set to "
             f"choose. Choose on validation only (the best valid_accuracy is {named}), then score "
             "that one model on test, once." if several else
             f"score_on_test was called {len(calls)} times for {calls[0]!r}; score the chosen "
             "model on the test set once, and keep the number."))
    expect(len(calls) == 1, "score_on_test was never called: the test accuracy you return must come "
                            "from score_on_test(chosen), called once for the chosen model.")
    expect(isinstance(result, tuple) and len(result) == 2,
           f"choose_and_test should return a tuple (chosen_name, test_accuracy), got {result!r}")
    chosen, score = result
    expect(chosen == calls[0], f"you returned {chosen!r} but scored {calls[0]!r} on test; return "
                               "the name of the model you scored.")
    if chosen not in chosen_ok:
        worst = min(valid.values())
        if valid.get(chosen) == worst:
            hint = " That is the LOWEST validation accuracy: use max, not min."
        elif chosen == max(valid):
            hint = (" That name comes last in the alphabet: max over a dict compares its keys, the "
                    "names; it must compare their accuracies (max's `key` argument).")
        else:
            hint = ""
        raise AssertionError(f"you chose {chosen!r} (validation accuracy {valid.get(chosen)}), but the "
                             f"best on validation is {named} ({best}).{hint}")
    expected = models[chosen][1]
    expect(not (isinstance(score, (int, float)) and not isinstance(score, bool)
                and _same(score, valid[chosen]) and not _same(score, expected)),
           f"you returned {score}, the VALIDATION accuracy of {chosen!r}; return the test score "
           f"that score_on_test({chosen!r}) gave, {expected}.")
    expect(isinstance(score, (int, float)) and not isinstance(score, bool) and _same(score, expected),
           f"the test accuracy returned should be what score_on_test({chosen!r}) returned, {expected}; "
           f"got {score!r}.")
    generator = fresh_generator()
    scores = torch.rand(int(torch.randint(2, 7, (), generator=generator)), 2, generator=generator).tolist()
    models = {f"model_{i}": (round(v, 4), round(t, 4)) for i, (v, t) in enumerate(scores)}
    best = max(v for v, _ in models.values())
    test = _Test(models)
    result = call(choose_and_test, {name: v for name, (v, _) in models.items()}, test)
    expect(len(test.calls) == 1 and isinstance(result, tuple) and len(result) == 2 and result[0] == test.calls[0]
           and models[result[0]][0] == best and _same(result[1], models[result[0]][1]),
           f"choose_and_test is right on the check's own models but not on {len(models)} new ones, "
           f"{models} (validation, test): it scored {test.calls} on test and returned {result!r}. Does it "
           "depend on more than valid_accuracy and score_on_test?")
    passed()


# ---------------------------------------------------------------------------------------------
# Encoder: the student's blocks stacked into TinyTransformer's function
# ---------------------------------------------------------------------------------------------

PAD, UNK = 0, 1  # as ticketnet.PAD and ticketnet.UNK
TINY_DEFAULTS = {"dim": 64, "heads": 4, "blocks": 2, "ffn": 256, "max_tokens": 120}  # TinyTransformer's
ENCODER_CHILDREN = ("embed", "position", "blocks", "norm", "out")


def _tickets(vocab_size, batch, seq, generator):
    """Token ids (batch, seq), each ticket with its own number of real tokens (at least two), PAD
    after them; the first ticket fills the whole row. Each ticket's second token is the unknown
    word, UNK: a real token, never a pad, that an answer mistaking it for one would drop."""
    ids = torch.randint(2, vocab_size, (batch, seq), generator=generator)
    ids[:, min(1, seq - 1)] = UNK
    for i in range(1, batch):
        ids[i, max(2, seq - 2 * i):] = PAD
    return ids


def encoder_inputs(vocab_size, batch, max_tokens, seed):
    """The tickets the Encoder check runs: two positions short of max_tokens, so that two pads
    can be added."""
    return _tickets(vocab_size, batch, max_tokens - 2, torch.Generator().manual_seed(seed))


def load_fixed_encoder(model, seed):
    """Put fixed weights, drawn from private generators, in an encoder's children: the token and
    position tables, every block's parts (each block its own), the final norm (away from weight 1
    and bias 0, which would hide it used in the wrong place) and the output layer."""
    g = torch.Generator().manual_seed(50_000 + seed)
    with torch.no_grad():
        for table in (model.embed, model.position):
            table.weight.copy_(torch.randn(table.weight.shape, generator=g))
    load_fixed_norm(model.norm, g)
    load_fixed_linears([model.out], g)
    for i, block in enumerate(model.blocks):
        load_fixed_block(block, 100 * seed + i)


def encoder_parts(vocab_size, dim, heads, blocks, ffn, max_tokens, classes=len(TEAMS)):
    """An encoder's children and nothing else (no forward): embed, position, blocks (each the
    parts of a block), norm and out."""
    return BlockParts(embed=nn.Embedding(vocab_size, dim, padding_idx=PAD), position=nn.Embedding(max_tokens, dim),
                  blocks=nn.ModuleList(block_parts(dim, heads, ffn, seed=i) for i in range(blocks)),
                  norm=nn.LayerNorm(dim), out=nn.Linear(dim, classes))


def fixed_encoder_parts(vocab_size, dim, heads, blocks, ffn, max_tokens, classes, seed):
    parts = encoder_parts(vocab_size, dim, heads, blocks, ffn, max_tokens, classes)
    load_fixed_encoder(parts, seed)
    return parts.eval()


POOLS = {  # how the token vectors (B, T, D) become one vector per ticket
    "mean": "the mean over the real tokens",
    "all": "the mean over every position, pads included: divide by the number of REAL tokens and "
           "leave the pads out of the sum",
    "sum": "the sum over the real tokens, not their mean",
    "first": "the first token's vector only: average the vectors of all real tokens",
}
NORMS = {"before": "the final norm is applied to each token before pooling",
         "after": "the final norm is applied after pooling, to the mean vector: apply it to each token first",
         "none": "there is no final norm: apply self.norm to h after the last block"}


def encoder_mistakes():
    """The combinations of mistakes the Encoder check can name, fewest first: (positions added,
    mask passed, pooling, final norm)."""
    grid = itertools.product((True, False), (True, False), POOLS, NORMS)
    grid = sorted(grid, key=lambda g: (not g[0]) + (not g[1]) + (g[2] != "mean") + (g[3] != "before"))
    return grid[1:]  # grid[0] is the right encoder


def mistake_key(combination):
    return " ".join(str(part) for part in combination)


def _encoder_diagnosis(mistakes, out):
    """The mistakes whose combination reproduces `out`, in words, or None. `mistakes` holds the
    scores of each combination (grader.references)."""
    for combination in encoder_mistakes():
        candidate = mistakes[mistake_key(combination)]
        if close(candidate, out):
            positions, mask, pool, norm = combination
            hints = [] if positions else ["no position vectors are added to the token vectors"]
            if not mask:
                hints.append("the blocks get no padding mask: call each block as block(h, pad), "
                             "pad = ids == PAD, so that real tokens do not read the pads")
            if pool != "mean":
                hints.append(f"each ticket's vector is {POOLS[pool]}")
            if norm != "before":
                hints.append(NORMS[norm])
            return "; ".join(hints)
    return None


def _encoder_structure(model, vocab_size, dim, blocks, ffn, max_tokens, classes):
    for child in ENCODER_CHILDREN:
        expect(hasattr(model, child), f"the encoder has no attribute `{child}`: create self.embed, "
               "self.position, self.blocks, self.norm and self.out in __init__ (after super().__init__())")
    stack = model.blocks
    if isinstance(stack, (list, tuple)):
        hidden = sum(p.numel() for block in stack if isinstance(block, nn.Module) for p in block.parameters())
        raise AssertionError(
            f"self.blocks is a plain Python {type(stack).__name__}: nn.Module registers the modules "
            "assigned to its attributes, not the ones inside a list, so your encoder does not know "
            f"its {len(stack)} blocks. Their {hidden:,} parameters are missing from parameters() (an "
            "optimizer would never train them), from state_dict() (saving and loading skip them) and "
            "from .eval() and .to(). Wrap the list: nn.ModuleList([...]).")
    expect(isinstance(stack, nn.Module) and hasattr(stack, "__iter__"),
           f"self.blocks should be an nn.ModuleList of your blocks, got {type(stack).__name__}")
    layers = list(stack)
    expect(len(layers) == blocks, f"Encoder(..., blocks={blocks}) has {len(layers)} blocks: build "
           "as many as the argument `blocks` asks for")
    distinct = {id(block) for block in layers}
    expect(len(distinct) == len(layers),
           f"the {len(layers)} blocks are {len(distinct)} module(s) used several times, so they share "
           "their weights: [Block(...)] * n repeats ONE block. Build a new Block for each place "
           "(a loop or a comprehension that calls Block(...) each time).")
    for i, block in enumerate(layers):
        expect(isinstance(block, nn.Module) and hasattr(block, "norm1") and hasattr(block, "ffn"),
               f"self.blocks[{i}] is {type(block).__name__}, not your Block from section 5")
    embed, position, norm, out = model.embed, model.position, model.norm, model.out
    expect(isinstance(embed, nn.Embedding) and (embed.num_embeddings, embed.embedding_dim) == (vocab_size, dim),
           f"self.embed should be nn.Embedding(vocab_size, dim) = nn.Embedding({vocab_size}, {dim}), got {embed}")
    expect(embed.padding_idx == PAD,
           f"self.embed has padding_idx={embed.padding_idx}; TinyTransformer's keeps the PAD id's vector at "
           "zero and out of training (padding_idx=PAD), so that a pad adds nothing wherever it is read")
    expect(isinstance(position, nn.Embedding) and (position.num_embeddings, position.embedding_dim) == (max_tokens, dim),
           f"self.position should be nn.Embedding(max_tokens, dim) = nn.Embedding({max_tokens}, {dim}): one "
           f"learned vector per place, got {position}")
    expect(isinstance(norm, nn.LayerNorm) and tuple(norm.normalized_shape) == (dim,),
           f"self.norm should be nn.LayerNorm({dim}), got {norm}")
    expect(isinstance(out, nn.Linear) and (out.in_features, out.out_features) == (dim, classes),
           f"self.out should be nn.Linear({dim}, {classes}): one score per class, classes={classes}, got {out}")


@task
def encoder(Encoder, vocab_size=50, dim=16, heads=2, blocks=3, ffn=24, max_tokens=12, classes=5,
            batch=4, seed=0):
    """Check the student's Encoder: TinyTransformer's children and function, built of the
    student's blocks (the course's when grading)."""
    torch.manual_seed(seed)
    model = call(Encoder, vocab_size, dim=dim, heads=heads, blocks=blocks, ffn=ffn,
                 max_tokens=max_tokens, classes=classes)
    expect(isinstance(model, nn.Module), f"Encoder(...) should be an nn.Module, got {type(model).__name__}")
    _encoder_structure(model, vocab_size, dim, blocks, ffn, max_tokens, classes)
    block_size = sum(expected_counts(dim, ffn).values())
    want = vocab_size * dim + max_tokens * dim + blocks * block_size + 2 * dim + dim * classes + classes
    total = sum(p.numel() for p in model.parameters())
    expect(total == want, f"the encoder has {total:,} parameters, expected {want:,}: embed {vocab_size * dim:,}, "
           f"position {max_tokens * dim:,}, {blocks} blocks of {block_size:,}, norm {2 * dim}, out "
           f"{dim * classes + classes}. A parameter outside these children changes the count.")

    _default_sizes(Encoder, vocab_size)

    load_fixed_encoder(model, seed)
    model.eval()
    results = references.expected("tiny", "encoder_outputs", vocab_size, dim, heads, blocks, ffn,
                                  max_tokens, classes, batch, seed)
    ids = encoder_inputs(vocab_size, batch, max_tokens, seed)
    kept = ids.clone()
    pad = ids == PAD
    with torch.no_grad():
        first = results["first block input"]
        try:
            inside = model.blocks[0](first, pad)
            fails = not (isinstance(inside, torch.Tensor) and inside.shape == first.shape
                         and close_at_real(inside, results["first block output"], pad))
            error = "it does not compute the pre-norm block"
        except Exception as raised:  # noqa: BLE001 - the student's Block, not the encoder, failed
            fails, error = True, f"{type(raised).__name__}: {raised}"
        if fails:
            raise AssertionError(
                f"your Block from section 5 fails inside the encoder ({error}). "
                "Fix it first: its check in 05-block names the mistake; save that notebook and run "
                "the load_parts cell here again. (The autograder grades this encoder with the "
                "course's own Block.)")
        out = call(_named_encoder(model), ids)
        expect(torch.equal(ids, kept), "encoder(ids) changed the ids it was given")
        expect_shape(out, (batch, classes), "encoder(ids) for ids of shape (batch, seq)")
        wanted = results["right"]
        if not close(out, wanted):
            hint = _encoder_diagnosis(results["mistakes"], out)
            gap = (out - wanted).abs().max().item()
            raise AssertionError(
                f"encoder(ids) differs from TinyTransformer's function, computed with your encoder's "
                f"weights and correct blocks, by up to {gap:.3g}. " + (f"Your numbers are what you get when {hint}."
                if hint else "Embed the ids, add the position vectors of places 0..T-1, run every "
                "block as block(h, pad), apply the final norm, average the real tokens, then out."))
        longer = torch.cat([ids, torch.full((batch, 2), PAD)], 1)  # the same tickets, two more pads
        expect(close(call(_named_encoder(model), longer), out),
               "a ticket's scores changed when two pads were added at its end: the pads are read")
        _blocks_pass_biases(model, vocab_size, max_tokens)
    expect_learns(model, ids, what="the encoder")
    passed()


def _default_sizes(Encoder, vocab_size):
    """Encoder(vocab_size) alone has TinyTransformer's sizes: the notebook builds it so, and loads a
    trained TinyTransformer's weights into it."""
    torch.manual_seed(0)
    model = call(Encoder, vocab_size)
    sizes = TINY_DEFAULTS
    try:
        _encoder_structure(model, vocab_size, sizes["dim"], sizes["blocks"], sizes["ffn"], sizes["max_tokens"],
                           len(TEAMS))
        heads = [getattr(block, "heads", sizes["heads"]) for block in model.blocks]
        expect(all(h == sizes["heads"] for h in heads), f"its blocks have {heads[0]} heads")
    except AssertionError as error:
        defaults = ", ".join(f"{name}={value}" for name, value in sizes.items())
        raise AssertionError(f"Encoder({vocab_size}), every other argument left at its default: {error}. "
                             f"The defaults are TinyTransformer's ({defaults}, classes=len(TEAMS)), so that "
                             "`Encoder(len(vocab))` can hold the trained model's weights.") from None


def _blocks_pass_biases(model, vocab_size, max_tokens):
    """The encoder on tickets drawn as the check runs (fresh_generator), with the output weights of
    every block's two branches at zero (attn.out's and the feed-forward's narrowing Linear's) and
    new biases: each block then adds its two biases to h, whatever attention computes, and the
    encoder gives out(the mean over the real tokens of norm(embed + position + every bias)). No
    recorded result answers new tickets."""
    generator = fresh_generator()
    ids = _tickets(vocab_size, int(torch.randint(2, 7, (), generator=generator)),
                   int(torch.randint(2, max_tokens + 1, (), generator=generator)), generator)
    outputs = [linear for block in model.blocks for linear in (block.attn.out, feed_forward_linears(block)[1])]
    biases = [torch.randn(linear.bias.shape, generator=generator) for linear in outputs]
    with silenced(outputs, biases), torch.no_grad():
        out = call(_named_encoder(model), ids)
        h = model.norm(model.embed(ids) + model.position(torch.arange(ids.shape[1])) + sum(biases))
        real = (ids != PAD).unsqueeze(-1).float()
        want = model.out((h * real).sum(1) / real.sum(1))
    expect(close(out, want),
           f"encoder(ids) on new tickets, of shape {tuple(ids.shape)}, with every block's attn.out and "
           "second feed-forward Linear weighing nothing, differs from out(the mean of the real tokens of "
           "norm(embed + position + those layers' biases)): each block then adds its biases alone. It is "
           "right on the check's own tickets: does it depend on more than the ids and its weights?")


def _named_encoder(model):
    def encoder(ids):
        return model(ids)
    return encoder


# ---------------------------------------------------------------------------------------------
# from_tiny: a trained TinyTransformer's weights in an encoder of the student's parts
# ---------------------------------------------------------------------------------------------

def _same_weights(a, b):
    return all(pa.shape == pb.shape and torch.equal(pa, pb) for pa, pb in
               itertools.zip_longest(a.parameters(), b.parameters(), fillvalue=torch.empty(0)))


def _block_problem(i, block, layer):
    """What block i of the encoder does not hold of TinyTransformer's layer i, or None."""
    where = f"blocks[{i}]"
    attn = layer.self_attn
    chunks = dict(zip("qkv", attn.in_proj_weight.chunk(3)))
    biases = dict(zip("qkv", attn.in_proj_bias.chunk(3)))
    for name in "qkv":
        weight = getattr(block.attn, name).weight
        if torch.equal(weight, chunks[name]):
            continue
        for other in "qkv":
            if torch.equal(weight, chunks[other]):
                return (f"{where}.attn.{name}.weight holds the {other} rows of in_proj_weight: the rows "
                        "of in_proj_weight are the queries' (0 to d-1), then the keys' (d to 2d-1), then "
                        "the values' (2d to 3d-1), so split them in that order")
            if torch.equal(weight, chunks[other].T):
                return (f"{where}.attn.{name}.weight holds a transposed slice of in_proj_weight: nn.Linear "
                        "and in_proj_weight both store (out, in), so copy the slice as it is, without .T")
        return f"{where}.attn.{name}.weight is not the {name} slice of self_attn.in_proj_weight"
    for name in "qkv":
        if not torch.equal(getattr(block.attn, name).bias, biases[name]):
            return (f"{where}.attn.{name}.bias is not the {name} slice of self_attn.in_proj_bias: the "
                    "biases are stacked like the weights")
    if not _same_weights(block.attn.out, attn.out_proj):
        return f"{where}.attn.out does not hold the layer's self_attn.out_proj"
    first, second = feed_forward_linears(block)
    for mine, theirs, other, name in ((first, layer.linear1, layer.linear2, "linear1"),
                                      (second, layer.linear2, layer.linear1, "linear2")):
        if not _same_weights(mine, theirs):
            if _same_weights(mine, other):
                return (f"{where}.ffn's Linear layers are swapped: linear1 (d -> d_ff) is the first, "
                        "widening layer, linear2 the second")
            return f"{where}.ffn does not hold the layer's {name}"
    for mine, theirs, other in ((block.norm1, layer.norm1, layer.norm2), (block.norm2, layer.norm2, layer.norm1)):
        if not _same_weights(mine, theirs):
            if _same_weights(mine, other):
                return f"{where}.norm1 and norm2 are swapped: the layer's norm1 goes before attention"
            return f"{where}'s norm1 and norm2 should hold the layer's norm1 and norm2"
    return None


def _tiny_problem(model, tiny):
    """What the filled encoder does not hold of the TinyTransformer, or None."""
    for name in (child for child in ENCODER_CHILDREN if child != "blocks"):
        if not _same_weights(getattr(model, name), getattr(tiny, name)):
            return f"encoder.{name} does not hold tiny.{name}'s weights: copy them (load_state_dict)"
    for i, (block, layer) in enumerate(zip(model.blocks, tiny.blocks.layers)):
        problem = _block_problem(i, block, layer)
        if problem:
            return problem
    return None


@task
def from_tiny(from_tiny, vocab_size=40, dim=16, heads=2, blocks=2, ffn=24, max_tokens=12, seed=0):
    """Check the student's from_tiny on a TinyTransformer with random weights (every weight and
    norm different, so that any two parts mixed up show) and the parts of an encoder."""
    from ticketnet import TinyTransformer

    torch.manual_seed(seed)
    tiny = TinyTransformer(vocab_size, dim=dim, heads=heads, blocks=blocks, ffn=ffn,
                           max_tokens=max_tokens).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in tiny.parameters():
            parameter.copy_(0.3 * torch.randn(parameter.shape, generator=generator))
    for norm in (m for m in tiny.modules() if isinstance(m, nn.LayerNorm)):
        load_fixed_norm(norm, generator)
    model = encoder_parts(vocab_size, dim, heads, blocks, ffn, max_tokens)
    kept = {name: value.clone() for name, value in tiny.state_dict().items()}
    filled, shared = call_with_aliases(from_tiny, model, tiny, source=1)
    expect(all(torch.equal(kept[name], value) for name, value in tiny.state_dict().items()),
           "from_tiny changed the TinyTransformer it was given: read its weights, do not modify them")
    expect(filled is not None, "from_tiny returned None: return the encoder, so that "
           "`mine = from_tiny(Encoder(len(vocab)), model)` gives the filled encoder")
    expect(isinstance(filled, nn.Module) and hasattr(filled, "blocks"),
           f"from_tiny should return the encoder it filled, got {type(filled).__name__}")
    training = [name or "the encoder" for name, module in filled.named_modules() if module.training]
    expect(not training, f"from_tiny returned the encoder in training mode ({first_names(training)}): its "
           "dropout would still zero random numbers at every call. The task asks for it in evaluation mode.")
    problem = _tiny_problem(filled, tiny)
    expect(problem is None, f"{problem}." if problem else "")
    expect(not shared, f"the encoder's {first_names(shared)} are tiny's own tensors, not copies: change or "
           "train one model and the other changes too. Copy the numbers into the encoder's own weights; "
           "do not hand it tiny's Parameters, modules or views of its tensors.")
    passed()
