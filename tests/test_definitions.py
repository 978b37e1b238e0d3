"""One definition per figure (issue 12 §2-§3): the cases of shared/cases as exact-value tests, plus
members of each class built in code. The CLI (`summarize`) and the dashboard call the same functions."""

from __future__ import annotations

import json

import pandas as pd
from factories import GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA

from dashboard.analysis.gpu_time import gpu_time, gpu_work
from dashboard.analysis.summary import (
    invalid_kernel_count,
    kernel_durations,
    kernel_end_ns,
    overrun_kernel_count,
    timed_kernels,
)
from dashboard.analysis.tables import api_family, api_table, clean_api_name
from dashboard.cli import main
from dashboard.model import KERNELS, conform
from dashboard.render import kernel_rows, nvtx_rows, overview_cards
from dashboard.trace import load_trace

CASES = DATA / "cases"


def summarize_cli(capsys, path) -> dict:
    assert main(["summarize", "--no-cache", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


# --- null_short_names: a NULL shortName falls back to the row's demangled name, in CLI and dashboard alike


def test_null_short_names_case(capsys):
    path = CASES / "c26_nullshort.sqlite"
    cli = [(n, c, round(s * 1e9)) for n, (c, s) in summarize_cli(capsys, path)["top_kernels"]]
    dash = [(r["name"], r["count"], r["total_ns"]) for r in kernel_rows(load_trace(path))]
    assert cli == dash
    assert [(c, t) for _, c, t in dash] == [(2, 150), (1, 20), (1, 10), (1, 5)]
    assert dash[1][0].endswith("...B>") and dash[2][0].endswith("...A>") and dash[3][0] == "核函数_λ<int>"
    assert not any("unnamed" in n for n, _, _ in dash)


def test_null_short_name_built_in_code(tmp_path, capsys):
    """Another member: shortName ids that StringIds does not hold fall back the same way."""
    import sqlite3

    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=[
        {"start": 0, "end": 30, "shortName": "a", "demangledName": "void ns::a_kernel<1>()"},
        {"start": 40, "end": 50, "shortName": "b", "demangledName": "void ns::b_kernel<2>()"}])
    with sqlite3.connect(path) as con:  # point b's shortName at a missing string
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = 999 WHERE start = 40")
    cli = [(n, round(s * 1e9)) for n, (_, s) in summarize_cli(capsys, path)["top_kernels"]]
    dash = [(r["name"], r["total_ns"]) for r in kernel_rows(load_trace(path))]
    assert cli == dash == [("a", 30), ("void ns::b_kernel<2>()", 10)]


# --- unnamed_nvtx_range: a range with neither text nor a registered string is a visible <unnamed> row


def test_unnamed_nvtx_range_case(capsys):
    path = CASES / "c18.sqlite"
    nvtx = summarize_cli(capsys, path)["nvtx"]
    assert nvtx["<unnamed>"]["count"] == 1 and round(nvtx["<unnamed>"]["sum_s"] * 1e9) == 50
    assert nvtx["forward"]["count"] == 2 and round(nvtx["forward"]["sum_s"] * 1e9) == 200
    rows = {r["name"]: (r["count"], r["sum_ns"]) for r in nvtx_rows(load_trace(path), grouped=False)}
    assert rows == {"forward": (2, 200), "<unnamed>": (1, 50)}
    assert "" not in set(load_trace(path).bundle.nvtx_ranges["name"].astype(str))


def test_unnamed_nvtx_mark_and_start_end_range(tmp_path):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=[{"start": 0, "end": 10}], nvtx=[
        {"start": 0, "end": 30, "eventType": 60, "globalTid": GLOBAL_TID_1},
        {"start": 5, "end": None, "eventType": 34, "globalTid": GLOBAL_TID_1}])
    b = load_trace(path).bundle
    assert b.nvtx_ranges["name"].astype(str).tolist() == ["<unnamed>"]
    assert b.nvtx_marks["name"].astype(str).tolist() == ["<unnamed>"]


# --- same_stream_overrun: a kernel past the end of a later kernel on its stream is clipped and counted


def test_same_stream_overrun_case_sqlite(capsys):
    path = CASES / "c10.sqlite"
    out = summarize_cli(capsys, path)
    assert round(out["gpu_busy_union_s"] * 1e9) == 40_000 and round(out["gpu_activity_span_s"] * 1e9) == 40_000
    assert "1 kernel(s) ran past the end of a later kernel" in " ".join(out["warnings"])
    assert "1 invalid kernel row(s)" in " ".join(out["warnings"])
    t = load_trace(path)
    assert (t.summary.gpu_start_ns, t.summary.gpu_end_ns) == (0, 40_000)
    assert overrun_kernel_count(t.bundle.kernels) == 1 and invalid_kernel_count(t.bundle.kernels) == 1
    assert kernel_end_ns(t.bundle.kernels).tolist()[:4] == [10_000, 20_000, 30_000, 40_000]  # k2: [10, 20) µs
    cards = {c.label: c for c in overview_cards(t)}
    assert cards["Kernels clipped (same-stream overrun)"].value == "1"
    assert cards["Invalid kernel rows"].value == "1"
    assert [(r["count"], r["total_ns"]) for r in kernel_rows(t)] == [(5, 40_000)]


def test_same_stream_overrun_case_kineto(capsys):
    """The Kineto twin (µs): the same analysis function, whatever the loader."""
    path = CASES / "c10.json"
    out = summarize_cli(capsys, path)
    assert round(out["gpu_busy_union_s"] * 1e9) == 40_000 and round(out["gpu_activity_span_s"] * 1e9) == 40_000
    assert "1 kernel(s) ran past the end of a later kernel" in " ".join(out["warnings"])
    t = load_trace(path)
    assert overrun_kernel_count(t.bundle.kernels) == 1
    assert {r["name"]: r["total_ns"] for r in kernel_rows(t)} == {"k1": 10_000, "k2": 10_000, "k3": 10_000,
                                                                  "k4": 10_000}


def _kernels(rows) -> pd.DataFrame:
    """A KERNELS frame from (start, end, stream[, pid[, graph_node]]) tuples, device 0, context 1."""
    out = pd.DataFrame({
        "start_ns": [r[0] for r in rows], "end_ns": [r[1] for r in rows], "device_id": 0, "context_id": 1,
        "stream_id": [r[2] for r in rows], "correlation_id": -1, "global_pid": 0,
        "pid": [r[3] if len(r) > 3 else 100 for r in rows],
        "graph_node_id": pd.array([r[4] if len(r) > 4 else None for r in rows], dtype="Int64"),
        "short_name": [f"k{i}" for i in range(len(rows))], "name": [f"k{i}" for i in range(len(rows))], "launch": ""})
    return conform(out, KERNELS)


def test_overrun_rules():
    # Past the end of a later kernel: clipped to the next start (even when the next one is longer).
    assert kernel_end_ns(_kernels([(0, 100, 7), (10, 20, 7), (30, 200, 7)])).tolist() == [10, 20, 200]
    # Partial overlap with the next kernel (programmatic dependent launch): real, kept.
    k = _kernels([(0, 15, 7), (10, 20, 7)])
    assert overrun_kernel_count(k) == 0 and kernel_end_ns(k).tolist() == [15, 20]
    # Other streams, other processes with the same stream id, and CUDA graph kernels are not "later".
    assert overrun_kernel_count(_kernels([(0, 100, 7), (10, 20, 8)])) == 0
    assert overrun_kernel_count(_kernels([(0, 100, 7, 100), (10, 20, 7, 200)])) == 0
    assert overrun_kernel_count(_kernels([(0, 100, 7, 100, 1), (10, 20, 7, 100, 2)])) == 0
    # Durations and busy use the clipped end.
    k = _kernels([(0, 100, 7), (10, 20, 7)])
    assert kernel_durations(k).tolist() == [10, 10]
    assert timed_kernels(k)["end_ns"].tolist() == [10, 20]
    assert int(gpu_time(gpu_work(k)).iloc[-1]["busy_ns"]) == 20


# --- api_suffix_families: raw names in the summary; cleaned names fold _vNNNN and _ptsz/_ptds; families


def test_api_suffix_families_case(capsys):
    path = CASES / "c27.sqlite"
    raw = summarize_cli(capsys, path)["api"]
    assert raw["cudaLaunchKernel_v7000"][0] == 2 and raw["cudaLaunchKernel_ptsz_v7000"][0] == 1
    t = load_trace(path)
    by_name = {r.name: (r.count, r.total_ns) for r in api_table(t.summary).itertuples()}
    assert by_name == {"cudaStreamSynchronize": (1, 100), "cudaGraphLaunch": (1, 30), "cudaLaunchKernel": (3, 16),
                       "cudaMemcpyAsync": (1, 10), "cuLaunchKernelEx": (1, 6)}
    fam = {r.name: (r.count, r.total_ns) for r in api_table(t.summary, by="family").itertuples()}
    assert fam == {"sync": (1, 100), "launch": (5, 52), "memcpy": (1, 10)}
    assert api_table(t.summary).set_index("name").loc["cudaLaunchKernel", "raw_name"] == \
        "cudaLaunchKernel_v7000, cudaLaunchKernel_ptsz_v7000"


def test_api_names_and_families_other_members():
    assert [clean_api_name(n) for n in ("cudaMemcpyAsync_ptds_v7000", "cudaMemsetAsync_ptsz", "cuMemAlloc_v2",
                                        "cudaEventRecord_v3020")] == [
        "cudaMemcpyAsync", "cudaMemsetAsync", "cuMemAlloc_v2", "cudaEventRecord"]
    assert [api_family(n) for n in ("cudaLaunchCooperativeKernel", "cuLaunchKernel", "cudaDeviceSynchronize",
                                    "cudaStreamWaitEvent", "cudaMemcpy2DAsync", "cudaMemsetD32Async",
                                    "cudaGraphInstantiateWithFlags", "cudaStreamBeginCapture", "cudaMalloc")] == [
        "launch", "launch", "sync", "sync", "memcpy", "memset", "graph", "graph", "other"]
