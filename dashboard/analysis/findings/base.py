"""What every findings rule shares: rule ids, the Finding and its view, the Context, severity and wording."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.analysis import nsys_rules as nr
from dashboard.analysis import phases as ph
from dashboard.analysis.attribution import dispatch_busy_ns
from dashboard.analysis.derived import BundleAnalysis
from dashboard.analysis.gpu_time import (
    BUSY_ALL,
    BUSY_KERNELS,
    any_device_union,
    device_unions,
    has_gpu_work,
    work_for_source,
)
from dashboard.analysis.idle import idle_while_blocked, no_gpu_busy
from dashboard.analysis.intervals import union_length
from dashboard.analysis.kernel_times import timed_kernels
from dashboard.analysis.ratio import share_pct
from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX
from dashboard.model import Summary, TraceBundle

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


# The event rows each rule reads besides the dispatch marks. A rule whose rows a trace lacks (e.g. a CPU-only
# trace: NVTX, no CUDA) is not evaluated, and its note names the missing rows: "nothing found" would claim a
# look that never happened.
GPU_WORK = "GPU work"  # kernel, CUDA-graph or memcpy/memset rows


KERNEL_ROWS = "kernel rows"


API_CALLS = "CUDA API calls"


MEMOPS = "memcpy/memset rows"


CAUSE_GAPS = 200  # host-bound-steps reads the host cause of this many longest gaps in host-bound steps


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
# The launch of a whole CUDA (or HIP) graph: the kernels it runs are a graph's, whether or not they carry a node id.
GRAPH_LAUNCH_CALL = re.compile(r"^(cudaGraphLaunch|cuGraphLaunch|hipGraphLaunch)", re.IGNORECASE)
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
    steps_searched: bool = False  # the step source was auto and found no annotations: only the marks were left

    def launches(self) -> pd.DataFrame:
        """Each kernel joined to its launch call (``launches.kernel_launches``: kernel_index, api_index,
        pid, api_start_ns; the call's duration: ``launches.launch_call_ns``), in kernel order."""
        return self.derived.launches()

    def attribution(self) -> np.ndarray:
        """Dispatch index per kernel, UNATTRIBUTED when unknown (``attribution.attribute_kernels``; with
        steps as the dispatches, their attribution by the launching call's start, same process)."""
        if self.step_attribution is not None:
            return self.step_attribution
        return self.derived.attribution(self.prefix)

    def kernel_end(self) -> np.ndarray:
        """``kernel_times.kernel_end_ns`` (same-stream overruns clipped, as every figure)."""
        return self.derived.kernel_end()

    def kernel_duration(self) -> np.ndarray:
        """``kernel_times.kernel_durations`` as int64 numpy (0 for invalid rows)."""
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

    def busy_unions(self, busy_source: str = BUSY_KERNELS) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Each device's busy union for a busy source (the trace's memoised unions when it has derived data)."""
        if self.derived is None:
            return device_unions(work_for_source(self.bundle, busy_source))
        return self.derived.busy_unions(busy_source)

    def busy_all_unions(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Each device's busy union of every GPU work row: kernels, CUDA graphs, memcpy/memset (``BUSY_ALL``)."""
        return self.busy_unions(BUSY_ALL)

    def no_gpu_busy(self) -> tuple[np.ndarray, np.ndarray]:
        """When no GPU was busy within the span of ``busy_all_unions`` (``idle.no_gpu_busy``): what blocking host
        calls or a step short of work can have cost the GPU."""
        if self.derived is None:
            return no_gpu_busy(self.busy_all_unions())
        return self.derived.memo.get(("no_gpu_busy",), lambda: no_gpu_busy(self.busy_all_unions()))

    def gpu_work_span(self) -> tuple[int, int]:
        """``(first start, last end)`` of every GPU work row (``(0, 0)`` without any)."""
        us, ue = any_device_union(self.busy_all_unions())
        return (int(us[0]), int(ue[-1])) if len(us) else (0, 0)

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
    steps_searched: bool = False,
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
    return Context(summary, bundle, d, phases, max(int(ref), 0), dispatch_prefix, derived, None, steps_searched)


def trace_span(bundle: TraceBundle, timed: pd.DataFrame | None = None) -> tuple[int, int]:
    """First start and last end over every recorded row (kernels, CUDA API calls, NVTX ranges and marks,
    memcpy/memset, graph launches), ns; ``(0, 0)`` when there is none. A host thread's time lies inside it.
    ``timed``: ``kernel_times.timed_kernels`` of the bundle when already made."""
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


def graph_word(bundle: TraceBundle | None) -> str:
    """What a trace's graphs are called: "HIP graph" in a ROCm trace (its runtime calls are HIP's, none CUDA's),
    else "CUDA graph"."""
    if bundle is None or bundle.api_calls.empty:
        return "CUDA graph"
    names = bundle.api_calls["name"]
    names = [str(n) for n in (names.cat.categories if isinstance(names.dtype, pd.CategoricalDtype) else names.unique())]
    hip, cuda = any(n.startswith("hip") for n in names), any(n.startswith("cu") for n in names)
    return "HIP graph" if hip and not cuda else "CUDA graph"


def blocking_cost(ctx: Context, starts: np.ndarray, ends: np.ndarray) -> tuple[int, str]:
    """``(cost, clause)`` of blocking host calls ``[starts, ends)``: the GPU idle they can have cost
    (``idle.idle_while_blocked`` of ``Context.no_gpu_busy``: no kernel, CUDA graph or memcpy/memset running, within
    their first-to-last span) and the clause their finding ends with. Without any GPU work recorded that is unknown
    (the GPU may not have been captured), and the time any of them blocked stands as the cost (their union:
    calls of several threads, or nested ones, at once count once, so it never exceeds the trace)."""
    one = len(starts) == 1
    they = "it" if one else "they"
    if not has_gpu_work(ctx.bundle):
        return union_length(starts, ends), (
            f"no GPU work was recorded, so what {they} cost the GPU is unknown: the time {they} blocked"
            f"{'' if one else ' (calls at the same time counted once)'} stands as the cost"
        )
    idle = idle_while_blocked(starts, ends, ctx.no_gpu_busy())
    if idle <= 0:
        lo, hi = ctx.gpu_work_span()
        if bool(((ends <= lo) | (starts >= hi)).all()):  # the GPU had not started or had finished
            return 0, (
                f"{they} lie{'s' if one else ''} outside the recorded GPU work (its first start to its last end), "
                f"so what {they} cost the GPU is not measured"
            )
        return 0, (
            f"GPU work (kernels, {graph_word(ctx.bundle)}s, memcpy/memset) never stopped while {they} blocked or "
            f"right after {they} returned, within its first-to-last span: no GPU time lost"
        )
    after = "after it returned from waiting on the GPU" if one else "after one that waited on the GPU returned"
    return idle, (
        f"no GPU work (kernel, {graph_word(ctx.bundle)} or memcpy/memset) ran for {units.duration_short(idle)} "
        f"while {they} blocked, or {after}, until the GPU got work again: the time {they} cost"
    )


def blocking_rule_on_host_time(ctx: Context, rule: str) -> bool:
    """Whether a ``BLOCKING_RULES`` finding's cost is host time: only when the trace has rows but no GPU work, so
    what the calls cost the GPU is unknown (``blocking_cost``)."""
    return rule in BLOCKING_RULES and ctx.bundle is not None and not has_gpu_work(ctx.bundle)


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


def _window(start: int, end: int) -> tuple[int, int]:
    """A window showing [start, end) with 10 % margin on each side (at least 1 µs)."""
    pad = max((end - start) // 10, 1000)
    return max(int(start) - pad, 0), int(end) + pad


# Rules whose cost is host time (calls that launch), rated against host_reference_ns; the others' costs are GPU
# time, rated against the GPU reference (Context.reference_ns). The blocking rules cost the GPU idle their calls can
# have caused (GPU time), or their blocked host time when the trace has no GPU work (``blocking_cost``).
HOST_COST_RULES = frozenset({"launch-bound", "decode-no-graphs"})
BLOCKING_RULES = frozenset({"sync-in-loop", "cuda-sync-api"})


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
    host = rule in HOST_COST_RULES or blocking_rule_on_host_time(ctx, rule)
    ref = host_reference_ns(ctx) if host else ctx.reference_ns
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


def _no_dispatches(ctx: Context, rule: str, params: dict, view: FindingView) -> Finding:
    """A rule that needs dispatch steps, on a trace without marks of the prefix: not evaluated (never "nothing
    found": the rule could not look)."""
    if ctx.steps_searched:  # auto looked for every framework's annotations too
        return _not_evaluated(
            ctx,
            rule,
            params,
            f"Not evaluated: no serving steps in this trace (no dispatch marks named {ctx.prefix}…, nor vLLM, "
            "SGLang, TensorRT-LLM or ProfilerStep annotations; see --steps and --dispatch-prefix).",
            view,
            "no step annotations",
        )
    return _not_evaluated(
        ctx,
        rule,
        params,
        f"Not evaluated: no dispatch marks named {ctx.prefix}… in this trace (see --dispatch-prefix).",
        view,
        f"no dispatch marks named {ctx.prefix}…",
    )
