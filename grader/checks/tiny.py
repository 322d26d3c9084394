"""Checks of section 6, the tiny transformer judged honestly: `style_accuracy(rows, predicted)` and
`choose_and_test(valid_accuracy, score_on_test)`.

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
"""

import math

import pandas as pd
import torch

from grader.checks import call, expect, passed, task

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


def _case(name, seed=0):
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


def _expected(rows, predicted):
    """style -> (accuracy, tickets, right), plus the overall numbers under "all"."""
    table = {}
    for row, team in zip(rows, predicted):
        right, n = table.get(row["style"], (0, 0))
        table[row["style"]] = (right + (team == row["team"]), n + 1)
    out = {s: (r / n, n, r) for s, (r, n) in sorted(table.items())}
    right = sum(r for _, _, r in out.values())
    out["all"] = (right / len(rows), len(rows), right)
    return out


def _show(frame):
    try:
        return "\n" + frame.to_string()
    except Exception:  # noqa: BLE001 - only for the message
        return repr(frame)[:400]


def _same(a, b):
    return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)


@task
def style_accuracy(style_accuracy, case="visible", as_tensor=False, seed=0):
    """Check `style_accuracy(rows, predicted)` on a made-up case; `as_tensor` passes the
    predictions as a LongTensor of class ids (positions in TEAMS) instead of team names."""
    rows, names = _case(case, seed)
    predicted = torch.tensor([TEAMS.index(t) for t in names]) if as_tensor else list(names)
    given = "a tensor of class ids" if as_tensor else "a list of team names"
    snapshot = [dict(r) for r in rows]
    table = call(style_accuracy, rows, predicted.clone() if as_tensor else list(predicted))
    expect(rows == snapshot, "style_accuracy changed the rows it was given; build a new table instead")
    want = _expected(rows, names)
    styles = [s for s in want if s != "all"]

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

    accuracy = table["accuracy"]
    tickets = table["tickets"]
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
    overall = want["all"][0]
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
    a, n, r = want["all"]
    got, got_n = float(accuracy.loc["all"]), int(tickets.loc["all"])
    expect(got_n == n, f"the `all` row should count every ticket, {n}; it says {got_n}.{_show(table)}")
    if not _same(got, a):
        mean = sum(want[s][0] for s in styles) / len(styles)
        hint = (" That is the mean of the style accuracies; styles have different sizes, so use "
                "right / tickets over every ticket." if _same(got, mean) else "")
        raise AssertionError(f"the `all` row: {r} of {n} tickets are right, accuracy {a:.4f}; the "
                             f"table says {got:.4f}.{hint}{_show(table)}")
    passed()


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


class _Test:
    """A stand-in for scoring a model on the test split, that remembers every call."""

    def __init__(self, models):
        self.models = models
        self.calls = []

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
    best = max(valid.values())
    chosen_ok = {name for name, v in valid.items() if v == best}
    named = " or ".join(sorted(chosen_ok))

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
            hint = (" That name comes last in the alphabet: max(valid_accuracy) compares the names; "
                    "compare the accuracies with max(valid_accuracy, key=valid_accuracy.get).")
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
    passed()
