"""Where the test data lives (all inside the repo, never in ../shared)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
NSYS_DIR = DATA / "nsys"
GOLDEN_DIR = DATA / "golden"
SEED = DATA / "seed_summary.json"
SAMPLES = ROOT / "sample_traces"
NSYS_TRACES = sorted(NSYS_DIR.glob("*.sqlite"))


def golden_summary(trace: Path) -> dict:
    """The reference summary of a shared nsys trace (tests/data/golden/<stem>.summary.json.gz)."""
    with gzip.open(GOLDEN_DIR / f"{trace.stem}.summary.json.gz", "rt", encoding="utf-8") as fh:
        return json.load(fh)
