"""The load preview (issue 27): a big trace's kernel rows as recorded, shown while the rest of it loads.

Exact values at every layer: the arithmetic (analysis.preview), the loader's split kernel read and the cache's
three columns, load_trace's callback, the store's status, the cards and figure, and the page's poll."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis.gpu_time import BUSY_KERNEL_ROWS, trace_gpu_overview
from dashboard.analysis.kernel_times import overrun_kernel_count
from dashboard.analysis.preview import LoadPreview, load_preview, preview_lanes
from dashboard.app.store import TraceStore
from dashboard.data.cache import TraceCache
from dashboard.data.trace import load_trace
from dashboard.loaders import load_nsys_sqlite
from dashboard.render.preview import PREVIEW_NOTE, PREVIEW_TITLE, preview_cards, preview_figure
from tests.paths import SAMPLES

NCCL = SAMPLES / "nsys2026.2_2gpu_nccl_before.sqlite"
GENERATED = SAMPLES / "generated_seed_shaped_108k.sqlite"
NA = pd.NA

# Kernel rows as a loader reads them: two GPUs, overlaps, a touching pair, and every kind of unusable time.
STARTS = pd.array([100, 150, 300, 400, 1000, 1100, NA, 500, 0, -1, 2000, 10], dtype="Int64")
ENDS = pd.array([200, 250, 400, 450, 1200, 1150, 600, 400, 0, 50, 2**62, 60], dtype="Int64")
DEVICES = pd.array([0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1], dtype="Int32")


def test_the_preview_counts_every_row_and_unions_the_usable_ones_per_gpu():
    p = load_preview(STARTS, ENDS, DEVICES)
    # usable: rows 0-5 and 11 (NULL start, end < start, 0/0, a negative start, an end at 2**62 are not)
    assert (p.kernel_rows, p.timed_rows, p.first_ns, p.last_ns, p.span_ns) == (12, 7, 10, 1200, 1190)
    assert list(p.unions) == [0, 1]
    (s0, e0), (s1, e1) = p.unions[0], p.unions[1]
    # [100,200) ∪ [150,250) and [300,400) ∪ [400,450): overlapping and touching rows merge, a gap stays
    assert (s0.tolist(), e0.tolist(), s1.tolist(), e1.tolist()) == ([100, 300], [250, 450], [10, 1000], [60, 1200])
    assert p.device_busy_ns() == {0: 300, 1: 250}
    assert p.busy_ns == 550  # no overlap between the GPUs here


def test_the_preview_busy_is_the_union_over_every_gpu_not_a_sum():
    p = load_preview(np.array([0, 50]), np.array([100, 150]), np.array([0, 1]))
    assert p.device_busy_ns() == {0: 100, 1: 100}
    assert (p.busy_ns, p.span_ns) == (150, 150)


def test_a_preview_without_usable_rows_has_no_span():
    p = load_preview(pd.array([NA, 0], dtype="Int64"), pd.array([5, 0], dtype="Int64"), np.array([0, 0]))
    assert (p.kernel_rows, p.timed_rows, p.first_ns, p.last_ns, p.busy_ns, p.unions) == (2, 0, None, None, 0, {})
    assert preview_lanes(p) == []
    assert load_preview(np.array([], np.int64), np.array([], np.int64), np.array([], np.int64)).kernel_rows == 0


def test_preview_lanes_are_busy_fractions_per_bin_over_the_span():
    p = load_preview(STARTS, ENDS, DEVICES)
    lanes = preview_lanes(p, n_bins=7)  # 170 ns bins over [10, 1200)
    assert [(ln.device_id, ln.mode, ln.busy_ns) for ln in lanes] == [(0, "bins", 300), (1, "bins", 250)]
    assert lanes[0].edges.tolist() == [10, 180, 350, 520, 690, 860, 1030, 1200]
    assert lanes[0].fraction.tolist() == pytest.approx([80 / 170, 120 / 170, 100 / 170, 0, 0, 0, 0])
    assert lanes[1].fraction.tolist() == pytest.approx([50 / 170, 0, 0, 0, 0, 30 / 170, 170 / 170])


@pytest.mark.parametrize("name", ["nsys2026.2_2gpu_nccl_before.sqlite", "generated_seed_shaped_108k.sqlite"])
def test_the_preview_is_the_kernel_rows_overview_less_the_overrun_clipping(name):
    trace = load_trace(SAMPLES / name)
    k = trace.bundle.kernels
    p = load_preview(k["start_ns"], k["end_ns"], k["device_id"])
    ov = trace_gpu_overview(trace.bundle, BUSY_KERNEL_ROWS)
    assert (p.kernel_rows, p.span_ns) == (trace.summary.kernel_count, ov.span_ns)
    if overrun_kernel_count(k) == 0:  # the 2-GPU sample: every figure the same
        assert (p.busy_ns, len(p.unions)) == (ov.any_busy_ns, 2) == (285_205_624, 2)
    else:  # the generated sample's 150 overruns: clipping takes 29,429 ns off the union
        assert overrun_kernel_count(k) == 150
        assert p.busy_ns - ov.any_busy_ns == 29_429


@pytest.mark.parametrize("path", [NCCL, GENERATED, SAMPLES / "nsys2022.4_cpu_llm_server_nvtx.sqlite"])
def test_the_split_kernel_read_gives_the_same_frames_and_the_times_first(path):
    """Without a kernel table (the CPU-only sample) there are no times to give: no call, the same frames."""
    plain = load_nsys_sqlite(path)
    got = []

    def on_times(start, end, device):
        got.append((start.copy(), end.copy(), device.copy()))

    split = load_nsys_sqlite(path, on_kernel_times=on_times)
    for name in ("kernels", "api_calls", "nvtx_ranges", "nvtx_marks", "memops", "graph_launches"):
        pd.testing.assert_frame_equal(getattr(split, name), getattr(plain, name), check_exact=True)
    assert split.meta == plain.meta
    assert len(got) == (0 if plain.kernels.empty else 1)
    for start, end, device in got:
        assert len(start) == len(plain.kernels) > 0
        assert np.array_equal(np.asarray(start, np.int64), plain.kernels["start_ns"].to_numpy())
        assert np.array_equal(np.asarray(end, np.int64), plain.kernels["end_ns"].to_numpy())
        assert np.array_equal(np.asarray(device, np.int64), plain.kernels["device_id"].to_numpy(np.int64))
    calls = len(got)
    load_nsys_sqlite(path, lean=True, on_kernel_times=on_times)  # `summarize`'s read: no preview, one query
    assert len(got) == calls


def test_a_cached_load_gives_the_kernel_times_before_the_frames(tmp_path):
    cache = TraceCache(tmp_path / "cache")
    load_trace(NCCL, cache=cache)
    got, stages = [], []

    def on_times(start, end, device):
        got.append(stages[-1])
        got.append(load_preview(start, end, device))

    bundle, hit = cache.load_bundle(
        NCCL, lambda p: pytest.fail("built again"), progress=stages.append, on_kernel_times=on_times
    )
    assert hit and got[0] == "cached frames"
    assert (got[1].kernel_rows, got[1].busy_ns, got[1].span_ns) == (4010, 285_205_624, 299_877_006)


def test_a_cached_load_reads_the_frames_after_the_preview_thread_it_started(tmp_path, monkeypatch):
    """The preview of cached frames is drawn before the frames are read (sharing the cores, the preview of 10M
    kernels came at the end of the read). A callback that starts no thread (the one above) is not waited for."""
    import pandas

    cache = TraceCache(tmp_path / "cache")
    load_trace(NCCL, cache=cache)
    order = []
    read = pandas.read_parquet

    def read_parquet(path, *args, **kwargs):
        order.append(("read", Path(path).stem, tuple(kwargs.get("columns") or ())))
        return read(path, *args, **kwargs)

    monkeypatch.setattr(pandas, "read_parquet", read_parquet)

    def slow_preview(start, end, device):
        def run():
            threading.Event().wait(0.3)
            order.append(("preview", len(start)))

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    bundle, hit = cache.load_bundle(NCCL, lambda p: pytest.fail("built again"), on_kernel_times=slow_preview)
    assert hit and len(bundle.kernels) == 4010
    assert order[:3] == [
        ("read", "kernels", ("start_ns", "end_ns", "device_id")),
        ("preview", 4010),
        ("read", "kernels", ()),
    ]


def wait_for(previews: list, n: int = 1) -> None:
    for _ in range(500):
        if len(previews) >= n:
            return
        threading.Event().wait(0.01)
    raise AssertionError("no preview came")


def test_load_trace_computes_the_preview_in_a_thread_for_sqlite_and_cached_frames(tmp_path):
    previews = []
    trace = load_trace(NCCL, preview=previews.append)
    wait_for(previews)
    p = previews[0]
    assert isinstance(p, LoadPreview) and (p.kernel_rows, p.busy_ns) == (trace.summary.kernel_count, 285_205_624)
    cache = TraceCache(tmp_path / "cache")
    load_trace(NCCL, cache=cache, preview=previews.append)  # builds the entry (the split read)
    load_trace(NCCL, cache=cache, preview=previews.append)  # reads it
    wait_for(previews, 3)
    assert [(q.kernel_rows, q.busy_ns, q.span_ns) for q in previews[1:]] == [(4010, 285_205_624, 299_877_006)] * 2


def test_a_summary_json_and_a_pytorch_trace_have_no_preview():
    previews = []
    load_trace(SAMPLES / "000_746bee52f7bbcc80_seed_summary.json", preview=previews.append)
    load_trace(SAMPLES / "h100_qwen1.5_0.5b_chat.json.gz", preview=previews.append)
    threading.Event().wait(0.2)
    assert previews == []


def test_a_failing_preview_is_logged_and_the_load_goes_on(caplog):
    def broken(_):
        raise RuntimeError("boom")

    trace = load_trace(NCCL, preview=broken)
    assert trace.summary.kernel_count == 4010
    for _ in range(200):
        if "the load preview failed" in caplog.text:
            break
        threading.Event().wait(0.01)
    assert "the load preview failed" in caplog.text


def served(tmp_path, name="t.sqlite"):
    d = tmp_path / "traces"
    d.mkdir()
    shutil.copy(NCCL, d / name)
    return d


def test_the_store_status_carries_the_preview_while_loading(tmp_path):
    at_preview, release = threading.Event(), threading.Event()

    def loader(path, *, dispatch_prefix, cache, progress, preview):
        progress("kernels and CUDA API calls", rows=(("kernels", 3),))
        preview(load_preview(np.array([0, 5, 20]), np.array([10, 15, 30]), np.array([0, 0, 0])))
        at_preview.set()
        assert release.wait(30)
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[served(tmp_path)], loader=loader)
    tid = store.ids()[0]
    assert store.load_status(tid).preview is None
    thread = threading.Thread(target=store.get, args=(tid,))
    thread.start()
    assert at_preview.wait(30)
    status = store.load_status(tid)
    assert (status.state, status.preview.busy_ns, status.preview.span_ns) == ("loading", 25, 30)
    release.set()
    thread.join(30)
    assert (store.load_status(tid).state, store.load_status(tid).preview) == ("loaded", None)


def test_the_preview_cards_say_what_they_count():
    cards = preview_cards(load_preview(STARTS, ENDS, DEVICES))
    assert [(c.label, c.value) for c in cards] == [
        ("Kernel span", "1.19 µs"),
        ("Any GPU busy", "550 ns"),
        ("Idle in span", "640 ns"),
        ("Any-GPU utilisation", "46.22 %"),
        ("Kernels", "12"),
        ("Busy per GPU", "2 GPUs"),
    ]
    assert all("preview" in c.hint for c in cards)
    assert cards[-1].hint.startswith("GPU 0 300 ns · GPU 1 250 ns")
    none = preview_cards(load_preview(pd.array([NA], dtype="Int64"), pd.array([NA], dtype="Int64"), [0]))
    assert [(c.label, c.value) for c in none] == [("Kernels", "1"), ("GPU busy (union)", "n/a")]


def test_the_preview_figure_is_one_binned_lane_per_gpu_with_its_note():
    fig = preview_figure(load_preview(STARTS, ENDS, DEVICES), 470)
    assert PREVIEW_TITLE in str(fig["layout"]["title"])
    assert PREVIEW_NOTE.split(":")[0] in str(fig["layout"]["annotations"])
    assert fig["layout"]["height"] >= 470
    bins = [t for t in fig["data"] if "busy fraction per bin" in str(t.get("name", "")) and t.get("y") is not None]
    lanes = {y for t in bins for y in t["y"] if y is not None}  # the legend swatch has no lane
    assert lanes == {"GPU 0", "GPU 1"}
    empty = preview_figure(load_preview(pd.array([NA], dtype="Int64"), pd.array([NA], dtype="Int64"), [0]), 470)
    assert "nothing to preview" in str(empty["layout"]["annotations"])


def test_the_page_poll_sends_the_preview_once_while_loading(tmp_path):
    from dashboard.app import create_app, ids
    from tests.test_load_status import _post

    at_preview, release = threading.Event(), threading.Event()

    def loader(path, *, dispatch_prefix, cache, progress, preview):
        progress("kernels and CUDA API calls", rows=(("kernels", 12),))
        preview(load_preview(STARTS, ENDS, DEVICES))
        at_preview.set()
        assert release.wait(30)
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[served(tmp_path)], loader=loader)
    app = create_app(store=store)
    tid = store.ids()[0]
    poll = {f"{ids.LOAD_POLL}.n_intervals": 1, f"{ids.TRACE_PICKER}.value": tid}
    trigger = f"{ids.LOAD_POLL}.n_intervals"
    _post(app, "load-preview", poll, trigger)  # starts the load
    assert at_preview.wait(30)
    out = _post(app, "load-preview", {**poll, f"{ids.LOAD_POLL}.n_intervals": 2}, trigger)
    sent = out[ids.LOAD_PREVIEW]["data"]
    assert sent["trace"] == tid
    assert [c["props"]["children"][1]["props"]["children"] for c in sent["cards"]][:2] == ["1.19 µs", "550 ns"]
    assert PREVIEW_TITLE in str(sent["figure"]["layout"]["title"])
    assert out[ids.LOAD_STATUS]["children"].startswith("Loading t.sqlite: reading kernels and CUDA API calls (12 ")
    shown = {**poll, f"{ids.LOAD_POLL}.n_intervals": 3, f"{ids.LOAD_PREVIEW}.data": sent}
    assert ids.LOAD_PREVIEW not in _post(app, "load-preview", shown, trigger)  # once per load
    picked = _post(app, "load-preview", shown, f"{ids.TRACE_PICKER}.value")  # picked again: shown again
    assert picked[ids.LOAD_PREVIEW]["data"]["trace"] == tid
    other = {**shown, f"{ids.LOAD_PREVIEW}.data": {**sent, "trace": "another.sqlite@0"}}
    replaced = _post(app, "load-preview", other, trigger)[ids.LOAD_PREVIEW]["data"]  # another trace's preview shown
    assert replaced["trace"] == tid
    release.set()
    store.get(tid)
    assert ids.LOAD_PREVIEW not in _post(app, "load-preview", other, trigger)  # loaded: its views replace it
    out = _post(app, "load-preview", {**poll, f"{ids.LOAD_POLL}.n_intervals": 4}, trigger)
    assert ids.LOAD_PREVIEW not in out and out[ids.LOAD_POLL]["disabled"] is True  # loaded: the views render


def test_another_traces_preview_is_cleared_while_a_trace_without_one_loads(tmp_path):
    from dashboard.app import create_app, ids
    from dashboard.render.preview import PREVIEW_TITLE as TITLE
    from tests.test_load_status import _post

    at_names, release = threading.Event(), threading.Event()

    def loader(path, *, dispatch_prefix, cache, progress, preview):
        progress("names")  # no preview yet
        at_names.set()
        assert release.wait(30)
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[served(tmp_path)], loader=loader)
    app = create_app(store=store)
    tid = store.ids()[0]
    shown = {"trace": "big.sqlite@0", "cards": [], "figure": {"layout": {"title": TITLE}}}
    values = {f"{ids.TRACE_PICKER}.value": tid, f"{ids.LOAD_PREVIEW}.data": shown}
    out = _post(app, "load-preview", values, f"{ids.TRACE_PICKER}.value")  # picked: its load starts
    cleared = out[ids.LOAD_PREVIEW]["data"]
    assert (cleared["trace"], cleared["cards"]) == (None, [])
    assert "Drawn once the trace is loaded" in str(cleared["figure"]["layout"])
    assert at_names.wait(30)
    release.set()
    store.get(tid)
