"""Headless assembly of the phase views from a trace's steps (``analysis.steps``): the Gantt, Per phase,
the phase figure and the Steps table when the steps come from a framework's own annotations (vLLM,
SGLang, TensorRT-LLM, ProfilerStep#N) or a user rule.

The seed preset (CG_DISPATCH marks, the prefix and threshold its parameters) and a trace without step
annotations keep the dispatch views of ``render`` exactly as they were: ``step_view`` returns None for
them. Statistics are those of one annotating process (``state.step_pid``, default the first with
steps), never merged across tensor-parallel workers; the Gantt draws every process, grouped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard import units
from dashboard.analysis import step_presets as sp
from dashboard.analysis import steps as st
from dashboard.analysis.attribution import phase_category_time
from dashboard.data.analysis import analysis_of, memo
from dashboard.figures.common import WIDE_CAPTION_WRAP_CHARS, add_caption, escape_text
from dashboard.figures.gantt import build_step_gantt
from dashboard.figures.phases import build_phase_analysis
from dashboard.figures.theme import DEFAULT_THEME, Theme
from dashboard.render.base import near_window, records
from dashboard.state import DEFAULT, ViewState

GANTT_STEP_BUDGET = 3000  # step bars in one Gantt figure (the longest; zoom for the rest)
STEP_ROW_LIMIT = 20_000  # rows of the Steps table sent to the browser (the longest steps)
# Gantt rows top to bottom: serving phases, then speculative decoding, idle, plain steps, graph captures.
GANTT_ORDER = (sp.PREFILL, sp.DECODE, sp.MIXED, sp.DRAFT, sp.VERIFY, sp.IDLE, sp.STEP, sp.CAPTURE)


def step_spec(state: ViewState) -> sp.StepSpec:
    """The step source a view state asks for. A link with a dispatch prefix of its own and no ``steps``
    (every link made before steps existed) names the seed preset: it opens the view it always did."""
    spec = sp.parse_step_source(state.steps, prefix=state.prefix, threshold=state.threshold)
    if spec.preset == sp.AUTO and state.prefix != DEFAULT.prefix:
        spec = replace(spec, preset="seed")
    return spec


def step_source(trace, state: ViewState) -> st.StepSource:
    """The StepSource the state's step choice resolves to on ``trace`` (``auto``: the preset found)."""
    return analysis_of(trace).steps(step_spec(state))[0]


def steps_from_text(trace, state: ViewState) -> str:
    """The panel's one line: ``Steps from: vLLM annotations (auto)``."""
    return f"Steps from: {step_source(trace, state).label}"


def reads_steps(source: st.StepSource) -> bool:
    """Whether the phase views read ``analysis.steps`` for this source (False: the seed's dispatch views,
    also when ``auto`` found no annotation at all, so their messages stay those of today)."""
    return source.framework


@dataclass(frozen=True)
class StepView:
    """The steps of one process: ``steps`` (STEPS rows of ``pid``, in the window with a stats window:
    wholly inside it), ``gpu`` (STEP_GPU aligned; None without kernels), ``stats`` (STEP_PHASE_STATS),
    ``category_time`` (phase, category, kernel_sum_ns, kernels); ``all_steps`` / ``all_gpu``: every
    process, the whole trace (the Gantt); ``processes``: pid -> steps."""

    source: st.StepSource
    pid: int | None
    processes: dict[int, int]
    steps: pd.DataFrame
    gpu: pd.DataFrame | None
    stats: pd.DataFrame
    category_time: pd.DataFrame | None
    all_steps: pd.DataFrame
    all_gpu: pd.DataFrame | None
    window: tuple[int, int] | None = None
    cut: int = 0  # steps of the process overlapping the stats window but cut by its edges (left out)
    first_kernel_ns: np.ndarray | None = None  # start of each step's first attributed kernel (aligned with steps)


def step_view(trace, state: ViewState) -> StepView | None:
    """The steps views' data for ``state`` (None when the phase views are the seed's dispatch views,
    ``reads_steps``). Memoised per (spec, process, stats window)."""
    spec = step_spec(state)
    ta = analysis_of(trace)
    source, steps = ta.steps(spec)
    if not reads_steps(source):
        return None
    w = state.stats_window() if trace.bundle is not None else None
    return memo(trace, ("step_view", spec, state.step_pid, w), lambda: _step_view(trace, spec, state.step_pid, w))


def _step_view(trace, spec: sp.StepSpec, pid: int | None, w: tuple[int, int] | None) -> StepView:
    ta = analysis_of(trace)
    source, steps = ta.steps(spec)
    gpu = ta.step_gpu(spec)
    counts = steps["pid"].value_counts()
    processes = {p: int(counts[p]) for p in st.step_processes(steps)}
    chosen = pid if pid in processes else (next(iter(processes)) if processes else None)
    mine = (steps["pid"] == chosen).to_numpy() if chosen is not None else np.zeros(len(steps), bool)
    cut = 0
    if w is not None:
        s, e = steps["start_ns"].to_numpy(), steps["end_ns"].to_numpy()
        over = mine & (s < w[1]) & (e > w[0])
        mine = over & (s >= w[0]) & (e <= w[1])
        cut = int(over.sum() - mine.sum())
    sel = steps[mine].reset_index(drop=True)
    g = gpu[mine].reset_index(drop=True) if gpu is not None else None
    stats = st.step_phase_stats(sel, g)
    category_time = first = None
    if trace.bundle is not None and len(trace.bundle.kernels) and len(sel):
        attr = ta.step_attribution(spec)
        first = _first_kernel(attr, trace.bundle.kernels["start_ns"].to_numpy(np.int64), sel["index"].to_numpy())
        attr = attr.copy()
        attr[~np.isin(attr, sel["index"].to_numpy())] = st.UNATTRIBUTED  # this process's (window's) steps only
        category_time = phase_category_time(
            trace.bundle.kernels, attr, pd.Series(sel["phase"].to_numpy(), index=sel["index"]), ta.categories()
        )
    return StepView(source, chosen, processes, sel, g, stats, category_time, steps, gpu, w, cut, first)


def _first_kernel(attr: np.ndarray, starts: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Start of the first kernel attributed to each step of ``index`` (int64 max where none)."""
    big = np.iinfo(np.int64).max
    first = np.full(int(max(index.max(initial=0), attr.max(initial=0))) + 1, big, dtype=np.int64)
    ok = attr >= 0
    np.minimum.at(first, attr[ok], starts[ok])
    return first[index]


def _no_steps_text(sv: StepView) -> str:
    if sv.source.rule is not None:
        return f"No range or mark of this trace matches the rule /{sv.source.rule}/."
    return f"No {sv.source.label} in this trace: choose another source in “Steps from”."


def step_scope_text(sv: StepView) -> str:
    """The "Stats for" line of a steps panel: the process shown and, with a window, which steps count."""
    who = (
        f"pid {sv.pid} ({len(sv.processes)} processes with steps: statistics of one, never merged)"
        if len(sv.processes) > 1
        else ""
    )
    if sv.window is None:
        text = "Stats for: whole trace"
    else:
        a, b = sv.window
        text = f"Stats for: steps wholly inside the window {units.window((a, b), exact=False)}" + (
            f" ({units.count(sv.cut, 'step')} cut by its edges left out)" if sv.cut else ""
        )
    return text + (f" · {who}" if who else "")


# ----- the Gantt ---------------------------------------------------------------------------------------------
def step_gantt(
    trace, state: ViewState, sv: StepView, x_range: tuple[int, int] | None, theme: Theme = DEFAULT_THEME
) -> go.Figure:
    """One bar per step of every process (grouped per process), coloured by phase, on the timeline's x
    axis; the legend counts the whole trace, or "N in view of M" when zoomed."""
    steps, gpu = sv.all_steps, sv.all_gpu
    title = f"Steps · {escape_text(trace.name)} · from {escape_text(sv.source.label)}"
    whole = steps[["pid", "phase"]]  # the legend counts and rows are the whole trace's, whatever is drawn
    in_view, near_text = None, ""
    if state.window() is not None:
        lo, hi = state.window()
        over = ((steps["start_ns"] < hi) & (steps["end_ns"] > lo)).to_numpy()
        in_view = steps["phase"][over].value_counts().to_dict()
        near = near_window(steps["start_ns"], steps["end_ns"], (lo, hi))
        if near.any() and not near.all():  # a zoom redraws the Gantt: only what it can show, and a pan's worth
            near_text = " near this window"
            steps = steps[near].reset_index(drop=True)
            gpu = gpu[near].reset_index(drop=True) if gpu is not None else None
    if len(steps) > GANTT_STEP_BUDGET:
        keep = np.sort(np.argsort(-steps["duration_ns"].to_numpy(), kind="stable")[:GANTT_STEP_BUDGET])
        title += (
            f" · the {GANTT_STEP_BUDGET:,} longest of {len(steps):,} steps{near_text} (zoom the timeline for the rest)"
        )
        steps = steps.iloc[keep].reset_index(drop=True)
        gpu = gpu.iloc[keep].reset_index(drop=True) if gpu is not None else None
    return build_step_gantt(
        steps,
        gpu,
        GANTT_ORDER,
        x_range_ns=x_range,
        title=title,
        uirevision=f"{trace.name}|timeline",
        in_view=in_view,
        empty_text=_no_steps_text(sv),
        whole=whole,
        theme=theme,
    )


# ----- Per phase ---------------------------------------------------------------------------------------------
STEP_METRICS = (  # (label, STEP_PHASE_STATS column, format)
    ("Steps", "steps", lambda v: f"{int(v):,}"),
    ("Requests", "requests", lambda v: f"{int(v):,}"),
    ("Tokens", "tokens", lambda v: f"{int(v):,}"),
    ("Total time", "total_ns", units.duration),
    ("Mean step", "mean_ns", units.duration),
    ("p50 step", "p50_ns", units.duration),
    ("p90 step", "p90_ns", units.duration),
    ("p99 step", "p99_ns", units.duration),
    ("Tokens / s", "tokens_per_s", lambda v: f"{v:,.0f}"),
    ("Kernels (by correlation)", "kernels", lambda v: f"{int(v):,}"),
    ("GPU time attributed (by correlation)", "gpu_time_ns", units.duration),
)
UNKNOWN_COUNT = "n/a"  # requests or tokens an annotation of the phase does not give (never a made-up 0)


def step_phase_rows(sv: StepView) -> list[dict]:
    """Per-phase statistics transposed: one row per metric, one column per phase present (graph
    captures left out); without kernels to attribute (a summary input) no kernel rows."""
    if sv.stats.empty:
        return []
    recs = sv.stats.to_dict("records")
    metrics = STEP_METRICS if sv.gpu is not None else STEP_METRICS[:-2]
    return [
        {"metric": label, **{r["phase"]: UNKNOWN_COUNT if units.is_na(r.get(col)) else fmt(r[col]) for r in recs}}
        for label, col, fmt in metrics
    ]


# ----- the phase figure ---------------------------------------------------------------------------------------
def step_phase_figure(trace, state: ViewState, sv: StepView, caption: str, theme: Theme = DEFAULT_THEME) -> go.Figure:
    """Step times per phase and kernel time by category per phase (attributed by correlation)."""
    serving = sv.steps[sv.steps["phase"] != sp.CAPTURE]
    empty = "No steps in this window." if sv.window is not None else _no_steps_text(sv)
    if len(sv.steps) and serving.empty:
        empty = "Only graph captures: no serving step to split into phases."
    fig = build_phase_analysis(
        serving, serving["phase"], sv.category_time if len(serving) else None, theme=theme, empty_text=empty
    )
    return add_caption(fig, caption, wrap=WIDE_CAPTION_WRAP_CHARS)


# ----- the Steps table ----------------------------------------------------------------------------------------
def step_table_rows(sv: StepView) -> list[dict]:
    """One record per step of the process shown (numbers raw, ns; unknown counts None): the dispatch
    table's columns (``mode`` = graph mode, ``gpu_busy_ns`` = the step's GPU time by correlation,
    ``launch_lead_ns`` = its first attributed kernel's start minus the step's) plus
    pid, name, context/generation requests and tokens, batch size."""
    s = sv.steps
    if s.empty:
        return []
    out = pd.DataFrame(
        {
            "index": s["index"],
            "phase": s["phase"],
            "tokens": s["tokens"],
            "mode": s["graph_mode"],
            "padded": s["padded"],
            "start_ns": s["start_ns"],
            "end_ns": s["end_ns"],
            "duration_ns": s["duration_ns"],
            "end_estimated": s["end_estimated"],
            "row_id": s["index"].astype(str),
            "pid": s["pid"],
            "name": s["name"],
            "context_requests": s["context_requests"],
            "context_tokens": s["context_tokens"],
            "generation_requests": s["generation_requests"],
            "generation_tokens": s["generation_tokens"],
            "batch_size": s["batch_size"],
        }
    )
    if sv.gpu is not None:
        out["kernels"] = sv.gpu["kernels"].to_numpy()
        out["gpu_busy_ns"] = sv.gpu["gpu_time_ns"].to_numpy()
        if sv.first_kernel_ns is not None:
            lead = pd.array(sv.first_kernel_ns - s["start_ns"].to_numpy(np.int64), dtype="Int64")
            out["launch_lead_ns"] = pd.Series(lead).mask(out["kernels"].to_numpy() == 0).array  # no kernel: none
    tokens = s["tokens"].astype("Float64")
    out["ns_per_token"] = (s["duration_ns"] / tokens.where(tokens > 0)).astype("Float64")
    if len(out) > STEP_ROW_LIMIT:
        out = out.iloc[np.sort(np.argsort(-out["duration_ns"].to_numpy(), kind="stable")[:STEP_ROW_LIMIT])]
    return records(out)


def process_options(sv: StepView | None) -> list[dict]:
    """The process selector's options (``pid N (M steps)``), empty with one process or none."""
    if sv is None or len(sv.processes) < 2:
        return []
    return [{"label": f"pid {p} ({units.count(n, 'step')})", "value": p} for p, n in sv.processes.items()]


__all__ = [
    "StepView",
    "step_spec",
    "step_source",
    "steps_from_text",
    "reads_steps",
    "step_view",
    "step_gantt",
    "step_phase_rows",
    "step_phase_figure",
    "step_table_rows",
    "step_scope_text",
    "process_options",
]
