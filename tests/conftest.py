"""Shared fixtures. All test data lives in the repo (tests/data), never in ../shared."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
NSYS_DIR = DATA / "nsys"
GOLDEN_DIR = DATA / "golden"
SEED = DATA / "seed_summary.json"
SAMPLES = ROOT / "sample_traces"
NSYS_TRACES = sorted(NSYS_DIR.glob("*.sqlite"))

sys.path.insert(0, str(TESTS))


def golden_summary(trace: Path) -> dict:
    """The reference summary of a shared nsys trace (tests/data/golden/<stem>.summary.json.gz)."""
    with gzip.open(GOLDEN_DIR / f"{trace.stem}.summary.json.gz", "rt", encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="session")
def seed_dict() -> dict:
    return json.loads(SEED.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def loaded_traces():
    """Every shared nsys trace loaded once: {stem: LoadedTrace}."""
    from dashboard.trace import load_trace

    return {p.stem: load_trace(p) for p in NSYS_TRACES}
