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


# A worker loads each trace file from its SQLite or JSON once: ~600 loads in a run are of ~30 files. Loads through
# ``load_trace`` (the tests' and the in-process servers') get a copy of the first load's frames (a bundle is a value:
# analysis never mutates it; the copy keeps a test that does from reaching another). Loaders called directly, loads
# with a progress callback or a kernel-times callback, and every load of a test that monkeypatches anything go to the
# file as before, so the loaders' own tests always read it.
_BUNDLES: dict[tuple, object] = {}


def _copied(bundle):
    import dataclasses

    import pandas as pd

    return dataclasses.replace(
        bundle,
        **{
            f.name: getattr(bundle, f.name).copy()
            for f in dataclasses.fields(bundle)
            if isinstance(getattr(bundle, f.name), pd.DataFrame)
        },
    )


def _shared_loads(loader, kind: str):
    def load(path, progress=None, *, on_kernel_times=None, **options):
        if progress is not None or on_kernel_times is not None:
            return loader(path, progress=progress, on_kernel_times=on_kernel_times, **options)
        p = Path(path)
        try:
            st = p.stat()
        except OSError:
            return loader(path, **options)
        key = (kind, str(p.resolve()), st.st_ino, st.st_size, st.st_mtime_ns, tuple(sorted(options.items())))
        if key not in _BUNDLES:
            if len(_BUNDLES) >= 48:
                _BUNDLES.clear()
            _BUNDLES[key] = loader(path, **options)
        return _copied(_BUNDLES[key])

    return load


@pytest.fixture(autouse=True)
def _one_read_per_trace_file(request):
    if "monkeypatch" in request.fixturenames:
        yield
        return
    import dashboard.data.trace as trace_module

    saved = trace_module.load_nsys_sqlite, trace_module.load_kineto_json
    trace_module.load_nsys_sqlite = _shared_loads(saved[0], "nsys")
    trace_module.load_kineto_json = _shared_loads(lambda path, **_: saved[1](path), "kineto")
    try:
        yield
    finally:
        trace_module.load_nsys_sqlite, trace_module.load_kineto_json = saved


@pytest.fixture(scope="session")
def seed_dict() -> dict:
    return json.loads(SEED.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def loaded_traces():
    """Every shared nsys trace loaded once: {stem: LoadedTrace}."""
    from dashboard.data.trace import load_trace

    return {p.stem: load_trace(p) for p in NSYS_TRACES}
