"""The six CUDA rules of ``nsys analyze`` (Nsight Systems 2022.4 expert system), on loaded frames.

Same rule ids, parameters, defaults and rows as NVIDIA's rule scripts (``rules/*.py`` with
``python/lib/gpustats.py``), so ``tracedash findings --rule gpu-starv`` and
``nsys analyze --rule gpu-starv`` list the same rows (tests/test_findings_golden.py compares them
with ``nsys analyze`` 2022.4 output row for row). Times are integer ns on the session timeline.

Where tracedash differs on purpose (documented in docs/findings.md, asserted in the golden test):

* CUDA backtrace duplicates of an API call (``eventClass = 67``) are not loaded, so the memcpy
  rules give one row per copy where nsys joins the copy to both API rows (two rows).
* A GPU operation joins its API call on correlation id **and process** (nsys joins on correlation
  id only; in a multi-process capture that can pair a copy with another process's call).
* ``PROFILER_OVERHEAD`` rows are not GPU operations here (nsys adds three CUDA overhead kinds,
  none present in the shared traces), and empty chunks of ``gpu-low-util`` stay per GPU and
  process (nsys's LEFT JOIN groups empty chunks of several GPUs with the same index together).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import PART_ROWS, is_sorted
from dashboard.model import TraceBundle

# Row frames (column -> dtype), as the rules report them.
GAP_ROWS: dict[str, str] = {
    "duration_ns": "int64",
    "start_ns": "int64",
    "pid": "int64",
    "device_id": "int64",
    "context_id": "int64",
}
LOW_UTIL_ROWS: dict[str, str] = {
    "in_use_pct": "float64",
    "duration_ns": "int64",
    "start_ns": "int64",
    "pid": "int64",
    "device_id": "int64",
    "context_id": "int64",
}
SYNC_API_ROWS: dict[str, str] = {
    "duration_ns": "int64",
    "start_ns": "int64",
    "pid": "int64",
    "tid": "int64",
    "api_name": "object",
}
MEMCPY_ROWS: dict[str, str] = {
    "duration_ns": "int64",
    "start_ns": "int64",
    "src_kind": "object",
    "dst_kind": "object",
    "bytes": "int64",
    "pid": "int64",
    "device_id": "int64",
    "context_id": "int64",
    "stream_id": "int64",
    "api_name": "object",
}
MEMSET_ROWS: dict[str, str] = {
    "duration_ns": "int64",
    "start_ns": "int64",
    "dst_kind": "object",
    "bytes": "int64",
    "pid": "int64",
    "device_id": "int64",
    "context_id": "int64",
    "stream_id": "int64",
    "api_name": "object",
}

DEFAULT_GAP_MS = 500  # gpu-starv (nsys default)
DEFAULT_THRESHOLD_PCT = 50  # gpu-low-util
DEFAULT_CHUNKS = 30  # gpu-low-util
SMALL_HTOD_BYTES = 64 * 1024  # cuda-sync-memcpy leaves out host-to-device copies of 64 KiB or less

# SQL LIKE patterns of the rule scripts as regular expressions (LIKE is case-insensitive in SQLite).
_SYNC_API = re.compile(r"^(cudaDeviceSynchronize|cudaStreamSynchronize)", re.IGNORECASE)
_MEMCPY_SYNC_API = re.compile(r"^cudaMemcpy(?!.*async)", re.IGNORECASE)
_MEMCPY_ASYNC_API = re.compile(r"^cudaMemcpy.*Async", re.IGNORECASE)
_MEMSET_SYNC_API = re.compile(r"^cudaMemset(?!.*async)", re.IGNORECASE)
# The same kinds of call under CUDA driver-API names (``cuMemcpyHtoDAsync_v2``, ``cuMemsetD32_v2``: OpenMP/OpenACC
# offload runtimes, Julia and CUDA-Q call the driver directly) and HIP names (``hipMemcpyAsync``, a ROCm Kineto
# trace), which the rules above do not read (nsys reads CUDA runtime names only). tracedash's own rules read
# them all; the nsys rules' findings name what they skip.
OTHER_MEMCPY_SYNC_API = re.compile(r"^(cu|hip)Memcpy(?!.*async)", re.IGNORECASE)
OTHER_MEMCPY_ASYNC_API = re.compile(r"^(cu|hip)Memcpy.*Async", re.IGNORECASE)
OTHER_MEMSET_SYNC_API = re.compile(r"^(cu|hip)Memset(?!.*async)", re.IGNORECASE)
NSYS_SYNC_API = _SYNC_API  # the synchronisation calls cuda-sync-api reads


@dataclass(frozen=True)
class Param:
    """A rule parameter: name, default, unit, lowest and highest allowed value, help text."""

    name: str
    default: int
    unit: str
    low: int
    high: int
    help: str
    integer: bool = False  # only whole numbers allowed


NSYS_RULE_PARAMS: dict[str, tuple[Param, ...]] = {
    "gpu-starv": (Param("gap", DEFAULT_GAP_MS, "ms", 0, 10**9, "minimum idle gap reported, in ms"),),
    "gpu-low-util": (
        Param("threshold", DEFAULT_THRESHOLD_PCT, "%", 0, 10**6, "chunks under this in-use % are reported"),
        Param("chunks", DEFAULT_CHUNKS, "", 1, 1000, "equal chunks per GPU and process", integer=True),
    ),
    "cuda-sync-api": (),
    "cuda-sync-memcpy": (),
    "cuda-sync-memset": (),
    "cuda-async-memcpy": (),
}


def _frame(rows: dict[str, list], schema: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(rows.get(c, []), dtype=t) for c, t in schema.items()})


def gpu_ops(bundle: TraceBundle) -> pd.DataFrame:
    """GPU operations as the nsys rules see them: kernels, memcpy and memset rows with ``start > 0``.

    Returns:
        Frame (start_ns, end_ns, pid, device_id, context_id), times int64, ids in the frames' integer dtype
        (int32 from the loaders: a trace keeps this frame), kernels first then memops, each in file order.
        Kernels with an invalid time (start -1) are left out.
    """
    k, m = bundle.kernels, bundle.memops
    cols = ("start_ns", "end_ns", "pid", "device_id", "context_id")

    def column(c: str) -> np.ndarray:
        kc = k[c].to_numpy(np.int64) if c.endswith("_ns") else _ids(k[c])
        if not len(m):
            return kc
        mc = m[c].to_numpy(np.int64) if c.endswith("_ns") else _ids(m[c])
        return np.concatenate([kc, mc])  # numpy promotes to the wider of the two id dtypes

    arrays = {c: column(c) for c in cols}
    keep = arrays["start_ns"] > 0
    if not keep.all():
        arrays = {c: v[keep] for c, v in arrays.items()}
    return pd.DataFrame(arrays, copy=False)


def _ids(col: pd.Series) -> np.ndarray:
    """An id column as a numpy integer array, without a copy when it already is one."""
    a = col.to_numpy()
    return a if a.dtype.kind in "iu" else col.to_numpy(np.int64)


def _groups(ops: pd.DataFrame):
    """(pid, device_id, row positions) per process and GPU of ``ops``, sorted by (pid, device_id)."""
    pid, dev = ops["pid"].to_numpy(), ops["device_id"].to_numpy()
    if len(pid) == 0:
        return []
    if (pid == pid[0]).all() and (dev == dev[0]).all():
        return [(int(pid[0]), int(dev[0]), slice(None))]
    codes, uniq = pd.factorize(pd.MultiIndex.from_arrays([pid, dev]))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniq) + 1))
    groups = [(int(uniq[i][0]), int(uniq[i][1]), order[bounds[i] : bounds[i + 1]]) for i in range(len(uniq))]
    return sorted(groups, key=lambda g: (g[0], g[1]))


def _sorted(a: np.ndarray) -> np.ndarray:
    """``np.sort(a)``, or ``a`` itself when it is in order already (10M operations: no 80 MB copy)."""
    return a if is_sorted(a) else np.sort(a)


def _sums_before(values: np.ndarray, lo: int, edges: list[int]) -> dict[int, tuple[int, int]]:
    """Per edge x (increasing): (how many of the sorted ``values`` are < x, Σ (v − lo) over them), summed
    between consecutive edges: exact Python ints, no prefix-sum array of every value."""
    out, count, total = {}, 0, 0
    for x, i in zip(edges, np.searchsorted(values, edges, side="left").tolist()):
        if i > count:
            total += int((values[count:i] - lo).sum())
            count = i
        out[x] = (count, total)
    return out


def _gaps_over(starts: np.ndarray, ends: np.ndarray, threshold: int, part: int = PART_ROWS) -> np.ndarray:
    """Positions k where ``starts[k + 1] - ends[k] > threshold``, a part at a time (no 10M-row difference array)."""
    n = len(starts) - 1
    found = [
        np.flatnonzero(starts[a + 1 : min(a + part, n) + 1] - ends[a : min(a + part, n)] > threshold) + a
        for a in range(0, max(n, 0), part)
    ]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def gpu_starvation(ops: pd.DataFrame, *, gap_ms: int = DEFAULT_GAP_MS) -> pd.DataFrame:
    """``gpu-starv``: idle gaps of one GPU within one process longer than ``gap_ms``.

    As nsys: per (pid, device), the k-th operation end (ends sorted) and the (k+1)-th start
    (starts sorted) bound a gap when the start is later; gaps longer than ``gap_ms`` ms (strictly)
    are kept. The context id is that of the operation whose end opens the gap.

    Args:
        ops: frame from ``gpu_ops``.

    Returns:
        GAP_ROWS frame sorted by duration descending, then start.
    """
    threshold = round(gap_ms * 1_000_000)  # ms may be fractional (nsys takes whole ms)
    out: dict[str, list] = {c: [] for c in GAP_ROWS}
    if ops.empty:
        return _frame(out, GAP_ROWS)
    for pid, dev, rows in _groups(ops):
        starts = _sorted(ops["start_ns"].to_numpy(np.int64)[rows])
        e = ops["end_ns"].to_numpy(np.int64)[rows]
        order = None if is_sorted(e) else np.argsort(e, kind="stable")  # usually in order already: no copies
        ends = e if order is None else e[order]
        keep = _gaps_over(starts, ends, threshold)
        ctx = ops["context_id"].to_numpy()[rows]  # of the operation whose end opens each kept gap
        out["duration_ns"] += (starts[1:][keep] - ends[:-1][keep]).tolist()
        out["start_ns"] += ends[:-1][keep].tolist()
        out["pid"] += [int(pid)] * len(keep)
        out["device_id"] += [int(dev)] * len(keep)
        out["context_id"] += ctx[keep if order is None else order[keep]].astype(np.int64).tolist()
    f = _frame(out, GAP_ROWS)
    return f.sort_values(["duration_ns", "start_ns"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _sqlite_round1(x: float) -> float:
    """SQLite's ``round(x, 1)`` (its printf adds half a unit of the last digit, then truncates)."""
    return math.floor(x * 10 + 0.5 + 1e-9) / 10 if x >= 0 else -math.floor(-x * 10 + 0.5 + 1e-9) / 10


def gpu_low_utilization(
    ops: pd.DataFrame, *, threshold: int = DEFAULT_THRESHOLD_PCT, chunks: int = DEFAULT_CHUNKS
) -> pd.DataFrame:
    """``gpu-low-util``: chunks of each GPU's active window with GPU time under ``threshold`` %.

    As nsys: per (device, pid) the window [first op start, last op end] is cut into ``chunks``
    chunks of ``ceil(window / chunks)`` ns (the last one clipped to the window's end). A chunk's
    in-use % is the sum over operations of their time inside the chunk divided by the chunk's
    length (concurrent operations add up, so it can exceed 100 %). Chunks under ``threshold``
    (strictly) are kept; consecutive kept chunks are merged into one row whose in-use % is the
    length-weighted mean, rounded to 0.1 as SQLite's ``round``.

    Returns:
        LOW_UTIL_ROWS frame sorted by in_use_pct, then duration.

    Raises:
        ValueError: chunks outside 1..1000 (as nsys).
    """
    if not 1 <= int(chunks) <= 1000:
        raise ValueError(f"chunks must be between 1 and 1000, got {chunks}")
    out: dict[str, list] = {c: [] for c in LOW_UTIL_ROWS}
    for pid, dev, rows in _groups(ops):
        s = _sorted(ops["start_ns"].to_numpy(np.int64)[rows])
        e = _sorted(ops["end_ns"].to_numpy(np.int64)[rows])
        lo, hi = int(s[0]), int(e[-1])
        size = math.ceil(float(hi - lo) / chunks)
        ctx = int(ops["context_id"].to_numpy()[rows][0])
        # Operation time before x (overlaps summed, not a union): F(x) = Σ_{s<x} (x − s) − Σ_{e<x} (x − e),
        # from the sorted starts' and ends' counts and sums before each chunk edge; a chunk's op time is
        # F(ce) − F(cs).
        edges = sorted({min(i * size + lo, hi) for i in range(int(chunks) + 1)})
        before_s, before_e = _sums_before(s, lo, edges), _sums_before(e, lo, edges)

        def busy_before(x: int, lo=lo, before_s=before_s, before_e=before_e) -> int:  # this chunk's sums
            (ns_, sum_s), (ne_, sum_e) = before_s[x], before_e[x]
            return ns_ * (x - lo) - sum_s - (ne_ * (x - lo) - sum_e)

        kept = []  # (chunk index, start, end, pct)
        for i in range(int(chunks)):
            cs = i * size + lo
            ce = min(cs + size, hi)
            if not cs < ce:
                continue
            pct = float(busy_before(ce) - busy_before(cs)) / (ce - cs) * 100
            if pct < threshold:
                kept.append((i, cs, ce, pct))
        run: list = []
        for item in kept + [None]:
            if run and (item is None or item[0] != run[-1][0] + 1):
                rs, re_ = run[0][1], run[-1][2]
                weighted = sum((c[2] - c[1]) * c[3] for c in run) / sum(c[2] - c[1] for c in run)
                out["in_use_pct"].append(_sqlite_round1(weighted))
                out["duration_ns"].append(int(re_ - rs))
                out["start_ns"].append(int(rs))
                out["pid"].append(int(pid))
                out["device_id"].append(int(dev))
                out["context_id"].append(ctx)
                run = []
            if item is not None:
                run.append(item)
    f = _frame(out, LOW_UTIL_ROWS)
    return f.sort_values(["in_use_pct", "duration_ns"], kind="stable").reset_index(drop=True)


def _api_names(api_calls: pd.DataFrame) -> np.ndarray:
    return api_calls["name"].astype(str).to_numpy(dtype=object)


def cuda_sync_api(api_calls: pd.DataFrame) -> pd.DataFrame:
    """``cuda-sync-api``: every ``cudaDeviceSynchronize*`` / ``cudaStreamSynchronize*`` call.

    Returns:
        SYNC_API_ROWS frame (api_name raw, e.g. ``cudaStreamSynchronize_v3020``), sorted by
        duration descending, then start.
    """
    if api_calls.empty:
        return _frame({}, SYNC_API_ROWS)
    cats = api_calls["name"].astype("category")
    hit_codes = [i for i, n in enumerate(cats.cat.categories) if _SYNC_API.match(str(n))]
    a = api_calls[np.isin(cats.cat.codes.to_numpy(), hit_codes)]
    f = pd.DataFrame(
        {
            "duration_ns": a["end_ns"] - a["start_ns"],
            "start_ns": a["start_ns"],
            "pid": a["pid"],
            "tid": a["tid"],
            "api_name": a["name"].astype(str).to_numpy(dtype=object),
        }
    )
    return (
        f.astype(SYNC_API_ROWS)
        .sort_values(["duration_ns", "start_ns"], ascending=[False, True], kind="stable")
        .reset_index(drop=True)
    )


def _join_api(ops: pd.DataFrame, api_calls: pd.DataFrame, pattern: re.Pattern) -> pd.DataFrame:
    """``ops`` rows whose issuing API call (same correlation id and process) has a name matching ``pattern``,
    with that name as ``api_name``."""
    if ops.empty or api_calls.empty:
        return ops.iloc[:0].assign(api_name=pd.Series([], dtype=object))
    cats = api_calls["name"].astype("category")
    hit_codes = [i for i, n in enumerate(cats.cat.categories) if pattern.match(str(n))]
    a = api_calls[np.isin(cats.cat.codes.to_numpy(), hit_codes)]
    a = pd.DataFrame(
        {
            "correlation_id": a["correlation_id"].to_numpy(np.int64),
            "pid": a["pid"].to_numpy(np.int64),
            "api_name": a["name"].astype(str).to_numpy(dtype=object),
        }
    )
    return ops.merge(a, on=["correlation_id", "pid"], how="inner")


def _memcpy_rows(m: pd.DataFrame) -> pd.DataFrame:
    if m.empty:
        return _frame({}, MEMCPY_ROWS)
    f = pd.DataFrame(
        {
            "duration_ns": m["end_ns"] - m["start_ns"],
            "start_ns": m["start_ns"],
            "src_kind": m["src_kind"].astype(str),
            "dst_kind": m["dst_kind"].astype(str),
            "bytes": m["bytes"],
            "pid": m["pid"],
            "device_id": m["device_id"],
            "context_id": m["context_id"],
            "stream_id": m["stream_id"],
            "api_name": m["api_name"],
        }
    )
    return (
        f.astype(MEMCPY_ROWS)
        .sort_values(["duration_ns", "start_ns"], ascending=[False, True], kind="stable")
        .reset_index(drop=True)
    )


def _memcpys(memops: pd.DataFrame) -> pd.DataFrame:
    return memops[column_is(memops, "kind", lambda v: v.startswith("memcpy"))]


def column_is(frame: pd.DataFrame, column: str, values) -> np.ndarray:
    """Rows whose categorical ``column`` is one of ``values`` (or, for a callable, whose value passes it),
    tested once per category, not per row."""
    col = frame[column]
    cats = col.cat.categories if isinstance(col.dtype, pd.CategoricalDtype) else None
    if cats is None:
        col = col.astype("category")
        cats = col.cat.categories
    test = values if callable(values) else (lambda v: v in values)
    ok = [i for i, c in enumerate(cats) if test(str(c))]
    return np.isin(col.cat.codes.to_numpy(), ok)


def cuda_sync_memcpy(
    memops: pd.DataFrame, api_calls: pd.DataFrame, api_pattern: re.Pattern = _MEMCPY_SYNC_API
) -> pd.DataFrame:
    """``cuda-sync-memcpy``: copies issued by a synchronous ``cudaMemcpy*`` call (no ``Async`` in the
    name) that block the host: all but device-to-device copies (within one device) and
    host-to-device copies of 64 KiB or less (which return before the copy). ``api_pattern``: the calls
    that issue them (default: the nsys rule's runtime names; tracedash's own rules pass driver names too).

    Returns:
        MEMCPY_ROWS frame (times of the copy on the GPU), sorted by duration descending, then start.
    """
    m = _memcpys(memops)
    if m.empty:
        return _frame({}, MEMCPY_ROWS)
    dtod, htod = column_is(m, "kind", {"memcpy DtoD"}), column_is(m, "kind", {"memcpy HtoD"})
    m = m[~(dtod | (htod & (m["bytes"].to_numpy() <= SMALL_HTOD_BYTES)))]
    return _memcpy_rows(_join_api(m, api_calls, api_pattern))


def cuda_async_memcpy(
    memops: pd.DataFrame, api_calls: pd.DataFrame, api_pattern: re.Pattern = _MEMCPY_ASYNC_API
) -> pd.DataFrame:
    """``cuda-async-memcpy``: copies issued by a ``cudaMemcpy*Async*`` call with pageable memory on
    either side, which makes the asynchronous copy synchronous.

    Returns:
        MEMCPY_ROWS frame sorted by duration descending, then start.
    """
    m = _memcpys(memops)
    if m.empty:
        return _frame({}, MEMCPY_ROWS)
    m = m[column_is(m, "src_kind", {"Pageable"}) | column_is(m, "dst_kind", {"Pageable"})]
    return _memcpy_rows(_join_api(m, api_calls, api_pattern))


def cuda_sync_memset(
    memops: pd.DataFrame, api_calls: pd.DataFrame, api_pattern: re.Pattern = _MEMSET_SYNC_API
) -> pd.DataFrame:
    """``cuda-sync-memset``: memsets of pinned or managed memory issued by a synchronous ``cudaMemset*``.

    Returns:
        MEMSET_ROWS frame (``dst_kind``: the set memory's kind), sorted by duration descending, then start.
    """
    m = memops[column_is(memops, "kind", {"memset"})]
    m = m[column_is(m, "dst_kind", {"Pinned", "Managed"})]
    if m.empty:
        return _frame({}, MEMSET_ROWS)
    j = _join_api(m, api_calls, api_pattern)
    f = pd.DataFrame(
        {
            "duration_ns": j["end_ns"] - j["start_ns"],
            "start_ns": j["start_ns"],
            "dst_kind": j["dst_kind"].astype(str),
            "bytes": j["bytes"],
            "pid": j["pid"],
            "device_id": j["device_id"],
            "context_id": j["context_id"],
            "stream_id": j["stream_id"],
            "api_name": j["api_name"],
        }
    )
    return (
        f.astype(MEMSET_ROWS)
        .sort_values(["duration_ns", "start_ns"], ascending=[False, True], kind="stable")
        .reset_index(drop=True)
    )


def run_nsys_rule(
    rule: str, bundle: TraceBundle, params: dict[str, int] | None = None, ops: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Evaluate one ``nsys analyze`` rule by id with ``params`` (defaults filled in).

    Args:
        ops: ``gpu_ops(bundle)`` when already built (shared by gpu-starv and gpu-low-util).

    Raises:
        KeyError: unknown rule id.
    """
    p = {x.name: x.default for x in NSYS_RULE_PARAMS[rule]}
    p.update(params or {})
    if rule == "gpu-starv":
        return gpu_starvation(gpu_ops(bundle) if ops is None else ops, gap_ms=p["gap"])
    if rule == "gpu-low-util":
        return gpu_low_utilization(
            gpu_ops(bundle) if ops is None else ops, threshold=p["threshold"], chunks=p["chunks"]
        )
    if rule == "cuda-sync-api":
        return cuda_sync_api(bundle.api_calls)
    if rule == "cuda-sync-memcpy":
        return cuda_sync_memcpy(bundle.memops, bundle.api_calls)
    if rule == "cuda-sync-memset":
        return cuda_sync_memset(bundle.memops, bundle.api_calls)
    if rule == "cuda-async-memcpy":
        return cuda_async_memcpy(bundle.memops, bundle.api_calls)
    raise KeyError(rule)
