"""Shared fixtures. All test data lives in the repo (tests/data), never in ../shared."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paths import NSYS_TRACES, SEED  # noqa: E402

# Tests never touch the user's real cache folder; the temporary one is removed at exit. Processes that
# import this file again (Dask workers unpickling test functions) reuse the folder they inherited.
if "TRACEDASH_CACHE_DIR" not in os.environ or not os.environ.get("TRACEDASH_TEST_CACHE_OWNER"):
    os.environ["TRACEDASH_CACHE_DIR"] = tempfile.mkdtemp(prefix="tracedash-test-cache-")
    os.environ["TRACEDASH_TEST_CACHE_OWNER"] = str(os.getpid())
if os.environ["TRACEDASH_TEST_CACHE_OWNER"] == str(os.getpid()):
    atexit.register(shutil.rmtree, os.environ["TRACEDASH_CACHE_DIR"], True)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``long`` run first. pytest-xdist hands each worker a contiguous block of the collection, and
    the browser tests, collected first, run one after another on one worker: the longest of them, collected
    last, finished alone at the end of the run."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable: the rest keep their order


@pytest.fixture(scope="session")
def seed_dict() -> dict:
    return json.loads(SEED.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def loaded_traces():
    """Every shared nsys trace loaded once: {stem: LoadedTrace}."""
    from dashboard.data.trace import load_trace

    return {p.stem: load_trace(p) for p in NSYS_TRACES}
