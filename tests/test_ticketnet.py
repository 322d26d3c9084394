"""The course library: every public function, its bad inputs, and the facts the lessons quote."""

import hashlib
import io
import math
import random
import re
import shutil
import sys
import types
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import ticketnet as tn

TEXTS = ["Where is my parcel? Order 4411 has not arrived.",
         "I want a refund for the broken lamp.",
         "My card was charged twice for order 4411.",
         "The lamp stopped working after a year, is it under warranty?",
         "I cannot log in to my account.",
         "Where is my lamp? It has not arrived."]
ROWS = [{"ticket_id": f"T{i}", "text": text, "team": team, "style": "plain"}
        for i, (text, team) in enumerate(zip(TEXTS, tn.TEAMS + ("delivery",)))]


# --- constants and the tokenizer -------------------------------------------------------------

def test_constants_are_the_contract():
    assert tn.TEAMS == ("delivery", "returns", "payment", "warranty", "account")
    assert (tn.PAD, tn.UNK, tn.MAX_TOKENS) == (0, 1, 120)


def test_tokenize_lowercases_and_keeps_punctuation_and_apostrophes():
    assert tn.tokenize("Where's my LAMP? Order #48213!") == \
        ["where's", "my", "lamp", "?", "order", "#", "48213", "!"]


def test_tokenize_refuses_a_non_string():
    with pytest.raises(TypeError, match="tokenize takes a string, got list"):
        tn.tokenize(["a", "list"])


# --- vocabulary, ids and labels --------------------------------------------------------------

def test_vocab_reserves_pad_and_unknown_and_keeps_words_seen_twice():
    vocab = tn.Vocab(TEXTS)
    assert vocab.itos[:2] == ["<pad>", "<unk>"]
    assert "lamp" in vocab.stoi and "lawnmower" not in vocab.stoi
    assert "stopped" not in vocab.stoi  # seen once
    assert len(vocab) == len(vocab.itos) == len(tn.Vocab(TEXTS, min_count=2).itos)
    assert len(tn.Vocab(TEXTS, min_count=1)) > len(vocab)


def test_vocab_orders_by_frequency_then_alphabet():
    vocab = tn.Vocab(["d b a b", "c b a c"], min_count=1)  # b three times, a and c twice, d once
    assert vocab.itos[2:] == ["b", "a", "c", "d"]


def test_vocab_encode_maps_unknown_words_to_unk_and_decode_skips_pads():
    vocab = tn.Vocab(TEXTS)
    ids = vocab.encode("my lamp, a lawnmower")
    assert ids == [vocab.stoi["my"], vocab.stoi["lamp"], tn.UNK, vocab.stoi["a"], tn.UNK]
    assert vocab.decode(ids + [tn.PAD, tn.PAD]) == "my lamp <unk> a <unk>"
    assert vocab.decode(torch.tensor(ids)) == vocab.decode(ids)


def test_vocab_refuses_a_single_string_and_a_bad_min_count():
    with pytest.raises(TypeError, match="^Vocab takes a list of texts, got one string$"):
        tn.Vocab("one ticket")
    with pytest.raises(ValueError, match="min_count"):
        tn.Vocab(TEXTS, min_count=0)


def test_token_ids_pads_to_the_longest_row_and_cuts_at_max_tokens():
    vocab = tn.Vocab(TEXTS)
    ids = tn.token_ids(ROWS, vocab)
    lengths = [len(vocab.encode(t)) for t in TEXTS]
    assert ids.dtype == torch.long and ids.shape == (len(ROWS), max(lengths))
    assert ((ids != tn.PAD).sum(1).tolist()) == lengths
    assert tn.token_ids(TEXTS, vocab).equal(ids)  # strings work as well as rows
    assert tn.token_ids(ROWS, vocab, max_tokens=3).shape == (len(ROWS), 3)
    long_text = " ".join(["lamp"] * 500)
    assert tn.token_ids([long_text], vocab).shape == (1, tn.MAX_TOKENS)
    assert tn.token_ids(["lamp", "lamp"], vocab).tolist() == [[vocab.stoi["lamp"]]] * 2  # one column
    assert tn.token_ids([""], vocab).tolist() == [[tn.PAD]]  # no words still make a column


def test_token_ids_refuses_no_rows():
    with pytest.raises(ValueError, match="^token_ids needs at least one row$"):
        tn.token_ids([], tn.Vocab(TEXTS))


def test_labels_are_team_indices_and_unknown_teams_are_named():
    assert tn.labels(ROWS).tolist() == [0, 1, 2, 3, 4, 0]
    with pytest.raises(ValueError, match="garden"):
        tn.labels([{"team": "garden"}])
    assert tn.labels([{"category": "b"}], classes=("a", "b"), column="category").tolist() == [1]
    assert tn.labels([]).dtype == torch.long  # no rows: still labels, not floats


def test_labels_error_names_the_first_five_unknown_and_the_first_eight_classes():
    rows = [{"intent": name} for name in "uvwxyz"]
    expected = ("unknown intent ['u', 'v', 'w', 'x', 'y']; "
                "expected one of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']...")
    with pytest.raises(ValueError) as error:
        tn.labels(rows, classes=tuple("abcdefghij"), column="intent")
    assert str(error.value) == expected


# --- seeds and counts ------------------------------------------------------------------------

def test_set_seed_repeats_weights_and_python_and_numpy_draws():
    tn.set_seed(3)
    draws = nn.Linear(4, 4).weight.clone(), random.random(), np.random.rand()
    tn.set_seed(3)
    assert torch.equal(draws[0], nn.Linear(4, 4).weight)
    assert (random.random(), np.random.rand()) == draws[1:]


def test_count_parameters_counts_every_number():
    assert tn.count_parameters(nn.Linear(64, 5)) == 325
    assert tn.count_parameters(nn.MultiheadAttention(64, 4)) == 16_640


# --- attention -------------------------------------------------------------------------------

def test_attention_matches_pytorch_and_blocks_masked_keys():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 5, 8).unbind(0)
    mask = torch.zeros(2, 1, 5, dtype=torch.bool)
    mask[0, 0, 3:] = True
    out, weights = tn.attention(q, k, v, mask)
    expected = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
    assert torch.allclose(out, expected, atol=1e-6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 5))
    assert weights[0, :, 3:].abs().max() == 0


def test_attention_refuses_a_mask_with_too_few_dimensions_and_a_float_mask():
    q = torch.randn(2, 4, 5, 16)
    with pytest.raises(ValueError, match=r"broadcasts, for heads a padding mask is \(batch, 1, 1, keys\)$"):
        tn.attention(q, q, q, torch.zeros(2, 1, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool"):
        tn.attention(q, q, q, torch.zeros(2, 1, 1, 5))


# --- the routers -----------------------------------------------------------------------------

def test_tiny_transformer_parameter_counts_follow_from_its_shape():
    """Derived from the sizes, not copied: a vocabulary of V words and d = 64 numbers per token."""
    vocab, d, ffn, table, teams = 3425, 64, 256, tn.MAX_TOKENS, len(tn.TEAMS)
    block = (4 * d * d + 4 * d) + (d * ffn + ffn + ffn * d + d) + 2 * (2 * d)  # attention, FFN, 2 norms
    model = tn.TinyTransformer(vocab)
    parts = {name: tn.count_parameters(part) for name, part in model.named_children()}
    assert parts == {"embed": vocab * d, "position": table * d, "blocks": 2 * block, "norm": 2 * d,
                     "out": d * teams + teams}
    assert block == 49_984 and all(tn.count_parameters(b) == block for b in model.blocks.layers)
    total = tn.count_parameters(model)
    assert total == sum(parts.values())
    assert tn.count_parameters(tn.TinyTransformer(vocab, heads=8)) == total
    assert tn.count_parameters(tn.TinyTransformer(vocab, positions=False)) == total - table * d


def test_baseline_parameter_counts_follow_from_their_shape():
    vocab, hidden, teams = 3425, 64, len(tn.TEAMS)
    assert tn.count_parameters(tn.BagOfWordsNet(vocab)) == vocab * hidden + hidden + hidden * teams + teams
    assert tn.count_parameters(tn.AverageEmbeddingNet(vocab)) == vocab * hidden + hidden * teams + teams


@pytest.mark.parametrize("make", [tn.TinyTransformer, tn.AverageEmbeddingNet])
def test_the_pad_token_vector_is_zero_and_never_learns(make):
    torch.manual_seed(0)
    model = make(40)
    assert model.embed.weight[tn.PAD].abs().max() == 0
    model(torch.tensor([[5, 6, tn.PAD, tn.PAD]])).sum().backward()
    assert model.embed.weight.grad[tn.PAD].abs().max() == 0 < model.embed.weight.grad[5].abs().max()


@pytest.mark.parametrize("make", [tn.TinyTransformer, tn.BagOfWordsNet, tn.AverageEmbeddingNet])
def test_routers_compute_on_the_device_of_their_input(make):
    """The meta device stands in for a GPU: a tensor made on the CPU inside forward would clash."""
    model = make(50).to("meta").eval()
    assert model(torch.ones(2, 5, dtype=torch.long, device="meta")).device.type == "meta"


def test_tiny_transformer_adds_the_position_vector_to_each_token_vector():
    """A position table holding the same vector c everywhere reads like token vectors moved by c."""
    torch.manual_seed(0)
    with_positions = tn.TinyTransformer(50).eval()
    without = tn.TinyTransformer(50, positions=False).eval()
    c = torch.randn(64)
    with torch.no_grad():
        with_positions.position.weight[:] = c
        without.load_state_dict({name: value for name, value in with_positions.state_dict().items()
                                 if not name.startswith("position")})
        without.embed.weight += c
        ids = torch.tensor([[5, 6, 7, tn.PAD]])
        assert torch.allclose(with_positions(ids), without(ids), atol=1e-5)


def test_tiny_transformer_dropout_argument_reaches_the_blocks():
    ids = torch.tensor([[5, 6, 7, 8]])
    torch.manual_seed(0)
    model = tn.TinyTransformer(50, dropout=0.0).train()
    assert torch.equal(model(ids), model(ids)), "dropout=0 left randomness in training mode"
    model = tn.TinyTransformer(50, dropout=0.5).train()
    assert not torch.equal(model(ids), model(ids))


def test_tiny_transformer_drops_out_only_the_two_outputs_of_each_block_and_trains_on_fused_attention():
    """Dropout on attention weights keeps PyTorch off its fused attention in training, and a mask
    over the feed-forward's inner width was the largest of the block: issue 24 took both out."""
    model = tn.TinyTransformer(50, dropout=0.3).train()
    for block in model.blocks.layers:
        assert block.self_attn.dropout == 0.0
        assert [name for name, m in block.named_modules() if isinstance(m, nn.Dropout)] == ["dropout1", "dropout2"]
        assert block.dropout1.p == block.dropout2.p == 0.3
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        model(torch.tensor([[5, 6, 7, tn.PAD], [5, 6, 7, 8]])).sum().backward()
    ran = {event.key for event in prof.key_averages()}
    assert any("scaled_dot_product" in name for name in ran), sorted(ran)
    assert not any("softmax" in name and "flash" not in name for name in ran), sorted(ran)


def test_building_and_running_a_tiny_transformer_warns_about_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = tn.TinyTransformer(50)
        model(torch.tensor([[5, 6, tn.PAD]]))
        model.eval()(torch.tensor([[5, 6, tn.PAD]]))


def test_tiny_transformer_reads_unknown_words_and_ignores_only_padding():
    """An unknown word is a token like any other (id 1); only PAD (id 0) is masked."""
    torch.manual_seed(0)
    model = tn.TinyTransformer(50).eval()
    with torch.no_grad():
        model.embed.weight[9] = model.embed.weight[tn.UNK]  # word 9 now looks exactly like <unk>
        scores = model(torch.tensor([[5, tn.UNK, 7, 8, 0, 0]]))
        assert torch.allclose(model(torch.tensor([[5, 9, 7, 8, 0, 0]])), scores, atol=1e-5), \
            "<unk> is not read as a word: is it masked like a pad?"
        assert torch.allclose(model(torch.tensor([[5, tn.UNK, 7, 8]])), scores, atol=1e-5), \
            "padding changed the scores"


def test_tiny_transformer_blocks_are_pre_norm_and_batch_first():
    for block in tn.TinyTransformer(100).blocks.layers:
        assert block.norm_first and block.self_attn.batch_first


def test_tiny_transformer_ignores_pads_and_scores_each_ticket():
    torch.manual_seed(0)
    model = tn.TinyTransformer(50).eval()
    ids = torch.randint(2, 50, (3, 7))
    ids[0, 4:] = tn.PAD
    with torch.no_grad():
        scores = model(ids)
        assert scores.shape == (3, len(tn.TEAMS))
        more_padding = torch.cat([ids, torch.zeros(3, 5, dtype=torch.long)], 1)
        assert torch.allclose(model(more_padding), scores, atol=1e-5)
        assert torch.allclose(model(ids[:1, :4]), scores[:1], atol=1e-5)


def test_tiny_transformer_refuses_a_sequence_longer_than_its_table_naming_the_limit():
    model = tn.TinyTransformer(50, max_tokens=10)
    assert model(torch.ones(1, 10, dtype=torch.long)).shape == (1, len(tn.TEAMS))  # a full table is fine
    with pytest.raises(ValueError, match="11 tokens.*table has 10"):
        model(torch.ones(1, 11, dtype=torch.long))


@pytest.mark.parametrize("make", [tn.BagOfWordsNet, tn.AverageEmbeddingNet])
def test_order_blind_baselines_score_a_reordered_ticket_the_same(make):
    torch.manual_seed(0)
    model = make(50).eval()
    ids = torch.tensor([[5, 6, 7, 8, 0, 0]])
    with torch.no_grad():
        assert model(ids).shape == (1, 5)
        assert torch.allclose(model(ids), model(torch.tensor([[8, 7, 6, 5, 0, 0]])), atol=1e-6)
        assert torch.allclose(model(ids), model(ids[:, :4]), atol=1e-6)


def test_bag_of_words_reads_a_one_for_each_word_present_and_nothing_for_pads():
    torch.manual_seed(0)
    model = tn.BagOfWordsNet(10).eval()
    present = torch.zeros(1, 10)
    present[0, [3, 5]] = 1.0  # word 5 twice still counts once; the pads not at all
    with torch.no_grad():
        expected = model.out(torch.relu(model.hidden(present)))
        assert torch.allclose(model(torch.tensor([[3, 5, 5, tn.PAD, tn.PAD]])), expected, atol=1e-6)


def test_average_embedding_net_averages_the_vectors_of_the_real_words():
    torch.manual_seed(0)
    model = tn.AverageEmbeddingNet(10).eval()
    vectors = model.embed.weight
    with torch.no_grad():
        assert torch.allclose(model(torch.tensor([[4, tn.PAD, tn.PAD]])), model.out(vectors[4:5]), atol=1e-6)
        assert torch.allclose(model(torch.tensor([[4, 6, tn.PAD]])),
                              model.out((vectors[4:5] + vectors[6:7]) / 2), atol=1e-6)


def test_tfidf_router_fits_rows_and_scores_accuracy():
    router = tn.TfidfRouter().fit(ROWS * 3)
    assert router.score(ROWS) == 1.0
    assert router.predict(["my card was charged twice"]) == ["payment"]
    assert router.score(TEXTS, [r["team"] for r in ROWS]) == 1.0
    router = tn.TfidfRouter().fit(TEXTS * 3, [r["team"] for r in ROWS] * 3)  # texts and labels apart
    assert router.predict(ROWS) == [r["team"] for r in ROWS]


def test_tfidf_router_features_are_words_and_word_pairs_weighted_by_log_counts():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vectorizer = tn.TfidfRouter().fit(ROWS).model[0]
    features = set(vectorizer.get_feature_names_out())
    assert {"card", "card was", "charged twice", "?"} <= features
    assert max(len(feature.split()) for feature in features) == 2
    once, thrice = vectorizer.transform(["lamp refund", "lamp lamp lamp refund"]).toarray()
    lamp, refund = vectorizer.vocabulary_["lamp"], vectorizer.vocabulary_["refund"]
    assert thrice[lamp] / thrice[refund] == pytest.approx((1 + math.log(3)) * once[lamp] / once[refund])


def test_tfidf_router_c_is_the_inverse_of_the_regularisation_and_ten_by_default():
    def weight(**options):
        return np.abs(tn.TfidfRouter(**options).fit(ROWS).model[-1].coef_).sum()

    assert weight(C=0.1) < weight(C=10.0)
    assert weight() == weight(C=10.0)


# --- training --------------------------------------------------------------------------------

def _toy_task(n=240, seed=0):
    """Tickets of random words whose first word (one of five cue words) decides the label."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 5, (n,), generator=g)
    ids = torch.randint(7, 40, (n, 12), generator=g)
    ids[:, 0] = 2 + y
    lengths = torch.randint(3, 13, (n,), generator=g)
    ids[torch.arange(12) >= lengths.unsqueeze(1)] = tn.PAD
    return ids, y


class _Recorder(tn.AverageEmbeddingNet):
    """An average-embedding router with dropout on its scores that keeps what it is given: the
    training batches with the scores it gave them, and the sizes of the batches it evaluates."""

    def __init__(self, vocab_size=40, dropout=0.5):
        super().__init__(vocab_size)
        self.dropout = nn.Dropout(dropout)
        self.trained, self.evaluated = [], []

    def forward(self, ids):
        scores = self.dropout(super().forward(ids))
        if self.training:
            self.trained.append((ids, scores.detach()))
        else:
            self.evaluated.append(len(ids))
        return scores


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped by length", "plain"])
def test_train_history_reports_the_running_mean_loss_and_accuracy_of_the_batches_it_trained_on(grouped):
    """Each epoch's train_loss and train_acc are the means, over the rows, of what the model scored
    on the batches as it met them; the batches come from train's own generator seeded with `seed`
    (not from the dropout's), each cut to its longest ticket."""
    ids, y = _toy_task(96)
    ids[::3, 1:] = tn.PAD  # a third of the tickets are one word long
    train_ids, train_y = ids[:83], y[:83]  # 83 rows: no mean is a short decimal
    model = _Recorder()
    history = tn.train(model, train_ids, train_y, ids[83:], y[83:], epochs=2, batch_size=8, seed=5,
                       group_by_length=grouped, log=None)
    order = torch.Generator().manual_seed(5)
    lengths = (train_ids != tn.PAD).sum(1)
    seen = iter(model.trained)
    for row in history:
        if grouped:
            batches = tn.length_grouped_batches(train_ids, 8, order)
        else:
            batches = torch.randperm(83, generator=order).split(8)
        loss_sum, right = 0.0, 0
        for batch in batches:
            batch_ids, scores = next(seen)
            assert torch.equal(batch_ids, train_ids[batch][:, :lengths[batch].max()])
            loss_sum += F.cross_entropy(scores, train_y[batch]).item() * len(batch)
            right += (scores.argmax(1) == train_y[batch]).sum().item()
        assert (row["train_loss"], row["train_acc"]) == (round(loss_sum / 83, 4), round(right / 83, 4))
    assert next(seen, None) is None
    if grouped:  # the cut was checked on batches of one-word tickets too
        assert any(batch_ids.shape[1] == 1 for batch_ids, _ in model.trained)


def test_train_defaults_are_adam_at_1e_3_on_length_grouped_batches_of_64_and_seed_0():
    ids, y = _toy_task(200)

    def weights(**options):
        tn.set_seed(0)
        model = tn.AverageEmbeddingNet(40)
        tn.train(model, ids, y, ids[:10], y[:10], epochs=1, log=None, **options)
        return model.state_dict()

    default, explicit = weights(), weights(lr=1e-3, batch_size=64, seed=0, group_by_length=True)
    assert all(torch.equal(default[name], explicit[name]) for name in default)


def test_train_returns_a_history_row_per_epoch_and_learns():
    ids, y = _toy_task()
    tn.set_seed(0)
    history = tn.train(tn.AverageEmbeddingNet(40), ids[:200], y[:200], ids[200:], y[200:],
                       epochs=15, lr=1e-2, log=None)
    assert [row["epoch"] for row in history] == list(range(1, 16))
    assert set(history[0]) == {"epoch", "train_loss", "train_acc", "valid_loss", "valid_acc"}
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert history[-1]["valid_acc"] > 0.9


def test_train_reports_the_validation_split_as_evaluate_scores_it():
    """The last epoch's valid_loss and valid_acc are those of the validation rows, not the training
    rows, and they match evaluate() on them."""
    ids, y = _toy_task()
    tn.set_seed(0)
    model = tn.AverageEmbeddingNet(40)
    # 53 validation rows: an accuracy k / 53 needs all four decimals
    train_ids, train_y, valid_ids, valid_y = ids[:187], y[:187], ids[187:], 1 - y[187:].clamp(max=1)
    history = tn.train(model, train_ids, train_y, valid_ids, valid_y, epochs=3, lr=1e-2, log=None)
    loss, accuracy = tn.evaluate(model, valid_ids, valid_y)
    assert history[-1]["valid_loss"] == round(loss, 4) and history[-1]["valid_acc"] == round(accuracy, 4)
    assert tn.evaluate(model, train_ids, train_y)[1] != pytest.approx(accuracy, abs=0.05)


def test_train_is_deterministic_for_a_seed_and_differs_for_another():
    ids, y = _toy_task()

    def run(seed):
        tn.set_seed(0)
        model = tn.TinyTransformer(40, dim=16, heads=2, ffn=32)
        return tn.train(model, ids[:200], y[:200], ids[200:], y[200:], epochs=2, seed=seed, log=None)

    assert run(0) == run(0)
    assert run(0) != run(1)


def test_train_logs_epochs_to_a_function_and_prints_when_asked(capsys):
    ids, y = _toy_task(80)
    seen = []
    tn.train(tn.AverageEmbeddingNet(40), ids, y, ids, y, epochs=2, log=seen.append)
    assert [row["epoch"] for row in seen] == [1, 2]
    history = tn.train(tn.AverageEmbeddingNet(40), ids, y, ids, y, epochs=2, log="epochs")
    assert capsys.readouterr().out == "".join(f"{row}\n" for row in history)
    tn.train(tn.AverageEmbeddingNet(40), ids, y, ids, y, epochs=1, log=None)
    assert capsys.readouterr() == ("", "")


def test_train_bar_counts_epochs_shows_the_validation_accuracy_and_vanishes_when_done(capsys):
    ids, y = _toy_task(80)
    history = tn.train(tn.AverageEmbeddingNet(40), ids, y, ids, y, epochs=2, log="bar")
    bar = capsys.readouterr().err
    assert "  0%|          | 0/2 [00:00<?, ?epoch/s]" in bar
    assert set(re.findall(r"(\d+)/2 \[", bar)) == {"0", "1", "2"}
    for row in history:
        assert f"valid_acc={row['valid_acc']:.3g}]" in bar
    assert bar.endswith("\r") and "\n" not in bar, "the bar should be wiped when training ends"


@pytest.mark.parametrize("terminal, notebook, env, shows_bar", [
    (True, False, {}, True),
    (False, True, {}, True),
    (True, False, {"NBGRADER_EXECUTION": "autograde"}, False),
    (True, True, {"CI": "true"}, False),
    (False, False, {}, False),
], ids=["terminal", "notebook", "nbgrader", "CI", "log file"])
def test_train_shows_a_bar_by_default_only_when_a_person_watches(capsys, monkeypatch, terminal, notebook, env,
                                                                   shows_bar):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    if notebook:
        monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    else:
        monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    for name in ("NBGRADER_EXECUTION", "CI"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    ids, y = _toy_task(40)
    tn.train(tn.AverageEmbeddingNet(40), ids, y, ids, y, epochs=1)
    out, err = capsys.readouterr()
    assert out == "" and ("1/1 [" in err) == shows_bar


def test_train_refuses_ids_and_labels_of_different_lengths():
    ids, y = _toy_task(80)
    with pytest.raises(ValueError, match="differ in length"):
        tn.train(tn.AverageEmbeddingNet(40), ids, y[:-1], ids, y, epochs=1, log=None)


def test_length_grouped_batches_cover_every_row_once_with_less_padding():
    ids, _ = _toy_task(1000)
    g = torch.Generator().manual_seed(0)
    grouped = tn.length_grouped_batches(ids, 64, g)
    assert sorted(torch.cat(grouped).tolist()) == list(range(1000))
    several_pools = tn.length_grouped_batches(ids, 4, g)  # pools of 50 batches: 200 rows each
    assert sorted(torch.cat(several_pools).tolist()) == list(range(1000))
    lengths = (ids != tn.PAD).sum(1)

    def padded_tokens(batches):
        return sum(int(lengths[b].max()) * len(b) for b in batches)

    plain = torch.randperm(1000, generator=g).split(64)
    assert padded_tokens(grouped) < 0.8 * padded_tokens(plain)


def test_length_grouped_batches_depend_only_on_the_generator_and_pool_50_batches():
    ids, _ = _toy_task(300)
    torch.manual_seed(1)
    first = tn.length_grouped_batches(ids, 4, torch.Generator().manual_seed(0))
    torch.manual_seed(2)
    again = tn.length_grouped_batches(ids, 4, torch.Generator().manual_seed(0), pool=50)
    assert [b.tolist() for b in first] == [b.tolist() for b in again]


def test_length_grouped_batches_of_tickets_of_one_length_are_a_plain_shuffle():
    """The sort by length is stable: it leaves tickets of the same length in their shuffled order."""
    ids = torch.full((100, 6), 9)
    grouped = tn.length_grouped_batches(ids, 10, torch.Generator().manual_seed(0))
    plain = torch.randperm(100, generator=torch.Generator().manual_seed(0)).split(10)
    assert sorted(b.tolist() for b in grouped) == sorted(b.tolist() for b in plain)


def test_evaluate_reads_the_rows_in_batches_of_batch_size():
    ids, y = _toy_task(300)
    model = _Recorder()
    tn.evaluate(model, ids, y)
    assert model.evaluated == [256, 44]
    model.evaluated.clear()
    tn.evaluate(model, ids, y, batch_size=100)
    assert model.evaluated == [100, 100, 100]


@pytest.mark.parametrize("fast_path", [None, False, True])  # None: predict's default
@pytest.mark.parametrize("was", [False, True])
def test_predict_runs_the_fused_layer_op_only_when_asked_and_leaves_the_switch_as_it_found_it(fast_path, was):
    """bench/inference.py measured the fused op slower at batch 256, with the same predictions."""
    model = tn.TinyTransformer(50).eval()
    ids = torch.tensor([[5, 6, 7, tn.PAD], [5, 6, 7, 8]])
    asked = {} if fast_path is None else {"fast_path": fast_path}
    torch.backends.mha.set_fastpath_enabled(was)
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            scores = tn.predict(model, ids, **asked)
        assert torch.backends.mha.get_fastpath_enabled() is was
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
    fused = any(event.key == "aten::_transformer_encoder_layer_fwd" for event in prof.key_averages())
    assert fused is bool(fast_path)
    assert torch.allclose(scores, tn.predict(model, ids, fast_path=not fast_path), atol=1e-5)


def test_evaluate_and_predict_keep_the_order_of_the_rows():
    ids, y = _toy_task(100)
    model = tn.AverageEmbeddingNet(40)
    scores = tn.predict(model, ids, batch_size=7)
    with torch.no_grad():
        assert torch.allclose(scores, model.eval()(ids), atol=1e-6)
    loss, acc = tn.evaluate(model, ids, y)
    assert acc == (scores.argmax(1) == y).float().mean().item()
    assert loss == pytest.approx(nn.functional.cross_entropy(scores, y).item(), rel=1e-5)


# --- Banking77 -------------------------------------------------------------------------------

def test_banking77_loads_the_shared_copy(banking77_dir):
    data = tn.load_banking77(banking77_dir)
    assert (len(data.train), len(data.test), len(data.intents)) == (10_003, 3_080, 77)
    assert set(data.train[0]) == {"text", "category"}
    assert any("\n" in row["text"] for row in data.train + data.test)  # quoted newlines survive


@pytest.mark.parametrize("root", [None, ""], ids=["no root", "an empty variable"])
def test_banking77_downloads_at_the_pinned_address_and_verifies(banking77_dir, tmp_path, monkeypatch, root):
    monkeypatch.setattr(tn, "BANKING77_URL", banking77_dir.as_uri() + "/{name}")
    monkeypatch.setenv("TICKETNET_CACHE", str(tmp_path))
    data = tn.load_banking77(root)
    assert len(data.train) == 10_003
    assert (tmp_path / "banking77" / "test.csv").is_file()



def test_banking77_is_read_as_utf8_whatever_the_locale(banking77_dir, ascii_locale):
    expected = tn.load_banking77(banking77_dir)
    with ascii_locale():
        assert tn.load_banking77(banking77_dir) == expected


def test_banking77_downloads_into_the_home_cache_when_no_cache_is_set(banking77_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(tn, "BANKING77_URL", banking77_dir.as_uri() + "/{name}")
    monkeypatch.delenv("TICKETNET_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    tn.load_banking77()
    assert sorted(p.name for p in (tmp_path / ".cache" / "ticketnet" / "banking77").iterdir()) == \
        ["test.csv", "train.csv"]


def test_banking77_download_makes_the_cache_folder_and_then_reads_from_it(banking77_dir, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(tn, "BANKING77_URL", banking77_dir.as_uri() + "/{name}")
    monkeypatch.setenv("TICKETNET_CACHE", str(tmp_path / "not" / "made" / "yet"))
    tn.load_banking77()
    monkeypatch.setattr(tn, "BANKING77_URL", (tmp_path / "nowhere").as_uri() + "/{name}")
    assert len(tn.load_banking77().test) == 3_080  # the second time without a download


def test_banking77_download_fetches_only_missing_or_damaged_files_and_waits_30_s(banking77_dir, tmp_path,
                                                                               monkeypatch):
    folder = tmp_path / "banking77"
    folder.mkdir()
    shutil.copy(banking77_dir / "train.csv", folder)  # verified: kept
    (folder / "test.csv").write_text("half a file")  # damaged: fetched again
    fetched = []

    @contextmanager
    def urlopen(url, timeout=None):
        fetched.append((url, timeout))
        yield io.BytesIO((banking77_dir / url.rsplit("/", 1)[1]).read_bytes())

    monkeypatch.setattr(tn.urllib.request, "urlopen", urlopen)
    monkeypatch.setenv("TICKETNET_CACHE", str(tmp_path))
    assert len(tn.load_banking77().test) == 3_080
    assert fetched == [(tn.BANKING77_URL.format(name="test.csv"), 30)]  # a silent server is left after 30 s
    assert sorted(p.name for p in folder.iterdir()) == ["test.csv", "train.csv"]


def test_banking77_download_failure_says_what_to_do(tmp_path, monkeypatch):
    url = (tmp_path / "nowhere").as_uri() + "/{name}"
    monkeypatch.setattr(tn, "BANKING77_URL", url)
    monkeypatch.setenv("TICKETNET_CACHE", str(tmp_path))
    with pytest.raises(tn.DataError) as error:
        tn.load_banking77()
    message = str(error.value)
    assert message.startswith(f"could not download Banking77's train.csv from {url.format(name='train.csv')}")
    assert message.endswith("). Without internet (on Kaggle: Settings > Internet on), download train.csv and "
                            "test.csv by hand and call load_banking77(root='that folder'), or set "
                            "BANKING77_DIR to that folder for the notebooks")


def test_banking77_corrupted_copy_is_refused_naming_the_file(banking77_dir, tmp_path):
    for name in ("train.csv", "test.csv"):
        shutil.copy(banking77_dir / name, tmp_path / name)
    data = (tmp_path / "test.csv").read_bytes()
    (tmp_path / "test.csv").write_bytes(data.replace(b"card", b"cart", 1))
    actual = hashlib.sha256((tmp_path / "test.csv").read_bytes()).hexdigest()
    pinned = tn.BANKING77_SHA256["test.csv"]
    assert actual != pinned
    with pytest.raises(tn.DataError, match=rf"test\.csv: SHA-256 {actual[:12]}\.\.\. differs from the pinned "
                                           rf"{pinned[:12]}\.\.\.; the file is damaged or another version\. "
                                           r"Delete it and load again\.$"):
        tn.load_banking77(tmp_path)


def test_banking77_missing_folder_is_refused(tmp_path):
    with pytest.raises(tn.DataError, match=r"train\.csv: no such file; load_banking77\(root\) needs a folder "
                                           r"with train\.csv and test\.csv, or no root to download them$"):
        tn.load_banking77(tmp_path)


def test_train_valid_split_is_fixed_by_the_seed_and_disjoint():
    rows = [{"text": str(i)} for i in range(100)]
    train, valid = tn.train_valid_split(rows, 20, seed=0)
    assert (len(train), len(valid)) == (80, 20)
    assert {r["text"] for r in train}.isdisjoint(r["text"] for r in valid)
    assert tn.train_valid_split(rows, 20, seed=0) == (train, valid)
    assert tn.train_valid_split(rows, 20, seed=1) != (train, valid)
    assert tn.train_valid_split(rows, 20) == (train, valid)  # seed 0 unless told


@pytest.mark.parametrize("size", [1, 99])
def test_train_valid_split_takes_one_to_all_but_one_row(size):
    rows = [{"text": str(i)} for i in range(100)]
    assert [len(part) for part in tn.train_valid_split(rows, size)] == [100 - size, size]


@pytest.mark.parametrize("size", [0, 100])
def test_train_valid_split_refuses_an_empty_part_naming_the_range(size):
    with pytest.raises(ValueError, match=rf"^valid_size must be between 1 and 99, got {size}$"):
        tn.train_valid_split([{"text": str(i)} for i in range(100)], size)


# --- plots -----------------------------------------------------------------------------------

@pytest.fixture
def plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    yield plt
    plt.close("all")


def test_plot_curves_draws_each_run_against_its_epochs_and_grey_dashed_reference_lines(plt):
    from matplotlib.colors import same_color
    histories = {"tiny": [{"epoch": e, "valid_loss": 1 / e} for e in (1, 2, 3)],
                 "bag": [{"epoch": e, "valid_loss": 2 / e} for e in (1, 2)]}
    ax = tn.plot_curves(histories, key="valid_loss", lines={"tf-idf": 0.4}, title="Validation loss")
    tiny, bag, tfidf = ax.lines
    assert (list(tiny.get_xdata()), list(tiny.get_ydata())) == ([1, 2, 3], [1, 1 / 2, 1 / 3])
    assert (list(bag.get_xdata()), list(bag.get_ydata())) == ([1, 2], [2, 1])
    assert tiny.get_marker() == bag.get_marker() == "."  # a dot per measured epoch
    assert list(tfidf.get_ydata()) == [0.4, 0.4] and tfidf.get_linestyle() == "--"
    assert same_color(tfidf.get_color(), "grey")
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["tiny", "bag", "tf-idf"]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("epoch", "valid loss", "Validation loss")
    assert list(ax.figure.get_size_inches()) == [7, 4]


def test_plot_accuracies_draws_a_bar_per_model_labelled_with_its_percentage(plt):
    ax = tn.plot_accuracies({"tiny": 0.9, "bag": 0.875}, title="Test accuracy")
    ax.figure.canvas.draw()
    assert [label.get_text() for label in ax.get_xticklabels()] == ["tiny", "bag"]
    assert [round(bar.get_height(), 6) for bar in ax.patches] == [90.0, 87.5]
    assert [text.get_text() for text in ax.texts] == ["90.0%", "87.5%"]
    assert ax.get_ylim() == (0, 105)  # room above a full bar for its label
    assert tn.plot_accuracies({"untrained": 0.0}).get_ylim() == (0, 105)  # the axis starts at 0% even then
    assert (ax.get_ylabel(), ax.get_title()) == ("accuracy (%)", "Test accuracy")
    assert list(ax.figure.get_size_inches()) == [7, 4]


def test_plots_draw_into_a_given_axes_and_leave_out_a_missing_title(plt):
    ax = plt.subplots()[1]
    assert tn.plot_curves({"a": [{"epoch": 1, "valid_acc": 0.5}]}, ax=ax) is ax
    assert tn.plot_accuracies({"a": 0.5}, ax=plt.subplots()[1]).get_title() == ax.get_title() == ""


# --- parts from earlier notebooks ------------------------------------------------------------

def _notebook(folder, section, *cells):
    """folder/section/section.ipynb with these code cells."""
    import nbformat
    path = folder / section / f"{section}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    return path


EARLIER = (
    "%matplotlib inline",  # IPython syntax: skipped, never run
    "import math\nfrom torch import nn\nimport torch.nn.functional as F",
    "WIDTH = 4\nrows = open('a file that does not exist').read()  # data: never run",
    'def helper(x):\n    ### BEGIN SOLUTION\n    return F.relu(x) * WIDTH\n    ### END SOLUTION',
    "def helper(x):  # the student's second try: the one the notebook runs last\n    return F.relu(x) * WIDTH + 1",
    "class Part(nn.Module):\n    def forward(self, x):\n        return helper(x) + math.pi",
    "def unrelated():\n    return undefined_name",
    "raise SystemExit('a cell that must never run')",
)


def test_part_source_holds_what_the_names_need_in_notebook_order_and_nothing_else(tmp_path):
    source = tn.part_source(_notebook(tmp_path, "01-heads", *EARLIER), ["Part"])
    assert source == ("import math\n\nfrom torch import nn\n\nimport torch.nn.functional as F\n\nWIDTH = 4\n\n"
                      "def helper(x):  # the student's second try: the one the notebook runs last\n"
                      "    return F.relu(x) * WIDTH + 1\n\n"
                      "class Part(nn.Module):\n    def forward(self, x):\n        return helper(x) + math.pi\n")
    # a decorator's line and what it reads, a dotted import, and a name read by the first of two methods
    later = _notebook(tmp_path, "02-positions", "import torch.nn.functional\nimport functools", "SIZE = 3",
                      "@functools.lru_cache(maxsize=None)\ndef cached(x):\n    return x",
                      "class Two:\n    def __init__(self):\n        self.size = SIZE\n\n"
                      "    def forward(self, x):\n        return torch.nn.functional.relu(cached(x))")
    assert tn.part_source(later, ["Two"]) == (
        "import torch.nn.functional\n\nimport functools\n\nSIZE = 3\n\n"
        "@functools.lru_cache(maxsize=None)\ndef cached(x):\n    return x\n\n"
        "class Two:\n    def __init__(self):\n        self.size = SIZE\n\n"
        "    def forward(self, x):\n        return torch.nn.functional.relu(cached(x))\n")


def test_nbgrader_markers_are_left_out_of_the_parts(tmp_path):
    source = tn.part_source(_notebook(tmp_path, "01-heads", *EARLIER[:4]), ["helper"])
    assert "### " not in source and "return F.relu(x) * WIDTH\n" in source


def test_load_parts_runs_the_students_own_definitions_from_the_folder_above(tmp_path, monkeypatch):
    _notebook(tmp_path, "01-heads", *EARLIER)
    (tmp_path / "05-block").mkdir()
    monkeypatch.chdir(tmp_path / "05-block")
    Part, helper = tn.load_parts("01-heads", "Part", "helper")
    assert Part()(torch.tensor([-1.0, 2.0])).tolist() == pytest.approx([1 + math.pi, 9 + math.pi])
    assert helper(torch.tensor(1.0)).item() == 5.0
    assert Part.__module__ == "__main__"  # pickled by name, as a class of the notebook would be
    assert tn.load_parts("01-heads", "WIDTH", folder=tmp_path) == 4


def test_a_traceback_through_a_part_shows_the_line_of_the_part(tmp_path):
    import traceback
    _notebook(tmp_path, "01-heads", "def broken(x):\n    return x / 0")
    broken = tn.load_parts("01-heads", "broken", folder=tmp_path)
    with pytest.raises(ZeroDivisionError) as caught:
        broken(1)
    assert "return x / 0" in "".join(traceback.format_tb(caught.tb))
    import linecache  # the lines kept for tracebacks end as a file's lines do
    assert linecache.getline(caught.tb.tb_next.tb_frame.f_code.co_filename, 2) == "    return x / 0\n"


def test_a_missing_notebook_says_to_paste_the_parts_instead(tmp_path):
    with pytest.raises(tn.PartError) as caught:
        tn.load_parts("01-heads", "MultiHead", "split_heads", folder=tmp_path)
    assert str(caught.value) == (
        f"no notebook {(tmp_path / '01-heads' / '01-heads.ipynb').resolve()}: this cell reads your MultiHead, "
        "split_heads from your own 01-heads notebook, kept in the course's folder. On Colab or Kaggle, or "
        "with the notebook elsewhere, paste your code of MultiHead, split_heads (with the functions it uses) "
        "into this cell instead of the load_parts line.")


@pytest.mark.parametrize("name", ["Missing", "rows", "unrelated"], ids=["never defined", "data, not a constant",
                                                                          "reads a name never defined"])
def test_a_name_the_notebook_does_not_define_is_named(tmp_path, name):
    notebook = _notebook(tmp_path, "01-heads", *EARLIER)
    missing = "undefined_name" if name == "unrelated" else name
    with pytest.raises(tn.PartError) as caught:
        tn.part_source(notebook, [name])
    assert str(caught.value) == f"01-heads.ipynb defines no `{missing}` in a top-level def, class, import or constant"


def test_an_unwritten_part_says_where_to_write_it(tmp_path):
    _notebook(tmp_path, "01-heads", "def helper(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()",
              "def other(x):\n    return x")
    with pytest.raises(tn.PartError) as caught:
        tn.load_parts("01-heads", "helper", "other", folder=tmp_path)
    assert str(caught.value) == (
        "your helper, other in 01-heads.ipynb is not written yet (its code still raises NotImplementedError): "
        "write it in 01-heads first and save that notebook, or paste a working version into this cell")


def test_parts_that_load_earlier_parts_bring_their_code_along(tmp_path):
    _notebook(tmp_path, "01-heads", "def inner(x):\n    return x + 1")
    _notebook(tmp_path, "05-block", "from ticketnet import load_parts", 'inner = load_parts("01-heads", "inner")',
              "def outer(x):\n    return inner(x) * 2")
    source = tn.part_source(tmp_path / "05-block" / "05-block.ipynb", ["outer"])
    assert "load_parts" not in source
    (tmp_path / "01-heads" / "01-heads.ipynb").unlink()  # the code reads no notebook when it runs
    outer = tn.run_parts(source, ("outer",), "test")
    assert outer(1) == 4
    import traceback
    with pytest.raises(TypeError) as caught:
        outer("a")  # fails inside the inner part: its traceback names the notebook it came from
    assert traceback.extract_tb(caught.tb)[-1].filename == "01-heads (parts)"
