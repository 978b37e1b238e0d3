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
SAMPLES = ROOT / "sample_traces"
# The shared traces bundled as samples live only in sample_traces/ (one copy in the repository).
SEED = SAMPLES / "000_746bee52f7bbcc80_seed_summary.json"
NSYS_TRACES = sorted(
    [
        *NSYS_DIR.glob("*.sqlite"),
        SAMPLES / "nsys2022.4_cpu_llm_server_nvtx.sqlite",
        SAMPLES / "nsys2026.2_2gpu_nccl_before.sqlite",
    ],
    key=lambda p: p.name,
)


def nsys_trace(name: str) -> Path:
    """One of the shared nsys traces by file name: tests/data/nsys/, or sample_traces/ for the bundled ones."""
    return next(p for p in NSYS_TRACES if p.name == name)


def golden_summary(trace: Path) -> dict:
    """The reference summary of a shared nsys trace (tests/data/golden/<stem>.summary.json.gz)."""
    with gzip.open(GOLDEN_DIR / f"{trace.stem}.summary.json.gz", "rt", encoding="utf-8") as fh:
        return json.load(fh)
