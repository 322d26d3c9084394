"""The course library: every public function, its bad inputs, and the facts the lessons quote."""

import hashlib
import shutil

import pytest
import torch
from torch import nn

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
    with pytest.raises(TypeError, match="string"):
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
    vocab = tn.Vocab(["b a a", "c b a"], min_count=1)
    assert vocab.itos[2:] == ["a", "b", "c"]


def test_vocab_encode_maps_unknown_words_to_unk_and_decode_skips_pads():
    vocab = tn.Vocab(TEXTS)
    ids = vocab.encode("my lamp, a lawnmower")
    assert ids == [vocab.stoi["my"], vocab.stoi["lamp"], tn.UNK, vocab.stoi["a"], tn.UNK]
    assert vocab.decode(ids + [tn.PAD, tn.PAD]) == "my lamp <unk> a <unk>"
    assert vocab.decode(torch.tensor(ids)) == vocab.decode(ids)


def test_vocab_refuses_a_single_string_and_a_bad_min_count():
    with pytest.raises(TypeError, match="list of texts"):
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


def test_token_ids_refuses_no_rows():
    with pytest.raises(ValueError, match="at least one row"):
        tn.token_ids([], tn.Vocab(TEXTS))


def test_labels_are_team_indices_and_unknown_teams_are_named():
    assert tn.labels(ROWS).tolist() == [0, 1, 2, 3, 4, 0]
    with pytest.raises(ValueError, match="garden"):
        tn.labels([{"team": "garden"}])
    assert tn.labels([{"category": "b"}], classes=("a", "b"), column="category").tolist() == [1]


# --- seeds and counts ------------------------------------------------------------------------

def test_set_seed_repeats_weights():
    tn.set_seed(3)
    a = nn.Linear(4, 4).weight.clone()
    tn.set_seed(3)
    assert torch.equal(a, nn.Linear(4, 4).weight)


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
    with pytest.raises(ValueError, match=r"\(batch, 1, 1, keys\)"):
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


def test_tfidf_router_fits_rows_and_scores_accuracy():
    router = tn.TfidfRouter().fit(ROWS * 3)
    assert router.score(ROWS) == 1.0
    assert router.predict(["my card was charged twice"]) == ["payment"]
    assert router.score(TEXTS, [r["team"] for r in ROWS]) == 1.0


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
    train_ids, train_y, valid_ids, valid_y = ids[:200], y[:200], ids[200:], 1 - y[200:].clamp(max=1)
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
    tn.train(tn.AverageEmbeddingNet(40), ids, y, ids, y, epochs=1, log="epochs")
    assert "'valid_acc'" in capsys.readouterr().out
    tn.train(tn.AverageEmbeddingNet(40), ids, y, ids, y, epochs=1, log=None)
    assert capsys.readouterr() == ("", "")


def test_train_refuses_ids_and_labels_of_different_lengths():
    ids, y = _toy_task(80)
    with pytest.raises(ValueError, match="differ in length"):
        tn.train(tn.AverageEmbeddingNet(40), ids, y[:-1], ids, y, epochs=1, log=None)


def test_length_grouped_batches_cover_every_row_once_with_less_padding():
    ids, _ = _toy_task(1000)
    g = torch.Generator().manual_seed(0)
    grouped = tn.length_grouped_batches(ids, 64, g)
    assert sorted(torch.cat(grouped).tolist()) == list(range(1000))
    lengths = (ids != tn.PAD).sum(1)

    def padded_tokens(batches):
        return sum(int(lengths[b].max()) * len(b) for b in batches)

    plain = torch.randperm(1000, generator=g).split(64)
    assert padded_tokens(grouped) < 0.8 * padded_tokens(plain)


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


def test_banking77_download_failure_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(tn, "BANKING77_URL", (tmp_path / "nowhere").as_uri() + "/{name}")
    monkeypatch.setenv("TICKETNET_CACHE", str(tmp_path))
    with pytest.raises(tn.DataError, match="could not download.*root=.*BANKING77_DIR"):
        tn.load_banking77()


def test_banking77_corrupted_copy_is_refused_naming_the_file(banking77_dir, tmp_path):
    for name in ("train.csv", "test.csv"):
        shutil.copy(banking77_dir / name, tmp_path / name)
    data = (tmp_path / "test.csv").read_bytes()
    (tmp_path / "test.csv").write_bytes(data.replace(b"card", b"cart", 1))
    assert hashlib.sha256((tmp_path / "test.csv").read_bytes()).hexdigest() != tn.BANKING77_SHA256["test.csv"]
    with pytest.raises(tn.DataError, match=r"test\.csv: SHA-256"):
        tn.load_banking77(tmp_path)


def test_banking77_missing_folder_is_refused(tmp_path):
    with pytest.raises(tn.DataError, match="no such file"):
        tn.load_banking77(tmp_path)


def test_train_valid_split_is_fixed_by_the_seed_and_disjoint():
    rows = [{"text": str(i)} for i in range(100)]
    train, valid = tn.train_valid_split(rows, 20, seed=0)
    assert (len(train), len(valid)) == (80, 20)
    assert {r["text"] for r in train}.isdisjoint(r["text"] for r in valid)
    assert tn.train_valid_split(rows, 20, seed=0) == (train, valid)
    assert tn.train_valid_split(rows, 20, seed=1) != (train, valid)
    with pytest.raises(ValueError, match="valid_size"):
        tn.train_valid_split(rows, 100)


# --- plots -----------------------------------------------------------------------------------

def test_plots_draw_one_line_per_run_and_one_bar_per_model():
    import matplotlib
    matplotlib.use("Agg")
    history = [{"epoch": e, "valid_acc": 0.5 + e / 10} for e in (1, 2, 3)]
    ax = tn.plot_curves({"a": history, "b": history}, lines={"linear": 0.9})
    assert len(ax.lines) == 3 and ax.get_legend() is not None
    ax = tn.plot_accuracies({"a": 0.9, "b": 0.95})
    assert [round(p.get_height(), 6) for p in ax.patches] == [90.0, 95.0]
