"""The columnar cache: hits, staleness, corruption, unwritable folders, CLI commands."""

import json
import os
import shutil

import pandas as pd
import pytest

from dashboard import cli
from dashboard.data.cache import FRAME_NAMES, TraceCache, file_identity
from dashboard.loaders import load_nsys_sqlite

from paths import SAMPLES, nsys_trace

TRACE = nsys_trace("nsys2024.6_h100_nvfuser.sqlite")


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "in" / TRACE.name
    p.parent.mkdir()
    shutil.copy(TRACE, p)
    return p


def assert_same(a, b):
    assert a.meta == b.meta
    for name in FRAME_NAMES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)


def test_row_accounts_survive_the_cache(trace, tmp_path):
    from dataclasses import replace

    from dashboard.model import RowAccount

    accounts = (
        RowAccount("kernels", read=10, loaded=7, skipped=(("end before start", 2),), unrecognised=1),
        RowAccount("CUDA API calls", read=4, loaded=4),
    )

    def build(p):
        bundle = load_nsys_sqlite(p)
        return replace(bundle, meta=replace(bundle.meta, accounts=accounts))

    cache = TraceCache(tmp_path / "c")
    first, _ = cache.load_bundle(trace, build)
    second, hit = cache.load_bundle(trace, lambda p: pytest.fail("should not rebuild"))
    assert hit and second.meta.accounts == accounts
    assert second.meta.accounts[0].skipped_total == 2
    assert_same(first, second)


def test_second_load_is_served_from_cache(trace, tmp_path):
    cache = TraceCache(tmp_path / "c")
    first, hit1 = cache.load_bundle(trace, load_nsys_sqlite)
    second, hit2 = cache.load_bundle(trace, lambda p: pytest.fail("should not rebuild"))
    assert (hit1, hit2) == (False, True)
    assert_same(first, second)
    entries = list(cache.entries_dir.iterdir())
    assert [e.name for e in entries] == [file_identity(trace)]
    assert sorted(f.name for f in entries[0].iterdir()) == sorted([f"{n}.parquet" for n in FRAME_NAMES] + ["meta.json"])


def test_changed_file_gets_a_new_key(trace, tmp_path):
    key = file_identity(trace)
    os.utime(trace, ns=(1, 1))
    assert file_identity(trace) != key


def test_corrupt_entry_is_rebuilt_not_trusted(trace, tmp_path):
    cache = TraceCache(tmp_path / "c")
    good, _ = cache.load_bundle(trace, load_nsys_sqlite)
    entry = cache.entries_dir / file_identity(trace)
    (entry / "kernels.parquet").write_bytes(b"PAR1 garbage")
    again, hit = cache.load_bundle(trace, load_nsys_sqlite)
    assert hit is False
    assert_same(good, again)
    assert cache.load_bundle(trace, load_nsys_sqlite)[1] is True  # rewritten


def test_partial_entry_without_meta_is_rebuilt(trace, tmp_path):
    cache = TraceCache(tmp_path / "c")
    entry = cache.entries_dir / file_identity(trace)
    entry.mkdir(parents=True)
    (entry / "kernels.parquet").write_bytes(b"")
    bundle, hit = cache.load_bundle(trace, load_nsys_sqlite)
    assert hit is False and len(bundle.kernels) == 19


def test_unwritable_cache_degrades_with_one_warning(trace, tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")  # a file where the cache folder should be: mkdir fails (even as root)
    cache = TraceCache(blocker / "cache")
    with pytest.warns(RuntimeWarning, match="cache disabled"):
        bundle, hit = cache.load_bundle(trace, load_nsys_sqlite)
    assert hit is False and len(bundle.kernels) == 19 and cache.enabled is False
    bundle2, hit2 = cache.load_bundle(trace, load_nsys_sqlite)  # no second warning, still works
    assert hit2 is False


def test_disabled_cache_writes_nothing(trace, tmp_path):
    cache = TraceCache(tmp_path / "c", enabled=False)
    cache.load_bundle(trace, load_nsys_sqlite)
    cache.store_summary_text(trace, "CG", "{}")
    assert not (tmp_path / "c").exists()


def test_cli_summarize_warm_uses_cached_output(trace, tmp_path, capsys, monkeypatch):
    args = ["summarize", str(trace), "--cache-dir", str(tmp_path / "c")]
    assert cli.main(args) == 0
    cold = capsys.readouterr().out
    import dashboard.data.multirank

    monkeypatch.setattr(dashboard.data.multirank, "load_trace", lambda *a, **k: pytest.fail("warm run must not load"))
    assert cli.main(args) == 0
    assert capsys.readouterr().out == cold
    assert json.loads(cold)["kernel_count"] == 19
    with pytest.raises(pytest.fail.Exception):  # another prefix is a miss: it must load
        cli.main([*args, "--dispatch-prefix", "X"])


def test_a_file_being_written_is_refused_even_when_cached(trace, tmp_path, capsys):
    import shutil

    own = tmp_path / trace.name
    shutil.copy(trace, own)
    args = ["summarize", str(own), "--cache-dir", str(tmp_path / "c")]
    assert cli.main(args) == 0  # now cached
    capsys.readouterr()
    (tmp_path / (own.name + "-wal")).write_bytes(b"\0" * 4096)  # a writer's committed pages, not yet in the file
    assert cli.main(args) == 2
    assert "another program is writing this SQLite file" in capsys.readouterr().err


def test_cli_no_cache_and_clear(trace, tmp_path, capsys):
    c = tmp_path / "c"
    assert cli.main(["summarize", str(trace), "--cache-dir", str(c), "--no-cache"]) == 0
    assert not c.exists()
    assert cli.main(["summarize", str(trace), "--cache-dir", str(c)]) == 0
    capsys.readouterr()
    assert cli.main(["cache", "info", "--cache-dir", str(c)]) == 0
    assert "1 cached trace(s)" in capsys.readouterr().out
    assert cli.main(["cache", "clear", "--cache-dir", str(c)]) == 0
    assert "removed 1 cached trace(s)" in capsys.readouterr().out
    assert not any(c.rglob("*.parquet"))


def test_trace_file_untouched_by_caching(trace, tmp_path):
    before = (trace.read_bytes(), os.stat(trace).st_mtime_ns)
    TraceCache(tmp_path / "c").load_bundle(trace, load_nsys_sqlite)
    assert (trace.read_bytes(), os.stat(trace).st_mtime_ns) == before
    assert [p.name for p in trace.parent.iterdir()] == [trace.name]


def test_clear_never_touches_other_folders(trace, tmp_path, capsys):
    c = tmp_path / "c"
    (c / "videos").mkdir(parents=True)
    (c / "videos" / "keep.txt").write_text("x")
    (c / "v2data").mkdir()
    assert cli.main(["summarize", str(trace), "--cache-dir", str(c)]) == 0
    assert cli.main(["cache", "clear", "--cache-dir", str(c)]) == 0
    assert "removed 1 cached trace(s)" in capsys.readouterr().out
    assert (c / "videos" / "keep.txt").read_text() == "x" and (c / "v2data").is_dir()


def test_damaged_summary_or_frames_are_recomputed(trace, tmp_path, capsys):
    c = tmp_path / "c"
    TraceCache(c).load_bundle(trace, load_nsys_sqlite)  # frames cached, as the dashboard does
    args = ["summarize", str(trace), "--cache-dir", str(c)]
    assert cli.main(args) == 0
    good = capsys.readouterr().out
    summary_file = next(c.rglob("summary-*.json"))
    stored = json.loads(summary_file.read_text())
    summary_file.write_text(json.dumps({"sha256": stored["sha256"], "text": "{}"}))
    assert cli.main(args) == 0 and capsys.readouterr().out == good
    # flip bytes inside a cached frame, and drop the cached summary so the frames are read
    for f in c.rglob("summary-*.json"):
        f.unlink()
    parquet = next(c.rglob("kernels.parquet"))
    data = bytearray(parquet.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 16] = b"\x7f" * 16
    parquet.write_bytes(bytes(data))
    assert cli.main(args) == 0 and capsys.readouterr().out == good


def test_broken_pipe_is_not_an_error(trace, tmp_path):
    import subprocess
    import sys

    proc = subprocess.run(
        f"{sys.executable} -m dashboard summarize '{trace}' --no-cache | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout == '{\n  "file"' and "error" not in proc.stderr


def test_summarize_reuses_frames_the_dashboard_cached(trace, tmp_path, capsys, monkeypatch):
    c = tmp_path / "c"
    TraceCache(c).load_bundle(trace, load_nsys_sqlite)
    from dashboard.loaders import nsys_sqlite

    monkeypatch.setattr(nsys_sqlite, "load_nsys_sqlite", lambda *a, **k: pytest.fail("must use the cache"))
    import dashboard.data.trace

    monkeypatch.setattr(dashboard.data.trace, "load_nsys_sqlite", lambda *a, **k: pytest.fail("must use the cache"))
    assert cli.main(["summarize", str(trace), "--cache-dir", str(c)]) == 0
    assert json.loads(capsys.readouterr().out)["kernel_count"] == 19


@pytest.mark.parametrize(
    "src",
    [SAMPLES / "generated_seed_shaped_108k.sqlite", nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite"), TRACE],
    ids=lambda p: p.stem,
)
def test_a_cached_load_gives_back_the_frames_of_a_fresh_one_index_included(src, tmp_path):
    """NVTX rows that are not ranges or marks (metadata, unusable times) once left gaps in the fresh frames' index,
    which the cache gave back as 0, 1, 2, ...: now both are row positions."""
    cache = TraceCache(tmp_path / "cache")
    fresh, from_cache = cache.load_bundle(src, load_nsys_sqlite)
    again, again_from_cache = cache.load_bundle(src, load_nsys_sqlite)
    assert (from_cache, again_from_cache) == (False, True)
    assert_same(fresh, again)
    for frame in (fresh.nvtx_ranges, fresh.nvtx_marks):
        assert frame.index.equals(pd.RangeIndex(len(frame)))
