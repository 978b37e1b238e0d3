"""Compare two runs of the same workload: A = baseline, B = candidate.

Every delta is ``B - A`` (positive = the candidate takes more time / does more), and every
percentage is ``100 * (B - A) / A`` (NaN when A is 0: a name or phase only the candidate has).
The per-name frames keep names seen on one side only, with count 0 and time 0 on the other.

Inputs are duck-typed "runs": any object with ``summary`` (Summary) and ``bundle`` (TraceBundle or
None for a summary JSON), such as ``dashboard.data.trace.LoadedTrace``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.analysis import phases as ph
from dashboard.analysis.gpu_time import BUSY_KERNELS, cuda_traced, run_has_gpu_work, trace_gpu_overview
from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX, dispatch_marks
from dashboard.analysis.tables import api_table, kernel_table, normalize_nvtx_name
from dashboard.model import DISPATCH_MARKS, conform, empty_frame

SCHEMA = "tracedash.diff/1"  # the "schema" key of comparison_to_dict; bump when keys change meaning

OVERVIEW_METRICS = (
    # metric key, source (GpuOverview attribute with event data, else Summary attribute), meaning: the
    # overview's definitions (gpu_time.gpu_overview, default busy source), the same as the dashboard's
    ("gpu_activity_span_ns", "gpu_activity_span_ns", "first start to last end of GPU work, any GPU"),
    ("gpu_busy_union_ns", "gpu_busy_union_ns", "any GPU busy: union of GPU work over all GPUs and streams"),
    ("gpu_idle_within_span_ns", "gpu_idle_within_span_ns", "span minus any-GPU busy"),
    ("kernel_count", "kernel_count", "kernel rows"),
    ("graph_node_kernel_count", "graph_node_kernel_count", "kernels launched from a CUDA graph node"),
)
OVERVIEW_DELTA: dict[str, str] = {
    "metric": "object",  # a key of OVERVIEW_METRICS
    "a": "Int64",  # NA: a GPU time of a run without GPU work (gpu_time.run_has_gpu_work), never a measured 0
    "b": "Int64",
    "delta": "Int64",  # b - a; NA when either side is
    "delta_pct": "float64",  # 100 * (b - a) / a; NaN when a == 0 or a side is NA
}
NAME_DELTA: dict[str, str] = {
    "name": "object",
    "a_count": "int64",
    "b_count": "int64",
    "delta_count": "int64",
    "a_total_ns": "int64",
    "b_total_ns": "int64",
    "delta_total_ns": "int64",  # b_total_ns - a_total_ns: the sort key (by absolute value)
    "delta_total_pct": "float64",  # NaN when a_total_ns == 0
    "a_mean_ns": "float64",  # total / count; 0.0 when count == 0
    "b_mean_ns": "float64",
    "delta_mean_ns": "float64",  # NaN when either side has count 0 (no mean to compare)
    "delta_mean_pct": "float64",
    "only_in": "object",  # "a", "b" or "" (present on both sides)
}
DISPATCH_TYPE_DELTA: dict[str, str] = {
    "phase": "object",
    "tokens": "Int64",  # the dispatch's ``actual`` token count; <NA> for dispatches without one
    "a_count": "int64",
    "b_count": "int64",
    "a_total_ns": "int64",
    "b_total_ns": "int64",
    "a_mean_ns": "float64",  # NaN when a_count == 0
    "b_mean_ns": "float64",
    "a_p50_ns": "float64",
    "b_p50_ns": "float64",
    "delta_mean_ns": "float64",  # b_mean_ns - a_mean_ns; NaN unless the type is on both sides
    "delta_mean_pct": "float64",
    "paired": "bool",  # the type has dispatches on both sides
}
PHASE_DELTA: dict[str, str] = {
    "phase": "object",
    "a_dispatches": "int64",
    "b_dispatches": "int64",
    "a_total_ns": "int64",
    "b_total_ns": "int64",
    "a_mean_ns": "float64",  # NaN when the side has no dispatch of the phase
    "b_mean_ns": "float64",
    "a_p50_ns": "float64",
    "b_p50_ns": "float64",
    "a_p90_ns": "float64",
    "b_p90_ns": "float64",
    "delta_mean_pct": "float64",  # raw mean step time change: depends on each run's token mix
    "paired_types": "int64",  # dispatch types (phase, tokens) present on both sides
    "matched_a_ns": "int64",  # sum over paired types of a_count * a_mean_ns (= a_total_ns of those types)
    "matched_b_ns": "int64",  # sum over paired types of a_count * b_mean_ns: B's speed at A's mix (rounded)
    "matched_delta_pct": "float64",  # 100 * (matched_b - matched_a) / matched_a; NaN without paired types
}


@dataclass(frozen=True)
class Gate:
    """What ``--fail-if-slower`` checks (see ``regression_gate``)."""

    metric: str  # "step_time:<phase>" or "kernel_time"
    a_ns: int
    b_ns: int
    delta_pct: float  # 100 * (b - a) / a; positive = the candidate is slower
    explanation: str


@dataclass(frozen=True)
class Comparison:
    """All deltas of a comparison (frames as documented by their schema dicts above)."""

    a_file: str  # the run's ``name`` (LoadedTrace: the file's base name), else its Summary.file
    b_file: str
    overview: pd.DataFrame  # OVERVIEW_DELTA, OVERVIEW_METRICS order
    utilisation_pct: tuple[float | None, float | None]  # (A, B): mean per-GPU utilisation (None: n/a)
    any_gpu_utilisation_pct: tuple[float | None, float | None]  # (A, B): any GPU busy / span (None: n/a)
    threshold: float | None  # common prefill/decode split used for both runs (tokens >= threshold)
    a_dispatches: pd.DataFrame  # DISPATCHES of A plus a "phase" column
    b_dispatches: pd.DataFrame
    dispatch_types: pd.DataFrame  # DISPATCH_TYPE_DELTA
    phases: pd.DataFrame  # PHASE_DELTA
    kernels: pd.DataFrame  # NAME_DELTA + "category"
    categories: pd.DataFrame  # NAME_DELTA (name = kernel category)
    nvtx: pd.DataFrame  # NAME_DELTA (name = normalised NVTX range name; total = sum of durations)
    api: pd.DataFrame  # NAME_DELTA (name = CUDA API name without version suffix; total summed across threads)
    gate: Gate
    cuda_traced: tuple[bool, bool] = (True, True)  # (A, B): False for a run without CUDA tracing (NVTX only)


def _pct(b, a) -> float:
    return 100.0 * (b - a) / a if a else math.nan


def overview_figures(run, busy_source: str = BUSY_KERNELS) -> dict:
    """The overview's headline figures of a run, by the dashboard's definitions (``gpu_time.
    trace_gpu_overview``) when it has event data, else the summary's (kernel rows only):
    OVERVIEW_METRICS keys plus ``utilisation_pct`` (mean per GPU) and ``any_gpu_utilisation_pct``
    (None when n/a)."""
    s = run.summary if hasattr(run, "summary") else run
    out = {"kernel_count": int(s.kernel_count), "graph_node_kernel_count": int(s.graph_node_kernel_count)}
    bundle = getattr(run, "bundle", None)
    if bundle is None:
        out.update(
            gpu_activity_span_ns=int(s.gpu_activity_span_ns),
            gpu_busy_union_ns=int(s.gpu_busy_union_ns),
            gpu_idle_within_span_ns=int(s.gpu_idle_within_span_ns),
            utilisation_pct=s.utilisation_pct,
            any_gpu_utilisation_pct=s.utilisation_pct,
        )
        return out
    ov = trace_gpu_overview(bundle, busy_source)
    out.update(
        gpu_activity_span_ns=ov.span_ns,
        gpu_busy_union_ns=ov.any_busy_ns,
        gpu_idle_within_span_ns=ov.any_idle_ns,
        utilisation_pct=ov.mean_utilisation_pct,
        any_gpu_utilisation_pct=ov.any_utilisation_pct,
    )
    return out


def overview_delta(a_run, b_run) -> pd.DataFrame:
    """Headline deltas of two runs (or two Summaries), by ``overview_figures``.

    Returns:
        OVERVIEW_DELTA frame, one row per OVERVIEW_METRICS entry in that order; times in ns,
        counts in rows; a run without GPU work (``gpu_time.run_has_gpu_work``) has NA times, one without CUDA tracing
        (``cuda_traced``) NA counts too.
    """
    fa, fb = overview_figures(a_run), overview_figures(b_run)
    ga, gb = run_has_gpu_work(a_run), run_has_gpu_work(b_run)
    ta, tb = cuda_traced(a_run), cuda_traced(b_run)
    rows = []
    for key, _, _ in OVERVIEW_METRICS:
        timed = key.endswith("_ns")  # a time needs GPU work; a count needs CUDA traced (0 kernels is then real)
        a = int(fa[key]) if (ga if timed else ta) else None
        b = int(fb[key]) if (gb if timed else tb) else None
        known = a is not None and b is not None
        rows.append(
            {
                "metric": key,
                "a": a,
                "b": b,
                "delta": b - a if known else None,
                "delta_pct": _pct(b, a) if known else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=list(OVERVIEW_DELTA)).astype(OVERVIEW_DELTA)


def name_delta(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Per-name deltas of two (name, count, total_ns) frames (several rows per name are summed).

    Returns:
        NAME_DELTA frame over the union of names, sorted by ``|delta_total_ns|`` descending, then
        ``|delta_count|`` descending, then name. A name on one side only gets count 0 and
        total 0 on the other and ``only_in`` = that side.
    """

    def agg(f: pd.DataFrame) -> pd.DataFrame:
        f = pd.DataFrame(
            {
                "name": f["name"].astype(str),
                "count": f["count"].astype("int64"),
                "total_ns": f["total_ns"].astype("int64"),
            }
        )
        return f.groupby("name", sort=False)[["count", "total_ns"]].sum()

    ga, gb = agg(a), agg(b)
    names = list(dict.fromkeys([*ga.index, *gb.index]))
    ga, gb = ga.reindex(names), gb.reindex(names)
    in_a, in_b = ga["count"].notna().to_numpy(), gb["count"].notna().to_numpy()
    ga, gb = ga.fillna(0).astype("int64"), gb.fillna(0).astype("int64")
    out = pd.DataFrame({"name": names})
    out["a_count"] = ga["count"].to_numpy()
    out["b_count"] = gb["count"].to_numpy()
    out["delta_count"] = out["b_count"] - out["a_count"]
    out["a_total_ns"] = ga["total_ns"].to_numpy()
    out["b_total_ns"] = gb["total_ns"].to_numpy()
    out["delta_total_ns"] = out["b_total_ns"] - out["a_total_ns"]
    a_tot = out["a_total_ns"].astype("float64")
    out["delta_total_pct"] = (100.0 * out["delta_total_ns"] / a_tot.where(a_tot != 0)).astype("float64")
    out["a_mean_ns"] = (out["a_total_ns"] / out["a_count"].where(out["a_count"] > 0)).fillna(0.0)
    out["b_mean_ns"] = (out["b_total_ns"] / out["b_count"].where(out["b_count"] > 0)).fillna(0.0)
    both = (out["a_count"] > 0) & (out["b_count"] > 0)
    out["delta_mean_ns"] = (out["b_mean_ns"] - out["a_mean_ns"]).where(both)
    out["delta_mean_pct"] = (100.0 * out["delta_mean_ns"] / out["a_mean_ns"].where(out["a_mean_ns"] != 0)).where(both)
    out["only_in"] = np.where(in_a & in_b, "", np.where(in_a, "a", "b")).astype(object)
    out = out.assign(_abs=out["delta_total_ns"].abs(), _absc=out["delta_count"].abs())
    out = out.sort_values(["_abs", "_absc", "name"], ascending=[False, False, True], kind="stable")
    return out[list(NAME_DELTA)].astype(NAME_DELTA).reset_index(drop=True)


def _kernel_rows(run) -> pd.DataFrame:
    """KERNEL_TABLE of a run (all kernels for nsys input, the summary's top 20 for summary JSON)."""
    return kernel_table(run.bundle.kernels if run.bundle is not None else None, run.summary)


def kernel_delta(a, b) -> pd.DataFrame:
    """Per kernel short name: NAME_DELTA columns plus ``category`` (kernel category rules).

    Source: ``tables.kernel_table`` of each run (every kernel of an nsys export; only the top 20
    kernels of a summary JSON, so a kernel outside them reads as absent there).
    """
    ka, kb = _kernel_rows(a), _kernel_rows(b)
    out = name_delta(ka, kb)
    cats = dict(zip(ka["name"], ka["category"])) | dict(zip(kb["name"], kb["category"]))
    out["category"] = out["name"].map(cats).astype(object)
    return out


def category_delta(a, b) -> pd.DataFrame:
    """Per kernel category (``categories.py`` rules): NAME_DELTA with name = category; counts and
    totals are sums over the category's kernels (same source as ``kernel_delta``)."""

    def per_category(k: pd.DataFrame) -> pd.DataFrame:
        return k.groupby("category", sort=False)[["count", "total_ns"]].sum().rename_axis("name").reset_index()

    return name_delta(per_category(_kernel_rows(a)), per_category(_kernel_rows(b)))


def nvtx_delta(a, b) -> pd.DataFrame:
    """Per NVTX range name normalised by ``tables.normalize_nvtx_name`` (per-call fields such as
    ``op_id`` stripped): NAME_DELTA with total = sum of range durations (Summary.nvtx sum_ns)."""

    def per_name(summary) -> pd.DataFrame:
        n = summary.nvtx
        return pd.DataFrame(
            {"name": [normalize_nvtx_name(str(x)) for x in n["name"]], "count": n["count"], "total_ns": n["sum_ns"]}
        )

    return name_delta(per_name(a.summary), per_name(b.summary))


def api_delta(a, b) -> pd.DataFrame:
    """Per CUDA API name without its version suffix (``tables.clean_api_name``): NAME_DELTA with
    total = summed call durations across threads (not wall time)."""
    return name_delta(api_table(a.summary), api_table(b.summary))


def run_dispatches(run, dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX) -> pd.DataFrame:
    """DISPATCHES frame of a run (``phases.build_dispatches``): marks from the event frames when
    there are any, else from the summary's dispatch timeline; the last dispatch ends at the last
    kernel end (estimated when unknown)."""
    if run.bundle is not None:
        marks = dispatch_marks(run.bundle, dispatch_prefix)
    else:
        tl = run.summary.dispatch_timeline
        sel = tl[tl["name"].astype(str).str.startswith(dispatch_prefix)]
        marks = conform(sel.reset_index(drop=True), DISPATCH_MARKS) if len(sel) else empty_frame(DISPATCH_MARKS)
    return ph.build_dispatches(marks, end_ns=run.summary.gpu_end_ns)


def common_threshold(a_dispatches: pd.DataFrame, b_dispatches: pd.DataFrame) -> float | None:
    """One prefill/decode split for both runs (``phases.default_threshold`` over the token counts
    of both), so the same token count always lands in the same phase."""
    return ph.default_threshold(pd.concat([a_dispatches["tokens"], b_dispatches["tokens"]], ignore_index=True))


def _type_stats(d: pd.DataFrame) -> pd.DataFrame:
    g = d.groupby(["phase", "tokens"], dropna=False, sort=False)["duration_ns"]
    return pd.DataFrame({"count": g.size(), "total_ns": g.sum(), "mean_ns": g.mean(), "p50_ns": g.median()})


def dispatch_type_delta(a_dispatches: pd.DataFrame, b_dispatches: pd.DataFrame) -> pd.DataFrame:
    """Dispatches paired by type = (phase, token count): e.g. A's decode-3 steps with B's decode-3 steps.

    Args:
        a_dispatches, b_dispatches: DISPATCHES frames with a ``phase`` column.

    Returns:
        DISPATCH_TYPE_DELTA frame, one row per type on either side, in PHASE_ORDER then tokens
        ascending (missing tokens last). Step time = mark to next mark (``phases.build_dispatches``).
    """
    sa, sb = _type_stats(a_dispatches), _type_stats(b_dispatches)
    keys = list(dict.fromkeys([*sa.index, *sb.index]))
    rank = {p: i for i, p in enumerate(ph.PHASE_ORDER)}
    keys.sort(key=lambda k: (rank.get(k[0], len(rank)), pd.isna(k[1]), 0 if pd.isna(k[1]) else int(k[1])))
    idx = pd.MultiIndex.from_tuples(keys, names=["phase", "tokens"]) if keys else None
    sa = sa.reindex(idx) if keys else sa
    sb = sb.reindex(idx) if keys else sb
    out = pd.DataFrame(
        {
            "phase": [k[0] for k in keys],
            "tokens": pd.array([None if pd.isna(k[1]) else int(k[1]) for k in keys], dtype="Int64"),
            "a_count": sa["count"].fillna(0).to_numpy(np.int64) if keys else [],
            "b_count": sb["count"].fillna(0).to_numpy(np.int64) if keys else [],
            "a_total_ns": sa["total_ns"].fillna(0).to_numpy(np.int64) if keys else [],
            "b_total_ns": sb["total_ns"].fillna(0).to_numpy(np.int64) if keys else [],
            "a_mean_ns": sa["mean_ns"].to_numpy(np.float64) if keys else [],
            "b_mean_ns": sb["mean_ns"].to_numpy(np.float64) if keys else [],
            "a_p50_ns": sa["p50_ns"].to_numpy(np.float64) if keys else [],
            "b_p50_ns": sb["p50_ns"].to_numpy(np.float64) if keys else [],
        }
    )
    out["delta_mean_ns"] = out["b_mean_ns"] - out["a_mean_ns"]
    out["delta_mean_pct"] = 100.0 * out["delta_mean_ns"] / out["a_mean_ns"].where(out["a_mean_ns"] != 0)
    out["paired"] = (out["a_count"] > 0) & (out["b_count"] > 0)
    return out[list(DISPATCH_TYPE_DELTA)].astype(DISPATCH_TYPE_DELTA)


def phase_delta(
    a_dispatches: pd.DataFrame, b_dispatches: pd.DataFrame, types: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per-phase step-time deltas, raw and matched by dispatch type.

    The raw mean compares whatever each run did; the *matched* figures price A's workload mix at
    each run's per-type mean: ``matched_a = Σ a_count·a_mean`` and ``matched_b = Σ a_count·b_mean``
    over types (phase, tokens) present on both sides, so a change in the token mix does not read
    as a speed change.

    Returns:
        PHASE_DELTA frame, one row per phase on either side, in ``phases.PHASE_ORDER``; p50/p90
        are numpy linear percentiles of the step durations.
    """
    types = dispatch_type_delta(a_dispatches, b_dispatches) if types is None else types
    rows = []
    for phase in ph.PHASE_ORDER:
        da = a_dispatches.loc[a_dispatches["phase"] == phase, "duration_ns"].to_numpy(np.int64)
        db = b_dispatches.loc[b_dispatches["phase"] == phase, "duration_ns"].to_numpy(np.int64)
        if not len(da) and not len(db):
            continue
        t = types[(types["phase"] == phase) & types["paired"]]
        matched_a = int(t["a_total_ns"].sum())
        matched_b = int(round(float((t["a_count"] * t["b_mean_ns"]).sum())))

        def stat(x, f):
            return float(f(x)) if len(x) else math.nan

        a_mean, b_mean = stat(da, np.mean), stat(db, np.mean)
        rows.append(
            {
                "phase": phase,
                "a_dispatches": len(da),
                "b_dispatches": len(db),
                "a_total_ns": int(da.sum()),
                "b_total_ns": int(db.sum()),
                "a_mean_ns": a_mean,
                "b_mean_ns": b_mean,
                "a_p50_ns": stat(da, lambda x: np.percentile(x, 50)),
                "b_p50_ns": stat(db, lambda x: np.percentile(x, 50)),
                "a_p90_ns": stat(da, lambda x: np.percentile(x, 90)),
                "b_p90_ns": stat(db, lambda x: np.percentile(x, 90)),
                "delta_mean_pct": _pct(b_mean, a_mean) if len(da) and len(db) else math.nan,
                "paired_types": len(t),
                "matched_a_ns": matched_a,
                "matched_b_ns": matched_b,
                "matched_delta_pct": _pct(matched_b, matched_a) if len(t) else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=list(PHASE_DELTA)).astype(PHASE_DELTA)


GATE_MIN_COVERAGE_PCT = (
    50.0  # the kernel-time gate needs shared kernel names holding this much of each run's kernel time
)


def regression_gate(phases: pd.DataFrame, kernels: pd.DataFrame) -> Gate:
    """How much slower the candidate is, as one number for a CI gate (positive = slower).

    Definition: with dispatch types paired on both sides, the worst (largest) ``matched_delta_pct``
    over phases: the total step time (summed over its dispatches) of the phase that regressed most,
    priced at the baseline's token mix (see ``phase_delta``). Without paired dispatches: kernel time
    at the baseline's kernel mix, ``Σ a_count·b_mean_ns`` vs ``Σ a_total_ns`` over kernel names
    present on both sides, so a run that captured fewer iterations does not read as faster (kernels
    on one side only are left out). When the shared names hold under ``GATE_MIN_COVERAGE_PCT`` % of
    either run's kernel time the runs do not do the same work: ``delta_pct`` is NaN (n/a: never fails).
    """
    p = phases[phases["paired_types"] > 0]
    if len(p):
        worst = p.loc[p["matched_delta_pct"].idxmax()]
        return Gate(
            f"step_time:{worst['phase']}",
            int(worst["matched_a_ns"]),
            int(worst["matched_b_ns"]),
            float(worst["matched_delta_pct"]),
            f"{worst['phase']} total step time (the sum over its dispatches) at the baseline's token mix "
            f"({int(worst['paired_types'])} dispatch types paired by phase and token count), the worst phase",
        )
    k = kernels[(kernels["a_count"] > 0) & (kernels["b_count"] > 0)]
    a_ns = int(k["a_total_ns"].sum())
    b_ns = int(round(float((k["a_count"] * k["b_mean_ns"]).sum())))
    explanation = (
        f"kernel time at the baseline's kernel counts ({len(k)} kernel names on both sides): no dispatch types to pair"
    )
    a_all, b_all = int(kernels["a_total_ns"].sum()), int(kernels["b_total_ns"].sum())
    a_cov = 100.0 * a_ns / a_all if a_all else math.nan
    b_cov = 100.0 * int(k["b_total_ns"].sum()) / b_all if b_all else math.nan
    if a_ns and (a_cov < GATE_MIN_COVERAGE_PCT or b_cov < GATE_MIN_COVERAGE_PCT):
        # a few shared names do not make the same work: no verdict (n/a never fails the gate)
        return Gate(
            "kernel_time",
            a_ns,
            b_ns,
            math.nan,
            f"not measured: the {len(k)} kernel names on both sides hold {a_cov:.1f} % of the baseline's and "
            f"{b_cov:.1f} % of the candidate's kernel time (under {GATE_MIN_COVERAGE_PCT:.0f} %): the runs "
            "do not run the same work",
        )
    return Gate("kernel_time", a_ns, b_ns, _pct(b_ns, a_ns), explanation)


def compare_runs(
    a,
    b,
    *,
    dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX,
    threshold: float | None = None,
    steps: tuple[tuple[pd.DataFrame, pd.Series], tuple[pd.DataFrame, pd.Series]] | None = None,
) -> Comparison:
    """Compare baseline ``a`` with candidate ``b`` (objects with ``summary`` and ``bundle``).

    Args:
        threshold: prefill when tokens >= threshold, for both runs; None = ``common_threshold``.
        steps: ``((dispatches, phases) of a, (dispatches, phases) of b)``: a framework's steps in place of
            the dispatch marks (``steps.serving_dispatches``), phase-aligned by the phases their annotations
            give (no threshold); None: the dispatch marks of ``dispatch_prefix``.

    Returns:
        A Comparison with every delta frame (see the schema dicts of this module).
    """
    if steps is not None:
        (da, pa), (db, pb) = steps
        thr = None
        da, db = da.assign(phase=pa.to_numpy()), db.assign(phase=pb.to_numpy())
    else:
        da, db = run_dispatches(a, dispatch_prefix), run_dispatches(b, dispatch_prefix)
        thr = threshold if threshold is not None else common_threshold(da, db)
        da = da.assign(phase=ph.assign_phases(da, thr).to_numpy())
        db = db.assign(phase=ph.assign_phases(db, thr).to_numpy())
    types = dispatch_type_delta(da, db)
    phases = phase_delta(da, db, types)
    overview = overview_delta(a, b)
    fa, fb = overview_figures(a), overview_figures(b)
    kernels = kernel_delta(a, b)
    return Comparison(
        a_file=getattr(a, "name", a.summary.file),
        b_file=getattr(b, "name", b.summary.file),
        overview=overview,
        utilisation_pct=(fa["utilisation_pct"], fb["utilisation_pct"]),
        any_gpu_utilisation_pct=(fa["any_gpu_utilisation_pct"], fb["any_gpu_utilisation_pct"]),
        threshold=thr,
        a_dispatches=da,
        b_dispatches=db,
        dispatch_types=types,
        phases=phases,
        kernels=kernels,
        categories=category_delta(a, b),
        nvtx=nvtx_delta(a, b),
        api=api_delta(a, b),
        gate=regression_gate(phases, kernels),
        cuda_traced=(cuda_traced(a), cuda_traced(b)),
    )


def _num(value, digits: int = 4):
    """JSON value: None for NaN, an int for ns/count values, floats rounded (stable text)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return round(float(value), digits)


def _records(frame: pd.DataFrame, top: int | None = None) -> list[dict]:
    f = frame if top is None else frame.head(top)
    out = []
    for row in f.to_dict("records"):
        rec = {}
        for k, v in row.items():
            if isinstance(v, str):
                rec[k] = v
            elif k.endswith("_ns") and not k.endswith("_pct"):
                rec[k] = None if pd.isna(v) else int(round(float(v)))  # integers in ns
            else:
                rec[k] = _num(v)
        out.append(rec)
    return out


def comparison_to_dict(c: Comparison, top: int | None = None) -> dict:
    """The stable JSON form of a Comparison (``tracedash diff --json``).

    Keys, in this order: ``schema`` (SCHEMA), ``baseline``/``candidate`` (file names),
    ``gate`` (metric, a_ns, b_ns, delta_pct, explanation), ``overview`` (metric -> a, b, delta,
    delta_pct), ``utilisation_pct`` (mean per GPU: a, b, delta_pp; null when n/a),
    ``any_gpu_utilisation_pct`` (the same for any GPU busy / span), ``threshold``, then lists ``phases``,
    ``dispatch_types``, ``kernels``, ``categories``, ``nvtx``, ``api`` with the columns of their
    frames in schema order. Times are integer ns (means rounded to the nearest ns),
    percentages floats rounded to 4 decimals, NaN as null. ``top`` keeps the first N rows of
    kernels, nvtx and api (they are sorted by absolute change).
    """

    def util(pair):
        ua, ub = pair
        delta = None if ua is None or ub is None else ub - ua
        return {"a": _num(ua), "b": _num(ub), "delta_pp": _num(delta)}

    return {
        "schema": SCHEMA,
        "baseline": c.a_file,
        "candidate": c.b_file,
        "gate": {
            "metric": c.gate.metric,
            "a_ns": c.gate.a_ns,
            "b_ns": c.gate.b_ns,
            "delta_pct": _num(c.gate.delta_pct),
            "explanation": c.gate.explanation,
        },
        "overview": {r["metric"]: {k: v for k, v in r.items() if k != "metric"} for r in _records(c.overview)},
        "utilisation_pct": util(c.utilisation_pct),
        "any_gpu_utilisation_pct": util(c.any_gpu_utilisation_pct),
        "threshold": _num(c.threshold),
        "phases": _records(c.phases),
        "dispatch_types": _records(c.dispatch_types),
        "kernels": _records(c.kernels, top),
        "categories": _records(c.categories),
        "nvtx": _records(c.nvtx, top),
        "api": _records(c.api, top),
    }


__all__ = [
    "Comparison",
    "Gate",
    "compare_runs",
    "comparison_to_dict",
    "overview_delta",
    "name_delta",
    "kernel_delta",
    "category_delta",
    "nvtx_delta",
    "api_delta",
    "dispatch_type_delta",
    "phase_delta",
    "regression_gate",
    "run_dispatches",
    "common_threshold",
]
