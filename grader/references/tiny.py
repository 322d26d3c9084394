"""The results the checks of section 6 compare with (grader/checks/tiny.py): the accuracy table of
each made-up case, the models a choice on validation may pick, and what an encoder of blocks with
the check's fixed weights computes, right and with the usual mistakes."""

import torch

from grader.checks.tiny import (CASES, PAD, encoder_inputs, encoder_mistakes, fixed_encoder_parts, mistake_key, named_case,
                               style_counts)
from grader.references.block import attention_twin, variant


def style_table(case, seed):
    """{style: (accuracy, tickets, right)} of a case, the styles sorted, then "all"."""
    return style_counts(*named_case(case, seed))


def best_on_validation(case):
    """The names a choice on validation may pick (more than one when they tie)."""
    valid = {name: v for name, (v, _) in CASES[case].items()}
    return sorted(name for name, v in valid.items() if v == max(valid.values()))


def _encode(parts, ids, positions=True, mask=True, pool="mean", norm="before"):
    """TinyTransformer's function with the parts' weights and pre-norm blocks, arranged as given."""
    pad = ids == PAD
    h = parts.embed(ids)
    if positions:
        h = h + parts.position(torch.arange(ids.shape[1]))
    for block in parts.blocks:
        h = variant(block, attention_twin(block, block.heads), h, pad if mask else None)
    if norm == "before":
        h = parts.norm(h)
    real = (~pad).unsqueeze(-1).float()
    pooled = {"mean": (h * real).sum(1) / real.sum(1), "all": h.mean(1), "sum": (h * real).sum(1),
              "first": h[:, 0]}[pool]
    if norm == "after":
        pooled = parts.norm(pooled)
    return parts.out(pooled)


def encoder_outputs(vocab_size, dim, heads, blocks, ffn, max_tokens, classes, batch, seed):
    """What the Encoder check compares with: the first block's input and output on the check's
    tickets, the encoder's scores, and the scores of each combination of mistakes."""
    parts = fixed_encoder_parts(vocab_size, dim, heads, blocks, ffn, max_tokens, classes, seed)
    ids = encoder_inputs(vocab_size, batch, max_tokens, seed)
    pad = ids == PAD
    with torch.no_grad():
        first_input = parts.embed(ids) + parts.position(torch.arange(ids.shape[1]))
        block = parts.blocks[0]
        mistakes = {mistake_key(combination): _encode(parts, ids, *combination) for combination in encoder_mistakes()}
        return {"first block input": first_input,
                "first block output": variant(block, attention_twin(block, heads), first_input, pad),
                "right": _encode(parts, ids), "mistakes": mistakes}
