"""Serving rules on the GPU side: decode without CUDA graphs, padding waste, exposed communication, pageable copies."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.analysis import nsys_rules as nr
from dashboard.analysis import phases as ph
from dashboard.analysis.attribution import UNATTRIBUTED
from dashboard.analysis.categories import OTHER, categorize
from dashboard.analysis.findings.base import (
    GRAPH_LAUNCH_CALL,
    LAUNCH_CALL,
    MEMCPY_ASYNC_CALL,
    MEMCPY_SYNC_CALL,
    NEEDS_EVENTS,
    Context,
    Finding,
    FindingView,
    _empty,
    _finding,
    _no_dispatches,
    _not_evaluated,
    _pct_text,
    _round_pct,
    _window,
    graph_word,
)
from dashboard.analysis.intervals import masked_union_length
from dashboard.analysis.launches import launch_call_total
from dashboard.analysis.tables import clean_api_name


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
        # a kernel is a graph's when it carries a node id or its launch call is a graph launch (a HIP graph's
        # kernels carry no node id); a step is graphed when it ran one, or a graph launch call or row falls in it
        graph_call = nr.column_is(b.api_calls, "name", GRAPH_LAUNCH_CALL.match)
        in_graph = b.kernels["graph_node_id"].notna().to_numpy(copy=True)
        launched = j["kernel_index"].to_numpy()[graph_call[j["api_index"].to_numpy()]]
        in_graph[launched] = True
        sel = attr != UNATTRIBUTED
        graph_steps = np.zeros(len(d), dtype=bool)
        graph_steps[attr[sel & in_graph]] = True
        starts = [b.api_calls["start_ns"].to_numpy(np.int64)[graph_call]]
        if not b.graph_launches.empty:
            starts.append(b.graph_launches["start_ns"].to_numpy(np.int64))
        gs = np.concatenate(starts)
        pos = np.searchsorted(d["start_ns"].to_numpy(np.int64), gs, side="right") - 1
        inside = (pos >= 0) & (gs < d["end_ns"].to_numpy(np.int64)[np.clip(pos, 0, None)])
        graph_steps[np.unique(pos[inside])] = True
        nograph = decode & (mode_none | ~graph_steps)
        per_step = np.bincount(attr[sel], minlength=len(d))
        kernels_per_step = float(per_step[nograph].mean()) if nograph.any() else 0.0

        def in_no_graph_step(kernel_index: np.ndarray) -> np.ndarray:
            step = attr[kernel_index]
            return (step != UNATTRIBUTED) & nograph[np.clip(step, 0, None)]

        launch_ns = launch_call_total(j, b.api_calls, in_no_graph_step)
        cost = launch_ns
    n_ng = int(nograph.sum())
    if not n_ng:
        n_decode = int(decode.sum())
        said = "The decode dispatch uses" if n_decode == 1 else f"All {n_decode:,} decode dispatches use"
        return _empty(ctx, rule, params, f"{said} {graph_word(ctx.bundle)}s.", view)
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
        f"{graph_word(ctx.bundle)}s ({int((decode & mode_none).sum()):,} marked mode=NONE); a graph would replace "
        f"~{kernels_per_step:.0f} launch{'' if round(kernels_per_step) == 1 else 'es'} per step, "
        f"{units.duration_short(launch_ns)} of launch calls"
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
        f"padded) over {units.count(int(r0['padded_steps']), 'step')}; {units.duration_short(cost)} of step time goes "
        "to padding."
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
            else f"No timed kernels: none of the {units.count(len(k), 'kernel row')} has a usable duration.",
            view,
        )
    comm = _is_communication(k) & timed
    if not comm.any():
        return _empty(ctx, rule, params, "No communication kernels (NCCL or similar).", view)
    rows = []
    # device ids as the frame holds them (int32 while they fit): no 10M-row copy beside the unions below
    s, e, dev = k["start_ns"].to_numpy(np.int64), ctx.kernel_end(), k["device_id"].to_numpy()
    for dv in np.unique(dev[comm]):
        c, o = comm & (dev == dv), ~comm & timed & (dev == dv)
        total = masked_union_length(s, e, c)
        # |∪comm ∩ ∪other| = |∪comm| + |∪other| − |∪(comm and other)|: three unions of masked rows, no copies
        overlap = total + masked_union_length(s, e, o) - masked_union_length(s, e, c | o)
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
    per_name = np.bincount(short.codes[comm], weights=e[comm] - s[comm], minlength=len(short.categories))
    top_name = short.categories[int(np.argmax(per_name))]
    view = FindingView(tab="kernels", sort="-total_ns", kernel=str(top_name)[:200])
    r0 = rows.iloc[0]
    text = (
        f"Communication kernels run {units.duration_short(cost)} not overlapped by compute across "
        f"{units.count(len(rows), 'GPU')}; "
        f"GPU {int(r0['device_id'])}: {units.duration_short(int(r0['exposed_ns']))} of "
        f"{units.duration_short(int(r0['comm_ns']))} "
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
            f"{units.count(len(rows), 'synchronous/pageable copy', 'copies')}; no dispatch "
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
            f"{units.count(len(rows), 'synchronous/pageable copy', 'copies')}, none inside a dispatch.",
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
        f"{units.count(copies, 'synchronous or pageable copy', 'copies')} inside the dispatch loop "
        f"take{'s' if copies == 1 else ''} "
        f"{units.duration_short(cost)} of GPU copy time, most in {by.index[0]} "
        f"({units.count(int(by['size'].iloc[0]), 'copy', 'copies')}); "
        f"largest: {int(top['bytes']):,} B {top['src_kind']}→{top['dst_kind']} by {clean_api_name(top['api_name'])}."
    )
    return _finding(ctx, rule, params, cost, text, rows, FindingView(tab="api", t0_ns=t0, t1_ns=t1))
