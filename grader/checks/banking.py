"""Checks of section 7, Banking77: shuffle_tokens and SinusoidEncoder.

Each public function takes the student's function or class, runs it on small seeded inputs, and
prints "Check passed" or raises AssertionError naming the likely mistake. What they prove
(COURSE.md, row 7):

- shuffle_tokens(ids, generator) returns a new tensor in which the real tokens of every row are put
  in a random order drawn from `generator`, each row by its own length, while every pad stays where
  it was and the input is left as it came. A fixed reordering (the identity, a reversal, one
  permutation for all seeds) is refused: the probe must be random, so different seeds must give
  different orders, and the same seed the same one. Over DRAWS seeds, on rows of distinct tokens,
  every position (the first included) must change token in some draw, and the rows must not move
  as blocks (a rotation keeps all neighbours but one side by side): a random permutation passes
  both but with probability about 3e-14 (_orders_are_random), a rotation or a shuffle that leaves
  one position alone never does.
- SinusoidEncoder(vocab_size, classes) is ticketnet.TinyTransformer(positions=False) with the fixed
  sinusoidal table added to the token embeddings before the blocks: it reads 200 tokens (longer
  than any learned table), trains exactly as many parameters as TinyTransformer(positions=False),
  sees word order, ignores extra pad columns, and adds exactly sin/cos(p / 10000^(2i/d)),
  interleaved, which is proven twice: on the input of its first block, and on its scores with
  the check's fixed weights put in it, against grader.references. It reads a batch of 400 to 600
  tokens too, scoring as grader.references' sinusoid of that length says (no table of fixed
  length, no position capped). Its dropout is TinyTransformer's (the same rates, nothing
  more): in training mode, from one random state, it scores as TinyTransformer with the sinusoid,
  which also proves the sinusoid added while it trains.
- sinusoid(length, d), the function of the same answer cell, is grader.references' table at
  widths other than the encoder's 64 and at lengths past 500: its angles follow its own d.
"""

import torch
from torch import nn

from grader import references
from grader.checks import (call, close, expect, expect_close, expect_learns, expect_shape, fresh_generator, passed,
                           task)
from grader.checks.positions import returned_table

PAD = 0

# ---------------------------------------------------------------------------------------------
# shuffle_tokens
# ---------------------------------------------------------------------------------------------


def _batch(lengths, s, seed, vocab=40):
    """Right-padded ids (len(lengths), s); the real tokens of a row are distinct ids >= 2."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.full((len(lengths), s), PAD, dtype=torch.long)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randperm(vocab - 2, generator=generator)[:n] + 2
    return ids


def _shuffle(shuffle_tokens, ids, seed, salt=0):
    """The student's result for a fresh generator seeded with `seed`, with the global RNG seeded
    by `salt` (and restored after), so that code ignoring the generator shows it."""
    state = torch.get_rng_state()
    try:
        torch.manual_seed(1000 + salt)
        out = call(shuffle_tokens, ids, torch.Generator().manual_seed(seed))
    finally:
        torch.set_rng_state(state)
    return out


def _same_rows(a, b):
    return [bool(torch.equal(x, y)) for x, y in zip(a, b)]


@task
def check_shuffle_tokens(shuffle_tokens, lengths=(9, 6, 12, 3, 7, 12, 5, 10), s=12, seed=0):
    """shuffle_tokens(ids, generator): a new LongTensor of the same shape; per row the same tokens,
    pads where they were; input untouched; repeatable for one seed; reorders most rows of three or
    more tokens; different seeds give different orders (so neither identity nor a fixed order)."""
    ids = _batch(lengths, s, seed)
    original = ids.clone()
    out = _shuffle(shuffle_tokens, ids, seed)
    _same_tokens_and_pads(out, ids, original, lengths)
    again = _shuffle(shuffle_tokens, original.clone(), seed, salt=1)
    expect(torch.equal(again, out),
           "shuffle_tokens gave two different results for two generators seeded alike: the order "
           "does not come from `generator` (the global random state drew it). Pass `generator` to "
           "the draw.")
    long_rows = [row for row, n in enumerate(lengths) if n >= 3]
    moved = sum(not same for row, same in enumerate(_same_rows(out, original)) if row in long_rows)
    expect(moved * 2 > len(long_rows),
           f"only {moved} of the {len(long_rows)} rows with three or more tokens changed order; a "
           "random permutation of each row's real tokens should move most of them.")
    others = [_shuffle(shuffle_tokens, original.clone(), seed + k, salt=2) for k in (1, 2, 3)]
    _orders_drawn_per_row(out, others, original, lengths)
    _orders_are_random(shuffle_tokens, seed)
    passed()


def _same_tokens_and_pads(out, ids, original, lengths, moved=True):
    """A new LongTensor of the same shape: per row the same tokens, pads where they were, the
    input untouched, and (`moved`) some token moved."""
    expect(torch.equal(ids, original),
           "shuffle_tokens modified its input in place: the caller's ids changed. Work on a copy "
           "(out = ids.clone()) and return the copy; the original queries are still needed.")
    expect(isinstance(out, torch.Tensor),
           f"shuffle_tokens should return a tensor, got {type(out).__name__}: did you forget `return`?")
    expect_shape(out, ids.shape, f"shuffle_tokens on ids of shape {tuple(ids.shape)}")
    expect(out.dtype == torch.long, f"shuffle_tokens should return token ids (torch.long), got {out.dtype}")

    for row, n in enumerate(lengths):
        if not torch.equal(out[row].sort().values, original[row].sort().values):
            raise AssertionError(
                f"row {row} does not hold the same tokens after the shuffle: {original[row, :n].tolist()} "
                f"became {out[row, :n].tolist()}. Each row keeps its own words, only their order "
                "changes; did you shuffle the rows of the batch, or index one row with another's "
                "permutation?")

    pad = original == PAD
    if not torch.equal(out == PAD, pad):
        row = int(((out == PAD) != pad).any(1).nonzero()[0])
        raise AssertionError(
            f"pads moved: row {row} has {int(lengths[row])} real tokens then pads, and after the shuffle "
            f"it reads {out[row].tolist()}. Shuffle only the first n positions of each row, n being "
            "that row's own number of real tokens: not all the columns, nor one length for every row.")
    expect(not moved or not torch.equal(out, original),
           "shuffle_tokens returned the queries unchanged: no token moved. Is the reordered row "
           "written into the tensor you return?")


def _orders_drawn_per_row(out, others, original, lengths):
    """`out` and `others` (three other seeds): not one fixed order (a reversal), not the same for
    every seed, and each row shuffled over its own length."""
    reversed_rows = original.clone()
    for row, n in enumerate(lengths):
        reversed_rows[row, :n] = original[row, :n].flip(0)
    if all(torch.equal(o, reversed_rows) for o in (out, *others)):
        raise AssertionError(
            "shuffle_tokens reverses every query, whatever the seed. A reversal is one fixed order: "
            "it keeps each pair of neighbours together and the model sees the same query every time. "
            "The probe needs a random order, drawn from `generator` for each row.")
    expect(any(not torch.equal(o, out) for o in others),
           "four different seeds gave the same order: the shuffle does not depend on the generator's "
           "seed. Draw each row's order from `generator`, the one argument that carries the seed.")

    # Each row is shuffled over its own length: in a long row the last real token moves for some
    # seed (a random order leaves it in place for all four seeds with probability (1/n)^4).
    tails = [row for row, n in enumerate(lengths) if n >= 9]
    stuck = [row for row in tails
             if all(o[row, lengths[row] - 1] == original[row, lengths[row] - 1] for o in (out, *others))]
    expect(not tails or len(stuck) * 2 < len(tails),
           f"the last real tokens of the longer rows never move (rows {stuck}, over four seeds): only "
           "the first few positions are shuffled. Shuffle every row over its own length n = its "
           "number of real tokens, not the shortest row's length for all.")


DRAWS = 16  # seeds of the statistical test of shuffle_tokens
RANDOM_LENGTHS = (10, 8)  # its rows of distinct tokens; the second padded


def _orders_are_random(shuffle_tokens, seed):
    """Over DRAWS seeds (other seeds for each `seed`), on a row of 10 and one of 8 distinct tokens:
    every position of a row holds another token in some draw, and fewer than half the draws keep
    all but one of a row's pairs of neighbours side by side (either way round).

    A shuffle that never moves one position (the first, say) fails the first test, and any rotation
    (by a random shift or not) the second, whatever the seeds: it keeps n - 2 of the n - 1 pairs in
    every draw. A random permutation of n tokens fails them with probability
    - first test: at most n * n**-DRAWS (a given position keeps its token in a draw with
      probability 1/n): 2.8e-14 for n = 8, 1e-15 for n = 10;
    - second test: P(Binomial(DRAWS, q) >= DRAWS / 2), q the share of the n! orders that keep
      n - 2 pairs or more (36 of 8!, 48 of 10!, counted by enumeration): 5.2e-21 for n = 8,
      1.2e-35 for n = 10;
    so 2.9e-14 in all (by the union bound; rows may share a draw), for each call of the check."""
    lengths = RANDOM_LENGTHS
    original = _batch(lengths, max(lengths), 500 + seed)
    draws = []
    for k in range(DRAWS):
        ids = original.clone()
        out = _shuffle(shuffle_tokens, ids, 10_000 + DRAWS * seed + k, salt=3)
        _same_tokens_and_pads(out, ids, original, lengths, moved=False)
        draws.append(out)
    for row, n in enumerate(lengths):
        tokens = original[row, :n]
        orders = torch.stack([out[row, :n] for out in draws])  # (DRAWS, n)
        stuck = [p for p in range(n) if bool((orders[:, p] == tokens[p]).all())]
        if stuck:
            first = " (the first token never leaves the front)" if stuck[0] == 0 else ""
            raise AssertionError(
                f"over {DRAWS} seeds, the token at position{'s' if len(stuck) > 1 else ''} "
                f"{', '.join(map(str, stuck))} of a row of {n} real tokens never moved{first}. A random "
                "order lets every real token land anywhere among the row's n positions: shuffle all "
                "n of them, none held in place.")
        where = (orders.unsqueeze(2) == tokens.view(1, 1, n)).int().argmax(dim=1)  # (DRAWS, n): where token j went
        kept = ((where[:, 1:] - where[:, :-1]).abs() == 1).sum(dim=1)  # neighbours still side by side
        blocks = int((kept >= n - 2).sum())
        if blocks * 2 >= DRAWS:
            raise AssertionError(
                f"over {DRAWS} seeds, a row of {n} real tokens kept at least {n - 2} of its {n - 1} pairs "
                f"of neighbours side by side in {blocks} draws: its tokens move as one block (a rotation "
                "keeps every pair of neighbours but one), so the model still reads the query's phrases. "
                "A random order of the row's n tokens (a permutation drawn from `generator`) splits most "
                "neighbours; draws that keep nearly all of them are rare.")


# ---------------------------------------------------------------------------------------------
# SinusoidEncoder
# ---------------------------------------------------------------------------------------------


def _trainable(module):
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _scores(model, ids, what):
    out = call(model, ids)
    expect(isinstance(out, torch.Tensor), f"{what} should return a tensor of scores, got {type(out).__name__}")
    return out.detach()


def _tiny_parameters(student, blind):
    """{name in TinyTransformer: the student's parameter of that role}, matched by name (a subclass
    has the same names, a wrapper the same ones under a prefix), else in order when every shape
    agrees; None when they cannot be matched."""
    theirs = dict(student.named_parameters())
    ours = dict(blind.named_parameters())
    mapping = {}
    for name in ours:
        found = [n for n in theirs if n == name or n.endswith("." + name)]
        if len(found) == 1 and theirs[found[0]].shape == ours[name].shape:
            mapping[name] = theirs[found[0]]
    if len(mapping) < len(ours):
        listed = [p for p in student.parameters() if p.requires_grad]
        if len(listed) != len(ours) or any(a.shape != b.shape for a, b in zip(listed, ours.values())):
            return None
        mapping = dict(zip(ours, listed))
    return mapping


def load_fixed_parameters(named, seed):
    """Fill the parameters {name: parameter}, in TinyTransformer's order, with values from a private
    generator (within 1/sqrt(fan-in) for matrices, near 1 for norm scales, near 0 for other
    vectors): the scores then depend on the check's settings alone."""
    g = torch.Generator().manual_seed(20_000 + seed)
    with torch.no_grad():
        for name, p in named.items():
            values = torch.rand(p.shape, generator=g) * 2 - 1
            if p.dim() > 1:
                p.copy_(values / p.shape[1] ** 0.5)
            else:
                p.copy_(values * 0.1 + (1.0 if "norm" in name and name.endswith("weight") else 0.0))


def final_ids(vocab_size, seed):
    """The batch the whole model's scores are compared on: 3 tickets of 70 ids, two padded."""
    ids = torch.randint(2, vocab_size, (3, 70), generator=torch.Generator().manual_seed(seed + 7))
    ids[0, 30:] = PAD
    ids[2, 55:] = PAD
    return ids


def _first_block_input(model, ids):
    """What the first nn.TransformerEncoderLayer of the model receives, or None if it has none."""
    layers = [m for m in model.modules() if isinstance(m, nn.TransformerEncoderLayer)]
    if not layers:
        return None
    seen = []

    def hook(module, args, kwargs):
        if not seen:
            seen.append((args[0] if args else kwargs.get("src")).detach().clone())

    handle = layers[0].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        _scores(model, ids, "SinusoidEncoder")
    finally:
        handle.remove()
    return seen[0] if seen else None


def _token_table(model, vocab_size, d):
    tables = [m for m in model.modules() if isinstance(m, nn.Embedding)
              and m.num_embeddings == vocab_size and m.embedding_dim == d]
    return tables[0].weight.detach() if len(tables) == 1 else None


def _diagnose_added(added, s, d, atol):
    """Name what was added to the embeddings when it is not the sinusoid."""
    if added.abs().max() < 1e-6:
        raise AssertionError(
            "the first block receives the token embeddings with nothing added: add "
            "sinusoid(s, d) (s = ids.shape[1]) to the embeddings before the blocks. Added after "
            "the blocks, or not at all, the mean over the tokens cannot see the order.")
    tables = references.expected("banking", "added_tables", s, d)
    candidates = [
        (tables["swapped"], "sin and cos are swapped: the even columns 0, 2, 4, ... "
         "hold sin(p / 10000^(2i/d)), the odd columns 1, 3, 5, ... the cos of the same angle"),
        (tables["halves"], "the table puts all the sines first and all the cosines after "
         "(torch.cat); they are interleaved: column 2i is sin, column 2i+1 is cos of one angle"),
        (tables["base 100"], "the base is 100; it is 10000"),
    ]
    for table, what in candidates:
        if torch.allclose(added, table.expand_as(added), atol=atol):
            raise AssertionError(f"the vector added at each position is not the sinusoid: {what}.")
    if torch.allclose(added, added[:, :1].expand_as(added), atol=atol):
        raise AssertionError("every position gets the same added vector: row p of the table must "
                             "be the sinusoid of position p, p = 0 .. s-1.")


@task
def check_sinusoid_encoder(SinusoidEncoder, vocab_size=37, classes=7, long=200, seed=0, atol=1e-4):
    """SinusoidEncoder(vocab_size, classes): reads `long` tokens, (b, classes) scores, as many
    trainable parameters as TinyTransformer(positions=False), exactly the sinusoid added to the
    embeddings before the blocks, order seen, extra pads ignored, scores equal to a reference."""
    from ticketnet import TinyTransformer

    torch.manual_seed(seed)
    model = call(SinusoidEncoder, vocab_size, classes)
    expect(isinstance(model, nn.Module),
           f"SinusoidEncoder({vocab_size}, {classes}) should be an nn.Module, got {type(model).__name__}")
    model.eval()  # no dropout: every comparison below is exact up to float rounding
    blind = TinyTransformer(vocab_size, classes=classes, positions=False)
    generator = torch.Generator().manual_seed(seed)  # one stream of draws, taken step by step in this order
    _reads_long_tickets(model, vocab_size, classes, long, generator)
    _trains_as_many_parameters(model, blind)
    _drops_out_as_tiny_transformer(model, blind)
    _adds_the_sinusoid(model, vocab_size, blind.embed.embedding_dim, generator, atol)
    _sees_word_order(model, vocab_size, generator)
    _ignores_extra_pads(model, vocab_size, generator)
    _computes_as_tiny_transformer(model, blind, vocab_size, classes, seed)
    _reads_any_length(model, vocab_size, classes, blind.embed.embedding_dim, generator, seed)
    expect_learns(model, final_ids(vocab_size, seed), what="SinusoidEncoder", frozen_allowed=True)
    _trains_with_the_sinusoid(model, vocab_size, classes, generator, seed)
    model.train()
    passed()


def _read(model, ids):
    """The model's output for `ids`; a crash becomes the verdict of a table with too few rows."""
    try:
        return model(ids)
    except NotImplementedError:
        raise AssertionError("SinusoidEncoder is not written yet: replace `raise NotImplementedError()` "
                             "with your code, run its cell, then this check.") from None
    except Exception as error:  # noqa: BLE001 - any crash is the student's verdict
        raise AssertionError(
            f"SinusoidEncoder could not read a batch of shape {tuple(ids.shape)} ({ids.shape[1]} tokens): "
            f"it raised {type(error).__name__}: {error}. A learned table has a fixed number of rows; the "
            "sinusoid is computed for the length of the batch, sinusoid(ids.shape[1], d), so it has no "
            "limit.") from error


def _reads_long_tickets(model, vocab_size, classes, long, generator):
    """Scores of shape (b, classes) for tickets of `long` tokens, more than a learned table holds."""
    ids = torch.randint(2, vocab_size, (3, long), generator=generator)
    ids[1, long - 50:] = PAD
    out = _read(model, ids)
    expect_shape(out, (3, classes), f"SinusoidEncoder's scores for ids of shape {tuple(ids.shape)}")


def _trains_as_many_parameters(model, blind):
    """As many trainable parameters as TinyTransformer without positions: the sinusoid trains nothing."""
    theirs, expected = _trainable(model), _trainable(blind)
    if theirs != expected:
        extra = theirs - expected
        raise AssertionError(
            f"SinusoidEncoder has {theirs:,} trainable parameters, TinyTransformer(positions=False) "
            f"{expected:,}: {extra:+,}. Nothing in the sinusoid trains: compute it in forward or keep "
            "it with register_buffer, not as an nn.Parameter or an nn.Embedding (a learned table).")


def _drops_out_as_tiny_transformer(model, blind):
    """TinyTransformer's dropout: each nn.Dropout of the model drops with TinyTransformer's rate (its
    default), and attention's own dropout is TinyTransformer's. The comparisons in eval mode cannot
    see it; _trains_with_the_sinusoid then proves no other dropout is drawn."""
    def rates(module):
        return sorted({float(m.p) for m in module.modules() if isinstance(m, nn.Dropout)})

    def attention(module):
        return sorted({float(getattr(m, "dropout", 0.0)) for m in module.modules() if isinstance(m, nn.MultiheadAttention)})

    for what, found in (("dropout layers drop", rates), ("attention drops its weights", attention)):
        theirs, ours = found(model), found(blind)
        expect(set(theirs) <= set(ours),
               f"SinusoidEncoder's {what} with p = {', '.join(map(str, theirs))}, where "
               f"TinyTransformer(positions=False)'s drop with p = {', '.join(map(str, ours))}: its dropout is "
               "set otherwise than TinyTransformer's default. The task changes the positions only: keep "
               "TinyTransformer's other settings, its dropout included.")


def _adds_the_sinusoid(model, vocab_size, d, generator, atol):
    """The input of the first block is the token embeddings plus the sinusoid, at every real position."""
    s = 60
    ids = torch.randint(2, vocab_size, (2, s), generator=generator)
    ids[1, 41:] = PAD
    table = _token_table(model, vocab_size, d)
    entering = _first_block_input(model, ids)
    if table is not None and entering is not None and tuple(entering.shape) == (2, s, d):
        added = entering - table[ids]
        real = (ids != PAD).unsqueeze(-1).expand_as(added)
        right = references.expected("banking", "added_tables", s, d)["right"].expand_as(added)
        if not torch.allclose(added[real], right[real], atol=atol):
            _diagnose_added(added[:1], s, d, atol)
            gap = (added[real] - right[real]).abs().max().item()
            raise AssertionError(
                f"the vectors added to the token embeddings before the first block differ from "
                f"sin/cos(p / 10000^(2i/d)) by up to {gap:.3g}: even columns sin, odd columns cos of "
                "the same angle, added unscaled to the embeddings.")


def _sees_word_order(model, vocab_size, generator):
    """A query and its tokens shuffled get different scores (not so without positions)."""
    n = min(10, vocab_size - 2)
    query = torch.randperm(vocab_size - 2, generator=generator)[:n].unsqueeze(0) + 2
    mixed = query[:, torch.randperm(n, generator=generator)]
    gap = (_scores(model, query, "SinusoidEncoder") - _scores(model, mixed, "SinusoidEncoder")).abs().max()
    expect(gap > 1e-4,
           f"a query and the same tokens shuffled get the same scores (largest difference {gap:.2e}): "
           "the model does not see word order. Add the sinusoid to the token embeddings before the "
           "blocks; added after them, the mean over the tokens turns it into a constant.")


def _ignores_extra_pads(model, vocab_size, generator):
    """More pad columns change no score."""
    ids = torch.randint(2, vocab_size, (4, 20), generator=generator)
    for row, n in enumerate((20, 13, 5, 1)):
        ids[row, n:] = PAD
    wider = torch.cat([ids, torch.full((4, 9), PAD, dtype=torch.long)], dim=1)
    expect_close(_scores(model, wider, "SinusoidEncoder"), _scores(model, ids, "SinusoidEncoder"),
                 "the output with 9 more pad columns",
                 hint="Extra padding must change nothing: pass src_key_padding_mask=(ids == PAD) to the "
                      "blocks and average the real tokens only, as TinyTransformer does.")


def _computes_as_tiny_transformer(model, blind, vocab_size, classes, seed):
    """The whole model, holding the check's fixed weights, gives the scores it should, on the
    check's tickets and on tickets drawn as the check runs."""
    mapping = _tiny_parameters(model, blind)
    expect(mapping is not None,
           "could not match SinusoidEncoder's parameters with TinyTransformer's (embed, blocks, "
           "norm, out): build it on ticketnet.TinyTransformer(vocab_size, classes=classes, "
           "positions=False), as a subclass or by wrapping one.")
    load_fixed_parameters(mapping, seed)
    expected_scores = references.expected("banking", "encoder_scores", vocab_size, classes, seed)
    expect_close(_scores(model, final_ids(vocab_size, seed), "SinusoidEncoder"), expected_scores,
                 "SinusoidEncoder's output",
                 hint="With the check's weights put in it, it should compute as TinyTransformer does "
                      "with the sinusoid added to the embeddings: embed, + sinusoid, blocks with the "
                      "padding mask, final norm, mean of the real tokens, out.")
    generator = fresh_generator()
    b, s = int(torch.randint(2, 6, (), generator=generator)), int(torch.randint(2, FRESH_LONGEST + 1, (), generator=generator))
    ids = torch.randint(2, vocab_size, (b, s), generator=generator)
    ids[torch.arange(s)[None, :] >= torch.randint(1, s + 1, (b, 1), generator=generator)] = PAD
    with torch.random.fork_rng():  # building layers draws: the student's next draw must not move
        twin = sinusoid_twin(vocab_size, classes, s, seed)
    with torch.enable_grad():  # the layer's plain path
        want = twin(ids).detach()
    expect_close(_scores(model, ids, "SinusoidEncoder"), want, f"SinusoidEncoder's output on new tickets, of "
                 f"shape {tuple(ids.shape)},", hint="It is right on the check's own tickets: does it depend on "
                 "more than the ids and its weights?")


FRESH_LONGEST = 90  # the longest new tickets the check draws; the sinusoid is recorded this long
ANY_LENGTH = (400, 600)  # the lengths the long batch is drawn from: past every hidden test's `long`


def sinusoid_twin(vocab_size, classes, s, seed, table=None):
    """What SinusoidEncoder should compute on tickets of up to `s` tokens, holding the check's fixed
    weights, built as the check runs: ticketnet.TinyTransformer whose position table holds the
    sinusoid's first `s` rows (a sinusoid is a position table that is computed, not learned): the
    recorded one, up to FRESH_LONGEST rows, unless `table` is given."""
    from ticketnet import TinyTransformer
    twin = TinyTransformer(vocab_size, classes=classes, max_tokens=s).eval()
    load_fixed_parameters({name: p for name, p in twin.named_parameters() if not name.startswith("position.")}, seed)
    if table is None:
        table = references.expected("banking", "added_tables", FRESH_LONGEST, twin.embed.embedding_dim)["right"]
    with torch.no_grad():
        twin.position.weight.copy_(table[:s])
    return twin


def _reads_any_length(model, vocab_size, classes, d, generator, seed):
    """A batch of ANY_LENGTH tokens (one ticket of them all) scores as the sinusoid of
    grader.references says: no table of fixed length, no position capped. Its length comes from
    the check's own seeded stream, so the message is the same wherever the check runs, and the
    student edition holds that table's values. Its angles reach 600, where float32 keeps about 1e-4
    of them, hence the loose tolerance."""
    s = int(torch.randint(ANY_LENGTH[0], ANY_LENGTH[1] + 1, (), generator=generator))
    ids = torch.randint(2, vocab_size, (2, s), generator=generator)
    ids[1, int(torch.randint(s // 2, s, (), generator=generator)):] = PAD
    out = _read(model, ids)
    expect_shape(out, (2, classes), f"SinusoidEncoder's scores for ids of shape {tuple(ids.shape)}")
    table = references.expected("banking", "sinusoid", s, d)["right"]
    with torch.random.fork_rng():  # building layers draws: the student's next draw must not move
        twin = sinusoid_twin(vocab_size, classes, s, seed, table=table.float())
    with torch.enable_grad():  # the layer's plain path
        want = twin(ids).detach()
    if close(out.detach(), want, "loose"):
        return
    embedded, entering = _token_table(model, vocab_size, d), _first_block_input(model, ids)
    if embedded is not None and entering is not None and tuple(entering.shape) == (2, s, d):
        wrong = ((entering[0] - embedded[ids[0]]).double() - table).abs().amax(dim=1) > 1e-3  # (s,)
        if wrong.any() and int(wrong.nonzero()[0]) > 0:
            first = int(wrong.nonzero()[0])
            raise AssertionError(
                f"on a batch of {s} tokens, the vectors added to the embeddings are the sinusoid up to "
                f"position {first - 1}, then not the sinusoid of their position from position {first} on: "
                "the sinusoid stops at a fixed length (a table of so many rows, or positions capped). "
                "It is computed for the length of the batch, however long.")
    gap = (out.detach().float() - want).abs().max().item()
    raise AssertionError(
        f"SinusoidEncoder's output on a batch of {s} tokens differs from the expected values by up to "
        f"{gap:.3g}, while on shorter batches it is right: is the sinusoid cut at a fixed length (a table "
        "of so many rows, or positions capped)? It is computed for the length of the batch, however long.")


def _encoder_width():
    """TinyTransformer's width, the d of every sinusoid SinusoidEncoder asks for."""
    import inspect

    from ticketnet import TinyTransformer
    return inspect.signature(TinyTransformer).parameters["dim"].default


def _trains_with_the_sinusoid(model, vocab_size, classes, generator, seed):
    """In training mode, from one random state (so that dropout drops the same numbers), the model
    scores as TinyTransformer with the sinusoid: the sinusoid is added while it trains too, and it
    drops out where TinyTransformer does, nowhere else. (Tickets from the check's stream: the eval
    mode's fresh ones already prove that no recorded result answers.)"""
    from ticketnet import TinyTransformer
    b, s = int(torch.randint(2, 6, (), generator=generator)), int(torch.randint(8, FRESH_LONGEST + 1, (), generator=generator))
    ids = torch.randint(2, vocab_size, (b, s), generator=generator)
    ids[torch.arange(s)[None, :] >= torch.randint(1, s + 1, (b, 1), generator=generator)] = PAD
    ids[0] = ids[0].masked_fill(ids[0] == PAD, 2)  # one ticket of the whole length
    state = int(torch.randint(2**62, (), generator=generator))
    with torch.random.fork_rng():  # the seeds below and the layers built draw: the student's next draw must not move
        twin = sinusoid_twin(vocab_size, classes, s, seed).train()
        blind = TinyTransformer(vocab_size, classes=classes, positions=False).train()
        load_fixed_parameters(dict(blind.named_parameters()), seed)
        model.train()
        outputs = []
        for net in (model, twin, blind):
            torch.manual_seed(state)
            with torch.enable_grad():  # the path training takes
                outputs.append(_scores(net, ids, "SinusoidEncoder") if net is model else net(ids).detach())
    got, want, without = outputs
    expect_shape(got, want.shape, f"SinusoidEncoder's scores in training mode for ids of shape {tuple(ids.shape)}")
    if close(got, want):
        return
    if close(got, without):
        raise AssertionError(
            "in training mode SinusoidEncoder scores as TinyTransformer(positions=False), dropout and all: "
            "the sinusoid is not added while it trains (only in eval mode?). Training is where the model "
            "learns to use the positions: they are added in every mode.")
    gap = (got.float() - want).abs().max().item()
    raise AssertionError(
        f"in training mode, its dropout drawing from the same random state as TinyTransformer's, "
        f"SinusoidEncoder's scores differ from the expected ones by up to {gap:.3g}, while in eval mode "
        "they are right: does forward do something else while training (self.training), or drop out "
        "where TinyTransformer does not? The task adds the sinusoid and changes nothing else.")


# ---------------------------------------------------------------------------------------------
# sinusoid, the function of SinusoidEncoder's cell
# ---------------------------------------------------------------------------------------------


@task
def check_sinusoid_table(sinusoid, sizes=((45, 32), (7, 16), (520, 8)), atol=1e-3):
    """sinusoid(length, d) at each (length, d) of `sizes`: a (length, d) float tensor equal to the
    table of grader.references (within atol: float32 keeps about 1e-4 of an angle of 500). SinusoidEncoder
    only ever asks for d = 64: other widths show a table whose angles do not follow d."""
    for length, d in sizes:
        width = _encoder_width()
        tables = references.expected("banking", "sinusoid", length, d, None if d == width else width)
        table, right = returned_table(sinusoid, length, d).double(), tables["right"].double()
        gap = (table - right).abs()
        if gap.max() <= atol:
            continue
        if d != width and (table - tables["another width"].double()).abs().max() <= atol:
            raise AssertionError(
                f"sinusoid({length}, {d}) is the table of a width of {width}, not of {d}: its angles divide "
                f"the column index by {width} where the task divides it by d, the width it is given. "
                f"SinusoidEncoder's width is {width}, which hides it there; sinusoid(length, d) must follow "
                "its own d at any width.")
        row = int((~(gap.amax(dim=1) <= atol)).nonzero()[0])  # a NaN counts as wrong
        if row > 0 and (table[row:] - table[row - 1]).abs().max() <= atol:
            raise AssertionError(
                f"sinusoid({length}, {d}) repeats from position {row} on the row of position {row - 1}: the "
                "positions stop growing there (capped, or a table of fixed length). Every position p of "
                "the batch, however far, has its own row.")
        column = int(gap[row].argmax())
        raise AssertionError(
            f"sinusoid({length}, {d}) differs from sin/cos(p / 10000^(2i/d)) by up to {gap.max():.3g}, "
            f"first at position {row}, column {column}: even columns 2i hold the sin, odd columns 2i+1 "
            "the cos of the same angle, for every position p and at any width d.")
    passed()
