"""Events that name no device or no name: a kernel whose device is not recorded (-1) is its own "GPU not
recorded" lane and never the any-GPU row; a null name reads <unnamed>, never "None"."""

import json

from dashboard.analysis.gpu_time import ALL_GPUS, gpu_time, gpu_work
from dashboard.data.trace import load_trace
from dashboard.model import device_label
from dashboard.render import gpu_rows, overview_cards
from dashboard.state import ViewState


def kineto(tmp_path, events, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return load_trace(path)


def test_a_kernel_without_device_is_not_the_any_gpu_row(tmp_path):
    t = kineto(
        tmp_path,
        [
            {"ph": "X", "cat": "kernel", "name": "nopid", "ts": 10, "dur": 5},
            {
                "ph": "X",
                "cat": "kernel",
                "name": "ok",
                "ts": 100,
                "dur": 3,
                "pid": 0,
                "tid": 7,
                "args": {"device": 0, "stream": 7, "correlation": 2},
            },
        ],
    )
    assert t.bundle.kernels["device_id"].tolist() == [-1, 0]
    assert (t.summary.gpu_activity_span_ns, t.summary.gpu_busy_union_ns) == (93_000, 8_000)
    per = gpu_time(gpu_work(t.bundle.kernels), t.bundle.kernels).set_index("device_id")
    assert per.index.tolist() == [-1, 0, ALL_GPUS]
    assert (per.loc[ALL_GPUS, "busy_ns"], per.loc[ALL_GPUS, "window_ns"]) == (8_000, 93_000)
    cards = {c.label: c.value for c in overview_cards(t, ViewState())}
    assert (cards["GPU activity span"], cards["Any GPU busy"], cards["All GPUs idle in span"]) == (
        "93.00 µs",
        "8.00 µs",
        "85.00 µs",
    )
    rows, columns = gpu_rows(t, ViewState())
    assert columns == [("gpu-1", "GPU not recorded"), ("gpu0", "GPU 0"), ("all", "any GPU")]
    assert rows[5] == {"metric": "Utilisation", "gpu-1": "100.00 %", "gpu0": "100.00 %", "all": "8.60 %"}
    assert device_label(-1) == "GPU not recorded" and device_label(3) == "GPU 3"


def test_a_null_or_empty_name_is_unnamed(tmp_path):
    t = kineto(
        tmp_path,
        [
            {
                "ph": "X",
                "cat": "kernel",
                "name": None,
                "ts": 10,
                "dur": 5,
                "pid": 0,
                "tid": 7,
                "args": {"device": 0, "stream": 7, "correlation": 1},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "",
                "ts": 20,
                "dur": 5,
                "pid": 0,
                "tid": 7,
                "args": {"device": 0, "stream": 7, "correlation": 2},
            },
            {"ph": "X", "cat": "user_annotation", "ts": 0, "dur": 50, "pid": 0, "tid": 7},
        ],
    )
    assert t.bundle.kernels["short_name"].astype(str).tolist() == ["<unnamed>", "<unnamed>"]
    assert t.bundle.nvtx_ranges["message"].astype(str).tolist() == ["<unnamed>"]


def test_kernel_rows_read_but_all_left_out_are_not_called_nvtx_only(tmp_path):
    """QA: one kernel with ts 1e300 (not loaded) read as "no events at all" and "CUDA was not traced (NVTX only)"
    beside an Input rows card that counted the kernel row."""
    from dashboard.analysis.gpu_time import cuda_traced
    from dashboard.render import build_view

    t = kineto(
        tmp_path,
        [
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "ts": 1e300,
                "dur": 5,
                "pid": 0,
                "tid": 1,
                "args": {"device": 0, "stream": 7, "correlation": 1},
            }
        ],
    )
    assert t.bundle.kernels.empty and cuda_traced(t)
    view = build_view(t, ViewState())
    assert view.notices == [
        "This trace's 1 kernel row could not be used (see Input rows): GPU busy, idle and kernel tables are empty."
    ]
    cards = {c.label: (c.value, c.hint) for c in view.cards}
    assert cards["Kernels"] == ("0", "kernel rows in the trace; 1 more read but not loaded (see Input rows)")
    assert (
        cards["Input rows"][1]
        == "read per kind: kernels 1 (1 not loaded: 1 missing, non-numeric or out-of-range ts/dur)"
    )
    assert view.timeline.layout.title.text == "GPU timeline"
    assert not any("NVTX only" in c.hint for c in view.cards)
