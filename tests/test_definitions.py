"""One definition per figure (issue 12 §2-§3): the cases of shared/cases as exact-value tests, plus
members of each class built in code. The CLI (`summarize`) and the dashboard call the same functions."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from dashboard import units
from dashboard.analysis.gpu_time import (
    BUSY_ALL,
    BUSY_KERNEL_ROWS,
    BUSY_KERNELS,
    gpu_time,
    gpu_work,
    stream_count,
    stream_names,
)
from dashboard.analysis.kernel_times import (
    invalid_kernel_count,
    kernel_durations,
    kernel_end_ns,
    overrun_kernel_count,
    timed_kernels,
)
from dashboard.analysis.ratio import share_pct
from dashboard.analysis.tables import api_family, api_table, clean_api_name
from dashboard.cli import main
from dashboard.data.trace import load_trace
from dashboard.model import KERNELS, conform
from dashboard.render import (
    build_view,
    gpu_rows,
    idle_view,
    kernel_rows,
    nvtx_rows,
    overview_cards,
    phase_table_rows,
    phase_view,
)
from dashboard.state import ViewState

from factories import GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA, nsys_trace
from paths import NSYS_DIR as NSYS

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

    path = write_nsys_sqlite(
        tmp_path / "t.sqlite",
        kernels=[
            {"start": 0, "end": 30, "shortName": "a", "demangledName": "void ns::a_kernel<1>()"},
            {"start": 40, "end": 50, "shortName": "b", "demangledName": "void ns::b_kernel<2>()"},
        ],
    )
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
    path = write_nsys_sqlite(
        tmp_path / "t.sqlite",
        kernels=[{"start": 0, "end": 10}],
        nvtx=[
            {"start": 0, "end": 30, "eventType": 60, "globalTid": GLOBAL_TID_1},
            {"start": 5, "end": None, "eventType": 34, "globalTid": GLOBAL_TID_1},
        ],
    )
    b = load_trace(path).bundle
    assert b.nvtx_ranges["name"].astype(str).tolist() == ["<unnamed>"]
    assert b.nvtx_marks["name"].astype(str).tolist() == ["<unnamed>"]


# --- same_stream_overrun: a kernel past the end of a later kernel on its stream is clipped and counted


def test_same_stream_overrun_case_sqlite(capsys):
    path = CASES / "c10.sqlite"
    out = summarize_cli(capsys, path)
    assert round(out["gpu_busy_union_s"] * 1e9) == 40_000 and round(out["gpu_activity_span_s"] * 1e9) == 40_000
    assert "1 kernel ran past the end of a later kernel" in " ".join(out["warnings"])
    assert "1 invalid kernel row (end" in " ".join(out["warnings"])
    t = load_trace(path)
    assert (t.summary.gpu_start_ns, t.summary.gpu_end_ns) == (0, 40_000)
    assert overrun_kernel_count(t.bundle.kernels) == 1 and invalid_kernel_count(t.bundle.kernels) == 1
    assert kernel_end_ns(t.bundle.kernels).tolist()[:4] == [10_000, 20_000, 30_000, 40_000]  # k2: [10, 20) µs
    cards = {c.label: c for c in overview_cards(t)}
    assert cards["Kernels clipped (same-stream overrun)"].value == "1"
    assert cards["Invalid kernel rows"].value == "1"
    # the invalid row is a call without a usable time: in the count, not in the total, nor in the mean (8 µs before)
    assert [(r["count"], r["total_ns"], r["mean_ns"]) for r in kernel_rows(t)] == [(5, 40_000, 10_000.0)]


def test_same_stream_overrun_case_kineto(capsys):
    """The Kineto twin (µs): the same analysis function, whatever the loader."""
    path = CASES / "c10.json"
    out = summarize_cli(capsys, path)
    assert round(out["gpu_busy_union_s"] * 1e9) == 40_000 and round(out["gpu_activity_span_s"] * 1e9) == 40_000
    assert "1 kernel ran past the end of a later kernel" in " ".join(out["warnings"])
    t = load_trace(path)
    assert overrun_kernel_count(t.bundle.kernels) == 1
    assert {r["name"]: r["total_ns"] for r in kernel_rows(t)} == {
        "k1": 10_000,
        "k2": 10_000,
        "k3": 10_000,
        "k4": 10_000,
    }


def _kernels(rows) -> pd.DataFrame:
    """A KERNELS frame from (start, end, stream[, pid[, graph_node]]) tuples, device 0, context 1."""
    out = pd.DataFrame(
        {
            "start_ns": [r[0] for r in rows],
            "end_ns": [r[1] for r in rows],
            "device_id": 0,
            "context_id": 1,
            "stream_id": [r[2] for r in rows],
            "correlation_id": -1,
            "pid": [r[3] if len(r) > 3 else 100 for r in rows],
            "graph_node_id": pd.array([r[4] if len(r) > 4 else None for r in rows], dtype="Int64"),
            "short_name": [f"k{i}" for i in range(len(rows))],
            "name": [f"k{i}" for i in range(len(rows))],
            "launch": "",
        }
    )
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
    # A NULL stream id (read as -1) is no stream: kernels of unknown streams are not put in one stream's order.
    k = _kernels([(0, 100, -1), (10, 20, -1), (30, 40, 7), (35, 38, 7)])
    assert overrun_kernel_count(k) == 1 and kernel_end_ns(k).tolist() == [100, 20, 35, 38]
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
    assert by_name == {
        "cudaStreamSynchronize": (1, 100),
        "cudaGraphLaunch": (1, 30),
        "cudaLaunchKernel": (3, 16),
        "cudaMemcpyAsync": (1, 10),
        "cuLaunchKernelEx": (1, 6),
    }
    fam = {r.name: (r.count, r.total_ns) for r in api_table(t.summary, by="family").itertuples()}
    assert fam == {"sync": (1, 100), "launch": (5, 52), "memcpy": (1, 10)}
    assert (
        api_table(t.summary).set_index("name").loc["cudaLaunchKernel", "raw_name"]
        == "cudaLaunchKernel_v7000, cudaLaunchKernel_ptsz_v7000"
    )


def test_api_names_and_families_other_members():
    assert [
        clean_api_name(n)
        for n in ("cudaMemcpyAsync_ptds_v7000", "cudaMemsetAsync_ptsz", "cuMemAlloc_v2", "cudaEventRecord_v3020")
    ] == ["cudaMemcpyAsync", "cudaMemsetAsync", "cuMemAlloc_v2", "cudaEventRecord"]
    assert [
        api_family(n)
        for n in (
            "cudaLaunchCooperativeKernel",
            "cuLaunchKernel",
            "cudaDeviceSynchronize",
            "cudaStreamWaitEvent",
            "cudaMemcpy2DAsync",
            "cudaMemsetD32Async",
            "cudaGraphInstantiateWithFlags",
            "cudaStreamBeginCapture",
            "cudaMalloc",
        )
    ] == ["launch", "launch", "sync", "sync", "memcpy", "memset", "graph", "graph", "other"]


# --- graph_level_capture: the busy source applies to every panel; graphs are opaque kernel-table rows


def test_graph_level_capture_case():
    t = load_trace(CASES / "c15.sqlite")
    cards = {c.label: c.value for c in overview_cards(t, ViewState())}  # default: graphs counted
    assert (cards["GPU activity span"], cards["GPU busy (union)"], cards["GPU idle in span"], cards["Utilisation"]) == (
        "1.00 µs",
        "1.00 µs",
        "0 ns",
        "100.00 %",
    )
    assert cards["GPU busy, kernel rows only"] == "200 ns"  # the contract's kernels-only busy, labelled
    rows, _ = gpu_rows(t, ViewState())
    per_gpu = {r["metric"]: r["gpu0"] for r in rows}
    assert (per_gpu["Busy (union)"], per_gpu["Idle in window"], per_gpu["Utilisation"]) == (
        "1.00 µs",
        "0 ns",
        "100.00 %",
    )
    kt = kernel_rows(t, busy_source=BUSY_KERNELS)
    assert [(r["name"], r["count"], r["total_ns"], r["category"], r["kernel_pct"]) for r in kt] == [
        ("CUDA graph 7", 1, 800, "CUDA graph", 80.0),
        ("k", 2, 200, "other", 20.0),
    ]
    assert kt[0]["start_ns"] == 100 and kt[0]["end_ns"] == 900
    # Kernel rows only: one definition again, in every panel.
    only = ViewState(busy=BUSY_KERNEL_ROWS)
    cards = {c.label: c.value for c in overview_cards(t, only)}
    assert (cards["GPU busy (union)"], cards["GPU idle in span"], cards["Utilisation"]) == (
        "200 ns",
        "800 ns",
        "20.00 %",
    )
    assert "GPU busy, kernel rows only" not in cards
    assert {r["metric"]: r["gpu0"] for r in gpu_rows(t, only)[0]}["Busy (union)"] == "200 ns"
    assert [r["name"] for r in kernel_rows(t, busy_source=BUSY_KERNEL_ROWS)] == ["k"]
    lean = load_trace(CASES / "c15.sqlite", lean=True).summary
    assert round(lean.gpu_busy_union_ns) == 200  # summarize: contract
    # ... and it says the graph's 800 ns inside the span count as idle there, never a silent 20 % busy
    assert [w for w in lean.warnings if "graph level" in w] == [
        "1 CUDA graph launch, traced at graph level (no kernel rows inside), is not counted as GPU work: the GPU "
        "span, busy union and idle count kernel rows only, so graph time inside the span counts as idle and graph "
        "time outside it is left out; the dashboard counts graphs as opaque GPU work by default; re-profile with "
        "--cuda-graph-trace=node for per-kernel detail"
    ]


def test_graph_rows_and_idle_with_memops_built_in_code(tmp_path):
    path = write_nsys_sqlite(
        tmp_path / "g.sqlite",
        kernels=[{"start": 0, "end": 100}, {"start": 1000, "end": 1100}],
        graph_trace=[{"start": 200, "end": 300, "graphId": 3}, {"start": 400, "end": 450, "graphId": 3}],
        memcpy=[{"start": 500, "end": 900}],
    )
    t = load_trace(path)
    rows = kernel_rows(t)
    assert [(r["name"], r["count"], r["total_ns"]) for r in rows] == [("kernel", 2, 200), ("CUDA graph 3", 2, 150)]
    assert sum(r["kernel_pct"] for r in rows) == pytest.approx(100.0)
    gaps, _, _ = idle_view(t, ViewState(), min_gap_ns=1)
    by_start = {g["start_ns"]: g for g in gaps}
    assert by_start[450]["end_ns"] == 1000 and by_start[450]["memop_cover"] == "memcpy HtoD covers 400 ns"
    assert by_start[100]["memop_cover"] == "" and by_start[450]["memop_ns"] == 400
    cards = {c.label: c.value for c in overview_cards(t, ViewState(busy=BUSY_ALL))}
    assert cards["GPU busy (union)"] == "750 ns"


# --- dispatch_busy_over_100: GPU time attributed by correlation is shown in ns; no share above 100 %


def test_dispatch_busy_over_100_case():
    t = load_trace(CASES / "c24.sqlite")
    pv = phase_view(t, ViewState())
    st = pv.stats.set_index("phase")
    assert (st.loc["prefill", "gpu_attributed_ns"], st.loc["decode", "gpu_attributed_ns"]) == (180, 150)
    assert st.loc["decode", "gpu_attributed_per_dispatch_ns"] == 50.0
    assert (st["gpu_busy_in_window_pct"] <= 100).all()
    table = {r["metric"]: r for r in phase_table_rows(pv.stats)}
    assert table["GPU time attributed (by correlation)"]["prefill"] == "180 ns"
    assert table["GPU time attributed (by correlation)"]["decode"] == "150 ns"
    assert table["… per dispatch"]["decode"] == "50 ns"
    percentages = [
        float(v[:-2])
        for r in phase_table_rows(pv.stats)
        for k, v in r.items()
        if k != "metric" and isinstance(v, str) and v.endswith(" %")
    ]
    assert percentages and max(percentages) <= 100.0
    assert [r["gpu_busy_ns"] for r in build_view(t, ViewState()).dispatch_rows] == [180, 50, 50, 50]


def test_a_step_short_of_its_own_gpu_work_while_the_gpu_runs_other_steps_work_is_not_host_bound():
    """c24's last decode step [120, 350) ns has 50 ns of its own kernels, but the GPU is busy throughout (the earlier
    steps' work lags them): no GPU idle in it, so no cost, and no "GPU idle" said beside the 0 ns idle card."""
    from dashboard.render.findings import findings_for

    t = load_trace(CASES / "c24.sqlite")
    hb = {f.rule: f for f in findings_for(t)}["host-bound-steps"]
    assert (hb.severity, hb.cost_ns) == ("none", 0)
    assert hb.summary == (
        "1 of 4 steps keeps the GPU busy with its own work under 50 % of the step (180 ns without it), but the GPU "
        "was never idle in it: it ran other work throughout; no GPU time lost."
    )
    assert {c.label: c.value for c in overview_cards(t, ViewState())}["GPU idle in span"] == "0 ns"


# --- a ratio with a zero denominator is n/a everywhere, never 0.00 %


def test_zero_denominator_is_na(tmp_path, capsys):
    assert share_pct(1, 0) is None and units.pct(None) == "n/a" and units.pct(float("nan")) == "n/a"
    assert units.pct(share_pct(1, 4)) == "25.0 %"
    path = write_nsys_sqlite(
        tmp_path / "api_only.sqlite",
        runtime=[{"start": 0, "end": 10, "name": "cudaMalloc"}],
        nvtx=[{"start": 0, "end": 10, "eventType": 59, "text": "init"}],
    )
    t = load_trace(path)
    cards = {c.label: c.value for c in overview_cards(t)}
    assert cards["Utilisation"] == "n/a"
    assert t.summary.utilisation_pct is None
    assert nvtx_rows(t, grouped=False)[0]["overlap_pct"] == 0.0  # union 10 ns, no GPU overlap: a real 0 %
    view = build_view(t, ViewState())
    assert not any(re.fullmatch(r"0\.0+ %", c.value) for c in view.cards)


# --- multi-GPU utilisation: per GPU (mean, lowest), any GPU busy; overview, Per GPU, compare and diff agree


def test_multi_gpu_overview_compare_and_diff_agree(capsys):
    from dashboard.analysis.compare import compare_runs, comparison_to_dict

    a = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    b = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_after.sqlite"))
    cards = {c.label: c for c in overview_cards(a)}
    assert cards["Any GPU busy"].value == "285.206 ms"  # = the summary contract's union over all GPUs
    assert units.duration(a.summary.gpu_busy_union_ns) == "285.206 ms"
    assert cards["Utilisation (mean per GPU)"].value == "89.42 %"
    assert (cards["Lowest GPU utilisation"].value, cards["Lowest GPU utilisation"].hint) == ("88.50 %", "GPU 1")
    per_gpu = {r["metric"]: r for r in gpu_rows(a, ViewState())[0]}
    assert (per_gpu["Utilisation"]["gpu0"], per_gpu["Utilisation"]["gpu1"]) == ("90.33 %", "88.50 %")
    c = compare_runs(a, b)
    assert units.pct(c.utilisation_pct[0], 2) == "89.42 %"
    o = c.overview.set_index("metric")
    assert units.duration(int(o.loc["gpu_busy_union_ns", "a"])) == "285.206 ms"
    assert (
        main(
            [
                "diff",
                "--no-cache",
                "--json",
                str(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")),
                str(nsys_trace("nsys2026.2_2gpu_nccl_after.sqlite")),
            ]
        )
        == 0
    )
    d = json.loads(capsys.readouterr().out)
    assert d["utilisation_pct"]["a"] == round(c.utilisation_pct[0], 4)
    assert d["any_gpu_utilisation_pct"]["a"] == round(c.any_gpu_utilisation_pct[0], 4)
    full = comparison_to_dict(c)
    assert {k: d[k] for k in ("overview", "utilisation_pct", "any_gpu_utilisation_pct")} == {
        k: full[k] for k in ("overview", "utilisation_pct", "any_gpu_utilisation_pct")
    }


def test_diff_without_gpu_work_says_na(tmp_path, capsys):
    a = write_nsys_sqlite(tmp_path / "a.sqlite", runtime=[{"start": 0, "end": 10, "name": "cudaMalloc"}])
    b = write_nsys_sqlite(tmp_path / "b.sqlite", kernels=[{"start": 0, "end": 10}])
    assert main(["diff", "--no-cache", "--json", str(a), str(b)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["utilisation_pct"] == {"a": None, "b": 100.0, "delta_pp": None}
    assert main(["diff", "--no-cache", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "Utilisation (mean per GPU)" in out and not re.search(r"(?<![\d.])0\.00 %", out)


# --- streams keyed by (device, process or context, stream): two processes on one GPU, both on stream 7


def test_two_processes_same_stream_id_are_two_streams(tmp_path):
    pid200 = (1 << 48) | (200 << 24)
    path = write_nsys_sqlite(
        tmp_path / "two.sqlite",
        kernels=[
            {"start": 0, "end": 100, "streamId": 7},  # pid 100
            {"start": 50, "end": 80, "streamId": 7, "globalPid": pid200, "correlationId": 2},  # pid 200, same id
            {"start": 120, "end": 150, "streamId": 7, "globalPid": pid200, "correlationId": 3},
        ],
    )
    t = load_trace(path)
    k = t.bundle.kernels
    assert stream_count(k) == 2
    rows = {r["metric"]: r for r in gpu_rows(t, ViewState())[0]}
    assert (rows["Streams"]["gpu0"], rows["Streams"]["all"]) == ("2", "2")
    assert overrun_kernel_count(k) == 0  # [0, 100) is not "past a later kernel": that one is another stream
    assert stream_names(k).tolist() == ["pid 100 · stream 7", "pid 200 · stream 7", "pid 200 · stream 7"]
    fig = build_view(t, ViewState(t0_ns=0, t1_ns=200)).timeline
    lanes = {y for tr in fig.data if str(tr.name).startswith("kernels: ") for y in tr.y}  # one trace per category
    assert sorted(lanes) == ["GPU 0 · pid 100 · stream 7", "GPU 0 · pid 200 · stream 7"]
    assert {"GPU 0 · pid 100 · stream 7", "GPU 0 · pid 200 · stream 7"} <= set(fig.layout.yaxis.categoryarray)


def test_stream_names_plain_when_unambiguous_and_context_when_needed():
    k = _kernels([(0, 10, 7), (20, 30, 8)])
    assert stream_names(k).tolist() == ["stream 7", "stream 8"]
    k2 = k.assign(context_id=[1, 2], stream_id=[7, 7])
    assert stream_names(k2).tolist() == ["pid 100 · ctx 1 · stream 7", "pid 100 · ctx 2 · stream 7"]
    assert stream_count(k2) == 2


def test_api_tab_groups_by_family():
    """The API tab's view: per call or per family, from the link's ``api_by`` key."""
    from dashboard.app.views.api import VIEW
    from dashboard.state import ViewState, from_query, to_query

    t = load_trace(CASES / "c27.sqlite")
    fam = VIEW.render(t, ViewState(api_by="family"))["rows"]
    assert {r["name"]: (r["count"], r["total_ns"]) for r in fam} == {
        "sync": (1, 100),
        "launch": (5, 52),
        "memcpy": (1, 10),
    }
    assert {r["name"]: r["count"] for r in VIEW.render(t, ViewState())["rows"]}["cudaLaunchKernel"] == 3
    assert "api_by=family" in to_query(ViewState(api_by="family"))
    assert from_query("?api_by=family&v=1").api_by == "family"
    assert from_query("?api_by=bogus&v=1").api_by == "name"


# --- the overview, Per GPU, compare page and summarize agree on every shared trace


@pytest.mark.parametrize(
    "path", sorted(NSYS.glob("*.sqlite")) + sorted((DATA / "kineto").glob("*.json.gz")), ids=lambda p: p.name
)
def test_panels_and_summarize_agree(path):
    from dashboard.analysis.compare import overview_figures
    from dashboard.analysis.gpu_time import trace_gpu_overview

    t = load_trace(path)
    lean = load_trace(path, lean=True) if path.suffix == ".sqlite" else t  # what `summarize` reads
    s = lean.summary
    for source in (BUSY_KERNEL_ROWS, BUSY_KERNELS, BUSY_ALL):
        ov = trace_gpu_overview(t.bundle, source)
        per_gpu = {r["metric"]: r.get("all") for r in gpu_rows(t, ViewState(busy=source))[0]}
        cards = {c.label: c.value for c in overview_cards(t, ViewState(busy=source))}
        busy_card = cards.get("Any GPU busy", cards.get("GPU busy (union)"))
        if ov.gpus:
            assert per_gpu["Busy (union)"] == busy_card == units.duration(ov.any_busy_ns)
        assert overview_figures(t, source)["gpu_busy_union_ns"] == ov.any_busy_ns
        if source == BUSY_KERNEL_ROWS:  # the contract's definition: summarize's numbers exactly
            assert (ov.any_busy_ns, ov.span_ns) == (s.gpu_busy_union_ns, s.gpu_activity_span_ns)
        if source == BUSY_KERNELS and t.bundle.graph_launches.empty:
            assert ov.any_busy_ns == s.gpu_busy_union_ns
    assert [(r["name"], r["count"], r["total_ns"]) for r in kernel_rows(t, busy_source=BUSY_KERNEL_ROWS)][:20] == [
        (n, c, tot) for n, c, tot in s.top_kernels[["name", "count", "total_ns"]].itertuples(index=False)
    ]


def test_unnamed_kineto_annotation(tmp_path):
    """The Kineto loader names an annotation without a name <unnamed> too (one rule for every input)."""
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "k1",
                        "pid": 0,
                        "tid": 7,
                        "ts": 0,
                        "dur": 10,
                        "args": {"device": 0, "stream": 7, "correlation": 1},
                    },
                    {"ph": "X", "cat": "user_annotation", "name": "", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
                    {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 60, "dur": 5},
                ]
            }
        )
    )
    rows = {r["name"]: r["sum_ns"] for r in nvtx_rows(load_trace(path), grouped=False)}
    assert rows == {"<unnamed>": 50_000, "step": 5_000}


# --- no GPU work: an unmeasured GPU is never "busy 0 ns" (cards, findings, compare, lanes)


def test_a_trace_without_gpu_work_shows_na_not_zero(tmp_path):
    from dashboard.app.views.timeline import lane_options

    path = write_nsys_sqlite(
        tmp_path / "cpu.sqlite", nvtx=[{"start": 100, "end": 900, "eventType": 59, "text": "step"}]
    )
    t = load_trace(path)
    cards = {c.label: c for c in overview_cards(t)}
    why = "CUDA was not traced (NVTX only): no kernel, CUDA API or memcpy/memset rows"
    assert [
        (cards[k].value, cards[k].hint)
        for k in (
            "GPU activity span",
            "GPU busy (union)",
            "GPU idle in span",
            "Utilisation",
            "Kernels",
            "CUDA-graph kernels",
            "GPUs with kernels",
        )
    ] == [("n/a", why)] * 7
    # CUDA traced, no GPU work (one cudaMalloc): no span to measure, but 0 kernels is a count
    api = load_trace(
        write_nsys_sqlite(tmp_path / "api.sqlite", runtime=[{"start": 0, "end": 10, "name": "cudaMalloc"}])
    )
    cards = {c.label: c for c in overview_cards(api)}
    assert (cards["GPU busy (union)"].value, cards["GPU busy (union)"].hint) == (
        "n/a",
        "no GPU work in this trace: no kernel, CUDA-graph or memcpy/memset rows",
    )
    assert (cards["Kernels"].value, cards["GPUs with kernels"].value) == ("0", "0")
    assert [o["value"] for o in lane_options(t)] == ["nvtx"]  # no GPU lanes to tick, no marks either
    # only memcpy rows, busy source "kernels": the cards say the source counts none of them
    mem = load_trace(write_nsys_sqlite(tmp_path / "mem.sqlite", memcpy=[{"start": 0, "end": 500}]))
    cards = {c.label: c for c in overview_cards(mem, ViewState(busy=BUSY_KERNELS))}
    assert (cards["GPU busy (union)"].value, cards["GPU busy (union)"].hint) == (
        "n/a",
        "no GPU work in this trace for the busy source (kernels)",
    )
    cards = {c.label: c.value for c in overview_cards(mem, ViewState(busy=BUSY_ALL))}
    assert (cards["GPU busy (union)"], cards["Utilisation"]) == ("500 ns", "100.00 %")
    assert [o["value"] for o in lane_options(mem)] == ["gpu", "memops"]


def test_a_window_without_gpu_work_shows_na(tmp_path):
    path = write_nsys_sqlite(
        tmp_path / "w.sqlite", kernels=[{"start": 0, "end": 100}, {"start": 10_000, "end": 10_100}]
    )
    t = load_trace(path)
    view = build_view(t, ViewState(t0_ns=1_000, t1_ns=2_000, stats="window"))
    cards = {c.label: c for c in view.cards}
    assert (cards["GPU busy (union)"].value, cards["GPU busy (union)"].hint) == (
        "n/a",
        "no GPU work in the visible window: no kernel, CUDA-graph or memcpy/memset rows",
    )
    cards = {c.label: c.value for c in build_view(t, ViewState(t0_ns=50, t1_ns=10_050, stats="window")).cards}
    assert (cards["GPU busy (union)"], cards["GPU activity span"]) == ("100 ns", "10.00 µs")


def test_findings_diff_never_reads_an_unevaluated_rule_as_gone(tmp_path):
    from dashboard.render.findings import diff_findings, diff_text, findings_for, not_evaluated

    gpu = load_trace(
        write_nsys_sqlite(
            tmp_path / "g.sqlite", kernels=[{"start": 1000, "end": 1100}, {"start": 600_000_000, "end": 600_000_100}]
        )
    )
    cpu = load_trace(
        write_nsys_sqlite(tmp_path / "c.sqlite", nvtx=[{"start": 0, "end": 9, "eventType": 59, "text": "s"}])
    )
    fa, fb = findings_for(gpu), findings_for(cpu)
    starv = next(f for f in fa if f.rule == "gpu-starv")
    assert starv.cost_ns == 599_998_900 and starv.evaluated
    rows = {r["rule"]: r for r in diff_findings(fa, fb)}
    assert rows["gpu-starv"] == {
        "rule": "gpu-starv",
        "change": "not evaluated in B",
        "a_cost_ns": 599_998_900,
        "b_cost_ns": None,
        "delta_ns": None,
        "a_severity": "high",
        "b_severity": "not evaluated",
        "b_summary": "Not evaluated: this trace has no GPU work (no kernel, CUDA-graph or memcpy/memset row).",
    }
    assert rows["padding-waste"]["change"] == "not evaluated"  # neither run has dispatch marks
    # no rule could look at both runs: none has a delta
    assert [r["delta_ns"] for r in diff_findings(fa, fb)] == [None] * 13
    gpu_a = load_trace(write_nsys_sqlite(tmp_path / "g2.sqlite", kernels=[{"start": 1000, "end": 1100}]))
    both = diff_findings(findings_for(gpu_a), fa)  # two GPU runs: the rules both evaluated lead, by |delta|
    assert [(r["rule"], r["delta_ns"]) for r in both][:3] == [
        ("gpu-low-util", 599_999_100),
        ("gpu-starv", 599_998_900),
        ("exposed-comm", 0),
    ]
    assert rows["cuda-sync-api"]["change"] == "not evaluated"  # no CUDA API calls in either run
    assert "  not evaluated in B gpu-starv" in diff_text(list(rows.values()))
    assert not_evaluated(fb)["the trace has no GPU work"] == ["host-bound-steps", "gpu-starv", "gpu-low-util"]


def test_nvtx_overlap_without_kernels_is_unmeasured(tmp_path, capsys):
    from dashboard.analysis.tables import nvtx_table
    from dashboard.figures.nvtx_bars import build_nvtx_union_bars

    path = write_nsys_sqlite(
        tmp_path / "cpu.sqlite", nvtx=[{"start": 100, "end": 900, "eventType": 59, "text": "step"}]
    )
    t = load_trace(path)
    for grouped in (False, True):
        [row] = nvtx_rows(t, grouped)
        assert (row["name"], row["union_ns"], row["gpu_overlap_ns"], row["overlap_pct"]) == ("step", 800, None, None)
        assert row["overlap_note"] == "—: not measured, CUDA was not traced (NVTX only)"  # the cells' hover
    # its summary JSON (the contract writes 0 there) draws ranges as union time, never as wholly "GPU idle"
    summary = summarize_cli(capsys, path)
    assert summary["nvtx"]["step"]["gpu_overlap_s"] == 0.0
    fig = build_nvtx_union_bars(nvtx_table(t.summary), gpu_measured=False)
    assert [tr.name for tr in fig.data] == ["union time (GPU not traced: no kernel or CUDA API call in this summary)"]
    # with a kernel the overlap is measured, 0 included
    k = load_trace(
        write_nsys_sqlite(
            tmp_path / "k.sqlite",
            kernels=[{"start": 2000, "end": 2100}],
            nvtx=[{"start": 100, "end": 900, "eventType": 59, "text": "step"}],
        )
    )
    [row] = nvtx_rows(k, True)
    assert (row["gpu_overlap_ns"], row["overlap_pct"], "overlap_note" in row) == (0, 0.0, False)


def test_busy_source_choices_are_disabled_where_they_change_nothing(tmp_path):
    from dashboard.app.views.overview import busy_options

    cpu = load_trace(
        write_nsys_sqlite(tmp_path / "cpu.sqlite", nvtx=[{"start": 0, "end": 9, "eventType": 59, "text": "s"}])
    )
    gpu = load_trace(write_nsys_sqlite(tmp_path / "gpu.sqlite", kernels=[{"start": 0, "end": 9}]))
    assert [o["disabled"] for o in busy_options(gpu)] == [False] * 3
    assert {(o["disabled"], o["title"]) for o in busy_options(cpu)} == {
        (True, "CUDA was not traced: no GPU work to count")
    }
    from paths import SEED

    summary = load_trace(SEED)
    assert {o["title"] for o in busy_options(summary)} == {
        "a summary JSON holds kernel totals only: no graph or memcpy/memset intervals to count"
    }


def test_a_summary_json_cannot_have_its_stats_for_a_visible_window(tmp_path):
    """QA: "visible window" could be chosen on a summary JSON, whose panels then still said "whole trace"."""
    from dashboard.app.views.overview import stats_options

    from paths import SEED

    why = "a summary JSON holds whole-trace totals only: no intervals to clip at a window's edges"
    assert [(o["value"], o["disabled"], o["title"]) for o in stats_options(load_trace(SEED))] == [
        ("trace", False, ""),
        ("window", True, why),
    ]
    gpu = load_trace(write_nsys_sqlite(tmp_path / "gpu.sqlite", kernels=[{"start": 0, "end": 9}]))
    assert [(o["value"], o["disabled"], o["title"]) for o in stats_options(gpu)] == [
        ("trace", False, ""),
        ("window", False, ""),
    ]
