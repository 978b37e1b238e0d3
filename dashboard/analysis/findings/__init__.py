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

from dashboard import units
from dashboard.analysis.derived import BundleAnalysis
from dashboard.analysis.findings.base import (  # noqa: F401 (the findings API)
    API_CALLS,
    CAUSE_GAPS,
    GPU_WORK,
    HOST_COST_RULES,
    KERNEL_ROWS,
    LAUNCH_CALL,
    MEMCPY_ASYNC_CALL,
    MEMCPY_SYNC_CALL,
    MEMOPS,
    NEEDS_EVENTS,
    NSYS_RULES,
    RULE_INPUTS,
    RULE_PARAMS,
    RULES,
    SERVING_RULES,
    SEVERITIES,
    SYNC_CALL,
    Context,
    Finding,
    FindingView,
    StepDispatches,
    _not_evaluated,
    _pct_text,
    _round_pct,
    build_context,
    host_reference_ns,
    missing_inputs,
    severity_of,
    trace_span,
)
from dashboard.analysis.findings.device import (
    decode_without_graphs,
    exposed_communication,
    padding_waste,
    pageable_in_loop,
)
from dashboard.analysis.findings.host import host_bound_steps, launch_bound, sync_in_loop
from dashboard.analysis.findings.nsys import nsys_finding
from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX
from dashboard.model import Summary, TraceBundle

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
    steps_searched: bool = False,
) -> list[Finding]:
    """Evaluate ``rules`` (default RULES) and rank them: cost descending, then rule id.

    Args:
        params: rule id -> {parameter: value} overriding the defaults.
        threshold: prefill/decode split in tokens (None: automatic, as the dashboard).
        derived: the trace's derived results (``analysis.derived.BundleAnalysis``), shared with the views.
        steps: a framework's steps as the dispatches (``StepDispatches``; None: the dispatch marks of
            ``dispatch_prefix``).
        steps_searched: the step source was auto and found no framework's annotations (what a rule that found
            no dispatches then says).

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
        summary,
        bundle,
        dispatch_prefix=dispatch_prefix,
        threshold=threshold,
        derived=derived,
        steps=steps,
        steps_searched=steps_searched,
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
            other = bundle.meta.unanalysed_device if bundle is not None else ()
            if other and (GPU_WORK in missing or KERNEL_ROWS in missing):  # another accelerator's work, unread
                spelled += "; its " + " and ".join(units.count_of(n, w) for w, n in other) + " are not analysed"
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
