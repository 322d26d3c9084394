"""Shared fixtures: where the course and the shared Banking77 copy are."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def banking77_dir():
    """The read-only Banking77 copy beside the project (../shared/data/banking77), or $BANKING77_DIR."""
    folder = Path(os.environ.get("BANKING77_DIR", ROOT.parent / "shared" / "data" / "banking77"))
    if not (folder / "train.csv").is_file():
        pytest.fail(f"Banking77 copy not found at {folder}; set BANKING77_DIR to a folder with "
                    "train.csv and test.csv")
    return folder
