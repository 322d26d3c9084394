"""A fair tuning pass for section 6: TinyTransformer on the Larkfield tickets with 1 or 2 blocks,
dropout 0.1 or 0.3 and learning rate 5e-4 or 1e-3 (eight runs), each trained by ticketnet.train
with Adam, batches of 64 and seed 0, exactly as the notebook trains its own transformer.

Every epoch of every run is written to one CSV (one row per run and epoch); the notebook reads it
and keeps, for each run, the epoch with the lowest validation loss. The test split is never read.

    python bench/tuning.py                 # the committed results: bench/results/tuning.csv
    python bench/tuning.py --quick         # smoke test: 1 epoch on 256 tickets, writes nothing
    python bench/tuning.py --epochs 25 --out /tmp/tuning.csv
"""

import argparse
import csv
import itertools
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=15, help="epochs per run (default 15)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 1 epoch on the first 256 training tickets, no file written")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"CSV to write (default {RESULTS.relative_to(ROOT)}; none with --quick)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    limit, epochs = (256, 1) if args.quick else (None, args.epochs)
    out = args.out if args.out is not None else (None if args.quick else RESULTS)

    train_rows = tn.load_split(tn.DATA / "train.csv")[:limit]
    valid_rows = tn.load_split(tn.DATA / "valid.csv")
    vocab = tn.Vocab([row["text"] for row in train_rows])
    data = (tn.token_ids(train_rows, vocab), tn.labels(train_rows),
            tn.token_ids(valid_rows, vocab), tn.labels(valid_rows))

    rows = []
    print(f"{len(train_rows)} training tickets, {len(valid_rows)} validation tickets, "
          f"{epochs} epochs per run, {args.threads} threads")
    for blocks, dropout, lr in settings():
        start = time.perf_counter()
        history = run(blocks, dropout, lr, data, len(vocab), epochs)
        best = min(history, key=lambda row: row["valid_loss"])
        print(f"blocks {blocks}  dropout {dropout}  lr {lr:g}: best epoch {best['epoch']:>2}  "
              f"valid loss {best['valid_loss']:.4f}  valid acc {best['valid_acc']:.4f}  "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
        rows += history
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {len(rows)} rows to {out}")
    return rows


if __name__ == "__main__":
    main()
