"""tracedash summarize: one trace, or several ranks of a run as Dask tasks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dashboard.cli.args import (
    EXIT_INPUT_ERROR,
    _cache,
    _check_output,
    _Progress,
    _say,
    say_warnings,
    write_answer,
    write_file,
)
from dashboard.errors import TraceError


def _summarize(args) -> int:
    if args.slices is not None and (len(args.trace) > 1 or args.json):
        raise TraceError("--slices cuts one trace into time slices: give one file, without --json")
    if len(args.trace) > 1 or (args.scheduler and args.slices is None) or args.json:
        if args.steps is not None:
            raise TraceError(
                "--steps writes a 'steps' section into one file's summary: give one trace, "
                "without --json or --scheduler"
            )
        return _summarize_many(args)
    cache = _cache(args)
    path = Path(args.trace[0])
    if args.output not in (None, "-"):
        _check_output(Path(args.output), (path,))  # before the trace is read, not after
    from dashboard.data.cache import cached_summary_text

    text = cached_summary_text(cache, path, args.dispatch_prefix)
    if text is None:
        from dashboard.loaders import sniff_format

        nsys = path.is_file() and sniff_format(path) == "nsys-sqlite"
        text = _sliced_text(path, args, cache, nsys)
    if text is None:
        progress = _Progress(path.name)
        try:
            started = _start_reading(path, cache, progress, nsys)
            from dashboard.data.multirank import computed_summary_text

            text = computed_summary_text(path, args.dispatch_prefix, cache, progress=progress, started=started)
        finally:
            progress.close()
    _say_summary_warnings(path, text)
    if args.steps is not None:
        text = _with_steps_section(text, path, args, cache)
    if args.output in (None, "-"):
        write_answer(text)
    else:
        write_file(Path(args.output), text)
    return 0


def _start_reading(path: Path, cache, progress, nsys: bool):
    """The summary's reads of an nsys export (``nsys``: the file is one), begun before pandas and the analysis
    modules are imported: SQLite decodes rows while they load. None for another format, or when the frames are
    cached (the summary is made from them)."""
    if not nsys or cache.has_bundle(path):
        return None
    from dashboard.loaders.nsys_reads import begin_reads

    return begin_reads(path, progress, lean=True)


def _sliced_text(path: Path, args, cache, nsys: bool) -> str | None:
    """The summary computed per time slice on Dask (``data.slices``) when ``--slices`` asks for it or the
    trace is too big for one pass (``auto_slice_count``); None to summarise it in one pass (``nsys``: the file is
    an nsys SQLite export)."""
    if not nsys:
        if args.slices is not None:
            raise TraceError(f"{path.name}: only nsys SQLite exports can be summarised per time slice")
        return None
    from dashboard.data.slice_count import auto_slice_count

    n = args.slices or auto_slice_count(path, args.workers)
    if args.slices is None and n == 1:
        return None
    from dashboard.data.slices import combine_slices, plan_slices, run_on_dask, summary_json_text

    plan = plan_slices(path, n, args.dispatch_prefix)
    if isinstance(plan, str):
        _say(f"tracedash: {path.name}: {plan}: cannot be cut into time slices exactly; one pass", file=sys.stderr)
        return None
    _say(f"tracedash: summarising {path.name} in {plan.count} time slices on Dask", file=sys.stderr)
    parts = run_on_dask(plan, scheduler=args.scheduler, n_workers=args.workers)
    text = summary_json_text(combine_slices(plan, parts))
    cache.store_summary_text(path, args.dispatch_prefix, text)
    return text


def _with_steps_section(text: str, path: Path, args, cache) -> str:
    """The summary JSON with its ``steps`` section (``cli.steps.summary_steps``) after the seed's keys."""
    from dashboard.analysis.step_presets import parse_step_source
    from dashboard.cli.steps import steps_report, summary_steps
    from dashboard.data.trace import load_trace

    spec = parse_step_source(args.steps, prefix=args.dispatch_prefix)
    trace = load_trace(path, dispatch_prefix=args.dispatch_prefix, cache=cache)
    data = json.loads(text)
    data["steps"] = summary_steps(steps_report(trace, spec))
    return json.dumps(data, indent=2) + "\n"


def _say_summary_warnings(path: Path, text: str) -> None:
    """Repeat the ``warnings`` list of a summary on stderr, one ``tracedash: warning:`` line each."""
    try:
        lines = json.loads(text).get("warnings") or []
    except (ValueError, AttributeError):
        lines = []
    say_warnings(path.name, lines)


def _summary_names(paths: list[Path]) -> list[str]:
    """Output file name per input: ``NAME.summary.json``; ``NAME.rankR.summary.json`` on clashes."""
    names = [p.name for p in paths]
    return [f"{n}.summary.json" if names.count(n) == 1 else f"{n}.rank{r}.summary.json" for r, n in enumerate(names)]


def _summarize_many(args) -> int:
    """Many files (a multi-rank run) on Dask: one summary per file plus the combined per-rank table."""
    from dashboard.analysis.ranks import rank_table
    from dashboard.data.multirank import combined_json, format_rank_table, ranks_of, summaries_of, summarize_many

    paths = [Path(t) for t in args.trace]
    out_dir = None
    if args.output not in (None, "-"):
        out_dir = Path(args.output)
        if out_dir.exists() and not out_dir.is_dir():
            raise TraceError(f"{out_dir} is a file; with several traces -o names a folder")
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TraceError(f"{out_dir}: cannot create the output folder ({exc.strerror or exc})") from exc
    results = summarize_many(
        paths,
        dispatch_prefix=args.dispatch_prefix,
        cache=_cache(args),
        scheduler=args.scheduler,
        n_workers=args.workers,
    )
    for r in results:
        if r.error:
            _say(f"tracedash: error: {r.error}", file=sys.stderr)
        elif r.text is not None:
            _say_summary_warnings(r.path, r.text)
    if out_dir is not None:
        for r, name in zip(results, _summary_names(paths)):
            if r.text is not None:
                target = out_dir / name
                write_file(target, r.text)
                _say(f"wrote {target}", file=sys.stderr)
    if args.json:
        write_answer(json.dumps(combined_json(results, include_summaries=out_dir is None), indent=2) + "\n")
    else:
        if out_dir is None:
            for r in results:
                if r.text is not None:
                    write_answer(f"==> {r.path} <==\n{r.text}\n")
        ranks, warnings = ranks_of(results)
        for w in warnings:
            _say(f"tracedash: warning: {w}", file=sys.stderr)
        table = rank_table(summaries_of(results), [r.path.name for r in results], ranks)
        failed = {i: (r.path.name, r.error) for i, r in zip(ranks, results) if r.error}
        write_answer(format_rank_table(table, failed))
    return EXIT_INPUT_ERROR if any(r.error for r in results) else 0
