"""PyTorch profiler (Kineto) Chrome-trace JSON and .nsys-rep input.

The five real Kineto traces must reproduce their reference figures exactly
(tests/data/kineto/<name>.expected.json, provenance in tests/data/PROVENANCE.md); small in-code
traces pin down B/E pairing, time units, exactness, what is not a kernel, and correlation links.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dashboard.analysis.launches import kernel_launches
from dashboard.analysis.summary import kernel_stats_by_short_name, summarize
from dashboard.cli import main
from dashboard.data.cache import TraceCache
from dashboard.data.trace import load_trace
from dashboard.errors import TraceFormatError
from dashboard.loaders import sniff_format
from dashboard.loaders.kineto_json import load_kineto_json
from dashboard.model import API_CALLS, KERNELS, MEMOPS, NARROW_IDS, NVTX_MARKS, NVTX_RANGES, input_warnings
from dashboard.render import build_view
from dashboard.state import ViewState

from paths import DATA, SAMPLES, SEED, nsys_trace

KINETO_DIR = DATA / "kineto"
KINETO_TRACES = sorted(
    [*KINETO_DIR.glob("*.json.gz"), SAMPLES / "h100_qwen1.5_0.5b_chat.json.gz"], key=lambda p: p.name
)
REPORT = DATA / "nsys_rep" / "nsys2022.4_cpu_llm_sim_nvtx.nsys-rep"
HAS_NSYS = shutil.which("nsys") is not None


def expected(trace: Path) -> dict:
    stem = trace.name.removesuffix(".json.gz")
    return json.loads((KINETO_DIR / f"{stem}.expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def kineto_bundles():
    return {p.name: load_kineto_json(p) for p in KINETO_TRACES}


def test_all_five_shared_traces_are_here():
    assert [p.name for p in KINETO_TRACES] == [
        "a100_3streams_event_sync.json.gz",
        "b200_eager.json.gz",
        "h100_qwen1.5_0.5b_chat.json.gz",
        "rocm_vllm_decode_graph_replay.json.gz",
        "v100_ns_resolution_rank0.pt.trace.json.gz",
    ]


@pytest.mark.parametrize("trace", KINETO_TRACES, ids=lambda p: p.name)
def test_matches_reference_figures(trace, kineto_bundles):
    exp = expected(trace)
    b = kineto_bundles[trace.name]
    s = summarize(b)
    k = b.kernels
    assert exp["file"] == trace.name == b.meta.source
    assert len(k) == s.kernel_count == exp["kernel_count"]
    # In these traces a kernel's GPU track is pid = args.device, tid = args.stream.
    per_track = {f"{d}/{st}": int(n) for (d, st), n in k.groupby(["device_id", "stream_id"]).size().items()}
    assert per_track == exp["kernels_per_pid_tid"]
    assert s.gpu_busy_union_ns == exp["gpu_busy_union_ns"]
    assert s.gpu_activity_span_ns == exp["gpu_activity_span_ns"]
    assert int((k["end_ns"] - k["start_ns"]).sum()) == exp["kernel_sum_ns"]
    kinds = b.memops["kind"].astype(str)
    assert int(kinds.str.startswith("memcpy").sum()) == exp["memcpy_count"]
    assert int((kinds == "memset").sum()) == exp["memset_count"]
    # The reference ranks kernels by full demangled name; the summary groups by short name (as nsys).
    by_full = kernel_stats_by_short_name(k.assign(short_name=k["name"]))
    top = [[r.name, int(r.count), int(r.total_ns)] for r in by_full.itertuples(index=False)]
    assert top[: len(exp["top_kernels_by_total_ns"])] == exp["top_kernels_by_total_ns"]
    assert int(s.top_kernels["total_ns"].iloc[0]) >= exp["top_kernels_by_total_ns"][0][2]
    # Every category in the reference's census was seen.
    assert set(b.meta.tables) == {c for c in exp["event_categories"] if c}


@pytest.mark.parametrize("trace", KINETO_TRACES, ids=lambda p: p.name)
def test_frames_have_the_nsys_schemas(trace, kineto_bundles):
    b = kineto_bundles[trace.name]
    for frame, schema in (
        (b.kernels, KERNELS),
        (b.api_calls, API_CALLS),
        (b.nvtx_ranges, NVTX_RANGES),
        (b.nvtx_marks, NVTX_MARKS),
        (b.memops, MEMOPS),
    ):
        assert list(frame.columns) == list(schema)
        assert [str(t) if s != "category" else "category" for t, s in zip(frame.dtypes, schema.values())] == [
            "int32" if c in NARROW_IDS and s == "int64" and len(frame) else s for c, s in schema.items()
        ]
    assert b.meta.format == "kineto-json" and b.meta.warnings == () and b.meta.unmatched_ends == 0


def test_real_trace_details(kineto_bundles):
    v100 = kineto_bundles["v100_ns_resolution_rank0.pt.trace.json.gz"]
    assert v100.meta.gpus[0] == "Tesla V100-SXM2-32GB"
    assert len(v100.api_calls) == 15329 and set(v100.api_calls["event_class"]) == {0}
    assert len(v100.nvtx_ranges) == 70  # user_annotation; the 15 gpu_user_annotation copies are not ranges
    # Every kernel is linked to the runtime call that launched it (correlation id and process).
    assert len(kernel_launches(v100.kernels, v100.api_calls)) == 4350
    assert set(v100.kernels["pid"]) == {1102}
    first = v100.kernels.iloc[0]
    assert first["launch"].startswith("grid ") and "· block " in first["launch"]
    b200 = kineto_bundles["b200_eager.json.gz"]
    assert (b200.api_calls["event_class"] == 1).sum() == 221  # cuda_driver
    rocm = kineto_bundles["rocm_vllm_decode_graph_replay.json.gz"]
    assert rocm.kernels["device_id"].unique().tolist() == [2]
    assert rocm.api_calls["name"].astype(str).value_counts().to_dict() == {
        "hipMemcpyAsync": 9,
        "hipLaunchKernel": 3,
        "hipGetDevicePropertiesR0600": 3,
        "hipEventSynchronize": 1,
        "hipStreamIsCapturing": 1,
        "hipGraphLaunch": 1,
        "hipDriverGetVersion": 1,
        "hipExtModuleLaunchKernel": 1,
    }
    assert rocm.memops["kind"].astype(str).unique().tolist() == ["memcpy DtoD"]


# ---- small in-code traces -------------------------------------------------------------------------


def write(tmp_path: Path, data, name="t.json", gz=False) -> Path:
    text = json.dumps(data) if not isinstance(data, str) else data
    p = tmp_path / name
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return p


def kernel(ts, dur, *, pid=0, tid=7, corr=None, name="k", cat="kernel", **args):
    a = {"device": pid, "stream": tid, **args}
    if corr is not None:
        a["correlation"] = corr
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": a}


def test_begin_end_pairs_stack_per_thread_and_unmatched_ends_are_counted(tmp_path):
    events = [
        {"ph": "E", "pid": 5, "tid": 6, "ts": 1},  # nothing open on this thread
        {"ph": "B", "cat": "user_annotation", "name": "outer", "pid": 5, "tid": 5, "ts": 10},
        {"ph": "B", "cat": "user_annotation", "name": "inner", "pid": 5, "tid": 5, "ts": 12},
        {"ph": "B", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 13, "args": {"device": 0, "stream": 7}},
        {"ph": "E", "pid": 5, "tid": 5, "ts": 15},  # closes inner (the most recent)
        {"ph": "E", "pid": 0, "tid": 7, "ts": 14.5},  # closes the kernel on its own track
        {"ph": "E", "pid": 5, "tid": 5, "ts": 20},  # closes outer
        {"ph": "E", "pid": 5, "tid": 5, "ts": 25},  # unmatched
        {"ph": "B", "cat": "user_annotation", "name": "open", "pid": 5, "tid": 5, "ts": 30},
        kernel(40, 2),
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    r = b.nvtx_ranges
    assert r[["name", "start_ns", "end_ns", "unclosed"]].astype({"name": str}).values.tolist() == [
        ["outer", 0, 10000, False],
        ["inner", 2000, 5000, False],
        ["open", 20000, 32000, True],
    ]
    assert r["kind"].astype(str).unique().tolist() == ["push/pop"]
    assert b.kernels[["start_ns", "end_ns"]].values.tolist() == [[3000, 4500], [30000, 32000]]
    assert b.meta.unmatched_ends == 2
    assert b.meta.warnings == (
        "2 'E' event(s) without an open 'B' on their thread were ignored",
        "1 'B' event(s) never closed by an 'E' (annotations kept as unclosed ranges ending at the last "
        "event's end; other events dropped)",
    )


def test_display_time_unit_ns_still_means_microsecond_timestamps(tmp_path):
    # Chrome trace ts/dur are µs; displayTimeUnit only picks the viewer's unit (the v100 reference
    # trace says "ns" and its 480,029,179 ns span is only right when read as µs).
    events = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaFree", "pid": 1, "tid": 1, "ts": 100, "dur": 1},
        kernel(102, 3),
    ]
    for unit in ("ns", "ms", None):
        data = {"traceEvents": events, **({"displayTimeUnit": unit} if unit else {})}
        k = load_kineto_json(write(tmp_path, data)).kernels
        assert k[["start_ns", "end_ns"]].values.tolist() == [[2000, 5000]]


def test_epoch_microseconds_are_exact_to_the_nanosecond(tmp_path):
    # As float64, 1712195495505583.2 becomes ...583.25: exactness needs decimal parsing.
    text = (
        '{"displayTimeUnit": "ns", "traceEvents": ['
        '{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",'
        ' "ts": 1712195495505500.2, "dur": 1000},'
        '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1712195495505583.0, "dur": 4.928},'
        '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 8, "ts": 1712195495505583.2, "dur": 0.0015}]}'
    )
    b = load_kineto_json(write(tmp_path, text, name="e.json.gz", gz=True))
    assert b.kernels[["start_ns", "end_ns"]].values.tolist() == [[82800, 87728], [83000, 83002]]
    assert summarize(b).gpu_busy_union_ns == 4928  # second kernel (another stream) lies inside the first


def test_cuda_sync_and_gpu_annotations_are_not_kernels(tmp_path):
    events = [
        kernel(10, 5, corr=1),
        kernel(12, 50, name="Event Sync", cat="cuda_sync", corr=2),
        kernel(9, 100, name="ProfilerStep#1", cat="gpu_user_annotation"),
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 3, "tid": 3, "ts": 1, "dur": 200},
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    assert b.kernels["name"].astype(str).tolist() == ["k"]
    assert summarize(b).gpu_busy_union_ns == 5000
    assert b.nvtx_ranges["name"].astype(str).tolist() == ["ProfilerStep#1"]  # the host range only
    assert b.nvtx_ranges["pid"].tolist() == [3]


def test_runtime_call_links_to_its_kernel_by_correlation(tmp_path):
    events = [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 100,
            "tid": 101,
            "ts": 5,
            "dur": 2,
            "args": {"correlation": 42, "cbid": 211},
        },
        {
            "ph": "X",
            "cat": "cuda_driver",
            "name": "cuLaunchKernel",
            "pid": 100,
            "tid": 102,
            "ts": 6,
            "dur": 1,
            "args": {"correlation": 43},
        },
        kernel(9, 4, corr=42, name="a", grid=[8, 16, 5], block=[128, 1, 1]),
        # no args.correlation: linked through the ac2g flow that ends at its start on its track
        {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 20, "dur": 1, "args": {}},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 43, "pid": 100, "tid": 102, "ts": 6},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 43, "pid": 0, "tid": 7, "ts": 20, "bp": "e"},
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    k = b.kernels
    assert k[["correlation_id", "pid", "device_id", "stream_id"]].values.tolist() == [[42, 100, 0, 7], [43, 100, 0, 7]]
    assert k["launch"].astype(str).tolist() == ["grid 8×16×5 · block 128×1×1", ""]
    a = b.api_calls
    assert a[["name", "event_class", "pid", "tid", "global_tid"]].astype({"name": str}).values.tolist() == [
        ["cudaLaunchKernel", 0, 100, 101, (100 << 24) | 101],
        ["cuLaunchKernel", 1, 100, 102, (100 << 24) | 102],
    ]
    links = kernel_launches(k, a)
    assert links[["kernel_index", "api_index", "api_start_ns"]].values.tolist() == [[0, 0, 0], [1, 1, 1000]]
    assert k["start_ns"].iloc[links["kernel_index"]].tolist() == [4000, 15000]


def test_kernel_launched_before_the_capture_keeps_its_stream(tmp_path):
    """h100_qwen1.5_0.5b_chat.json.gz: kernels launched before the host-side capture have no launch in the trace;
    they belong to the trace's one CUDA API process, so stream 7 stays one stream (one lane, "Streams 1")."""
    from dashboard.analysis.gpu_time import stream_names

    events = [
        kernel(1, 2, corr=7, name="early"),  # its cudaLaunchKernel is not in the trace
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 25286,
            "tid": 1,
            "ts": 4,
            "dur": 1,
            "args": {"correlation": 8},
        },
        kernel(6, 2, corr=8, name="late"),
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    k = b.kernels
    assert k["pid"].tolist() == [25286, 25286]
    assert stream_names(k).tolist() == ["stream 7", "stream 7"]
    # Two processes made CUDA API calls: a kernel without its launch cannot be given to either (pid 0).
    events.append(
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaFree",
            "pid": 9,
            "tid": 1,
            "ts": 9,
            "dur": 1,
            "args": {"correlation": 9},
        }
    )
    k = load_kineto_json(write(tmp_path, {"traceEvents": events}, name="two.json")).kernels
    assert k["pid"].tolist() == [0, 25286]


def test_memops_belong_to_the_process_of_their_kernels(tmp_path):
    """h100_qwen1.5_0.5b_chat.json.gz: memsets had pid -1, a process of their own, so gpu-low-util (per process and
    GPU, as nsys) cut the memsets' sparse window into chunks and reported a 91.5 %-busy GPU as 50 % idle."""
    from dashboard.analysis.nsys_rules import gpu_low_utilization, gpu_ops

    events = [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 25286,
            "tid": 1,
            "ts": 1,
            "dur": 1,
            "args": {"correlation": 8},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaMemsetAsync",
            "pid": 25286,
            "tid": 1,
            "ts": 2,
            "dur": 1,
            "args": {"correlation": 9},
        },
        kernel(10, 100, corr=8, name="busy"),
        kernel(20, 1, corr=9, name="Memset (Device)", cat="gpu_memset"),
        kernel(90, 1, name="Memset (Device)", cat="gpu_memset"),  # no correlation: the trace's one process
    ]
    b = load_kineto_json(write(tmp_path, {"traceEvents": events}))
    assert b.memops["pid"].tolist() == [25286, 25286]
    assert gpu_low_utilization(gpu_ops(b)).empty  # the kernel keeps the GPU busy over the whole window
    # Two processes made CUDA API calls: a memop without its call in the trace stays unknown (-1).
    events.append(
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaFree",
            "pid": 9,
            "tid": 1,
            "ts": 3,
            "dur": 1,
            "args": {"correlation": 10},
        }
    )
    assert load_kineto_json(write(tmp_path, {"traceEvents": events}, name="two.json")).memops["pid"].tolist() == [
        25286,
        -1,
    ]


def test_memcpy_and_memset_rows(tmp_path):
    events = [
        kernel(1, 2, name="Memcpy HtoD (Pinned -> Device)", cat="gpu_memcpy", bytes=2048),
        kernel(4, 1, pid=2, tid=0, name="Memcpy DtoD (Device -> Device)", cat="gpu_memcpy", kind="DtoD", bytes=9216),
        kernel(6, 1, name="Memset (Device)", cat="gpu_memset", bytes=4),
    ]
    m = load_kineto_json(write(tmp_path, {"traceEvents": events})).memops
    cols = ["start_ns", "end_ns", "device_id", "stream_id", "kind", "bytes", "src_kind", "dst_kind"]
    assert m[cols].astype({"kind": str, "src_kind": str, "dst_kind": str}).values.tolist() == [
        [0, 2000, 0, 7, "memcpy HtoD", 2048, "Pinned", "Device"],
        [3000, 4000, 2, 0, "memcpy DtoD", 9216, "Device", "Device"],
        [5000, 6000, 0, 7, "memset", 4, "", "Device"],
    ]


def test_sniffing_by_content_not_extension(tmp_path):
    kin = {"traceEvents": [kernel(1, 1)]}
    assert sniff_format(write(tmp_path, kin, name="a.json")) == "kineto-json"
    assert sniff_format(write(tmp_path, kin, name="b.pt.trace.json")) == "kineto-json"
    assert sniff_format(write(tmp_path, kin, name="c.txt", gz=True)) == "kineto-json"
    assert sniff_format(write(tmp_path, [kernel(1, 1)], name="d.json")) == "kineto-json"  # JSON Array Format
    assert sniff_format(write(tmp_path, {"file": "x", "gpu_activity_span_s": 1}, name="e.json")) == "summary-json"
    assert sniff_format(REPORT) == "nsys-rep"
    assert sniff_format(nsys_trace("nsys2025.5_rtx3060_cuda_graph_launch.sqlite")) == "nsys-sqlite"


@pytest.mark.parametrize(
    "data, gz, message",
    [
        (
            {"hello": 1},
            False,
            "a JSON file in none of the formats tracedash reads: neither a PyTorch profiler (Kineto) "
            "trace (no 'traceEvents') nor a tracedash summary",
        ),
        ({"file": "x.sqlite"}, False, "not a tracedash summary: missing key(s)"),
        ({"hello": 1}, True, "a gzip file that is not a PyTorch profiler (Kineto) trace"),
        ({"traceEvents": {"a": 1}}, False, "neither a PyTorch profiler (Kineto) trace nor a tracedash summary"),
        (
            {"traceEvents": [1, 2]},
            False,
            "an entry of its event list (traceEvents, or the file's top-level array) is a number, not an event object",
        ),
        (
            '{"traceEvents": [',
            False,
            "malformed JSON at line 1, column 18: expected a value (the file may be truncated)",
        ),
    ],
)
def test_bad_json_gives_one_clear_error(tmp_path, capsys, data, gz, message):
    p = write(tmp_path, data, name="bad.json", gz=gz)
    with pytest.raises(TraceFormatError, match=None) as err:
        load_trace(p)
    assert message in str(err.value) and str(err.value).startswith("bad.json: ")
    assert main(["summarize", str(p)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err


def test_truncated_gzip_is_a_clear_error(tmp_path):
    good = (KINETO_DIR / "a100_3streams_event_sync.json.gz").read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(good[: len(good) // 2])
    with pytest.raises(TraceFormatError) as err:
        load_trace(p)
    # the problem in words, without Python's exception names (EOFError, zlib.error)
    assert str(err.value) == (
        "cut.json.gz: a gzip file that cannot be decompressed (truncated or corrupt: "
        "compressed file ended before the end-of-stream marker was reached)"
    )


# ---- through the app's layers ---------------------------------------------------------------------


def test_build_view_renders_every_view_for_a_kineto_trace():
    trace = load_trace(SAMPLES / "h100_qwen1.5_0.5b_chat.json.gz")
    view = build_view(trace, ViewState())
    cards = {c.label: c for c in view.cards}
    assert cards["Kernels"].value == "1,465"
    assert cards["Input"].value == "PyTorch profiler (Kineto)" and "0: NVIDIA H100" in cards["Input"].hint
    assert "Input warnings" not in cards
    assert any(len(t.x) for t in view.timeline.data if getattr(t, "x", None) is not None)
    assert view.kernel_rows and view.api_rows and view.gpu_rows
    assert view.devices == [0]
    # Rows by short name (as nsys): every at::native::elementwise_kernel<...> instance is one row, top by time.
    names = trace.bundle.kernels["name"].astype(str)
    assert (
        view.kernel_rows[0]["count"] == int(names.str.startswith("void at::native::elementwise_kernel<").sum()) == 549
    )
    for fig in (view.gantt, view.timeline, view.phase_figure):
        fig.to_dict()  # serialisable, as Dash sends it


def test_summarize_writes_the_seed_format_for_a_kineto_trace(tmp_path):
    trace = KINETO_DIR / "v100_ns_resolution_rank0.pt.trace.json.gz"
    exp = expected(trace)
    out = tmp_path / "s.json"
    assert main(["summarize", str(trace), "-o", str(out)]) == 0
    s = json.loads(out.read_text(encoding="utf-8"))
    seed_keys = json.loads(SEED.read_text(encoding="utf-8")).keys()
    assert list(s) == [*seed_keys, "warnings"]  # the seed format plus the warnings list (summary_contract.md)
    assert s["file"] == trace.name and s["kernel_count"] == 4350 and s["graph_node_kernel_count"] == 0
    assert s["gpu_busy_union_s"] == exp["gpu_busy_union_ns"] / 1e9
    assert s["gpu_activity_span_s"] == exp["gpu_activity_span_ns"] / 1e9
    k = load_kineto_json(trace).kernels
    vec = k[k["name"].astype(str).str.startswith("void at::native::vectorized_elementwise_kernel<")]
    assert s["top_kernels"][0] == [
        "vectorized_elementwise_kernel",
        [len(vec), int((vec["end_ns"] - vec["start_ns"]).sum()) / 1e9],
    ]
    assert len(vec) == 1755
    assert s["api"]["cudaLaunchKernel"][0] == int(
        (load_kineto_json(trace).api_calls["name"] == "cudaLaunchKernel").sum()
    )
    assert s["nvtx"]["nccl:all_reduce"]["count"] > 0
    # The summary JSON it wrote reads back as a summary with the same figures.
    back = load_trace(out)
    assert back.summary.gpu_busy_union_ns == exp["gpu_busy_union_ns"]


def test_cached_frames_equal_fresh_ones(tmp_path):
    trace = KINETO_DIR / "b200_eager.json.gz"
    cache = TraceCache(tmp_path / "cache")
    fresh = load_trace(trace, cache=cache)
    again = load_trace(trace, cache=cache)
    assert cache.cached_bundle(trace) is not None
    for name in ("kernels", "api_calls", "nvtx_ranges", "memops"):
        pd.testing.assert_frame_equal(getattr(fresh.bundle, name), getattr(again.bundle, name), check_exact=True)
    assert again.meta == fresh.meta


def test_sample_traces_offer_a_kineto_trace():
    samples = sorted(SAMPLES.glob("*.json.gz"))
    assert [p.name for p in samples] == ["h100_qwen1.5_0.5b_chat.json.gz"]
    assert samples[0] in KINETO_TRACES  # the sample is one of the shared traces with reference figures
    assert "h100_qwen1.5_0.5b_chat.json.gz" in (SAMPLES / "README.md").read_text(encoding="utf-8")


# ---- .nsys-rep ------------------------------------------------------------------------------------


def test_nsys_rep_without_nsys_says_how_to_export(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no nsys
    with pytest.raises(TraceFormatError) as err:
        load_trace(REPORT, cache=TraceCache(tmp_path / "cache"))
    assert str(err.value) == (
        "nsys2022.4_cpu_llm_sim_nvtx.nsys-rep: an Nsight Systems report; reading it needs 'nsys' on PATH, which "
        "was not found. Export it by hand and open the .sqlite instead: nsys export --type sqlite --output "
        "nsys2022.4_cpu_llm_sim_nvtx.sqlite nsys2022.4_cpu_llm_sim_nvtx.nsys-rep"
    )


def test_junk_nsys_rep_without_nsys_is_not_a_report(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys: the header alone tells a report from junk
    junk = tmp_path / "junk.nsys-rep"
    junk.write_bytes(b"junk\n")
    with pytest.raises(
        TraceFormatError,
        match=r"^junk.nsys-rep: not an Nsight Systems report \(it does not start "
        r"with the report header 'NVIDIA Tegra Profiler Report'\)",
    ):
        load_trace(junk, cache=TraceCache(tmp_path / "cache"))


def _folder_state(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.mark.skipif(not HAS_NSYS, reason="needs nsys on PATH")
def test_nsys_rep_is_exported_into_the_cache_and_loaded(tmp_path):
    report = tmp_path / "user" / REPORT.name
    report.parent.mkdir()
    shutil.copyfile(REPORT, report)
    before = _folder_state(report.parent)
    cache = TraceCache(tmp_path / "cache")
    t = load_trace(report, cache=cache)
    assert _folder_state(report.parent) == before  # nothing written next to the user's file
    assert t.meta.source == report.name and t.meta.format == "nsys-sqlite"
    assert t.meta.nsys_version.startswith("2022.4")
    # The same program as the sample export: same dispatches and NVTX names/counts.
    ref = load_trace(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite"))
    assert t.summary.dispatch == ref.summary.dispatch
    assert t.summary.dispatch == {
        "CG_DISPATCH:actual=1600:mode=NONE:padded=1600": 2,
        "CG_DISPATCH:actual=1:mode=NONE:padded=1": 23,
        "CG_DISPATCH:actual=742:mode=NONE:padded=742": 1,
        "CG_DISPATCH:actual=3:mode=NONE:padded=3": 20,
    }

    def counts(summary):
        return dict(zip(summary.nvtx["name"], summary.nvtx["count"]))

    assert counts(t.summary) == counts(ref.summary)
    assert counts(t.summary)["engine:PLE_wait_for_GPU"] == 46 and len(counts(t.summary)) == 12
    assert [p.name for p in cache.root.iterdir()] == [cache.entries_dir.name]  # the export was removed
    assert cache.cached_bundle(report) is not None  # frames cached: no second export
    assert load_trace(report, cache=cache).summary.dispatch == t.summary.dispatch


@pytest.mark.skipif(not HAS_NSYS, reason="needs nsys on PATH")
def test_unreadable_nsys_rep_names_the_installed_version(tmp_path):
    bad = tmp_path / "newer.nsys-rep"
    bad.write_bytes(REPORT.read_bytes()[:64])  # a cut report: what an unknown format also looks like to nsys
    with pytest.raises(TraceFormatError) as err:
        load_trace(bad, cache=TraceCache(tmp_path / "cache"))
    msg = str(err.value)
    assert msg.startswith("newer.nsys-rep: 'nsys export' failed (exit ")
    assert "The installed NVIDIA Nsight Systems version 2022.4" in msg
    assert msg.endswith(  # both likely causes: this one is cut short, the other is the same to nsys
        "cannot read this report: it may be cut short (copied before the recording ended, or truncated in "
        "transfer), or recorded by a newer Nsight Systems, whose nsys then exports it: "
        "nsys export --type sqlite --output newer.sqlite newer.nsys-rep"
    )
    assert list((tmp_path / "cache").rglob("*.sqlite")) == []  # a failed export leaves nothing behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "newer.nsys-rep"]


@pytest.mark.skipif(not HAS_NSYS, reason="needs nsys on PATH")
def test_junk_named_nsys_rep_is_not_a_report(tmp_path, capsys):
    junk = tmp_path / "junk.nsys-rep"
    junk.write_bytes(b"junk\n")
    assert main(["summarize", str(junk), "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "tracedash: error: junk.nsys-rep: not an Nsight Systems report (it does not start with "
        "the report header 'NVIDIA Tegra Profiler Report'; 'nsys export' failed: "
    )
    assert err.endswith("). Pass an .nsys-rep recorded by nsys, or its SQLite export\n") and "newer" not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "events, has",
    [
        ([], "no events at all"),
        (
            [{"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 1, "dur": 5}],
            "only NVTX ranges",
        ),
        (  # another accelerator's work is in the trace: never "only NVTX ranges" (the MTIA field trace)
            [
                {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 1, "dur": 5},
                {"ph": "X", "cat": "mtia_ccp_events", "name": "dma", "pid": 17, "tid": 3, "ts": 2, "dur": 1},
                {"ph": "X", "cat": "mtia_ccp_events", "name": "merge", "pid": 17, "tid": 3, "ts": 4, "dur": 1},
                {"ph": "X", "cat": "mtia_runtime", "name": "run", "pid": 2, "tid": 2, "ts": 1, "dur": 1},
            ],
            "NVTX ranges; 2 MTIA device events and 1 MTIA runtime call, not analysed",
        ),
        (
            [{"ph": "X", "cat": "xpu_runtime", "name": "run", "pid": 2, "tid": 2, "ts": 1, "dur": 1}],
            "1 XPU runtime call, not analysed",
        ),
    ],
)
def test_trace_without_kernels_says_what_it_holds(tmp_path, events, has):
    t = load_trace(write(tmp_path, {"traceEvents": events}), cache=TraceCache(enabled=False))
    assert build_view(t, ViewState()).notices == [
        f"This trace has no CUDA kernels ({has}): GPU busy, idle and kernel tables are empty."
    ]


@pytest.mark.parametrize(
    "ts, outcome",
    [
        ("1e999990", "skipped"),  # took 25 s of CPU before: a million-digit integer was built first
        ("1e999999999", "skipped"),  # decimal.Overflow before: an internal error
        ("1e9999999999", "skipped"),
        ("9" * 5000, "refused"),  # over Python's 4,300-digit int limit: ValueError text before
    ],
)
def test_absurd_numbers_are_skipped_or_refused_clearly(tmp_path, ts, outcome):
    p = tmp_path / "big.json"
    p.write_text(
        '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":' + ts + ',"dur":1},'
        '{"ph":"X","cat":"kernel","name":"ok","pid":0,"tid":7,"ts":5,"dur":1}]}'
    )
    if outcome == "refused":
        with pytest.raises(TraceFormatError, match=r"^big.json: holds a number too large to be a timestamp or id"):
            load_trace(p)
        return
    b = load_trace(p).bundle
    assert b.kernels["name"].astype(str).tolist() == ["ok"]
    assert input_warnings(b.meta) == ("kernels: 1 of 2 rows not loaded: 1 missing, non-numeric or out-of-range ts/dur",)


@pytest.mark.parametrize(
    "events, warning",
    [
        ([], "no events loaded: no kernel, CUDA API, NVTX or memcpy/memset rows, so every figure of this summary is 0"),
        (
            [{"ph": "X", "cat": "user_annotation", "name": "step", "ts": 1, "dur": 2, "pid": 1, "tid": 1}],
            "CUDA was not traced (no kernel, CUDA API, CUDA graph or memcpy/memset rows): the GPU span, busy union and "
            "idle "
            "are 0 by the summary contract's definition, not measured; GPU work, if any ran, was not recorded (record "
            "it "
            "with torch.profiler's ProfilerActivity.CUDA)",
        ),
    ],
)
def test_a_trace_without_gpu_work_says_why_its_summary_is_zero(tmp_path, capsys, events, warning):
    """{"traceEvents": []} summarised to zeros with exit 0 and no word: the zeros read as a measured idle GPU."""
    import json as _json

    from dashboard.cli import main

    path = tmp_path / "t.json"
    path.write_text(_json.dumps({"traceEvents": events}))
    assert main(["summarize", str(path), "--no-cache"]) == 0
    out = capsys.readouterr()
    assert _json.loads(out.out)["warnings"] == [warning]
    assert f"tracedash: warning: t.json: {warning}" in out.err


def test_a_range_past_the_profilers_trace_span_is_warned_about(tmp_path):
    """triton_example: ProfilerStep#1 lasts 13.3 s, the profiler's Trace span 355 ms: the step's time past it was
    not profiled, and read as idle without a word. Ranges inside the span, or a file without one, say nothing."""
    from paths import DATA

    b = load_kineto_json(DATA / "cases" / "field" / "triton_example.json.gz")
    assert [w for w in b.meta.warnings if "Trace span" in w] == [
        "1 annotation range ends after the profiler's Trace span (where profiling stopped), ProfilerStep#1 by "
        "13.3 s: its time past it was not profiled, so a step there can read as idle"
    ]

    def ev(cat, name, ts, dur):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}

    trace = [
        ev("Trace", "PyTorch Profiler (0)", 0, 100),
        ev("user_annotation", "a", 10, 200),
        ev("user_annotation", "b", 20, 5000),
    ]
    warned = load_kineto_json(write(tmp_path, {"traceEvents": trace})).meta.warnings
    assert [w for w in warned if "Trace span" in w] == [
        "2 annotation ranges end after the profiler's Trace span (where profiling stopped), b by 4.92 ms: their "
        "time past it was not profiled, so a step there can read as idle"
    ]
    inside = load_kineto_json(write(tmp_path, {"traceEvents": trace[:1] + [ev("user_annotation", "a", 10, 50)]}))
    assert not any("Trace span" in w for w in inside.meta.warnings)
    no_span = load_kineto_json(write(tmp_path, {"traceEvents": trace[1:]}))
    assert not any("Trace span" in w for w in no_span.meta.warnings)
