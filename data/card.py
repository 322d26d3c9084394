"""Measure the Larkfield tickets and print the tables of the data card (data/README.md).

    python data/card.py           # print the tables
    python data/card.py --write   # put them between the card markers in data/README.md
    python data/card.py --check   # exit 1 if the tables in data/README.md are out of date

Counts, lengths, vocabulary, the label noise (found by rebuilding the tickets with the
generator, which knows each ticket's true team) and two baselines: TF-IDF + logistic regression
and a bag-of-words network, trained on train and scored on valid and test, overall and per style.
"""

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # ticketnet
sys.path.insert(0, str(HERE))  # generate

import generate  # noqa: E402
import ticketnet  # noqa: E402

SPLITS = ("train", "valid", "test")
README = HERE / "README.md"
START, END = "<!-- card:start -->", "<!-- card:end -->"
COMMAND = "python data/card.py --write"


def table(header, rows):
    """A markdown table; numbers are already formatted."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def pct(part, whole):
    return f"{100 * part / whole:.1f}%"


def length_stats(lengths):
    ordered = sorted(lengths)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    over = sum(n > ticketnet.MAX_TOKENS for n in ordered)
    return [f"{statistics.mean(ordered):.1f}", f"{statistics.median(ordered):g}", p90, ordered[-1],
            pct(over, len(ordered))]


def label_noise(data):
    """Per split: (tickets whose team differs from the generator's true team, rows)."""
    built = generate.build()
    noise = {}
    for split in SPLITS:
        truth = {row["ticket_id"]: row["true_team"] for row in built[split]}
        noise[split] = (sum(row["team"] != truth[row["ticket_id"]] for row in data[split]), len(data[split]))
    return noise


def baselines(data):
    """{model: {split: {style or "all": accuracy}}} for the TF-IDF router and the bag of words."""
    import torch
    torch.set_num_threads(1)  # one thread: the same sums in the same order on any machine
    train, predictions = data["train"], {}
    tfidf = ticketnet.TfidfRouter().fit(train)
    predictions["TF-IDF + logistic regression"] = {s: tfidf.predict(data[s]) for s in ("valid", "test")}
    vocab = ticketnet.Vocab([row["text"] for row in train])
    ids = {s: ticketnet.token_ids(data[s], vocab) for s in SPLITS}
    y = {s: ticketnet.labels(data[s]) for s in SPLITS}
    ticketnet.set_seed(0)
    bag = ticketnet.BagOfWordsNet(len(vocab))
    ticketnet.train(bag, ids["train"], y["train"], ids["valid"], y["valid"], epochs=10, log=None)
    predictions["bag-of-words network"] = {
        s: [ticketnet.TEAMS[i] for i in ticketnet.predict(bag, ids[s]).argmax(1).tolist()] for s in ("valid", "test")}
    scores = {}
    for model, by_split in predictions.items():
        scores[model] = {}
        for split, predicted in by_split.items():
            right, seen = Counter(), Counter()
            for row, team in zip(data[split], predicted):
                for key in ("all", row["style"]):
                    seen[key] += 1
                    right[key] += team == row["team"]
            scores[model][split] = {key: right[key] / seen[key] for key in seen}
    return scores


def single_word_cues(train, top=8, min_tickets=100):
    """The words that point most surely to one team: how far one keyword gets a router."""
    tickets = Counter()
    by_team = {}
    for row in train:
        for token in set(ticketnet.tokenize(row["text"])):
            if token.isalpha():
                tickets[token] += 1
                by_team.setdefault(token, Counter())[row["team"]] += 1
    size = Counter(row["team"] for row in train)
    rows = []
    for token, n in tickets.items():
        if n >= min_tickets:
            team, hits = by_team[token].most_common(1)[0]
            rows.append((hits / n, token, team, n, hits / size[team]))
    rows.sort(key=lambda r: (-r[0], r[1]))
    return [[f"`{token}`", team, n, f"{100 * precision:.1f}%", f"{100 * recall:.1f}%"]
            for precision, token, team, n, recall in rows[:top]]


def card():
    """The markdown of the card's measured part."""
    data = {split: ticketnet.load_split(HERE / f"{split}.csv") for split in SPLITS}
    out = [f"_Made by `{COMMAND}` from the committed CSVs; do not edit by hand._", ""]

    out += ["**Tickets per team**", ""]
    out.append(table(["team"] + list(SPLITS),
                     [[team] + [sum(r["team"] == team for r in data[s]) for s in SPLITS] for team in ticketnet.TEAMS]
                     + [["total"] + [len(data[s]) for s in SPLITS]]))
    out += ["", "**Tickets per style** (count and share of the split)", ""]
    rows = []
    for style in generate.STYLES:
        cells = [style]
        for s in SPLITS:
            n = sum(r["style"] == style for r in data[s])
            cells.append(f"{n} ({pct(n, len(data[s]))})")
        rows.append(cells)
    out.append(table(["style"] + list(SPLITS), rows))

    lengths = {s: [len(ticketnet.tokenize(r["text"])) for r in data[s]] for s in SPLITS}
    out += ["", f"**Length in tokens** (`ticketnet.tokenize`, punctuation included; "
                f"over {ticketnet.MAX_TOKENS} = cut by `token_ids`)", ""]
    header = ["", "mean", "median", "p90", "max", f"over {ticketnet.MAX_TOKENS}"]
    rows = [[s] + length_stats(lengths[s]) for s in SPLITS]
    rows.append(["all"] + length_stats([n for s in SPLITS for n in lengths[s]]))
    for style in generate.STYLES:
        rows.append([f"style {style}"] + length_stats(
            [n for s in SPLITS for n, r in zip(lengths[s], data[s]) if r["style"] == style]))
    out.append(table(header, rows))

    vocab = ticketnet.Vocab([r["text"] for r in data["train"]])
    out += ["", f"**Vocabulary**: {len(vocab):,} entries in `ticketnet.Vocab(train texts)` "
                "(words seen at least twice in train, plus `<pad>` and `<unk>`).", ""]

    noise = label_noise(data)
    total = sum(n for n, _ in noise.values()), sum(m for _, m in noise.values())
    out += [f"**Label noise** (team differs from the generator's true team): "
            + ", ".join(f"{s} {n}/{m} ({pct(n, m)})" for s, (n, m) in noise.items())
            + f"; all {total[0]}/{total[1]} ({pct(*total)}).", ""]

    out += ["**Strongest single-word cues** in train (alphabetic words in at least 100 tickets): "
            "the share of tickets with the word that belong to its most common team, and the share "
            "of that team's tickets that contain it.", ""]
    out.append(table(["word", "team", "tickets", "precision", "recall"], single_word_cues(data["train"])))

    scores = baselines(data)
    out += ["", "**Baselines**: accuracy against the labels as written (noise included); trained on train, "
                "the bag of words for 10 epochs after `set_seed(0)`.", ""]
    header = ["model", "split", "all"] + list(generate.STYLES)
    rows = [[model, split] + [f"{100 * by_style[k]:.1f}" for k in ["all"] + list(generate.STYLES)]
            for model, by_split in scores.items() for split, by_style in by_split.items()]
    out.append(table(header, rows))
    return "\n".join(out) + "\n"


def replace_block(text, block):
    if START not in text or END not in text:
        raise SystemExit(f"{README}: the markers {START} and {END} are missing")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{START}\n{block}{END}{tail}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="update the tables in data/README.md")
    action.add_argument("--check", action="store_true", help="exit 1 if data/README.md is out of date")
    args = parser.parse_args(argv)
    block = card()
    if not (args.write or args.check):
        print(block, end="")
        return 0
    text = README.read_text(encoding="utf-8")
    new = replace_block(text, block)
    if args.check:
        if new != text:
            print(f"{README}: the card tables are out of date; run {COMMAND}")
            return 1
        print(f"{README}: the card tables are up to date")
        return 0
    README.write_text(new, encoding="utf-8")
    print(f"updated the tables in {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
