"""The overview cards and the Per GPU table."""

from __future__ import annotations

import pandas as pd

from dashboard import units
from dashboard.analysis.gpu_time import (
    ALL_GPUS,
    BUSY_KERNEL_ROWS,
    busy_parts,
    busy_source_label,
    cuda_traced,
    has_gpu_work,
)
from dashboard.analysis.kernel_times import (
    MAX_KERNEL_DURATION_NS,
    invalid_kernel_count,
    overlong_kernel_count,
    overrun_kernel_count,
)
from dashboard.analysis.ranks import RANKS_FORMAT, gpu_time_per_rank, per_rank_gpu_time
from dashboard.analysis.tables import (
    clean_api_name,
)
from dashboard.analysis.timeline import (
    BUSY_ALL,
    BUSY_KERNELS,
)
from dashboard.data.analysis import analysis_of
from dashboard.data.trace import LoadedTrace
from dashboard.loaders.nsys_traits import predates_supported, predates_text
from dashboard.model import account_brief, device_label
from dashboard.render.base import Card, not_traced, work_for
from dashboard.state import ViewState

# Share of the mark budget per layer of the timeline.
GPU_METRICS = (
    ("Kernels", lambda r: f"{r.kernels:,}"),
    ("Kernel time (sum)", lambda r: units.duration(r.kernel_sum_ns)),
    ("Busy (union)", lambda r: units.duration(r.busy_ns)),
    ("Window", lambda r: units.duration(r.window_ns)),
    ("Idle in window", lambda r: units.duration(r.idle_ns)),
    ("Utilisation", lambda r: units.pct(r.utilisation_pct, 2)),
    ("Streams", lambda r: f"{r.streams:,}"),
)


def gpu_columns_key(device_id: int) -> str:
    """Column key of a device in the per-GPU table ("all" for the all-GPU union)."""
    return "all" if device_id == ALL_GPUS else f"gpu{device_id}"


def gpu_rows(trace: LoadedTrace, state: ViewState) -> tuple[list[dict], list[tuple[str, str]]]:
    """Per-GPU busy/idle table, transposed: one row per metric, one column per device + all GPUs.

    Returns:
        ``(rows, columns)``: rows like ``{"metric": "Busy (union)", "gpu0": "1.2 s", "all": ...}``
        and ``[(key, header), ...]`` in display order. Both empty without event data.
    """
    b = trace.bundle
    if b is None:
        return [], []
    if b.meta.format == RANKS_FORMAT:  # each device within its own rank's window; no union across clocks
        t = gpu_time_per_rank(b, work_for(trace, state.busy))
    else:
        t = analysis_of(trace).gpu_time(state.busy)
    records = list(t.itertuples(index=False))
    if not records:  # no kernel or memory operation (an NVTX-only trace, a window without GPU work)
        return [], []
    columns = [
        (
            gpu_columns_key(r.device_id),
            "any GPU" if r.device_id == ALL_GPUS else device_label(r.device_id, b.meta.gpus, b.meta.rank_devices),
        )
        for r in records
    ]
    rows = [{"metric": label, **{gpu_columns_key(r.device_id): fmt(r) for r in records}} for label, fmt in GPU_METRICS]
    return rows, columns


def rank_cards(per_rank: pd.DataFrame) -> list[Card]:
    """The ranks view's first cards: span, busy and utilisation per rank (``per_rank_gpu_time``),
    since one span across ranks would mix clocks; the slowest rank (longest span) leads."""
    if per_rank.empty:
        return [Card("GPU activity span", "no kernels", "no rank has kernels")]
    slow = per_rank.sort_values(["span_ns", "rank"], ascending=[False, True], kind="stable").iloc[0]

    def each(fmt) -> str:
        return " · ".join(f"r{int(r.rank)} {fmt(r)}" for r in per_rank.itertuples(index=False))

    return [
        Card(
            "GPU activity span (slowest rank)",
            units.duration(int(slow["span_ns"])),
            f"rank {int(slow['rank'])}; per rank, each on its own clock: " + each(lambda r: units.duration(r.span_ns)),
        ),
        Card(
            "GPU busy (union, per rank)",
            units.duration(int(per_rank["busy_ns"].max())),
            "busiest rank shown; " + each(lambda r: units.duration(r.busy_ns)),
        ),
        Card(
            "Utilisation (lowest rank)",
            units.pct(per_rank["utilisation_pct"].min(), 2),
            "busy / span of each rank: " + each(lambda r: units.pct(r.utilisation_pct, 2)),
        ),
    ]


def _no_gpu_cards(why: str) -> list[Card]:
    return [
        Card("GPU activity span", units.NA, why),
        Card("GPU busy (union)", units.NA, why),
        Card("GPU idle in span", units.NA, why),
        Card("Utilisation", units.NA, why),
    ]


def gpu_cards(trace: LoadedTrace, busy_source: str = BUSY_KERNELS, windowed: bool = False) -> list[Card]:
    """The overview's GPU time cards for one busy source (``gpu_time.trace_gpu_overview``, the same
    numbers as the Per GPU table and the compare page): span, busy, idle, utilisation; with several
    GPUs the utilisation is the mean per GPU with the lowest GPU named, and the all-GPU union is
    "any GPU busy". Without event data, the summary's (kernel rows only) figures.

    When nothing the busy source counts was recorded (a CPU-only trace; ``windowed``: nothing in the
    window), every card reads n/a with the reason: an unmeasured GPU is not a GPU busy for 0 ns."""
    s = trace.summary
    b = trace.bundle
    if trace.meta.gpu_activity_missing:  # e.g. CUPTI range-profiler mode: GPU time unknown, never 0
        return _no_gpu_cards(trace.meta.gpu_activity_missing)
    if b is None and s.kernel_count == 0:
        return _no_gpu_cards("no kernels in this summary")
    if b is None:
        return [
            Card(
                "GPU activity span",
                units.duration(s.gpu_activity_span_ns),
                "first kernel start to last kernel end, all GPUs",
            ),
            Card(
                "GPU busy (union)",
                units.duration(s.gpu_busy_union_ns),
                "union of kernel intervals, all devices and streams",
            ),
            Card("GPU idle in span", units.duration(s.gpu_idle_within_span_ns), "span minus busy union"),
            Card("Utilisation", units.pct(s.utilisation_pct, 2), "busy union / span (never a sum of kernel times)"),
        ]
    ov = analysis_of(trace).gpu_overview(busy_source)
    what = busy_source_label(busy_source, not b.graph_launches.empty)
    if ov.span_ns == 0 and ov.any_busy_ns == 0:
        where = "the visible window" if windowed else "this trace"
        if not windowed and s.gpu_activity_missing:  # kernel rows without usable timestamps: unknown, not "none"
            return _no_gpu_cards(s.gpu_activity_missing)
        if not windowed and not cuda_traced(trace):
            return _no_gpu_cards(not_traced(trace))
        if not has_gpu_work(b):
            return _no_gpu_cards(f"no GPU work in {where}: no kernel, CUDA-graph or memcpy/memset rows")
        return _no_gpu_cards(f"no GPU work in {where} for the busy source ({what})")
    if ov.gpus <= 1:
        cards = [
            Card("GPU activity span", units.duration(ov.span_ns), f"first start to last end of GPU work ({what})"),
            Card(
                "GPU busy (union)", units.duration(ov.any_busy_ns), f"union of GPU work intervals ({what}), all streams"
            ),
            Card("GPU idle in span", units.duration(ov.any_idle_ns), "span minus busy union"),
            Card(
                "Utilisation", units.pct(ov.any_utilisation_pct, 2), "busy union / span (never a sum of kernel times)"
            ),
        ]
    else:
        per = ov.per_gpu[ov.per_gpu["device_id"] != ALL_GPUS]
        each = " · ".join(
            f"{device_label(int(r.device_id), b.meta.gpus, b.meta.rank_devices)} {units.pct(r.utilisation_pct, 2)}"
            for r in per.itertuples(index=False)
        )
        low = "n/a" if ov.lowest_device is None else device_label(ov.lowest_device, b.meta.gpus, b.meta.rank_devices)
        cards = [
            Card(
                "GPU activity span",
                units.duration(ov.span_ns),
                f"first start to last end of GPU work ({what}), any GPU",
            ),
            Card("Any GPU busy", units.duration(ov.any_busy_ns), f"union of GPU work ({what}) over all {ov.gpus} GPUs"),
            Card(
                "All GPUs idle in span", units.duration(ov.any_idle_ns), f"span minus any-GPU busy: no GPU ran {what}"
            ),
            Card(
                "Utilisation (mean per GPU)",
                units.pct(ov.mean_utilisation_pct, 2),
                f"each GPU's busy union over its own window, averaged: {each}; any GPU busy / span: "
                f"{units.pct(ov.any_utilisation_pct, 2)}",
            ),
            Card("Lowest GPU utilisation", units.pct(ov.lowest_utilisation_pct, 2), low),
        ]
    if busy_source != BUSY_KERNEL_ROWS and ov.any_busy_ns != s.gpu_busy_union_ns:
        cards.append(
            Card(
                "GPU busy, kernel rows only",
                units.duration(s.gpu_busy_union_ns),
                "the summary contract's gpu_busy_union_s (what `summarize` writes): kernel rows only, "
                "all GPUs; no graph-level CUDA graphs or memcpy/memset",
            )
        )
    return cards


def _kernels_left_out(trace: LoadedTrace) -> str:
    """ "; N more read but not loaded (see Input rows)" when the loader left kernel rows out, else ""."""
    n = sum(a.read - a.loaded for a in trace.meta.accounts if a.kind == "kernels")
    return f"; {n:,} more read but not loaded (see Input rows)" if n else ""


def overview_cards(trace: LoadedTrace, state: ViewState | None = None) -> list[Card]:
    """Headline numbers: span, busy union, idle, utilisation (for ``state.busy``), counts,
    top API, metadata, and every kind of input row not used as recorded."""
    state = state or ViewState()
    s = trace.summary
    cards = gpu_cards(trace, state.busy, windowed=state.stats_window() is not None) + [
        Card(
            "Kernels",
            f"{s.kernel_count:,}",
            (
                "kernel rows in the trace"
                if state.stats_window() is None or trace.bundle is None
                else "kernel rows overlapping the visible window (clipped at its edges)"
            )
            + _kernels_left_out(trace),
        ),
        Card("CUDA-graph kernels", f"{s.graph_node_kernel_count:,}", "kernels with a graphNodeId"),
    ]
    if trace.meta.format == RANKS_FORMAT and trace.bundle is not None:
        cards = rank_cards(per_rank_gpu_time(trace.bundle, work_for(trace, state.busy))) + cards[-2:]
    elif trace.meta.gpu_activity_missing:  # kernels launched, none recorded (range-profiler mode): unknown, not 0
        cards[:-2] = [Card(c.label, "n/a", trace.meta.gpu_activity_missing) for c in cards[:-2]]
    traced = state.stats_window() is not None or cuda_traced(trace)  # a window's trace holds only the window
    if not traced:  # no kernel count was taken: unknown, not 0
        cards[-2:] = [Card(c.label, units.NA, not_traced(trace)) for c in cards[-2:]]
    b = trace.bundle
    if b is not None and not b.graph_launches.empty:
        counted = busy_parts(state.busy)[1]
        cards.append(
            Card(
                "CUDA graph launches",
                f"{len(b.graph_launches):,}",
                ("counted as opaque GPU work" if counted else "not counted as busy (kernel rows only)")
                + "; graph-level trace: kernels inside graphs are not itemised; re-profile with "
                "--cuda-graph-trace=node for per-kernel detail",
            )
        )
    if b is not None and not b.memops.empty and not busy_parts(state.busy)[0]:
        if trace.meta.format == RANKS_FORMAT:  # per rank: a union across clocks means nothing
            per_rank = per_rank_gpu_time(b, work_for(trace, BUSY_ALL))
            cards.append(
                Card(
                    "Busy incl. memcpy/memset (per rank)",
                    units.duration(int(per_rank["busy_ns"].max())),
                    "busiest rank shown; "
                    + " · ".join(
                        f"r{int(r.rank)} {units.duration(r.busy_ns)}" for r in per_rank.itertuples(index=False)
                    ),
                )
            )
        else:
            ov = analysis_of(trace).gpu_overview(BUSY_ALL)
            cards.append(
                Card(
                    "Busy incl. memcpy/memset",
                    units.duration(ov.any_busy_ns),
                    f"{units.count(len(b.memops), 'memory operation')} (any GPU), over their own span of "
                    f"{units.duration(ov.span_ns)} from the first kernel or copy to the last; choose that busy "
                    "source to use it in every panel",
                )
            )
    if not s.api.empty:
        top = s.api.iloc[0]
        cards.append(
            Card(
                "Top CUDA API call",
                clean_api_name(str(top["name"])),
                f"{units.duration(top['total_ns'])} in {units.count(int(top['count']), 'call')} (summed across "
                "threads)",
            )
        )
    meta = trace.meta
    if meta.format in ("nsys-sqlite", RANKS_FORMAT):
        old = not meta.nsys_version and meta.format != RANKS_FORMAT and predates_supported(meta.tables)
        cards.append(
            Card(
                "nsys export",
                meta.nsys_version or "unknown version",
                f"schema {meta.schema_version}" if meta.schema_version else predates_text() if old else "",
            )
        )
        devices = sorted(set(b.kernels["device_id"].unique().tolist())) if b is not None else []
        if not devices:
            gpu_text = "no kernels"
        elif any(d in meta.gpus for d in devices):
            gpu_text = ", ".join(f"{d}: {meta.gpus.get(d, 'name not recorded')}" for d in devices)
        else:
            gpu_text = "device ids " + ", ".join(map(str, devices)) + " (GPU names not recorded in this export)"
        cards.append(
            Card("GPUs with kernels", str(len(devices)), gpu_text)
            if traced
            else Card("GPUs with kernels", units.NA, not_traced(trace))
        )
    elif meta.format == "kineto-json":
        devices = sorted(set(b.kernels["device_id"].unique().tolist())) if b is not None else []
        cards.append(
            Card(
                "Input",
                "PyTorch profiler (Kineto)",
                "GPUs with kernels: "
                + (", ".join(f"{d}: {meta.gpus.get(d) or 'name not recorded'}" for d in devices) or "none")
                + "; user_annotation ranges shown as NVTX, gpu_user_annotation and cuda_sync not shown",
            )
        )
    else:
        cards.append(Card("Input", "summary JSON", "per-range totals only: no intervals"))
    if meta.warnings:
        cards.append(Card("Input warnings", f"{len(meta.warnings):,}", "; ".join(meta.warnings)))
    if b is not None and (clipped := overrun_kernel_count(b.kernels)):
        cards.append(
            Card(
                "Kernels clipped (same-stream overrun)",
                f"{clipped:,}",
                "ran past the end of a later kernel on the same stream (a timestamp artifact): "
                "clipped to the next kernel's start for busy, span and durations",
            )
        )
    if meta.accounts:
        per_pid = meta.launches_by_pid
        launches = (
            (
                "; launch calls / GPU executions per process: "
                + ", ".join(f"pid {p} {n:,}/{e:,}" for p, n, e in per_pid[:8])
                + (", ..." if len(per_pid) > 8 else "")
            )
            if per_pid
            else ""
        )
        cards.append(
            Card(
                "Input rows",
                f"{sum(a.read for a in meta.accounts):,}",
                "read per kind: " + account_brief(meta.accounts) + launches,
            )
        )
    if b is not None and (bad := invalid_kernel_count(b.kernels)):
        long_ = overlong_kernel_count(b.kernels)
        why = "end < start, missing (NULL) or impossible timestamps"
        if long_:
            why += f"; {long_:,} longer than {MAX_KERNEL_DURATION_NS // 3_600_000_000_000} h"
        cards.append(
            Card("Invalid kernel rows", f"{bad:,}", why + ": left out of span, busy, kernel times and the time axis")
        )
    if b is not None and (
        long_nvtx := int((b.nvtx_ranges["end_ns"] - b.nvtx_ranges["start_ns"] > MAX_KERNEL_DURATION_NS).sum())
    ):
        cards.append(
            Card(
                "NVTX ranges over 24 h", f"{long_nvtx:,}", "kept in the NVTX table, left out of the time axis's extent"
            )
        )
    if meta.invalid_time_rows:
        total = sum(meta.invalid_time_rows.values())
        cards.append(
            Card(
                "Rows with unusable times",
                f"{total:,}",
                "dropped (NULL time, end < start or beyond "
                "2^62 ns): " + ", ".join(f"{k} {v:,}" for k, v in meta.invalid_time_rows.items()),
            )
        )
    if meta.dropped_zero_ts_kernels:
        cards.append(
            Card(
                "Kernels without timestamps",
                f"{meta.dropped_zero_ts_kernels:,}",
                "start = end = 0: left out of span and busy",
            )
        )
    return cards
