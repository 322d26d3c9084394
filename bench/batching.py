"""How much length-grouped batches save: TinyTransformer on the training tickets, trained by
ticketnet.train with batches grouped by length and with plain random batches (each padded to its
own longest row), same seeds, threads and epochs, timed in one run.

    python bench/batching.py [--epochs 2] [--threads 2] [--limit N]
"""

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ticketnet as tn  # noqa: E402


def padded_tokens(ids, batches):
    lengths = (ids != tn.PAD).sum(1)
    return sum(int(lengths[b].max()) * len(b) for b in batches)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="use only the first N training tickets")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    train_rows = tn.load_split(tn.DATA / "train.csv")[:args.limit]
    valid_rows = tn.load_split(tn.DATA / "valid.csv")
    vocab = tn.Vocab([r["text"] for r in train_rows])
    ids, y = tn.token_ids(train_rows, vocab), tn.labels(train_rows)
    ids_valid, y_valid = tn.token_ids(valid_rows, vocab), tn.labels(valid_rows)
    real = int((ids != tn.PAD).sum())

    g = torch.Generator().manual_seed(0)
    grouped = padded_tokens(ids, tn.length_grouped_batches(ids, 64, g))
    plain = padded_tokens(ids, torch.randperm(len(ids), generator=g).split(64))

    print(f"| batches | tokens per epoch (real {real:,}) | seconds per epoch | valid acc after {args.epochs} |")
    print("|---|---|---|---|")
    seconds = {}
    for name, grouped_flag, tokens in (("random, padded to their longest", False, plain),
                                       ("grouped by length", True, grouped)):
        tn.set_seed(0)
        model = tn.TinyTransformer(len(vocab))
        start = time.perf_counter()
        history = tn.train(model, ids, y, ids_valid, y_valid, epochs=args.epochs, log=None,
                           group_by_length=grouped_flag)
        seconds[name] = (time.perf_counter() - start) / args.epochs
        print(f"| {name} | {tokens:,} | {seconds[name]:.2f} | {history[-1]['valid_acc']:.4f} |")
    ratio = seconds["random, padded to their longest"] / seconds["grouped by length"]
    print(f"\nspeed-up of grouping by length: {ratio:.2f}x ({args.threads} threads, {len(ids)} tickets)")
    return ratio


if __name__ == "__main__":
    main()
