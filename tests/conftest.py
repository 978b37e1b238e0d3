"""Shared fixtures. All test data lives in the repo (tests/data), never in ../shared."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paths import NSYS_TRACES, SEED  # noqa: E402

# Tests never touch the user's real cache folder.
os.environ["TRACEDASH_CACHE_DIR"] = tempfile.mkdtemp(prefix="tracedash-test-cache-")


@pytest.fixture(scope="session")
def seed_dict() -> dict:
    return json.loads(SEED.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def loaded_traces():
    """Every shared nsys trace loaded once: {stem: LoadedTrace}."""
    from dashboard.trace import load_trace

    return {p.stem: load_trace(p) for p in NSYS_TRACES}
