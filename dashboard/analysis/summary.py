"""Build the seed-format summary of a trace (definitions: shared/reference/summary_contract.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import covered_before, union_intervals
from dashboard.analysis.kernel_times import (
    _usable,
    invalid_kernel_count,
    kernel_durations,
    kernel_end_ns,
    overrun_kernel_count,
)
from dashboard.analysis.summary_warnings import (
    FrameCounts,
    gpu_work_lines,
    kernel_row_lines,
    not_captured_line,
    untimed_line,
)
from dashboard.model import (
    API_STATS,
    DISPATCH_MARKS,
    KERNEL_STATS,
    NVTX_STATS,
    SUMMARY_NOTE,
    Summary,
    TraceBundle,
    conform,
    empty_frame,
    input_warnings,
    ns_to_s,
)

DEFAULT_DISPATCH_PREFIX = "CG_DISPATCH"
TOP_KERNELS = 20


def kernels_read_not_usable(bundle: TraceBundle) -> str:
    """``UNTIMED_KERNELS`` when kernel rows were read but none counts for span and busy (every one without a
    usable timestamp, kept as an invalid row or left out by the loader), else "": the GPU ran work whose
    time is unknown, never "nothing ran"."""
    return untimed_line(bundle.meta, frame_counts(bundle))


def frame_counts(bundle: TraceBundle) -> FrameCounts:
    """The ``FrameCounts`` of a bundle."""
    k = bundle.kernels
    return FrameCounts(
        len(k),
        int(_usable(k).sum()) if len(k) else 0,
        len(bundle.api_calls) if bundle.api_totals is None else int(bundle.api_totals["count"].sum()),
        len(bundle.nvtx_ranges),
        len(bundle.nvtx_marks),
        len(bundle.memops),
        len(bundle.graph_launches),
    )


def _count_and_total(names: pd.Series, durations: pd.Series) -> pd.DataFrame:
    """Per distinct name (categorical or str): row count and int64 sum of durations."""
    if isinstance(names.dtype, pd.CategoricalDtype):  # per integer code: no string copies, no hashing
        codes = names.cat.codes.to_numpy()
        size = len(names.cat.categories)
        count = np.zeros(size + 1, dtype=np.int64)  # slot 0: rows without a name (code -1), left out as groupby does
        total = np.zeros(size + 1, dtype=np.int64)
        slot = codes.astype(np.intp) + 1
        np.add.at(count, slot, 1)
        np.add.at(total, slot, durations.to_numpy(np.int64))
        present = np.flatnonzero(count[1:])  # in code order, as the names' first appearance need not be
        out = pd.DataFrame({"count": count[1:][present], "total_ns": total[1:][present]})
        out.index = names.cat.categories.take(present).astype(str)
    else:
        g = pd.Series(durations.to_numpy(np.int64)).groupby(names.astype(str).to_numpy(), sort=False)
        out = pd.DataFrame({"count": g.size(), "total_ns": g.sum()})
    return out.rename_axis("name").reset_index()


def api_stats(api_calls: pd.DataFrame) -> pd.DataFrame:
    """Per raw API name: count and total duration (summed across threads, not wall time).

    Args:
        api_calls: API_CALLS, or ``API_TOTALS`` (a summary's read: counts and totals per thread and name).

    Returns:
        API_STATS frame (name, count, total_ns), sorted by total_ns descending, then name.
    """
    if api_calls.empty:
        return empty_frame(API_STATS)
    if "count" in api_calls:
        g = api_calls.groupby("name", observed=True, sort=False)
        out = pd.DataFrame({"count": g["count"].sum(), "total_ns": g["total_ns"].sum()})
        out.index = out.index.astype(str)
        out = out.rename_axis("name").reset_index()
    else:
        out = _count_and_total(api_calls["name"], api_calls["end_ns"] - api_calls["start_ns"])
    out = out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable")
    return conform(out.reset_index(drop=True), API_STATS)


def nvtx_stats(nvtx_ranges: pd.DataFrame, busy: tuple[np.ndarray, np.ndarray]) -> pd.DataFrame:
    """Per NVTX range name: count, sum of durations, union length and overlap with GPU busy.

    Args:
        nvtx_ranges: NVTX_RANGES frame (already closed/filtered by the loader).
        busy: the kernel busy union ``(starts_ns, ends_ns)``, disjoint and sorted.

    Returns:
        NVTX_STATS frame (name, count, sum_ns, union_ns, gpu_overlap_ns) sorted by sum_ns
        descending, then name. ``gpu_overlap_ns`` is the wall-clock intersection of the name's
        union with ``busy`` (not attribution of launched work), as summary_contract.md defines.
    """
    if nvtx_ranges.empty:
        return empty_frame(NVTX_STATS)
    codes, names = pd.factorize(nvtx_ranges["name"].astype(str), sort=False)
    s = nvtx_ranges["start_ns"].to_numpy(np.int64)
    e = nvtx_ranges["end_ns"].to_numpy(np.int64)
    order = np.lexsort((s, codes))
    c, s, e = codes[order], s[order], e[order]
    us, ue, uc = name_unions(c, s, e)
    overlap = covered_before(busy[0], busy[1], ue) - covered_before(busy[0], busy[1], us)
    n = len(names)

    def per_name(codes_: np.ndarray, values: np.ndarray) -> np.ndarray:  # exact int64 sums
        return pd.Series(values, dtype=np.int64).groupby(codes_).sum().reindex(range(n), fill_value=0).to_numpy()

    out = pd.DataFrame(
        {
            "name": np.asarray(names, dtype=object),
            "count": np.bincount(c, minlength=n),
            "sum_ns": per_name(c, e - s),
            "union_ns": per_name(uc, ue - us),
            "gpu_overlap_ns": per_name(uc, overlap),
        }
    )
    out = out.sort_values(["sum_ns", "name"], ascending=[False, True], kind="stable")
    return conform(out.reset_index(drop=True), NVTX_STATS)


def name_unions(c: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-name union of intervals, vectorised: ``(starts, ends, codes)`` of the merged intervals of each name.

    ``c, s, e``: name codes, starts and ends sorted by code, then start (``np.lexsort((s, c))``).
    """
    # Running max of ends within each name; a new merged interval starts where the name changes or the
    # start is past every earlier end of that name.
    run_max = pd.Series(e).groupby(c).cummax().to_numpy()
    new = np.ones(len(s), dtype=bool)
    new[1:] = (c[1:] != c[:-1]) | (s[1:] > run_max[:-1])
    last = np.flatnonzero(np.r_[new[1:], True])
    return s[new], run_max[last], c[new]


def kernel_stats_by_short_name(kernels: pd.DataFrame, top: int | None = TOP_KERNELS) -> pd.DataFrame:
    """Kernels grouped by short name: count and total duration.

    Returns:
        KERNEL_STATS frame sorted by total_ns descending (ties: name ascending), at most ``top``
        rows (all when ``top`` is None).
    """
    if kernels.empty:
        return empty_frame(KERNEL_STATS)
    out = _count_and_total(kernels["short_name"], kernel_durations(kernels))
    out = out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable")
    if top is not None:
        out = out.head(top)
    return conform(out.reset_index(drop=True), KERNEL_STATS)


def dispatch_marks(bundle: TraceBundle, prefix: str = DEFAULT_DISPATCH_PREFIX) -> pd.DataFrame:
    """NVTX marks and range starts whose message starts with ``prefix`` (all of them for "").

    Returns:
        DISPATCH_MARKS frame (start_ns, name) sorted by start_ns, then name.
    """
    return dispatch_rows(bundle.nvtx_marks, bundle.nvtx_ranges, prefix)


def dispatch_rows(nvtx_marks: pd.DataFrame, nvtx_ranges: pd.DataFrame, prefix: str) -> pd.DataFrame:
    """``dispatch_marks`` of the given NVTX marks and ranges (a trace's, or one time slice's)."""
    parts = []
    for frame, t, col in ((nvtx_marks, "ts_ns", "name"), (nvtx_ranges, "start_ns", "message")):
        if frame.empty:
            continue
        names = (
            frame[col]
            if isinstance(frame[col].dtype, pd.CategoricalDtype)
            else frame[col].astype(str).astype("category")
        )
        # the prefix is tested once per distinct name, not per row
        ok = [i for i, c in enumerate(names.cat.categories) if str(c).startswith(prefix)]
        sel = np.isin(names.cat.codes.to_numpy(), ok) if prefix else np.ones(len(names), dtype=bool)
        if sel.any():
            parts.append(
                pd.DataFrame(
                    {
                        "start_ns": frame[t].to_numpy(np.int64)[sel],
                        "name": np.asarray(names.astype(str).to_numpy()[sel], dtype=object),
                    }
                )
            )
    if not parts:
        return empty_frame(DISPATCH_MARKS)
    df = pd.concat(parts, ignore_index=True).sort_values(["start_ns", "name"], kind="stable").reset_index(drop=True)
    return conform(df, DISPATCH_MARKS)


def kernel_row_warnings(kernels: pd.DataFrame) -> list[str]:
    """One sentence per kind of kernel row that is not used as recorded (empty when all are):
    same-stream overruns clipped (``overrun_kernel_count``) and invalid rows left out
    (``invalid_kernel_count``). The same sentences go into ``summarize``'s notes and the overview."""
    return kernel_row_lines(overrun_kernel_count(kernels), invalid_kernel_count(kernels))


def gpu_activitynot_captured_line(bundle: TraceBundle) -> str:
    """The capture-gap sentence, "" unless launch calls were recorded but no GPU execution
    (``TraceMeta.gpu_activity_missing``, set by the loaders): GPU work was launched and not recorded, so the
    span, busy union and idle are unknown (``summary_to_dict`` writes null), never "nothing ran on a GPU"."""
    return not_captured_line(bundle.meta, frame_counts(bundle))


def gpu_work_warnings(bundle: TraceBundle) -> list[str]:
    """The sentence that keeps a summary's zeros from reading as measurements: a trace with no kernel rows
    has span, busy union and idle 0 by definition (summary_contract.md), not because a GPU sat idle; when
    kernels were launched but not recorded (``gpu_activity_not_captured``) they are unknown instead.
    Empty when there are kernel rows."""
    return gpu_work_lines(bundle.meta, frame_counts(bundle))


@dataclass(frozen=True)
class KernelSummary:
    """What a summary reads from the kernels, NVTX ranges and marks alone (``kernel_summary``): it can be computed
    while the CUDA API calls are still being read. ``frames``: the frames it came from, checked by identity."""

    frames: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]
    dispatch_prefix: str
    fields: dict
    row_warnings: list[str]


def kernel_summary(
    kernels: pd.DataFrame, nvtx_ranges: pd.DataFrame, nvtx_marks: pd.DataFrame, dispatch_prefix: str
) -> KernelSummary:
    """The ``Summary`` fields of ``summarize`` that the kernels, NVTX ranges and marks give."""
    # The timed kernels' times as arrays, once (``timed_kernels`` would copy the frame for each use).
    ok = _usable(kernels).to_numpy()
    starts = kernels["start_ns"].to_numpy(np.int64)
    ends = kernel_end_ns(kernels)
    if not ok.all():  # else the columns themselves (10M kernels: no 160 MB of copies)
        starts, ends = starts[ok], ends[ok]
    busy = union_intervals(starts, ends)
    gpu_start, gpu_end = (int(starts.min()), int(ends.max())) if starts.size else (None, None)
    marks = dispatch_rows(nvtx_marks, nvtx_ranges, dispatch_prefix)
    counts = marks["name"].value_counts(sort=False)
    fields = dict(
        gpu_activity_span_ns=gpu_end - gpu_start if starts.size else 0,
        gpu_busy_union_ns=int((busy[1] - busy[0]).sum()),
        kernel_count=len(kernels),
        graph_node_kernel_count=int(kernels["graph_node_id"].notna().sum()),
        nvtx=nvtx_stats(nvtx_ranges, busy),
        dispatch={str(n): int(c) for n, c in counts.items()},
        dispatch_timeline=marks,
        top_kernels=kernel_stats_by_short_name(kernels),
        gpu_start_ns=gpu_start,
        gpu_end_ns=gpu_end,
    )
    return KernelSummary((kernels, nvtx_ranges, nvtx_marks), dispatch_prefix, fields, kernel_row_warnings(kernels))


def summarize(
    bundle: TraceBundle, *, dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX, kernel_part: KernelSummary | None = None
) -> Summary:
    """Compute the seed-format summary of an nsys trace, exactly as summary_contract.md defines it.

    Args:
        bundle: the loaded trace.
        dispatch_prefix: name prefix of dispatch marks/ranges (default ``CG_DISPATCH``).
        kernel_part: ``kernel_summary`` of this bundle's frames and prefix, computed before (used only when it is).

    Returns:
        Summary with integer-ns times; ``gpu_start_ns``/``gpu_end_ns`` set when there are kernels.
    """
    frames = (bundle.kernels, bundle.nvtx_ranges, bundle.nvtx_marks)
    if not (
        kernel_part is not None
        and kernel_part.dispatch_prefix == dispatch_prefix
        and all(a is b for a, b in zip(kernel_part.frames, frames))
    ):
        kernel_part = kernel_summary(*frames, dispatch_prefix)
    return Summary(
        file=bundle.meta.source,
        api=api_stats(bundle.api_calls if bundle.api_totals is None else bundle.api_totals),
        notes=SUMMARY_NOTE,
        warnings=(*input_warnings(bundle.meta), *kernel_part.row_warnings, *gpu_work_warnings(bundle)),
        gpu_activity_missing=(
            kernels_read_not_usable(bundle) or ("" if len(bundle.kernels) else bundle.meta.gpu_activity_missing)
        ),
        **kernel_part.fields,
    )


def summary_to_dict(summary: Summary) -> dict:
    """Serialise a Summary to the seed JSON structure (times in float seconds, key order as seed). Span, busy
    and idle are null (n/a, as ``report`` shows them) when GPU work was launched but not captured
    (``Summary.gpu_activity_missing``): unknown, not the contract's 0 of a trace that launched nothing."""
    unknown = bool(summary.gpu_activity_missing)
    return {
        "file": summary.file,
        "gpu_activity_span_s": None if unknown else ns_to_s(summary.gpu_activity_span_ns),
        "gpu_busy_union_s": None if unknown else ns_to_s(summary.gpu_busy_union_ns),
        "gpu_idle_within_span_s": None if unknown else ns_to_s(summary.gpu_idle_within_span_ns),
        "kernel_count": int(summary.kernel_count),
        "graph_node_kernel_count": int(summary.graph_node_kernel_count),
        "api": {r.name: [int(r.count), ns_to_s(r.total_ns)] for r in summary.api.itertuples(index=False)},
        "nvtx": {
            r.name: {
                "count": int(r.count),
                "sum_s": ns_to_s(r.sum_ns),
                "union_s": ns_to_s(r.union_ns),
                "gpu_overlap_s": ns_to_s(r.gpu_overlap_ns),
            }
            for r in summary.nvtx.itertuples(index=False)
        },
        "dispatch": dict(summary.dispatch),
        "dispatch_timeline": [
            {"start_ns": int(r.start_ns), "name": r.name} for r in summary.dispatch_timeline.itertuples(index=False)
        ],
        "top_kernels": [
            [r.name, [int(r.count), ns_to_s(r.total_ns)]] for r in summary.top_kernels.itertuples(index=False)
        ],
        "notes": summary.notes,
        "warnings": list(summary.warnings),
    }
