"""Table rows for kernels, CUDA API calls and NVTX ranges (from event frames or a Summary)."""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd

from dashboard.analysis.categories import categorize
from dashboard.analysis.intervals import PART_ROWS
from dashboard.analysis.kernel_times import kernel_durations, kernel_durations_at, kernel_end_ns, usable_kernel_mask
from dashboard.analysis.ratio import share_pct
from dashboard.model import Summary

# CUDA-version suffix (_v7000) and per-thread default-stream variants (_ptsz, _ptds), in any order at the end.
_API_SUFFIX = re.compile(r"(?:_v\d{4,5}|_pt(?:sz|ds))+$")
API_FAMILIES = ("launch", "sync", "memcpy", "memset", "graph", "other")
# First match wins: cudaGraphLaunch launches work (launch), cudaGraphInstantiate builds a graph (graph).
_API_FAMILY_RULES = (
    ("launch", re.compile(r"Launch")),
    ("sync", re.compile(r"Synchronize|WaitEvent|StreamWait|Query$")),
    ("memcpy", re.compile(r"Memcpy|MemPrefetch")),
    ("memset", re.compile(r"Memset")),
    (
        "graph",
        re.compile(
            r"Graph|StreamBeginCapture|StreamEndCapture|StreamGetCaptureInfo|StreamIsCapturing|"
            r"ThreadExchangeStreamCaptureMode"
        ),
    ),
)
# PyTorch emit_nvtx appends per-call fields: "aten::mul, seq = 12, op_id = 317126, sizes = [[8, 8], []]".
_NVTX_PER_CALL = re.compile(r",\s*(?:seq|op_id|sizes|input_op_ids|stream)\s*=")

KERNEL_TABLE: dict[str, str] = {
    "name": "object",  # short name
    "full_name": "object",  # demangled name of the most frequent instance ("" if unknown)
    "count": "int64",
    "total_ns": "int64",
    "mean_ns": "float64",
    "kernel_pct": "Float64",  # % of kernel time: total_ns / Σ total_ns of all rows * 100 (sums to 100); NA
    # when the total is unknown (a summary JSON lists its top kernels only) or 0
    "category": "object",  # from dashboard/rules/kernel_categories.toml
    "rule": "object",  # the rule that matched ("" for other)
}
API_TABLE: dict[str, str] = {
    "name": "object",  # cleaned (clean_api_name): version and per-thread-stream suffixes folded
    "raw_name": "object",  # the raw names folded into this row, comma-separated, as recorded
    "family": "object",  # api_family: launch, sync, memcpy, memset, graph or other
    "count": "int64",
    "total_ns": "int64",  # summed across threads: not wall time
    "mean_ns": "float64",
}
NVTX_TABLE: dict[str, str] = {
    "name": "object",
    "count": "int64",
    "sum_ns": "int64",
    "union_ns": "int64",
    "gpu_overlap_ns": "int64",
    "overlap_pct": "Float64",  # gpu_overlap_ns / union_ns * 100; NA ("n/a") when union_ns is 0
}


@functools.lru_cache(maxsize=8192)  # a few hundred distinct names per trace, looked up per call row
def clean_api_name(name: str) -> str:
    """The dashboard's name of a CUDA API call: the raw callback name without its CUDA-version suffix
    (``_vNNNN``/``_vNNNNN``) and per-thread default-stream suffix (``_ptsz``/``_ptds``), so the variants
    of one call fold into one row. Driver names that really end in ``_v2``/``_v3`` keep it. (The
    seed-format summary keeps raw names.)

    Example:
        >>> clean_api_name("cudaLaunchKernel_ptsz_v7000"), clean_api_name("cuGetProcAddress_v2")
        ('cudaLaunchKernel', 'cuGetProcAddress_v2')
    """
    return _API_SUFFIX.sub("", name)


def api_family(name: str) -> str:
    """Family of a CUDA API call (raw or cleaned name): ``launch`` (kernel and graph launches),
    ``sync`` (synchronize, stream/event waits and queries), ``memcpy``, ``memset``, ``graph``
    (capture, instantiate, update: building graphs) or ``other``.

    Example:
        >>> api_family("cudaGraphLaunch_v10000"), api_family("cudaStreamSynchronize_v3020")
        ('launch', 'sync')
    """
    for family, rule in _API_FAMILY_RULES:
        if rule.search(name):
            return family
    return "other"


def normalize_nvtx_name(name: str) -> str:
    """NVTX name without per-call fields, so unique-per-call names group by operation.

    Example:
        >>> normalize_nvtx_name("aten::mul, seq = 5, op_id = 317126"), normalize_nvtx_name("PLE_CPU_gather")
        ('aten::mul', 'PLE_CPU_gather')
    """
    m = _NVTX_PER_CALL.search(name)
    return name[: m.start()].rstrip() if m and m.start() > 0 else name


def group_nvtx_stats(stats: pd.DataFrame) -> pd.DataFrame:
    """Merge NVTX_STATS rows by normalised name when no intervals are available (summary input).

    count and sum_ns add exactly; union_ns and gpu_overlap_ns become sums of the per-name
    values, an upper bound of the merged union (instances of different names may overlap).
    """
    if stats.empty:
        return stats
    g = stats.assign(name=[normalize_nvtx_name(n) for n in stats["name"]]).groupby("name", sort=False)
    out = g[["count", "sum_ns", "union_ns", "gpu_overlap_ns"]].sum().reset_index()
    return out.sort_values(["sum_ns", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _mean(total: pd.Series, count: pd.Series) -> pd.Series:
    return (total / count.where(count > 0)).fillna(0.0).astype("float64")


GRAPH_CATEGORY = "CUDA graph"


def graph_rows(graph_launches: pd.DataFrame | None) -> pd.DataFrame:
    """CUDA graphs traced at graph level as opaque kernel-table rows, one per graph id:
    name ``"CUDA graph 7"``, count = launches, total_ns = Σ launch durations (ns).

    Returns:
        Frame (name, full_name, count, total_ns), sorted by graph id; empty without launches.
    """
    if graph_launches is None or graph_launches.empty:
        return pd.DataFrame(
            {
                "name": pd.Series([], dtype=object),
                "full_name": pd.Series([], dtype=object),
                "count": pd.Series([], dtype="int64"),
                "total_ns": pd.Series([], dtype="int64"),
            }
        )
    dur = (graph_launches["end_ns"] - graph_launches["start_ns"]).clip(lower=0)
    g = dur.groupby(graph_launches["graph_id"].to_numpy()).agg(["size", "sum"]).sort_index()
    return pd.DataFrame(
        {
            "name": [f"CUDA graph {int(i)}" for i in g.index],
            "full_name": "graph-level trace: the graph's kernels are not itemised",
            "count": g["size"].to_numpy(np.int64),
            "total_ns": g["sum"].to_numpy(np.int64),
        }
    )


def _codes_and_names(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, names)``: an int code per row and the name string of each code, where a missing value
    is the name "nan" (what ``astype(str)`` made of it); ``names[codes]`` gives the rows' strings."""
    if isinstance(values.dtype, pd.CategoricalDtype):  # the loaders' frames: their small codes, no hashing
        codes, uniques = values.cat.codes.to_numpy(), values.cat.categories
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    names = np.array([str(u) for u in np.asarray(uniques, dtype=object)] + ["nan"], dtype=object)
    if (codes < 0).any():
        codes = np.where(codes < 0, len(names) - 1, codes)
    return codes, names


def _kernel_counts(
    kernels: pd.DataFrame, key: np.ndarray, keys: int, full: np.ndarray, fulls: int, part_rows: int = PART_ROWS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(per key: k, count, timed, total_ns; per (key, full name) pair: k, f, n)`` for integer codes ``key`` (of
    ``keys``) and ``full`` (of ``fulls``) per kernel row, keys and pairs in order of first appearance (``timed``:
    the rows with usable times, which ``total_ns`` sums). Counted by bincounts and exact int64 sums a part of the
    rows at a time: 10M kernels never make a grouping index or a duration column of every row."""
    usable = usable_kernel_mask(kernels)
    count = np.zeros(keys, np.int64)
    timed = np.zeros(keys, np.int64)
    total = np.zeros(keys, np.int64)
    per_full = np.zeros(fulls, np.int64)
    first_key = np.full(keys, len(key), np.int64)
    key_of_full = np.full(fulls, -1, np.int64)
    one_key_per_full = True  # the short name is a function of the demangled one (always so in nsys exports)
    for a in range(0, len(key), part_rows):
        k, f = key[a : a + part_rows], full[a : a + part_rows]
        count += np.bincount(k, minlength=keys)
        timed += np.bincount(k[usable[a : a + part_rows]], minlength=keys)
        np.add.at(total, k, kernel_durations_at(kernels, slice(a, a + part_rows)))
        per_full += np.bincount(f, minlength=fulls)
        np.minimum.at(first_key, k, np.arange(a, a + len(k)))
        if one_key_per_full:
            seen = key_of_full[f]
            fresh = seen < 0
            key_of_full[f[fresh]] = k[fresh]
            one_key_per_full = bool((key_of_full[f] == k).all())
    ks = np.flatnonzero(count)
    ks = ks[np.argsort(first_key[ks], kind="stable")]
    out = pd.DataFrame({"k": ks, "count": count[ks], "timed": timed[ks], "total_ns": total[ks]})
    if one_key_per_full:
        fs = np.flatnonzero(per_full)
        pairs = pd.DataFrame({"k": key_of_full[fs], "f": fs, "n": per_full[fs]})
    else:  # a short name shared across full names both ways: count the pairs themselves
        pairs = pd.DataFrame({"k": key, "f": full}).groupby(["k", "f"], sort=False).size().reset_index(name="n")
    return out, pairs


def longest_instances(kernels: pd.DataFrame, by: str = "short") -> pd.DataFrame:
    """The longest instance of each kernel name (short name, or demangled with ``by="full"``) among the rows that
    count for span and busy (never an invalid row: a click zooms to it): frame indexed by name with ``s``, ``e``
    (start and overrun-clipped end, ns) and ``dur``. Of equally long instances, the first in row order.

    One grouped pass over name codes (10M kernels: no sort of every row, no per-row string)."""
    ok = usable_kernel_mask(kernels)
    key = kernels["name"] if by == "full" else kernels["short_name"]
    if isinstance(key.dtype, pd.CategoricalDtype):  # the loaders' frames: a part of the rows at a time
        return _longest_by_codes(kernels, key.cat.codes.to_numpy(), key.cat.categories, np.asarray(ok))
    codes, names = pd.factorize(key[ok], sort=False)
    dur = pd.Series(kernel_durations(kernels).to_numpy()[ok])
    rows = dur.groupby(codes, sort=False).idxmax()  # the first row of the largest duration, per code (-1: dropped)
    rows = rows[rows.index >= 0]
    pos = np.flatnonzero(ok)[rows.to_numpy()]
    return pd.DataFrame(
        {
            "s": kernels["start_ns"].to_numpy()[pos],
            "e": kernel_end_ns(kernels)[pos],
            "dur": dur.to_numpy()[rows.to_numpy()],
        },
        index=pd.Index(np.asarray(names, dtype=object)[rows.index.to_numpy()]).astype(str),
    )


def _longest_by_codes(
    kernels: pd.DataFrame, codes: np.ndarray, names, ok: np.ndarray, part_rows: int = PART_ROWS
) -> pd.DataFrame:
    """``longest_instances`` for name codes per row (-1: no name, left out): per code the longest duration and
    the first row holding it, kept over parts of the rows (10M kernels: no duration column or grouping of
    every row); names in order of their first usable row."""
    n = len(names)
    best = np.full(n, -1, np.int64)  # durations are >= 0
    best_row = np.zeros(n, np.int64)
    first_row = np.full(n, len(codes), np.int64)
    for a in range(0, len(codes), part_rows):
        rows = a + np.flatnonzero(ok[a : a + part_rows])
        c = codes[rows]
        named = c >= 0
        rows, c = rows[named], c[named]
        d = kernel_durations_at(kernels, rows)
        most = np.full(n, -1, np.int64)
        np.maximum.at(most, c, d)
        top = d == most[c]
        at = np.full(n, len(codes), np.int64)
        np.minimum.at(at, c[top], rows[top])
        better = most > best  # a tie keeps the earlier part's row
        best[better], best_row[better] = most[better], at[better]
        np.minimum.at(first_row, c, rows)
    found = np.flatnonzero(best >= 0)
    found = found[np.argsort(first_row[found], kind="stable")]
    pos = best_row[found]
    return pd.DataFrame(
        {"s": kernels["start_ns"].to_numpy()[pos], "e": kernel_end_ns(kernels)[pos], "dur": best[found]},
        index=pd.Index(np.asarray(names, dtype=object)[found]).astype(str),
    )


def kernel_table(
    kernels: pd.DataFrame | None, summary: Summary, by: str = "short", graph_launches: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Kernels grouped by short name (``by="short"``) or by demangled name (``by="full"``: every
    template instance apart), sorted by total time descending (ties: name).

    Uses all kernels when the event frame is given, else the summary's top kernels (short names
    only: a summary has no demangled names). With ``graph_launches`` (graph-level CUDA graph
    tracing, when the busy source counts graphs), each graph adds an opaque row (``graph_rows``,
    category ``GRAPH_CATEGORY``).

    Returns:
        KERNEL_TABLE frame. Kernel times use clipped overrun ends (``kernel_times.kernel_durations``).
        ``kernel_pct`` is the row's share of the table's total kernel time (sums to 100 %);
        ``category`` and ``rule`` come from the kernel category rules (short name, then demangled name).
    """
    complete = kernels is not None
    if kernels is not None and not kernels.empty:
        key = kernels["name"] if by == "full" else kernels["short_name"]
        # Grouped by integer codes, not strings: a string per row (2M kernels) cost 0.5 GB at peak. A missing
        # name is the group "nan", as its string was.
        key_codes, key_names = _codes_and_names(key)
        full_codes, full_names = _codes_and_names(kernels["name"])
        out, pairs = _kernel_counts(kernels, key_codes, len(key_names), full_codes, len(full_names))
        pairs["full"] = full_names[pairs["f"].to_numpy()]
        commonest = pairs.sort_values(["n", "full"], ascending=[False, True], kind="stable").drop_duplicates("k")
        out["name"] = key_names[out["k"].to_numpy()]
        out["full_name"] = out["k"].map(dict(zip(commonest["k"], commonest["full"]))).fillna("")
        out = out.drop(columns="k")
    elif kernels is not None:
        out = pd.DataFrame(
            {
                "name": pd.Series([], dtype=object),
                "count": pd.Series([], dtype="int64"),
                "total_ns": pd.Series([], dtype="int64"),
                "full_name": pd.Series([], dtype=object),
            }
        )
    else:
        out = summary.top_kernels.copy()
        out["full_name"] = ""
    cats = [categorize(n, f) for n, f in zip(out["name"], out["full_name"])]
    out["category"] = [c for c, _ in cats]
    out["rule"] = [r for _, r in cats]
    # The mean of the rows whose times count: an invalid row (no usable time) is in the count, not in the total.
    out["mean_ns"] = _mean(out["total_ns"], out["timed"] if "timed" in out else out["count"])
    graphs = graph_rows(graph_launches)
    if len(graphs):
        graphs["category"] = GRAPH_CATEGORY
        graphs["rule"] = "CUDA graph traced at graph level: one opaque row per graph"
        graphs["mean_ns"] = _mean(graphs["total_ns"], graphs["count"])
        out = pd.concat([out[graphs.columns], graphs], ignore_index=True)
    total = int(out["total_ns"].sum())
    out["kernel_pct"] = pd.array(
        [100.0 * t / total if complete and total > 0 else None for t in out["total_ns"]], dtype="Float64"
    )
    out = out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable")
    return out[list(KERNEL_TABLE)].astype(KERNEL_TABLE).reset_index(drop=True)


def api_table(summary: Summary, by: str = "name") -> pd.DataFrame:
    """CUDA API calls per cleaned name (``by="name"``, ``clean_api_name``) or per family
    (``by="family"``, ``api_family``), from the summary's per-raw-name counts.

    Returns:
        API_TABLE frame sorted by total_ns descending, then name. ``raw_name`` lists the raw names
        folded into the row (most time first); for a family row, ``name`` is the family.
    """
    api = summary.api
    raw = api["name"].astype(str)
    clean = [clean_api_name(n) for n in raw]
    df = pd.DataFrame(
        {
            "name": clean,
            "raw_name": raw.to_numpy(object),
            "family": [api_family(n) for n in clean],
            "count": api["count"].to_numpy(np.int64),
            "total_ns": api["total_ns"].to_numpy(np.int64),
        }
    )
    if by == "family":
        df["name"] = df["family"]
    elif by != "name":
        raise ValueError(f"api_table: by must be 'name' or 'family', got {by!r}")
    df = df.sort_values(["total_ns", "raw_name"], ascending=[False, True], kind="stable")
    g = df.groupby("name", sort=False)
    out = pd.DataFrame(
        {
            "raw_name": g["raw_name"].agg(", ".join),
            "family": g["family"].first(),
            "count": g["count"].sum(),
            "total_ns": g["total_ns"].sum(),
        }
    ).reset_index()
    out["mean_ns"] = _mean(out["total_ns"], out["count"])
    out = out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable")
    return out[list(API_TABLE)].astype(API_TABLE).reset_index(drop=True)


def nvtx_table(summary: Summary, stats: pd.DataFrame | None = None) -> pd.DataFrame:
    """NVTX ranges per name with overlap percentage (NVTX_TABLE, sum descending).

    Args:
        stats: NVTX_STATS rows to show instead of the summary's (e.g. grouped by normalised name).
    """
    out = (summary.nvtx if stats is None else stats).copy()
    out["overlap_pct"] = pd.array(
        [share_pct(o, u) for o, u in zip(out["gpu_overlap_ns"], out["union_ns"])], dtype="Float64"
    )
    out = out.sort_values(["sum_ns", "name"], ascending=[False, True], kind="stable")
    return out[list(NVTX_TABLE)].astype(NVTX_TABLE).reset_index(drop=True)
