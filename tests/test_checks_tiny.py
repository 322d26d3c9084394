"""Section 6 beyond its catalogue: the tuning script behind the notebook's tuning table, the
script that trains the notebook's model with and without its position table (part 3.3), and the
results files the notebook reads."""

import csv
import importlib.util
from pathlib import Path

import pytest
import torch

import ticketnet as tn

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("tuning", ROOT / "bench" / "tuning.py")
tuning = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tuning)
spec = importlib.util.spec_from_file_location("positions", ROOT / "bench" / "positions.py")
positions = importlib.util.module_from_spec(spec)
spec.loader.exec_module(positions)


def test_the_grid_is_eight_settings_with_the_notebooks_own_first():
    grid = tuning.settings()
    assert len(set(grid)) == 8
    assert {b for b, _, _ in grid} == {1, 2} and {d for _, d, _ in grid} == {0.1, 0.3}
    assert {lr for _, _, lr in grid} == {5e-4, 1e-3}
    assert grid[0] == (2, 0.1, 1e-3), "the notebook trains 2 blocks, dropout 0.1, lr 1e-3"


def test_quick_run_trains_every_setting_reads_no_test_split_and_writes_nothing(monkeypatch, tmp_path):
    read, trained = [], []
    load = tn.load_split
    monkeypatch.setattr(tn, "load_split", lambda path: read.append(Path(path).name) or load(path))

    def fake_train(model, *data, epochs, lr, batch_size, seed, log):
        trained.append((len(model.blocks.layers), model.blocks.layers[0].dropout1.p, lr, len(data[0])))
        return [{"epoch": e, "train_loss": 1.0, "train_acc": 0.5, "valid_loss": 1.0 / e, "valid_acc": 0.5}
                for e in range(1, epochs + 1)]

    monkeypatch.setattr(tn, "train", fake_train)
    monkeypatch.chdir(tmp_path)
    rows = tuning.main(["--quick"])
    assert "test.csv" not in read and set(read) == {"train.csv", "valid.csv"}
    assert [(b, d, lr) for b, d, lr, _ in trained] == tuning.settings()
    assert {n for *_, n in trained} == {128}
    assert len(rows) == 8 and set(rows[0]) == set(tuning.COLUMNS)
    assert not list(tmp_path.iterdir())


def _committed(path, command):
    """The rows of a committed results CSV, or a failure that says how to make it."""
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: run {command}")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def results():
    return _committed(tuning.RESULTS, "python bench/tuning.py --jobs 2 --threads 1")


def test_committed_results_hold_every_epoch_of_every_setting(results):
    assert tuple(results[0]) == tuning.COLUMNS
    runs = {}
    for row in results:
        runs.setdefault((int(row["blocks"]), float(row["dropout"]), float(row["lr"])), []).append(row)
    assert list(runs) == tuning.settings()
    epochs = {tuple(int(r["epoch"]) for r in rows) for rows in runs.values()}
    assert len(epochs) == 1 and next(iter(epochs)) == tuple(range(1, len(next(iter(epochs))) + 1))
    assert all(0 <= float(r["valid_acc"]) <= 1 and 0 <= float(r["train_acc"]) <= 1 for r in results)


def test_committed_parameter_counts_are_those_of_the_models(results):
    vocab = tn.Vocab([row["text"] for row in tn.load_split(tn.DATA / "train.csv")])
    for blocks in (1, 2):
        counted = tn.count_parameters(tn.TinyTransformer(len(vocab), blocks=blocks))
        assert {int(r["parameters"]) for r in results if int(r["blocks"]) == blocks} == {counted}


# ---------------------------------------------------------------------------------------------
# bench/positions.py: word order measured on its own
# ---------------------------------------------------------------------------------------------

def test_both_scripts_share_one_command_line():
    quick = tuning.options("doc", positions.RESULTS, ["--quick", "--jobs", "2"])
    assert (quick.epochs, quick.limit, quick.out, quick.jobs, quick.threads) == (1, 128, None, 2, 1)
    full = tuning.options("doc", positions.RESULTS, ["--epochs", "3"])
    assert (full.epochs, full.limit, full.out) == (3, None, positions.RESULTS)
    assert tuning.options("doc", tuning.RESULTS, []).out == tuning.RESULTS
    assert tuning.options("doc", tuning.RESULTS, ["--quick", "--out", "x.csv"]).out == Path("x.csv")


def test_the_run_with_the_table_is_tunings_first_setting_and_the_other_differs_only_by_the_table():
    assert positions.SETTING == tuning.settings()[0] == (2, 0.1, 1e-3)
    blocks, dropout, _ = tuning.settings()[0]
    tn.set_seed(0)
    as_tuning = tn.TinyTransformer(50, blocks=blocks, dropout=dropout).state_dict()
    learned, none = positions.model("learned", 50), positions.model("none", 50)
    for name, weight in as_tuning.items():
        assert torch.equal(learned.state_dict()[name], weight), name
        if name != "position.weight":
            assert torch.equal(none.state_dict()[name], weight), f"{name} starts elsewhere without the table"
    assert not none.position.weight.any() and not none.position.weight.requires_grad
    assert learned.position.weight.requires_grad and learned.position.weight.norm(dim=1).mean() > 7
    with pytest.raises(ValueError, match="positions must be one of"):
        positions.model("sinusoid", 50)


def test_the_run_with_the_table_trains_exactly_as_tuning_trains_its_first_setting():
    _, valid_rows, vocab, data = tuning.larkfield(64)
    styles = [row["style"] for row in valid_rows]
    ours = positions.run("learned", data, len(vocab), styles, epochs=2)
    theirs = tuning.run(*tuning.settings()[0], data, len(vocab), epochs=2)
    assert [{c: row[c] for c in tuning.COLUMNS} for row in ours] == theirs


def test_without_the_table_it_stays_zero_and_the_order_of_words_changes_nothing():
    _, valid_rows, vocab, data = tuning.larkfield(64)
    styles = [row["style"] for row in valid_rows]
    rows = positions.run("none", data, len(vocab), styles, epochs=1)
    assert rows[0]["position_norm"] == rows[0]["position_norm_start"] == 0
    assert rows[0]["trainable"] == rows[0]["parameters"] - tn.MAX_TOKENS * 64
    net = positions.model("none", len(vocab)).eval()
    ids = tn.token_ids(["the parcel has not arrived yet", "yet arrived not has parcel the"], vocab)
    with torch.no_grad():
        scores = net(ids)
    assert torch.allclose(scores[0], scores[1], atol=1e-5), "without positions a shuffled ticket must score the same"


def test_quick_run_writes_both_runs_with_their_best_epoch_and_reads_no_test_split(monkeypatch, tmp_path):
    read = []
    load = tn.load_split
    monkeypatch.setattr(tn, "load_split", lambda path: read.append(Path(path).name) or load(path))
    out = tmp_path / "positions.csv"
    positions.main(["--quick", "--out", str(out)])
    assert set(read) == {"train.csv", "valid.csv"}
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == positions.COLUMNS
    assert [r["positions"] for r in rows] == ["learned", "none"]  # 1 epoch each
    for row in rows:
        assert row["best"] == "True" and row["epoch"] == "1"
        assert sum(int(row[f"{s}_tickets"]) for s in positions.STYLES[:-1]) == int(row["all_tickets"]) == 128
        assert sum(int(row[f"{s}_right"]) for s in positions.STYLES[:-1]) == int(row["all_right"])
        assert int(row["all_right"]) == round(float(row["valid_acc"]) * 128)


def test_quick_run_writes_nothing_unless_told(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    rows = positions.main(["--quick"])
    assert len(rows) == 2 and not list(tmp_path.iterdir())


@pytest.fixture(scope="module")
def position_results():
    return _committed(positions.RESULTS, "python bench/positions.py --jobs 2")


def test_committed_position_runs_hold_every_epoch_and_their_best(position_results):
    assert tuple(position_results[0]) == positions.COLUMNS
    runs = {}
    for row in position_results:
        runs.setdefault(row["positions"], []).append(row)
    assert list(runs) == list(positions.RUNS)
    for name, rows in runs.items():
        assert [int(r["epoch"]) for r in rows] == list(range(1, len(rows) + 1))
        best = [r for r in rows if r["best"] == "True"]
        assert len(best) == 1 and best[0] == min(rows, key=lambda r: float(r["valid_loss"])), name
        best = best[0]
        assert int(best["all_tickets"]) == 600 and int(best["negation_tickets"]) == 70
        assert sum(int(best[f"{s}_right"]) for s in positions.STYLES[:-1]) == int(best["all_right"])
        assert int(best["all_right"]) == round(float(best["valid_acc"]) * 600)
    without = next(r for r in runs["none"] if r["best"] == "True")
    assert float(without["position_norm_start"]) == 0 == float(without["position_norm"])
    assert int(without["trainable"]) == int(without["parameters"]) - tn.MAX_TOKENS * 64


def test_committed_run_with_the_table_is_tunings_first_run(position_results, results):
    """Both files must come from one machine's runs of the same training (re-run both scripts)."""
    first = [r for r in results if (int(r["blocks"]), float(r["dropout"]), float(r["lr"])) == tuning.settings()[0]]
    learned = [r for r in position_results if r["positions"] == "learned"]
    assert len(first) == len(learned)
    for ours, theirs in zip(learned, first):
        assert ours["epoch"] == theirs["epoch"] and ours["parameters"] == theirs["parameters"]
        for column in tuning.COLUMNS[5:]:
            assert abs(float(ours[column]) - float(theirs[column])) <= 0.01, (ours["epoch"], column)
