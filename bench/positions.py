"""Word order on its own, for section 6: the notebook's TinyTransformer trained twice on the
Larkfield tickets, once with its learned position table and once without it.

Part 3 of the notebook compares the transformer with routers that ignore word order. Whatever the
transformer gains there comes from two things at once, its blocks and its position table; this
script separates them. Both runs take the setting the notebook trains (the first of
bench/tuning.py: 2 blocks, dropout 0.1, learning rate 1e-3) with Adam, batches of 64, seed 0 and
the same tickets. In the run "none" the position table is zeroed and frozen before training: every
other weight starts exactly as in the run "learned" (the same seed draws them in the same order),
the blocks still mask the padding, and adding a row of zeros changes no number, so the model reads
a ticket as an unordered set of words. The flag TinyTransformer(positions=False) would do the same
but would draw the blocks' first weights from another part of the random stream, so the two runs
would differ in more than the table.

One CSV row per run and epoch (losses and accuracies, as bench/tuning.py writes them). The row of
each run's best epoch (lowest validation loss; best=True) also carries what the weights of that
epoch give: for every ticket style and for "all", how many validation tickets the model routes
right and how many there are, and the mean length (L2 norm) of a row of the word table (the pad's
row left out) and of the position table, before and after training. The test split is never read.

    python bench/positions.py --jobs 2            # the committed bench/results/positions.csv
    python bench/positions.py --quick             # smoke test: 1 epoch on 128 tickets, no file
    python bench/positions.py --epochs 25 --out /tmp/positions.csv
"""

import copy
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import ticketnet as tn  # noqa: E402
from bench import tuning  # noqa: E402  the command line, tickets, processes and CSV writer

RUNS = ("learned", "none")  # with the position table, then without it
SETTING = tuning.settings()[0]  # (blocks, dropout, lr): the notebook's own
STYLES = ("boundary", "long", "negation", "plain", "short", "two_topics", "typos", "all")
COLUMNS = (("positions", "blocks", "dropout", "lr", "parameters", "trainable") + tuning.COLUMNS[4:]
           + ("best", "word_norm", "position_norm", "word_norm_start", "position_norm_start")
           + tuple(f"{style}_{count}" for style in STYLES for count in ("right", "tickets")))
RESULTS = ROOT / "bench" / "results" / "positions.csv"


def model(positions, vocab_size, seed=0):
    """The notebook's TinyTransformer, seeded; with positions="none" its position table is zeros
    that training cannot change."""
    if positions not in RUNS:
        raise ValueError(f"positions must be one of {RUNS}, got {positions!r}")
    blocks, dropout, _ = SETTING
    tn.set_seed(seed)
    net = tn.TinyTransformer(vocab_size, blocks=blocks, dropout=dropout)
    if positions == "none":
        with torch.no_grad():
            net.position.weight.zero_()
        net.position.weight.requires_grad_(False)  # Adam skips a weight without a gradient
    return net


def row_norms(net):
    """Mean L2 norm of a row of the word table (without the pad's row, zero by design) and of the
    position table: {"word_norm": ..., "position_norm": ...}."""
    with torch.no_grad():
        words = net.embed.weight[tn.PAD + 1:].norm(dim=1).mean().item()
        places = net.position.weight.norm(dim=1).mean().item()
    return {"word_norm": round(words, 4), "position_norm": round(places, 4)}


def right_by_style(net, ids, y, styles):
    """{style_right, style_tickets} for each of STYLES ("all" = every ticket): the tickets of that
    style that `net` routes to their team, and how many there are."""
    unknown = set(styles) - set(STYLES)
    if unknown:
        raise ValueError(f"styles {sorted(unknown)} are not among the CSV's columns {STYLES}")
    right = (tn.predict(net, ids).argmax(1) == y).tolist()
    counts = {}
    for style in STYLES:
        mine = [ok for ok, s in zip(right, styles) if style in (s, "all")]
        counts[f"{style}_right"], counts[f"{style}_tickets"] = sum(mine), len(mine)
    return counts


def run(positions, data, vocab_size, styles, epochs, seed=0):
    """Train one run as bench/tuning.py trains its setting, keeping the weights of the epoch with
    the lowest validation loss; one dict per epoch, the best one with its counts and norms."""
    _, _, lr = SETTING
    net = model(positions, vocab_size, seed)
    start = {f"{name}_start": value for name, value in row_norms(net).items()}
    best = {"valid_loss": float("inf")}

    def keep_best(row):  # called by train() after each epoch; copies nothing train() reads
        if row["valid_loss"] < best["valid_loss"]:
            best.update(row, state=copy.deepcopy(net.state_dict()))

    history = tn.train(net, *data, epochs=epochs, lr=lr, batch_size=64, seed=seed, log=keep_best)
    net.load_state_dict(best.pop("state"))
    blocks, dropout, _ = SETTING
    setting = {"positions": positions, "blocks": blocks, "dropout": dropout, "lr": lr,
               "parameters": tn.count_parameters(net),
               "trainable": sum(p.numel() for p in net.parameters() if p.requires_grad)}
    rows = [{**setting, **row, "best": row["epoch"] == best["epoch"]} for row in history]
    found = next(row for row in rows if row["best"])
    found.update(row_norms(net), **start, **right_by_style(net, data[2], data[3], styles))
    return rows


def _work(job):
    """One run in a worker process: (positions, seconds, rows)."""
    positions, data, vocab_size, styles, epochs, threads = job
    torch.set_num_threads(threads)
    start = time.perf_counter()
    rows = run(positions, data, vocab_size, styles, epochs)
    return positions, time.perf_counter() - start, rows


def _report(results):
    """Print each run's best epoch as it arrives; all the rows of both runs, in order."""
    rows = []
    for positions, seconds, history in results:
        best = next(row for row in history if row["best"])
        print(f"positions {positions:<8} best epoch {best['epoch']:>2}  valid loss {best['valid_loss']:.4f}  "
              f"right {best['all_right']} of {best['all_tickets']}  negation {best['negation_right']} of "
              f"{best['negation_tickets']}  row norms: words {best['word_norm']:.2f}, positions "
              f"{best['position_norm']:.2f}  ({seconds:.0f} s)", flush=True)
        rows += history
    return rows


def main(argv=None):
    args = tuning.options(__doc__, RESULTS, argv)
    torch.set_num_threads(args.threads)
    train_rows, valid_rows, vocab, data = tuning.larkfield(args.limit)
    styles = [row["style"] for row in valid_rows]
    print(f"{len(train_rows)} training tickets, {len(valid_rows)} validation tickets, "
          f"{args.epochs} epochs per run, {args.jobs} job(s) of {args.threads} thread(s)", flush=True)
    jobs = [(positions, data, len(vocab), styles, args.epochs, args.threads) for positions in RUNS]
    rows = _report(tuning.train_all(_work, jobs, args.jobs))
    tuning.write(rows, args.out, COLUMNS)
    return rows


if __name__ == "__main__":
    main()
