"""Findings: what to fix first, each with its cost, evidence rows and the view that shows it.

Every rule is a pure function of a trace's Summary (always) and TraceBundle (event rows; None for a
summary JSON) returning one ``Finding``. ``evaluate`` runs the chosen rules and ranks them by cost.
Definitions, parameters and worked examples of every rule: docs/findings.md.

Two families:

* the six ``nsys analyze`` rules (``analysis.nsys_rules``; same ids, parameters and rows), and
* serving rules built on the dispatches, phases and correlation attribution:
  ``host-bound-steps``, ``sync-in-loop``, ``launch-bound``, ``decode-no-graphs``,
  ``padding-waste``, ``exposed-comm``, ``pageable-in-loop``.

Costs are integer ns of time lost (idle GPU time, blocked host time, step time); a rule that found
nothing has cost 0 and no rows. Rules that need event rows say so for a summary JSON
(``Finding.note``) and use what the summary holds where it is enough.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dashboard.analysis import nsys_rules as nr
from dashboard.analysis import phases as ph
from dashboard.analysis.attribution import UNATTRIBUTED, dispatch_busy_ns
from dashboard.analysis.categories import OTHER, categorize
from dashboard.analysis.derived import BundleAnalysis
from dashboard.analysis.gpu_time import gpu_work, has_gpu_work
from dashboard.analysis.idle import NO_HOST_ACTIVITY, gap_causes, idle_gaps
from dashboard.analysis.intervals import intersection_length, union_length
from dashboard.analysis.ratio import share_pct
from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX, timed_kernels, usable_kernel_mask
from dashboard.analysis.tables import clean_api_name, normalize_nvtx_name
from dashboard.model import Summary, TraceBundle
from dashboard.text import count_noun

SEVERITIES = ("high", "medium", "low", "none")
HIGH_SHARE, MEDIUM_SHARE = 0.10, 0.02  # cost as a share of the reference time (see severity_of)

NSYS_RULES = tuple(nr.NSYS_RULE_PARAMS)
SERVING_RULES = (
    "host-bound-steps",
    "sync-in-loop",
    "launch-bound",
    "decode-no-graphs",
    "padding-waste",
    "exposed-comm",
    "pageable-in-loop",
)
RULES = SERVING_RULES + NSYS_RULES

RULE_PARAMS: dict[str, tuple[nr.Param, ...]] = {
    **nr.NSYS_RULE_PARAMS,
    "host-bound-steps": (
        nr.Param(
            "share", 50, "%", 0, 100, "a step is host-bound when its GPU busy time is under this share of the step"
        ),
    ),
    "sync-in-loop": (),
    "launch-bound": (
        nr.Param(
            "share",
            50,
            "%",
            0,
            100,
            "a phase is launch-bound when at least this share of its kernels run shorter than their launch call",
        ),
    ),
    "decode-no-graphs": (),
    "padding-waste": (),
    "exposed-comm": (),
    "pageable-in-loop": (),
}

# Blocking CUDA calls (runtime and driver; HIP's of a ROCm trace): the host waits for the GPU.
SYNC_CALL = re.compile(
    r"^(cuda(Stream|Device|Event|Ctx|Thread)Synchronize|cu(Stream|Ctx|Event)Synchronize|"
    r"hip(Stream|Device|Event|Ctx)Synchronize)",
    re.IGNORECASE,
)
# Copies of cuda-sync-memcpy / cuda-async-memcpy issued by runtime, driver or HIP calls (pageable-in-loop reads all).
MEMCPY_SYNC_CALL = re.compile(r"^(cu(da)?|hip)Memcpy(?!.*async)", re.IGNORECASE)
MEMCPY_ASYNC_CALL = re.compile(r"^(cu(da)?|hip)Memcpy.*Async", re.IGNORECASE)
LAUNCH_CALL = re.compile(
    r"^(cudaLaunch|cuLaunch|cudaGraphLaunch|cuGraphLaunch|hipLaunch|hipModuleLaunch|"
    r"hipExtModuleLaunch|hipExtLaunch|hipGraphLaunch)",
    re.IGNORECASE,
)
NEEDS_EVENTS = "needs event rows: a summary JSON holds totals only"

# The event rows each rule reads besides the dispatch marks. A rule whose rows a trace lacks (e.g. a CPU-only
# trace: NVTX, no CUDA) is not evaluated, and its note names the missing rows: "nothing found" would claim a
# look that never happened.
GPU_WORK = "GPU work"  # kernel, CUDA-graph or memcpy/memset rows
KERNEL_ROWS = "kernel rows"
API_CALLS = "CUDA API calls"
MEMOPS = "memcpy/memset rows"
RULE_INPUTS: dict[str, tuple[str, ...]] = {
    "gpu-starv": (GPU_WORK,),
    "gpu-low-util": (GPU_WORK,),
    "cuda-sync-api": (API_CALLS,),
    "cuda-sync-memcpy": (MEMOPS,),
    "cuda-sync-memset": (MEMOPS,),
    "cuda-async-memcpy": (MEMOPS,),
    "host-bound-steps": (GPU_WORK,),
    "sync-in-loop": (API_CALLS,),
    "launch-bound": (KERNEL_ROWS, API_CALLS),
    "decode-no-graphs": (KERNEL_ROWS,),
    "padding-waste": (),
    "exposed-comm": (KERNEL_ROWS,),
    "pageable-in-loop": (MEMOPS,),
}
CAUSE_GAPS = 200  # host-bound-steps reads the host cause of this many longest gaps in host-bound steps


@dataclass(frozen=True)
class FindingView:
    """The dashboard view that shows a finding: tab, time window (ns), the table's sort, a kernel name
    filter and the marked row (the worst instance)."""

    tab: str = "kernels"
    t0_ns: int | None = None
    t1_ns: int | None = None
    sort: str = ""  # the open table's sort ("col" / "-col"); "" keeps that table's default
    kernel: str = ""  # kernel table name filter
    mark: tuple[str, int, int] | None = None  # ("gap" | "dispatch" | "kernel", start_ns, end_ns) marked in the timeline


@dataclass(frozen=True)
class Finding:
    """One evaluated rule.

    Attributes:
        rule: rule id. severity: one of SEVERITIES. cost_ns: time lost, integer ns (0 when nothing found).
        summary: one sentence with the numbers. params: the parameter values used.
        rows: evidence frame (columns per rule, see docs/findings.md), empty when nothing found.
        view: the view that shows it. note: what limited the rule (e.g. NEEDS_EVENTS), else "".
        evaluated: False when the rule could not look (its note says why); cost_ns is then 0.
    """

    rule: str
    severity: str
    cost_ns: int
    summary: str
    params: dict = field(default_factory=dict)
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)
    view: FindingView = field(default_factory=FindingView)
    note: str = ""
    evaluated: bool = True


@dataclass
class Context:
    """What the rules share: the trace, its dispatches and phases, and its derived results
    (``derived``: the trace's ``analysis.derived.BundleAnalysis``, shared with every view)."""

    summary: Summary
    bundle: TraceBundle | None
    dispatches: pd.DataFrame
    phases: pd.Series
    reference_ns: int
    prefix: str = DEFAULT_DISPATCH_PREFIX  # the dispatch marks' prefix (what a rule without dispatches names)
    derived: BundleAnalysis | None = None
    step_attribution: np.ndarray | None = None  # with a framework's steps as the dispatches (``StepDispatches``)

    def launches(self) -> pd.DataFrame:
        """Each kernel joined to its launch call (``launches.kernel_launches``: kernel_index, api_index,
        api_start_ns, api_ns, ...), in kernel order."""
        return self.derived.launches()

    def attribution(self) -> np.ndarray:
        """Dispatch index per kernel, UNATTRIBUTED when unknown (``attribution.attribute_kernels``; with
        steps as the dispatches, their attribution by the launching call's start, same process)."""
        if self.step_attribution is not None:
            return self.step_attribution
        return self.derived.attribution(self.prefix)

    def kernel_end(self) -> np.ndarray:
        """``summary.kernel_end_ns`` (same-stream overruns clipped, as every figure)."""
        return self.derived.kernel_end()

    def kernel_duration(self) -> np.ndarray:
        """``summary.kernel_durations`` as int64 numpy (0 for invalid rows)."""
        return self.derived.kernel_durations()

    def dispatch_busy(self) -> np.ndarray:
        """GPU busy time per dispatch (union of its own attributed kernels, all devices), int64 ns."""
        if self.step_attribution is not None:
            return dispatch_busy_ns(
                self.bundle.kernels["start_ns"].to_numpy(np.int64),
                self.kernel_end(),
                self.step_attribution,
                len(self.dispatches),
            )
        return self.derived.dispatch_busy(self.prefix, len(self.dispatches))

    def ops(self) -> pd.DataFrame:
        """nsys_rules.gpu_ops of the bundle."""
        return self.derived.gpu_ops()

    def phase_of_time(self, t: np.ndarray) -> np.ndarray:
        """Phase name of the dispatch whose window contains each time, "" outside every dispatch."""
        d = self.dispatches
        out = np.full(len(t), "", dtype=object)
        if d.empty or len(t) == 0:
            return out
        starts, ends = d["start_ns"].to_numpy(np.int64), d["end_ns"].to_numpy(np.int64)
        pos = np.searchsorted(starts, t, side="right") - 1
        ok = (pos >= 0) & (t < ends[np.clip(pos, 0, None)])
        out[ok] = self.phases.to_numpy()[pos[ok]]
        return out


@dataclass(frozen=True)
class StepDispatches:
    """A framework's steps in place of the dispatch marks (``analysis.steps.serving_dispatches``): the
    dispatches, their phases (from the annotations, no threshold) and the kernels' attribution to them."""

    dispatches: pd.DataFrame
    phases: pd.Series
    attribution: np.ndarray | None  # None without kernel rows (a summary input)


def build_context(
    summary: Summary,
    bundle: TraceBundle | None,
    *,
    dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX,
    threshold: float | None = None,
    derived: BundleAnalysis | None = None,
    steps: StepDispatches | None = None,
) -> Context:
    """Dispatches (``derived.dispatches``: the dispatch marks closed at the last kernel end), phases
    (``threshold`` or the automatic split) and the reference time for severities: the GPU activity
    span, else the dispatches' total, else the trace's span (``trace_span``), else 0. ``derived``: the
    trace's derived results (a new ``BundleAnalysis`` when the caller has none)."""
    if derived is None:
        derived = BundleAnalysis(bundle, summary.gpu_end_ns, summary_timeline=summary.dispatch_timeline)
    if steps is not None:  # the steps say their phases; the threshold is the seed preset's only
        d = steps.dispatches
        ref = summary.gpu_activity_span_ns or (int(d["duration_ns"].sum()) if not d.empty else 0)
        return Context(summary, bundle, d, steps.phases, max(int(ref), 1), dispatch_prefix, derived, steps.attribution)
    d = derived.dispatches(dispatch_prefix)
    auto = ph.default_threshold(d["tokens"]) if not d.empty else None
    phases = ph.assign_phases(d, threshold if threshold is not None else auto)
    ref = summary.gpu_activity_span_ns or (int(d["duration_ns"].sum()) if not d.empty else 0)
    if not ref and bundle is not None:  # no GPU span nor steps: the recording's own span, never a made-up 1 ns
        lo, hi = trace_span(bundle, derived.timed_kernels())
        ref = hi - lo
    return Context(summary, bundle, d, phases, max(int(ref), 0), dispatch_prefix, derived)


def trace_span(bundle: TraceBundle, timed: pd.DataFrame | None = None) -> tuple[int, int]:
    """First start and last end over every recorded row (kernels, CUDA API calls, NVTX ranges and marks,
    memcpy/memset, graph launches), ns; ``(0, 0)`` when there is none. A host thread's time lies inside it.
    ``timed``: ``summary.timed_kernels`` of the bundle when already made."""
    lo, hi = [], []
    k = timed_kernels(bundle.kernels) if timed is None else timed
    if len(k):
        lo.append(int(k["start_ns"].min()))
        hi.append(int(k["end_ns"].max()))
    for f in (bundle.api_calls, bundle.nvtx_ranges, bundle.memops, bundle.graph_launches):
        if len(f):
            s, e = f["start_ns"].to_numpy(np.int64), f["end_ns"].to_numpy(np.int64)
            ok = (s >= 0) & (e >= s)
            if ok.any():
                lo.append(int(s[ok].min()))
                hi.append(int(e[ok].max()))
    if len(bundle.nvtx_marks):
        t = bundle.nvtx_marks["ts_ns"].to_numpy(np.int64)
        t = t[t >= 0]
        if len(t):
            lo.append(int(t.min()))
            hi.append(int(t.max()))
    return (min(lo), max(hi)) if lo else (0, 0)


def host_reference_ns(ctx: Context) -> int:
    """The whole a host-side cost (time a host thread spends blocked or launching) is rated against: the
    trace's span (``trace_span``), which holds every host thread's time, and at least the GPU reference. A
    summary JSON (no rows): the GPU reference."""
    if ctx.bundle is None:
        return ctx.reference_ns
    lo, hi = _trace_span(ctx)
    return max(hi - lo, ctx.reference_ns)


def _trace_span(ctx: Context) -> tuple[int, int]:
    return trace_span(ctx.bundle, ctx.derived.timed_kernels() if ctx.derived is not None else None)


def severity_of(cost_ns: int, reference_ns: int) -> str:
    """ "high" when the cost is at least 10 % of the reference time (the whole that holds the cost: GPU
    activity span, else the dispatches' total, else the trace's span; host-side rules: the trace's span),
    "medium" from 2 %, "low" above 0, "none" for 0. Without a reference (no time whole at all) a cost
    cannot be a share of anything: "low", never a ratio over a made-up denominator."""
    if cost_ns <= 0:
        return "none"
    if reference_ns <= 0:
        return "low"
    share = cost_ns / reference_ns
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"


def fmt_s(ns: int) -> str:
    """ns as seconds with 3 significant decimals in the unit that fits (``6.39 s``, ``12.3 ms``, ``850 µs``)."""
    ns = int(ns)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns} ns"


def _window(start: int, end: int) -> tuple[int, int]:
    """A window showing [start, end) with 10 % margin on each side (at least 1 µs)."""
    pad = max((end - start) // 10, 1000)
    return max(int(start) - pad, 0), int(end) + pad


# Rules whose cost is host time (calls that block or launch), rated against host_reference_ns; the others'
# costs are GPU time, rated against the GPU reference (Context.reference_ns).
HOST_COST_RULES = frozenset({"sync-in-loop", "cuda-sync-api", "launch-bound", "decode-no-graphs"})


def _finding(
    ctx: Context,
    rule: str,
    params: dict,
    cost: int,
    summary: str,
    rows: pd.DataFrame,
    view: FindingView,
    note: str = "",
) -> Finding:
    ref = host_reference_ns(ctx) if rule in HOST_COST_RULES else ctx.reference_ns
    return Finding(rule, severity_of(cost, ref), int(cost), summary, params, rows.reset_index(drop=True), view, note)


def _empty(
    ctx: Context, rule: str, params: dict, summary: str, view: FindingView | None = None, note: str = ""
) -> Finding:
    return Finding(rule, "none", 0, summary, params, pd.DataFrame(), view or FindingView(), note)


def _not_evaluated(
    ctx: Context, rule: str, params: dict, summary: str, view: FindingView | None = None, note: str = NEEDS_EVENTS
) -> Finding:
    return Finding(rule, "none", 0, summary, params, pd.DataFrame(), view or FindingView(), note, evaluated=False)


def missing_inputs(summary: Summary, bundle: TraceBundle | None, rule: str) -> list[str]:
    """The rows ``rule`` reads (``RULE_INPUTS``) that the trace has none of, in that order. A summary JSON
    (``bundle`` None) answers for kernels and CUDA API calls from its totals; its memcpy/memset rows are
    unknown (those rules need event rows anyway)."""
    if bundle is None:
        have = {
            GPU_WORK: summary.kernel_count > 0,
            KERNEL_ROWS: summary.kernel_count > 0,
            API_CALLS: not summary.api.empty,
            MEMOPS: True,
        }
    else:
        have = {
            GPU_WORK: has_gpu_work(bundle),
            KERNEL_ROWS: not bundle.kernels.empty,
            API_CALLS: not bundle.api_calls.empty,
            MEMOPS: not bundle.memops.empty,
        }
    return [x for x in RULE_INPUTS[rule] if not have[x]]


def _round_pct(part: float, whole: float, digits: int = 2) -> float | None:
    """``100 * part / whole`` rounded, or None when ``whole`` is 0 (``ratio.share_pct``): an evidence row
    shows "n/a" and ``--json`` null there, never a clean-looking 0 %."""
    value = share_pct(part, whole)
    return None if value is None else round(value, digits)


def _pct_text(part: float, whole: float, spec: str = ".1f") -> str:
    """The percentage for a sentence, or "n/a" when ``whole`` is 0."""
    value = share_pct(part, whole)
    return "n/a" if value is None else format(value, spec)


# ---------------------------------------------------------------------------- nsys analyze rules

_NSYS_TEXT = {
    "gpu-starv": "GPU idle gaps over {gap} ms",
    "gpu-low-util": "chunks under {threshold} % GPU in-use",
    "cuda-sync-api": "synchronisation calls",
    "cuda-sync-memcpy": "synchronous memcpy calls",
    "cuda-sync-memset": "synchronous memsets",
    "cuda-async-memcpy": "async memcpy calls with pageable memory (made synchronous)",
}
_NSYS_ONE = {  # the same, for one row
    "gpu-starv": "GPU idle gap over {gap} ms",
    "gpu-low-util": "chunk under {threshold} % GPU in-use",
    "cuda-sync-api": "synchronisation call",
    "cuda-sync-memcpy": "synchronous memcpy call",
    "cuda-sync-memset": "synchronous memset",
    "cuda-async-memcpy": "async memcpy call with pageable memory (made synchronous)",
}


# The CUDA runtime names each nsys API rule reads (as NVIDIA's rule scripts), for the sentence that says what
# it did not look at.
_NSYS_READS = {
    "cuda-sync-api": "cudaDeviceSynchronize/cudaStreamSynchronize",
    "cuda-sync-memcpy": "synchronous cudaMemcpy*",
    "cuda-sync-memset": "synchronous cudaMemset*",
    "cuda-async-memcpy": "cudaMemcpy*Async",
}
_NSYS_NONE = {  # the empty finding's sentence when the trace holds calls of the kind the rule does not read
    "cuda-sync-api": "No cudaDeviceSynchronize/cudaStreamSynchronize call",
    "cuda-sync-memcpy": "No blocking copy by a synchronous cudaMemcpy* call",
    "cuda-sync-memset": "No memset of pinned or managed memory by a synchronous cudaMemset* call",
    "cuda-async-memcpy": "No pageable-memory copy by a cudaMemcpy*Async call",
}


def _names_brief(names: pd.Series) -> str:
    """``"cuStreamSynchronize ×50, cuCtxSynchronize ×2"``: cleaned call names by count (most first, then name);
    each distinct raw name is cleaned once."""
    counts: dict[str, int] = {}
    for raw, n in names.value_counts(sort=False).items():
        if n:
            counts[clean_api_name(str(raw))] = counts.get(clean_api_name(str(raw)), 0) + int(n)
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{n} ×{c:,}" for n, c in items[:3])
    return shown + (f" and {len(items) - 3:,} more names" if len(items) > 3 else "")


def nsys_unread(bundle: TraceBundle, rule: str) -> str:
    """What an ``nsys analyze`` API rule does not look at although the trace holds it, as a clause
    (``"the trace's 50 other synchronisation calls (cuStreamSynchronize ×50): see sync-in-loop"``), "" when
    nothing: the same kind of call under CUDA driver-API names (``cu*``, as OpenMP/OpenACC offload
    runtimes make them) or HIP names (``hip*``) and, for cuda-sync-api, the blocking calls besides its two
    runtime names (``cudaEventSynchronize``, ``cuCtxSynchronize``, ``hipDeviceSynchronize``, ...). The
    rule's rows stay NVIDIA's."""
    a, m = bundle.api_calls, bundle.memops
    if rule == "cuda-sync-api":
        if a.empty:
            return ""
        names = a["name"] if isinstance(a["name"].dtype, pd.CategoricalDtype) else a["name"].astype("category")
        other = [
            i
            for i, n in enumerate(names.cat.categories)
            if SYNC_CALL.match(str(n)) and not nr.NSYS_SYNC_API.match(str(n))
        ]
        if not other:
            return ""
        hit = names[np.isin(names.cat.codes.to_numpy(), other)]
        if hit.empty:
            return ""
        return (
            f"the trace's {count_noun(len(hit), 'other synchronisation call')} ({_names_brief(hit)}): see sync-in-loop"
        )
    if a.empty or m.empty or rule not in ("cuda-sync-memcpy", "cuda-async-memcpy", "cuda-sync-memset"):
        return ""
    if rule == "cuda-sync-memcpy":
        rows, what, see = nr.cuda_sync_memcpy(m, a, nr.OTHER_MEMCPY_SYNC_API), "synchronous copy", "pageable-in-loop"
    elif rule == "cuda-async-memcpy":
        rows, what = nr.cuda_async_memcpy(m, a, nr.OTHER_MEMCPY_ASYNC_API), "async pageable-memory copy"
        see = "pageable-in-loop"
    else:
        rows, what, see = nr.cuda_sync_memset(m, a, nr.OTHER_MEMSET_SYNC_API), "synchronous memset", "the API tab"
    if rows.empty:
        return ""
    many = "copies" if what.endswith("copy") else None
    hip = rows["api_name"].astype(str).str.lower().str.startswith("hip")
    family = "HIP" if hip.all() else "driver-API" if not hip.any() else "driver-API/HIP"
    return (
        f"the trace's {count_noun(len(rows), f'{family} {what}', many)} ({_names_brief(rows['api_name'])}, "
        f"{fmt_s(int(rows['duration_ns'].sum()))}): see {see}"
    )


def nsys_finding(ctx: Context, rule: str, params: dict) -> Finding:
    """One ``nsys analyze`` rule as a Finding: its rows (nsys_rules), cost = the rows' total time
    (for gpu-low-util, the idle part of the listed chunks: duration × (100 − in-use) / 100). An API rule
    whose calls the trace also holds under names the rule does not read (``nsys_unread``) says so (its
    sentence and note): its "No …" is then about the names it reads, never about the kind of call."""
    label = _NSYS_TEXT[rule].format(**params)
    tab = "gaps" if rule.startswith("gpu-") else "api"
    if ctx.bundle is None:
        return _not_evaluated(ctx, rule, params, f"{label}: not evaluated ({NEEDS_EVENTS}).", FindingView(tab=tab))
    rows = nr.run_nsys_rule(rule, ctx.bundle, params, ctx.ops() if rule.startswith("gpu-") else None)
    unread = nsys_unread(ctx.bundle, rule)
    note = f"the nsys rule reads {_NSYS_READS[rule]} only; not looked at: {unread}" if unread else ""
    if rows.empty:
        if unread:
            return _empty(
                ctx,
                rule,
                params,
                f"{_NSYS_NONE[rule]} (the CUDA runtime names this nsys rule reads); it does not look at {unread}.",
                FindingView(tab=tab),
                note,
            )
        return _empty(ctx, rule, params, f"No {label}.", FindingView(tab=tab))
    if rule == "gpu-low-util":
        cost = int(sum(int(d) * max(100.0 - p, 0.0) / 100.0 for d, p in zip(rows["duration_ns"], rows["in_use_pct"])))
    else:
        cost = int(rows["duration_ns"].sum())
    if len(rows) == 1:
        label = _NSYS_ONE[rule].format(**params)
    top = rows.sort_values("duration_ns", ascending=False, kind="stable").iloc[0]
    t0, t1 = _window(int(top["start_ns"]), int(top["start_ns"]) + int(top["duration_ns"]))
    text = (
        f"{len(rows):,} {label}, {fmt_s(cost)} in all; the longest {fmt_s(int(top['duration_ns']))} at "
        f"{int(top['start_ns']) / 1e9:.3f} s"
    )
    if rule == "gpu-low-util":
        text = (
            f"{len(rows):,} {label} ({fmt_s(int(rows['duration_ns'].sum()))}), {fmt_s(cost)} of it idle; "
            f"the lowest at {float(rows['in_use_pct'].iloc[0]):.1f} % from {int(rows['start_ns'].iloc[0]) / 1e9:.3f} s"
        )
    if unread:
        text += f" (CUDA runtime names only, as nsys; not looked at: {unread})"
    top_s, top_e = int(top["start_ns"]), int(top["start_ns"]) + int(top["duration_ns"])
    mark = ("gap", top_s, top_e) if rule == "gpu-starv" else None
    return _finding(
        ctx, rule, params, cost, text + ".", rows, FindingView(tab=tab, t0_ns=t0, t1_ns=t1, mark=mark), note
    )


# ---------------------------------------------------------------------------- serving rules


def _no_dispatches(ctx: Context, rule: str, params: dict, view: FindingView) -> Finding:
    """A rule that needs dispatch steps, on a trace without marks of the prefix: not evaluated (never "nothing
    found": the rule could not look)."""
    return _not_evaluated(
        ctx,
        rule,
        params,
        f"Not evaluated: no dispatch marks named {ctx.prefix}… in this trace (see --dispatch-prefix).",
        view,
        f"no dispatch marks named {ctx.prefix}…",
    )


def host_bound_steps(ctx: Context, params: dict) -> Finding:
    """``host-bound-steps``: dispatches whose attributed GPU busy time (union of their own kernels) is
    under ``share`` % of the step; cost = Σ (step − GPU busy) over them. The host cause is the CUDA API
    call and NVTX range covering the most GPU idle time inside those steps (analysis.idle.gap_causes).

    Rows per phase: phase, steps, host_bound_steps, step_ns, gpu_busy_ns, idle_ns, cause, cause_idle_ns.
    """
    rule, view = "host-bound-steps", FindingView(tab="gaps")
    share = params["share"] / 100.0
    if ctx.bundle is None:
        return _not_evaluated(ctx, rule, params, f"Host-bound steps: not evaluated ({NEEDS_EVENTS}).", view)
    d = ctx.dispatches
    if d.empty:
        return _no_dispatches(ctx, rule, params, view)
    b = ctx.bundle
    if b.kernels.empty and b.graph_launches.empty:
        return _empty(
            ctx,
            rule,
            params,
            "No GPU work recorded (no kernels or graph launches): nothing to compare the steps with.",
            view,
        )
    busy = ctx.dispatch_busy()
    dur = d["duration_ns"].to_numpy(np.int64)
    bound = busy < share * dur
    if not bound.any():
        return _empty(ctx, rule, params, f"No step has GPU busy under {params['share']} % of its time.", view)
    gaps = idle_gaps(gpu_work(b.kernels, b.memops, b.graph_launches), min_gap_ns=1)
    starts, ends = d["start_ns"].to_numpy(np.int64), d["end_ns"].to_numpy(np.int64)
    pos = np.searchsorted(starts, gaps["start_ns"].to_numpy(np.int64), side="right") - 1
    ok = (pos >= 0) & (gaps["start_ns"].to_numpy() < ends[np.clip(pos, 0, None)])
    ok &= bound[np.clip(pos, 0, None)]
    g = gaps[ok].assign(phase=ctx.phases.to_numpy()[pos[ok]])
    g = g.sort_values("duration_ns", ascending=False, kind="stable").head(CAUSE_GAPS)
    causes = gap_causes(g.drop(columns="phase"), b.kernels, b.api_calls, b.nvtx_ranges, limit=len(g))
    causes["phase"] = g["phase"].to_numpy()
    rows = []
    phases = ctx.phases.to_numpy()
    for phase in ph.PHASE_ORDER:
        sel = (phases == phase) & bound
        if not sel.any():
            continue
        c = causes[causes["phase"] == phase]
        c = c[c["cause"] != NO_HOST_ACTIVITY] if (c["cause"] != NO_HOST_ACTIVITY).any() else c
        top = c.groupby("cause", sort=False)["duration_ns"].sum().sort_values(ascending=False, kind="stable")
        rows.append(
            {
                "phase": phase,
                "steps": int((phases == phase).sum()),
                "host_bound_steps": int(sel.sum()),
                "step_ns": int(dur[sel].sum()),
                "gpu_busy_ns": int(busy[sel].sum()),
                "idle_ns": int((dur[sel] - busy[sel]).sum()),
                "cause": str(top.index[0]) if len(top) else NO_HOST_ACTIVITY,
                "cause_idle_ns": int(top.iloc[0]) if len(top) else 0,
            }
        )
    rows = pd.DataFrame(rows).sort_values("idle_ns", ascending=False, kind="stable")
    cost = int(rows["idle_ns"].sum())
    worst = int(np.argmax(np.where(bound, dur - busy, -1)))
    t0, t1 = _window(int(starts[worst]), int(ends[worst]))
    r0 = rows.iloc[0]
    text = (
        f"{int(rows['host_bound_steps'].sum()):,} of {count_noun(len(d), 'step')} keep the GPU busy under "
        f"{params['share']} % "
        f"of the step; {fmt_s(cost)} of GPU idle time in them, most in {r0['phase']} "
        f"({fmt_s(int(r0['idle_ns']))}), mainly {r0['cause']} ({fmt_s(int(r0['cause_idle_ns']))})."
    )
    return _finding(
        ctx,
        rule,
        params,
        cost,
        text,
        rows,
        FindingView(tab="dispatches", t0_ns=t0, t1_ns=t1, mark=("dispatch", int(starts[worst]), int(ends[worst]))),
    )


def _innermost_ranges(ranges: pd.DataFrame, tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Name of the innermost NVTX range on the same thread containing each call [start, end): among the
    ranges that contain it, the one that started last (the top of a push/pop stack; ties: the shorter);
    "" if none. Per call a walk back over the ranges that started before it, at most 64 steps, then a
    scan of all of them."""
    out = np.full(len(start), "", dtype=object)
    if ranges.empty or len(start) == 0:
        return out
    rtid = ranges["global_tid"].to_numpy()
    codes = ranges["name"].cat.codes.to_numpy() if isinstance(ranges["name"].dtype, pd.CategoricalDtype) else None
    cats = ranges["name"].cat.categories if codes is not None else None
    for t in np.unique(tid):
        sel = np.flatnonzero(rtid == t)
        if not len(sel):
            continue
        rs, re_ = ranges["start_ns"].to_numpy()[sel], ranges["end_ns"].to_numpy()[sel]
        order = np.lexsort((-(re_ - rs), rs))  # by start, then longer first: the shorter of equal starts is later
        rs, re_, sel = rs[order], re_[order], sel[order]
        calls = np.flatnonzero(tid == t)
        upto = np.searchsorted(rs, start[calls], side="right")
        for i, n in zip(calls, upto):
            hit = -1
            for j in range(n - 1, max(n - 65, -1), -1):
                if re_[j] >= end[i]:
                    hit = j
                    break
            if hit < 0 and n > 64:
                ok = np.flatnonzero(re_[: n - 64] >= end[i])
                hit = int(ok[-1]) if len(ok) else -1
            if hit >= 0:
                row = sel[hit]
                out[i] = str(cats[codes[row]]) if codes is not None else str(ranges["name"].iloc[row])
    return out


def _sync_from_summary(ctx: Context, rule: str, params: dict, view: FindingView) -> Finding:
    """Synchronisation from a summary's totals: the blocking API names, and the NVTX range whose total
    time covers theirs most tightly (sum between 100 % and 110 % of the calls' time)."""
    s = ctx.summary
    api = s.api[[bool(SYNC_CALL.match(str(n))) for n in s.api["name"]]]
    if api.empty:
        return _empty(ctx, rule, params, "No blocking CUDA synchronisation calls in the summary's API totals.", view)
    rows = []
    for name, count, total in zip(api["name"], api["count"], api["total_ns"]):
        nv = s.nvtx[(s.nvtx["sum_ns"] >= total) & (s.nvtx["sum_ns"] <= total * 1.1)]
        best = nv.sort_values("sum_ns", kind="stable").head(1)
        rows.append(
            {
                "api_name": str(name),
                "calls": int(count),
                "blocked_ns": int(total),
                "nvtx_range": str(best["name"].iloc[0]) if len(best) else "",
                "range_count": int(best["count"].iloc[0]) if len(best) else 0,
                "range_sum_ns": int(best["sum_ns"].iloc[0]) if len(best) else 0,
            }
        )
    rows = pd.DataFrame(rows).sort_values("blocked_ns", ascending=False, kind="stable")
    cost = int(rows["blocked_ns"].sum())
    r0 = rows.iloc[0]
    where = (
        f" inside NVTX range {r0['nvtx_range']} ({r0['range_count']:,} ranges, {fmt_s(int(r0['range_sum_ns']))})"
        if r0["nvtx_range"]
        else ""
    )
    # totals are summed over host threads, which a summary does not count: no share of a whole is defined
    span = f"; the GPU activity span is {fmt_s(s.gpu_activity_span_ns)}" if s.gpu_activity_span_ns > 0 else ""
    text = (
        f"{int(r0['calls']):,} {clean_api_name(r0['api_name'])} calls block the host {fmt_s(int(r0['blocked_ns']))}"
        f"{where}, summed over host threads{span} (from the summary's totals; shares and per-step numbers "
        f"need event rows)."
    )
    return _finding(ctx, rule, params, cost, text, rows, view, "from totals: " + NEEDS_EVENTS)


def sync_in_loop(ctx: Context, params: dict) -> Finding:
    """``sync-in-loop``: blocking CUDA calls (SYNC_CALL: stream/device/event/context synchronise) that
    start inside a dispatch, per phase: calls, calls per step, blocked time, the phase's step time, the
    share of the blocking threads' step time spent blocked (each thread's calls as a union inside the
    phase's steps, over step time × threads: at most 100 %), the call name and NVTX range holding the
    most blocked time. Cost = Σ blocked time. Without dispatch marks the whole trace is one loop ("all"):
    no per-step figures (calls_per_step and step_ns n/a), the share is of the threads' time over the
    trace's span (``trace_span``). On a summary JSON: from totals.
    """
    rule, view = "sync-in-loop", FindingView(tab="api")
    if ctx.bundle is None:
        return _sync_from_summary(ctx, rule, params, view)
    a = ctx.bundle.api_calls
    names = a["name"].astype("category")
    hit = [i for i, n in enumerate(names.cat.categories) if SYNC_CALL.match(str(n))]
    a = a[np.isin(names.cat.codes.to_numpy(), hit)]
    if a.empty:
        return _empty(ctx, rule, params, "No blocking CUDA synchronisation calls.", view)
    start = a["start_ns"].to_numpy(np.int64)
    end = a["end_ns"].to_numpy(np.int64)
    tid = a["global_tid"].to_numpy(np.int64)
    if ctx.dispatches.empty:  # the whole trace is the loop; its windows: the trace's span
        phase = np.full(len(a), "all", dtype=object)
        steps = {"all": 0}
        lo, hi = _trace_span(ctx)
        windows = {"all": (np.array([lo], np.int64), np.array([hi], np.int64))}
        span = {"all": hi - lo}
    else:
        phase = ctx.phase_of_time(start)
        pp = ctx.phases.to_numpy()
        ds, de = ctx.dispatches["start_ns"].to_numpy(np.int64), ctx.dispatches["end_ns"].to_numpy(np.int64)
        steps = {p: int((pp == p).sum()) for p in set(pp)}
        windows = {p: (ds[pp == p], de[pp == p]) for p in set(pp)}
        span = {p: int(ctx.dispatches["duration_ns"].to_numpy()[pp == p].sum()) for p in set(pp)}
    inside = phase != ""
    if not inside.any():
        return _empty(ctx, rule, params, f"{len(a):,} blocking calls, none inside a dispatch.", view)
    rng = _innermost_ranges(ctx.bundle.nvtx_ranges, a["global_tid"].to_numpy()[inside], start[inside], end[inside])
    rng = np.array([normalize_nvtx_name(x) if x else x for x in rng], dtype=object)
    f = pd.DataFrame(
        {
            "phase": phase[inside],
            "api_name": a["name"].astype(str).to_numpy()[inside],
            "nvtx_range": rng,
            "dur": (end - start)[inside],
            "tid": tid[inside],
            "start": start[inside],
            "end": end[inside],
        }
    )
    rows, threads = [], {}
    for p, g in f.groupby("phase", sort=False):
        by = g.groupby(["api_name", "nvtx_range"], sort=False)["dur"].sum().sort_values(ascending=False, kind="stable")
        blocked = int(g["dur"].sum())
        # share of the blocking threads' time in the phase's steps (or the trace's span) spent blocked: each
        # thread's calls as a union, inside those windows, over threads × window time; at most 100 % by
        # construction (a call that outlasts its step, or two threads blocked at once, cannot push it past)
        ws, we = windows[p]
        held = sum(
            intersection_length(t["start"].to_numpy(), t["end"].to_numpy(), ws, we)
            for _, t in g.groupby("tid", sort=False)
        )
        threads[p] = int(g["tid"].nunique())
        rows.append(
            {
                "phase": p,
                "steps": steps.get(p, 0),
                "calls": len(g),
                "calls_per_step": round(len(g) / steps[p], 2) if steps.get(p) else float("nan"),
                "blocked_ns": blocked,
                "step_ns": span.get(p, 0) if steps.get(p) else None,
                "share_pct": _round_pct(held, span.get(p, 0) * threads[p]),
                "api_name": by.index[0][0],
                "nvtx_range": by.index[0][1],
                "top_blocked_ns": int(by.iloc[0]),
            }
        )
    rows = pd.DataFrame(rows).sort_values("blocked_ns", ascending=False, kind="stable")
    cost = int(rows["blocked_ns"].sum())
    r0 = rows.iloc[0]
    share = (
        "n/a"
        if r0["share_pct"] is None or pd.isna(r0["share_pct"])
        else "under 0.1 %"
        if 0 < cost and r0["share_pct"] < 0.05
        else f"{r0['share_pct']:.1f} %"
    )
    longest = int(np.argmax(np.where(inside, end - start, -1)))
    t0, t1 = _window(int(start[longest]), int(end[longest]))
    where = f" inside {r0['nvtx_range']}" if r0["nvtx_range"] else ""
    n_threads = threads[r0["phase"]]
    calls = int(rows['calls'].sum())
    if ctx.dispatches.empty:
        text = (
            f"No dispatch marks, so the whole trace is the loop (no per-step figures): "
            f"{count_noun(calls, 'blocking call')} hold{'s' if calls == 1 else ''} "
            f"{count_noun(n_threads, 'host thread')} {fmt_s(cost)}, {share} of "
            f"{'its' if n_threads == 1 else 'their'} time over the trace's {fmt_s(span['all'])} span "
            f"(first to last recorded event), mostly {clean_api_name(r0['api_name'])}{where} "
            f"({fmt_s(int(r0['top_blocked_ns']))})."
        )
    else:
        whose = "its step time" if n_threads == 1 else f"its step time on {n_threads} blocking host threads"
        text = (
            f"{count_noun(calls, 'blocking call')} in the dispatch loop hold{'s' if calls == 1 else ''} the host "
            f"{fmt_s(cost)}; "
            f"{r0['phase']}: {r0['calls_per_step']:g} per step, {share} of {whose}, mostly "
            f"{clean_api_name(r0['api_name'])}{where} ({fmt_s(int(r0['top_blocked_ns']))})."
        )
    return _finding(ctx, rule, params, cost, text, rows, FindingView(tab="api", t0_ns=t0, t1_ns=t1))


def launch_bound(ctx: Context, params: dict) -> Finding:
    """``launch-bound``: per phase, kernels per step, the share of kernels shorter than their launch
    call (a call that launched n kernels, e.g. a graph launch, counts 1/n per kernel), and launch-call
    time per step and in all. A phase is launch-bound when that share is at least
    ``share`` %; cost = Σ (launch call − kernel) over its kernels shorter than their launch.
    Rows per phase (all phases, ``launch_bound`` true/false). Without dispatch marks the whole trace is one
    phase ("all", steps 0) and the per-step figures are n/a.
    """
    rule, view = "launch-bound", FindingView(tab="kernels", sort="-count")
    if ctx.bundle is None:
        return _not_evaluated(ctx, rule, params, f"Launch-bound phases: not evaluated ({NEEDS_EVENTS}).", view)
    j = ctx.launches()
    if j.empty:
        return _empty(ctx, rule, params, "No kernel could be joined to its launch call (correlation ids).", view)
    # a kernel without usable timestamps has no duration to compare (0 would read as "shorter than its launch")
    timed = usable_kernel_mask(ctx.bundle.kernels)[j["kernel_index"].to_numpy()]
    if not timed.all():
        j = j[timed].reset_index(drop=True)
        if j.empty:
            return _empty(
                ctx, rule, params, "No kernel with usable timestamps could be joined to its launch call.", view
            )
    kdur = ctx.kernel_duration()[j["kernel_index"].to_numpy()]
    # a call that launched several kernels (a node-traced graph launch) is shared between them
    aidx = j["api_index"].to_numpy()
    per_call = np.bincount(aidx, minlength=int(aidx.max()) + 1)[aidx]
    ldur = j["api_ns"].to_numpy() // per_call
    if ctx.dispatches.empty:
        codes, names = np.zeros(len(j), dtype=np.int64), np.array(["all"], dtype=object)
        steps = {"all": 0}
    else:
        attr = ctx.attribution()[j["kernel_index"].to_numpy()]
        pp = ctx.phases.to_numpy()
        pcode, pnames = pd.factorize(pp)  # per dispatch: small
        codes = np.where(attr != UNATTRIBUTED, pcode[np.clip(attr, 0, None)], len(pnames))
        names = np.append(np.asarray(pnames, dtype=object), "")
        steps = {p: int((pp == p).sum()) for p in set(pp)}
    m = len(names)
    count = np.bincount(codes, minlength=m)
    short = np.bincount(codes, weights=(kdur < ldur), minlength=m)
    over = np.bincount(codes, weights=np.clip(ldur - kdur, 0, None), minlength=m)
    lsum = np.bincount(codes, weights=ldur, minlength=m)
    rows = []
    for i, p in enumerate(names):
        if p == "" or not count[i]:
            continue
        n = steps.get(p, 0)  # no steps (no dispatch marks): no per-step figure (n/a), never one over 0 or 1 step
        share = share_pct(int(short[i]), int(count[i]))  # count > 0 here
        rows.append(
            {
                "phase": p,
                "steps": n,
                "kernels": int(count[i]),
                "kernels_per_step": round(int(count[i]) / n, 2) if n else None,
                "short_kernel_pct": round(share, 2),
                "launch_ns_per_step": int(lsum[i]) // n if n else None,
                "launch_over_kernel_ns": int(over[i]),
                "launch_bound": share >= params["share"],
            }
        )
    if not rows:
        return _empty(ctx, rule, params, "No kernel launched inside a dispatch.", view)
    rows = pd.DataFrame(rows).sort_values("launch_over_kernel_ns", ascending=False, kind="stable")
    bound = rows[rows["launch_bound"]]
    if bound.empty:
        return Finding(
            rule,
            "none",
            0,
            f"No launch-bound phase: at most {rows['short_kernel_pct'].max():.1f} % of "
            f"kernels run shorter than their launch call (threshold {params['share']} %).",
            params,
            rows,
            view,
        )
    cost = int(bound["launch_over_kernel_ns"].sum())
    r0 = bound.iloc[0]
    if r0["steps"]:
        text = (
            f"{r0['phase']} is launch-bound: {r0['kernels_per_step']:g} kernels per step, "
            f"{r0['short_kernel_pct']:.1f} % shorter than their launch call, "
            f"{fmt_s(int(r0['launch_ns_per_step']))} of launch calls per step; "
            f"launches outlast their kernels by {fmt_s(cost)} in all."
        )
    else:
        n, launch_ns = int(r0["kernels"]), int(lsum[list(names).index(r0["phase"])])
        which = (
            "its 1 kernel runs shorter than its launch call"
            if n == 1
            else f"{r0['short_kernel_pct']:.1f} % of {n:,} kernels run shorter than their launch call"
        )
        text = (
            f"No dispatch marks, so the whole trace is one loop (no per-step figures) and it is launch-bound: "
            f"{which}, {fmt_s(launch_ns)} of launch calls in all; launches outlast their kernels by "
            f"{fmt_s(cost)} in all."
        )
    return _finding(ctx, rule, params, cost, text, rows, view)


def decode_without_graphs(ctx: Context, params: dict) -> Finding:
    """``decode-no-graphs``: decode dispatches run without CUDA graphs: their mark says ``mode=NONE``,
    or (event rows) none of their kernels carries a graph node id and no graph launch ran in them.
    Launches per step a graph would remove = the step's kernel launches (one graph launch instead);
    cost = Σ launch-call time in those steps. On a summary JSON: the marks decide and the cost is the
    launch calls' total scaled by the share of such steps among all dispatches (an estimate), at most
    those steps' own time (mark to mark).
    """
    rule, view = "decode-no-graphs", FindingView(tab="dispatches")
    d = ctx.dispatches
    if d.empty:
        return _no_dispatches(ctx, rule, params, view)
    pp = ctx.phases.to_numpy()
    decode = pp == ph.DECODE
    if not decode.any():
        return _empty(ctx, rule, params, "No decode dispatches (phase split by token count).", view)
    mode_none = d["mode"].astype(str).str.upper().to_numpy() == "NONE"
    note, capped = "", False
    if ctx.bundle is None:
        nograph = decode & mode_none
        kernels_per_step = ctx.summary.kernel_count / len(d) if len(d) else 0.0
        launch_total = int(
            sum(t for n, t in zip(ctx.summary.api["name"], ctx.summary.api["total_ns"]) if LAUNCH_CALL.match(str(n)))
        )
        cost = int(launch_total * nograph.sum() / len(d))
        # the estimate spreads every launch over every dispatch alike (prefill's heavier launching too); the
        # launch calls of a step cannot outlast the step, so the steps' own time bounds it
        steps_ns = int(d["duration_ns"].to_numpy()[nograph].sum()) if "duration_ns" in d else cost
        capped = cost > steps_ns
        cost = min(cost, steps_ns)
        launch_ns = cost
        note = "estimated from totals: " + NEEDS_EVENTS
    elif ctx.bundle.kernels.empty and ctx.bundle.graph_launches.empty:
        return _empty(ctx, rule, params, "No GPU work recorded (no kernels or graph launches).", view)
    else:
        b = ctx.bundle
        attr = ctx.attribution()
        j = ctx.launches()
        has_node = b.kernels["graph_node_id"].notna().to_numpy()
        sel = attr != UNATTRIBUTED
        graph_steps = np.zeros(len(d), dtype=bool)
        graph_steps[np.unique(attr[sel & has_node])] = True
        if not b.graph_launches.empty:
            gs = b.graph_launches["start_ns"].to_numpy(np.int64)
            pos = np.searchsorted(d["start_ns"].to_numpy(np.int64), gs, side="right") - 1
            graph_steps[np.unique(pos[pos >= 0])] = True
        nograph = decode & (mode_none | ~graph_steps)
        per_step = np.bincount(attr[sel], minlength=len(d))
        kernels_per_step = float(per_step[nograph].mean()) if nograph.any() else 0.0
        jattr = attr[j["kernel_index"].to_numpy()]
        in_ng = (jattr != UNATTRIBUTED) & nograph[np.clip(jattr, 0, None)]
        launch_ns = int(j["api_ns"].to_numpy()[in_ng].sum())
        cost = launch_ns
    n_ng = int(nograph.sum())
    if not n_ng:
        return _empty(ctx, rule, params, f"All {int(decode.sum()):,} decode dispatches use CUDA graphs.", view)
    rows = pd.DataFrame(
        [
            {
                "phase": ph.DECODE,
                "steps": int(decode.sum()),
                "no_graph_steps": n_ng,
                "no_graph_pct": _round_pct(n_ng, int(decode.sum())),
                "mode_none_steps": int((decode & mode_none).sum()),
                "launches_per_step": round(kernels_per_step, 2),
                "launch_ns": launch_ns,
            }
        ]
    )
    first = int(np.flatnonzero(nograph)[0])
    t0, t1 = _window(int(d["start_ns"].iloc[first]), int(d["end_ns"].iloc[first]))
    text = (
        f"{n_ng:,} of {int(decode.sum()):,} decode dispatches ({_pct_text(n_ng, int(decode.sum()), '.0f')} %) run "
        f"without "
        f"CUDA graphs ({int((decode & mode_none).sum()):,} marked mode=NONE); a graph would replace "
        f"~{kernels_per_step:.0f} launch{'' if round(kernels_per_step) == 1 else 'es'} per step, "
        f"{fmt_s(launch_ns)} of launch calls"
        + (
            (
                " (estimated from totals, which spread all launches over all dispatches alike; at most the "
                "steps' own time)."
                if capped
                else " (estimated from totals)."
            )
            if note
            else "."
        )
    )
    mark = ("dispatch", int(d["start_ns"].iloc[first]), int(d["end_ns"].iloc[first]))
    return _finding(
        ctx, rule, params, cost, text, rows, FindingView(tab="dispatches", t0_ns=t0, t1_ns=t1, mark=mark), note
    )


def padding_waste(ctx: Context, params: dict) -> Finding:
    """``padding-waste``: per phase, padded − actual tokens from the dispatch marks
    (``actual=``/``padded=``). Cost = Σ step time × (padded − actual) / padded over padded steps.
    Rows per phase with waste: phase, steps, padded_steps, actual_tokens, padded_tokens, waste_tokens,
    waste_pct, waste_ns. Works on a summary JSON (mark to mark durations).
    """
    rule, view = "padding-waste", FindingView(tab="dispatches")
    d = ctx.dispatches
    if d.empty:
        return _no_dispatches(ctx, rule, params, view)
    ok = (d["tokens"].notna() & d["padded"].notna()).to_numpy()
    actual = d["tokens"].fillna(0).to_numpy(np.int64)
    padded = d["padded"].fillna(0).to_numpy(np.int64)
    waste = np.where(ok, np.clip(padded - actual, 0, None), 0)
    wns = np.where(waste > 0, d["duration_ns"].to_numpy(np.int64) * waste // np.maximum(padded, 1), 0)
    if not ok.any():  # nothing to compare: the rule could not look
        return _not_evaluated(
            ctx,
            rule,
            params,
            "Not evaluated: no dispatch mark gives both actual= and padded= token counts.",
            view,
            "no dispatch mark gives actual= and padded=",
        )
    if not waste.any():
        return _empty(
            ctx,
            rule,
            params,
            f"No padding: padded = actual tokens in all {int(ok.sum()):,} dispatches that give both.",
            view,
        )
    pp = ctx.phases.to_numpy()
    rows = []
    for p in ph.PHASE_ORDER:
        sel = (pp == p) & ok
        if not (sel & (waste > 0)).any():
            continue
        rows.append(
            {
                "phase": p,
                "steps": int(sel.sum()),
                "padded_steps": int((sel & (waste > 0)).sum()),
                "actual_tokens": int(actual[sel].sum()),
                "padded_tokens": int(padded[sel].sum()),
                "waste_tokens": int(waste[sel].sum()),
                "waste_pct": _round_pct(int(waste[sel].sum()), int(padded[sel].sum())),
                "waste_ns": int(wns[sel].sum()),
            }
        )
    rows = pd.DataFrame(rows).sort_values("waste_ns", ascending=False, kind="stable")
    cost = int(rows["waste_ns"].sum())
    r0 = rows.iloc[0]
    worst = int(np.argmax(wns))
    t0, t1 = _window(int(d["start_ns"].iloc[worst]), int(d["end_ns"].iloc[worst]))
    text = (
        f"{r0['phase']} pads {r0['waste_tokens']:,} tokens ({r0['waste_pct']:.1f} % of {r0['padded_tokens']:,} "
        f"padded) over {count_noun(int(r0['padded_steps']), 'step')}; {fmt_s(cost)} of step time goes to padding."
    )
    mark = ("dispatch", int(d["start_ns"].iloc[worst]), int(d["end_ns"].iloc[worst]))
    return _finding(ctx, rule, params, cost, text, rows, FindingView(tab="dispatches", t0_ns=t0, t1_ns=t1, mark=mark))


def _is_communication(k: pd.DataFrame) -> np.ndarray:
    """Kernels whose category (``categories.categorize``: short name first, then demangled name) is
    "communication", decided once per distinct short name and, where no rule matches the short name,
    once per distinct demangled name."""
    short, full = pd.Categorical(k["short_name"]), pd.Categorical(k["name"])
    by_short = [categorize(str(c), "")[0] for c in short.categories]
    by_full = [categorize("", str(c))[0] for c in full.categories]
    comm_short = np.array([c == "communication" for c in by_short] + [False])
    unmatched = np.array([c == OTHER for c in by_short] + [True])
    comm_full = np.array([c == "communication" for c in by_full] + [False])
    sc, fc = short.codes, full.codes  # -1 (missing) indexes the trailing entry
    return comm_short[sc] | (unmatched[sc] & comm_full[fc])


def exposed_communication(ctx: Context, params: dict) -> Finding:
    """``exposed-comm``: per GPU, communication kernel time (category "communication", e.g. NCCL) not
    overlapped by other kernels on the same GPU: |∪comm| − |∪comm ∩ ∪compute|. Cost = Σ over GPUs.
    Rows per GPU with communication: device_id, comm_ns, overlapped_ns, exposed_ns, exposed_pct.
    """
    rule, view = "exposed-comm", FindingView(tab="kernels", sort="-total_ns")
    if ctx.bundle is None:
        return _not_evaluated(ctx, rule, params, f"Exposed communication: not evaluated ({NEEDS_EVENTS}).", view)
    k = ctx.bundle.kernels
    timed = ctx.kernel_duration() > 0  # zero-length and invalid rows add nothing to a union
    if not timed.any():
        return _empty(
            ctx,
            rule,
            params,
            "No kernels."
            if k.empty
            else f"No timed kernels: none of the {count_noun(len(k), 'kernel row')} has a usable duration.",
            view,
        )
    comm = _is_communication(k) & timed
    if not comm.any():
        return _empty(ctx, rule, params, "No communication kernels (NCCL or similar).", view)
    rows = []
    s, e, dev = k["start_ns"].to_numpy(np.int64), ctx.kernel_end(), k["device_id"].to_numpy(np.int64)
    for dv in np.unique(dev[comm]):
        c, o = comm & (dev == dv), ~comm & timed & (dev == dv)
        total = union_length(s[c], e[c])
        overlap = intersection_length(s[c], e[c], s[o], e[o])
        rows.append(
            {
                "device_id": int(dv),
                "comm_ns": total,
                "overlapped_ns": overlap,
                "exposed_ns": total - overlap,
                "exposed_pct": _round_pct(total - overlap, total),
            }
        )
    rows = pd.DataFrame(rows).sort_values("exposed_ns", ascending=False, kind="stable")
    cost = int(rows["exposed_ns"].sum())
    short = pd.Categorical(k["short_name"])
    per_name = np.bincount(short.codes[comm], weights=(e - s)[comm], minlength=len(short.categories))
    top_name = short.categories[int(np.argmax(per_name))]
    view = FindingView(tab="kernels", sort="-total_ns", kernel=str(top_name)[:200])
    r0 = rows.iloc[0]
    text = (
        f"Communication kernels run {fmt_s(cost)} not overlapped by compute across {count_noun(len(rows), 'GPU')}; "
        f"GPU {int(r0['device_id'])}: {fmt_s(int(r0['exposed_ns']))} of {fmt_s(int(r0['comm_ns']))} "
        f"({r0['exposed_pct']:.1f} %) exposed."
    )
    return _finding(ctx, rule, params, cost, text, rows, view)


def pageable_in_loop(ctx: Context, params: dict) -> Finding:
    """``pageable-in-loop``: the copies of ``cuda-sync-memcpy`` and ``cuda-async-memcpy``, issued by CUDA
    runtime, driver-API or HIP calls (``cudaMemcpy*``, ``cuMemcpy*``, ``hipMemcpy*``), placed in the
    dispatch whose window holds the copy's start. Cost = Σ durations of those inside a dispatch (the
    steady-state loop); copies outside are listed with phase "" and cost nothing.
    Rows: phase, rule, duration_ns, start_ns, src_kind, dst_kind, bytes, pid, device_id, stream_id, api_name.
    """
    rule, view = "pageable-in-loop", FindingView(tab="api")
    if ctx.bundle is None:
        return _not_evaluated(ctx, rule, params, f"Copies in the loop: not evaluated ({NEEDS_EVENTS}).", view)
    b = ctx.bundle
    parts = [
        nr.cuda_sync_memcpy(b.memops, b.api_calls, MEMCPY_SYNC_CALL).assign(rule="cuda-sync-memcpy"),
        nr.cuda_async_memcpy(b.memops, b.api_calls, MEMCPY_ASYNC_CALL).assign(rule="cuda-async-memcpy"),
    ]
    rows = pd.concat(parts, ignore_index=True)
    if rows.empty:
        return _empty(ctx, rule, params, "No synchronous or pageable copies.", view)
    if ctx.dispatches.empty:  # the nsys rules list runtime-API copies only: point there only when all are
        see = (
            "see cuda-sync-memcpy, cuda-async-memcpy"
            if rows["api_name"].astype(str).str.startswith("cuda").all()
            else "the API tab lists their calls"
        )
        return _empty(
            ctx,
            rule,
            params,
            f"{count_noun(len(rows), 'synchronous/pageable copy', 'copies')}; no dispatch "
            f"marks to place them in a loop ({see}).",
            view,
        )
    rows.insert(0, "phase", ctx.phase_of_time(rows["start_ns"].to_numpy(np.int64)))
    rows = rows[
        [
            "phase",
            "rule",
            "duration_ns",
            "start_ns",
            "src_kind",
            "dst_kind",
            "bytes",
            "pid",
            "device_id",
            "stream_id",
            "api_name",
        ]
    ]
    inside = rows["phase"] != ""
    if not inside.any():
        return _empty(
            ctx,
            rule,
            params,
            f"{count_noun(len(rows), 'synchronous/pageable copy', 'copies')}, none inside a dispatch.",
            view,
        )
    rows = rows.sort_values(["duration_ns", "start_ns"], ascending=[False, True], kind="stable")
    inside = rows["phase"] != ""  # in the sorted order
    cost = int(rows.loc[inside, "duration_ns"].sum())
    top = rows[inside].iloc[0]
    t0, t1 = _window(int(top["start_ns"]), int(top["start_ns"]) + int(top["duration_ns"]))
    by = rows[inside].groupby("phase")["duration_ns"].agg(["size", "sum"]).sort_values("sum", ascending=False)
    copies = int(inside.sum())
    text = (
        f"{count_noun(copies, 'synchronous or pageable copy', 'copies')} inside the dispatch loop "
        f"take{'s' if copies == 1 else ''} "
        f"{fmt_s(cost)} of GPU copy time, most in {by.index[0]} "
        f"({count_noun(int(by['size'].iloc[0]), 'copy', 'copies')}); "
        f"largest: {int(top['bytes']):,} B {top['src_kind']}→{top['dst_kind']} by {clean_api_name(top['api_name'])}."
    )
    return _finding(ctx, rule, params, cost, text, rows, FindingView(tab="api", t0_ns=t0, t1_ns=t1))


_SERVING = {
    "host-bound-steps": host_bound_steps,
    "sync-in-loop": sync_in_loop,
    "launch-bound": launch_bound,
    "decode-no-graphs": decode_without_graphs,
    "padding-waste": padding_waste,
    "exposed-comm": exposed_communication,
    "pageable-in-loop": pageable_in_loop,
}


def resolve_params(rule: str, given: dict | None = None) -> dict:
    """The parameters of ``rule``: defaults overridden by ``given`` (name -> number).

    Raises:
        KeyError: unknown rule. ValueError: unknown parameter or a value out of range, with a
            message naming the rule, the parameter and the allowed range.
    """
    spec = {p.name: p for p in RULE_PARAMS[rule]}
    out = {p.name: p.default for p in spec.values()}
    for name, value in (given or {}).items():
        if name not in spec:
            known = ", ".join(spec) or "none"
            raise ValueError(f"rule {rule} has no parameter {name!r} (parameters: {known})")
        p = spec[name]
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and p.low <= value <= p.high):
            raise ValueError(f"{rule}.{name} must be a number from {p.low} to {p.high}, got {value!r}")
        if p.integer and value != int(value):
            raise ValueError(f"{rule}.{name} must be a whole number, got {value!r}")
        out[name] = value
    return out


def evaluate(
    summary: Summary,
    bundle: TraceBundle | None,
    *,
    rules: list[str] | tuple[str, ...] | None = None,
    params: dict[str, dict] | None = None,
    dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX,
    threshold: float | None = None,
    derived: BundleAnalysis | None = None,
    steps: StepDispatches | None = None,
) -> list[Finding]:
    """Evaluate ``rules`` (default RULES) and rank them: cost descending, then rule id.

    Args:
        params: rule id -> {parameter: value} overriding the defaults.
        threshold: prefill/decode split in tokens (None: automatic, as the dashboard).
        derived: the trace's derived results (``analysis.derived.BundleAnalysis``), shared with the views.
        steps: a framework's steps as the dispatches (``StepDispatches``; None: the dispatch marks of
            ``dispatch_prefix``).

    Returns:
        One Finding per rule, ranked.

    Raises:
        KeyError: an unknown rule id. ValueError: a bad parameter (see ``resolve_params``).
    """
    chosen = list(dict.fromkeys(rules or RULES))
    for r in chosen:
        if r not in RULE_PARAMS:
            raise KeyError(r)
    resolved = {r: resolve_params(r, (params or {}).get(r)) for r in chosen}
    ctx = build_context(
        summary, bundle, dispatch_prefix=dispatch_prefix, threshold=threshold, derived=derived, steps=steps
    )
    uncaptured = bool(bundle.meta.gpu_activity_missing if bundle is not None else summary.gpu_activity_missing)

    def run(rule: str) -> Finding:
        if missing := missing_inputs(summary, bundle, rule):
            what = " or ".join(missing)
            if uncaptured and (GPU_WORK in missing or KERNEL_ROWS in missing):  # launched, not recorded
                return _not_evaluated(
                    ctx,
                    rule,
                    resolved[rule],
                    "Not evaluated: GPU activity was not captured "
                    "(kernels were launched, but the trace holds no kernel or CUDA-graph "
                    "execution).",
                    note="GPU activity was not captured",
                )
            spelled = what.replace(GPU_WORK, "GPU work (no kernel, CUDA-graph or memcpy/memset row)")
            return _not_evaluated(
                ctx,
                rule,
                resolved[rule],
                f"Not evaluated: this trace has no {spelled}.",
                note=f"the trace has no {what}",
            )
        return _SERVING[rule](ctx, resolved[rule]) if rule in _SERVING else nsys_finding(ctx, rule, resolved[rule])

    out = [run(r) for r in chosen]
    return sorted(out, key=lambda f: (-f.cost_ns, RULES.index(f.rule)))
