"""Issue 26 (traces from the field), classes 1, 2, 4 and 5: the words around correct numbers stay true.

1. Warnings agree: launches without kernel rows never read "no GPU work" / "nothing ran"; `summarize` writes
   null where `report` says n/a.
2. Every share is bounded by its whole (≤ 100 %) or n/a; severity never comes from a made-up denominator.
4. A finding never states the absence of a kind of call the trace holds under driver-API (cu*) names.
5. A per-step figure needs steps: without dispatch marks it is n/a.

Fixtures are built in code (pid 100, thread 101 unless said; times in ns); the handed field files are cases too.
"""

import json
import math
import sqlite3

import pytest

from dashboard.analysis import findings as fd
from dashboard.analysis.summary import summary_to_dict
from dashboard.data.trace import load_trace
from dashboard.loaders.summary_json import parse_summary
from dashboard.render import overview_cards
from dashboard.render.findings import findings_for, findings_json

from factories import GLOBAL_PID_1, GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA

TRITON = DATA / "cases" / "field" / "triton_example.json.gz"
RANGE_MODE = DATA / "cases" / "kineto_cupti_range_mode" / "hta_cupti_profiler_trace.json.gz"
GLOBAL_TID_2 = GLOBAL_PID_1 | 102  # pid 100, tid 102


def _api(start, end, name, corr, tid=GLOBAL_TID_1):
    return {"start": start, "end": end, "name": name, "correlationId": corr, "globalTid": tid}


def _mark(ts, text):
    return {"start": ts, "end": None, "eventType": 34, "text": text}


def _copies(path, rows):
    """Add CUPTI_ACTIVITY_KIND_MEMCPY rows (start, end, correlation id, bytes, copyKind, srcKind, dstKind) and
    CUPTI_ACTIVITY_KIND_MEMSET rows (start, end, correlation id, bytes, memKind) to an export."""
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, "
        "srcKind INTEGER, dstKind INTEGER)"
    )
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, "
        "memKind INTEGER)"
    )
    for r in rows:
        if r[0] == "memset":
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,0,1,7,?,?,0,?,?)",
                (r[1], r[2], r[3], GLOBAL_PID_1, r[4], r[5]),
            )
        else:
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,0,1,7,?,?,?,?,?,?)",
                (r[1], r[2], r[3], GLOBAL_PID_1, *r[4:]),
            )
    con.commit()
    con.close()
    return path


PAGEABLE, PINNED, DEVICE = 0, 1, 2
HTOD, DTOH = 1, 2


def build_offload(path, marks=False):
    """An OpenMP-offload-shaped capture: every CUDA call is a driver-API call (no cuda* runtime name).

    cuLaunchKernel [9000, 9500) -> kernel [10000, 12000); cuMemcpyHtoDAsync_v2 [13000, 13100) of 1 MiB pageable
    memory -> copy [13050, 23050); cuStreamSynchronize [13100, 23100); cuLaunchKernel [39000, 39400) -> kernel
    [40000, 41000); cuMemcpyDtoH_v2 [41000, 45000) of 4 MiB into pageable memory -> copy [41100, 44900);
    cuCtxSynchronize [45000, 46000). ``marks``: dispatch marks at 8000 and 30000 (tokens 1 and 2)."""
    write_nsys_sqlite(
        path,
        kernels=[
            {"start": 10000, "end": 12000, "correlationId": 1, "shortName": "__omp_offloading_main_l10"},
            {"start": 40000, "end": 41000, "correlationId": 4, "shortName": "__omp_offloading_main_l20"},
        ],
        runtime=[
            _api(9000, 9500, "cuLaunchKernel", 1),
            _api(13000, 13100, "cuMemcpyHtoDAsync_v2", 2),
            _api(13100, 23100, "cuStreamSynchronize", 3),
            _api(39000, 39400, "cuLaunchKernel", 4),
            _api(41000, 45000, "cuMemcpyDtoH_v2", 5),
            _api(45000, 46000, "cuCtxSynchronize", 6),
        ],
        nvtx=[_mark(8000, "CG_DISPATCH:actual=1"), _mark(30000, "CG_DISPATCH:actual=2")] if marks else (),
    )
    return _copies(
        path,
        [
            ("memcpy", 13050, 23050, 2, 1 << 20, HTOD, PAGEABLE, DEVICE),
            ("memcpy", 41100, 44900, 5, 4 << 20, DTOH, DEVICE, PAGEABLE),
        ],
    )


def build_openacc(path):
    """An OpenACC-shaped capture (the NVHPC runtime calls the driver): cuLaunchKernel [1000, 1200) -> kernel
    [1500, 2500); cuMemcpyDtoHAsync_v2 [3000, 3100) into pageable memory -> copy [3050, 5050) (256 KiB);
    cuMemsetD32_v2 [6000, 6500) on pinned memory -> memset [6100, 6400); cuEventSynchronize [7000, 9000)."""
    write_nsys_sqlite(
        path,
        kernels=[{"start": 1500, "end": 2500, "correlationId": 1, "shortName": "main_12_gpu"}],
        runtime=[
            _api(1000, 1200, "cuLaunchKernel", 1),
            _api(3000, 3100, "cuMemcpyDtoHAsync_v2", 2),
            _api(6000, 6500, "cuMemsetD32_v2", 3),
            _api(7000, 9000, "cuEventSynchronize", 4),
        ],
    )
    return _copies(
        path, [("memcpy", 3050, 5050, 2, 256 << 10, DTOH, DEVICE, PAGEABLE), ("memset", 6100, 6400, 3, 4096, PINNED)]
    )


def build_not_captured(path):
    """A WSL2-shaped capture: 3 cudaLaunchKernel calls and a cudaStreamSynchronize [5000, 9000), no kernel row
    (GPU activity not recorded); an NVTX range "step" [500, 10000)."""
    write_nsys_sqlite(
        path,
        runtime=[
            _api(1000, 1100, "cudaLaunchKernel_v7000", 1),
            _api(2000, 2100, "cudaLaunchKernel_v7000", 2),
            _api(3000, 3100, "cudaLaunchKernel_v7000", 3),
            _api(5000, 9000, "cudaStreamSynchronize_v3020", 4),
        ],
        nvtx=[{"start": 500, "end": 10000, "eventType": 59, "text": "step"}],
    )
    return path


def by_rule(trace):
    return {f.rule: f for f in findings_for(trace)}


def records(f):
    return f.rows.to_dict("records")


def build_contended(path):
    """Blocking calls that outlast their phase's steps or overlap on several threads (times in ns):

    dispatches: D0 [1000, 2000) prefill (1000 tokens), D1 [2000, 3000) and D2 [3000, 4000) decode (1 token);
    kernel [3500, 4000) launched by cudaLaunchKernel [3100, 3150) on thread 102. Thread 101:
    cudaStreamSynchronize [2000, 3000) and [3000, 3900); thread 102: cudaStreamSynchronize [2000, 3000);
    thread 103: cudaDeviceSynchronize [1500, 2600) (starts in prefill, ends in decode)."""
    tid = {n: GLOBAL_PID_1 | n for n in (101, 102, 103)}
    write_nsys_sqlite(
        path,
        kernels=[{"start": 3500, "end": 4000, "correlationId": 1}],
        runtime=[
            _api(3100, 3150, "cudaLaunchKernel_v7000", 1, tid[102]),
            _api(2000, 3000, "cudaStreamSynchronize_v3020", 2, tid[101]),
            _api(3000, 3900, "cudaStreamSynchronize_v3020", 3, tid[101]),
            _api(2000, 3000, "cudaStreamSynchronize_v3020", 4, tid[102]),
            _api(1500, 2600, "cudaDeviceSynchronize_v3020", 5, tid[103]),
        ],
        nvtx=[
            _mark(1000, "CG_DISPATCH:actual=1000"),
            _mark(2000, "CG_DISPATCH:actual=1"),
            _mark(3000, "CG_DISPATCH:actual=1"),
        ],
    )
    return path


def build_launch_bound_no_marks(path):
    """No dispatch marks: kernels [1300, 1350) and [1700, 1750), each launched by a 300 ns cudaLaunchKernel
    ([1000, 1300), [1400, 1700))."""
    write_nsys_sqlite(
        path,
        kernels=[{"start": 1300, "end": 1350, "correlationId": 1}, {"start": 1700, "end": 1750, "correlationId": 2}],
        runtime=[_api(1000, 1300, "cudaLaunchKernel_v7000", 1), _api(1400, 1700, "cudaLaunchKernel_v7000", 2)],
    )
    return path


BUILDERS = {
    "offload": build_offload,
    "offload_marks": lambda p: build_offload(p, marks=True),
    "openacc": build_openacc,
    "not_captured": build_not_captured,
    "contended": build_contended,
    "launch_bound": build_launch_bound_no_marks,
}


@pytest.fixture(scope="module")
def built_paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("field_words")
    return {name: build(d / f"{name}.sqlite") for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def built(built_paths):
    return {name: load_trace(p) for name, p in built_paths.items()}


# ---------------------------------------------------------------- 1. warnings that contradict each other

NOT_CAPTURED = (
    "GPU activity was not captured: 3 kernel launch calls were recorded but no kernel or CUDA graph "
    "execution, so the GPU span, busy union and idle are unknown (n/a; null in `summarize` JSON), not 0; "
    "record with CUDA tracing on (`nsys profile --trace=cuda ...`); under WSL2, Nsight Systems may not "
    "trace GPU activity (see the WSL2 limits in its user guide): profile on native Linux to record kernels"
)


def test_launches_without_kernel_rows_never_read_as_no_gpu_work(built):
    t = built["not_captured"]
    assert t.summary.warnings == ("pid 100: 3 launches, 0 kernels (possible capture gap)", NOT_CAPTURED)
    assert not any("nothing ran" in w or "no GPU work" in w for w in t.summary.warnings)
    d = summary_to_dict(t.summary)
    # report's cards say n/a for the same file: summarize writes null, never a measured-looking 0.0
    assert (d["gpu_activity_span_s"], d["gpu_busy_union_s"], d["gpu_idle_within_span_s"]) == (None, None, None)
    assert [c.value for c in overview_cards(t)[:4]] == ["n/a"] * 4
    assert d["kernel_count"] == 0 and d["api"]["cudaLaunchKernel_v7000"] == [3, 3e-07]


def test_a_summary_with_null_gpu_times_reads_back_as_unknown(built, tmp_path):
    d = json.loads(json.dumps(summary_to_dict(built["not_captured"].summary)))
    s = parse_summary(d, "nc.summary.json")
    assert (s.gpu_activity_span_ns, s.gpu_busy_union_ns, s.utilisation_pct) == (0, 0, None)
    assert s.gpu_activity_missing.startswith("the summary's GPU span, busy union and idle are null")
    assert summary_to_dict(s)["gpu_activity_span_s"] is None  # and writes null again
    p = tmp_path / "nc.summary.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    trace = load_trace(p)
    assert [c.value for c in overview_cards(trace)[:4]] == ["n/a"] * 4


def test_cli_summarize_writes_null_for_a_capture_gap(built_paths, tmp_path):
    from dashboard.cli import main

    out = tmp_path / "s.json"
    assert main(["summarize", "--no-cache", str(built_paths["not_captured"]), "-o", str(out)]) == 0
    d = json.loads(out.read_text())
    assert (d["gpu_activity_span_s"], d["gpu_busy_union_s"], d["gpu_idle_within_span_s"]) == (None, None, None)
    assert d["warnings"][-1] == NOT_CAPTURED


def test_range_profiler_kineto_trace_summarises_unknown_gpu_time():
    """Handed case (real, HTA): CUPTI range-profiler mode, 77 launches, no kernel activity."""
    t = load_trace(RANGE_MODE)
    d = summary_to_dict(t.summary)
    assert (d["gpu_activity_span_s"], d["gpu_busy_union_s"], d["gpu_idle_within_span_s"]) == (None, None, None)
    assert t.summary.warnings[-1] == (
        "GPU activity was not captured: 77 kernel launch calls were recorded but no kernel or CUDA graph "
        "execution, so the GPU span, busy union and idle are unknown (n/a; null in `summarize` JSON), not 0; "
        "record with the CUDA activity on (torch.profiler ProfilerActivity.CUDA), not in CUPTI range-profiler mode"
    )
    assert not any("nothing ran" in w for w in t.summary.warnings)


def test_a_trace_that_launched_nothing_keeps_the_contract_zeros(tmp_path):
    """No CUDA traced (NVTX only): 0 by the contract's definition, and the sentence says so, not "nothing ran"."""
    t = load_trace(
        write_nsys_sqlite(tmp_path / "nvtx.sqlite", nvtx=[{"start": 100, "end": 900, "eventType": 59, "text": "step"}])
    )
    d = summary_to_dict(t.summary)
    assert (d["gpu_activity_span_s"], d["gpu_busy_union_s"], d["gpu_idle_within_span_s"]) == (0.0, 0.0, 0.0)
    assert t.summary.warnings == (
        "CUDA was not traced (no kernel, CUDA API, CUDA graph or memcpy/memset rows): "
        "the GPU span, busy union and idle are 0 by the summary contract's definition, not "
        "measured; GPU work, if any ran, was not recorded (record it with `nsys profile "
        "--trace=cuda,nvtx ...`)",
    )


def test_nothing_ran_is_said_only_when_cuda_was_traced_and_nothing_was_launched(tmp_path):
    t = load_trace(write_nsys_sqlite(tmp_path / "malloc.sqlite", runtime=[_api(100, 900, "cudaMalloc_v3020", 1)]))
    assert t.summary.warnings == (
        "no GPU work recorded (no kernel, CUDA graph or memcpy/memset rows): the GPU span, "
        "busy union and idle are 0 because nothing ran on a GPU in this capture, not "
        "because a GPU was idle",
    )
    assert summary_to_dict(t.summary)["gpu_activity_span_s"] == 0.0


def test_rules_that_need_gpu_rows_say_the_activity_was_not_captured(built):
    f = by_rule(built["not_captured"])
    for rule in ("host-bound-steps", "launch-bound", "decode-no-graphs", "exposed-comm", "gpu-starv", "gpu-low-util"):
        assert f[rule].summary == (
            "Not evaluated: GPU activity was not captured (kernels were launched, but the "
            "trace holds no kernel or CUDA-graph execution)."
        ), rule
        assert not f[rule].evaluated and f[rule].note == "GPU activity was not captured"


# ---------------------------------------------------------------- 2. shares beyond 100 %


def _pcts(findings):
    """(rule, field, value) of every percentage in every finding's evidence rows."""
    return [(f.rule, c, v) for f in findings for c in f.rows.columns if c.endswith("_pct") for v in f.rows[c].tolist()]


def test_triton_sync_share_is_of_the_trace_not_of_a_1_76_us_gpu_span():
    """Handed file (real, HTA): 1 kernel, GPU span 1.76 µs, a 13.3 s trace. sync-in-loop read 957.2 % "high"."""
    t = load_trace(TRITON)
    assert t.summary.gpu_activity_span_ns == 1760 and fd.trace_span(t.bundle) == (353821001, 13690136806)
    f = by_rule(t)
    assert records(f["sync-in-loop"]) == [
        {
            "phase": "all",
            "steps": 0,
            "calls": 1,
            "calls_per_step": pytest.approx(math.nan, nan_ok=True),
            "blocked_ns": 16846,
            "step_ns": None,
            "share_pct": round(100 * 16846 / (13690136806 - 353821001), 2),
            "api_name": "cudaDeviceSynchronize",
            "nvtx_range": "",
            "top_blocked_ns": 16846,
            "gpu_idle_ns": 0,  # one 1.76 µs kernel: no idle gap in the GPU activity span
        }
    ]
    assert f["sync-in-loop"].rows["share_pct"].iloc[0] == 0.0  # 0.000126 %: 16.8 µs of 13.3 s
    assert f["sync-in-loop"].summary == (
        "No dispatch marks, so the whole trace is the loop (no per-step figures): 1 blocking call holds 1 host "
        "thread 16.8 µs, under 0.1 % of its time over the trace's 13.3 s span (first to last recorded event), "
        "mostly cudaDeviceSynchronize (16.8 µs); it lies outside the recorded GPU work (its first start to its last "
        "end), so what it cost the GPU is not measured."
    )
    # no GPU time lost, whatever the share: never a severity from 16.8 µs / 1.76 µs
    ranked = findings_for(t)
    assert [(x.rule, x.severity, x.cost_ns) for x in ranked[:1]] == [("launch-bound", "low", 46008)]
    assert {x.rule: (x.severity, x.cost_ns) for x in ranked if x.rule in ("sync-in-loop", "cuda-sync-api")} == {
        "sync-in-loop": ("none", 0),
        "cuda-sync-api": ("none", 0),
    }
    assert all(v is None or 0 <= v <= 100 for _, _, v in _pcts(findings_for(t)))


def test_a_blocking_call_that_outlasts_its_phase_or_overlaps_other_threads_stays_within_100_pct(built):
    """contended: decode blocked 2,900 ns over 2,000 ns of steps (145 % before), prefill 1,100 ns over a
    1,000 ns step (110 % before). Now each thread's calls inside the phase's steps over steps × threads:
    decode (1,900 + 1,000) / (2,000 × 2) = 72.5 %, prefill [1500, 2000) of [1000, 2000) = 50 %."""
    f = by_rule(built["contended"])["sync-in-loop"]
    assert [(r["phase"], r["calls"], r["blocked_ns"], r["step_ns"], r["share_pct"]) for r in records(f)] == [
        ("decode", 3, 2900, 2000, 72.5),
        ("prefill", 1, 1100, 1000, 50.0),
    ]
    # the one kernel [3500, 4000) is the GPU activity span, with no idle in it: the calls cost no GPU time
    assert f.cost_ns == 0 and f.rows["gpu_idle_ns"].tolist() == [0, 0]
    assert f.summary == (
        "4 blocking calls in the dispatch loop hold the host 4 µs; decode: 1.5 per step, 72.5 % of "
        "its step time on 2 blocking host threads, 2.9 µs blocked, mostly cudaStreamSynchronize (2.9 µs); GPU work "
        "(kernels, CUDA "
        "graphs, memcpy/memset) never stopped while they blocked or right after they returned, within its "
        "first-to-last span: no GPU time lost."
    )


def test_a_zero_gpu_span_is_no_denominator(built):
    """No kernel row (GPU span 0): the share was blocked / 1 ns (1,615,097,475,500 % on a field trace) rated
    "high"; now the share is of the trace's span [500, 10000) and the severity from 4 µs of 9.5 µs."""
    t = built["not_captured"]
    ctx = fd.build_context(t.summary, t.bundle)
    assert ctx.reference_ns == 9500 and fd.trace_span(t.bundle) == (500, 10000)
    f = by_rule(t)["sync-in-loop"]
    assert [(r["blocked_ns"], r["step_ns"], r["share_pct"]) for r in records(f)] == [(4000, None, 42.11)]
    # no GPU work recorded: what the calls cost the GPU is unknown, so their blocked time stands (4000 / 9500 = 42 %)
    assert (f.severity, f.cost_ns) == ("high", 4000) and f.rows["gpu_idle_ns"].tolist() == [None]
    assert f.summary.endswith(
        "; no GPU work was recorded, so what it cost the GPU is unknown: the time it blocked stands as the cost."
    )


def test_severity_without_any_whole_is_low_never_a_ratio_over_1_ns():
    assert fd.severity_of(5, 0) == "low" and fd.severity_of(0, 0) == "none"
    assert (fd.severity_of(10, 100), fd.severity_of(2, 100), fd.severity_of(1, 100)) == ("high", "medium", "low")


def test_a_summary_json_states_no_share_of_the_span():
    """Totals are summed over host threads, which a summary does not count: no percentage of the span."""
    from paths import SEED

    f = by_rule(load_trace(SEED))["sync-in-loop"]
    assert f.summary == (
        "92 cudaStreamSynchronize calls block the host 6.39 s inside NVTX range PLE_wait_for_GPU "
        "(46 ranges, 6.39 s), summed over host threads; the GPU activity span is 17.5 s, with 458 ms of it idle: "
        "the most they can have cost the GPU (from the summary's totals; shares and per-step numbers need event rows)."
    )
    assert "%" not in f.summary


def test_every_share_of_every_built_member_is_within_its_whole(built):
    for name, t in built.items():
        for rule, col, v in _pcts(findings_for(t)):
            assert v is None or (isinstance(v, float) and math.isnan(v)) or 0 <= v <= 100, (name, rule, col, v)


# ---------------------------------------------------------------- 4. driver-API calls reported as absent

# What the findings said before on the offload capture: each denies a kind of call the trace holds.
FALSE_ABSENCES = (
    "No synchronisation calls.",
    "No async memcpy calls with pageable memory (made synchronous).",
    "No synchronous memcpy calls.",
    "No synchronous or pageable copies.",
    "No blocking CUDA synchronisation calls.",
)


def test_offload_driver_calls_are_named_by_the_nsys_rules_that_do_not_read_them(built):
    f = by_rule(built["offload"])
    assert all(f[r].rows.empty for r in ("cuda-sync-api", "cuda-sync-memcpy", "cuda-async-memcpy"))  # NVIDIA's rows
    assert f["cuda-sync-api"].summary == (
        "No cudaDeviceSynchronize/cudaStreamSynchronize call (the CUDA runtime names this nsys rule reads); it does "
        "not look at the trace's 2 other synchronisation calls (cuCtxSynchronize ×1, cuStreamSynchronize ×1): see "
        "sync-in-loop."
    )
    assert f["cuda-sync-memcpy"].summary == (
        "No blocking copy by a synchronous cudaMemcpy* call (the CUDA runtime names this nsys rule reads); it does "
        "not look at the trace's 1 driver-API synchronous copy (cuMemcpyDtoH_v2 ×1, 3.8 µs): see pageable-in-loop."
    )
    assert f["cuda-async-memcpy"].summary == (
        "No pageable-memory copy by a cudaMemcpy*Async call (the CUDA runtime names this nsys rule reads); it does "
        "not look at the trace's 1 driver-API async pageable-memory copy (cuMemcpyHtoDAsync_v2 ×1, 10 µs): see "
        "pageable-in-loop."
    )
    assert f["cuda-sync-api"].note == (
        "the nsys rule reads cudaDeviceSynchronize/cudaStreamSynchronize only; not "
        "looked at: the trace's 2 other synchronisation calls (cuCtxSynchronize ×1, "
        "cuStreamSynchronize ×1): see sync-in-loop"
    )
    # tracedash's own rules read the driver API
    assert [(r["calls"], r["blocked_ns"], r["api_name"]) for r in records(f["sync-in-loop"])] == [
        (2, 11000, "cuStreamSynchronize")
    ]
    assert f["pageable-in-loop"].summary == (
        "2 synchronous/pageable copies; no dispatch marks to place them in a loop (the API tab lists their calls)."
    )
    assert not {x.summary for x in f.values()} & set(FALSE_ABSENCES)
    assert f["cuda-sync-memset"].summary == "No synchronous memsets."  # true: no memset under any name


def test_pageable_in_loop_counts_driver_api_copies(built):
    f = by_rule(built["offload_marks"])["pageable-in-loop"]
    assert [
        (r["phase"], r["rule"], r["duration_ns"], r["bytes"], r["src_kind"], r["dst_kind"], r["api_name"])
        for r in records(f)
    ] == [
        ("decode", "cuda-async-memcpy", 10000, 1 << 20, "Pageable", "Device", "cuMemcpyHtoDAsync_v2"),
        ("", "cuda-sync-memcpy", 3800, 4 << 20, "Device", "Pageable", "cuMemcpyDtoH_v2"),
    ]
    assert f.cost_ns == 10000 and f.summary == (
        "1 synchronous or pageable copy inside the dispatch loop takes 10 µs of GPU copy time, most in decode "
        "(1 copy); largest: 1,048,576 B Pageable→Device by cuMemcpyHtoDAsync_v2."
    )


def test_openacc_driver_calls_are_named_too(built):
    """The NVHPC OpenACC runtime issues driver calls: a pageable cuMemcpyDtoHAsync_v2, a cuMemsetD32_v2 on
    pinned memory and cuEventSynchronize."""
    f = by_rule(built["openacc"])
    assert f["cuda-sync-memset"].rows.empty and f["cuda-sync-memset"].summary == (
        "No memset of pinned or managed memory by a synchronous cudaMemset* call (the CUDA runtime names this nsys "
        "rule reads); it does not look at the trace's 1 driver-API synchronous memset (cuMemsetD32_v2 ×1, 300 ns): "
        "see the API tab."
    )
    assert f["cuda-async-memcpy"].summary.endswith(
        "it does not look at the trace's 1 driver-API async pageable-memory copy (cuMemcpyDtoHAsync_v2 ×1, 2 µs): "
        "see pageable-in-loop."
    )
    assert f["cuda-sync-api"].summary.endswith(
        "it does not look at the trace's 1 other synchronisation call (cuEventSynchronize ×1): see sync-in-loop."
    )
    assert f["cuda-sync-memcpy"].summary == "No synchronous memcpy calls."  # the trace holds none, under any name
    assert [(r["calls"], r["blocked_ns"]) for r in records(f["sync-in-loop"])] == [(1, 2000)]
    assert f["pageable-in-loop"].summary == (
        "1 synchronous/pageable copy; no dispatch marks to place them in a loop (the API tab lists their calls)."
    )


def test_rows_found_by_an_nsys_rule_still_name_what_it_skipped(tmp_path):
    """A runtime cudaStreamSynchronize (NVIDIA's row) beside a driver cuCtxSynchronize."""
    t = load_trace(
        write_nsys_sqlite(
            tmp_path / "mixed.sqlite",
            runtime=[_api(1000, 3000, "cudaStreamSynchronize_v3020", 1), _api(4000, 4500, "cuCtxSynchronize", 2)],
        )
    )
    f = by_rule(t)["cuda-sync-api"]
    assert [(r["api_name"], r["duration_ns"]) for r in records(f)] == [("cudaStreamSynchronize_v3020", 2000)]
    assert f.summary == (
        "1 synchronisation call, 2 µs in all; the longest 2 µs at 0.000 s (CUDA runtime names only, "
        "as nsys; not looked at: the trace's 1 other synchronisation call (cuCtxSynchronize ×1): "
        "see sync-in-loop); no GPU work was recorded, so what it cost the GPU is unknown: the time it blocked "
        "stands as the cost."
    )


# ---------------------------------------------------------------- 5. per-step figures without steps


def test_launch_bound_without_steps_has_no_per_step_figures(built):
    f = by_rule(built["launch_bound"])["launch-bound"]
    assert records(f) == [
        {
            "phase": "all",
            "steps": 0,
            "kernels": 2,
            "kernels_per_step": None,
            "short_kernel_pct": 100.0,
            "launch_ns_per_step": None,
            "launch_over_kernel_ns": 500,
            "launch_bound": True,
        }
    ]
    assert f.summary == (
        "No dispatch marks, so the whole trace is one loop (no per-step figures) and it is "
        "launch-bound: 100.0 % of 2 kernels run shorter than their launch call, 600 ns of launch "
        "calls in all; launches outlast their kernels by 500 ns in all."
    )
    assert "per step" not in f.summary.replace("no per-step figures", "")


def test_triton_launch_bound_has_no_per_step_figures():
    """Handed file: 1 kernel of 1.76 µs launched by a 47.8 µs cuLaunchKernel, no dispatch marks."""
    t = load_trace(TRITON)
    f = by_rule(t)["launch-bound"]
    assert records(f) == [
        {
            "phase": "all",
            "steps": 0,
            "kernels": 1,
            "kernels_per_step": None,
            "short_kernel_pct": 100.0,
            "launch_ns_per_step": None,
            "launch_over_kernel_ns": 46008,
            "launch_bound": True,
        }
    ]
    assert f.summary == (
        "No dispatch marks, so the whole trace is one loop (no per-step figures) and it is "
        "launch-bound: its 1 kernel runs shorter than its launch call, 47.8 µs of launch calls in "
        "all; launches outlast their kernels by 46 µs in all."
    )
    rows = {x["rule"]: x["rows"] for x in findings_json(t, findings_for(t))["findings"]}
    assert (rows["launch-bound"][0]["kernels_per_step"], rows["launch-bound"][0]["launch_ns_per_step"]) == (None, None)
    assert (rows["sync-in-loop"][0]["calls_per_step"], rows["sync-in-loop"][0]["step_ns"]) == (None, None)


def test_per_step_figures_with_steps_are_kept(built):
    f = by_rule(built["contended"])["launch-bound"]
    assert records(f) == [
        {
            "phase": "decode",
            "steps": 2,
            "kernels": 1,
            "kernels_per_step": 0.5,
            "short_kernel_pct": 0.0,
            "launch_ns_per_step": 25,
            "launch_over_kernel_ns": 0,
            "launch_bound": False,
        }
    ]


def test_no_finding_prints_a_per_step_figure_beside_zero_steps(built):
    for name, t in [*built.items(), ("triton", load_trace(TRITON))]:
        for f in findings_for(t):
            if f.rows.empty or "steps" not in f.rows:
                continue
            for r in records(f):
                if r["steps"] == 0:
                    per_step = {k: v for k, v in r.items() if "per_step" in k or k == "step_ns"}
                    assert all(v is None or (isinstance(v, float) and math.isnan(v)) for v in per_step.values()), (
                        name,
                        f.rule,
                        per_step,
                    )


def test_the_evidence_grid_shows_a_dash_for_a_figure_no_row_has():
    """The panel's grid picks each column's format from its first value; a per-step figure without steps is
    null in every row: "—", never a blank cell."""
    from dashboard.app.views.findings import _grid
    from dashboard.render.findings import rows_of

    f = by_rule(load_trace(TRITON))["launch-bound"]
    cols = {c["field"]: c for c in _grid(0, rows_of(f.rows)).columnDefs}
    for field in ("kernels_per_step", "launch_ns_per_step"):
        assert cols[field]["valueFormatter"]["function"].endswith("? '—' : params.value"), field
    assert "'n/a'" in cols["short_kernel_pct"]["valueFormatter"]["function"]


def test_hip_synchronisation_of_a_rocm_trace_is_not_denied():
    """A real ROCm (HIP) Kineto trace: one hipEventSynchronize. sync-in-loop said "No blocking CUDA
    synchronisation calls." and cuda-sync-api "No synchronisation calls."."""
    from paths import DATA as D

    t = load_trace(D / "kineto" / "rocm_vllm_decode_graph_replay.json.gz")
    f = by_rule(t)
    assert [(r["calls"], r["blocked_ns"], r["api_name"]) for r in records(f["sync-in-loop"])] == [
        (1, 2190, "hipEventSynchronize")
    ]
    assert f["cuda-sync-api"].rows.empty and f["cuda-sync-api"].summary == (
        "No cudaDeviceSynchronize/cudaStreamSynchronize call (the CUDA runtime names this nsys rule reads); it does "
        "not look at the trace's 1 other synchronisation call (hipEventSynchronize ×1): see sync-in-loop."
    )


UNTIMED = (
    "no kernel row has usable timestamps (each lacks one or has an invalid one): the GPU span, busy union and "
    "idle are unknown (n/a; null in `summarize` JSON), not 0"
)


def test_kernel_rows_without_usable_timestamps_are_unknown_gpu_time_not_none(tmp_path):
    """Two kernels, one without timestamps (0/0), one with end < start, each launched: report said n/a "no GPU
    work in this trace", summarize wrote span 0.0, launch-bound counted both as shorter than their launch
    (their duration read as 0) and exposed-comm said "No kernels."."""
    t = load_trace(
        write_nsys_sqlite(
            tmp_path / "untimed.sqlite",
            kernels=[{"start": 0, "end": 0, "correlationId": 1}, {"start": 500, "end": 400, "correlationId": 2}],
            runtime=[_api(100, 200, "cudaLaunchKernel_v7000", 1), _api(300, 350, "cudaLaunchKernel_v7000", 2)],
        )
    )
    assert t.summary.warnings == (
        "kernels: 1 without timestamps (start = end = 0), left out of span and busy",
        "1 invalid kernel row (end < start, a missing or impossible timestamp, or a duration over 24 h) left out of "
        "span, busy time and kernel times.",
        UNTIMED,
    )
    d = summary_to_dict(t.summary)
    assert (d["gpu_activity_span_s"], d["gpu_busy_union_s"], d["gpu_idle_within_span_s"], d["kernel_count"]) == (
        None,
        None,
        None,
        2,
    )
    assert [(c.value, c.hint) for c in overview_cards(t)[:4]] == [("n/a", UNTIMED)] * 4
    f = by_rule(t)
    assert (f["launch-bound"].cost_ns, f["launch-bound"].summary) == (
        0,
        "No kernel with usable timestamps could be joined to its launch call.",
    )
    assert f["exposed-comm"].summary == "No timed kernels: none of the 2 kernel rows has a usable duration."


def test_kernels_the_loader_left_out_are_not_nothing_ran(tmp_path):
    """A Kineto trace whose only kernel has a negative duration (left out by the loader, counted): not "nothing
    ran on a GPU", and its GPU time is unknown."""
    p = tmp_path / "neg.json"
    p.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "k_bad",
                        "pid": 0,
                        "tid": 7,
                        "ts": 1000,
                        "dur": -5,
                        "args": {"correlation": 1, "device": 0, "stream": 7},
                    },
                    {
                        "ph": "X",
                        "cat": "cuda_runtime",
                        "name": "cudaLaunchKernel",
                        "pid": 10,
                        "tid": 10,
                        "ts": 990,
                        "dur": 5,
                        "args": {"correlation": 1},
                    },
                ]
            }
        ),
        encoding="utf-8",
    )
    t = load_trace(p)
    assert t.summary.warnings == ("kernels: 1 of 1 rows not loaded: 1 negative duration (invalid row)", UNTIMED)
    assert summary_to_dict(t.summary)["gpu_activity_span_s"] is None
    assert [c.value for c in overview_cards(t)[:4]] == ["n/a"] * 4


def test_gpu_rules_and_the_copy_busy_card_say_what_they_count_beside_a_kernel_only_utilisation():
    # A real 2-GPU capture whose GPUs mostly copy: kernels keep them busy 2.3 % of the span, copies far more.
    from paths import nsys_trace

    t = load_trace(nsys_trace("nsys2026.2_h100_2gpu_torchrun_1s.sqlite"))
    found = {f.rule: f for f in findings_for(t)}
    for rule in ("gpu-starv", "gpu-low-util"):
        assert found[rule].cost_ns == 0
        assert found[rule].summary.endswith(
            "; memcpy/memset time counted as GPU work, as nsys analyze counts it (the kernel-only busy figures do not)."
        ), found[rule].summary
    from dashboard.render.findings import quiet_line

    assert quiet_line(list(found.values())).endswith(  # the page's and the report's one line of the quiet rules
        ", gpu-starv, gpu-low-util, cuda-sync-memcpy, cuda-sync-memset (gpu-starv, gpu-low-util: memcpy/memset time "
        "counted as GPU work, as nsys analyze counts it)"
    )
    cards = {c.label: c for c in overview_cards(t)}
    assert cards["GPU activity span"].value == "960.485 ms"  # kernels only
    assert cards["Busy incl. memcpy/memset"].value == "967.639 ms"  # beyond the kernels' span: its own span says so
    # sqlite3: max(end) - min(start) over the kernel, memcpy and memset tables = 969,447,605 ns
    assert ", over their own span of 969.448 ms from the first kernel or copy to the last;" in (
        cards["Busy incl. memcpy/memset"].hint
    )
    # Without copies the rule's words stay as they were.
    plain = load_trace(DATA / "cases" / "c10.sqlite")
    assert next(f for f in findings_for(plain) if f.rule == "gpu-starv").summary == "No GPU idle gaps over 500 ms."
