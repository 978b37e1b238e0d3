"""Kineto input outside the tested shapes: every event accounted for, never a clean-looking zero.

The handed cases (tests/data/cases/kineto_*, copied from the shared cases folder, exact values from
its README) plus members of each class built here: legacy category names, numeric strings, ranges
still open when profiling stopped, negative durations, ids beyond int64, range-profiler mode, kernels
without timestamps, Chrome traces from other producers, kernel short names.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from dashboard.analysis.summary import summarize
from dashboard.cli import main
from dashboard.errors import TraceFormatError
from dashboard.loaders.kineto_json import kernel_short_name, load_kineto_json
from dashboard.model import RowAccount, input_warnings
from dashboard.state import ViewState

from paths import DATA

CASES = DATA / "cases"
KINETO_TRACES = sorted((DATA / "kineto").glob("*.json.gz"))
CASE_FILES = sorted(CASES.glob("kineto_*/*.json*"))


def write(tmp_path: Path, data, name="t.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return p


def kernel(ts, dur, *, name="k", cat="kernel", pid=0, tid=7, **args):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"device": pid, "stream": tid, **args},
    }


def api(ts, dur, corr, *, name="cudaLaunchKernel", cat="cuda_runtime", pid=100, tid=100):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"correlation": corr},
    }


def events_of(path: Path) -> list:
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return data["traceEvents"] if isinstance(data, dict) else data


def account(bundle, kind) -> RowAccount:
    return next(a for a in bundle.meta.accounts if a.kind == kind)


# ---- every event accounted for ----------------------------------------------------------------------


@pytest.mark.parametrize("path", KINETO_TRACES + CASE_FILES, ids=lambda p: p.name)
def test_every_event_is_read_once_and_accounted_for(path):
    b = load_kineto_json(path)
    for a in b.meta.accounts:
        assert a.read == a.loaded + a.skipped_total + a.unrecognised, a
    assert sum(a.read for a in b.meta.accounts) == len(events_of(path))
    loaded = {a.kind: a.loaded for a in b.meta.accounts}
    assert loaded.get("kernels", 0) == len(b.kernels)
    assert loaded.get("memcpy/memset", 0) == len(b.memops)
    assert loaded.get("CUDA API calls", 0) == len(b.api_calls)
    assert loaded.get("NVTX ranges", 0) == len(b.nvtx_ranges)
    assert loaded.get("NVTX marks", 0) == len(b.nvtx_marks)


def test_accounts_of_a_real_trace():
    b = load_kineto_json(DATA / "kineto" / "a100_3streams_event_sync.json.gz")
    assert b.meta.accounts == (
        RowAccount("kernels", 3, 3),
        RowAccount("memcpy/memset", 3, 3),
        RowAccount("CUDA API calls", 39, 39),
        RowAccount(
            "events not shown",
            104,
            0,
            (
                ("flow events (used only to link kernels to their launches)", 50),
                ("metadata (ph 'M': process and thread names)", 40),
                ("'cpu_op' events (not shown)", 6),
                ("'cuda_sync' events (not shown)", 5),
                ("instant events without a category (profiler markers)", 2),
                ("'Trace' events (not shown)", 1),
            ),
        ),
    )


def test_events_of_unknown_categories_are_counted_and_reported(tmp_path):
    b = load_kineto_json(
        write(
            tmp_path,
            {
                "traceEvents": [
                    kernel(10, 5),
                    {"ph": "X", "cat": "my_tool", "name": "x", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
                    {"ph": "Q", "name": "odd"},
                ]
            },
        )
    )
    assert account(b, "events not shown") == RowAccount("events not shown", 2, 0, (), 2)
    assert b.meta.tables == ("kernel", "my_tool")
    assert input_warnings(b.meta) == ("events not shown: 2 of 2 rows not loaded: 2 not recognised",)


# ---- legacy category names (PyTorch <= 1.13) ----------------------------------------------------------


def test_minimal_legacy_categories_case():
    b = load_kineto_json(CASES / "kineto_legacy_categories" / "minimal_legacy_categories.json")
    s = summarize(b)
    assert (s.kernel_count, s.gpu_busy_union_ns, s.gpu_activity_span_ns) == (2, 50_000, 90_000)
    assert b.memops.astype({"kind": str})[["kind", "bytes"]].values.tolist() == [["memcpy HtoD", 4096], ["memset", 128]]
    assert s.api.values.tolist() == [["cudaLaunchKernel", 1, 10_000], ["cudaMemcpyAsync", 1, 5_000]]
    assert b.meta.warnings == ()


def test_legacy_names_read_exactly_as_the_current_ones(tmp_path):
    current = json.loads((CASES / "kineto_legacy_categories" / "minimal_legacy_categories.json").read_text())
    renamed = {
        "Kernel": "kernel",
        "Runtime": "cuda_runtime",
        "Memcpy": "gpu_memcpy",
        "Memset": "gpu_memset",
        "Operator": "cpu_op",
    }
    for ev in current["traceEvents"]:
        ev["cat"] = renamed.get(ev["cat"], ev["cat"])
    legacy = load_kineto_json(CASES / "kineto_legacy_categories" / "minimal_legacy_categories.json")
    modern = load_kineto_json(write(tmp_path, current))
    for frame in ("kernels", "api_calls", "memops", "nvtx_ranges"):
        pd.testing.assert_frame_equal(getattr(legacy, frame), getattr(modern, frame), check_exact=True)
    assert legacy.meta.accounts == modern.meta.accounts


def test_real_pytorch_1_13_trace_case():
    b = load_kineto_json(CASES / "kineto_legacy_categories" / "hta_inference_rank_1_pt113_Kernel.json.gz")
    s = summarize(b)
    assert (s.kernel_count, s.gpu_busy_union_ns, s.gpu_activity_span_ns) == (4, 30_000, 1_629_000)
    assert dict(zip(s.api["name"], s.api["count"])) == {
        "cudaLaunchKernel": 4,
        "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": 4,
    }
    assert b.meta.rank == 1 and b.meta.warnings == ()
    assert set(b.kernels["pid"]) == {1010370}  # linked to their launches by correlation id


def test_legacy_flow_links_python_and_memory_categories(tmp_path):
    # Another member: a kernel without args.correlation linked through a legacy 'async_gpu' flow;
    # 'Python' and 'Memory' events are known (skipped by rule), not unrecognised.
    events = [
        {
            "ph": "X",
            "cat": "Runtime",
            "name": "cudaLaunchKernel",
            "pid": 9,
            "tid": 9,
            "ts": 5,
            "dur": 2,
            "args": {"correlation": 77},
        },
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "void ns::gemm<1>(int)",
            "pid": 0,
            "tid": "stream 3",
            "ts": 20,
            "dur": 4,
            "args": {},
        },
        {"ph": "s", "cat": "async_gpu", "id": 77, "pid": 9, "tid": 9, "ts": 5},
        {"ph": "f", "cat": "async_gpu", "id": 77, "pid": 0, "tid": "stream 3", "ts": 20, "bp": "e"},
        {"ph": "X", "cat": "Python", "name": "forward", "pid": 9, "tid": 9, "ts": 1, "dur": 30},
        {"ph": "i", "cat": "Memory", "name": "[memory]", "pid": 9, "tid": 9, "ts": 3, "s": "t"},
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    k = b.kernels
    assert k[["correlation_id", "pid", "stream_id"]].values.tolist() == [[77, 9, 3]]
    assert k["short_name"].astype(str).tolist() == ["gemm"]
    assert account(b, "events not shown") == RowAccount(
        "events not shown",
        4,
        0,
        (
            ("flow events (used only to link kernels to their launches)", 2),
            ("'cpu_instant_event' events (not shown)", 1),
            ("'python_function' events (not shown)", 1),
        ),
    )


# ---- numbers written as strings -----------------------------------------------------------------------


def test_ts_strings_case():
    b = load_kineto_json(CASES / "kineto_ts_strings" / "ts_strings.json")
    s = summarize(b)
    assert (s.kernel_count, s.gpu_busy_union_ns, s.gpu_activity_span_ns) == (3, 20_250, 35_300)
    assert s.api.values.tolist() == [["cudaLaunchKernel", 1, 5_000]]
    assert b.kernels[["start_ns", "end_ns"]].values.tolist() == [[54_500, 64_750], [74_750, 79_750], [84_800, 89_800]]


def test_numeric_strings_are_exact_and_other_strings_are_counted(tmp_path):
    events = [
        kernel("1712195495505583.2", "4.928"),
        kernel(" 1712195495505590 ", "1.5e0"),
        kernel("1712195495505600", "abc"),
        kernel("0x10", 1),
        kernel("1e999999", 1),
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    assert b.kernels[["start_ns", "end_ns"]].values.tolist() == [[0, 4928], [6800, 8300]]
    assert account(b, "kernels") == RowAccount("kernels", 5, 2, (("missing, non-numeric or out-of-range ts/dur", 3),))
    assert input_warnings(b.meta) == ("kernels: 3 of 5 rows not loaded: 3 missing, non-numeric or out-of-range ts/dur",)


# ---- ranges still open, negative durations --------------------------------------------------------------


def test_unfinished_ranges_case():
    b = load_kineto_json(CASES / "kineto_unfinished_ranges" / "unfinished_ranges.json")
    r = b.nvtx_ranges
    assert r[["name", "start_ns", "end_ns", "unclosed"]].astype({"name": str}).values.tolist() == [
        ["ProfilerStep#1", 0, 400_000, False],
        ["ProfilerStep#2", 400_000, 1_000_000, True],
        ["decode", 500_000, 1_000_000, True],
    ]
    s = summarize(b)
    assert dict(zip(s.nvtx["name"], s.nvtx["sum_ns"])) == {
        "ProfilerStep#1": 400_000,
        "ProfilerStep#2": 600_000,
        "decode": 500_000,
    }
    assert s.gpu_busy_union_ns == 500_000
    assert b.meta.warnings == (
        "2 annotation range(s) still open when profiling stopped (dur -1), kept as unclosed "
        "ranges ending at the end of the profiler's Trace span",
    )


def test_negative_kernel_duration_case():
    b = load_kineto_json(CASES / "kineto_unfinished_ranges" / "negative_kernel_dur.json")
    s = summarize(b)
    assert b.kernels["name"].astype(str).tolist() == ["k1", "k2"]  # k_bad is in no table
    assert (s.kernel_count, s.gpu_busy_union_ns) == (2, 500_000)
    assert s.top_kernels["name"].tolist() == ["k2", "k1"]
    assert account(b, "kernels") == RowAccount("kernels", 3, 2, (("negative duration (invalid row)", 1),))
    assert input_warnings(b.meta) == ("kernels: 1 of 3 rows not loaded: 1 negative duration (invalid row)",)


def test_open_ranges_without_a_trace_span_close_at_the_last_event(tmp_path):
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 100, "dur": -1},
        {"ph": "B", "cat": "user_annotation", "name": "open_b", "pid": 1, "tid": 2, "ts": 120},
        {"ph": "X", "cat": "user_annotation", "name": "bad", "pid": 1, "tid": 1, "ts": 130, "dur": -5},
        api(110, 5, 1),
        kernel(150, 30, correlation=1),
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    assert b.nvtx_ranges[["name", "start_ns", "end_ns", "unclosed"]].astype({"name": str}).values.tolist() == [
        ["step", 0, 80_000, True],
        ["open_b", 20_000, 80_000, True],
    ]
    assert account(b, "NVTX ranges") == RowAccount("NVTX ranges", 3, 2, (("negative duration (invalid row)", 1),))
    assert b.meta.warnings == (
        "1 'B' event(s) never closed by an 'E' (annotations kept as unclosed ranges ending at the last event's "
        "end; other events dropped)",
        "1 annotation range(s) still open when profiling stopped (dur -1), kept as unclosed ranges ending at the "
        "last event's end",
    )
    assert input_warnings(b.meta)[2:] == ("NVTX ranges: 1 of 3 rows not loaded: 1 negative duration (invalid row)",)


def test_unmatched_begin_closes_at_the_trace_span_end(tmp_path):
    events = [
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "x", "ts": 0, "dur": 500},
        {"ph": "B", "cat": "user_annotation", "name": "open", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "B", "cat": "kernel", "name": "k_open", "pid": 0, "tid": 7, "ts": 20, "args": {}},
        kernel(30, 5),
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    assert b.nvtx_ranges[["name", "start_ns", "end_ns", "unclosed"]].astype({"name": str}).values.tolist() == [
        ["open", 10_000, 500_000, True]
    ]
    assert account(b, "kernels") == RowAccount("kernels", 2, 1, (("'B' never closed by an 'E'", 1),))


# ---- ids beyond int64 -------------------------------------------------------------------------------------

UNKNOWN_IDS = (
    "events with an id beyond the int64 range (correlation, stream, device, context, process or thread) "
    "loaded with that id unknown, as Perfetto reads them (a stream or device from the event's track, a "
    "correlation from its flow arrow, else -1): "
)


def test_ids_beyond_int64_are_loaded_with_that_id_unknown_never_lost_never_an_overflow(tmp_path, capsys):
    """Issue 26 class 8: such events were dropped (counted); Perfetto keeps them with the id unknown, so does
    tracedash: no kernel is lost. A byte count beyond int64 is not an id: that row stays unusable (counted)."""
    big = 2**63
    events = [
        kernel(10, 5, name="ok", correlation=big - 1),
        kernel(20, 5, name="big_corr", correlation=big),
        kernel(30, 5, name="big_stream", stream=2**64),
        kernel(40, 5, name="big_device", device=-big - 1),
        {**kernel(50, 5, name="big_tid"), "tid": f"stream {big}", "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": big, "tid": 1, "ts": 1, "dur": 1},
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD",
            "pid": 0,
            "tid": 7,
            "ts": 60,
            "dur": 1,
            "args": {"bytes": 10**30},
        },
        {"ph": "f", "cat": "ac2g", "id": big, "pid": 0, "tid": 7, "ts": 10},
    ]
    p = write(tmp_path, {"traceEvents": events})
    b = load_kineto_json(p)
    assert b.kernels[["name", "start_ns", "device_id", "stream_id", "correlation_id"]].astype(
        {"name": str}
    ).values.tolist() == [
        ["ok", 9_000, 0, 7, big - 1],
        ["big_corr", 19_000, 0, 7, -1],
        ["big_stream", 29_000, 0, 7, -1],
        ["big_device", 39_000, 0, 7, -1],
        ["big_tid", 49_000, 0, -1, -1],
    ]
    assert b.api_calls[["pid", "tid", "correlation_id"]].values.tolist() == [[-1, 1, -1]]
    assert account(b, "kernels") == RowAccount("kernels", 5, 5)
    assert account(b, "CUDA API calls") == RowAccount("CUDA API calls", 1, 1)
    assert account(b, "memcpy/memset") == RowAccount(
        "memcpy/memset", 1, 0, (("a byte count beyond the int64 range", 1),)
    )
    assert b.meta.warnings == (UNKNOWN_IDS + "kernels 4, CUDA API calls 1",)
    assert input_warnings(b.meta) == (
        UNKNOWN_IDS + "kernels 4, CUDA API calls 1",
        "memcpy/memset: 1 of 1 rows not loaded: 1 a byte count beyond the int64 range",
    )
    # absurd ids are made unknown as fast as large ones (no million-digit integer, no int() digit limit)
    absurd = write(
        tmp_path,
        '{"traceEvents": ['
        + json.dumps(kernel(1, 1))[:-2]
        + ', "correlation": 1e999999}},'
        + json.dumps({**kernel(2, 1), "tid": "stream " + "9" * 5000})
        + "]}",
        "absurd.json",
    )
    ab = load_kineto_json(absurd)
    assert account(ab, "kernels") == RowAccount("kernels", 2, 2)
    assert ab.kernels[["stream_id", "correlation_id"]].values.tolist() == [[7, -1], [7, -1]]  # args.stream 7 kept
    # a flow arrow gives the correlation the kernel's own arg could not; B/E pairs and marks keep theirs unknown too
    flows = [
        {**kernel(10, 5, name="linked"), "args": {"device": 0, "stream": 7, "correlation": 2**70}},
        {"ph": "f", "cat": "ac2g", "id": 41, "pid": 0, "tid": 7, "ts": 10, "bp": "e"},
        api(8, 1, 41),
        {"ph": "B", "cat": "user_annotation", "name": "r", "pid": 1, "tid": 2**64, "ts": 1},
        {"ph": "E", "pid": 1, "tid": 2**64, "ts": 30},
        {"ph": "i", "cat": "user_annotation", "name": "m", "pid": 2**64, "tid": 1, "ts": 3},
    ]
    fb = load_kineto_json(write(tmp_path, {"traceEvents": flows}, "flows.json"))
    assert fb.kernels[["correlation_id", "pid"]].values.tolist() == [[41, 100]]
    assert fb.nvtx_ranges[["tid", "start_ns", "end_ns"]].values.tolist() == [[-1, 0, 29_000]]
    assert fb.nvtx_marks[["pid", "ts_ns"]].values.tolist() == [[-1, 2_000]]
    assert fb.meta.warnings == (UNKNOWN_IDS + "kernels 1, NVTX ranges 1, NVTX marks 1",)
    assert main(["summarize", str(p), "--no-cache"]) == 0
    assert "Traceback" not in capsys.readouterr().err


# ---- range-profiler mode, kernels without timestamps ------------------------------------------------------


def test_cupti_range_mode_case_says_busy_is_unknown():
    b = load_kineto_json(CASES / "kineto_cupti_range_mode" / "hta_cupti_profiler_trace.json.gz")
    assert len(b.kernels) == 0 and b.meta.rank == 0
    msg = (
        "no kernel activity although 77 kernel launch(es) were recorded: recorded in CUPTI range-profiler mode "
        "(77 cuda_profiler_range events hold counter values, not kernel timing); GPU busy, idle and utilisation "
        "are unknown (n/a)"
    )
    assert b.meta.gpu_activity_missing == msg and b.meta.warnings == (msg,)
    assert dict(account(b, "events not shown").skipped)["'cuda_profiler_range' events (not shown)"] == 77
    from dashboard.data.trace import load_trace
    from dashboard.render import build_view

    trace = load_trace(CASES / "kineto_cupti_range_mode" / "hta_cupti_profiler_trace.json.gz", cache=None)
    cards = {c.label: c for c in build_view(trace, ViewState()).cards}
    for label in ("GPU activity span", "GPU busy (union)", "GPU idle in span", "Utilisation"):
        assert cards[label].value == "n/a" and cards[label].hint == msg
    assert summarize(b).warnings[0] == msg  # summarize's warnings list


def test_launches_without_kernel_activity_are_flagged(tmp_path):
    b = load_kineto_json(
        write(
            tmp_path,
            {
                "traceEvents": [
                    api(1, 2, 1),
                    api(5, 2, 2, name="cuLaunchKernel", cat="cuda_driver"),
                    api(9, 1, 3, name="cudaFree"),
                ]
            },
        )
    )
    assert b.meta.gpu_activity_missing == (
        "no kernel activity although 2 kernel launch(es) were recorded: kernel tracing was off or lost; GPU busy, "
        "idle and utilisation are unknown (n/a)"
    )
    ok = load_kineto_json(write(tmp_path, {"traceEvents": [api(1, 2, 1), kernel(5, 1, correlation=1)]}, "ok.json"))
    assert ok.meta.gpu_activity_missing == "" and ok.meta.warnings == ()


def test_zero_timestamp_kernel_case_is_reported_as_for_sqlite():
    b = load_kineto_json(CASES / "kineto_zero_timestamp" / "c07.json")
    s = summarize(b)
    assert b.meta.dropped_zero_ts_kernels == 1
    assert (s.gpu_activity_span_ns, s.gpu_busy_union_ns, s.gpu_idle_within_span_ns) == (300_000, 200_000, 100_000)
    assert b.kernels[["start_ns", "end_ns"]].values.tolist() == [[0, 100_000], [0, 0], [200_000, 300_000]]


def test_zero_timestamp_kernels_never_move_the_origin(tmp_path):
    events = [
        kernel(0, 0, name="untimed", correlation=1),
        kernel(1_700_000_000_000_500, 10, name="a"),
        {"ph": "X", "cat": "user_annotation", "name": "r", "pid": 1, "tid": 1, "ts": 1_700_000_000_000_400, "dur": 200},
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    assert b.meta.dropped_zero_ts_kernels == 1
    assert b.kernels[["name", "start_ns", "end_ns"]].astype({"name": str}).values.tolist() == [
        ["untimed", 0, 0],
        ["a", 100_000, 110_000],
    ]
    assert summarize(b).gpu_activity_span_ns == 10_000


# ---- files that are not PyTorch profiler traces -----------------------------------------------------------


def test_chrome_trace_from_another_producer_is_refused(tmp_path, capsys):
    p = write(
        tmp_path,
        {
            "traceEvents": [
                {"ph": "X", "cat": "blink", "name": "Layout", "pid": 1, "tid": 1, "ts": 5, "dur": 2},
                {"ph": "X", "cat": "v8", "name": "Compile", "pid": 1, "tid": 1, "ts": 9, "dur": 2},
            ]
        },
        "chrome.json",
    )
    msg = (
        "chrome.json: a Chrome trace from another producer, not a PyTorch profiler (Kineto) trace: none of its 2 "
        "events has a PyTorch profiler category (kernel, cuda_runtime, cpu_op, user_annotation, …); its "
        "categories are blink, v8"
    )
    with pytest.raises(TraceFormatError) as err:
        load_kineto_json(p)
    assert str(err.value) == msg
    assert main(["summarize", str(p), "--no-cache"]) == 2
    err_text = capsys.readouterr().err
    assert msg in err_text and err_text.count("\n") == 1


def test_json_of_none_of_our_formats_is_refused(tmp_path, capsys):
    p = write(tmp_path, {"name": "resnet", "layers": [1, 2, 3]}, "model.json")
    assert main(["summarize", str(p), "--no-cache"]) == 2
    assert capsys.readouterr().err == (
        "tracedash: error: model.json: a JSON file in none of the formats tracedash reads: neither a PyTorch "
        "profiler (Kineto) trace (no 'traceEvents') nor a tracedash summary (none of its keys, e.g. "
        "'gpu_busy_union_s')\n"
    )


# ---- distributed rank ---------------------------------------------------------------------------------------


def test_rank_comes_from_distributed_info():
    ranks = {
        p.name.split(".")[0]: load_kineto_json(p).meta.rank
        for p in sorted((CASES / "kineto_distributed_rank").glob("*.json"))
    }
    assert ranks == {"worker_a": 2, "worker_b": 0, "worker_c": 1}
    assert load_kineto_json(CASES / "kineto_ts_strings" / "ts_strings.json").meta.rank is None


# ---- kernel short names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "full, short",
    [
        (
            "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<F>(at::TensorIteratorBase&, F "
            "const&)"
            "::{lambda(int)#1}>(int, F)",
            "elementwise_kernel",
        ),
        (
            "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
            "namespace)::OpaqueType<2u>, "
            "unsigned int, 1, 128, 1>(at::native::(anonymous namespace)::OpaqueType<2u>*, int)",
            "CatArrayBatchedCopy",
        ),
        (
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)",
            "multimem_all_reduce_kernel",
        ),
        (
            "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)",
            "fused_add_rms_norm_kernel",
        ),
        (
            "void cutlass::Kernel<cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8>"
            "(cutlass_70::Params)",
            "Kernel",
        ),
        (
            "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
            "false, "
            "cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
            "flash_fwd_kernel",
        ),
        ("at::native::foo<int>::operator()(int) const", "operator()"),
        ("Functor::operator()", "operator()"),
        ("at::native::launch(int)::{lambda(int)#1}", "{lambda(int)#1}"),
        ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
        (
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        ),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
        ("void gemv<(1<2)>(int)", "gemv"),
        ("kernel_unified_attention_3d [clone .kd]", "kernel_unified_attention_3d"),
        ("broken<(name", "broken<(name"),
        ("(anonymous namespace)::k()", "k"),
    ],
)
def test_kernel_short_names_as_nsys_derives_them(full, short):
    assert kernel_short_name(full) == short


def test_kernels_keep_the_full_name_next_to_the_short_one(tmp_path):
    full = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
    )
    b = load_kineto_json(write(tmp_path, {"traceEvents": [kernel(1, 2, name=full), kernel(5, 1, name="plain")]}))
    assert b.kernels[["short_name", "name"]].astype(str).values.tolist() == [
        ["vectorized_elementwise_kernel", full],
        ["plain", "plain"],
    ]


# A cuDNN-style mangled kernel name of 1,644 characters, as Kineto writes one CUPTI could not demangle.
_FN = "28conv2d_grouped_direct_kernel"
MANGLED_CUDNN = "_ZN5cudnn3cnn5infer" + _FN + "I" + "Lb1E" * 396 + "EvPKfPfS2_"


def test_a_mangled_kernel_name_gets_its_functions_name_as_short_name(tmp_path):
    """Issue 26 class 7: a mangled name that could not be demangled stayed a 1,644-character short name."""
    from dashboard.analysis.tables import kernel_table

    assert len(MANGLED_CUDNN) == 1644
    assert kernel_short_name(MANGLED_CUDNN) == "conv2d_grouped_direct_kernel"
    ck = "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassEEEEvNT1_5KargsE"
    assert [
        kernel_short_name(n)
        for n in (
            ck,
            "_Z6squarePfi",
            "_ZL5localv",
            "_ZN12_GLOBAL__N_16kernelEv",
            "_ZNSt3foo3barEv",
            "_ZN3foo3barB5cxx11Ev",
        )
    ] == ["kentry", "square", "local", "kernel", "bar", "bar"]
    b = load_kineto_json(write(tmp_path, {"traceEvents": [kernel(1, 2, name=MANGLED_CUDNN), kernel(5, 1, name=ck)]}))
    assert b.kernels[["short_name", "name"]].astype(str).values.tolist() == [
        ["conv2d_grouped_direct_kernel", MANGLED_CUDNN],
        ["kentry", ck],
    ]
    s = summarize(b)
    table = kernel_table(b.kernels, s)
    assert table[["name", "full_name", "count", "total_ns"]].values.tolist() == [
        ["conv2d_grouped_direct_kernel", MANGLED_CUDNN, 1, 2_000],
        ["kentry", ck, 1, 1_000],
    ]


def test_the_ck_tile_kernels_of_a_real_rocm_trace_are_named_by_their_function():
    b = load_kineto_json(DATA / "kineto" / "rocm_vllm_decode_graph_replay.json.gz")
    k = b.kernels.astype({"name": str, "short_name": str})
    ck = k[k["name"].str.startswith("_ZN7ck_tile6kentry")]
    assert (ck["name"].value_counts().tolist(), ck["short_name"].unique().tolist()) == (
        [48, 1],
        ["kentry"],
    )  # zcat | grep
    assert k["short_name"].str.len().max() == 160 and k["name"].str.len().max() == 822


def test_a_short_name_is_always_short_and_different_names_stay_different(tmp_path):
    from dashboard.loaders.kernel_names import SHORT_NAME_MAX, cut_name

    stem = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_" + "LDSB1_AFC1_" * 30
    a, b_ = stem + "GRVWA8_" + "_WG32_8_1" * 5, stem + "GRVWA2_" + "_WG32_8_1" * 5  # agree at both ends
    truncated = "_ZN5cudnn3cnn5infer" + "900" + "x" * 300  # mangled, cut short inside the function's name
    unbalanced = "void broken<(" + "n" * 200
    events = [kernel(1, 2, name=a), kernel(5, 1, name=b_), kernel(7, 1, name=truncated), kernel(9, 1, name=unbalanced)]
    kb = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    shorts = kb.kernels["short_name"].astype(str).tolist()
    assert [len(x) for x in shorts] == [SHORT_NAME_MAX] * 4 == [160] * 4
    assert len(set(shorts)) == 4
    assert shorts[0] == a[:112] + "…" + a[-38:] + " #" + shorts[0][-7:] and shorts[0][-9:-7] == " #"
    assert shorts[0][:113] == shorts[1][:113] and shorts[0][-9:] != shorts[1][-9:]
    assert shorts == [cut_name(a), cut_name(b_), cut_name(truncated), cut_name(unbalanced)]  # the same in every trace
    assert kb.kernels["name"].astype(str).tolist() == [a, b_, truncated, unbalanced]
    assert cut_name("x" * 160) == "x" * 160 and len(cut_name("x" * 161)) == 160


# ---- diff of an nsys run and a Kineto run pairs kernels by short name ---------------------------------------


def test_diff_of_nsys_and_kineto_runs_pairs_kernels_by_short_name(tmp_path, capsys):
    from factories import write_nsys_sqlite

    gemm = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80::Params)"
    elem = (
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<F>(at::TensorIteratorBase&, "
        "F const&)::{lambda(int)#1}>(int, F)"
    )
    nsys = write_nsys_sqlite(
        tmp_path / "run_nsys.sqlite",
        kernels=[
            {"start": 0, "end": 4000, "shortName": "Kernel", "demangledName": gemm, "correlationId": 1},
            {"start": 5000, "end": 6000, "shortName": "elementwise_kernel", "demangledName": elem, "correlationId": 2},
            {"start": 7000, "end": 8000, "shortName": "elementwise_kernel", "demangledName": elem, "correlationId": 3},
        ],
    )
    kin = write(
        tmp_path,
        {
            "traceEvents": [
                kernel(100, 3, name=gemm),
                kernel(104, 2, name=elem),
                kernel(107, 2, name=elem),
                kernel(110, 1, name="only_kineto"),
            ]
        },
        "run_kineto.json",
    )
    assert main(["diff", str(nsys), str(kin), "--json", "--no-cache"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = {k["name"]: (k["a_count"], k["a_total_ns"], k["b_count"], k["b_total_ns"]) for k in d["kernels"]}
    assert rows == {
        "Kernel": (1, 4000, 1, 3000),
        "elementwise_kernel": (2, 2000, 2, 4000),
        "only_kineto": (0, 0, 1, 1000),
    }
