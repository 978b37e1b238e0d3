"""Dispatches and serving phases (prefill / decode) from dispatch marks.

A dispatch mark is an NVTX mark or range start named like
``CG_DISPATCH:actual=1600:mode=NONE:padded=1600`` (summary_contract.md): ``actual`` is the
number of tokens in the batch, ``mode`` the CUDA-graph mode, ``padded`` the token count after
padding. A dispatch lasts from its mark to the next dispatch's mark; the last one lasts to the
end of GPU activity.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

PREFILL = "prefill"
DECODE = "decode"
UNSPLIT = "unsplit"  # one distinct token count and no threshold: nothing to split on
UNKNOWN = "unknown"  # the dispatch name carries no token count
MIXED = "mixed"  # the name says the batch mixes prefill and decode work
# The seed's phases, then a framework's own step phases (analysis.step_presets; never from dispatch marks), so
# every per-phase table (findings, compare) lists those too.
PHASE_ORDER = (PREFILL, DECODE, MIXED, UNSPLIT, UNKNOWN, "idle", "draft", "verify", "step")
_TRUE = {"1", "true", "yes", "y"}

DISPATCHES: dict[str, str] = {
    "index": "int64",
    "start_ns": "int64",
    "end_ns": "int64",
    "duration_ns": "int64",
    "name": "object",
    "tokens": "Int64",
    "mode": "object",
    "padded": "Int64",
    "mixed": "bool",
    "end_estimated": "bool",
}
PHASE_STATS: dict[str, str] = {
    "phase": "object",
    "dispatches": "int64",
    "tokens": "Int64",  # NA when no dispatch of the phase gives a token count (marks without actual=)
    "total_ns": "int64",
    "mean_ns": "float64",
    "p50_ns": "float64",
    "p90_ns": "float64",
    "p99_ns": "float64",
    "tokens_per_s": "float64",
}


def parse_dispatch_name(name: str) -> dict[str, str]:
    """Parse the ``key=value`` fields of a dispatch name (segments separated by ``:``).

    Example:
        >>> parse_dispatch_name("CG_DISPATCH:actual=742:mode=NONE:padded=742")
        {'actual': '742', 'mode': 'NONE', 'padded': '742'}
    """
    fields = {}
    for part in str(name).split(":")[1:]:
        key, sep, value = part.partition("=")
        if sep and key.strip():
            fields[key.strip()] = value.strip()
    return fields


def _to_int(value: str | None) -> int | None:
    """A token count from a name field: a non-negative integer below 2**53, else None."""
    try:
        n = int(value) if value is not None else None
    except ValueError:
        return None
    return n if n is not None and 0 <= n < 2**53 else None


def build_dispatches(timeline: pd.DataFrame, *, end_ns: int | None) -> pd.DataFrame:
    """Turn dispatch marks into dispatch intervals with their parsed fields.

    Args:
        timeline: DISPATCH_MARKS frame (start_ns, name), any order.
        end_ns: end of GPU activity (ns) that closes the last dispatch. When None or not after
            the last mark, the last dispatch gets the median duration of the earlier dispatches
            with the same name (or of all of them) and ``end_estimated`` is True.

    Returns:
        DISPATCHES frame, one row per mark sorted by start_ns: index (0-based), start_ns, end_ns,
        duration_ns, name, tokens (``actual``; nullable), mode, padded (nullable), end_estimated.
    """
    if timeline.empty:
        return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in DISPATCHES.items()})
    tl = timeline.sort_values(["start_ns", "name"], kind="stable").reset_index(drop=True)
    starts = tl["start_ns"].to_numpy(np.int64)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    estimated = np.zeros(len(starts), dtype=bool)
    last_start = int(starts[-1])
    if end_ns is not None and end_ns > last_start:
        ends[-1] = end_ns
    else:
        prior = pd.Series(ends[:-1] - starts[:-1])
        same = prior[tl["name"].iloc[:-1].to_numpy() == tl["name"].iloc[-1]]
        pool = same if len(same) else prior
        ends[-1] = last_start + (int(pool.median()) if len(pool) else 0)
        estimated[-1] = True
    fields = [parse_dispatch_name(n) for n in tl["name"]]
    return pd.DataFrame(
        {
            "index": np.arange(len(tl), dtype=np.int64),
            "start_ns": starts,
            "end_ns": ends,
            "duration_ns": ends - starts,
            "name": tl["name"].astype(object).to_numpy(),
            "tokens": pd.array([_to_int(f.get("actual")) for f in fields], dtype="Int64"),
            "mode": [f.get("mode", "") for f in fields],
            "padded": pd.array([_to_int(f.get("padded")) for f in fields], dtype="Int64"),
            "mixed": np.array([is_mixed(f) for f in fields], dtype=bool),
            "end_estimated": estimated,
        }
    )


def is_mixed(fields: dict[str, str]) -> bool:
    """True when a dispatch name says its batch mixes prefill and decode.

    Recognised: ``mixed=1|true|yes``, ``phase=mixed``, or both a prefill and a decode token
    count above zero (``prefill=N`` / ``num_prefill_tokens=N`` and ``decode=N`` /
    ``num_decode_tokens=N``).

    Example:
        >>> is_mixed({"actual": "512", "prefill": "500", "decode": "12"}), is_mixed({"actual": "3"})
        (True, False)
    """
    if fields.get("mixed", "").lower() in _TRUE or fields.get("phase", "").lower() == MIXED:
        return True
    pre = _to_int(fields.get("prefill", fields.get("num_prefill_tokens")))
    dec = _to_int(fields.get("decode", fields.get("num_decode_tokens")))
    return bool(pre and dec)


def default_threshold(tokens) -> float | None:
    """Default prefill/decode split: the widest gap in log(token count) among distinct counts.

    Returns the geometric mean of the two counts bounding the widest gap (a dispatch is prefill
    when its tokens >= the threshold), or None with fewer than two distinct positive counts.

    Example:
        >>> round(default_threshold([1, 3, 3, 742, 1600]), 2)
        47.18
    """
    values = pd.Series(tokens, dtype="Int64").dropna()
    distinct = np.unique(values[values > 0].to_numpy(np.int64))
    if distinct.size < 2:
        return None
    logs = np.log(distinct.astype(float))
    i = int(np.argmax(np.diff(logs)))
    return math.sqrt(float(distinct[i]) * float(distinct[i + 1]))


def assign_phases(dispatches: pd.DataFrame, threshold: float | None) -> pd.Series:
    """Phase of each dispatch: prefill when tokens >= threshold, else decode.

    Returns:
        Series of phase names aligned with ``dispatches``: ``unknown`` where tokens are missing,
        ``unsplit`` for all when ``threshold`` is None, ``mixed`` where the name says so.
    """
    tokens = dispatches["tokens"]
    if threshold is None:
        phase = np.full(len(dispatches), UNSPLIT, dtype=object)
    else:
        phase = np.where(tokens.fillna(0).to_numpy(np.int64) >= threshold, PREFILL, DECODE).astype(object)
    phase[tokens.isna().to_numpy()] = UNKNOWN
    if "mixed" in dispatches:
        phase[dispatches["mixed"].to_numpy(bool)] = MIXED
    return pd.Series(phase, index=dispatches.index, name="phase")


def phase_stats(dispatches: pd.DataFrame, phases: pd.Series, whole: np.ndarray | None = None) -> pd.DataFrame:
    """Per-phase step statistics.

    Args:
        dispatches: DISPATCHES rows (for a window: ``window.clip_dispatches``, cut at its edges).
        phases: phase per row, aligned with ``dispatches``.
        whole: for a window, which rows are whole steps (not cut by its edges); None: all are.
            A step cut by a window edge is not a step time: the step-time statistics (mean, p50,
            p90, p99) and tokens/s are then of the whole steps only (NaN, "n/a", for a phase
            without one), while dispatches, tokens and total time count every step in the window
            (cut steps by their time inside it).

    Returns:
        PHASE_STATS frame, one row per phase present, in PHASE_ORDER: dispatches, tokens (sum
        of ``actual``; NA when no dispatch of the phase gives one), total_ns (sum of dispatch durations), mean_ns,
        p50_ns and p90_ns of the
        duration (numpy linear percentiles), p99_ns, tokens_per_s = tokens / total seconds (NaN, "n/a",
        when the total is 0 or tokens are NA).
    """
    rows = []
    whole = np.ones(len(dispatches), dtype=bool) if whole is None else np.asarray(whole, dtype=bool)
    for phase in PHASE_ORDER:
        in_phase = phases.to_numpy() == phase
        sel = dispatches[in_phase]
        if sel.empty:
            continue
        dur = sel["duration_ns"].to_numpy(np.int64)
        total = int(dur.sum())
        counted = bool(sel["tokens"].notna().any())  # no token count at all: tokens and tokens/s are n/a, not 0
        tokens = int(sel["tokens"].fillna(0).sum()) if counted else None
        full = whole[in_phase]
        steps = dur[full]  # step times: whole steps only
        full_total = int(steps.sum())
        full_tokens = int(sel["tokens"][full].fillna(0).sum()) if counted else None
        pct = (lambda q, steps=steps: float(np.percentile(steps, q))) if steps.size else (lambda q: math.nan)
        rows.append(
            {
                "phase": phase,
                "dispatches": len(sel),
                "tokens": tokens,
                "total_ns": total,
                "mean_ns": float(steps.mean()) if steps.size else math.nan,
                "p50_ns": pct(50),
                "p90_ns": pct(90),
                "p99_ns": pct(99),
                "tokens_per_s": full_tokens / (full_total / 1e9) if full_total > 0 and counted else math.nan,  # n/a
            }
        )
    out = pd.DataFrame(rows, columns=list(PHASE_STATS))
    return out.astype(PHASE_STATS)


def phase_runs(dispatches: pd.DataFrame, phases: pd.Series) -> tuple[pd.DataFrame, pd.Series]:
    """Merge consecutive dispatches of the same phase into one run (for drawing many dispatches).

    Returns:
        ``(runs, run_phases)``: a DISPATCHES-shaped frame with one row per run (start of its first
        dispatch, end of its last; tokens and padded tokens summed; the members' mode, or "varied" when they
        differ; index of the first;
        ``end_estimated`` if any member's end was) plus a ``dispatches`` count column, and the
        phase of each run.
    """
    if dispatches.empty:
        return dispatches.assign(dispatches=pd.Series([], dtype="int64")), phases
    p = phases.to_numpy()
    run_id = np.r_[0, np.cumsum(p[1:] != p[:-1])]
    g = dispatches.assign(run=run_id).groupby("run", sort=True)
    runs = pd.DataFrame(
        {
            "index": g["index"].first(),
            "start_ns": g["start_ns"].min(),
            "end_ns": g["end_ns"].max(),
            "name": g["name"].first(),
            "tokens": g["tokens"].sum(min_count=1).astype("Int64"),
            # a run of dispatches in more than one graph mode says so rather than show its first one's
            "mode": g["mode"].first().where(g["mode"].nunique(dropna=False) == 1, "varied"),
            "padded": g["padded"].sum(min_count=1).astype("Int64"),
            "mixed": g["mixed"].any() if "mixed" in dispatches else False,
            "end_estimated": g["end_estimated"].any(),
            "dispatches": g.size(),
        }
    ).reset_index(drop=True)
    runs.insert(3, "duration_ns", runs["end_ns"] - runs["start_ns"])
    return runs, pd.Series(p[np.r_[0, np.flatnonzero(p[1:] != p[:-1]) + 1]], name="phase")
