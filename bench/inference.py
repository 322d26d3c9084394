"""Inference speed of TinyTransformer on the validation tickets, with PyTorch's fast path for
transformer layers switched on and off (issue 7).

The model is first trained briefly (--epochs, 1 by default, seed 0, ticketnet.train) so that its
weights are those of a real run; speed does not depend on how good they are, and one epoch keeps
the script short. Then, in evaluation mode under torch.inference_mode, on the validation tickets
only (the test split is never read):

- tickets per second at batch 256, through ticketnet.predict (length-sorted, trimmed batches);
- milliseconds per ticket at batch 1 (median and 90th percentile over --latency-tickets tickets,
  each trimmed to its own length);
- whether both settings give the same predicted team, and the largest difference of the scores.

The fast path: in evaluation mode without autograd, each nn.TransformerEncoderLayer may replace
its Python forward by one fused op, aten::_transformer_encoder_layer_fwd, which handles pre-norm
layers and padding masks. `torch.backends.mha.set_fastpath_enabled(False)` forbids it. Rather than
trust the conditions, the script profiles one forward pass under each setting and reports which
ops ran. nn.TransformerEncoder can further pack a padded batch into a nested tensor and skip the
pads, but only for post-norm layers: TinyTransformer is pre-norm (norm_first=True), so PyTorch
refuses even with enable_nested_tensor=True; the script asks PyTorch and quotes its reason. A
post-norm copy would compute another function of the weights, so it is not measured.

"Fast" is not a promise: with a padding mask the fused op builds the full (batch, heads, T, T)
scores and runs _masked_softmax over them, while the Python layers call
scaled_dot_product_attention, which on CPU picks a flash-attention kernel that never builds them.
The table names the heaviest op of each setting, so the reader can see which one pays for what,
and says whether ticketnet.predict's default (fast_path=False since issue 24) is the faster one.

    python bench/inference.py                     # print the table
    python bench/inference.py --write             # ... and put it in BENCHMARKS.md
    python bench/inference.py --limit 512 --threads 1 --latency-tickets 50   # a quick look
"""

import argparse
import inspect
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import ticketnet as tn  # noqa: E402
from bench import tables  # noqa: E402

# What the table measured: changing any of it makes it stale (tests/test_bench.py).
MEASURED = ["bench/inference.py", "ticketnet.py", "data/*.csv", "requirements.txt"]

FUSED_LAYER = "aten::_transformer_encoder_layer_fwd"
ATTENTION_OPS = ("aten::_native_multi_head_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
                 "aten::_scaled_dot_product_attention_math")


def ops_run(model, ids):
    """The names of the ops one forward pass of `model` on `ids` runs, and the one that took the
    most time of its own, with its share, e.g. "addmm (30%)"."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(ids)
    totals = prof.key_averages()
    top = max(totals, key=lambda e: e.self_cpu_time_total)
    share = top.self_cpu_time_total / max(1e-9, sum(e.self_cpu_time_total for e in totals))
    return {event.name for event in prof.events()}, f"{top.key.removeprefix('aten::')} ({share:.0%})"


def path_taken(names):
    """Which code ran the encoder layers, in words."""
    layer = "fused layer op" if FUSED_LAYER in names else "Python layers"
    attention = [op.removeprefix("aten::") for op in ATTENTION_OPS if op in names]
    return f"{layer} ({', '.join(attention) or 'no attention op seen'})"


def nested_tensor_refusal(model):
    """Why PyTorch will not use nested tensors for a copy of the model's encoder ('' if it would)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        encoder = nn.TransformerEncoder(model.blocks.layers[0], len(model.blocks.layers),
                                        enable_nested_tensor=True)
    if encoder.use_nested_tensor:
        return ""
    reasons = [str(w.message) for w in caught if "nested" in str(w.message)]
    return reasons[0] if reasons else "use_nested_tensor is False"


SETTINGS = (("on", True), ("off", False))


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def measure_settings(model, ids, repeats, latency_tickets):
    """Batch-256 throughput, batch-1 latencies, scores and the ops that ran, for the fast path on
    and off. The two settings take turns (pass by pass, ticket by ticket), so that a change in
    the machine's load falls on both alike."""
    singles = [tn._trim(ids[i:i + 1]) for i in range(min(latency_tickets, len(ids)))]
    out = {name: {"passes": [], "latencies": []} for name, _ in SETTINGS}
    for name, enabled in SETTINGS:  # warm-up, and what ran
        torch.backends.mha.set_fastpath_enabled(enabled)
        out[name]["scores"] = tn.predict(model, ids, batch_size=256, fast_path=enabled)
        for x in singles[:10]:
            model(x)
        names, heaviest = ops_run(model, tn._trim(ids[:256]))
        out[name].update(fused=FUSED_LAYER in names, batch_256_path=path_taken(names), heaviest=heaviest,
                         batch_1_path=path_taken(ops_run(model, singles[0])[0]))
    for _ in range(repeats):
        for name, enabled in SETTINGS:
            out[name]["passes"].append(_timed(lambda: tn.predict(model, ids, batch_size=256, fast_path=enabled))[0])
    for x in singles:
        for name, enabled in SETTINGS:
            torch.backends.mha.set_fastpath_enabled(enabled)
            out[name]["latencies"].append(_timed(lambda: model(x))[0] * 1e3)
    for s in out.values():
        s["tickets_per_second"] = len(ids) / statistics.median(s.pop("passes"))
        latencies = s.pop("latencies")
        s["latency_median_ms"] = statistics.median(latencies)
        s["latency_p90_ms"] = statistics.quantiles(latencies, n=10)[-1]
    return out


def measure(args):
    load_meter = tables.OtherLoad().start()
    train_rows = tn.load_split(tn.DATA / "train.csv")[:args.limit]
    valid_rows = tn.load_split(tn.DATA / "valid.csv")
    vocab = tn.Vocab([r["text"] for r in train_rows])
    ids, y = tn.token_ids(train_rows, vocab), tn.labels(train_rows)
    ids_valid, y_valid = tn.token_ids(valid_rows, vocab), tn.labels(valid_rows)
    tn.set_seed(0)
    model = tn.TinyTransformer(len(vocab))
    print(f"training {args.epochs} epoch(s) on {len(ids)} tickets ...", file=sys.stderr)
    history = tn.train(model, ids, y, ids_valid, y_valid, epochs=args.epochs, seed=0, log=None)
    model.eval()
    print("measuring with the fast path on and off ...", file=sys.stderr)
    with torch.inference_mode():
        settings = measure_settings(model, ids_valid, args.repeats, args.latency_tickets)
    on, off = settings["on"].pop("scores"), settings["off"].pop("scores")
    same = int((on.argmax(1) == off.argmax(1)).sum())
    return {"settings": settings, "tickets": len(ids_valid), "train_tickets": len(ids),
            "epochs": args.epochs, "threads": args.threads, "valid_acc": history[-1]["valid_acc"],
            "same_predictions": same, "predictions_agree": same == len(ids_valid),
            "predict_default": inspect.signature(tn.predict).parameters["fast_path"].default,
            "max_abs_diff": float((on - off).abs().max()), "nested": nested_tensor_refusal(model),
            "latency_tickets": min(args.latency_tickets, len(ids_valid)), "repeats": args.repeats,
            "other_cores": load_meter.cores()}


def report(out):
    rows = [{"fast path": name, "what ran (batch 256)": s["batch_256_path"],
             "what ran (batch 1)": s["batch_1_path"], "heaviest op (batch 256)": s["heaviest"],
             "tickets per second, batch 256": f"{s['tickets_per_second']:,.0f}",
             "batch 1, median ms": f"{s['latency_median_ms']:.2f}",
             "batch 1, p90 ms": f"{s['latency_p90_ms']:.2f}"}
            for name, s in out["settings"].items()]
    on, off = out["settings"]["on"], out["settings"]["off"]
    engaged = ("The fast path engaged: with it on, each encoder layer ran as the single fused op "
               "_transformer_encoder_layer_fwd, padding mask and pre-norm included."
               if on["fused"] and not off["fused"] else
               "**The fast path did not engage** (the fused layer op was not seen with it on), so "
               "both rows ran the same code.")
    chosen, other = ("on", "off") if out["predict_default"] else ("off", "on")
    ratio = out["settings"][chosen]["tickets_per_second"] / out["settings"][other]["tickets_per_second"]
    default = (f"ticketnet.predict runs with the fast path {chosen} unless asked "
               f"(fast_path={out['predict_default']}): "
               + (f"the faster setting at batch 256 in this run, {ratio:.2f}x the other." if ratio >= 1 else
                  f"**the slower setting at batch 256 in this run** ({ratio:.2f}x the other): change its default."))
    nested = (f"Nested tensors (skipping the pads) stay off: PyTorch says \"{out['nested']}\"."
              if out["nested"] else "PyTorch would accept nested tensors for this encoder.")
    return "\n".join([
        f"### Inference: TinyTransformer on {out['tickets']} validation tickets, {out['threads']} threads",
        "",
        tables.table(rows, list(rows[0])),
        "",
        f"- The model: seed 0, {out['epochs']} epoch(s) of ticketnet.train on {out['train_tickets']:,} "
        f"training tickets (valid accuracy {out['valid_acc']:.4f}); evaluation mode, "
        "torch.inference_mode.",
        "- Batch 256 goes through ticketnet.predict (length-sorted, trimmed batches), median of "
        f"{out['repeats']} passes; batch 1 times {out['latency_tickets']} tickets one by one, each "
        "trimmed to its length. "
        "The two settings take turns, pass by pass and ticket by ticket.",
        f"- {engaged}",
        f"- Same predicted team with the fast path on and off for {out['same_predictions']} of "
        f"{out['tickets']} tickets; largest score difference {out['max_abs_diff']:.2e}.",
        f"- {default}",
        f"- {nested}",
        f"- {tables.describe_load(out['other_cores'])}",
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=1, help="training epochs before measuring")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--limit", type=int, default=None, help="train on the first N training tickets only")
    parser.add_argument("--latency-tickets", type=int, default=200, help="tickets timed one by one")
    parser.add_argument("--repeats", type=int, default=5, help="batch-256 passes timed (median)")
    parser.add_argument("--write", action="store_true", help="put the table in BENCHMARKS.md")
    parser.add_argument("--benchmarks", type=Path, default=tables.BENCHMARKS, help="file --write updates")
    args = parser.parse_args(argv)
    threads, fastpath = torch.get_num_threads(), torch.backends.mha.get_fastpath_enabled()
    torch.set_num_threads(args.threads)
    try:
        out = measure(args)
    finally:
        torch.set_num_threads(threads)
        torch.backends.mha.set_fastpath_enabled(fastpath)
    body = report(out)
    print(body)
    if not out["predictions_agree"]:
        print(f"WARNING: the fast path changes {out['tickets'] - out['same_predictions']} predictions",
              file=sys.stderr)
    if args.write:
        out["written"] = tables.write_section(__file__, body, MEASURED, path=args.benchmarks)
        print(f"wrote the section of bench/inference.py in {out['written']}", file=sys.stderr)
    return out


if __name__ == "__main__":
    sys.exit(0 if main()["predictions_agree"] else 1)
