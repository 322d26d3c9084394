"""Section 6 beyond its catalogue: the tuning script behind the notebook's tuning table, and the
results file the notebook reads."""

import csv
import importlib.util
from pathlib import Path

import pytest

import ticketnet as tn

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("tuning", ROOT / "bench" / "tuning.py")
tuning = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tuning)


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
        trained.append((len(model.blocks.layers), model.blocks.layers[0].dropout.p, lr, len(data[0])))
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


@pytest.fixture(scope="module")
def results():
    path = tuning.RESULTS
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: run python bench/tuning.py --jobs 2 --threads 1")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


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
