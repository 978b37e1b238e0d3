"""Dispatch Gantt: one bar per dispatch from its mark to the next, one row per phase."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard import units
from dashboard.figures.common import empty_figure, escape_text, legend_rows, s_from_ns
from dashboard.figures.theme import DEFAULT_THEME, Theme


def build_dispatch_gantt(
    dispatches: pd.DataFrame,
    phases: pd.Series,
    *,
    x_range_ns: tuple[int, int] | None = None,
    title: str = "Dispatches",
    prefix: str = "CG_DISPATCH",
    uirevision: str = "",
    in_view: dict[str, int] | None = None,
    totals: dict[str, int] | None = None,
    theme: Theme = DEFAULT_THEME,
) -> go.Figure:
    """Build the dispatch Gantt.

    Args:
        dispatches: DISPATCHES frame (analysis.phases.build_dispatches).
        phases: phase name per dispatch, aligned with ``dispatches``.
        x_range_ns: initial x window (ns); shared with the GPU timeline so both line up.
        prefix: the dispatch prefix, named in the empty-state message.
        in_view: for a zoomed view, the number of dispatches of each phase that overlap the window;
            the legend then reads "decode (12 in view of 126)" (else "decode (126)", the whole trace).
        totals: dispatches of each phase in the whole trace, when ``dispatches`` holds only those near a zoom
            window: the legend's counts, and a phase none of them has keeps its row and legend entry (the
            figure keeps its height while zooming). Default: counted from ``dispatches``.

    Returns:
        Figure with one horizontal bar trace per phase present (legend entries named after the
        phases), x in seconds on the session timeline.
    """
    if dispatches.empty:
        return empty_figure(
            f"No dispatch marks found with prefix “{escape_text(prefix)}”<br>"
            "(a dispatch starts at each NVTX mark or range whose name starts with the prefix).",
            title=title,
            theme=theme,
            height=150,
        )  # a message, not a chart: no tall empty box
    traces = []  # one figure built from them, without plotly's validation of values built here (a zoom redraws it)
    phase_names = [
        p for p in ("prefill", "decode", "mixed", "unsplit", "unknown") if p in (totals or ()) or (phases == p).any()
    ]
    for phase in phase_names:
        sel = dispatches[(phases == phase).to_numpy()]
        counts = sel["dispatches"] if "dispatches" in sel else pd.Series(1, index=sel.index)
        total = totals[phase] if totals is not None else int(counts.sum())
        shown = f"{total:,}" if in_view is None else f"{in_view.get(phase, 0):,} in view of {total:,}"
        name = f"{phase} ({shown})"
        tokens = sel["tokens"].astype(object).where(sel["tokens"].notna(), "?")
        padded = sel["padded"].astype(object).where(sel["padded"].notna(), "?")
        hover = [
            (f"<b>{phase}</b> #{i}" if n == 1 else f"<b>{phase}</b>: {n} dispatches from #{i}")
            + f"<br>tokens {t} · padded {p} · mode {escape_text(str(m) or '?')}"
            f"<br>start {units.instant(s)} · duration {units.duration(d)}{' (estimated: last dispatch)' if est else ''}"
            for i, n, t, p, m, s, d, est in zip(
                sel["index"],
                counts,
                tokens,
                padded,
                sel["mode"],
                sel["start_ns"],
                sel["duration_ns"],
                sel["end_estimated"],
            )
        ]
        traces.append(
            go.Bar(
                _validate=False,
                name=name,
                legendgroup=phase,
                uid=f"phase {phase}",  # the same trace at every zoom: a phase hidden in the legend stays hidden
                orientation="h",
                **_bars(sel, sel["duration_ns"].to_numpy(np.float64), [phase] * len(sel), hover, [phase]),
                marker=dict(color=theme.phase_colors.get(phase, "#888"), line=dict(width=0.5, color="#ffffff")),
                hoverinfo="text",
            )
        )
    rows = legend_rows([t.name for t in traces], font_px=11, width_px=1300)
    top = 34 + 22 * rows
    xaxis = theme.time_xaxis(x_range_ns)
    layout = theme.time_axis_layout(
        title=theme.left_title(title),
        barmode="overlay",
        height=top + 40 + 45 * len(phase_names),
        margin=dict(l=theme.time_axis_left_margin, r=20, t=top, b=40),
        uirevision=uirevision,
        showlegend=True,
        xaxis=xaxis,
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(phase_names)), automargin=False),
    )
    fig = go.Figure(data=traces, layout=layout, _validate=False)  # one step, as the timeline (a zoom redraws it)
    return fig


def _count_text(req, tok) -> str:
    """``3 req · 120 tok`` of one side of a step; ``?`` for what the annotation does not say."""
    r = "?" if req is None or req is pd.NA else f"{int(req):,}"
    t = "?" if tok is None or tok is pd.NA else f"{int(tok):,}"
    return f"{r} req · {t} tok"


def _opt(v) -> str:
    return "?" if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else f"{int(v):,}"


def build_step_gantt(
    steps: pd.DataFrame,
    gpu: pd.DataFrame | None,
    phase_order: tuple[str, ...],
    *,
    x_range_ns: tuple[int, int] | None = None,
    title: str = "Steps",
    uirevision: str = "",
    in_view: dict[str, int] | None = None,
    empty_text: str = "No steps found.",
    whole: pd.DataFrame | None = None,
    theme: Theme = DEFAULT_THEME,
) -> go.Figure:
    """Build the step Gantt: one bar per step over its own [start, end), one row per phase, coloured
    by phase; with several annotating processes, one group of rows per process (``pid N · phase``).

    Args:
        steps: STEPS frame (analysis.steps), any processes. gpu: STEP_GPU aligned with ``steps``
            (kernels and GPU time in the hover), or None.
        phase_order: phases in row order (top first); phases absent from ``steps`` get no row.
        in_view: steps per phase overlapping the zoom window (legend "decode (12 in view of 126)").
        whole: the whole trace's steps (``pid`` and ``phase``) when ``steps`` holds only those near a zoom
            window: the rows and the legend's counts come from it (the figure keeps its height while zooming).

    Returns:
        Figure with one bar trace per phase (legend entry ``phase (count)``), hover with the request
        and token counts, batch size, graph mode, kernels and GPU time.
    """
    if steps.empty:
        return empty_figure(escape_text(empty_text), title=title, theme=theme, height=150)
    every = steps if whole is None else whole
    pids = sorted(int(p) for p in pd.unique(every["pid"]))
    grouped = len(pids) > 1
    every_phase = every["phase"].to_numpy()
    present = [p for p in phase_order if (every_phase == p).any()]
    rows = [
        f"pid {pid} · {p}" if grouped else p
        for pid in pids
        for p in present
        if not grouped or ((every_phase == p) & (every["pid"].to_numpy() == pid)).any()
    ]
    phase = steps["phase"].to_numpy()
    kernels = gpu["kernels"].to_numpy() if gpu is not None else None
    busy = gpu["gpu_time_ns"].to_numpy() if gpu is not None else None
    traces = []
    for p in present:
        m = phase == p
        sel = steps[m]
        k = kernels[m] if kernels is not None else [None] * len(sel)
        g = busy[m] if busy is not None else [None] * len(sel)
        hover = []
        for r, kk, gg in zip(sel.itertuples(index=False), k, g):
            text = (
                f"<b>{p}</b> #{r.index}"
                + (f" · pid {r.pid}" if grouped else "")
                + f"<br>{escape_text(r.name[:120])}"
                + f"<br>context {_count_text(r.context_requests, r.context_tokens)}"
                + f" · generation {_count_text(r.generation_requests, r.generation_tokens)}"
                + f"<br>tokens {_opt(r.tokens)} · batch {_opt(r.batch_size)}"
                + f" · graph mode "
                f"{escape_text(r.graph_mode) if isinstance(r.graph_mode, str) and r.graph_mode else '?'}"
                + f"<br>start {units.instant(r.start_ns)} · duration {units.duration(r.duration_ns)}"
                + (" (end estimated)" if r.end_estimated else "")
            )
            if kk is not None:
                text += f"<br>kernels {int(kk):,} · GPU time {units.duration(int(gg))} (by correlation)"
            hover.append(text)
        y = [f"pid {int(q)} · {p}" for q in sel["pid"]] if grouped else [p] * len(sel)
        n = int((every_phase == p).sum())
        traces.append(
            go.Bar(
                _validate=False,
                name=f"{p} ({n:,})" if in_view is None else f"{p} ({in_view.get(p, 0):,} in view of {n:,})",
                legendgroup=p,
                uid=f"phase {p}",  # the same trace at every zoom: a phase hidden in the legend stays hidden
                orientation="h",
                **_bars(sel, sel["duration_ns"].to_numpy(np.float64), y, hover, [r for r in rows if _phase_of(r) == p]),
                marker=dict(color=theme.phase_colors.get(p, "#888"), line=dict(width=0.5, color="#ffffff")),
                hoverinfo="text",
            )
        )
    legend = legend_rows([t.name for t in traces], font_px=11, width_px=1300)
    top = 34 + 22 * legend
    layout = theme.time_axis_layout(
        title=theme.left_title(title),
        barmode="overlay",
        height=top + 40 + (36 if grouped else 45) * len(rows),
        margin=dict(l=theme.time_axis_left_margin, r=20, t=top, b=40),
        uirevision=uirevision,
        showlegend=True,
        xaxis=theme.time_xaxis(x_range_ns),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(rows)), automargin=False),
    )
    return go.Figure(data=traces, layout=layout, _validate=False)


def _bars(sel: pd.DataFrame, duration_ns: np.ndarray, y: list, hover: list, rows: list[str]) -> dict:
    """A phase's bar arrays (``base``, ``x``, ``y``, ``hovertext``, ``customdata``) with an empty bar for each of
    its ``rows`` no drawn step is on: a zoomed Gantt draws only the steps near its window, and a row (or a
    phase's legend entry) with no bar of its own would drop out of the figure.

    ``customdata`` per bar: ``[index, start_ns, end_ns, steps]`` (float64: exact below 2**53 ns; plotly.js has
    no 64-bit integer arrays), what a click on the bar marks or zooms to (assets/tracedash.js, ``rowClick``);
    ``steps`` is how many same-phase steps a run bar stands for (1 for one step); an empty bar's row is -1."""
    missing = [r for r in rows if r not in set(y)]
    nan = np.full(len(missing), np.nan)
    steps = sel["dispatches"].to_numpy(np.int64) if "dispatches" in sel else np.ones(len(sel), np.int64)
    custom = np.column_stack([sel[c].to_numpy(np.int64) for c in ("index", "start_ns", "end_ns")] + [steps])
    return dict(
        base=np.concatenate([s_from_ns(sel["start_ns"]), nan]),
        x=np.concatenate([duration_ns / 1e9, nan]),
        y=list(y) + missing,
        hovertext=list(hover) + [""] * len(missing),
        customdata=np.concatenate([custom.astype(np.float64), np.full((len(missing), 4), -1.0)]),
    )


def _phase_of(row: str) -> str:
    """The phase of a step Gantt row (``decode``, or ``pid 7 · decode`` when grouped per process)."""
    return row.rsplit(" · ", 1)[-1]
