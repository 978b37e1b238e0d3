"""The load's status for a waiting page (stages, rows, seconds) and cache entries written after the load."""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time

import pytest

from dashboard.app.store import TraceStore
from dashboard.data.analysis import analysis_of
from dashboard.data.cache import TraceCache, file_identity
from dashboard.data.trace import LoadStatus, load_trace
from dashboard.errors import TraceFormatError
from dashboard.render.load_status import (
    FRESH_S,
    IDLE_POLLS,
    after_load_kick,
    keep_polling,
    kicked_after_load,
    load_status_line,
    next_poll_limit,
    poll_step,
)
from tests.paths import SAMPLES

NCCL = SAMPLES / "nsys2026.2_2gpu_nccl_before.sqlite"  # 4,010 kernels
STAGES = ["names", "kernels and CUDA API calls", "NVTX", "memcpy/memset", "graphs", "summary"]


def test_status_line_names_the_stage_the_rows_and_the_seconds():
    loading = LoadStatus("big.sqlite", "loading", "kernels and CUDA API calls", 4.25, 3.0, (("kernels", 2_000_000),))
    assert load_status_line(loading) == (
        "Loading big.sqlite: reading kernels and CUDA API calls (2,000,000 kernels) · 4.2 s"
    )
    assert load_status_line(LoadStatus("a.json", "loading", "summary", 12.96)) == (
        "Loading a.json: computing the summary · 13.0 s"
    )
    assert load_status_line(LoadStatus("a.sqlite", "loading", "", 0.04)) == "Loading a.sqlite: starting · 0.0 s"
    assert load_status_line(LoadStatus("u.sqlite", "loading", "waiting", 1.5)) == (
        "Loading u.sqlite: waiting for another upload to finish loading · 1.5 s"
    )
    assert load_status_line(LoadStatus("a.sqlite", "loading", "new stage", 1.0)) == (
        "Loading a.sqlite: new stage · 1.0 s"
    )
    assert load_status_line(LoadStatus("a.sqlite", "idle")) == "Loading a.sqlite…"
    assert load_status_line(LoadStatus("a.sqlite", "loaded")) is None
    assert load_status_line(LoadStatus("a.sqlite", "failed", error="a.sqlite: broken")) is None


def test_the_page_polls_while_loading_and_a_bounded_while_idle():
    assert keep_polling(LoadStatus("a", "loading", "NVTX", 99.0), 10_000) is True
    assert keep_polling(LoadStatus("a", "idle"), IDLE_POLLS - 1) is True
    assert keep_polling(LoadStatus("a", "idle"), IDLE_POLLS) is False
    assert keep_polling(LoadStatus("a", "loaded"), 0) is False
    assert keep_polling(LoadStatus("a", "failed", error="x"), 0) is False


def test_a_poll_shows_the_line_stops_when_done_and_kicks_the_views():
    loading = LoadStatus("b.sqlite", "loading", "NVTX", 2.0)
    assert poll_step(loading, 7, picked=False) == (
        "Loading b.sqlite: reading NVTX ranges and marks · 2.0 s",
        True,
        False,
    )
    assert poll_step(LoadStatus("b.sqlite", "loaded", age_s=0.3), 8, picked=False) == (None, False, True)
    assert poll_step(LoadStatus("b.sqlite", "failed", error="b.sqlite: broken", age_s=0.3), 8, False) == (
        None,
        False,
        True,
    )
    # a trace just picked that is already in memory: its views render themselves, unless it loaded moments ago
    assert poll_step(LoadStatus("b.sqlite", "loaded", age_s=FRESH_S), 0, picked=True) == (None, False, False)
    assert poll_step(LoadStatus("b.sqlite", "loaded", age_s=1.0), 0, picked=True) == (None, False, True)
    # an old failure is tried again by the views: the page waits for that load
    old = LoadStatus("b.sqlite", "failed", error="b.sqlite: broken", age_s=FRESH_S + 1)
    assert poll_step(old, 0, picked=True) == ("Loading b.sqlite…", True, False)
    assert poll_step(LoadStatus("b.sqlite", "idle"), IDLE_POLLS, picked=False) == (None, False, True)


def test_the_poll_may_tick_once_past_the_tick_answered():
    # the next tick waits for the answer: one poll in flight at a time (dcc.Interval stops at max_intervals)
    assert next_poll_limit(0) == 1
    assert next_poll_limit(7) == 8
    assert next_poll_limit(None) == 1  # the page's first answer, before any tick
    assert [next_poll_limit(bad) for bad in ("x", True, -3, 2.5)] == [1, 1, 1, 1]  # a forged request


def test_a_kick_after_a_load_is_told_from_the_page_s_own_for_a_while():
    kick = after_load_kick(1_000_000)
    assert kick == -1_000_000
    assert kicked_after_load(kick, 1_000_000 + FRESH_S * 1000 - 1) is True
    assert kicked_after_load(kick, 1_000_000 + FRESH_S * 1000) is False  # a trace picked later returns at once
    assert kicked_after_load(1_764_000_000_000, 1_764_000_000_500) is False  # the page's first kick (browser time)
    assert kicked_after_load(0, 5) is False


def test_load_trace_reports_every_stage_and_the_kernel_rows(tmp_path):
    calls = []
    t = load_trace(NCCL, progress=lambda stage, rows=None: calls.append((stage, rows)))
    assert calls == [(s, (("kernels", 4010),) if s == "kernels and CUDA API calls" else None) for s in STAGES]
    assert t.summary.kernel_count == 4010
    names = []
    load_trace(NCCL, progress=names.append)  # a callback of the stage name alone, as before rows were reported
    assert names == STAGES
    cache = TraceCache(tmp_path / "c")
    load_trace(NCCL, cache=cache)
    cached = []
    load_trace(NCCL, cache=cache, progress=cached.append)
    assert cached == ["cached frames", "summary"]


def served(tmp_path, name="t.sqlite"):
    d = tmp_path / "traces"
    d.mkdir()
    shutil.copy(NCCL, d / name)
    return d


def test_store_reports_the_stage_rows_and_seconds_of_a_load_in_progress(tmp_path):
    now = [100.0]
    at_kernels, at_nvtx, release, release_nvtx = (threading.Event() for _ in range(4))

    def loader(path, *, dispatch_prefix, cache, progress):
        progress("names")
        now[0] = 101.0
        progress("kernels and CUDA API calls", rows=(("kernels", 4010),))
        at_kernels.set()
        assert release.wait(30)
        progress("NVTX")
        at_nvtx.set()
        assert release_nvtx.wait(30)
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[served(tmp_path)], loader=loader, clock=lambda: now[0])
    tid = store.ids()[0]
    assert store.load_status(tid) == LoadStatus("t.sqlite", "idle")
    got = []
    thread = threading.Thread(target=lambda: got.append(store.get(tid)))
    thread.start()
    assert at_kernels.wait(30)
    now[0] = 104.25
    assert store.load_status(tid) == LoadStatus(
        "t.sqlite", "loading", "kernels and CUDA API calls", 4.25, 3.25, (("kernels", 4010),)
    )
    release.set()
    assert at_nvtx.wait(30)  # the rows were the kernel stage's: the NVTX stage says none
    assert store.load_status(tid) == LoadStatus("t.sqlite", "loading", "NVTX", 4.25, 0.0)
    release_nvtx.set()
    thread.join(30)
    assert got[0].summary.kernel_count == 4010
    now[0] = 106.0
    assert store.load_status(tid) == LoadStatus("t.sqlite", "loaded", age_s=1.75)


def test_a_failed_load_is_reported_until_the_next_one_starts(tmp_path):
    fail, now = [True], [50.0]

    def loader(path, *, dispatch_prefix, cache, progress):
        progress("names")
        if fail[0]:
            raise TraceFormatError("t.sqlite: the SQLite file is damaged or truncated (file is not a database)")
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[served(tmp_path)], loader=loader, clock=lambda: now[0])
    tid = store.ids()[0]
    with pytest.raises(TraceFormatError):
        store.get(tid)
    now[0] = 52.5
    assert store.load_status(tid) == LoadStatus(
        "t.sqlite",
        "failed",
        error="t.sqlite: the SQLite file is damaged or truncated (file is not a database)",
        age_s=2.5,
    )
    fail[0] = False
    assert store.get(tid).summary.kernel_count == 4010
    assert store.load_status(tid) == LoadStatus("t.sqlite", "loaded", age_s=0.0)


def test_a_background_load_starts_once_and_its_outcome_is_in_the_status(tmp_path):
    calls, release = [], threading.Event()

    def loader(path, *, dispatch_prefix, cache, progress):
        calls.append(path.name)
        assert release.wait(30)
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[served(tmp_path)], loader=loader)
    tid = store.ids()[0]
    for _ in range(5):  # every view of a page asks
        store.load_in_background(tid)
    assert store.load_status(tid).state == "loading"
    release.set()
    assert store.get(tid).summary.kernel_count == 4010  # waits on the background load, never a second one
    assert calls == ["t.sqlite"] and store.loads == 1


class HeldCache(TraceCache):
    """A cache whose entry writes wait for ``release`` (or fail with ``error``)."""

    def __init__(self, root, error=None):
        super().__init__(root)
        self.release, self.error = threading.Event(), error

    def _write(self, entry, bundle):
        assert self.release.wait(30)
        if self.error is not None:
            raise self.error
        super()._write(entry, bundle)


def test_the_cache_entry_is_written_after_get_returns(tmp_path):
    traces = served(tmp_path)
    cache = HeldCache(tmp_path / "c")
    store = TraceStore(trace_dirs=[traces], cache=cache)
    trace = store.get(store.ids()[0])  # returns while the entry's write still waits
    entry = cache.entries_dir / file_identity(traces / "t.sqlite")
    assert not (entry / "meta.json").exists()
    assert store.stats()["cache_writes_pending"] == 2  # the entry, and the zooms' preparation queued behind it
    cache.release.set()
    assert store.flush_cache_writes(timeout=60) is True
    assert store.stats()["cache_writes_pending"] == 0
    stored = TraceCache(tmp_path / "c").cached_bundle(traces / "t.sqlite")
    assert stored is not None and stored.kernels.equals(trace.bundle.kernels)
    assert sorted(p.name for p in cache.entries_dir.iterdir() if p.name.startswith(".tmp-")) == []
    # what every zoom of the timeline reads was computed then, ahead of the first zoom
    ta = analysis_of(trace)

    def kept(key):
        return ta.memo.get(key, lambda: pytest.fail(f"{key} was not computed ahead of the first zoom"))

    frames = {"kernels": ta.timed_kernels(), "api_calls": trace.bundle.api_calls, "memops": trace.bundle.memops}
    for frame, rows in {**frames, "nvtx_ranges": ta.drawn_ranges()}.items():
        index = kept(("window_index", frame))
        assert len(index.starts) == len(rows) > 0
    assert kept(("stream_sharing",)) is not None


def test_a_failing_cache_write_is_logged_and_the_trace_still_served(tmp_path, caplog):
    traces = served(tmp_path)
    cache = HeldCache(tmp_path / "c", error=RuntimeError("disk on fire"))
    cache.release.set()
    store = TraceStore(trace_dirs=[traces], cache=cache)
    tid = store.ids()[0]
    with caplog.at_level(logging.ERROR, logger="dashboard.app.store"):
        assert store.get(tid).summary.kernel_count == 4010
        assert store.flush_cache_writes(timeout=60) is True
    assert [r.getMessage() for r in caplog.records] == ["writing a cache entry failed"]
    assert "disk on fire" in caplog.records[0].exc_text
    assert not (cache.entries_dir / file_identity(traces / "t.sqlite")).exists()
    assert store.get(tid).summary.kernel_count == 4010 and store.load_status(tid).state == "loaded"


def test_two_writers_of_one_entry_leave_one_whole_entry(tmp_path):
    cache = TraceCache(tmp_path / "c")
    bundle = load_trace(NCCL).bundle
    entry = cache.entries_dir / file_identity(NCCL)
    start = threading.Barrier(2)

    def write():
        start.wait()
        cache._write(entry, bundle)

    threads = [threading.Thread(target=write) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stored = cache.cached_bundle(NCCL)
    assert stored is not None and stored.kernels.equals(bundle.kernels) and stored.meta == bundle.meta
    assert [p.name for p in cache.entries_dir.iterdir()] == [entry.name]  # no temporary folder left


def test_load_trace_without_a_writer_stores_the_entry_before_returning(tmp_path):
    cache = TraceCache(tmp_path / "c")
    load_trace(NCCL, cache=cache)  # the CLI's way: a command may exit right after
    assert (cache.entries_dir / file_identity(NCCL) / "meta.json").is_file()


def test_a_view_waits_without_holding_a_connection_and_shows_a_fresh_failure(tmp_path):
    from dashboard.app.components import alert
    from dashboard.app.views import BY_NAME
    from dashboard.app.views.base import waiting
    from dashboard.state import ViewState

    now, release, fail = [10.0], threading.Event(), [False]

    def loader(path, *, dispatch_prefix, cache, progress):
        assert release.wait(30)
        if fail[0]:
            raise TraceFormatError("t.sqlite: broken")
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[served(tmp_path)], loader=loader, clock=lambda: now[0])
    state = ViewState(trace=store.ids()[0])
    overview, alerts = BY_NAME["overview"], BY_NAME["alerts"]
    fail[0] = True
    assert waiting(overview, store, state) == {}  # returns at once; the load runs in the background
    assert store.load_status(state.trace).state == "loading"
    release.set()
    for _ in range(3000):  # the background load's end
        if store.load_status(state.trace).state == "failed":
            break
        time.sleep(0.01)
    now[0] = 10.0 + FRESH_S - 1
    assert str(waiting(alerts, store, state)) == str({"alerts": alert("t.sqlite: broken")})
    assert waiting(overview, store, state) == {"cards": [], "scope": ""}
    now[0] = 10.0 + FRESH_S  # an old failure: tried again, in the background
    fail[0] = False
    assert waiting(overview, store, state) == {}
    assert store.get(state.trace).summary.kernel_count == 4010
    assert waiting(overview, store, state) is None  # in memory: it renders
    assert waiting(overview, store, ViewState(trace="gone.sqlite@" + "0" * 32)) is None  # not served: says why


def test_the_cli_bar_knows_each_loads_stage_count_from_its_first_stage(tmp_path):
    """`summarize`'s progress bar (``cli.args._Progress``) sizes itself from a load's first stage: for every kind
    of input its total is the number of stages ``load_trace`` reports (it assumed six, the SQLite reader's)."""
    from dashboard.cli.args import _Progress

    cache = TraceCache(tmp_path / "c")
    loads = {
        "SQLite": lambda p: load_trace(NCCL, cache=cache, progress=p),
        "SQLite, cached": lambda p: load_trace(NCCL, cache=cache, progress=p),
        "PyTorch": lambda p: load_trace(SAMPLES / "h100_qwen1.5_0.5b_chat.json.gz", progress=p),
        "summary JSON": lambda p: load_trace(SAMPLES / "000_746bee52f7bbcc80_seed_summary.json", progress=p),
    }
    seen = {}
    for what, load in loads.items():
        stages = []
        load(stages.append)
        seen[what] = (stages[0], len(stages))
        assert _Progress.STAGES[stages[0]] == len(stages), (what, stages)
    assert seen == {
        "SQLite": ("names", 6),
        "SQLite, cached": ("cached frames", 2),
        "PyTorch": ("PyTorch trace", 2),
        "summary JSON": ("summary JSON", 1),
    }
    bar = _Progress("x")
    bar("an unknown first stage")
    assert bar.bar.total is None  # a count without a made-up fraction
    bar.close()


@pytest.mark.skipif(shutil.which("nsys") is None, reason="needs nsys on PATH (../shared/tools/install_nsys.sh)")
def test_the_cli_bar_knows_a_reports_stage_count(tmp_path):
    from dashboard.cli.args import _Progress
    from tests.paths import DATA

    stages = []
    load_trace(
        DATA / "nsys_rep" / "nsys2022.4_cpu_llm_sim_nvtx.nsys-rep", cache=TraceCache(tmp_path), progress=stages.append
    )
    assert (stages[0], len(stages)) == ("nsys export", 7) and _Progress.STAGES[stages[0]] == 7


def test_the_compare_line_names_each_run_still_loading():
    from dashboard.render.load_status import IDLE_POLLS, pair_status_line

    loading = LoadStatus("a.sqlite", "loading", "kernels and CUDA API calls", 4.25, 3.25, (("kernels", 4010),))
    loaded = LoadStatus("b.sqlite", "loaded", age_s=1.0)
    idle = LoadStatus("b.sqlite", "idle")
    assert pair_status_line([("A", loading), ("B", loaded)], 3) == (
        "A: Loading a.sqlite: reading kernels and CUDA API calls (4,010 kernels) · 4.2 s",
        True,
    )
    assert pair_status_line([("A", loading), ("B", idle)], 3) == (
        "A: Loading a.sqlite: reading kernels and CUDA API calls (4,010 kernels) · 4.2 s · B: Loading b.sqlite…",
        True,
    )
    assert pair_status_line([("A", loaded), ("B", idle)], IDLE_POLLS) == (None, False)  # no load started: given up
    assert pair_status_line([("A", loaded), ("B", LoadStatus("b.sqlite", "failed", error="bad"))], 0) == (None, False)


def _post(app, output_has: str, values: dict, trigger: str) -> dict:
    """POST one callback of ``app`` (the one whose outputs include ``output_has``) as the browser does: ``values``
    maps each input and state "id.property" to its value; returns the response's outputs by id."""
    key = next(k for k in app.callback_map if output_has in k)
    spec = app.callback_map[key]
    outputs = []
    for part in key.strip(".").split("..."):
        cid, prop = part.rsplit(".", 1)
        outputs.append({"id": cid, "property": prop})
    payload = {
        "output": key,
        "outputs": outputs,
        "inputs": [{**i, "value": values.get(f"{i['id']}.{i['property']}")} for i in spec["inputs"]],
        "state": [{**i, "value": values.get(f"{i['id']}.{i['property']}")} for i in spec["state"]],
        "changedPropIds": [trigger],
    }
    resp = app.server.test_client().post("/_dash-update-component", json=payload)
    assert resp.status_code in (200, 204), resp.get_data(as_text=True)[:500]
    return resp.get_json()["response"] if resp.status_code == 200 else {}


def test_the_compare_page_waits_for_a_run_without_holding_a_connection_and_shows_its_load(tmp_path):
    from dashboard.app import create_app
    from dashboard.app.compare_callbacks import cl, compare_layout

    d = served(tmp_path, "a.sqlite")
    shutil.copy(NCCL, d / "b.sqlite")
    at_kernels, release = threading.Event(), threading.Event()

    def loader(path, *, dispatch_prefix, cache, progress):
        if path.name == "a.sqlite":
            progress("kernels and CUDA API calls", rows=(("kernels", 4010),))
            at_kernels.set()
            assert release.wait(30)
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[d], loader=loader)
    app = create_app(store=store)
    a, b = sorted(store.ids())
    store.get(b)
    search = f"?a={a}&b={b}"
    page = compare_layout(store, search, "/")
    line = next(c for c in page.children if getattr(c, "id", None) == cl.LOAD_STATUS)
    assert (line.children, line.hidden) == ("A (baseline): Loading a.sqlite…", False)  # B is in memory already
    # the page's callback returns at once: A loads in the background, the content stays, the poll runs
    out = _post(app, "cmp-pending", {f"{cl.URL}.data": search}, f"{cl.URL}.data")
    assert out[cl.PENDING]["data"] == [a, b] and cl.CARDS not in out
    assert out[cl.CONTENT]["hidden"] is True  # no empty grid says "no dispatches in either run" meanwhile
    assert at_kernels.wait(30)
    polled = {f"{cl.LOAD_POLL}.n_intervals": 1, f"{cl.PENDING}.data": [a, b]}
    out = _post(app, "cmp-kick", polled, f"{cl.LOAD_POLL}.n_intervals")
    assert out[cl.LOAD_STATUS]["children"].startswith(
        "A (baseline): Loading a.sqlite: reading kernels and CUDA API calls (4,010 kernels) · "
    )
    assert (out[cl.LOAD_STATUS]["hidden"], out[cl.LOAD_POLL]["disabled"], cl.KICK in out) == (False, False, False)
    release.set()
    store.get(a)
    out = _post(app, "cmp-kick", {**polled, f"{cl.LOAD_POLL}.n_intervals": 2}, f"{cl.LOAD_POLL}.n_intervals")
    assert out[cl.LOAD_STATUS] == {"children": "", "hidden": True} and out[cl.LOAD_POLL]["disabled"] is True
    kick = out[cl.KICK]["data"]
    assert kick < 0  # the load is over: the page's callback shows the pair
    values = {f"{cl.URL}.data": search, f"{cl.PICK_A}.value": a, f"{cl.PICK_B}.value": b, f"{cl.KICK}.data": kick}
    out = _post(app, "cmp-pending", values, f"{cl.KICK}.data")
    assert out[cl.PENDING]["data"] is None and len(out[cl.CARDS]["children"]) > 0
    assert out[cl.CONTENT]["hidden"] is False and out[cl.LOAD_POLL]["disabled"] is True
    page = compare_layout(store, search, "/")
    line = next(c for c in page.children if getattr(c, "id", None) == cl.LOAD_STATUS)
    assert line.hidden is True  # both in memory: a page opened now has no line


def test_a_run_that_failed_to_load_is_shown_as_failed_on_the_compare_page_and_not_loaded_again(tmp_path):
    from dashboard.app import create_app
    from dashboard.app.compare_callbacks import cl

    d = served(tmp_path, "a.sqlite")
    shutil.copy(NCCL, d / "b.sqlite")
    calls = []

    def loader(path, *, dispatch_prefix, cache, progress):
        calls.append(path.name)
        if path.name == "a.sqlite":
            raise TraceFormatError("a.sqlite: the SQLite file is damaged")
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    store = TraceStore(trace_dirs=[d], loader=loader)
    app = create_app(store=store)
    a, b = sorted(store.ids())
    search = f"?a={a}&b={b}"
    assert _post(app, "cmp-pending", {f"{cl.URL}.data": search}, f"{cl.URL}.data")[cl.PENDING]["data"] == [a, b]
    for _ in range(300):
        if store.load_status(a).state == "failed" and store.is_loaded(b):
            break
        time.sleep(0.05)
    out = _post(app, "cmp-kick", {f"{cl.LOAD_POLL}.n_intervals": 1, f"{cl.PENDING}.data": [a, b]}, "x")
    assert out[cl.LOAD_POLL]["disabled"] is True and out[cl.KICK]["data"] < 0
    values = {f"{cl.URL}.data": search, f"{cl.PICK_A}.value": a, f"{cl.PICK_B}.value": b, f"{cl.KICK}.data": -1}
    out = _post(app, "cmp-pending", values, f"{cl.KICK}.data")
    assert "a.sqlite: the SQLite file is damaged" in json.dumps(out[cl.ALERTS]["children"])
    assert sorted(calls) == ["a.sqlite", "b.sqlite"]  # the failed run was not read a second time
