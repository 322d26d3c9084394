"""Checks of section 2, positions: LearnedPositions, sinusoid and mean_pool.

Each public function takes the student's class or function, runs it on small seeded inputs, and
prints "Check passed" or raises AssertionError naming the likely mistake. The checks compare with
the contract of COURSE.md (row 2), never with numbers printed on another machine:

- LearnedPositions adds row p of one trainable (max_len, d_model) table to the token at position p,
  the same for every row of the batch, gives every row it reads a gradient (none kept out of
  training, as nn.Embedding's padding_idx keeps its row), accepts exactly max_len tokens, refuses
  more with an error that names the limit and the length (asked with a batch of several tickets,
  so that the length is not the count of all their tokens), and makes a reordered query pool to
  another vector;
- sinusoid is the interleaved sin/cos table of the original transformer (base 10000, angle
  pos / 10000^(2i/d) shared by columns 2i and 2i+1), every row of norm sqrt(d/2);
- mean_pool averages the real tokens only, wherever the pads are and whatever they hold.

The sinusoid and mean_pool checks end on sizes and tokens drawn as they run (fresh_generator):
the table told by its properties (row 0, row 1's angles, each row the one before turned by row 1),
and first compared at a length past 2048 with grader.references' table; the pool by each row's real tokens,
with pads after, before and between them, so that in the student edition no recorded result
(grader/references) can answer for the student's code.
"""

import math
import re

import torch
from torch import nn

from grader import references
from grader.checks import (TOLERANCE, call, close, expect, expect_close, expect_learns, expect_shape, fresh_generator,
                           gradients_of, passed, task)

# ---------------------------------------------------------------------------------------------
# LearnedPositions
# ---------------------------------------------------------------------------------------------


def _names_number(message, number):
    return re.search(rf"(?<!\d){number}(?!\d)", message) is not None


def _forward(module, h, max_len):
    """Run the module on a length the table holds; any error becomes a message with a hint."""
    s = h.shape[1]
    try:
        return module(h)
    except NotImplementedError:
        raise AssertionError("LearnedPositions.forward is not written yet: replace "
                             "`raise NotImplementedError()` with your code, run its cell, then "
                             "this check.") from None
    except Exception as error:  # noqa: BLE001 - any crash is the student's verdict
        if s == max_len and isinstance(error, (ValueError, IndexError)):
            raise AssertionError(
                f"LearnedPositions({max_len}, {h.shape[2]}) raised {type(error).__name__} ({error}) "
                f"on a sequence of exactly {max_len} tokens, which the table of {max_len} rows holds "
                "(positions 0 to max_len - 1). Is the test `s >= max_len` where it should be "
                "`s > max_len`?") from error
        raise AssertionError(
            f"LearnedPositions({max_len}, {h.shape[2]}) raised {type(error).__name__} ({error}) on "
            f"h of shape {tuple(h.shape)}, a sequence of {s} tokens that the table of {max_len} rows "
            "holds. forward receives the token vectors h (batch, s, d_model) as floats: look up the "
            "table's rows for positions 0 to s - 1, s being h's sequence length, not the values of h "
            "(they are not token ids) nor another dimension's size, and add them to h.") from error


def _find_table(module, max_len, d_model):
    tables = [p for p in module.parameters() if tuple(p.shape) == (max_len, d_model)]
    shapes = [tuple(p.shape) for p in module.parameters()]
    expect(len(tables) == 1,
           f"LearnedPositions({max_len}, {d_model}) should hold one trainable table of shape "
           f"({max_len}, {d_model}), one row per position; its parameters have shapes {shapes}.")
    return tables[0]


def _order_is_visible(module, d_model, seed):
    """A query and its reversal through one head of attention and a mean: the same pooled vector
    without positions, another one with the module's positions added."""
    from ticketnet import attention
    generator = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randn(1, 6, d_model, generator=generator)
    reordered = tokens[:, [5, 2, 0, 4, 1, 3]]
    project = [torch.randn(d_model, d_model, generator=generator) / math.sqrt(d_model) for _ in range(3)]

    def pooled(h):
        q, k, v = (h @ w for w in project)
        return attention(q, k, v)[0].mean(1)

    with torch.no_grad():
        blind = (pooled(tokens) - pooled(reordered)).abs().max().item()
        placed = (pooled(module(tokens)) - pooled(module(reordered))).abs().max().item()
    expect(blind < 1e-4, "internal: attention without positions should be order-blind")
    expect(placed > 1e-3,
           "a query and the same tokens reordered still give the same pooled vector (largest "
           f"difference {placed:.2e}) through attention and a mean with your positions added: "
           "the position vectors must depend on the position and be added to the tokens.")


@task
def check_learned_positions(LearnedPositions, max_len=120, d_model=64, batch=3, lengths=(7, 1),
                            seed=0):
    """LearnedPositions(max_len, d_model): table, parameter count, h + row p at position p, the
    same for every row, exactly max_len tokens accepted, more refused naming the limit and the
    length, and order made visible to attention + mean pooling."""
    module = call(LearnedPositions, max_len, d_model)
    table = _learned_table(module, max_len, d_model)
    generator = torch.Generator().manual_seed(seed)  # one stream of draws, taken step by step in this order
    with torch.no_grad():
        table.copy_(torch.randn(max_len, d_model, generator=generator))
    rows = table.detach().clone()
    for s in (*lengths, max_len):
        _adds_row_p_at_position_p(module, rows, batch, s, d_model, max_len, generator)
    h = torch.randn(batch, max_len, d_model, generator=generator)
    expect_learns(module, h, what=f"LearnedPositions({max_len}, {d_model})")
    _every_row_learns(module, h, max_len, d_model)
    if max_len >= 6:
        _order_is_visible(module, d_model, seed)
    for s in (max_len + 1, max_len + 9):
        _refuses_past_the_table(module, s, d_model, max_len, generator)
    passed()


def _learned_table(module, max_len, d_model):
    """The module's one trainable (max_len, d_model) table, its only parameters."""
    expect(isinstance(module, nn.Module),
           f"LearnedPositions({max_len}, {d_model}) should be an nn.Module (class LearnedPositions"
           f"(nn.Module) with super().__init__()), got {type(module).__name__}")
    count = sum(p.numel() for p in module.parameters())
    expect(count > 0,
           f"LearnedPositions({max_len}, {d_model}) has no trainable parameters: a table stored as "
           "a plain tensor is not learned; wrap it in nn.Parameter(...) or use nn.Embedding.")
    expect(count == max_len * d_model,
           f"LearnedPositions({max_len}, {d_model}) has {count:,} parameters, expected "
           f"{max_len * d_model:,} = max_len x d_model: one ({max_len}, {d_model}) table and nothing "
           "else (no bias, no Linear).")
    table = _find_table(module, max_len, d_model)
    expect(table.requires_grad, "the position table should be trainable (requires_grad=True)")
    return table


def _every_row_learns(module, h, max_len, d_model):
    """Every row of the (max_len, d_model) table that a call on h reads (rows 0 to s - 1) gets a
    gradient that is not zero from the output (grader.checks.gradients, in the kernel when
    grading): a row kept out of training (padding_idx, a row detached) stays as it was drawn."""
    s = h.shape[1]
    found = gradients_of(module, h)
    for name, p in module.named_parameters():
        if tuple(p.shape) != (max_len, d_model):
            continue
        gradient = found.get(name)
        if isinstance(gradient, torch.Tensor) and gradient.is_sparse:
            gradient = gradient.to_dense()
        if not (isinstance(gradient, torch.Tensor) and tuple(gradient.shape) == (max_len, d_model)):
            gradient = torch.zeros(max_len, d_model)
        dead = [row for row in range(s) if not bool((gradient[row] != 0).any())]
        if dead:
            rows, gets, vectors = ((f"row {dead[0]}", "gets", "that position's vector") if len(dead) == 1 else
                                   (f"{len(dead)} rows (the first {dead[0]})", "get", "those positions' vectors"))
            raise AssertionError(
                f"LearnedPositions({max_len}, {d_model}): {rows} of the position table ({name}) "
                f"{gets} no gradient from a call on {s} tokens, which reads "
                f"rows 0 to {s - 1}, so training could never change {vectors}. "
                "Every position is a real position: is a row kept out of training, by "
                "nn.Embedding's padding_idx (meant for a pad token's row) or by a detached slice?")


def _adds_row_p_at_position_p(module, rows, batch, s, d_model, max_len, generator):
    """On tokens h of length s: h + row p of the table at position p, the same for every row of
    the batch, h itself untouched."""
    h = torch.randn(batch, s, d_model, generator=generator)
    original = h.clone()
    out = _forward(module, h, max_len)
    expect(torch.equal(h, original),
           "LearnedPositions changed its input h in place (h += ... or h.add_): return "
           "h + positions as a new tensor, the caller still needs h.")
    expected = original + rows[:s]
    if isinstance(out, torch.Tensor) and tuple(out.shape) == (s, d_model) and batch != s:
        raise AssertionError(
            f"the output has shape {(s, d_model)}, the position vectors alone; expected "
            f"{(batch, s, d_model)}: add them to h, return h + positions.")
    expect_shape(out, (batch, s, d_model), f"LearnedPositions on h of shape {tuple(h.shape)}")
    out = out.detach()
    if torch.allclose(out, original, **TOLERANCE["copied"]):
        raise AssertionError("the output is h unchanged: the position vectors were never added.")
    if torch.allclose(out, rows[:s].expand_as(out), **TOLERANCE["copied"]):
        raise AssertionError("the output is the position vectors alone, without the tokens: "
                             "add them to h, return h + positions.")
    added = out - original
    expect(torch.allclose(added, added[:1].expand_as(added), **TOLERANCE["float32"]),
           f"the vector added at a position differs between the rows of the batch: every row "
           f"gets the same vectors, those of positions 0..{s - 1}. Did you index the table by "
           "the row of the batch (torch.arange(h.shape[0])) instead of the position?")
    expect_close(out, expected, f"LearnedPositions on h of shape {tuple(h.shape)}",
                 hint="Position p should get row p of the table, for p from 0 to s - 1.")


def _refuses_past_the_table(module, s, d_model, max_len, generator, batch=2):
    """A batch of tickets of s tokens, more than the table holds: a ValueError (or IndexError)
    naming the limit and s (not batch x s, the tokens of the whole batch)."""
    h = torch.randn(batch, s, d_model, generator=generator)
    try:
        module(h)
    except NotImplementedError:
        raise AssertionError("LearnedPositions.forward is not written yet.") from None
    except (ValueError, IndexError) as error:
        message = str(error)
        missing = [what for what, number in ((f"the limit ({max_len} positions)", max_len),
                                             (f"the length asked for ({s})", s))
                   if not _names_number(message, number)]
        whole = (f" It names {batch * s}, the tokens of the whole batch of {batch} tickets: the length "
                 "is that of one sequence, h's dimension 1." if _names_number(message, batch * s) else "")
        expect(not missing,
               f"a batch of {batch} sequences of {s} tokens raised {type(error).__name__}: {message!r}, "
               f"which does not name {' nor '.join(missing)}.{whole} Check the length before the lookup "
               "and raise a ValueError whose message names both numbers.")
        return
    except Exception as error:  # noqa: BLE001
        raise AssertionError(
            f"a sequence of {s} tokens, longer than the table of {max_len}, raised "
            f"{type(error).__name__} ({error}); check the length yourself and raise a ValueError "
            "whose message names the limit and the length.") from error
    raise AssertionError(f"a sequence of {s} tokens, longer than the table of {max_len} rows, "
                         "raised no error: it has no position vectors past the table; raise a "
                         "ValueError that names the limit and the length.")


# ---------------------------------------------------------------------------------------------
# sinusoid
# ---------------------------------------------------------------------------------------------


def _close(a, b, atol):
    """Whether the tensor `a` lies within `atol` of `b` (float64) everywhere: a sinusoid's numbers
    are all of size 1 or less, so the check's `atol` alone says how near."""
    return close(a, b, {"atol": atol, "rtol": 0.0})


@task
def check_sinusoid(sinusoid, length=50, d=64, atol=1e-3):
    """sinusoid(length, d): shape, position 0 = [0, 1, 0, 1, ...], row norms sqrt(d/2) and the
    formula (angles in float32 lose about 1e-7 per unit of angle, hence atol)."""
    table = returned_table(sinusoid, length, d)
    tables = references.expected("positions", "sinusoid_tables", length, d)
    right = tables["right"]

    row0 = table[0].double()
    if _close(row0, torch.tensor([1.0, 0.0] * (d // 2), dtype=torch.float64), 1e-6):
        raise AssertionError("position 0 reads [1, 0, 1, 0, ...]: sin and cos are swapped. Even "
                             "columns 2i hold the sin, odd columns 2i+1 the cos (row 0 is [0, 1, 0, 1, ...]).")
    if d > 2 and _close(row0, torch.tensor([0.0] * (d // 2) + [1.0] * (d // 2), dtype=torch.float64), 1e-6):
        raise AssertionError("position 0 reads [0, 0, ..., 1, 1, ...]: the sines fill the first half "
                             "and the cosines the second. The contract interleaves them: "
                             "table[:, 0::2] = sin, table[:, 1::2] = cos, the pair 2i, 2i+1 sharing one angle.")
    if d > 2 and _close(row0[1::2], torch.zeros(d // 2, dtype=torch.float64), 1e-6):
        raise AssertionError("position 0 has zeros in the odd columns, where cos 0 = 1 belongs: "
                             "fill table[:, 1::2] with the cosines of the same angles as the sines.")
    expect(_close(row0, right[0], 1e-6),
           f"position 0 should read [0, 1, 0, 1, ...] (sin 0 = 0, cos 0 = 1); it starts "
           f"{[round(x, 3) for x in row0[:4].tolist()]}. Do the positions start at 0?")

    norms = table.double().norm(dim=1)
    expect(torch.allclose(norms, torch.full_like(norms, math.sqrt(d / 2)), **TOLERANCE["float32"]),
           f"every row should have norm sqrt(d/2) = {math.sqrt(d / 2):.4f} (each pair sin, cos of "
           f"the same angle has length 1); rows range from {norms.min():.4f} to {norms.max():.4f}. "
           "Columns 2i and 2i+1 must share the same angle, and every column must be filled.")

    if not _close(table, right, atol):
        variants = [
            ("exponent i/d", "the exponent is i/d where the contract has 2i/d (2i the even column "
             "index: torch.arange(0, d, 2) / d)"),
            ("base 1000", "the base is 1000; the original transformer uses 10000"),
        ]
        for name, what in variants:
            if _close(table, tables[name], atol):
                raise AssertionError(f"sinusoid({length}, {d}) matches a table where {what}.")
        gap = (table.double() - right).abs()
        where = divmod(int(gap.argmax()), d)
        raise AssertionError(
            f"sinusoid({length}, {d}) differs from sin/cos(pos / 10000^(2i/d)) by up to "
            f"{gap.max():.3g}, first at position {where[0]}, column {where[1]}.")
    _long_table(sinusoid, 2048 + length, min(d, 8), atol)
    generator = fresh_generator()
    length, d = int(torch.randint(2, 41, (), generator=generator)), 2 * int(torch.randint(1, 17, (), generator=generator))
    table = call(sinusoid, length, d)
    expect(isinstance(table, torch.Tensor) and tuple(table.shape) == (length, d) and _follows_contract(
               table.detach().double(), d, atol),
           f"sinusoid is right at the check's sizes but not at new ones, ({length}, {d}): does it depend on "
           "more than its two arguments?")
    passed()


def returned_table(sinusoid, length, d):
    """sinusoid(length, d), refused unless it is a float tensor of shape (length, d) (a transposed
    one is named), detached."""
    table = call(sinusoid, length, d)
    expect(isinstance(table, torch.Tensor),
           f"sinusoid({length}, {d}) should return a tensor, got {type(table).__name__}")
    if tuple(table.shape) == (d, length) and d != length:
        raise AssertionError(f"sinusoid({length}, {d}) has shape {(d, length)}: one row per position "
                             f"is expected, shape {(length, d)} (transposed?).")
    expect_shape(table, (length, d), f"sinusoid({length}, {d})")
    expect(table.is_floating_point(), f"sinusoid({length}, {d}) should hold floats, got {table.dtype}")
    return table.detach()


def _long_table(sinusoid, length, d, atol):
    """A table far longer than the check's other lengths (past 2048 rows) against the formula
    (grader.references, so that the student edition holds the table's values, not code that
    computes it): a table of a fixed number of rows, or positions that wrap around, go wrong there.
    Angles of up to `length` in float32 lose about 1e-7 of their size, within `atol`."""
    table = call(sinusoid, length, d)
    expect(isinstance(table, torch.Tensor) and tuple(table.shape) == (length, d),
           f"sinusoid({length}, {d}), a long table, returned "
           f"{tuple(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__}, expected a "
           f"tensor of shape {(length, d)}: one row for every position asked for, however many. Does it hold a "
           "fixed number of rows?")
    table = table.detach().double()
    right = references.expected("positions", "sinusoid", length, d)["right"].double()
    if not _close(table, right, atol):
        first = int((~((table - right).abs() <= atol).all(1)).nonzero()[0])  # NaN counts as wrong
        wraps = first > 0 and _close(table[first:], table[:length - first], atol)
        why = (f"from there on it repeats the rows of positions 0, 1, 2, ...: the positions wrap around "
               f"(position {first} is read as position 0) instead of counting on" if wraps else
               f"its angles are not those of the formula at width {d}: does the exponent 2i/d use the "
               "width it is given?" if first <= 1 else
               "the positions past some limit are not those of the formula")
        raise AssertionError(
            f"sinusoid({length}, {d}) {f'is right up to position {first - 1} but ' if first else ''}differs "
            f"from sin/cos(pos / 10000^(2i/d)) from position {first} on, by up to "
            f"{(table - right).abs().max():.3g}: {why}. Every position gets its own angles, however long "
            "the table.")


def _follows_contract(table, d, atol):
    """Whether `table` is the contract's, told without building one: row 0 is [0, 1, 0, 1, ...],
    row 1 holds in each pair of columns 2i, 2i+1 the sin and the cos of 10000^(-2i/d), and every
    later row is the one before it turned by row 1's angles (sin(a + b) = sin a cos b + cos a sin b,
    cos(a + b) = cos a cos b - sin a sin b)."""
    sin, cos = table[:, 0::2], table[:, 1::2]
    step = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return (_close(sin[0], torch.zeros_like(step), atol) and _close(cos[0], torch.ones_like(step), atol)
            and _close(sin[1], step.sin(), atol) and _close(cos[1], step.cos(), atol)
            and _close(sin[1:], sin[:-1] * cos[1] + cos[:-1] * sin[1], atol)
            and _close(cos[1:], cos[:-1] * cos[1] - sin[:-1] * sin[1], atol))


# ---------------------------------------------------------------------------------------------
# mean_pool
# ---------------------------------------------------------------------------------------------


def _pads(lengths, s, left=()):
    """(b, s) bool, True at padding: row r has lengths[r] real tokens, at the end for rows in `left`."""
    pad = torch.ones(len(lengths), s, dtype=torch.bool)
    for r, n in enumerate(lengths):
        if r in left:
            pad[r, s - n:] = False
        else:
            pad[r, :n] = False
    return pad


def mean_pool_inputs(lengths, s, d, left, seed):
    """The check's token vectors h (b, s, d) and padding mask (b, s)."""
    h = torch.randn(len(lengths), s, d, generator=torch.Generator().manual_seed(seed))
    return h, _pads(lengths, s, left)


def _pool(mean_pool, h, pad, what):
    h_before, pad_before = h.clone(), pad.clone()
    out = call(mean_pool, h, pad)
    expect(torch.equal(h, h_before) and torch.equal(pad, pad_before),
           "mean_pool changed its input in place (masked_fill_ or h[pad] = 0?): the caller's h still "
           "holds the token vectors afterwards; use masked_fill without the underscore, or h * mask.")
    if isinstance(out, torch.Tensor) and h.shape[1] != h.shape[2] and tuple(out.shape) == tuple(h.shape[:2]):
        raise AssertionError(f"{what} has shape {tuple(out.shape)}, one number per token: it averaged "
                             f"over the features (the last dimension) instead of the tokens. The mean "
                             f"runs over dim=1, giving one vector of {h.shape[2]} per row: "
                             f"{(h.shape[0], h.shape[2])}.")
    expect_shape(out, (h.shape[0], h.shape[2]), what)
    return out.detach()


@task
def check_mean_pool(mean_pool, lengths=(6, 3, 1, 4), s=6, d=8, left=(3,), seed=0):
    """mean_pool(h, pad): (b, d), the mean of each row's real tokens; more padding, or other pad
    vectors, change nothing. Rows in `left` have their pads first."""
    lengths, left = tuple(lengths), tuple(left)
    h, pad = mean_pool_inputs(lengths, s, d, left, seed)
    generator = torch.Generator().manual_seed(seed + 1)
    real = (~pad).sum(1, keepdim=True).float()
    pools = references.expected("positions", "mean_pools", lengths, s, d, left, seed)
    out = _pool(mean_pool, h, pad, f"mean_pool(h {tuple(h.shape)}, pad {tuple(pad.shape)})")
    expected = pools["right"]
    if not torch.allclose(out, expected, **TOLERANCE["float32"]):
        if torch.allclose(out, pools["plain mean"], **TOLERANCE["float32"]):
            raise AssertionError("mean_pool returned the plain mean over every position, pads "
                                 "included: average only the real tokens (where pad is False).")
        if torch.allclose(out, pools["divided by s"], **TOLERANCE["float32"]):
            raise AssertionError("mean_pool summed the real tokens but divided by the padded length "
                                 f"s = {s}: divide each row by its own number of real tokens, which "
                                 "the mask can count.")
        if torch.allclose(out, pools["sum"], **TOLERANCE["float32"]):
            raise AssertionError("mean_pool returned the sum of the real tokens: divide each row by "
                                 "its own number of real tokens, which the mask can count.")
        rows = pad.any(1)  # a row without pads has no mean of pads to compare
        if torch.allclose(out[rows], pools["pads"][rows], equal_nan=True, **TOLERANCE["float32"]):
            raise AssertionError("mean_pool averaged the pads and left out the real tokens: pad is "
                                 "True at padding, so keep the positions where it is False (~pad).")
        if left and torch.allclose(out, pools["first n"], **TOLERANCE["float32"]):
            raise AssertionError(
                f"mean_pool averaged the first n tokens of each row, n the count of real tokens; row "
                f"{left[0]} here has its pads first. Use the mask itself (True at padding), not a count.")
        gap = (out - expected).abs().max().item()
        worst = int((out - expected).abs().amax(1).argmax())
        raise AssertionError(f"mean_pool differs from the mean of the real tokens by up to {gap:.3g} "
                             f"(row {worst}, which has {int(real[worst])} real tokens of {s}).")

    changed = torch.where(pad.unsqueeze(-1), 100 * torch.randn(h.shape, generator=generator), h)
    again = _pool(mean_pool, changed, pad, "mean_pool with other pad vectors")
    expect_close(again, out, "mean_pool with other vectors at the pads",
                 hint="The pads' vectors must not count: the output should not move.")
    extra = torch.randn(len(lengths), 5, d, generator=generator)
    longer = _pool(mean_pool, torch.cat([h, extra], 1),
                   torch.cat([pad, torch.ones(len(lengths), 5, dtype=torch.bool)], 1),
                   "mean_pool with 5 more padding columns")
    expect_close(longer, out, "mean_pool with 5 more padding columns",
                 hint="More padding (a longer ticket in the batch) must not change a row's vector.")
    # pads between the real tokens: rows the check draws from its seed (the same message in the
    # notebook and when grading), then rows drawn as it runs
    generator = torch.Generator().manual_seed(seed + 2)
    _pads_in_the_middle(mean_pool, torch.randn(3, s + 3, d, generator=generator),
                        torch.stack([_pads_between(s + 3, generator) for _ in range(3)]), "the check's")
    generator = fresh_generator()
    b, s, d = (int(n) for n in torch.randint(3, 9, (3,), generator=generator))
    lengths = torch.randint(1, s + 1, (b,), generator=generator).tolist()
    h = torch.randn(b, s, d, generator=generator)
    pad = _pads(lengths, s, left=tuple(r for r in range(b) if torch.rand((), generator=generator) < 0.5))
    pad[int(torch.randint(b, (), generator=generator))] = _pads_between(s, generator)
    _pads_in_the_middle(mean_pool, h, pad, "new")
    passed()


def _pads_in_the_middle(mean_pool, h, pad, whose):
    """mean_pool on `whose` tokens h, some of whose rows have pads between their real tokens:
    the mean of each row's real tokens, computed here (no recorded result needed)."""
    b, s, d = h.shape
    out = _pool(mean_pool, h, pad, f"mean_pool(h {(b, s, d)}, pad {(b, s)})")
    right = torch.stack([h[r][~pad[r]].mean(0) for r in range(b)])
    if close(out, right):
        return
    for r in range(b):
        words = (~pad[r]).nonzero().flatten().tolist()
        if pad[r, words[0]:words[-1] + 1].any() and close(out[r], h[r, words[0]:words[-1] + 1].mean(0), "loose"):
            raise AssertionError(
                f"mean_pool on {whose} tokens: row {r} has real tokens from position {words[0]} to "
                f"{words[-1]} and pads between them, and its vector is the mean of every position from "
                f"{words[0]} to {words[-1]}, those pads included. The pads can be anywhere in a row, "
                "between the real tokens too: average exactly the positions where the mask says a "
                "token is real.")
    expect_close(out, right, f"mean_pool on {whose} tokens, {b} rows of {s} positions, with pads between "
                 "the real tokens,",
                 hint="It is right on the check's first tokens: does it assume that a row's real tokens "
                      "come in one block, or depend on more than h and pad?")


def _pads_between(s, generator):
    """(s,) bool, True at padding: pads drawn anywhere, with at least one between two real tokens."""
    pad = torch.rand(s, generator=generator) < 0.5
    first, between, last = torch.randperm(s, generator=generator)[:3].sort().values.tolist()
    pad[first] = pad[last] = False
    pad[between] = True
    return pad
