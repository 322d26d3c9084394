"""Training speed of TinyTransformer on the Larkfield tickets, and how far it is from the machine's
limit (issue 7).

Four variants are trained in one run, each from the same weights (tn.set_seed(0)), with the same
seeds for dropout and batch order, on the same number of threads:

1. ours: ticketnet.train with batches grouped by length (its default), each trimmed to its
   longest row;
2. the same, on the model as it was before issue 24: with dropout on the attention weights and
   inside the feed-forward as well (`dropout_everywhere`), as nn.TransformerEncoderLayer has it;
3. plain random batches, each trimmed to its longest row (ticketnet.train, group_by_length=False);
4. plain random batches left at the full 120 tokens. ticketnet.train always trims, so this
   baseline has its own copy of the training loop, `train_full_width`, which differs from
   ticketnet.train only in not trimming (and in keeping only the validation numbers).

For each we report seconds per training epoch (the validation pass that ends every epoch is timed
as it runs, by wrapping ticketnet.evaluate, and taken out), padded tokens per epoch (what the
model is fed), real tokens per second and the validation accuracy after the last epoch.

The accuracies are expected to be close but not equal: the variants see the batches in another
order (1 and 2 against 3 and 4), the dropout masks are drawn from the same seed but for tensors of
other shapes (every variant), so each draws different random numbers, and variant 2 drops out more
(it is another model, trained the same way); padding columns also change
the order of floating-point sums. Early in training these small differences matter as much as a
change of seed: after 2 epochs, ours alone reached 0.5733, 0.6567 and 0.6167 with seeds 0, 1 and
2, a spread of 0.08. The script checks that the variants agree within --tolerance (0.10 by
default, a little over that spread) and exits with status 1, after a WARNING line, when they do not.
With more epochs, once accuracy levels off, a tighter tolerance makes sense.

The limit. FlopCounterMode counts the floating-point operations of the model's matrix multiplies,
forward and backward, for every batch shape a variant actually trained on (each distinct shape is
run once on the "meta" device, which computes shapes only, so the count is exact and costs no
arithmetic). The machine's throughput is measured at the model's own sizes: the matrix multiplies
of one training step on a (64, T) batch are recorded and replayed on random numbers, best of
--repeats (5), where T is the median padded width of that variant's batches. Each width is probed
twice, after its variant's training and at the end of the run, and the faster probe kept: one
probe in one run ran at two thirds of the speed of all the others.
limit = FLOPs per epoch / throughput; it ignores everything that is not a matrix multiply
(dropout, softmax, layer norm, the optimizer), so it is a bound nobody reaches, and
"measured / limit" says how far we are.
Issue 24's target is ours within 2x (issue 7 asked for 3x).

Last, torch.profiler follows a few of ours' batches and groups the time by kind of work.

On a machine that also runs other work, use --threads 1: PyTorch's threads wait for each other at
every op, so one that loses its core stalls the other. On this project's 2-core machine, with
other processes keeping about one core busy, a training step of ours took about 1,000 ms on 2
threads and 150 ms on 1 (measured minutes apart, not side by side). The report says how many
cores other processes kept busy during the run.

    python bench/training.py                      # print the tables (2 epochs, all tickets)
    python bench/training.py --write              # ... and put them in BENCHMARKS.md
    python bench/training.py --limit 512 --epochs 1 --threads 1   # a quick look
"""

import argparse
import collections
import copy
import os
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import ticketnet as tn  # noqa: E402
from bench import tables  # noqa: E402

# What the tables measured: changing any of it makes them stale (tests/test_bench.py).
MEASURED = ["bench/training.py", "ticketnet.py", "data/*.csv", "requirements.txt"]

SEED = 0
BATCH = 64
LR = 1e-3
OURS, LONGEST, FULL = "ours: grouped by length", "random, padded to their longest", "random, padded to 120"
BEFORE = "ours, with dropout everywhere (before issue 24)"
MATMULS = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default,
           torch.ops.aten.bmm.default, torch.ops.aten.baddbmm.default}


# --- the machine's other work ----------------------------------------------------------------

# --- the training loops ----------------------------------------------------------------------

def step(model, optimizer, ids, y):
    """One batch, exactly as the body of ticketnet.train's loop: (loss sum, right answers)."""
    logits = model(ids)
    loss = F.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item() * len(y), (logits.argmax(1) == y).sum().item()


def train_full_width(model, ids, y, ids_valid, y_valid, epochs):
    """ticketnet.train with group_by_length=False but without _trim: every batch is MAX_TOKENS
    wide. Only a baseline for this benchmark (what training costs when nobody cuts the padding);
    same optimizer, seeds, batch order and per-epoch validation as ticketnet.train."""
    ids = F.pad(ids, (0, tn.MAX_TOKENS - ids.shape[1]), value=tn.PAD)
    torch.manual_seed(SEED)  # dropout
    order = torch.Generator().manual_seed(SEED)  # batch order
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        for batch in torch.randperm(len(ids), generator=order).split(BATCH):
            step(model, optimizer, ids[batch], y[batch])
        valid_loss, valid_acc = tn.evaluate(model, ids_valid, y_valid)
        history.append({"epoch": epoch, "valid_loss": round(valid_loss, 4), "valid_acc": round(valid_acc, 4)})
    return history


def dropout_everywhere(model):
    """Put back the dropout TinyTransformer took out in issue 24: on the attention weights and
    inside the feed-forward, at the rate of the block's outputs, as nn.TransformerEncoderLayer has it."""
    for layer in model.blocks.layers:
        layer.self_attn.dropout = layer.dropout1.p
        layer.dropout = torch.nn.Dropout(layer.dropout1.p)
    return model


def run_variant(name, data, epochs):
    """Train a fresh model one way; return its shapes, timings and history."""
    ids, y, ids_valid, y_valid, vocab_size = data
    tn.set_seed(SEED)
    model = tn.TinyTransformer(vocab_size)
    if name == BEFORE:
        dropout_everywhere(model)
    shapes = []  # (B, T) of every training batch the model is fed
    hook = model.register_forward_pre_hook(
        lambda module, args: shapes.append(tuple(args[0].shape)) if module.training else None)
    validation = []  # seconds of each end-of-epoch validation pass, taken out of the epoch
    evaluate = tn.evaluate

    def timed_evaluate(*args, **kwargs):
        start = time.perf_counter()
        result = evaluate(*args, **kwargs)
        validation.append(time.perf_counter() - start)
        return result

    start = time.perf_counter()
    with mock.patch.object(tn, "evaluate", timed_evaluate):  # ticketnet.train looks it up here
        if name == FULL:
            history = train_full_width(model, ids, y, ids_valid, y_valid, epochs)
        else:
            history = tn.train(model, ids, y, ids_valid, y_valid, epochs=epochs, lr=LR,
                               batch_size=BATCH, seed=SEED, log=None, group_by_length=(name != LONGEST))
    seconds = time.perf_counter() - start
    hook.remove()
    assert len(validation) == epochs, validation
    return {"shapes": shapes, "history": history, "validation_seconds": statistics.mean(validation),
            "seconds": (seconds - sum(validation)) / epochs}


def warm_up(data, steps=2):
    """A few untimed steps on a throwaway model, so that the first variant does not pay for
    PyTorch's first calls (allocator, thread pool, kernels' set-up)."""
    ids, y, _, _, vocab_size = data
    model = tn.TinyTransformer(vocab_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    for start in range(0, steps * BATCH, BATCH):
        batch = torch.arange(start, start + BATCH) % len(ids)
        step(model, optimizer, tn._trim(ids[batch]), y[batch])
        step(model, optimizer, F.pad(ids[batch], (0, tn.MAX_TOKENS - ids.shape[1])), y[batch])


def _seconds(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# --- counting and the limit ------------------------------------------------------------------

def _step_on_meta(meta_model, batch, width):
    ids = torch.zeros(batch, width, dtype=torch.long, device="meta")
    y = torch.zeros(batch, dtype=torch.long, device="meta")
    F.cross_entropy(meta_model(ids), y).backward()


def flops_per_shape(meta_model, shapes):
    """{(B, T): matrix-multiply FLOPs of one forward and backward pass}, one meta run per shape."""
    out = {}
    for batch, width in sorted(set(shapes)):
        with FlopCounterMode(display=False) as counter:
            _step_on_meta(meta_model, batch, width)
        out[batch, width] = counter.get_total_flops()
    return out


class _RecordMatmuls(TorchDispatchMode):
    """Write down every matrix multiply: its op, the shapes and strides of its tensors."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in MATMULS:
            spec = [(tuple(a.shape), a.stride()) if isinstance(a, torch.Tensor) else a for a in args]
            self.calls.append((func, spec, kwargs))
        return func(*args, **kwargs)


def _random_like(shape, stride):
    size = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    return torch.randn(size).as_strided(shape, stride)


def matmul_throughput(meta_model, width, repeats=5):
    """FLOP/s of the matrix multiplies of one training step on a (64, width) batch, replayed on
    random numbers with the same shapes and memory layouts; the best of `repeats`."""
    with _RecordMatmuls() as recorder:
        _step_on_meta(meta_model, BATCH, width)
    calls = [(func, [_random_like(*a) if isinstance(a, tuple) else a for a in spec], kwargs)
             for func, spec, kwargs in recorder.calls]
    replay = lambda: [func(*args, **kwargs) for func, args, kwargs in calls]  # noqa: E731
    with FlopCounterMode(display=False) as counter:
        replay()
    replay()  # warm-up
    best = min(_seconds(replay) for _ in range(repeats))
    return counter.get_total_flops() / best


# --- where the time goes ---------------------------------------------------------------------

ELEMENTWISE = {"add", "add_", "sub", "rsub", "mul", "mul_", "div", "div_", "relu", "relu_",
               "threshold_backward", "clamp", "clamp_min", "where", "masked_fill", "masked_fill_",
               "eq", "ne", "sum", "mean", "neg", "fill_", "zero_"}


def _kind(event):
    """The kind of work of one profiler event, from its own name and those of its callers."""
    names = []
    while event is not None:
        names.append(event.name)
        event = event.cpu_parent
    own = names[0].removeprefix("aten::")
    if any(n.startswith("Optimizer.") for n in names):
        return "optimizer step (Adam, zero_grad)"
    if any("dropout" in n or "bernoulli" in n for n in names):
        return "dropout (random masks, scaling)"
    if any("scaled_dot_product" in n or "flash_attention" in n for n in names):
        return "fused attention (scores, softmax, weighted sum)"
    if any("softmax" in n for n in names):
        return "softmax and masking"
    if any("layer_norm" in n for n in names):
        return "layer norm"
    if own in {"mm", "addmm", "bmm", "baddbmm", "_addmm_activation"}:
        return "matrix multiplies"
    if own in ELEMENTWISE:
        return "other elementwise (add, mul, relu, masks)"
    return "other (copies, embeddings, loss, autograd)"


def profile_ours(data, batches=8, warmup=2):
    """Profile `batches` of ours' first-epoch batches on a fresh model, after `warmup` others:
    ({kind of work: seconds per batch}, batches profiled, their mean padded width)."""
    ids, y, _, _, vocab_size = data
    tn.set_seed(SEED)
    model = tn.TinyTransformer(vocab_size).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    torch.manual_seed(SEED)
    order = tn.length_grouped_batches(ids, BATCH, torch.Generator().manual_seed(SEED))
    for batch in order[:warmup]:
        step(model, optimizer, tn._trim(ids[batch]), y[batch])
    chosen = order[warmup:warmup + batches] or order[:batches]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for batch in chosen:
            step(model, optimizer, tn._trim(ids[batch]), y[batch])
        wall = time.perf_counter() - start
    kinds = collections.Counter()
    for event in prof.events():
        kinds[_kind(event)] += event.self_cpu_time_total / 1e6
    kinds["outside PyTorch ops (Python, profiler)"] = max(0.0, wall - sum(kinds.values()))
    width = statistics.mean(int(tn._lengths(ids[batch]).max()) for batch in chosen)
    return {kind: seconds / len(chosen) for kind, seconds in kinds.most_common()}, len(chosen), width


# --- the run ---------------------------------------------------------------------------------

def load(limit):
    train_rows = tn.load_split(tn.DATA / "train.csv")[:limit]
    valid_rows = tn.load_split(tn.DATA / "valid.csv")
    vocab = tn.Vocab([r["text"] for r in train_rows])
    return (tn.token_ids(train_rows, vocab), tn.labels(train_rows),
            tn.token_ids(valid_rows, vocab), tn.labels(valid_rows), len(vocab))


def measure(args):
    load_meter = tables.OtherLoad().start()
    data = load(args.limit)
    ids = data[0]
    real = int((ids != tn.PAD).sum())
    meta_model = copy.deepcopy(tn.TinyTransformer(data[4])).to("meta").train()
    warm_up(data)
    results, flop_cache, speed_cache = {}, {}, {}
    for name in (OURS, BEFORE, LONGEST, FULL):
        print(f"training: {name} ...", file=sys.stderr)
        run = run_variant(name, data, args.epochs)
        missing = set(run["shapes"]) - flop_cache.keys()
        flop_cache.update(flops_per_shape(meta_model, missing))
        width = int(statistics.median(t for _, t in run["shapes"]))
        if width not in speed_cache:
            speed_cache[width] = matmul_throughput(meta_model, width, args.repeats)
        flops = sum(flop_cache[s] for s in run["shapes"]) / args.epochs
        padded = sum(b * t for b, t in run["shapes"]) / args.epochs
        results[name] = {
            "seconds": run["seconds"], "validation_seconds": run["validation_seconds"],
            "padded_tokens": int(padded), "real_tokens": real,
            "real_tokens_per_second": real / run["seconds"], "flops": flops,
            "median_width": width, "valid_acc": run["history"][-1]["valid_acc"]}
    print("profiling ours ...", file=sys.stderr)
    breakdown, profiled, profiled_width = profile_ours(data, args.profile_batches)
    # One probe right after a training run ran at two thirds of the speed of every other (34 against
    # about 51 GFLOP/s): a second probe minutes later, keeping the better, makes the limit the machine's.
    for width in speed_cache:
        speed_cache[width] = max(speed_cache[width], matmul_throughput(meta_model, width, args.repeats))
    for r in results.values():
        r["throughput"] = speed_cache[r["median_width"]]
        r["limit_seconds"] = r["flops"] / r["throughput"]
        r["ratio"] = r["seconds"] / r["limit_seconds"]
    accs = [r["valid_acc"] for r in results.values()]
    spread = max(accs) - min(accs)
    return {"variants": results, "profile": breakdown, "tickets": len(ids), "epochs": args.epochs,
            "threads": args.threads, "accuracy_spread": spread, "repeats": args.repeats,
            "profile_batches": profiled, "profile_width": profiled_width,
            "accuracy_agrees": spread <= args.tolerance, "tolerance": args.tolerance,
            "other_cores": load_meter.cores()}


def report(out):
    rows = []
    for name, r in out["variants"].items():
        rows.append({
            "batches": name, "padded tokens per epoch": f"{r['padded_tokens']:,}",
            "padding share": f"{1 - r['real_tokens'] / r['padded_tokens']:.1%}",
            "seconds per epoch": f"{r['seconds']:.2f}",
            "real tokens per second": f"{r['real_tokens_per_second']:,.0f}",
            "matmul GFLOP per epoch": f"{r['flops'] / 1e9:,.1f}",
            "matmul GFLOP/s at width T": f"{r['throughput'] / 1e9:.0f} (T={r['median_width']})",
            "limit (s)": f"{r['limit_seconds']:.2f}", "measured / limit": f"{r['ratio']:.1f}x",
            f"valid acc after {out['epochs']}": f"{r['valid_acc']:.4f}"})
    ours = out["variants"][OURS]
    agree = (f"Validation accuracies agree within {out['tolerance']} (spread {out['accuracy_spread']:.4f})."
             if out["accuracy_agrees"] else
             f"**WARNING: validation accuracies differ by {out['accuracy_spread']:.4f}, more than "
             f"{out['tolerance']}.**")
    total = sum(out["profile"].values())
    profile_rows = [{"kind of work": kind, "ms per batch": f"{s * 1e3:.1f}", "share": f"{s / total:.0%}"}
                    for kind, s in out["profile"].items()]
    return "\n".join([
        f"### Training: TinyTransformer, {out['tickets']:,} tickets, {out['epochs']} epochs, "
        f"{out['threads']} threads",
        "",
        tables.table(rows, list(rows[0])),
        "",
        f"- Real tokens per epoch: {ours['real_tokens']:,}. Seconds per epoch leave out the "
        f"validation pass that ends each epoch ({ours['validation_seconds']:.2f} s for ours).",
        "- Limit = matrix-multiply FLOPs of one epoch, forward and backward (FlopCounterMode, every "
        "batch shape trained on), divided by the FLOP/s of the same matrix multiplies of one "
        f"(64, T) training step replayed on random numbers (best of {out['repeats']}, probed after the "
        "variant's training and again at the end, the better kept), T the median "
        "padded width. "
        "Dropout, softmax, layer norm and the optimizer count for nothing in it.",
        f"- Ours is {ours['ratio']:.1f}x its limit; issue 24 asks for 2x at most. Before issue 24 the "
        f"same training, with dropout on the attention weights and inside the feed-forward, took "
        f"{out['variants'][BEFORE]['seconds'] / ours['seconds']:.2f}x as long (the second row, this run).",
        f"- {agree} They cannot be identical: batch order and dropout draws differ, and after 2 "
        "epochs three seeds of ours alone spread over 0.08.",
        f"- {tables.describe_load(out['other_cores'])}",
        "",
        f"Where ours spends a training step (torch.profiler over {out['profile_batches']} of its "
        f"batches, mean width {out['profile_width']:.0f} tokens. Each op's own time is filed under "
        "the kind of work of the op that called it, so a softmax's masking counts as softmax; the "
        "backward multiply of dropout falls under elementwise. The profiler adds overhead of its own):",
        "",
        tables.table(profile_rows, ["kind of work", "ms per batch", "share"]),
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--limit", type=int, default=None, help="use only the first N training tickets")
    parser.add_argument("--tolerance", type=float, default=0.10,
                        help="largest accepted spread of the validation accuracies")
    parser.add_argument("--repeats", type=int, default=5, help="replays of the matrix multiplies (best kept)")
    parser.add_argument("--profile-batches", type=int, default=8, help="batches of ours profiled")
    parser.add_argument("--write", action="store_true", help="put the tables in BENCHMARKS.md")
    parser.add_argument("--benchmarks", type=Path, default=tables.BENCHMARKS, help="file --write updates")
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        out = measure(args)
    finally:
        torch.set_num_threads(threads)
    body = report(out)
    print(body)
    if not out["accuracy_agrees"]:
        print(f"WARNING: validation accuracies differ by {out['accuracy_spread']:.4f} "
              f"(tolerance {args.tolerance})", file=sys.stderr)
    if args.write:
        out["written"] = tables.write_section(__file__, body, MEASURED, path=args.benchmarks)
        print(f"wrote the section of bench/training.py in {out['written']}", file=sys.stderr)
    return out


if __name__ == "__main__":
    sys.exit(0 if main()["accuracy_agrees"] else 1)
