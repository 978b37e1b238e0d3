"""Steps of a trace from its own annotations (``step_presets``): one typed frame, per process.

A range-based preset (vLLM, SGLang, TensorRT-LLM, ProfilerStep#N, a user rule on ranges) gives one step
per matching range, over the range's own ``[start, end)``. Matching ranges of one process nested in
each other (an SGLang ``step[...]`` around a vLLM-style ``execute_...`` of the same iteration, or two
copies of one annotation) are one step: the outer range's extent and name, each field from the outer
range unless it does not say, then from the inner ones. The seed preset (and a rule matching marks)
reads marks: a step lasts from its mark to the next mark of its process; the last to ``end_ns``
(``phases.build_dispatches``), and the seed's phase comes from the token threshold as before.

Kineto's ``gpu_user_annotation`` copies of a range are never NVTX ranges (the loader drops them), so
they are never steps.

Kernels of a step (``step_kernels``): those whose launching CUDA API call starts inside the step, in
the step's own process (correlation id + process, as ``attribution``); the step's GPU time is the
length of the union of their intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.analysis import phases as ph
from dashboard.analysis import step_presets as sp
from dashboard.analysis.kernel_times import kernel_durations

STEPS: dict[str, str] = {
    "index": "int64",  # 0-based, in (start_ns, pid) order
    "pid": "int64",  # the annotating process (-1 when the input does not say: a summary JSON)
    "start_ns": "int64",
    "end_ns": "int64",
    "duration_ns": "int64",
    "name": "object",
    "phase": "object",  # step_presets.STEP_PHASES; the seed's: phases.PHASE_ORDER
    "context_requests": "Int64",
    "context_tokens": "Int64",
    "generation_requests": "Int64",
    "generation_tokens": "Int64",
    "tokens": "Int64",
    "batch_size": "Int64",
    "graph_mode": "object",  # None when the annotation does not say
    "padded": "Int64",  # the seed's padded token count
    "end_estimated": "bool",  # the end is not recorded: a range still open, or the seed's last step
}
STEP_GPU: dict[str, str] = {"index": "int64", "kernels": "int64", "gpu_time_ns": "int64"}
UNATTRIBUTED = -1
_FIELDS = list(sp.StepFields._fields)


@dataclass(frozen=True)
class StepSource:
    """Where the steps came from: ``preset`` (a key of PRESETS; None for a user rule, or when ``auto``
    found nothing), ``rule`` (the user rule's regular expression), ``auto`` (chosen by ``auto``).
    ``threshold`` is the seed preset's token threshold in use (None: no split)."""

    preset: str | None
    rule: str | None = None
    auto: bool = False
    prefix: str = sp.DEFAULT_DISPATCH_PREFIX
    threshold: float | None = None

    @property
    def label(self) -> str:
        """For "Steps from: ...": ``vLLM annotations (auto)``, ``rule /REGEX/``, ``no step annotations (auto)``."""
        if self.rule is not None:
            text = f"rule /{self.rule}/"
        elif self.preset is None:
            text = "no step annotations"
        elif self.preset == "seed":
            text = f"{self.prefix} marks"
        else:
            text = sp.PRESETS[self.preset].label
        return f"{text} (auto)" if self.auto else text

    @property
    def framework(self) -> bool:
        """Whether these are a framework's (or a rule's) steps, which the phase views and serving findings
        read; False for the seed's dispatch marks and for no annotations (the dispatch views of before)."""
        return self.rule is not None or self.preset not in (None, "seed")

    def to_dict(self) -> dict:
        """The ``source`` object of ``tracedash steps --json``: preset, rule, auto."""
        return {"preset": self.preset, "rule": self.rule, "auto": self.auto}


def empty_steps() -> pd.DataFrame:
    """A typed STEPS frame without rows."""
    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in STEPS.items()})


def _names(frame: pd.DataFrame, col: str) -> tuple[np.ndarray, list[str]]:
    """(codes, categories as str) of a name column, categorical or not."""
    cat = frame[col] if isinstance(frame[col].dtype, pd.CategoricalDtype) else frame[col].astype("category")
    return cat.cat.codes.to_numpy(), [str(c) for c in cat.cat.categories]


def _matches(frame: pd.DataFrame, col: str, match) -> tuple[np.ndarray, list]:
    """Rows whose name matches (bool mask) and the StepFields of each row (None elsewhere); every
    distinct name is parsed once."""
    if frame.empty:
        return np.zeros(0, bool), []
    codes, cats = _names(frame, col)
    parsed = [match(c) for c in cats]
    hit = np.array([p is not None for p in parsed] + [False], dtype=bool)  # code -1 (NA) -> last
    mask = hit[codes]
    return mask, [parsed[c] for c in codes[mask]]


def _count(frame: pd.DataFrame | None, col: str, own) -> int:
    """Rows of ``frame`` whose name ``own`` accepts (every distinct name tested once)."""
    if frame is None or frame.empty:
        return 0
    codes, cats = _names(frame, col)
    hit = np.array([bool(own(c)) for c in cats] + [False], dtype=bool)  # code -1 (NA) -> last
    return int(hit[codes].sum())


def own_counts(
    ranges: pd.DataFrame | None, marks: pd.DataFrame | None, prefix: str = sp.DEFAULT_DISPATCH_PREFIX
) -> dict[str, int]:
    """How many ranges and marks are each preset's own annotations (what ``auto`` chooses by)."""
    out = {}
    for key, preset in sp.PRESETS.items():
        own = (lambda n: sp.match_seed(n, prefix) is not None) if key == "seed" else preset.own
        out[key] = _count(ranges, "message", own) + _count(marks, "name", own)
    return out


def choose_preset(counts: dict[str, int]) -> str | None:
    """``auto``: the preset of AUTO_ORDER with most own annotations (ties: AUTO_ORDER), else ``torch``
    when the trace has ProfilerStep#N ranges, else None."""
    best = max(sp.AUTO_ORDER, key=lambda k: (counts.get(k, 0), -sp.AUTO_ORDER.index(k)))
    if counts.get(best, 0) > 0:
        return best
    return sp.AUTO_FALLBACK if counts.get(sp.AUTO_FALLBACK, 0) > 0 else None


def _frame(rows) -> pd.DataFrame:
    out = pd.DataFrame({c: rows[c] for c in STEPS if c != "index"})
    out = out.sort_values(["start_ns", "pid"], kind="stable").reset_index(drop=True)
    out.insert(0, "index", np.arange(len(out), dtype=np.int64))
    return out.astype(STEPS)


def _field_columns(fields: list) -> dict:
    cols = {f: [x[i] for x in fields] for i, f in enumerate(_FIELDS)}
    for f in (*sp.COUNT_FIELDS, "padded"):
        cols[f] = pd.array(cols[f], dtype="Int64")
    return cols


def _range_steps(ranges: pd.DataFrame, match) -> pd.DataFrame:
    mask, fields = _matches(ranges, "message", match)
    if not mask.any():
        return empty_steps()
    sel = ranges[mask]
    df = pd.DataFrame(
        {
            "pid": sel["pid"].to_numpy(np.int64),
            "start_ns": sel["start_ns"].to_numpy(np.int64),
            "end_ns": sel["end_ns"].to_numpy(np.int64),
            "name": sel["message"].astype(str).to_numpy(),
            "end_estimated": sel["unclosed"].to_numpy(bool),
            **_field_columns(fields),
        }
    )
    df = _merge_nested(df)
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    return _frame(df)


def _merge_nested(df: pd.DataFrame) -> pd.DataFrame:
    """One row per outermost range of each process: a range inside an earlier-starting (or equal)
    range of its process joins it; fields the outer range does not give come from the inner ones.

    Sorted by (pid, start, -end), a range is outer when its end is past every end before it in its
    process; each outer range raises that running maximum, so an inner range belongs to the last outer
    range before it."""
    df = df.assign(_neg=-df["end_ns"]).sort_values(["pid", "start_ns", "_neg"], kind="stable").drop(columns="_neg")
    df = df.reset_index(drop=True)
    pid = df["pid"].to_numpy()
    end = df["end_ns"].to_numpy()
    new_pid = np.r_[True, pid[1:] != pid[:-1]]
    run = pd.Series(end).groupby(np.cumsum(new_pid)).cummax().to_numpy()
    outer = new_pid.copy()
    outer[1:] |= end[1:] > run[:-1]
    if outer.all():
        return df
    group = np.cumsum(outer) - 1
    first = df[outer].reset_index(drop=True)
    filled = df.groupby(group, sort=True)[_FIELDS].first()  # first non-null per field, outer range first
    for f in _FIELDS:
        first[f] = filled[f].to_numpy() if f not in (*sp.COUNT_FIELDS, "padded") else filled[f].astype("Int64").array
    first["phase"] = df["phase"][outer].to_numpy()  # the outer range's phase, always stated by range presets
    first["end_estimated"] = df.groupby(group, sort=True)["end_estimated"].any().to_numpy()
    return first


def _mark_steps(points: pd.DataFrame, match, end_ns: int | None) -> tuple[pd.DataFrame, np.ndarray]:
    """Steps from (start_ns, name, pid) points: each lasts to the next matching point of its process.
    Returns the STEPS frame and, aligned with it, whether the name says the batch is mixed (the seed's
    ``phases.is_mixed``)."""
    mask, fields = _matches(points, "name", match)
    if not mask.any():
        return empty_steps(), np.zeros(0, bool)
    sel = points[mask].reset_index(drop=True)
    fields = pd.DataFrame(_field_columns(fields))
    parts = []
    for pid, grp in sel.groupby("pid", sort=True):
        d = ph.build_dispatches(grp[["start_ns", "name"]], end_ns=end_ns)
        # build_dispatches sorts by (start_ns, name) stably: apply the same order to the fields
        order = grp.assign(_i=np.arange(len(grp))).sort_values(["start_ns", "name"], kind="stable")["_i"].to_numpy()
        f = fields.iloc[grp.index.to_numpy()[order]].reset_index(drop=True)
        parts.append(
            pd.DataFrame(
                {
                    "pid": np.full(len(d), pid, np.int64),
                    "start_ns": d["start_ns"].to_numpy(),
                    "end_ns": d["end_ns"].to_numpy(),
                    "duration_ns": d["duration_ns"].to_numpy(),
                    "name": d["name"].to_numpy(),
                    "end_estimated": d["end_estimated"].to_numpy(),
                    "_mixed": d["mixed"].to_numpy(),
                    **{c: f[c] for c in _FIELDS},
                }
            )
        )
    df = pd.concat(parts, ignore_index=True)
    df = df.sort_values(["start_ns", "name"], kind="stable").reset_index(drop=True)  # as build_dispatches
    out = df[[c for c in STEPS if c != "index"]].copy()
    out.insert(0, "index", np.arange(len(out), dtype=np.int64))
    return out.astype(STEPS), df["_mixed"].to_numpy(bool)


def _points(ranges: pd.DataFrame | None, marks: pd.DataFrame | None) -> pd.DataFrame:
    """Marks and range starts as (start_ns, name, pid) points (``summary.dispatch_marks``, with the process)."""
    parts = []
    if marks is not None and len(marks):
        parts.append(
            pd.DataFrame(
                {
                    "start_ns": marks["ts_ns"].to_numpy(np.int64),
                    "name": marks["name"].astype(str),
                    "pid": marks["pid"].to_numpy(np.int64),
                }
            )
        )
    if ranges is not None and len(ranges):
        parts.append(
            pd.DataFrame(
                {
                    "start_ns": ranges["start_ns"].to_numpy(np.int64),
                    "name": ranges["message"].astype(str),
                    "pid": ranges["pid"].to_numpy(np.int64),
                }
            )
        )
    if not parts:
        return pd.DataFrame(
            {
                "start_ns": pd.Series([], dtype="int64"),
                "name": pd.Series([], dtype=object),
                "pid": pd.Series([], dtype="int64"),
            }
        )
    return pd.concat(parts, ignore_index=True).astype({"name": object})


def timeline_marks(timeline: pd.DataFrame) -> pd.DataFrame:
    """A summary's DISPATCH_MARKS timeline (no process) as NVTX_MARKS-shaped marks of process -1."""
    n = len(timeline)
    return pd.DataFrame(
        {
            "ts_ns": timeline["start_ns"].to_numpy(np.int64),
            "name": timeline["name"].astype(str),
            "global_tid": np.full(n, -1, np.int64),
            "pid": np.full(n, -1, np.int64),
            "tid": np.full(n, -1, np.int64),
        }
    )


def build_steps(
    ranges: pd.DataFrame | None, marks: pd.DataFrame | None, spec: sp.StepSpec, *, end_ns: int | None = None
) -> tuple[StepSource, pd.DataFrame]:
    """The steps of a trace for a ``--steps`` choice.

    Args:
        ranges: NVTX_RANGES frame (``message`` is matched), or None. marks: NVTX_MARKS frame, or None
            (``timeline_marks`` turns a summary JSON's dispatch timeline into marks).
        spec: ``step_presets.parse_step_source`` output (``auto``, a preset, a user rule; the seed's
            prefix and threshold).
        end_ns: end of GPU activity: closes the last step of a mark-based source (``build_dispatches``).

    Returns:
        ``(source, steps)``: the StepSource actually used (for ``auto``, the chosen preset) and the STEPS
        frame sorted by (start_ns, pid), all processes. A user rule reads ranges and marks: ranges give
        steps over their own extent, marks last to the next matching mark of their process.
    """
    preset, auto = spec.preset, spec.preset == sp.AUTO
    if auto:
        preset = choose_preset(own_counts(ranges, marks, spec.prefix))
        if preset is None:
            return StepSource(None, None, True, spec.prefix), empty_steps()
    if preset == sp.RULE:
        rx = sp.compile_rule(spec.rule)

        def match(n):
            return sp.match_rule(n, rx)

        parts = [_range_steps(_or_empty(ranges), match), _mark_steps(_points(None, marks), match, end_ns)[0]]
        return StepSource(None, spec.rule, False, spec.prefix), _concat([p for p in parts if len(p)])
    if preset == "seed":
        steps, mixed = _mark_steps(_points(ranges, marks), lambda n: sp.match_seed(n, spec.prefix), end_ns)
        threshold = spec.threshold if spec.threshold is not None else ph.default_threshold(steps["tokens"])
        steps["phase"] = ph.assign_phases(steps.assign(mixed=mixed), threshold).to_numpy()
        return StepSource("seed", None, auto, spec.prefix, threshold), steps
    steps = _range_steps(_or_empty(ranges), sp.PRESETS[preset].match)
    return StepSource(preset, None, auto, spec.prefix), steps


def _or_empty(frame: pd.DataFrame | None) -> pd.DataFrame:
    return (
        frame
        if frame is not None
        else pd.DataFrame({"message": pd.Series([], dtype=object), "name": pd.Series([], dtype=object)})
    )


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    if not parts:
        return empty_steps()
    return _frame(pd.concat(parts, ignore_index=True).drop(columns="index"))


def bundle_steps(bundle, spec: sp.StepSpec, *, end_ns: int | None = None) -> tuple[StepSource, pd.DataFrame]:
    """``build_steps`` of a TraceBundle's NVTX ranges and marks."""
    return build_steps(bundle.nvtx_ranges, bundle.nvtx_marks, spec, end_ns=end_ns)


def step_processes(steps: pd.DataFrame) -> list[int]:
    """The processes with steps, lowest pid first (the first is the default of per-process views)."""
    return sorted(int(p) for p in pd.unique(steps["pid"])) if len(steps) else []


def kernels_of_other_processes(kernels: pd.DataFrame, processes: list[int]) -> dict[int, int]:
    """Kernel rows per process that has no steps (pid -> rows; pid 0 is a kernel whose process is unknown):
    no step can count them, since a kernel belongs to a step of its own process (``attribute_to_steps``)."""
    if not processes or kernels.empty:
        return {}
    pids = kernels["pid"].to_numpy(np.int64)
    other = pids[~np.isin(pids, np.asarray(processes, dtype=np.int64))]
    values, counts = np.unique(other, return_counts=True)
    return {int(p): int(n) for p, n in zip(values, counts)}


def attribute_to_steps(steps: pd.DataFrame, launches: pd.DataFrame, n_kernels: int) -> np.ndarray:
    """Step index (``steps["index"]``) of every kernel row, UNATTRIBUTED when none.

    Args:
        steps: STEPS frame. launches: ``launches.kernel_launches(kernels, api_calls)`` (kernel_index,
            pid, api_start_ns). n_kernels: rows of the kernels frame.

    A kernel belongs to the step of its launching call's process whose ``[start, end)`` holds the
    call's start; where a process's steps overlap, to the latest-starting one.
    """
    out = np.full(n_kernels, UNATTRIBUTED, dtype=np.int64)
    if not len(steps) or launches is None or not len(launches):
        return out
    l_pid = launches["pid"].to_numpy(np.int64)
    l_start = launches["api_start_ns"].to_numpy(np.int64)
    l_kernel = launches["kernel_index"].to_numpy(np.int64)
    one_pid = bool((l_pid == l_pid[0]).all())
    for pid, grp in steps.groupby("pid", sort=True):
        grp = grp.sort_values("start_ns", kind="stable")
        starts = grp["start_ns"].to_numpy(np.int64)
        ends = grp["end_ns"].to_numpy(np.int64)
        idx = grp["index"].to_numpy(np.int64)
        if one_pid:  # the usual single process: no per-process selection of 2M launches
            if pid != l_pid[0]:
                continue
            a, kern = l_start, l_kernel
        else:
            sel = np.flatnonzero(l_pid == pid)
            a, kern = l_start[sel], l_kernel[sel]
        pos = np.searchsorted(starts, a, side="right") - 1
        ok = (pos >= 0) & (a < ends[np.clip(pos, 0, None)])
        out[kern[ok]] = idx[pos[ok]]
    return out


def step_kernels(
    steps: pd.DataFrame, kernels: pd.DataFrame, api_calls: pd.DataFrame, launches: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Kernels and GPU time per step.

    Args:
        steps: STEPS frame. kernels: KERNELS frame. api_calls: API_CALLS frame.
        launches: the kernel -> launching API call join, ``launches.kernel_launches(kernels, api_calls)``
            (computed when None).

    Returns:
        STEP_GPU frame aligned with ``steps``: ``kernels`` (kernel rows whose launch call starts inside the
        step, same process) and ``gpu_time_ns`` (length of the union of their intervals; ends clipped for
        same-stream overruns, invalid rows add nothing, as ``kernel_times.kernel_durations``).
    """
    if launches is None:
        from dashboard.analysis.launches import kernel_launches

        launches = kernel_launches(kernels, api_calls)
    n = len(steps)
    out = pd.DataFrame(
        {
            "index": steps["index"].to_numpy(np.int64),
            "kernels": np.zeros(n, np.int64),
            "gpu_time_ns": np.zeros(n, np.int64),
        }
    )
    if not n or kernels.empty:
        return out
    attr = attribute_to_steps(steps, launches, len(kernels))
    sel = attr != UNATTRIBUTED
    if not sel.any():
        return out
    s = kernels["start_ns"].to_numpy(np.int64)[sel]
    e = s + kernel_durations(kernels).to_numpy(np.int64)[sel]
    g = attr[sel]
    order = np.lexsort((s, g))
    s, e, g = s[order], e[order], g[order]
    # union length per step: each interval adds what lies past every end before it in its step
    run = pd.Series(e).groupby(g).cummax().to_numpy()
    prev = np.empty_like(run)
    prev[0] = np.iinfo(np.int64).min
    prev[1:] = run[:-1]
    prev[np.r_[True, g[1:] != g[:-1]]] = np.iinfo(np.int64).min
    add = np.maximum(0, e - np.maximum(s, prev))
    pos = pd.Series(np.arange(n), index=steps["index"].to_numpy(np.int64))
    rows = pos.reindex(g).to_numpy()
    out["kernels"] = np.bincount(rows, minlength=n).astype(np.int64)
    busy = np.zeros(n, np.int64)
    np.add.at(busy, rows, add)
    out["gpu_time_ns"] = busy
    return out


STEP_PHASE_ORDER = (sp.PREFILL, sp.DECODE, sp.MIXED, sp.IDLE, sp.DRAFT, sp.VERIFY, sp.STEP, ph.UNSPLIT, ph.UNKNOWN)
STEP_PHASE_STATS: dict[str, str] = {
    "phase": "object",
    "steps": "int64",
    "requests": "Int64",  # context + generation requests; NA unless every step of the phase says both
    "tokens": "Int64",  # NA unless every step of the phase gives its tokens
    "total_ns": "int64",
    "mean_ns": "float64",
    "p50_ns": "float64",
    "p90_ns": "float64",
    "p99_ns": "float64",
    "tokens_per_s": "float64",  # tokens / total seconds; NaN (n/a) when tokens are NA or the total is 0
    "kernels": "int64",
    "gpu_time_ns": "int64",  # Σ of the steps' own GPU time (by correlation); can exceed total_ns
}


def step_phase_stats(steps: pd.DataFrame, gpu: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per-phase statistics of steps (all rows given: select one process first), in STEP_PHASE_ORDER.

    ``capture`` steps are left out (graph captures are not serving steps). Step times: numpy linear
    percentiles of ``duration_ns``. ``gpu``: ``step_kernels`` output aligned with ``steps`` (kernels and
    GPU time 0 without it).
    """
    rows = []
    phase = steps["phase"].to_numpy()
    kern = gpu["kernels"].to_numpy(np.int64) if gpu is not None else np.zeros(len(steps), np.int64)
    busy = gpu["gpu_time_ns"].to_numpy(np.int64) if gpu is not None else np.zeros(len(steps), np.int64)
    for p in STEP_PHASE_ORDER:
        m = phase == p
        if not m.any():
            continue
        sel = steps[m]
        dur = sel["duration_ns"].to_numpy(np.int64)
        total = int(dur.sum())
        req = sel["context_requests"] + sel["generation_requests"]
        tokens = int(sel["tokens"].sum()) if sel["tokens"].notna().all() else None
        rows.append(
            {
                "phase": p,
                "steps": int(m.sum()),
                "requests": int(req.sum()) if req.notna().all() else None,
                "tokens": tokens,
                "total_ns": total,
                "mean_ns": float(dur.mean()),
                "p50_ns": float(np.percentile(dur, 50)),
                "p90_ns": float(np.percentile(dur, 90)),
                "p99_ns": float(np.percentile(dur, 99)),
                "tokens_per_s": tokens / (total / 1e9) if tokens is not None and total > 0 else math.nan,
                "kernels": int(kern[m].sum()),
                "gpu_time_ns": int(busy[m].sum()),
            }
        )
    return pd.DataFrame(rows, columns=list(STEP_PHASE_STATS)).astype(STEP_PHASE_STATS)


def serving_dispatches(steps: pd.DataFrame, attribution: np.ndarray) -> tuple[pd.DataFrame, pd.Series, np.ndarray]:
    """A framework's steps as the seed's dispatches, for the rules that read dispatches (findings):
    the serving steps (graph captures left out) of the given rows (one process), re-indexed 0..n-1, as a
    ``phases.DISPATCHES`` frame (``mode`` = graph mode, ``mixed`` = phase mixed), their phases, and the
    kernels' attribution (``attribute_to_steps``) mapped to the new index (other steps' kernels:
    UNATTRIBUTED).

    Example: steps 3 (capture), 5, 8 with a kernel in each give dispatches 0, 1 and the kernels of 5
    and 8 attributed to 0 and 1."""
    sel = steps[steps["phase"] != sp.CAPTURE].sort_values("start_ns", kind="stable").reset_index(drop=True)
    d = pd.DataFrame(
        {
            "index": np.arange(len(sel), dtype=np.int64),
            "start_ns": sel["start_ns"],
            "end_ns": sel["end_ns"],
            "duration_ns": sel["duration_ns"],
            "name": sel["name"],
            "tokens": sel["tokens"],
            "mode": sel["graph_mode"],
            "padded": sel["padded"],
            "mixed": (sel["phase"] == sp.MIXED).to_numpy(),
            "end_estimated": sel["end_estimated"],
        }
    )
    d = d.astype(ph.DISPATCHES)
    remap = np.full(int(steps["index"].max()) + 2 if len(steps) else 1, UNATTRIBUTED, dtype=np.int64)
    remap[sel["index"].to_numpy(np.int64)] = np.arange(len(sel), dtype=np.int64)
    a = np.asarray(attribution, dtype=np.int64)
    out = np.where(a >= 0, remap[np.clip(a, 0, len(remap) - 1)], UNATTRIBUTED)
    return d, pd.Series(sel["phase"].to_numpy(), dtype=object, name="phase"), out
