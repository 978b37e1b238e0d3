"""The seed-format summary computed per time slice and added up, equal to ``summary.summarize`` to the ns.

A slice ``[lo, hi)`` *owns* the rows that start in it (see ``loaders.nsys_slices``). What adds up:

- counts and sums (kernels, CUDA API calls, NVTX ranges, top kernels by short name) come from owned rows;
- the span is the smallest owned start and the largest owned end, over the slices;
- a union (GPU busy, each NVTX name's union, its overlap with busy) is the sum over slices of its part
  inside each slice. Kernel ends are clipped for same-stream overruns exactly as ``summary`` clips them:
  a kernel's clipped end depends only on the kernels of its stream that start before its recorded end,
  which its slice reads (``kernels_after``). Inside slice ``i`` the busy union is ``P_i`` (its own
  kernels, clipped to the slice) plus ``[lo, R)``, where ``R`` is the largest clipped end of the kernels
  of earlier slices: every earlier kernel starts before ``lo``, so what it covers in the slice is a
  prefix. ``R`` is known only when the slices are combined, so each slice measures its figures for
  every value ``R`` can take (``candidate_ends``: the recorded end of each kernel reaching in from
  before, or the first start at or after ``lo`` on its stream, where an overrun would be clipped).
- dispatch marks are kept as rows (few) and sorted when combined.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import covered_before, union_intervals
from dashboard.analysis.kernel_times import STREAM_KEY, _compute_overruns, _invalid, _usable, clipping_rows
from dashboard.analysis.summary import TOP_KERNELS, _count_and_total, api_stats, dispatch_rows, name_unions
from dashboard.analysis.summary_warnings import FrameCounts, gpu_work_lines, kernel_row_lines, untimed_line
from dashboard.model import (
    API_STATS,
    DISPATCH_MARKS,
    KERNEL_STATS,
    NVTX_STATS,
    SUMMARY_NOTE,
    RowAccount,
    Summary,
    TraceMeta,
    conform,
    empty_frame,
    input_warnings,
)

_BIG = np.iinfo(np.int64).max


@dataclass
class SlicePartial:
    """What one slice contributes to the summary: small (per name and per candidate, never per row)."""

    lo: int | None  # None: unbounded (the first slice)
    hi: int | None  # None: unbounded (the last slice)
    counts: dict[str, int] = field(default_factory=dict)  # FrameCounts fields, invalid/overrun/graph-node/zero-ts
    gpu_start: int | None = None  # smallest owned usable start
    gpu_end: int | None = None  # largest owned usable end, clipped
    busy_ns: int = 0  # |P|: owned kernels clipped to the slice
    busy_gap_ns: dict[int, int] = field(default_factory=dict)  # r -> |[lo, r) minus P|
    kernels: dict[str, list[int]] = field(default_factory=dict)  # short name -> [count, total ns]
    api: dict[str, list[int]] = field(default_factory=dict)  # raw name -> [count, total ns]
    nvtx: dict[str, list[int]] = field(default_factory=dict)  # name -> [count, sum, union in slice, overlap with P]
    nvtx_gap_ns: dict[int, dict[str, int]] = field(default_factory=dict)  # r -> name -> |V_name ∩ ([lo, r) - P)|
    dispatch: list[tuple[int, str]] = field(default_factory=list)
    accounts: list[RowAccount] = field(default_factory=list)
    invalid: dict[str, int] = field(default_factory=dict)
    launch_calls: dict[int, int] = field(default_factory=dict)
    executions: dict[int, int] = field(default_factory=dict)


def owned_rows(kernels: pd.DataFrame, lo: int | None) -> np.ndarray:
    """Rows of a ``kernels_owned_or_before`` read that the slice owns (the others start before ``lo`` and
    end after it; a row whose missing time the loader made -1 is owned: it never ends after ``lo``)."""
    if lo is None:
        return np.ones(len(kernels), dtype=bool)
    s = kernels["start_ns"].to_numpy(np.int64)
    e = kernels["end_ns"].to_numpy(np.int64)
    return ~((s < lo) & (e > lo))


def lookahead(kernels: pd.DataFrame, hi: int | None, limit: int = 1000) -> tuple[int, list[int] | None] | None:
    """``(until, stream ids)`` of the kernels to read after the slice for overrun clipping (None: none
    needed): those starting in ``[hi, until)``, ``until`` the latest usable end among ``kernels``, on the
    streams of the kernels that end after ``hi`` (None: all streams, when there are more than ``limit``)."""
    if hi is None or kernels.empty:
        return None
    ok = _usable(kernels).to_numpy()
    e = kernels["end_ns"].to_numpy(np.int64)[ok]
    late = e > hi
    if not late.any():
        return None
    streams = np.unique(kernels["stream_id"].to_numpy(np.int64)[ok][late])
    return int(e.max()), (streams.tolist() if streams.size <= limit else None)


def _clip(a: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    return np.clip(a, np.iinfo(np.int64).min if lo is None else lo, _BIG if hi is None else hi)


def candidate_ends(before: pd.DataFrame, owned: pd.DataFrame, after: pd.DataFrame, lo: int, hi: int | None) -> list:
    """Every value ``min(R, hi)`` can take when ``R > lo`` (see the module docstring): per usable kernel
    reaching in from before, its recorded end and the first start at or after ``lo`` of a kernel on its
    stream that takes part in overrun clipping (``clipping_rows``); each clipped to the slice."""
    ok_b = _usable(before).to_numpy()
    if not ok_b.any():
        return []
    b = before[ok_b]
    cands = set(_clip(b["end_ns"].to_numpy(np.int64), lo, hi).tolist())
    for frame in (owned, after):
        take = clipping_rows(frame)
        if not take.any():
            continue
        starts = frame["start_ns"].to_numpy(np.int64)[take]
        keys = [frame[c].to_numpy(np.int64)[take] for c in STREAM_KEY]
        for stream in set(b[list(STREAM_KEY)].itertuples(index=False, name=None)):  # few: kernels crossing lo
            on = np.logical_and.reduce([k == v for k, v in zip(keys, stream)])
            if on.any():
                cands.add(int(_clip(starts[on].min(keepdims=True), lo, hi)[0]))
    return sorted(c for c in cands if c > lo)


def kernel_part(part: SlicePartial, owned: pd.DataFrame, before: pd.DataFrame, after: pd.DataFrame):
    """Fill the kernel figures of ``part``; returns the slice's busy union ``P`` (for the NVTX overlap)
    and the candidate values of ``min(R, hi)``."""
    lo, hi = part.lo, part.hi
    s = owned["start_ns"].to_numpy(np.int64)
    raw_e = owned["end_ns"].to_numpy(np.int64)
    cols = ["start_ns", "end_ns", "graph_node_id", *STREAM_KEY]
    both = pd.concat([owned[cols], after[cols]], ignore_index=True) if len(after) else owned
    ends, _ = _compute_overruns(both) if len(both) else (None, 0)
    e = raw_e if ends is None else ends[: len(owned)]
    ok = _usable(owned).to_numpy()
    invalid = _invalid(owned["start_ns"], owned["end_ns"]).to_numpy()
    part.counts.update(
        kernels=len(owned),
        usable_kernels=int(ok.sum()),
        graph_node_kernels=int(owned["graph_node_id"].notna().sum()),
        invalid_kernels=int(invalid.sum()),
        overrun_kernels=int((e != raw_e).sum()),
        zero_ts_kernels=int(((s == 0) & (raw_e == 0)).sum()),
    )
    if len(owned):
        dur = pd.Series(np.where(invalid, 0, e - s))
        stats = _count_and_total(owned["short_name"], dur)
        part.kernels = {n: [int(c), int(t)] for n, c, t in stats.itertuples(index=False)}
        pids, n = np.unique(owned["pid"].to_numpy(np.int64), return_counts=True)
        part.executions = dict(zip(pids.tolist(), n.tolist()))
    us, ue = s[ok], e[ok]
    if us.size:
        part.gpu_start, part.gpu_end = int(us.min()), int(ue.max())
    busy = union_intervals(_clip(us, lo, hi), _clip(ue, lo, hi))
    part.busy_ns = int((busy[1] - busy[0]).sum())
    cands = [] if lo is None else candidate_ends(before, owned, after, lo, hi)
    if cands:
        covered = covered_before(busy[0], busy[1], np.asarray(cands, np.int64))
        part.busy_gap_ns = {c: int(c - lo - v) for c, v in zip(cands, covered.tolist())}
    return busy, cands


def nvtx_part(part: SlicePartial, owned: pd.DataFrame, before: pd.DataFrame, busy, cands: list[int]) -> None:
    """Fill the NVTX statistics of ``part``: count and sum of owned ranges, and, inside the slice, each
    name's union, its overlap with the slice's busy union ``busy`` and with each candidate gap."""
    if owned.empty and before.empty:
        return
    lo, hi = part.lo, part.hi
    out: dict[str, list[int]] = {}
    if len(owned):
        stats = _count_and_total(owned["name"], owned["end_ns"] - owned["start_ns"])
        out = {n: [int(c), int(t), 0, 0] for n, c, t in stats.itertuples(index=False)}
    both = pd.concat([before, owned], ignore_index=True) if len(before) else owned
    codes, names = pd.factorize(both["name"].astype(str), sort=False)
    s = _clip(both["start_ns"].to_numpy(np.int64), lo, hi)
    e = _clip(both["end_ns"].to_numpy(np.int64), lo, hi)
    order = np.lexsort((s, codes))
    us, ue, uc = name_unions(codes[order], s[order], e[order])
    n = len(names)

    def per_name(values: np.ndarray) -> list[int]:
        return pd.Series(values, dtype=np.int64).groupby(uc).sum().reindex(range(n), fill_value=0).tolist()

    overlap = covered_before(busy[0], busy[1], ue) - covered_before(busy[0], busy[1], us)
    for name, u, o in zip(names, per_name(ue - us), per_name(overlap)):
        row = out.setdefault(str(name), [0, 0, 0, 0])
        row[2] += u
        row[3] += o
    part.nvtx = out
    for r in cands:
        a, b = np.clip(us, lo, r), np.clip(ue, lo, r)
        gap = (b - a) - (covered_before(busy[0], busy[1], b) - covered_before(busy[0], busy[1], a))
        part.nvtx_gap_ns[r] = {str(names[i]): v for i, v in enumerate(per_name(gap)) if v}


def api_part(part: SlicePartial, api_totals: pd.DataFrame) -> None:
    """Fill the CUDA API statistics (count and total per raw name) of ``part`` from its calls' ``API_TOTALS``."""
    part.counts["api_calls"] = int(api_totals["count"].sum())
    if len(api_totals):
        stats = api_stats(api_totals)
        part.api = {n: [int(c), int(t)] for n, c, t in stats.itertuples(index=False)}


def dispatch_part(part: SlicePartial, marks: pd.DataFrame, ranges: pd.DataFrame, prefix: str) -> None:
    """Keep the owned dispatch marks and range starts of ``part`` as rows."""
    rows = dispatch_rows(marks, ranges, prefix)
    part.dispatch = list(zip(rows["start_ns"].tolist(), rows["name"].tolist()))


def merge_accounts(parts: list[list[RowAccount]], rule_order: tuple[str, ...] = ()) -> tuple[RowAccount, ...]:
    """The accounts of the whole export from those of its slices: added per kind and rule, kinds in their
    first order, rules in ``rule_order`` (the loaders' order; a slice lists only the rules it applied),
    then any other in first order; kinds without rows left out."""
    kinds: dict[str, list] = {}
    rules: dict[str, dict[str, int]] = {}
    for accounts in parts:
        for a in accounts:
            k = kinds.setdefault(a.kind, [0, 0, 0])
            k[0] += a.read
            k[1] += a.loaded
            k[2] += a.unrecognised
            r = rules.setdefault(a.kind, {})
            for rule, n in a.skipped:
                r[rule] = r.get(rule, 0) + n
    rank = {rule: i for i, rule in enumerate(rule_order)}

    def ordered(kind: str) -> tuple[tuple[str, int], ...]:
        items = sorted(rules[kind].items(), key=lambda item: rank.get(item[0], len(rank)))  # stable: first order
        return tuple((rule, n) for rule, n in items if n)

    return tuple(
        RowAccount(kind, read, loaded, ordered(kind), unrec) for kind, (read, loaded, unrec) in kinds.items() if read
    )


def add_counts(parts: list[SlicePartial], key: str) -> int:
    """A count added over the slices."""
    return sum(p.counts.get(key, 0) for p in parts)


def _added(dicts) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            if k in out:
                out[k] = [a + b for a, b in zip(out[k], v)]
            else:
                out[k] = list(v)
    return out


class SliceCombineError(RuntimeError):
    """A slice did not measure a figure at the value the combination needs (a bug, never approximated)."""


def combine(parts: list[SlicePartial], meta: TraceMeta, dispatch_prefix: str) -> Summary:
    """The summary of the whole trace from its slices, in time order; equal to ``summarize`` of it.

    Raises:
        SliceCombineError: a slice lacks the figure at the needed ``min(R, hi)``.
    """
    busy = 0
    reach = None  # R: the largest clipped end of the kernels of the slices so far
    gpu_start = gpu_end = None
    nvtx = _added(p.nvtx for p in parts)
    for p in parts:
        busy += p.busy_ns
        if reach is not None and p.lo is not None and reach > p.lo:
            r = reach if p.hi is None else min(reach, p.hi)
            if r not in p.busy_gap_ns:
                raise SliceCombineError(f"slice [{p.lo}, {p.hi}) lacks its busy figure at {r}")
            busy += p.busy_gap_ns[r]
            for name, v in p.nvtx_gap_ns.get(r, {}).items():
                nvtx[name][3] += v
        if p.gpu_end is not None:
            reach = p.gpu_end if reach is None else max(reach, p.gpu_end)
            gpu_end = reach
            gpu_start = p.gpu_start if gpu_start is None else min(gpu_start, p.gpu_start)
    n_kernels = add_counts(parts, "kernels")
    counts = FrameCounts(*(add_counts(parts, f) for f in FrameCounts._fields))
    marks = pd.DataFrame([r for p in parts for r in p.dispatch], columns=["start_ns", "name"])
    if marks.empty:
        marks = empty_frame(DISPATCH_MARKS)
    else:
        marks["name"] = marks["name"].astype(object)
        marks = conform(marks.sort_values(["start_ns", "name"], kind="stable").reset_index(drop=True), DISPATCH_MARKS)
    dispatch = {str(n): int(c) for n, c in marks["name"].value_counts(sort=False).items()}
    return Summary(
        file=meta.source,
        gpu_activity_span_ns=0 if gpu_start is None else gpu_end - gpu_start,
        gpu_busy_union_ns=busy,
        kernel_count=n_kernels,
        graph_node_kernel_count=add_counts(parts, "graph_node_kernels"),
        api=_stats(_added(p.api for p in parts), ["count", "total_ns"], API_STATS),
        nvtx=_stats(nvtx, ["count", "sum_ns", "union_ns", "gpu_overlap_ns"], NVTX_STATS),
        dispatch=dispatch,
        dispatch_timeline=marks,
        top_kernels=_stats(_added(p.kernels for p in parts), ["count", "total_ns"], KERNEL_STATS, TOP_KERNELS),
        notes=SUMMARY_NOTE,
        gpu_start_ns=gpu_start,
        gpu_end_ns=gpu_end,
        warnings=(
            *input_warnings(meta),
            *kernel_row_lines(add_counts(parts, "overrun_kernels"), add_counts(parts, "invalid_kernels")),
            *gpu_work_lines(meta, counts),
        ),
        gpu_activity_missing=untimed_line(meta, counts) or ("" if n_kernels else meta.gpu_activity_missing),
    )


def _stats(rows: dict[str, list[int]], cols: list[str], schema: dict, top: int | None = None) -> pd.DataFrame:
    if not rows:
        return empty_frame(schema)
    out = pd.DataFrame([[n, *v] for n, v in rows.items()], columns=["name", *cols])
    out["name"] = out["name"].astype(object)
    out = out.sort_values([cols[-1] if schema is not NVTX_STATS else "sum_ns", "name"], ascending=[False, True])
    out = out.head(top) if top is not None else out
    return conform(out.reset_index(drop=True), schema)
