"""The six nsys analyze rules (NVIDIA rows, kept for parity), and what they do not look at (driver-API, HIP calls)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.analysis import nsys_rules as nr
from dashboard.analysis.findings.base import (
    NEEDS_EVENTS,
    SYNC_CALL,
    Context,
    Finding,
    FindingView,
    _empty,
    _finding,
    _not_evaluated,
    _window,
    blocking_cost,
)
from dashboard.analysis.tables import clean_api_name
from dashboard.model import TraceBundle

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
            f"the trace's {units.count(len(hit), 'other synchronisation call')} ({_names_brief(hit)}): see sync-in-loop"
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
        f"the trace's {units.count(len(rows), f'{family} {what}', many)} ({_names_brief(rows['api_name'])}, "
        f"{units.duration_short(int(rows['duration_ns'].sum()))}): see {see}"
    )


COPIES_COUNTED = "memcpy/memset time counted as GPU work, as nsys analyze counts it"


def _gpu_ops_counted(bundle: TraceBundle, rule: str) -> str:
    """What a GPU rule counted as GPU work when the trace has copies or memsets: nsys analyze counts their time
    with the kernels', so "no idle gap" or "no low chunk" can stand beside a low kernels-only utilisation."""
    if not rule.startswith("gpu-") or bundle.memops.empty:
        return ""
    return f"; {COPIES_COUNTED} (the kernel-only busy figures do not)"


def nsys_finding(ctx: Context, rule: str, params: dict) -> Finding:
    """One ``nsys analyze`` rule as a Finding: its rows (nsys_rules), cost = the rows' total time
    (for gpu-low-util, the idle part of the listed chunks: duration × (100 − in-use) / 100; for cuda-sync-api, the
    GPU idle its calls can have cost, ``idle.idle_while_blocked``: blocked host time is not lost GPU time). An API rule
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
        return _empty(ctx, rule, params, f"No {label}{_gpu_ops_counted(ctx.bundle, rule)}.", FindingView(tab=tab))
    total = int(rows["duration_ns"].sum())
    if rule == "gpu-low-util":
        cost = int(sum(int(d) * max(100.0 - p, 0.0) / 100.0 for d, p in zip(rows["duration_ns"], rows["in_use_pct"])))
    elif rule == "cuda-sync-api":  # blocked host time is not lost GPU time: the GPU idle the calls can have cost
        s = rows["start_ns"].to_numpy(np.int64)
        cost, clause = blocking_cost(ctx, s, s + rows["duration_ns"].to_numpy(np.int64))
    else:
        cost = total
    if len(rows) == 1:
        label = _NSYS_ONE[rule].format(**params)
    # the view frames the row the sentence names: the longest, or for gpu-low-util the lowest chunk (rows' order)
    top = (
        rows.iloc[0]
        if rule == "gpu-low-util"
        else rows.sort_values("duration_ns", ascending=False, kind="stable").iloc[0]
    )
    t0, t1 = _window(int(top["start_ns"]), int(top["start_ns"]) + int(top["duration_ns"]))
    text = (
        f"{len(rows):,} {label}, {units.duration_short(total)} in all; the longest "
        f"{units.duration_short(int(top['duration_ns']))} at "
        f"{int(top['start_ns']) / 1e9:.3f} s"
    )
    if rule == "gpu-low-util":
        text = (
            f"{len(rows):,} {label} ({units.duration_short(int(rows['duration_ns'].sum()))}), "
            f"{units.duration_short(cost)} of it idle; "
            f"the lowest at {float(rows['in_use_pct'].iloc[0]):.1f} % from {int(rows['start_ns'].iloc[0]) / 1e9:.3f} s"
        )
    if unread:
        text += f" (CUDA runtime names only, as nsys; not looked at: {unread})"
    text += _gpu_ops_counted(ctx.bundle, rule)
    if rule == "cuda-sync-api":
        text += f"; {clause}"
    top_s, top_e = int(top["start_ns"]), int(top["start_ns"]) + int(top["duration_ns"])
    mark = ("gap", top_s, top_e) if rule == "gpu-starv" else None
    return _finding(
        ctx, rule, params, cost, text + ".", rows, FindingView(tab=tab, t0_ns=t0, t1_ns=t1, mark=mark), note
    )


# ---------------------------------------------------------------------------- serving rules
