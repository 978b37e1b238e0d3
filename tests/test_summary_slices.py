"""`summarize` per time slice (data.slices) gives the single pass's summary JSON byte for byte."""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import replace

import pytest

from dashboard.cli import main
from dashboard.data.cache import TraceCache
from dashboard.data.multirank import summary_text
from dashboard.data.slice_count import auto_slice_count
from dashboard.data.slices import (
    combine_slices,
    plan_slices,
    run_in_process,
    slice_partial,
    sliced_summary,
    summary_json_text,
)
from dashboard.loaders.nsys_slices import SliceReader

from factories import GLOBAL_PID_1, GLOBAL_TID_1, write_nsys_sqlite
from paths import NSYS_TRACES, SAMPLES

SAMPLE_108K = SAMPLES / "generated_seed_shaped_108k.sqlite"
COUNTS = (1, 2, 3, 7)


def single_pass(path) -> str:
    return summary_text(path, "CG_DISPATCH", TraceCache(enabled=False))


def sliced(path, n: int) -> str:
    summary = sliced_summary(path, n)
    assert summary is not None, f"{path.name} could not be sliced"
    return summary_json_text(summary)


def _kernels(rng: random.Random) -> list[dict]:
    """Kernels on three streams of two processes and a graph, with the cases slicing must get right."""
    out = []
    for _ in range(400):
        start = rng.randrange(1_000, 1_000_000)
        out.append(
            {
                "start": start,
                "end": start + rng.choice([5, 50, 400, 3_000, 20_000]),
                "streamId": rng.choice([7, 8, 9]),
                "globalPid": rng.choice([GLOBAL_PID_1, GLOBAL_PID_1 + (1 << 24)]),
                "shortName": rng.choice(["gemm", "attn", "norm", "copy"]),
                "graphNodeId": rng.choice([None, None, None, 11]),
            }
        )
    out += [
        {"start": 2_000, "end": 900_000, "streamId": 20, "shortName": "long"},  # longer than any slice
        # same-stream overruns: the first ends after the second on stream 30, at many places of the span
        *[
            k
            for at in range(50_000, 1_000_000, 61_000)
            for k in (
                {"start": at - 40, "end": at + 9_000, "streamId": 30, "shortName": "over"},
                {"start": at - 40, "end": at + 9_000, "streamId": 30, "shortName": "twin"},  # its identical twin
                {"start": at + 5, "end": at + 30, "streamId": 30, "shortName": "inner"},
            )
        ],
        {"start": 0, "end": 0, "shortName": "untimed"},
        {"start": 5_000, "end": 4_000, "shortName": "backwards"},
        {"start": -7, "end": 100, "shortName": "negative"},
        {"start": 10_000, "end": 2**62 + 5, "shortName": "absurd"},
        {"start": 20_000, "end": 20_000 + 86_400 * 10**9 + 1, "shortName": "overlong"},
    ]
    rng.shuffle(out)
    return out


def _nvtx(rng: random.Random) -> list[dict]:
    out = [{"start": -50, "end": None, "eventType": 75, "text": "vllm", "domainId": 3}]  # domain made before capture
    for _ in range(150):
        start = rng.randrange(0, 1_000_000)
        out.append(
            {
                "start": start,
                "end": start + rng.choice([10, 1_000, 60_000, 400_000]),
                "eventType": rng.choice([59, 60]),
                "text": rng.choice(["step", "forward", "CG_DISPATCH:actual=1:mode=FULL:padded=1"]),
                "domainId": rng.choice([0, 0, 3]),
            }
        )
    out += [
        {"start": 400_000, "end": None, "eventType": 59, "text": "open"},  # closed at the last NVTX timestamp
        {"start": 1_100_000, "end": 1_100_500, "eventType": 59, "textId": "late"},  # after every kernel
        {"start": 600, "end": 100, "eventType": 59, "text": "backwards"},  # end < start: skipped
        *[
            {"start": rng.randrange(0, 1_000_000), "eventType": 34, "text": "CG_DISPATCH:actual=1600:mode=NONE"}
            for _ in range(30)
        ],
        {"start": 700_000, "eventType": 33, "text": "a category"},
    ]
    return out


def _runtime(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(200):
        start = rng.randrange(0, 1_000_000)
        out.append(
            {
                "start": start,
                "end": start + rng.randrange(1, 900),
                "name": rng.choice(["cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "cuGraphLaunch"]),
                "eventClass": rng.choice([0, 0, 0, 67]),
                "globalTid": rng.choice([GLOBAL_TID_1, GLOBAL_TID_1 + (2 << 24)]),  # pid 102 launches nothing run
            }
        )
    return out + [{"start": 300, "end": 200, "name": "cudaLaunchKernel_v7000"}]


@pytest.fixture(scope="module")
def hard_trace(tmp_path_factory):
    rng = random.Random(27)
    return write_nsys_sqlite(
        tmp_path_factory.mktemp("slices") / "hard.sqlite",
        kernels=_kernels(rng),
        runtime=_runtime(rng),
        nvtx=_nvtx(rng),
        memcpy=[{"start": 4_000, "end": 4_500}, {"start": 800_000, "end": 799_000}],
        graph_trace=[{"start": 300_000, "end": 310_000}, {"start": 990_000, "end": 995_000}],
    )


def test_the_hard_trace_has_every_case(hard_trace):
    """The fixture holds what slicing must get right (so the comparison below can fail)."""
    data = json.loads(single_pass(hard_trace))
    warnings = "\n".join(data["warnings"])
    assert "ran past the end of a later kernel on the same stream" in warnings
    assert "4 invalid kernel rows" in warnings and "1 without timestamps" in warnings
    assert "CUDA API calls:" in warnings and "NVTX ranges:" in warnings and "memcpy/memset:" in warnings
    assert "pid 102: " in warnings  # a process that launched and ran nothing
    assert "vllm:step" in data["nvtx"] and "open" in data["nvtx"] and "late" in data["nvtx"]
    assert data["dispatch"] and data["graph_node_kernel_count"] > 0
    for n in COUNTS[1:]:
        plan = plan_slices(hard_trace, n)
        assert plan.count == n
        width = max(b - a for a, b in zip(plan.edges, plan.edges[1:])) if n > 2 else plan.edges[0]
        assert 900_000 - 2_000 > width  # the long kernel spans slices
        with SliceReader(hard_trace) as r:  # some kernel and some NVTX range cross every boundary
            for b in plan.edges:
                assert len(r.kernels(f'"start" < {b} AND "end" > {b}')) > 1
                assert len(r.nvtx_ranges_before(b, plan.close_at, plan.domains)) > 0


@pytest.mark.parametrize("n", COUNTS)
def test_hard_trace_sliced_equals_single_pass(hard_trace, n):
    assert sliced(hard_trace, n) == single_pass(hard_trace)


def test_boundaries_on_event_times(hard_trace):
    """Cuts exactly at kernel starts and ends, inside an overrun pair and at its clipped end."""
    plan = plan_slices(hard_trace, 1)
    for edges in [(50_000 - 40, 50_000 + 5, 50_000 + 30, 50_000 + 9_000), (2_000, 111_000), (4_000, 5_000, 20_000)]:
        cut = replace(plan, edges=edges)
        assert summary_json_text(combine_slices(cut, run_in_process(cut))) == single_pass(hard_trace)


def test_an_overrun_clipped_past_a_boundary(tmp_path):
    """A kernel before the cut whose end is clipped (a later kernel on its stream ends first) to the start
    of its successor after the cut: the busy union inside the next slice starts with a prefix up to that
    start, not to the recorded end; a CUDA graph kernel between them takes no part in clipping."""
    path = write_nsys_sqlite(
        tmp_path / "cut.sqlite",
        kernels=[
            {"start": 100, "end": 1_000, "streamId": 7, "shortName": "over"},
            {"start": 500, "end": 600, "streamId": 7, "shortName": "next"},
            {"start": 450, "end": 460, "streamId": 7, "shortName": "graph", "graphNodeId": 3},
            {"start": 50, "end": 300, "streamId": 8, "shortName": "other"},
            {"start": 700, "end": 720, "streamId": 8, "shortName": "other"},
        ],
        nvtx=[{"start": 350, "end": 800, "eventType": 59, "text": "step"}],
    )
    expected = single_pass(path)
    data = json.loads(expected)
    assert data["gpu_busy_union_s"] == 570e-9 and data["nvtx"]["step"]["gpu_overlap_s"] == 270e-9
    plan = plan_slices(path, 1)
    for edges in [(400,), (455,), (450, 550), (100, 500, 600), (99, 101, 499, 501, 710), (480, 490)]:
        cut = replace(plan, edges=edges)
        assert summary_json_text(combine_slices(cut, run_in_process(cut))) == expected, edges


def test_kernels_of_unknown_streams_are_not_clipped_in_one_pass_or_in_slices(tmp_path):
    path = write_nsys_sqlite(
        tmp_path / "null_streams.sqlite",
        kernels=[
            {"start": 100, "end": 1_000, "shortName": "a"},
            {"start": 500, "end": 600, "shortName": "b"},  # on another stream, for all anyone knows
        ],
    )
    with sqlite3.connect(path) as con:  # nsys declares streamId NOT NULL: a copy of the table without it
        con.executescript(
            "CREATE TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; "
            "ALTER TABLE k RENAME TO CUPTI_ACTIVITY_KIND_KERNEL; UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = NULL;"
        )
    expected = single_pass(path)
    data = json.loads(expected)
    assert data["gpu_busy_union_s"] == 900e-9 and data["top_kernels"][0] == ["a", [1, 900e-9]]
    plan = plan_slices(path, 1)
    for edges in [(400,), (550,), (450, 650)]:
        cut = replace(plan, edges=edges)
        assert summary_json_text(combine_slices(cut, run_in_process(cut))) == expected, edges


@pytest.mark.parametrize("trace", [SAMPLE_108K, *NSYS_TRACES], ids=lambda p: p.name)
def test_shared_traces_sliced_equal_single_pass(trace):
    expected = single_pass(trace)
    for n in (2, 7):  # every count of COUNTS on the built fixtures; two on each real trace
        assert sliced(trace, n) == expected, n


def test_a_slice_reads_only_its_rows():
    """Slice 1 of 7 of the 108k sample holds about a seventh of its kernels and CUDA API calls, not all."""
    plan = plan_slices(SAMPLE_108K, 7)
    part = slice_partial(plan, 1)
    total = json.loads(single_pass(SAMPLE_108K))["kernel_count"]
    assert 0 < part.counts["kernels"] < total / 3 and 0 < part.counts["api_calls"] < total / 3


def test_times_that_are_not_integers_are_summarised_in_one_pass(tmp_path):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=[{"start": 10, "end": 20}, {"start": 30.5, "end": 40}])
    assert plan_slices(path, 3) == "CUPTI_ACTIVITY_KIND_KERNEL holds times that are not integers"
    assert sliced_summary(path, 3) is None
    assert main(["summarize", "--no-cache", "--slices", "3", str(path)]) == 0


def test_auto_slice_count():
    """One pass while the estimated frames fit in half the memory; else a slice per worker's share."""
    assert auto_slice_count(SAMPLE_108K, workers=2, available=8 << 30) == 1
    with SliceReader(SAMPLE_108K, strings=False) as r:
        rows = r.row_estimate()
    from dashboard.data.slice_count import BYTES_PER_ROW

    need = rows * BYTES_PER_ROW
    assert auto_slice_count(SAMPLE_108K, workers=2, available=need) == 4
    assert auto_slice_count(SAMPLE_108K, workers=2, available=need * 2) == 1


def test_cli_slices_on_a_local_dask_cluster(hard_trace, capsys):
    """The real path: --slices N runs N tasks on a local cluster (one worker process); the output is the summary."""
    assert main(["summarize", "--no-cache", str(hard_trace)]) == 0
    expected = capsys.readouterr().out
    assert main(["summarize", "--no-cache", "--slices", "3", "--workers", "1", str(hard_trace)]) == 0
    captured = capsys.readouterr()
    assert captured.out == expected
    assert "summarising hard.sqlite in 3 time slices on Dask" in captured.err


def test_cli_slices_refuses_several_files_and_other_formats(capsys):
    assert main(["summarize", "--slices", "2", str(SAMPLE_108K), str(SAMPLE_108K)]) == 2
    assert "--slices cuts one trace into time slices" in capsys.readouterr().err
    assert main(["summarize", "--no-cache", "--slices", "2", str(SAMPLES / "h100_qwen1.5_0.5b_chat.json.gz")]) == 2
    assert "only nsys SQLite exports can be summarised per time slice" in capsys.readouterr().err


def test_cli_slices_on_an_existing_scheduler(hard_trace, tmp_path, capsys):
    """--slices with --scheduler: the tasks run on that cluster (in-process here); -o gets the summary, and the
    cache then answers a second run without the cluster."""
    from dask.distributed import LocalCluster

    cache = ["--cache-dir", str(tmp_path / "cache")]
    out = tmp_path / "s.json"
    with LocalCluster(n_workers=2, processes=False, dashboard_address=None, scheduler_port=0) as cluster:
        argv = ["summarize", "--slices", "7", "--scheduler", cluster.scheduler_address, str(hard_trace), "-o", str(out)]
        assert main([*argv, *cache]) == 0
    assert "in 7 time slices on Dask" in capsys.readouterr().err
    assert out.read_text() == single_pass(hard_trace)
    assert main(["summarize", str(hard_trace), *cache]) == 0
    captured = capsys.readouterr()
    assert captured.out == single_pass(hard_trace) and "time slices" not in captured.err
