"""``tracedash steps``: the steps of a trace from its own annotations, as JSON or a plain-text table.

JSON (``steps_json``)::

    {"source": {"preset", "rule", "auto"},
     "steps": [{"start_ns", "end_ns", "name", "phase", "context_requests", "context_tokens",
                "generation_requests", "generation_tokens", "tokens", "batch_size", "graph_mode",
                "kernels", "gpu_time_ns"}],
     "phases": {PHASE: {"steps", "requests", "tokens", "total_ns", "mean_ns", "p50_ns", "p90_ns",
                        "p99_ns", "tokens_per_s", "kernels", "gpu_time_ns"}}}

Steps and phases are those of one process (``pid``; default the lowest pid with steps): statistics of
several annotating processes (tensor-parallel workers) are never merged. Unknown values are null, never 0:
counts an annotation does not give, and kernels / GPU time of a summary JSON (no events).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from dashboard import units
from dashboard.analysis import step_presets as sp
from dashboard.analysis import steps as st
from dashboard.errors import TraceError

STEP_KEYS = ("start_ns", "end_ns", "name", "phase", *sp.COUNT_FIELDS, "graph_mode", "kernels", "gpu_time_ns")


@dataclass(frozen=True)
class StepsReport:
    """The steps of one process of a trace: ``steps`` (STEPS rows of ``pid``), ``gpu`` (STEP_GPU aligned
    with them; None without events), ``phases`` (STEP_PHASE_STATS), ``processes`` (pid -> steps)."""

    source: st.StepSource
    pid: int | None
    steps: pd.DataFrame
    gpu: pd.DataFrame | None
    phases: pd.DataFrame
    processes: dict[int, int]
    notes: tuple[str, ...] = ()


def steps_report(trace, spec: sp.StepSpec, pid: int | None = None) -> StepsReport:
    """Steps, per-step GPU time and per-phase statistics of a LoadedTrace for ``spec``.

    Raises:
        TraceError: ``pid`` names a process without steps (exit 2), with the processes that have some.
    """
    end_ns = trace.summary.gpu_end_ns
    bundle = trace.bundle
    if bundle is not None:
        source, steps = st.bundle_steps(bundle, spec, end_ns=end_ns)
    else:
        source, steps = st.build_steps(None, st.timeline_marks(trace.summary.dispatch_timeline), spec, end_ns=end_ns)
    counts = steps["pid"].value_counts()
    processes = {p: int(counts[p]) for p in st.step_processes(steps)}
    notes = []
    if not processes:
        notes.append(_nothing_found(trace, source, spec))
    if pid is not None and pid not in processes:
        have = ", ".join(map(str, processes)) or "none"
        raise TraceError(f"--pid {pid}: no steps in that process (processes with steps: {have})")
    chosen = pid if pid is not None else (next(iter(processes)) if processes else None)
    mine = steps[steps["pid"] == chosen].reset_index(drop=True) if chosen is not None else steps
    gpu = None
    if bundle is not None:
        from dashboard.data.analysis import analysis_of

        gpu = st.step_kernels(mine, bundle.kernels, bundle.api_calls, analysis_of(trace).launches())
    if bundle is not None and (other := st.kernels_of_other_processes(bundle.kernels, list(processes))):
        n = sum(other.values())
        whose = ", ".join(f"pid {p}" if p else "no known process" for p in list(other)[:3]) + (
            f" and {len(other) - 3} more" if len(other) > 3 else ""
        )
        notes.append(
            f"{units.count(n, 'kernel')} of {whose} (no steps there) {'is' if n == 1 else 'are'} in no step: "
            "a kernel counts in a step of the process that launched it"
        )
    if len(processes) > 1:
        each = ", ".join(f"pid {p}: {n}" for p, n in processes.items())
        notes.append(f"{len(processes)} processes have steps ({each}); showing pid {chosen} (--pid chooses another)")
    return StepsReport(source, chosen, mine, gpu, st.step_phase_stats(mine, gpu), processes, tuple(notes))


def _nothing_found(trace, source: st.StepSource, spec: sp.StepSpec) -> str:
    if source.auto:
        return (
            f"no step annotations found: none of the presets ({', '.join(sp.PRESETS)}) matches an NVTX range or "
            "mark of this trace; a rule (--steps REGEX with named groups) reads other servers' annotations"
        )
    what = source.label if source.rule is None else f"ranges or marks matching /{source.rule}/"
    other = ""
    if trace.bundle is not None and source.rule is None:
        found = st.choose_preset(st.own_counts(trace.bundle.nvtx_ranges, trace.bundle.nvtx_marks, spec.prefix))
        if found is not None and found != source.preset:
            other = f"; the trace holds {st.StepSource(found, prefix=spec.prefix).label} (--steps {found}, or auto)"
    return f"no {what} in this trace{other}"


def _value(v):
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if hasattr(v, "item"):
        v = v.item()
    return None if isinstance(v, float) and math.isnan(v) else v


def steps_json(report: StepsReport) -> dict:
    """The ``tracedash steps --json`` object (module docstring)."""
    s = report.steps
    rows = []
    kernels = report.gpu["kernels"].tolist() if report.gpu is not None else [None] * len(s)
    busy = report.gpu["gpu_time_ns"].tolist() if report.gpu is not None else [None] * len(s)
    cols = {c: s[c].astype(object).tolist() for c in STEP_KEYS if c in s}
    for i in range(len(s)):
        row = {c: _value(cols[c][i]) for c in STEP_KEYS if c in cols}
        row["kernels"], row["gpu_time_ns"] = kernels[i], busy[i]
        rows.append({k: row[k] for k in STEP_KEYS})
    phases = {}
    for rec in report.phases.to_dict("records"):
        p = rec.pop("phase")
        if report.gpu is None:
            rec["kernels"] = rec["gpu_time_ns"] = None
        phases[p] = {k: _value(v) for k, v in rec.items()}
    return {"source": report.source.to_dict(), "steps": rows, "phases": phases}


# How a column of times is written: in ms, or in µs or ns when its largest value is below 1 ms or 1 µs (steps of a
# few hundred ns in ms would all read 0.000).
_TIME_UNITS = (("ms", 10**6, 3), ("µs", 10**3, 3), ("ns", 1, 0))


def _present(v) -> bool:
    return v is not None and v is not pd.NA


def _time_unit(*columns) -> tuple[str, int, int]:
    """``(unit, ns per unit, decimals)`` for times written side by side (one unit for all ``columns``): the unit of
    the largest, with as many more decimals as the smallest non-zero time needs not to read as 0 (down to 1 ns)."""
    values = [abs(int(v)) for col in columns for v in col if _present(v)]
    biggest = max(values, default=0)
    if not biggest:  # nothing to scale by (a lone step at 0): ms, as every other table
        return _TIME_UNITS[0]
    unit, per, decimals = next(u for u in _TIME_UNITS if biggest >= u[1] or u[1] == 1)
    smallest = min(v for v in values if v)
    while decimals < len(str(per)) - 1 and smallest * 10**decimals < per:
        decimals += 1
    return unit, per, decimals


def _time(ns, unit: tuple[str, int, int]) -> str:
    return f"{int(ns) / unit[1]:,.{unit[2]}f}" if _present(ns) else ""


def _n(v) -> str:
    return "" if v is None or v is pd.NA else f"{int(v):,}"


def _table(header: list[str], rows: list[list[str]], left: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells):
        cells = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(cells).rstrip()

    return [line(header), *(line(r) for r in rows)]


def steps_text(report: StepsReport, trace_name: str) -> str:
    """The plain-text form: the source, one row per step (times in ms, or in µs or ns for a column whose times are
    all shorter; blank: not given), the phases."""
    s = report.steps
    head = f"{trace_name}: steps from {report.source.label}"
    if report.pid is not None:  # -1: the input does not say (a summary JSON)
        who = f" · pid {report.pid}" if report.pid >= 0 else ""
        head += f"{who} · {len(s):,} step{'s' if len(s) != 1 else ''}"
    out = [head, *(f"note: {n}" for n in report.notes)]
    if len(s):
        gpu = report.gpu
        at, took = _time_unit(s["start_ns"]), _time_unit(s["duration_ns"])
        busy = _time_unit(gpu["gpu_time_ns"]) if gpu is not None else _TIME_UNITS[0]
        rows = []
        for i, r in enumerate(s.itertuples(index=False)):
            rows.append(
                [
                    str(i),
                    _time(r.start_ns, at),
                    _time(r.duration_ns, took),
                    r.phase,
                    _n(r.context_requests),
                    _n(r.context_tokens),
                    _n(r.generation_requests),
                    _n(r.generation_tokens),
                    _n(r.tokens),
                    _n(r.batch_size),
                    r.graph_mode or "",
                    _n(gpu["kernels"].iat[i]) if gpu is not None else "n/a",
                    _time(gpu["gpu_time_ns"].iat[i], busy) if gpu is not None else "n/a",
                    r.name,
                ]
            )
        out += [
            "",
            *_table(
                [
                    "#",
                    f"start {at[0]}",
                    f"duration {took[0]}",
                    "phase",
                    "ctx req",
                    "ctx tok",
                    "gen req",
                    "gen tok",
                    "tokens",
                    "batch",
                    "graph",
                    "kernels",
                    f"GPU {busy[0]}",
                    "name",
                ],
                rows,
                {3, 10, 13},
            ),
        ]
    p = report.phases
    if len(p):
        spans = _time_unit(p["total_ns"], p["p50_ns"], p["p90_ns"], p["p99_ns"])
        busy = _time_unit(p["gpu_time_ns"]) if report.gpu is not None else _TIME_UNITS[0]
        rows = [
            [
                r.phase,
                _n(r.steps),
                _n(r.requests),
                _n(r.tokens),
                _time(r.total_ns, spans),
                _time(r.p50_ns, spans),
                _time(r.p90_ns, spans),
                _time(r.p99_ns, spans),
                "n/a" if math.isnan(r.tokens_per_s) else f"{r.tokens_per_s:,.1f}",
                _n(r.kernels) if report.gpu is not None else "n/a",
                _time(r.gpu_time_ns, busy) if report.gpu is not None else "n/a",
            ]
            for r in p.itertuples(index=False)
        ]
        out += [
            "",
            "per phase (graph captures left out):",
            *_table(
                [
                    "phase",
                    "steps",
                    "requests",
                    "tokens",
                    f"total {spans[0]}",
                    f"p50 {spans[0]}",
                    f"p90 {spans[0]}",
                    f"p99 {spans[0]}",
                    "tokens/s",
                    "kernels",
                    f"GPU {busy[0]}",
                ],
                rows,
                {0},
            ),
        ]
    elif len(s):
        out += ["", "per phase: no serving steps (graph captures are left out of the phase statistics)"]
    return "\n".join(out) + "\n"


def summary_steps(report: StepsReport) -> dict:
    """The ``steps`` section of ``tracedash summarize --steps``: where the steps came from and the
    per-phase figures of one process (seconds, as the rest of the summary; null: not known)::

        {"source": {"preset", "rule", "auto", "label"}, "pid", "processes": {"PID": steps},
         "phases": {PHASE: {"steps", "requests", "tokens", "total_s", "mean_s", "p50_s", "p90_s", "p99_s",
                            "tokens_per_s", "kernels", "gpu_time_s"}}}
    """
    phases = {}
    for p, rec in steps_json(report)["phases"].items():
        out = {}
        for k, v in rec.items():
            if k.endswith("_ns"):
                out[k[:-3] + "_s"] = None if v is None else v / 1e9
            else:
                out[k] = v
        phases[p] = out
    return {
        "source": {**report.source.to_dict(), "label": report.source.label},
        "pid": report.pid,
        "processes": {str(p): n for p, n in report.processes.items()},
        "phases": phases,
    }
