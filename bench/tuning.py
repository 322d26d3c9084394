"""A fair tuning pass for section 6: eight TinyTransformer runs on the Larkfield tickets, the grid
blocks {2, 1} x dropout {0.1, 0.3} x learning rate {1e-3, 5e-4}, each trained by ticketnet.train
with Adam, batches of 64 and seed 0, exactly as the notebook trains its own transformer.

Every epoch of every run is written to one CSV (one row per run and epoch); the notebook reads it
and keeps, for each run, the epoch with the lowest validation loss. The test split is never read.

    python bench/tuning.py --jobs 2               # the committed bench/results/tuning.csv
    python bench/tuning.py --quick                # smoke test: 1 epoch on 128 tickets, no file
    python bench/tuning.py --epochs 25 --out /tmp/tuning.csv

With --jobs N the runs are shared among N processes; each run is still seeded and deterministic,
and the CSV lists the runs in the same order whatever N is. bench/positions.py trains the first
setting with and without its position table through the same command line, tickets, processes
and CSV writer (options, larkfield, train_all and write, below).
"""

import argparse
import csv
import itertools
import multiprocessing
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import ticketnet as tn  # noqa: E402

BLOCKS = (2, 1)
DROPOUTS = (0.1, 0.3)
RATES = (1e-3, 5e-4)  # the notebook's setting (2 blocks, 0.1, 1e-3) comes first
COLUMNS = ("blocks", "dropout", "lr", "parameters", "epoch", "train_loss", "train_acc",
           "valid_loss", "valid_acc")
RESULTS = ROOT / "bench" / "results" / "tuning.csv"


def settings():
    """The eight (blocks, dropout, lr) runs, the notebook's own first."""
    return list(itertools.product(BLOCKS, DROPOUTS, RATES))


def run(blocks, dropout, lr, data, vocab_size, epochs, seed=0):
    """Train one setting; one dict per epoch, with the setting and its parameter count."""
    tn.set_seed(seed)
    model = tn.TinyTransformer(vocab_size, blocks=blocks, dropout=dropout)
    history = tn.train(model, *data, epochs=epochs, lr=lr, batch_size=64, seed=seed, log=None)
    setting = {"blocks": blocks, "dropout": dropout, "lr": lr,
               "parameters": tn.count_parameters(model)}
    return [{**setting, **row} for row in history]


def _work(job):
    """One run in a worker process: (setting, seconds, history)."""
    (blocks, dropout, lr), data, vocab_size, epochs, threads = job
    torch.set_num_threads(threads)
    start = time.perf_counter()
    history = run(blocks, dropout, lr, data, vocab_size, epochs)
    return (blocks, dropout, lr), time.perf_counter() - start, history


def _report(results):
    """Print each run's best epoch as it arrives; all the epochs of all runs, in order."""
    rows = []
    for (blocks, dropout, lr), seconds, history in results:
        best = min(history, key=lambda row: row["valid_loss"])
        print(f"blocks {blocks}  dropout {dropout}  lr {lr:g}: best epoch {best['epoch']:>2}  "
              f"valid loss {best['valid_loss']:.4f}  valid acc {best['valid_acc']:.4f}  "
              f"({seconds:.0f} s)", flush=True)
        rows += history
    return rows


# What this script shares with bench/positions.py: the command line, the tickets, the pool of
# worker processes and the CSV file.

def options(description, results, argv=None):
    """Parse the command line of a section-6 training script (--epochs, --threads, --jobs, --quick,
    --out). With --quick, `epochs` is 1, `limit` 128 and `out` None unless --out names a file;
    otherwise `limit` is None and `out` defaults to `results`."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=10, help="epochs per run (default 10, as the notebook)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1, as the notebooks)")
    parser.add_argument("--jobs", type=int, default=1, help="runs trained at once (default 1)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 1 epoch, 128 training and 128 validation tickets, no file")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"CSV to write (default {results.relative_to(ROOT)}; none with --quick)")
    args = parser.parse_args(argv)
    args.limit, args.epochs = (128, 1) if args.quick else (None, args.epochs)
    if args.out is None and not args.quick:
        args.out = results
    return args


def larkfield(limit=None):
    """The first `limit` training and validation tickets (all with None; never the test split),
    the vocabulary of those training tickets, and what ticketnet.train takes:
    (train_rows, valid_rows, vocab, (ids_train, y_train, ids_valid, y_valid))."""
    train_rows = tn.load_split(tn.DATA / "train.csv")[:limit]
    valid_rows = tn.load_split(tn.DATA / "valid.csv")[:limit]
    vocab = tn.Vocab([row["text"] for row in train_rows])
    data = (tn.token_ids(train_rows, vocab), tn.labels(train_rows),
            tn.token_ids(valid_rows, vocab), tn.labels(valid_rows))
    return train_rows, valid_rows, vocab, data


def train_all(work, jobs, processes=1):
    """work(job) for every job, shared among `processes` forked processes (in this one when 1);
    the results arrive one by one, in the order of `jobs` whatever the number of processes."""
    if processes > 1:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            yield from pool.imap(work, jobs)
    else:
        yield from map(work, jobs)


def write(rows, out, columns):
    """Write rows (dicts) to the CSV file `out` under the header `columns`, a cell left empty where
    a row has no value; nothing when `out` is None."""
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} rows to {out}")


def main(argv=None):
    args = options(__doc__, RESULTS, argv)
    torch.set_num_threads(args.threads)
    train_rows, valid_rows, vocab, data = larkfield(args.limit)
    print(f"{len(train_rows)} training tickets, {len(valid_rows)} validation tickets, "
          f"{args.epochs} epochs per run, {args.jobs} job(s) of {args.threads} thread(s)", flush=True)
    jobs = [(setting, data, len(vocab), args.epochs, args.threads) for setting in settings()]
    rows = _report(train_all(_work, jobs, args.jobs))
    write(rows, args.out, COLUMNS)
    return rows


if __name__ == "__main__":
    main()
