"""Attribute GPU work to dispatches by correlation, not by wall-clock windows.

A kernel belongs to the dispatch whose window ``[start, next start)`` contains the start of the
CUDA API call that launched it (joined on correlation id and process). GPU work lags the host, so
a decode step's kernels often run after the next dispatch mark; wall-clock binning would give them
to the wrong step::

    host   |D0 launch k1 k2|D1 launch k3 ...
    GPU          [k1][k2........][k3]
                         ^ k2 runs after D1's mark but was launched in D0: it is D0's
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import PART_ROWS, covered_before, union_intervals, union_length
from dashboard.analysis.kernel_times import kernel_durations_at, kernel_end_ns
from dashboard.analysis.launches import kernel_launches
from dashboard.analysis.ratio import share_pct

UNATTRIBUTED = -1

DISPATCH_METRICS: dict[str, str] = {
    "index": "int64",
    "kernels": "int64",
    "kernel_sum_ns": "int64",
    "gpu_busy_ns": "int64",  # union of the dispatch's own kernels
    "first_kernel_ns": "Int64",
    "last_kernel_end_ns": "Int64",
    "launch_lead_ns": "Int64",  # first kernel start - dispatch start: host time before the GPU starts
}


def attribute_kernels(
    kernels: pd.DataFrame, api_calls: pd.DataFrame, dispatches: pd.DataFrame, launches: pd.DataFrame | None = None
) -> np.ndarray:
    """Dispatch index (``dispatches["index"]``) of every kernel, UNATTRIBUTED when unknown.

    Args:
        kernels: KERNELS frame. api_calls: API_CALLS frame.
        dispatches: DISPATCHES frame (phases.build_dispatches), sorted by start_ns.
        launches: ``launches.kernel_launches(kernels, api_calls)``, when the caller has it
            (computed otherwise).

    Returns:
        Integer array aligned with ``kernels`` rows (int32 when every index fits: 10M kernels, 40 MB kept per
        trace instead of 80). A kernel without a launching API call (no correlation match), or launched outside
        every dispatch window, is UNATTRIBUTED.
    """
    wide = len(dispatches) and int(dispatches["index"].max()) >= np.iinfo(np.int32).max
    out = np.full(len(kernels), UNATTRIBUTED, dtype=np.int64 if wide else np.int32)
    if kernels.empty or dispatches.empty:
        return out
    if launches is None:
        launches = kernel_launches(kernels, api_calls)
    if launches.empty:
        return out
    starts = dispatches["start_ns"].to_numpy(np.int64)
    ends = dispatches["end_ns"].to_numpy(np.int64)
    api_start = launches["api_start_ns"].to_numpy(np.int64)
    pos = np.searchsorted(starts, api_start, side="right") - 1
    ok = (pos >= 0) & (api_start < ends[np.clip(pos, 0, None)])
    idx = dispatches["index"].to_numpy(out.dtype)
    out[launches["kernel_index"].to_numpy()[ok]] = idx[pos[ok]]
    return out


def dispatch_id_ranges(attribution: np.ndarray, count: int, part_rows: int = PART_ROWS):
    """``(lo, hi, rows)`` per range ``[lo, hi)`` of dispatch ids (``0 <= lo < hi <= count``) whose kernels
    (``attribution`` values in the range) number about ``part_rows`` or fewer, unless one dispatch has more:
    ``rows`` are their row positions, in row order. Ranges without kernels are skipped; ids outside
    ``[0, count)`` (``UNATTRIBUTED``) belong to none."""
    n = len(attribution)
    if n <= part_rows:
        rows = np.flatnonzero((attribution >= 0) & (attribution < count))
        if len(rows):
            yield 0, count, rows
        return
    per_id = np.zeros(count, np.int64)
    for a in range(0, n, part_rows):
        part = attribution[a : a + part_rows]
        part = part[(part >= 0) & (part < count)]
        per_id += np.bincount(part, minlength=count)[:count]
    cum = np.cumsum(per_id)
    lo = 0
    while lo < count:
        before = int(cum[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(cum, before + part_rows, side="right")), lo + 1)
        hi = min(hi, count)
        if int(cum[hi - 1]) > before:
            yield lo, hi, np.flatnonzero((attribution >= lo) & (attribution < hi))
        lo = hi


def _range_busy_ns(s: np.ndarray, e: np.ndarray, g: np.ndarray, count: int) -> np.ndarray:
    """``dispatch_busy_ns`` of kernels already picked (``g``: dispatch id from 0 to ``count - 1``)."""
    busy = np.zeros(count, dtype=np.int64)
    sel = (s >= 0) & (e >= s)
    if not sel.any():
        return busy
    if not sel.all():
        g, s, e = g[sel], s[sel], e[sel]
    lo = int(s.min())
    off = int(e.max()) - lo + 1
    if off * (int(g.max()) + 1) < 2**62:
        # each dispatch's kernels offset apart, so that one union separates them
        shift = g.astype(np.int64) * off
        shift -= lo
        shifted_s = s + shift
        shift += e
        us, ue = union_intervals(shifted_s, shift)
        del shifted_s, shift
        return np.bincount(us // off, weights=ue - us, minlength=count).astype(np.int64)
    for d in np.unique(g):
        busy[d] = union_length(s[g == d], e[g == d])
    return busy


def dispatch_busy_ns(starts: np.ndarray, ends: np.ndarray, attribution: np.ndarray, count: int) -> np.ndarray:
    """GPU busy per dispatch: the union of its own attributed kernels over all devices, int64 ns.

    Args:
        starts, ends: kernel start and (overrun-clipped, ``kernel_times.kernel_end_ns``) end, aligned with
            ``attribution`` (``attribute_kernels``). count: number of dispatches (indices 0..count-1).

    Kernels with a negative start or an end before their start take no part. Dispatches are worked through in
    ranges of ids (``dispatch_id_ranges``).
    """
    busy = np.zeros(count, dtype=np.int64)
    for lo, hi, rows in dispatch_id_ranges(attribution, count):
        busy[lo:hi] = _range_busy_ns(starts[rows], ends[rows], attribution[rows] - lo, hi - lo)
    return busy


def dispatch_metrics(dispatches: pd.DataFrame, kernels: pd.DataFrame, attribution: np.ndarray) -> pd.DataFrame:
    """Per dispatch: kernel count, kernel time, GPU busy (union of its own kernels), launch lead.

    Returns:
        DISPATCH_METRICS frame, one row per dispatch in ``dispatches`` order; dispatches without
        attributed kernels have 0 kernels and NA kernel times.
    """
    base = pd.DataFrame({"index": dispatches["index"].to_numpy(np.int64)})
    if kernels.empty or not (attribution != UNATTRIBUTED).any():
        for col, dtype in DISPATCH_METRICS.items():
            if col != "index":
                base[col] = (
                    pd.Series([0] * len(base), dtype=dtype)
                    if dtype == "int64"
                    else pd.array([pd.NA] * len(base), dtype=dtype)
                )
        return base.astype(DISPATCH_METRICS)
    # Per dispatch id, by ranges of ids (``dispatch_id_ranges``) and reductions at each kernel's id: exact int64,
    # and a few columns of one range's kernels at a time.
    count = int(attribution.max()) + 1
    s_all = kernels["start_ns"].to_numpy(np.int64)
    e_all = kernel_end_ns(kernels)
    n = np.zeros(count, np.int64)
    kernel_sum = np.zeros(count, np.int64)
    first = np.full(count, np.iinfo(np.int64).max, np.int64)
    last = np.full(count, np.iinfo(np.int64).min, np.int64)
    busy = np.zeros(count, np.int64)
    for lo, hi, rows in dispatch_id_ranges(attribution, count):
        d = attribution[rows] - lo
        s, e = s_all[rows], e_all[rows]
        n[lo:hi] = np.bincount(d, minlength=hi - lo)
        np.add.at(kernel_sum[lo:hi], d, kernel_durations_at(kernels, rows))
        np.minimum.at(first[lo:hi], d, s)
        np.maximum.at(last[lo:hi], d, e)
        busy[lo:hi] = _range_busy_ns(s, e, d, hi - lo)
        del d, s, e, rows
    ids = np.flatnonzero(n)
    agg = pd.DataFrame(
        {
            "kernels": n[ids],
            "kernel_sum_ns": kernel_sum[ids],
            "first_kernel_ns": first[ids],
            "last_kernel_end_ns": last[ids],
            "gpu_busy_ns": busy[ids],
        },
        index=pd.Index(ids, name="d"),
    )
    out = base.merge(agg, left_on="index", right_index=True, how="left")
    out["kernels"] = out["kernels"].fillna(0)
    out["kernel_sum_ns"] = out["kernel_sum_ns"].fillna(0)
    out["gpu_busy_ns"] = out["gpu_busy_ns"].fillna(0)
    starts = dispatches.set_index("index")["start_ns"]
    out["launch_lead_ns"] = out["first_kernel_ns"] - out["index"].map(starts)
    return out[list(DISPATCH_METRICS)].astype(DISPATCH_METRICS).reset_index(drop=True)


def phase_category_time(
    kernels: pd.DataFrame, attribution: np.ndarray, dispatch_phase: pd.Series, categories: pd.Series
) -> pd.DataFrame:
    """Kernel time per (phase, category) over attributed kernels.

    Args:
        dispatch_phase: phase name per dispatch index.
        categories: category per kernel row (analysis.categories.categorize_kernels).

    Returns:
        Frame (phase, category, kernel_sum_ns, kernels) sorted by phase then kernel time descending.
    """
    sel = attribution != UNATTRIBUTED
    if not sel.any():
        return pd.DataFrame(
            {
                "phase": [],
                "category": [],
                "kernel_sum_ns": pd.Series([], dtype="int64"),
                "kernels": pd.Series([], dtype="int64"),
            }
        )
    # One small integer key per kernel, (phase code, category code), with every kernel outside an attributed
    # dispatch of known phase in a last "left out" slot; sums and counts per key by ``np.add.at``/``bincount``:
    # no string per kernel (10M kernels: 0.2 s, not 3.4 s) and no grouping index over the kernels' rows
    # (this view's peak at 10M was its grouping, ~0.45 GB).
    phase_code, phase_names = pd.factorize(dispatch_phase.to_numpy())  # a missing phase: -1, left out
    index = dispatch_phase.index.to_numpy(np.int64)
    numbered = len(index) and (index == np.arange(len(index))).all()  # the usual dispatch numbering 0, 1, ...
    cat = pd.Categorical(categories)
    width = len(cat.categories) + 1
    left_out = len(phase_names) * width  # a handful of phases times the categories: int32 holds every key
    sums = np.zeros(left_out + 1, np.int64)
    counts = np.zeros(left_out + 1, np.int64)
    first = np.full(left_out + 1, len(attribution), np.int64)
    for a in range(0, len(attribution), PART_ROWS):  # a part of the kernels at a time: int32 keys, no 10M column
        at = attribution[a : a + PART_ROWS]
        mine = at != UNATTRIBUTED
        wanted = at[mine]
        if numbered:  # dispatch indices are positions
            pos, known = wanted, wanted < len(index)
        else:
            pos = _dispatch_positions(index, wanted)
            known = pos >= 0
        code = np.full(len(wanted), -1, dtype=np.int32)  # phase code per attributed kernel, -1: none
        code[known] = phase_code[pos[known]]
        part = code * width
        part += cat.codes[a : a + PART_ROWS][mine]
        part += 1
        part[code < 0] = left_out
        key = np.full(len(at), left_out, dtype=np.int32)
        key[mine] = part
        np.add.at(sums, key, kernel_durations_at(kernels, slice(a, a + PART_ROWS)))  # exact int64 sums
        counts += np.bincount(key, minlength=left_out + 1)
        np.minimum.at(first, key, np.arange(a, a + len(key), dtype=np.int64))
    keys = np.flatnonzero(counts[:left_out])
    keys = keys[np.argsort(first[keys], kind="stable")]  # groups in order of first appearance, as before
    out = pd.DataFrame(
        {
            "phase": np.asarray(phase_names, dtype=object)[keys // width],
            "kernel_sum_ns": sums[keys],
            "kernels": counts[keys].astype(np.int64),
        }
    )
    out.insert(1, "category", np.asarray(cat.categories.astype(str), dtype=object)[keys % width - 1])
    return out.sort_values(["phase", "kernel_sum_ns"], ascending=[True, False], kind="stable").reset_index(drop=True)


def _dispatch_positions(index: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position in ``index`` (dispatch indices, unique) of each of ``wanted``, -1 where absent."""
    order = np.argsort(index, kind="stable")
    ordered = index[order]
    pos = np.clip(np.searchsorted(ordered, wanted), 0, max(len(ordered) - 1, 0))
    found = (ordered[pos] == wanted) if len(ordered) else np.zeros(len(wanted), dtype=bool)
    return np.where(found, order[pos] if len(ordered) else -1, -1)


PHASE_GPU_TIME: dict[str, str] = {
    "phase": "object",
    "gpu_attributed_ns": "int64",  # Σ over the phase's dispatches of gpu_busy_ns (own kernels, by correlation)
    "gpu_attributed_per_dispatch_ns": "float64",
    "gpu_busy_in_window_ns": "int64",  # busy union of all GPU work inside the phase's dispatch windows
    "gpu_busy_in_window_pct": "Float64",  # of the phase's total dispatch time; <= 100; NA when that is 0
}


def phase_gpu_time(
    dispatches: pd.DataFrame, phases: pd.Series, metrics: pd.DataFrame, busy: tuple[np.ndarray, np.ndarray]
) -> pd.DataFrame:
    """GPU time per phase, two ways that never mix:

    * attributed (by correlation): the GPU time of the kernels each dispatch launched (its
      ``gpu_busy_ns``), summed over the phase's dispatches, in ns. Launched work often runs after
      the dispatch's window (graph replay, a deep queue), so it is never shown as a share of the
      window: it can exceed it.
    * busy within the windows: the length of (any-GPU busy union of ``work``) ∩ (the phase's
      dispatch windows), and that as a % of the phase's total dispatch time (<= 100 % by
      construction; NA when the total is 0).

    Args:
        dispatches: DISPATCHES frame. phases: phase per dispatch (aligned).
        metrics: DISPATCH_METRICS frame of the same dispatches. busy: the any-GPU busy union of the GPU work
            (``gpu_time.any_device_union``).

    Returns:
        PHASE_GPU_TIME frame, one row per phase present.
    """
    us, ue = busy
    s = dispatches["start_ns"].to_numpy(np.int64)
    e = dispatches["end_ns"].to_numpy(np.int64)
    inside = covered_before(us, ue, e) - covered_before(us, ue, s)
    df = pd.DataFrame(
        {"phase": phases.to_numpy(), "attr": metrics["gpu_busy_ns"].to_numpy(np.int64), "inside": inside, "dur": e - s}
    )
    g = df.groupby("phase", sort=False)
    out = pd.DataFrame(
        {
            "gpu_attributed_ns": g["attr"].sum(),
            "n": g.size(),
            "gpu_busy_in_window_ns": g["inside"].sum(),
            "dur": g["dur"].sum(),
        }
    ).reset_index()
    out["gpu_attributed_per_dispatch_ns"] = out["gpu_attributed_ns"] / out["n"]
    out["gpu_busy_in_window_pct"] = pd.array(
        [share_pct(a, b) for a, b in zip(out["gpu_busy_in_window_ns"], out["dur"])], dtype="Float64"
    )
    return out[list(PHASE_GPU_TIME)].astype(PHASE_GPU_TIME).reset_index(drop=True)
