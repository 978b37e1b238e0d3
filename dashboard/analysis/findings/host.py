"""Serving rules on the host side of the dispatch loop: host-bound steps, synchronisation in the loop, launch-bound."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.analysis import phases as ph
from dashboard.analysis.attribution import UNATTRIBUTED
from dashboard.analysis.findings.base import (
    CAUSE_GAPS,
    NEEDS_EVENTS,
    SYNC_CALL,
    Context,
    Finding,
    FindingView,
    _empty,
    _finding,
    _no_dispatches,
    _not_evaluated,
    _round_pct,
    _trace_span,
    _window,
    blocking_cost,
)
from dashboard.analysis.gpu_time import has_gpu_work
from dashboard.analysis.idle import NO_HOST_ACTIVITY, gap_causes, idle_gaps_of, idle_while_blocked
from dashboard.analysis.intervals import PART_ROWS, intersection_length, union_length, union_overlap_length
from dashboard.analysis.kernel_times import kernel_durations_at, usable_kernel_mask
from dashboard.analysis.ratio import share_pct
from dashboard.analysis.tables import clean_api_name, normalize_nvtx_name


def host_bound_steps(ctx: Context, params: dict) -> Finding:
    """``host-bound-steps``: dispatches whose attributed GPU busy time (union of their own kernels) is
    under ``share`` % of the step, and the GPU idle inside them (no GPU work of any step: kernels, memcpy/memset,
    graph launches); cost = that idle. A step short of its own GPU work while the GPU runs other steps' work (GPU
    work lagging its marks) costs nothing: the GPU was not waiting for the host. The host cause is the CUDA API
    call and NVTX range covering the most GPU idle time inside those steps (analysis.idle.gap_causes).

    Rows per phase: phase, steps, host_bound_steps, step_ns, gpu_busy_ns, without_own_gpu_ns (step − own busy),
    gpu_idle_ns, cause, cause_idle_ns.
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
    gaps = idle_gaps_of(ctx.busy_unions(), min_gap_ns=1)  # the default busy source's kept unions
    starts, ends = d["start_ns"].to_numpy(np.int64), d["end_ns"].to_numpy(np.int64)
    pos = np.searchsorted(starts, gaps["start_ns"].to_numpy(np.int64), side="right") - 1
    ok = (pos >= 0) & (gaps["start_ns"].to_numpy() < ends[np.clip(pos, 0, None)])
    ok &= bound[np.clip(pos, 0, None)]
    g = gaps[ok].assign(phase=ctx.phases.to_numpy()[pos[ok]], step_end=ends[pos[ok]])
    g = g.sort_values("duration_ns", ascending=False, kind="stable").head(CAUSE_GAPS)
    causes = gap_causes(g.drop(columns=["phase", "step_end"]), b.kernels, b.api_calls, b.nvtx_ranges, limit=len(g))
    causes["phase"] = g["phase"].to_numpy()
    causes["step_end"] = g["step_end"].to_numpy()
    rows = []
    phases = ctx.phases.to_numpy()
    gs, ge = ctx.no_gpu_busy()

    def cause_idle(c: pd.DataFrame) -> int:
        """The idle of a cause's gaps as ``gpu_idle_ns`` measures it: inside their steps, when no GPU was busy
        (one device's gap while another GPU ran counts nothing; gaps of two devices at once count once)."""
        return union_overlap_length(
            gs, ge, c["start_ns"].to_numpy(np.int64), np.minimum(c["end_ns"], c["step_end"]).to_numpy(np.int64)
        )

    for phase in ph.PHASE_ORDER:
        sel = (phases == phase) & bound
        if not sel.any():
            continue
        c = causes[causes["phase"] == phase]
        c = c[c["cause"] != NO_HOST_ACTIVITY] if (c["cause"] != NO_HOST_ACTIVITY).any() else c
        top = pd.Series({k: cause_idle(grp) for k, grp in c.groupby("cause", sort=False)}, dtype="int64")
        top = top[top > 0].sort_values(ascending=False, kind="stable")
        rows.append(
            {
                "phase": phase,
                "steps": int((phases == phase).sum()),
                "host_bound_steps": int(sel.sum()),
                "step_ns": int(dur[sel].sum()),
                "gpu_busy_ns": int(busy[sel].sum()),
                "without_own_gpu_ns": int((dur[sel] - busy[sel]).sum()),
                "gpu_idle_ns": union_overlap_length(gs, ge, starts[sel], ends[sel]),
                "cause": str(top.index[0]) if len(top) else None,  # None: no idle gap starts in these steps
                "cause_idle_ns": int(top.iloc[0]) if len(top) else 0,
            }
        )
    rows = pd.DataFrame(rows).sort_values(["gpu_idle_ns", "without_own_gpu_ns"], ascending=False, kind="stable")
    cost = int(rows["gpu_idle_ns"].sum())
    n_bound = int(rows["host_bound_steps"].sum())
    keep, own = ("keeps", "its") if n_bound == 1 else ("keep", "their")
    lead = (
        f"{n_bound:,} of {units.count(len(d), 'step')} {keep} the GPU busy with {own} own work under "
        f"{params['share']} % of the step ({units.duration_short(int(rows['without_own_gpu_ns'].sum()))} without it)"
    )
    them, its = ("it", "its") if n_bound == 1 else ("them", "their")
    if cost == 0:  # the GPU ran other work throughout, or the steps lie outside its activity span
        lo, hi = ctx.gpu_work_span()
        inside = intersection_length(np.array([lo]), np.array([hi]), starts[bound], ends[bound])
        total = int(dur[bound].sum())
        if inside >= total:
            text = f"{lead}, but the GPU was never idle in {them}: it ran other work throughout; no GPU time lost."
        else:  # most of a step can lie outside the recorded GPU work (triton: 1.76 µs of a 13.3 s step)
            text = (
                f"{lead}; only {units.duration_short(inside)} of {its} {units.duration_short(total)} lies within "
                f"the GPU activity span (first to last GPU work), where the GPU was never idle: the rest is outside "
                f"the recorded GPU work, so what {them} cost the GPU is not measured."
            )
        return _empty(ctx, rule, params, text, view)
    worst = int(np.argmax(np.where(bound, dur - busy, -1)))
    t0, t1 = _window(int(starts[worst]), int(ends[worst]))
    r0 = rows.iloc[0]
    cause = f", mainly {r0['cause']} ({units.duration_short(int(r0['cause_idle_ns']))})" if r0["cause_idle_ns"] else ""
    text = (
        f"{lead}; the GPU was idle {units.duration_short(cost)} in {them}, most in {r0['phase']} "
        f"({units.duration_short(int(r0['gpu_idle_ns']))}){cause}."
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
    # Totals do not tell when the GPU was idle: what the calls can have cost is at most the span's idle time.
    idle = max(s.gpu_idle_within_span_ns, 0)
    blocked = int(rows["blocked_ns"].sum())
    cost = min(blocked, idle) if s.gpu_activity_span_ns > 0 else blocked  # no kernels: the GPU's cost is unknown
    r0 = rows.iloc[0]
    where = (
        f" inside NVTX range {r0['nvtx_range']} ({r0['range_count']:,} ranges, "
        f"{units.duration_short(int(r0['range_sum_ns']))})"
        if r0["nvtx_range"]
        else ""
    )
    # totals are summed over host threads, which a summary does not count: no share of a whole is defined
    span = (
        f"; the GPU activity span is {units.duration_short(s.gpu_activity_span_ns)}, with "
        f"{units.duration_short(idle)} of it idle: the most they can have cost the GPU"
        if s.gpu_activity_span_ns > 0
        else ""
    )
    text = (
        f"{int(r0['calls']):,} {clean_api_name(r0['api_name'])} calls block the host "
        f"{units.duration_short(int(r0['blocked_ns']))}"
        f"{where}, summed over host threads{span} (from the summary's totals; shares and per-step numbers "
        f"need event rows)."
    )
    return _finding(ctx, rule, params, cost, text, rows, view, "from totals: " + NEEDS_EVENTS)


def sync_in_loop(ctx: Context, params: dict) -> Finding:
    """``sync-in-loop``: blocking CUDA calls (SYNC_CALL: stream/device/event/context synchronise) that
    start inside a dispatch, per phase: calls, calls per step, blocked time, the phase's step time, the
    share of the blocking threads' step time spent blocked (each thread's calls as a union inside the
    phase's steps, over step time × threads: at most 100 %), the call name and NVTX range holding the
    most blocked time, and the GPU idle they can have cost (``idle.idle_while_blocked``: while they block, and
    from a call's return into an idle GPU until it gets work again). Cost = that GPU idle, not the blocked time:
    a host thread blocked while the GPU runs queued work costs no GPU time (and blocked time summed over threads
    can exceed the trace). Without dispatch marks the whole trace is one loop ("all"):
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
        return _empty(ctx, rule, params, f"{units.count(len(a), 'blocking call')}, none inside a dispatch.", view)
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
    idle = ctx.no_gpu_busy() if has_gpu_work(ctx.bundle) else None
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
                "gpu_idle_ns": None if idle is None else idle_while_blocked(g["start"], g["end"], idle),
            }
        )
    rows = pd.DataFrame(rows)
    # the phase that cost the most GPU time leads (the finding's cost), then the most blocked
    order = ["blocked_ns"] if idle is None else ["gpu_idle_ns", "blocked_ns"]
    rows = rows.sort_values(order, ascending=False, kind="stable")
    blocked = int(rows["blocked_ns"].sum())
    cost, clause = blocking_cost(ctx, start[inside], end[inside])
    r0 = rows.iloc[0]
    share = (
        "n/a"
        if r0["share_pct"] is None or pd.isna(r0["share_pct"])
        else "under 0.1 %"
        if 0 < blocked and r0["share_pct"] < 0.05
        else f"{r0['share_pct']:.1f} %"
    )
    longest = int(np.argmax(np.where(inside, end - start, -1)))
    t0, t1 = _window(int(start[longest]), int(end[longest]))
    where = f" inside {r0['nvtx_range']}" if r0["nvtx_range"] else ""
    n_threads = threads[r0["phase"]]
    calls = int(rows['calls'].sum())
    # each thread's calls as a union: nested or repeated calls on one thread hold it once
    held_ns = sum(union_length(t["start"].to_numpy(), t["end"].to_numpy()) for _, t in f.groupby("tid", sort=False))
    held = units.duration_short(held_ns) + (
        f" ({units.duration_short(blocked)} summed over the calls)" if held_ns != blocked else ""
    )
    if ctx.dispatches.empty:
        text = (
            f"No dispatch marks, so the whole trace is the loop (no per-step figures): "
            f"{units.count(calls, 'blocking call')} hold{'s' if calls == 1 else ''} "
            f"{units.count(n_threads, 'host thread')} {held}, {share} of "
            f"{'its' if n_threads == 1 else 'their'} time over the trace's {units.duration_short(span['all'])} span "
            f"(first to last recorded event), mostly {clean_api_name(r0['api_name'])}{where} "
            f"({units.duration_short(int(r0['top_blocked_ns']))})"
        )
    else:
        whose = "its step time" if n_threads == 1 else f"its step time on {n_threads} blocking host threads"
        # with several phases, say why this one leads and how long it blocked: its figures are not the total's
        lead = (
            f", the phase they cost the GPU most ({units.duration_short(int(r0['gpu_idle_ns']))} idle)"
            if len(rows) > 1 and idle is not None and int(r0["gpu_idle_ns"]) > 0
            else ""
        )
        phase_blocked = f"{units.duration_short(int(r0['blocked_ns']))} blocked, " if len(rows) > 1 else ""
        text = (
            f"{units.count(calls, 'blocking call')} in the dispatch loop hold{'s' if calls == 1 else ''} the host "
            f"{held}; "
            f"{r0['phase']}{lead}: {r0['calls_per_step']:g} per step, {share} of {whose}, {phase_blocked}mostly "
            f"{clean_api_name(r0['api_name'])}{where} ({units.duration_short(int(r0['top_blocked_ns']))})"
        )
    text += f"; {clause}."
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
    kidx, aidx = j["kernel_index"].to_numpy(), j["api_index"].to_numpy()
    # a call that launched several kernels (a node-traced graph launch) is shared between them
    seen = np.zeros(len(ctx.bundle.api_calls), dtype=bool)
    seen[aidx] = True
    per_call = None
    if int(np.count_nonzero(seen)) < len(aidx):
        per_call = np.zeros(len(seen), dtype=np.int32)
        np.add.at(per_call, aidx, 1)
    del seen
    if ctx.dispatches.empty:
        attr, pcode = None, None
        names = np.array(["all"], dtype=object)
        steps = {"all": 0}
    else:
        attr = ctx.attribution()
        pp = ctx.phases.to_numpy()
        pcode, pnames = pd.factorize(pp)  # per dispatch: small
        names = np.append(np.asarray(pnames, dtype=object), "")
        steps = {p: int((pp == p).sum()) for p in set(pp)}
    m = len(names)
    count, short, over, lsum = np.zeros(m, np.int64), np.zeros(m), np.zeros(m), np.zeros(m)
    api_end = ctx.bundle.api_calls["end_ns"].to_numpy(np.int64)
    api_start = j["api_start_ns"].to_numpy(np.int64)
    for a in range(0, len(j), PART_ROWS):  # a part of the launches at a time: 10M hold no dozen 80 MB columns
        k, c = kidx[a : a + PART_ROWS], aidx[a : a + PART_ROWS]
        kdur = kernel_durations_at(ctx.bundle.kernels, k)
        ldur = api_end[c] - api_start[a : a + PART_ROWS]
        if per_call is not None:
            ldur //= per_call[c]
        if attr is None:
            codes = np.zeros(len(k), dtype=np.int64)
        else:
            at = attr[k]
            codes = np.where(at != UNATTRIBUTED, pcode[np.clip(at, 0, None)], m - 1)
        count += np.bincount(codes, minlength=m)
        short += np.bincount(codes, weights=(kdur < ldur), minlength=m)
        over += np.bincount(codes, weights=np.clip(ldur - kdur, 0, None), minlength=m)
        lsum += np.bincount(codes, weights=ldur, minlength=m)
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
            f"{units.duration_short(int(r0['launch_ns_per_step']))} of launch calls per step; "
            f"launches outlast their kernels by {units.duration_short(cost)} in all."
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
            f"{which}, {units.duration_short(launch_ns)} of launch calls in all; launches outlast their kernels by "
            f"{units.duration_short(cost)} in all."
        )
    return _finding(ctx, rule, params, cost, text, rows, view)
