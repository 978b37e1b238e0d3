"""The server gives freed frames' memory back to the system (dashboard.data.memory.tune_malloc)."""

import os
import subprocess
import sys

import pytest

from paths import nsys_trace

# Frees every other one of 20 8-MiB arrays after a 16-MiB one was freed (which, by default, raises
# glibc's mmap threshold to 16 MiB, so the 8-MiB arrays come from the heap, whose holes are kept).
# Prints the MiB kept free inside the heap and the MiB in mapped blocks (unmapped when freed), from
# glibc's own counters (mallinfo2), so the figures do not depend on what else the machine is doing.
PROBE = """
import ctypes, sys
import numpy as np
from dashboard.data.memory import tune_malloc

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "tuned":
    assert tune_malloc()
a = np.ones(2 * 1024**2); del a
m0 = libc.mallinfo2()
blocks = [np.ones(1024**2) for _ in range(20)]
del blocks[::2]
m1 = libc.mallinfo2()
print((m1.fordblks - m0.fordblks) / 2**20, (m1.hblkhd - m0.hblkhd) / 2**20)
"""


def _has_mallinfo2() -> bool:
    import ctypes

    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _has_mallinfo2(), reason="glibc >= 2.33 malloc")
def test_tuned_malloc_returns_freed_frames_to_the_system():
    def kept_and_mapped_mib(mode: str) -> tuple[float, float]:
        # glibc's defaults, whatever this process was given (importing dask's distributed sets MALLOC_TRIM_THRESHOLD_)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True, env=env)
        kept, mapped = map(float, out.stdout.split())
        return kept, mapped

    kept, mapped = kept_and_mapped_mib("default")
    assert kept > 79 and mapped < 1, (kept, mapped)  # the 10 freed arrays: 80 MiB of holes kept in the heap
    kept, mapped = kept_and_mapped_mib("tuned")
    assert kept < 1 and 79 < mapped < 81, (kept, mapped)  # each array mapped on its own: freed ones unmapped


ONE_SHOT = """
import contextlib, io, os, sys
from dashboard.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main([sys.argv[2], sys.argv[1], "--no-cache", *(["-o", os.devnull] if sys.argv[2] == "summarize" else [])])
import numpy as np, pyarrow as pa
print(code, pa.default_memory_pool().backend_name, np._core.multiarray._get_madvise_hugepage(),
      os.environ.get("ARROW_DEFAULT_MEMORY_POOL", "-"), os.environ.get("NUMPY_MADVISE_HUGEPAGE", "-"))
"""


@pytest.mark.parametrize("command, chosen", [("summarize", False), ("findings", False), ("summarize", True)])
def test_a_one_shot_command_reads_with_its_own_allocator_settings_unless_the_user_chose_them(command, chosen):
    """`summarize` and `findings` (any command but `serve`) get Arrow's buffers from glibc, not mimalloc, and numpy
    gives no huge-page advice (both cost system time: docs/benchmarks.md); `findings`' parser imports pyarrow and
    numpy, so they are set before it; the variables are gone after the command, and what the user set stays."""
    env = {k: v for k, v in os.environ.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", "NUMPY_MADVISE_HUGEPAGE")}
    if chosen:
        env.update(ARROW_DEFAULT_MEMORY_POOL="mimalloc", NUMPY_MADVISE_HUGEPAGE="1")
    out = subprocess.run(
        [sys.executable, "-c", ONE_SHOT, str(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")), command],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    want = ["0", "mimalloc", "True", "mimalloc", "1"] if chosen else ["0", "system", "False", "-", "-"]
    assert out.stdout.split() == want


def test_the_one_shot_settings_leave_a_process_whose_allocators_are_in_use_alone(monkeypatch):
    from dashboard.data.memory import ONE_SHOT_SETTINGS, one_shot_allocators

    for name, _, module in ONE_SHOT_SETTINGS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.setitem(sys.modules, module, sys.modules.get(module) or object())
    with one_shot_allocators():  # read once by modules already imported: nothing to say
        assert not {name for name, _, _ in ONE_SHOT_SETTINGS} & set(os.environ)
    monkeypatch.delitem(sys.modules, "pyarrow")
    with one_shot_allocators():  # only the module not yet imported
        assert os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system" and "NUMPY_MADVISE_HUGEPAGE" not in os.environ
    assert "ARROW_DEFAULT_MEMORY_POOL" not in os.environ


def test_a_traces_page_views_render_one_at_a_time_and_zooms_do_not_wait():
    """render_view: the page views of one trace render one at a time (their working memory would add
    up when a large trace's page asks for each view at once); a zoomed view and another trace's views
    do not wait for them; memo still computes a key once for threads asking at the same time."""
    import threading
    import time

    from dashboard.app.views.base import WINDOW, View, render_view
    from dashboard.data import analysis
    from dashboard.state import ViewState

    class Trace:  # the memo and trace_gate key by object identity
        pass

    traces = {"a@" + "0" * 32: Trace(), "b@" + "1" * 32: Trace()}

    class Store:
        def get(self, trace_id):
            return traces[trace_id]

    running, peak, lock = [0], [0], threading.Lock()

    def counted(trace, state):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return {"out": 1}

    views = [View(name=f"v{n}", fields=(), outputs={"out": ("x", "children")}, render=counted) for n in range(4)]
    a = ViewState(trace="a@" + "0" * 32)
    threads = [threading.Thread(target=render_view, args=(v, Store(), a)) for v in views]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 1  # four page views of one trace: one at a time

    started, other_done, seen = threading.Event(), threading.Event(), []

    def slow(trace, state):  # holds a's gate until the zoom and b's page view have rendered
        started.set()
        seen.append(other_done.wait(10))
        return {"out": 0}

    page = threading.Thread(
        target=render_view,
        args=(View(name="slow", fields=(), outputs={"out": ("x", "children")}, render=slow), Store(), a),
    )
    page.start()
    started.wait(10)
    zoom = View(name="zoom", fields=(WINDOW,), outputs={"out": ("x", "children")}, render=lambda t, s: {"out": 2})
    assert render_view(zoom, Store(), ViewState(trace=a.trace, t0_ns=0, t1_ns=10)) == {"out": 2}
    b_view = View(name="b", fields=(), outputs={"out": ("x", "children")}, render=lambda t, s: {"out": 3})
    assert render_view(b_view, Store(), ViewState(trace="b@" + "1" * 32)) == {"out": 3}
    other_done.set()
    page.join()
    assert seen == [True]

    calls = []
    key_threads = [
        threading.Thread(
            target=analysis.memo, args=(traces[a.trace], ("k",), lambda: calls.append(1) or time.sleep(0.02))
        )
        for _ in range(4)
    ]
    for t in key_threads:
        t.start()
    for t in key_threads:
        t.join()
    assert calls == [1]  # one computation for four threads asking at once
    assert (
        analysis.memo(traces[a.trace], ("outer",), lambda: analysis.memo(traces[a.trace], ("inner",), lambda: 1) + 1)
        == 2
    )


def test_at_most_render_slots_views_render_at_once_and_cached_ones_never_wait():
    """Rendering is CPU-bound under the GIL: RENDER_SLOTS views of a process render at once (eight zooms
    at once each took eight zooms' time); a view already in the response cache is answered while every
    slot is busy."""
    import threading
    import time

    from dashboard.app.views.base import RENDER_SLOTS, WINDOW, ResponseCache, View, render_view
    from dashboard.state import ViewState

    class Trace:
        pass

    class Store:  # a trace of its own per render: one trace's zooms render in turn (the zoom gate, tested below)
        def get(self, trace_id):
            return Trace()

    running, peak, lock, release = [0], [0], threading.Lock(), threading.Event()

    def counted(trace, state):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        release.wait(10)
        with lock:
            running[0] -= 1
        return {"out": state.t0_ns}

    cache = ResponseCache()
    zoom = View(name="zoom", fields=(WINDOW,), outputs={"out": ("x", "children")}, render=counted)
    tid = "a@" + "0" * 32
    release.set()
    assert render_view(zoom, Store(), ViewState(trace=tid, t0_ns=1, t1_ns=2), cache) == {"out": 1}  # now cached
    release.clear()
    threads = [
        threading.Thread(
            target=render_view, args=(zoom, Store(), ViewState(trace=tid, t0_ns=10 * n, t1_ns=10 * n + 5), cache)
        )
        for n in range(1, 7)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while running[0] < RENDER_SLOTS and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # the other four would have started by now if they could
    assert running[0] == RENDER_SLOTS == 2
    assert render_view(zoom, Store(), ViewState(trace=tid, t0_ns=1, t1_ns=2), cache) == {"out": 1}  # no slot needed
    release.set()
    for t in threads:
        t.join()
    assert peak[0] == RENDER_SLOTS


def test_a_pages_waiting_views_render_by_priority_the_overview_and_timeline_first():
    """A big trace's first page asks for every view at once and they render in turn under the trace's gate:
    the waiting ones get in by ``View.priority`` (overview and alerts, then the timeline, the rest as they
    came, the findings last), whatever order their requests arrived in."""
    import threading
    import time

    from dashboard.app.views import BY_NAME
    from dashboard.app.views.base import View, render_view
    from dashboard.data.analysis import trace_gate
    from dashboard.state import ViewState

    class Trace:
        pass

    trace, state = Trace(), ViewState(trace="a@" + "0" * 32)

    class Store:
        def get(self, trace_id):
            return trace

    gate, order, holding, release = trace_gate(trace), [], threading.Event(), threading.Event()

    def hold(t, s):  # holds the gate while the others queue
        holding.set()
        release.wait(10)
        return {"out": 0}

    def view(name, render):
        priority = BY_NAME[name].priority if name in BY_NAME else 0
        return View(name=name, fields=(), outputs={"out": ("x", "children")}, render=render, priority=priority)

    threads = [threading.Thread(target=render_view, args=(view("holder", hold), Store(), state))]
    threads[0].start()
    assert holding.wait(10)
    for name in ["findings", "kernels", "gantt", "timeline", "api", "overview", "alerts"]:
        t = threading.Thread(
            target=render_view, args=(view(name, lambda t, s, n=name: order.append(n) or {"out": 1}), Store(), state)
        )
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 10
        while gate.waiting < len(threads) - 1:  # queued in this order
            assert time.monotonic() < deadline, "a view never queued"
            time.sleep(0.001)
    release.set()
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    assert order == ["overview", "alerts", "timeline", "kernels", "gantt", "api", "findings"]

    def nested():  # re-entrant for its holder, whatever the inner priority
        with gate.hold(5), gate.hold(0):
            order.append("nested")

    t = threading.Thread(target=nested)
    t.start()
    t.join(10)
    assert not t.is_alive() and order[-1] == "nested"

    # a waiter whose wait is interrupted leaves the queue: later waiters still get in
    holding.clear()
    release.clear()
    holder = threading.Thread(target=render_view, args=(view("holder", hold), Store(), state))
    holder.start()
    assert holding.wait(10)

    def interrupted(timeout=None):
        raise KeyboardInterrupt

    gate._cond.wait = interrupted  # noqa: SLF001 - as an interrupt in the waiting thread would
    with pytest.raises(KeyboardInterrupt), gate.hold(1):
        pass
    del gate._cond.wait  # noqa: SLF001
    assert gate.waiting == 0
    release.set()
    holder.join(10)

    def later():
        with gate.hold(5):
            order.append("later")

    t = threading.Thread(target=later, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive() and order[-1] == "later"


def test_a_zooms_views_render_in_turn_the_timeline_first_and_never_wait_for_the_page():
    """A zoom re-renders the timeline and the Gantt at once: they render one at a time under the trace's zoom
    gate, the timeline first whatever order their requests arrived in (the one core they share under the GIL
    would otherwise hold the timeline's answer until the Gantt's was done too), and neither waits for a page
    view holding the trace's page gate."""
    import threading
    import time

    from dashboard.app.views import BY_NAME
    from dashboard.app.views.base import WINDOW, View, render_view
    from dashboard.data.analysis import trace_gate, zoom_gate
    from dashboard.state import ViewState

    class Trace:
        pass

    trace = Trace()
    page, zoomed = ViewState(trace="a@" + "0" * 32), ViewState(trace="a@" + "0" * 32, t0_ns=1_000, t1_ns=2_000)

    class Store:
        def get(self, trace_id):
            return trace

    gate, order, holding, release = zoom_gate(trace), [], threading.Event(), threading.Event()
    assert gate is zoom_gate(trace) and gate is not trace_gate(trace)

    def view(name, render):
        return View(
            name=name,
            fields=(WINDOW,),
            outputs={"out": ("x", "children")},
            render=render,
            priority=BY_NAME[name].priority if name in BY_NAME else 0,
        )

    def hold(t, s):
        holding.set()
        release.wait(10)
        return {"out": 0}

    with trace_gate(trace).hold(0):  # a page view rendering: the zoom's views do not wait for it
        threads = [threading.Thread(target=render_view, args=(view("holder", hold), Store(), zoomed))]
        threads[0].start()
        assert holding.wait(10)
        for name in ["gantt", "timeline"]:
            t = threading.Thread(
                target=render_view,
                args=(view(name, lambda t, s, n=name: order.append(n) or {"out": 1}), Store(), zoomed),
            )
            t.start()
            threads.append(t)
            deadline = time.monotonic() + 10
            while gate.waiting < len(threads) - 1:  # queued in this order: the Gantt's request came first
                assert time.monotonic() < deadline, "a view never queued"
                time.sleep(0.001)
        release.set()
        for t in threads:
            t.join(10)
            assert not t.is_alive()
    assert order == ["timeline", "gantt"]
    # the page's own views still take the page gate
    render_view(view("overview", lambda t, s: order.append("page") or {"out": 1}), Store(), page)
    assert order[-1] == "page" and trace_gate(trace).waiting == 0 and gate.waiting == 0
