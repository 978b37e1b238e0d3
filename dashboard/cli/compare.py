"""tracedash diff: run B against run A, with a regression gate."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dashboard.cli.args import EXIT_SLOWER, _cache, _say, reader_left, write_answer
from dashboard.errors import TraceError


def _diff(args) -> int:
    """``tracedash diff A B``: deltas of candidate B against baseline A (text or --json)."""
    from dashboard.analysis.compare import compare_runs, comparison_to_dict
    from dashboard.data.trace import load_trace
    from dashboard.render.compare import comparison_text

    cache = _cache(args)
    a = load_trace(args.baseline, dispatch_prefix=args.dispatch_prefix, cache=cache)
    b = load_trace(args.candidate, dispatch_prefix=args.dispatch_prefix, cache=cache)
    spec, steps = _step_sources(args, a, b)
    c = compare_runs(a, b, dispatch_prefix=args.dispatch_prefix, threshold=args.threshold, steps=steps)
    from dashboard.render.findings import diff_findings, diff_text, findings_for

    moved = diff_findings(
        findings_for(a, threshold=args.threshold, steps=spec), findings_for(b, threshold=args.threshold, steps=spec)
    )
    try:
        if args.json:
            write_answer(json.dumps({**comparison_to_dict(c, top=args.top), "findings": moved}, indent=2) + "\n")
        else:
            write_answer(comparison_text(c, top=args.top) + "\n" + diff_text(moved))
    except BrokenPipeError:  # the reader left (`| head`): the gate below still decides the exit code
        reader_left()
    pct = c.gate.delta_pct
    if args.fail_if_slower is not None and pct != pct:
        why = (
            c.gate.explanation.removeprefix("not measured: ")
            if c.gate.explanation.startswith("not measured: ")
            else "nothing comparable in both runs"
        )
        _say(f"tracedash: warning: the gate ({c.gate.metric}) cannot be measured: {why}", file=sys.stderr)
    if args.fail_if_slower is not None and pct == pct and pct > args.fail_if_slower:
        _say(
            f"tracedash: candidate {c.b_file} is {pct:.2f} % slower than baseline {c.a_file} "
            f"({c.gate.metric}), more than the allowed {args.fail_if_slower:g} %",
            file=sys.stderr,
        )
        return EXIT_SLOWER
    return 0


def _step_sources(args, a, b):
    """``(spec, steps)`` of ``diff --steps``: the parsed step source (None without the option) and both runs'
    serving steps for ``compare_runs`` (None: the dispatch marks, as without the option).

    Raises:
        TraceError: only one of the runs holds the chosen steps (phases cannot be aligned with marks).
    """
    if args.steps is None:
        return None, None
    from dashboard.analysis.step_presets import parse_step_source
    from dashboard.data.analysis import analysis_of

    spec = parse_step_source(args.steps, prefix=args.dispatch_prefix, threshold=args.threshold)
    sa, sb = (analysis_of(r).step_dispatches(spec) for r in (a, b))
    sa, sb = (x if x is not None and len(x.dispatches) else None for x in (sa, sb))  # no serving step: none
    if sa is None and sb is None:
        return spec, None
    if sa is None or sb is None:
        other, which = (a, "baseline") if sa is None else (b, "candidate")
        label = analysis_of(other).steps(spec)[0].label
        raise TraceError(
            f"--steps {args.steps}: the {which} {Path(other.path).name} has no such steps (steps from: "
            f"{label}); both runs need the same step source to align their phases"
        )
    return spec, ((sa.dispatches, sa.phases), (sb.dispatches, sb.phases))
