"""The status line a page shows while its trace loads: "Loading big.sqlite: reading kernels … · 4.2 s"."""

from __future__ import annotations

from dashboard.data.trace import LoadStatus

# What each stage of ``load_trace`` (its ``progress`` names, and the store's "waiting") is doing, in words.
STAGE_WORDS = {
    "": "starting",
    "waiting": "waiting for another upload to finish loading",
    "nsys export": "exporting the report with nsys",
    "cached frames": "reading the Parquet cache",
    "names": "reading names",
    "kernels and CUDA API calls": "reading kernels and CUDA API calls",
    "NVTX": "reading NVTX ranges and marks",
    "memcpy/memset": "reading memcpy/memset",
    "graphs": "reading CUDA graph launches",
    "PyTorch trace": "reading the PyTorch trace",
    "summary JSON": "reading the summary JSON",
    "summary": "computing the summary",
}
# Polls of a trace that is neither in memory nor loading before the page stops asking: its views start the
# load as they ask for it, so an idle trace past this is one another worker process loads (or none does).
IDLE_POLLS = 20


def load_status_line(status: LoadStatus) -> str | None:
    """The page's status line for ``status``: ``Loading NAME: STAGE (ROWS) · SECONDS s`` while it loads,
    ``Loading NAME…`` while no load has started yet (idle), None once it is in memory or its load failed
    (the views show the error)."""
    if status.state == "idle":
        return f"Loading {status.name}…"
    if status.state != "loading":
        return None
    words = STAGE_WORDS.get(status.stage, status.stage)
    rows = ", ".join(f"{n:,} {kind}" for kind, n in status.rows)
    return f"Loading {status.name}: {words}{f' ({rows})' if rows else ''} · {status.elapsed_s:.1f} s"


def keep_polling(status: LoadStatus, polls: int) -> bool:
    """Whether the page asks again: while the load runs, and for ``IDLE_POLLS`` polls of an idle trace."""
    return status.state == "loading" or (status.state == "idle" and polls < IDLE_POLLS)


def pair_status_line(statuses: list[tuple[str, LoadStatus]], polls: int) -> tuple[str | None, bool]:
    """The compare page's status line while either run loads: ``(line, keep_polling)``. ``statuses``:
    ``(label, status)`` of each run (a run picked twice once); the line names each run still loading,
    ``"A (baseline): Loading a.sqlite: reading kernels … · 4.2 s"``, runs apart by ``" · "``; None when none is."""
    lines = [(label, load_status_line(status)) for label, status in statuses if keep_polling(status, polls)]
    parts = [f"{label}: {line}" for label, line in lines if line]
    return (" · ".join(parts) or None), bool(parts)


# A load that ended this recently is the one a waiting page asked for: its views render now, and a failure is
# shown as it is rather than tried again (a later page tries again).
FRESH_S = 10.0


def poll_step(status: LoadStatus, polls: int, picked: bool) -> tuple[str | None, bool, bool]:
    """One poll of a waiting page: ``(line, keep_polling, kick)``. ``line`` is the status line to show (None:
    hide it); ``kick``: every view renders now (its trace's load ended: loaded, or failed with its error; or
    the page stops waiting on an idle trace, and the views wait for the load themselves). A
    failure older than ``FRESH_S`` reads as idle (the views load again when they ask). ``picked``: the poll
    ran because a trace was just picked (its views may have asked before or after its load ended), else
    because the page was waiting on it."""
    if status.state == "failed" and status.age_s >= FRESH_S:
        status = LoadStatus(status.name, "idle")
    more = keep_polling(status, polls)
    ended = status.state in ("loaded", "failed") and (not picked or status.age_s < FRESH_S)
    kick = ended or (status.state == "idle" and not more)  # given up waiting: the views wait for the load instead
    return (load_status_line(status) if more else None), more, kick


def after_load_kick(now_ms: int) -> int:
    """The value the poll kicks the views with when a load ended: minus the server's time in ms (the page's
    own first kick is the browser's time, positive; a page starts at 0)."""
    return -int(now_ms)


def kicked_after_load(kick, now_ms: int) -> bool:
    """Whether a view's kick is the poll's after a load ended, in the last ``FRESH_S``: the view then waits
    for the load in its own worker process (another may have loaded it first) instead of returning at once."""
    return isinstance(kick, (int, float)) and not isinstance(kick, bool) and kick < 0 and now_ms + kick < FRESH_S * 1000


def next_poll_limit(n_intervals) -> int:
    """The poll's ``max_intervals`` once its answer to tick ``n_intervals`` is on the page: one tick more.

    Dash drops the answer of a callback still running when the same callback is asked again, so a poll that
    ticked on a fixed period while the server took longer than the period to answer (a load busying both
    cores) never had an answer shown, and one tick landing between a load's end and the poll's switch-off
    asked the views twice. Gated this way one poll is in flight at a time: the next tick waits for the answer."""
    ticks = n_intervals if isinstance(n_intervals, int) and not isinstance(n_intervals, bool) else 0
    return max(ticks, 0) + 1
