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
]
