"""Reads begun before pandas is imported (``loaders.nsys_reads``): a cold `summarize` starts SQLite decoding while the
analysis modules load, with the frames and the summary exactly those of a read started by the loader itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dashboard.cli import main
from dashboard.data.cache import TraceCache
from dashboard.data.trace import load_trace
from dashboard.errors import TraceFormatError
from dashboard.loaders import load_nsys_sqlite
from dashboard.loaders.nsys_reads import begin_reads, estimate_rows

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_108K = ROOT / "sample_traces" / "generated_seed_shaped_108k.sqlite"
NCCL = ROOT / "sample_traces" / "nsys2026.2_2gpu_nccl_before.sqlite"
FRAMES = ("kernels", "api_calls", "api_totals", "nvtx_ranges", "nvtx_marks", "memops", "graph_launches")


def test_the_reads_start_without_pandas_and_the_summary_path_imports_it_only_after():
    """What a cold `summarize` runs before its reads start imports no pandas (nor the loaders that do); pandas comes
    with the frames."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from dashboard.cli import summarize as s\n"
        "from dashboard.data.cache import TraceCache, cached_summary_text\n"
        "from dashboard.data.slice_count import auto_slice_count\n"
        f"p = Path({str(SAMPLE_108K)!r})\n"
        "cache = TraceCache(enabled=False)\n"
        "assert cached_summary_text(cache, p, 'CG_DISPATCH') is None\n"
        "assert auto_slice_count(p) == 1\n"
        "started = s._start_reading(p, cache, None, True)\n"
        "assert 'pandas' not in sys.modules, 'pandas before the reads started'\n"
        "from dashboard.loaders import load_nsys_sqlite\n"
        "bundle = load_nsys_sqlite(p, lean=True, started=started)\n"
        "print(len(bundle.kernels), 'pandas' in sys.modules, started.closed)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["108000", "True", "True"]


@pytest.mark.parametrize("trace", [SAMPLE_108K, NCCL], ids=lambda p: p.stem)
def test_a_read_begun_early_gives_the_loaders_own_frames(trace):
    own = load_nsys_sqlite(trace, lean=True)
    started = begin_reads(trace, lean=True)
    early = load_nsys_sqlite(trace, lean=True, started=started)
    assert started.closed
    for name in FRAMES:
        a, b = getattr(own, name), getattr(early, name)
        if a is None:
            assert b is None, name
        else:
            pd.testing.assert_frame_equal(a, b, check_exact=True, obj=name)
    assert own.meta == early.meta


def test_a_summarys_reads_start_without_counting_the_kernel_table_a_pages_count_it(monkeypatch):
    """count(*) of 10M kernels took ~0.3 s before a summary's reads began; a summary shows no page, so its reads are
    sized by the rowid range instead. A page's load still counts them (its status line shows the size)."""
    import dashboard.loaders.nsys_reads as nr

    counted, stages = [], []
    count = nr._count
    monkeypatch.setattr(nr, "_count", lambda con, table: counted.append(table) or count(con, table))

    def progress(stage, rows=None):
        stages.append((stage, rows))

    for lean in (True, False):
        counted.clear(), stages.clear()
        load_nsys_sqlite(NCCL, lean=lean, started=begin_reads(NCCL, progress, lean=lean))
        kernel_stage = next(rows for stage, rows in stages if stage == "kernels and CUDA API calls")
        if lean:
            assert "CUPTI_ACTIVITY_KIND_KERNEL" not in counted and kernel_stage is None
        else:
            assert "CUPTI_ACTIVITY_KIND_KERNEL" in counted and kernel_stage == (("kernels", 4010),)


def test_summarize_cold_matches_the_summary_of_cached_frames(tmp_path, capsys):
    """Cold, `summarize` reads the export itself (begun early); with the dashboard's frames cached it summarises
    them instead (``TraceCache.has_bundle``): the same text."""
    cold = tmp_path / "cold.json"
    assert main(["summarize", str(NCCL), "-o", str(cold), "--cache-dir", str(tmp_path / "c1")]) == 0
    cache = TraceCache(tmp_path / "c2")
    assert not cache.has_bundle(NCCL)
    load_trace(NCCL, cache=cache)  # the dashboard's load writes the frames
    assert cache.has_bundle(NCCL) and not TraceCache(tmp_path / "c2", enabled=False).has_bundle(NCCL)
    warm = tmp_path / "frames.json"
    assert main(["summarize", str(NCCL), "-o", str(warm), "--cache-dir", str(tmp_path / "c2")]) == 0
    assert json.loads(cold.read_text()) == json.loads(warm.read_text())
    assert json.loads(cold.read_text())["kernel_count"] == 4010


def test_a_started_read_is_closed_when_the_load_fails_before_taking_it(tmp_path, monkeypatch):
    from dashboard.data import trace as trace_module

    started = begin_reads(SAMPLE_108K, lean=True)

    def broken(*args, **kwargs):
        raise ValueError("broken on purpose")

    monkeypatch.setattr(trace_module, "load_nsys_sqlite", broken)
    with pytest.raises(TraceFormatError, match="cannot be read: ValueError: broken on purpose"):
        load_trace(SAMPLE_108K, lean=True, started=started)
    assert started.closed and started.queries.pool is None


def test_bad_files_get_the_loaders_messages(tmp_path):
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(SAMPLE_108K.read_bytes()[:300_000])
    with pytest.raises(TraceFormatError, match=r"^cut\.sqlite: the SQLite file is damaged or truncated"):
        load_nsys_sqlite(cut, lean=True)
    with pytest.raises(TraceFormatError, match=r"^cut\.sqlite: the SQLite file is damaged or truncated"):
        estimate_rows(cut)


def test_the_row_estimate_counts_every_table_a_summary_grows_with():
    # rowid ranges against count(*): the sample's tables have dense rowids
    import sqlite3

    con = sqlite3.connect(f"file:{SAMPLE_108K}?mode=ro&immutable=1", uri=True)
    counts = [
        con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for (t,) in con.execute(
            "SELECT name FROM sqlite_master WHERE name IN ('CUPTI_ACTIVITY_KIND_KERNEL', "
            "'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS', 'CUPTI_ACTIVITY_KIND_MEMCPY', 'CUPTI_ACTIVITY_KIND_MEMSET')"
        )
    ]
    assert estimate_rows(SAMPLE_108K) == sum(counts)


def test_a_sparse_rowid_neither_inflates_the_row_estimate_nor_slices_the_summary(tmp_path, capsys):
    """One kernel row moved to rowid 2**63 - 808: max − min rowid was taken for ~10**19 rows, and `summarize` asked for
    ~10**17 time slices (it hung). The estimate is bounded by what the file can hold; the summary is the original's."""
    import shutil
    import sqlite3

    sparse = tmp_path / "sparse.sqlite"
    shutil.copy(NCCL, sparse)
    con = sqlite3.connect(sparse)
    con.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = 9223372036854775000 "
        "WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"
    )
    con.commit()
    con.close()
    assert estimate_rows(sparse) <= estimate_rows(NCCL) + sparse.stat().st_size // 4
    outs = []
    for path in (NCCL, sparse):
        assert main(["summarize", str(path), "--no-cache"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    outs[1]["file"] = outs[0]["file"]
    assert outs[0] == outs[1]


def test_ctrl_c_leaves_running_reads_and_the_cli_exits_without_joining_them(monkeypatch):
    """A read cannot be stopped half-way, and Python joins its threads at exit: Ctrl-C during a 10M-kernel read
    waited ~3 s for it. ``close`` does not wait when a KeyboardInterrupt unwinds, and the CLI then exits at once
    (``os._exit``), but only when every thread left is a read: anything else (a cache write) is waited for."""
    import os
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import dashboard.cli as cli
    from dashboard.loaders.nsys_api_totals import ApiTotalsRun
    from dashboard.loaders.nsys_reads import READ_THREAD, QueryRun, interrupted

    release = threading.Event()
    for run in (QueryRun.__new__(QueryRun), ApiTotalsRun.__new__(ApiTotalsRun)):
        run.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=READ_THREAD)
        run.pool.submit(release.wait, 30)
        t0 = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            try:
                raise KeyboardInterrupt
            finally:
                assert interrupted()
                run.close()
        assert time.perf_counter() - t0 < 1 and run.pool is None
    assert not interrupted()
    exits = []
    monkeypatch.setattr(os, "_exit", exits.append)
    reading = [t for t in threading.enumerate() if t.name.startswith(READ_THREAD)]
    assert len(reading) == 2 and all(t.is_alive() for t in reading)
    cli._leave_running_reads(130, [threading.main_thread(), *reading])
    assert exits == [130]
    other = threading.Thread(target=release.wait, args=(30,), name="tracedash-cache-write-0")
    other.start()
    cli._leave_running_reads(130, [threading.main_thread(), *reading, other])
    assert exits == [130]  # a cache write still running: the CLI returns and Python waits for it
    release.set()
    other.join()
    for t in reading:
        t.join()
    cli._leave_running_reads(130, [threading.main_thread(), *reading])
    assert exits == [130]  # nothing left running: a plain return


def test_ctrl_c_while_the_parser_imports_exits_130_without_a_traceback(monkeypatch, capsys):
    """QA: Ctrl-C in the first 0.3 s of `findings` (its parser imports pandas and pyarrow) printed a traceback and the
    process died of the signal."""
    import dashboard.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["findings", "t.sqlite"]) == 130
    assert capsys.readouterr() == ("", "")
