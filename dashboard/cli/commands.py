"""tracedash inspect, findings, steps and cache."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dashboard.cli.args import _cache, _say, _trace_id, say_warnings, write_answer
from dashboard.errors import TraceError


def _inspect(args) -> int:
    from dashboard.cli.inspect import format_inspect, inspect_trace

    info = inspect_trace(args.trace, _cache(args))
    _say(json.dumps(info, indent=2) if args.json else format_inspect(info))
    return 0


def _findings(args) -> int:
    """``tracedash findings TRACE``: ranked findings as text or JSON (tracedash.findings/1)."""
    from dashboard.analysis.findings import RULES
    from dashboard.data.trace import load_trace
    from dashboard.render.findings import findings_for, findings_json, findings_text

    rules = list(dict.fromkeys(args.rule or [])) or None
    params: dict[str, dict] = {}
    for rule, name, value in args.param or []:
        if rule not in RULES:
            raise TraceError(f"--param {rule}.{name}: unknown rule {rule!r} (rules: {', '.join(RULES)})")
        params.setdefault(rule, {})[name] = value
    cache = _cache(args)
    trace = load_trace(args.trace, dispatch_prefix=args.dispatch_prefix, cache=cache)
    say_warnings(Path(args.trace).name, trace.summary.warnings)
    try:
        spec = None
        if args.steps is not None:
            from dashboard.analysis.step_presets import parse_step_source

            spec = parse_step_source(args.steps, prefix=args.dispatch_prefix, threshold=args.threshold)
        found = findings_for(trace, rules=rules, params=params, threshold=args.threshold, steps=spec)
    except ValueError as exc:
        raise TraceError(str(exc)) from None
    tid = _trace_id(Path(args.trace), cache if cache.enabled else None)
    if args.json:
        write_answer(json.dumps(findings_json(trace, found, tid), indent=2) + "\n")
    else:
        write_answer(findings_text(trace, found, tid))
    return 0


def _cache_command(args) -> int:
    cache = _cache(args)
    if cache.root.exists() and not cache.root.is_dir():
        raise TraceError(f"{cache.root}: not a directory")
    if args.action == "clear":
        n = cache.clear()
        _say(f"removed {n} cached trace(s) from {cache.root}")
        left = [e for e in cache.entries_dir.iterdir() if e.is_dir()] if cache.entries_dir.is_dir() else []
        if left:
            raise TraceError(f"{len(left)} cached trace(s) in {cache.root} could not be removed (read-only?)")
    else:
        entries = [e for e in cache.entries_dir.iterdir() if e.is_dir()] if cache.entries_dir.is_dir() else []
        size = sum(f.stat().st_size for e in entries for f in e.rglob("*") if f.is_file())
        _say(f"{cache.root}: {len(entries)} cached trace(s), {size / 2**20:.1f} MiB")
    return 0


def _steps(args) -> int:
    """``tracedash steps TRACE``: the steps as a table or JSON (``steps_report``)."""
    from dashboard.analysis.step_presets import parse_step_source
    from dashboard.cli.steps import steps_json, steps_report, steps_text
    from dashboard.data.trace import load_trace

    spec = parse_step_source(args.steps, prefix=args.dispatch_prefix, threshold=args.threshold)
    trace = load_trace(args.trace, dispatch_prefix=args.dispatch_prefix, cache=_cache(args))
    say_warnings(Path(args.trace).name, trace.summary.warnings)
    report = steps_report(trace, spec, args.pid)
    if args.json:
        for note in report.notes:
            _say(f"tracedash: note: {note}", file=sys.stderr)
        write_answer(json.dumps(steps_json(report), indent=2) + "\n")
    else:
        write_answer(steps_text(report, Path(args.trace).name))
    return 0
