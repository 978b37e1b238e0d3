"""Exact GPU busy/idle cases (issue: exact, version-robust ingest), each built as an nsys export."""

from dashboard.analysis.gpu_time import ALL_GPUS, gpu_time, gpu_work
from dashboard.analysis.launches import kernel_launches
from dashboard.analysis.summary import summarize
from dashboard.loaders import load_nsys_sqlite

from factories import GLOBAL_PID_1, GLOBAL_TID_1, write_nsys_sqlite


def load(tmp_path, **tables):
    return load_nsys_sqlite(write_nsys_sqlite(tmp_path / "t.sqlite", **tables))


def rows(frame):
    return {int(r.device_id): r for r in frame.itertuples(index=False)}


def test_overlapping_streams(tmp_path):
    b = load(
        tmp_path,
        kernels=[
            {"start": 0, "end": 100, "streamId": 7},
            {"start": 200, "end": 300, "streamId": 7},
            {"start": 50, "end": 150, "streamId": 8},
            {"start": 60, "end": 90, "streamId": 9},
        ],
    )
    t = rows(gpu_time(gpu_work(b.kernels), b.kernels))
    d0 = t[0]
    assert (d0.kernel_sum_ns, d0.busy_ns, d0.window_ns, d0.idle_ns, d0.streams) == (330, 250, 300, 50, 3)
    assert round(d0.utilisation_pct, 2) == 83.33
    s = summarize(b)
    assert (s.gpu_busy_union_ns, s.gpu_activity_span_ns, s.gpu_idle_within_span_ns) == (250, 300, 50)


def test_same_stream_id_on_several_devices(tmp_path):
    b = load(
        tmp_path,
        kernels=[
            {"start": 0, "end": 80, "deviceId": 0},
            {"start": 90, "end": 100, "deviceId": 0},
            {"start": 0, "end": 80, "deviceId": 1},
            {"start": 10, "end": 90, "deviceId": 2},
        ],
    )
    t = rows(gpu_time(gpu_work(b.kernels), b.kernels))
    # Each GPU over its own window (issue 12: per-GPU utilisation); any GPU busy over the all-GPU window.
    assert [(t[d].busy_ns, t[d].window_ns, t[d].idle_ns) for d in (0, 1, 2)] == [
        (90, 100, 10),
        (80, 80, 0),
        (80, 80, 0),
    ]
    assert (t[ALL_GPUS].busy_ns, t[ALL_GPUS].idle_ns, t[ALL_GPUS].streams) == (100, 0, 3)


def test_per_stream_idle_is_not_device_idle(tmp_path):
    b = load(
        tmp_path,
        kernels=[
            {"start": 0, "end": 100, "streamId": 7},
            {"start": 200, "end": 300, "streamId": 7},
            {"start": 100, "end": 200, "streamId": 8},
            {"start": 0, "end": 50, "streamId": 9},
        ],
    )
    assert rows(gpu_time(gpu_work(b.kernels)))[0].idle_ns == 0


def test_copies_are_not_idle(tmp_path):
    b = load(
        tmp_path,
        kernels=[{"start": 0, "end": 100}, {"start": 400, "end": 500}],
        memcpy=[{"start": 100, "end": 400, "bytes": 1 << 20, "copyKind": 1}],
        memset=[{"start": 500, "end": 520}],
    )
    kernels_only = rows(gpu_time(gpu_work(b.kernels, b.memops)))[0]
    assert (kernels_only.busy_ns, kernels_only.idle_ns) == (200, 300)
    with_copies = rows(gpu_time(gpu_work(b.kernels, b.memops, include_memops=True)))[0]
    assert (with_copies.busy_ns, with_copies.idle_ns) == (520, 0)
    assert summarize(b).gpu_busy_union_ns == 200  # the summary keeps kernels only (contract)
    assert b.memops[["kind", "bytes"]].values.tolist() == [["memcpy HtoD", 1 << 20], ["memset", 4096]]


def test_zero_timestamps_and_zero_length_kernels(tmp_path):
    b = load(
        tmp_path,
        kernels=[
            {"start": 0, "end": 0},
            {"start": 1000, "end": 1100},
            {"start": 1200, "end": 1300},
            {"start": 1100, "end": 1100},
            {"start": 1150, "end": 1150},
        ],
    )
    s = summarize(b)
    assert (s.kernel_count, s.gpu_activity_span_ns, s.gpu_busy_union_ns) == (5, 300, 200)
    assert b.meta.dropped_zero_ts_kernels == 1


def test_correlation_ids_repeat_across_processes(tmp_path):
    pid2 = (1 << 48) | (200 << 24)
    b = load(
        tmp_path,
        kernels=[
            {"start": 10, "end": 20, "correlationId": 1, "globalPid": GLOBAL_PID_1},
            {"start": 30, "end": 40, "correlationId": 1, "globalPid": pid2},
        ],
        runtime=[
            {"start": 1, "end": 5, "name": "cudaLaunchKernel_v7000", "correlationId": 1, "globalTid": GLOBAL_TID_1},
            {"start": 2, "end": 6, "name": "cuLaunchKernel", "correlationId": 1, "globalTid": pid2 | 201},
        ],
    )
    j = kernel_launches(b.kernels, b.api_calls)
    assert j[["kernel_index", "api_index", "pid"]].values.tolist() == [[0, 0, 100], [1, 1, 200]]
    assert b.api_calls["name"].iloc[j["api_index"]].astype(str).tolist() == ["cudaLaunchKernel_v7000", "cuLaunchKernel"]


def test_graph_launch_shares_one_correlation_and_graph_trace_counts_as_busy(tmp_path):
    b = load(
        tmp_path,
        kernels=[{"start": 0, "end": 100, "correlationId": 5}, {"start": 900, "end": 1000, "correlationId": 6}],
        graph_trace=[{"start": 100, "end": 900, "graphId": 3}],
        runtime=[{"start": 0, "end": 1, "name": "cudaGraphLaunch_v10000", "correlationId": 7}],
    )
    t = rows(gpu_time(gpu_work(b.kernels, graph_launches=b.graph_launches)))[0]
    assert (t.busy_ns, t.idle_ns) == (1000, 0)
    without = rows(gpu_time(gpu_work(b.kernels, graph_launches=b.graph_launches, include_graphs=False)))[0]
    assert (without.busy_ns, without.idle_ns) == (200, 800)


def test_node_traced_graph_kernels_share_a_launch(tmp_path):
    b = load(
        tmp_path,
        kernels=[
            {"start": 10, "end": 20, "correlationId": 9, "graphNodeId": 1},
            {"start": 20, "end": 30, "correlationId": 9, "graphNodeId": 2},
        ],
        runtime=[{"start": 0, "end": 5, "name": "cudaGraphLaunch_v10000", "correlationId": 9}],
    )
    j = kernel_launches(b.kernels, b.api_calls)
    assert j["api_index"].tolist() == [0, 0]  # one launch, counted once in the API table
    s = summarize(b)
    assert s.graph_node_kernel_count == 2 and s.api["count"].tolist() == [1]


def test_gpu_time_empty():
    from dashboard.model import KERNELS, empty_frame

    assert gpu_time(gpu_work(empty_frame(KERNELS))).empty


def test_kernel_time_per_device_a_part_of_the_rows_at_a_time(tmp_path, monkeypatch):
    """Per-device kernel counts and times summed 1 and 2 rows at a time (as 10M kernels are) equal one pass."""
    import dashboard.analysis.gpu_time as gt

    b = load(
        tmp_path,
        kernels=[
            {"start": 0, "end": 100, "deviceId": 1},
            {"start": 10, "end": 40, "deviceId": 0},
            {"start": 50, "end": 20, "deviceId": 1},  # invalid: no time
            {"start": 60, "end": 90, "deviceId": 0},
        ],
    )
    whole = gpu_time(gpu_work(b.kernels), b.kernels)
    assert [(r.kernels, r.kernel_sum_ns) for r in rows(whole).values()] == [(2, 60), (2, 100), (4, 160)]
    for part in (1, 2):
        monkeypatch.setattr(gt._kernels_per_device, "__defaults__", (part,))
        assert gpu_time(gpu_work(b.kernels), b.kernels).equals(whole)
