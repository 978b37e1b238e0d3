"""Command line: ``tracedash summarize`` and ``tracedash serve``.

Bad input prints one clear line to stderr and exits with code 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from dashboard import __version__
from dashboard.errors import TraceError

EXIT_INPUT_ERROR = 2


def _say(*parts, file=None) -> None:
    """Write one line to stdout (or ``file``): the CLI's only output path."""
    (file or sys.stdout).write(" ".join(str(p) for p in parts) + "\n")


def default_trace_dir() -> Path | None:
    """``./sample_traces`` if present, else the repository's bundled ``sample_traces/``."""
    for candidate in (Path.cwd() / "sample_traces", Path(__file__).resolve().parent.parent / "sample_traces"):
        if candidate.is_dir():
            return candidate
    return None


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {port}")
    return port


def _prefix(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the dispatch prefix must not be empty (every NVTX mark would count)")
    return text


def _cache(args):
    from dashboard.data.cache import TraceCache

    return TraceCache(Path(args.cache_dir) if args.cache_dir else None, enabled=not args.no_cache)


class _Progress:
    """A tqdm bar over loading stages, on stderr, only when stderr is a terminal."""

    STAGES = 5

    def __init__(self, name: str):
        self.name = name
        self.bar = None

    def __call__(self, stage: str) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=self.STAGES, desc=f"loading {self.name}", unit="stage", leave=False, disable=None, file=sys.stderr
            )
        else:
            self.bar.update(1)
        self.bar.set_postfix_str(stage)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _summarize(args) -> int:
    if len(args.trace) > 1 or args.scheduler or args.json:
        if args.steps is not None:
            raise TraceError(
                "--steps writes a 'steps' section into one file's summary: give one trace, "
                "without --json or --scheduler"
            )
        return _summarize_many(args)
    from dashboard.data.multirank import summary_text

    cache = _cache(args)
    path = Path(args.trace[0])
    if args.output not in (None, "-"):
        _check_output(Path(args.output))  # before the trace is read, not after
    progress = _Progress(path.name)
    try:
        text = summary_text(path, args.dispatch_prefix, cache, progress=progress)
    finally:
        progress.close()
    _say_summary_warnings(path, text)
    if args.steps is not None:
        text = _with_steps_section(text, path, args, cache)
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        out = Path(args.output)
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise TraceError(f"{out}: cannot write ({exc.strerror or exc})") from exc
    return 0


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
    for line in lines:
        _say(f"tracedash: warning: {path.name}: {line}", file=sys.stderr)


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
                try:
                    target.write_text(r.text, encoding="utf-8")
                except OSError as exc:
                    raise TraceError(f"{target}: cannot write ({exc.strerror or exc})") from exc
                _say(f"wrote {target}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(combined_json(results, include_summaries=out_dir is None), indent=2) + "\n")
    else:
        if out_dir is None:
            for r in results:
                if r.text is not None:
                    sys.stdout.write(f"==> {r.path} <==\n{r.text}\n")
        ranks, warnings = ranks_of(results)
        for w in warnings:
            _say(f"tracedash: warning: {w}", file=sys.stderr)
        table = rank_table(summaries_of(results), [r.path.name for r in results], ranks)
        failed = {i: (r.path.name, r.error) for i, r in zip(ranks, results) if r.error}
        sys.stdout.write(format_rank_table(table, failed))
    return EXIT_INPUT_ERROR if any(r.error for r in results) else 0


def _dask_workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of workers: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"at least 1 worker, got {n}")
    return n


def _serve(args) -> int:
    from functools import partial

    from dashboard.app import create_app
    from dashboard.app.server import tune_malloc
    from dashboard.app.store import default_memory_limit, make_upload_dir

    tune_malloc()  # before any trace is loaded or worker forked: freed frames go back to the system
    dirs = list(args.trace_dir or [])
    if not args.traces and not dirs and not args.ranks:
        d = default_trace_dir()
        if d is None:
            raise TraceError("no traces given and no sample_traces/ folder found: pass TRACE files or --trace-dir DIR")
        dirs = [d]
    workers = args.workers or 1
    if workers > 1 and args.debug:
        raise TraceError("--debug runs one process: leave out --workers")
    upload_dir = False if args.no_upload else make_upload_dir()  # shared by every worker
    if upload_dir:
        import atexit
        import shutil

        atexit.register(shutil.rmtree, upload_dir, True)
    memory_limit = args.memory_limit or default_memory_limit(workers)
    from dashboard.app.security import SecurityConfig, read_token
    from dashboard.app.upload import UploadPolicy

    try:
        token = read_token(args.auth_token)
    except ValueError as exc:
        raise TraceError(str(exc)) from None
    security = SecurityConfig(host=args.host, allowed_hosts=tuple(args.allowed_host or ()), auth_token=token)
    policy = UploadPolicy(
        max_upload_bytes=args.max_upload,
        max_bytes=args.upload_space,
        max_unzipped_bytes=args.max_unzipped,
        allow_nsys_rep=args.upload_nsys_rep,
        memory_bytes=args.upload_memory or max(1024**3, min(memory_limit, 4 * 1024**3)),
    )
    if args.ranks:  # several traces as the ranks of one view (listed first); each rank also on its own
        from dashboard.app.ranks import ranks_store

        def factory():
            return create_app(
                dispatch_prefix=args.dispatch_prefix,
                upload_policy=policy,
                security=security,
                steps=args.steps,
                store=ranks_store(
                    args.ranks,
                    args.traces,
                    dirs,
                    dispatch_prefix=args.dispatch_prefix,
                    cache=_cache(args),
                    memory_limit=memory_limit,
                    upload_dir=upload_dir,
                ),
            )
    else:
        factory = partial(
            create_app,
            args.traces,
            dirs,
            dispatch_prefix=args.dispatch_prefix,
            cache=_cache(args),
            memory_limit=memory_limit,
            uploads=upload_dir,
            upload_policy=policy,
            security=security,
            steps=args.steps,
        )
    app = factory()  # built here too, so bad paths fail now with one line, before any worker starts
    store = app.server.config["TRACE_STORE"]
    if not store.ids():
        raise TraceError("no .sqlite or .json traces found in " + ", ".join(map(str, dirs or args.traces)))
    if args.host not in ("127.0.0.1", "localhost", "::1") and token is None:
        _say(
            f"warning: serving on {args.host}: anyone who can reach this address can read the traces "
            "(--auth-token FILE asks for a team token)",
            file=sys.stderr,
        )
    mode = (
        f"{workers} gunicorn workers"
        if workers > 1
        else ("one process (Flask debug server)" if args.debug else "one gunicorn worker")
    )
    if not os.environ.get("WERKZEUG_RUN_MAIN"):  # --debug's reloader child: its parent holds the socket already
        _check_bind(args.host, args.port)  # before saying "serving": a taken port is the only line printed
    _say(
        f"tracedash {__version__}: serving {len(store.ids())} trace(s) on http://{args.host}:{args.port}/ "
        f"({mode}, up to {memory_limit / 1024**3:.1f} GiB of loaded traces{' each' if workers > 1 else ''})",
        file=sys.stderr,
    )
    if not args.debug:  # gunicorn exits on SIGTERM/SIGINT like Ctrl-C: the upload folder is removed at exit
        from dashboard.app.server import run_gunicorn

        run_gunicorn(factory, args.host, args.port, workers)
    else:
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        _say("(--debug: Flask's development server; never for a shared server)", file=sys.stderr)
        if os.environ.get("WERKZEUG_RUN_MAIN"):  # the reloader's child serves; the parent only watches
            from dashboard.app.server import prepare, start_warming

            prepare(app)
            start_warming(app)
        app.run(host=args.host, port=args.port, debug=True, dev_tools_disable_version_check=True)
    return 0


def _size(text: str) -> int:
    """A byte count from ``512M``, ``2G``, ``1.5GiB``, ``4096`` (binary units)."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512M, 2G, 1.5GiB)")
    value = float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " ")
    if value < 1:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return int(value)


def _serve_workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of workers: {text!r}") from None
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError(f"--workers must be 1-64, got {n}")
    return n


def _check_bind(host: str, port: int) -> None:
    """Fail early, with one line, when the address cannot be served (in use, unknown host)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, addr = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
    except OSError as exc:
        raise TraceError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


def _inspect(args) -> int:
    from dashboard.cli.inspect import format_inspect, inspect_trace

    info = inspect_trace(args.trace, _cache(args))
    _say(json.dumps(info, indent=2) if args.json else format_inspect(info))
    return 0


def _load_for_view(args):
    from dashboard.data.cache import TraceCache
    from dashboard.data.trace import load_trace

    cache = TraceCache(enabled=not getattr(args, "no_cache", False))
    return load_trace(args.trace, dispatch_prefix="CG_DISPATCH", cache=cache)


def _check_link_trace(link_trace: str, path: Path) -> None:
    """Refuse a link made for another trace than ``path``.

    A link's ``trace`` is ``NAME@HASH`` (``app.store.trace_id``: file name + hash of size and first
    64 KiB). With a hash, the file must have the same one (a renamed copy is the same trace; another
    run saved under the same name, e.g. nsys' default ``report1``, is not); without one, the same name.

    Raises:
        TraceError: the link names another trace (exit 2), with the way to use its settings anyway.
    """
    if not link_trace or not path.is_file():
        return  # no trace in the link; a missing file is reported by the loader
    from dashboard.app.store import trace_id

    ours = trace_id(path)
    name, _, digest = link_trace.rpartition("@") if "@" in link_trace else (link_trace, "", "")
    if (digest and digest == ours.rpartition("@")[2]) or (not digest and name == path.name):
        return
    raise TraceError(
        f"the link was made for trace '{link_trace}', not for {path.name} ({ours}): pass the trace "
        "it was made for, or remove 'trace=' from the link to apply its settings to this file"
    )


def _check_output(path: Path) -> None:
    """Refuse an output path that cannot be written, before any loading or rendering.

    Raises:
        TraceError: its folder does not exist or is not a folder, or the path is a folder (exit 2).
    """
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise TraceError(f"{path}: is a folder; give the file to write")
    if parent.exists() and not parent.is_dir():
        raise TraceError(f"{path}: cannot write: {parent} is a file, not a folder")
    if not parent.is_dir():
        raise TraceError(f"{path}: cannot write: its folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise TraceError(f"{path}: cannot write: no permission to write in {parent}")


def _image_format(fmt: str | None, output: Path) -> str:
    """The image format of ``export``: ``--format``, else the output's suffix, else png.

    Raises:
        TraceError: the suffix is not an image format we write, or names another format than ``--format``
            (``--format pdf -o x.png`` would write a PDF under a .png name).
    """
    from dashboard.render.export import FORMATS

    suffix = output.suffix.lstrip(".").lower()
    if fmt and suffix in FORMATS and suffix != fmt:
        raise TraceError(
            f"--format {fmt} but the output {output.name} ends in .{suffix}: name it .{fmt}, "
            f"or leave --format out to write {suffix}"
        )
    if not fmt and suffix and suffix not in FORMATS:
        raise TraceError(
            f"{output.name}: .{suffix} is not an image format tracedash writes: name the file .png, .svg or .pdf"
        )
    return fmt or suffix or "png"


def _with_steps(state, args):
    """The view state with ``--steps`` (when given) as its step source: the option wins over the link's key."""
    if getattr(args, "steps", None) is None:
        return state
    from dataclasses import replace

    from dashboard.state import BY_NAME

    return replace(state, steps=BY_NAME["steps"].parse(args.steps))


def _export(args) -> int:
    from dashboard.render.export import figure_for, image_bytes, state_from_url, view_for

    state = _with_steps(state_from_url(args.url, strict=True), args)
    for w in state.warnings:
        _say(f"tracedash: warning: {w}", file=sys.stderr)
    fmt = _image_format(args.format, Path(args.output))
    _check_output(Path(args.output))
    _check_link_trace(state.trace, Path(args.trace))
    trace = _load_for_view(args)
    data = image_bytes(figure_for(view_for(trace, state), args.figure), fmt, which=args.figure)
    try:
        Path(args.output).write_bytes(data)
    except OSError as exc:
        raise TraceError(f"{args.output}: cannot write ({exc.strerror or exc})") from exc
    _say(f"wrote {args.output} ({len(data):,} bytes, {fmt}, {args.figure})", file=sys.stderr)
    return 0


def _report(args) -> int:
    from dashboard.render.export import report_for_url, state_from_url

    state = _with_steps(state_from_url(args.url, strict=True), args)
    for w in state.warnings:  # as `export` does
        _say(f"tracedash: warning: {w}", file=sys.stderr)
    suffix = Path(args.output).suffix.lower()
    if suffix not in ("", ".html", ".htm"):
        raise TraceError(
            f"{Path(args.output).name}: a report is one HTML file: name it .html (for an image of a figure, "
            "use tracedash export)"
        )
    _check_output(Path(args.output))
    _check_link_trace(state.trace, Path(args.trace))
    trace = _load_for_view(args)
    text = report_for_url(trace, args.url, state=state)
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{args.output}: cannot write ({exc.strerror or exc})") from exc
    _say(f"wrote {args.output} ({len(text.encode()) / 2**20:.1f} MiB)", file=sys.stderr)
    return 0


EXIT_SLOWER = 3  # tracedash diff --fail-if-slower: the candidate is slower than allowed
SLOWER_HELP = (
    "exit 3 when the candidate is more than PCT %% slower. Slower means: with dispatch marks, the "
    "step time of the worst phase (prefill/decode/...) priced at the baseline's token mix (dispatches "
    "paired by phase and token count); without them, kernel time at the baseline's kernel counts "
    "(kernel names on both sides). A gate that cannot be measured (n/a) never fails (default: off: the exit "
    "code does not depend on speed)"
)


def _percent(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite percentage: {text!r}")
    return value


def _slower_percent(text: str) -> float:
    """``--fail-if-slower PCT``: a finite percentage >= 0."""
    value = _percent(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"PCT must be 0 or more (how much slower is allowed), got {text}")
    return value


def _top(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a row count: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"--top must be at least 1, got {n}")
    return n


def _tokens(text: str) -> float:
    try:
        value = _percent(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"not a token count: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"the threshold must be above 0 tokens, got {text}")
    return value


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
    if args.json:
        sys.stdout.write(json.dumps({**comparison_to_dict(c, top=args.top), "findings": moved}, indent=2) + "\n")
    else:
        sys.stdout.write(comparison_text(c, top=args.top) + "\n" + diff_text(moved))
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


def _rule_param(text: str) -> tuple[str, str, float]:
    """``--param RULE.NAME=VALUE`` -> (rule, name, number)."""
    import re

    m = re.fullmatch(r"\s*([a-z][a-z0-9-]*)\.([a-z_]+)\s*=\s*(-?[0-9.]+(?:e[0-9]+)?)\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"expected RULE.NAME=NUMBER (e.g. gpu-starv.gap=1), got {text!r}")
    try:
        value = float(m.group(3))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number in {text!r}") from None
    return m.group(1), m.group(2), int(value) if value.is_integer() else value


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
        sys.stdout.write(json.dumps(findings_json(trace, found, tid), indent=2) + "\n")
    else:
        sys.stdout.write(findings_text(trace, found, tid))
    return 0


def _trace_id(path: Path, cache=None) -> str:
    """The dashboard's id of a trace file (``app.store.trace_id``: name@content hash), for links."""
    from dashboard.app.store import trace_id

    return trace_id(path, cache)


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


def _add_cache_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar trace cache")
    p.add_argument("--cache-dir", help="cache folder (default: $TRACEDASH_CACHE_DIR or the user cache folder)")


INPUTS_TEXT = (
    "inputs (told apart by content, not by extension):\n"
    "  - nsys SQLite export (.sqlite: nsys export --type sqlite REPORT.nsys-rep), nsys 2021.5 to 2026.2\n"
    "  - Nsight Systems report (.nsys-rep/.qdrep): exported with the nsys on PATH\n"
    "  - PyTorch profiler (Kineto) trace (.json, .json.gz, .pt.trace.json)\n"
    "  - tracedash summary JSON (what 'tracedash summarize' writes; no intervals: overview and tables only)"
)
# Inputs of each subcommand (the epilog of its --help); commands not listed take every input above.
COMMAND_INPUTS = {
    "cache": "inputs: none (acts on the cache folder: --cache-dir, else $TRACEDASH_CACHE_DIR or the user cache folder)",
}


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that states every option's default: the option's own text when it names one, else
    "(default: off)" for flags and "(default: VALUE)" for the rest; required options say so."""

    def _get_help_string(self, action):
        text = action.help or ""
        if not action.option_strings or action.default is argparse.SUPPRESS or "default" in text:
            return text
        if action.required:
            return f"{text} (required)".strip()
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            return f"{text} (default: {'on' if action.default else 'off'})".strip()
        if action.default is None:
            return f"{text} (default: not set)".strip()
        return f"{text} (default: %(default)s)".strip()


def _document_inputs(sub) -> None:
    """Every subcommand's --help lists the inputs it accepts and states each option's default."""
    for name, p in sub.choices.items():
        p.formatter_class = _HelpFormatter
        p.epilog = COMMAND_INPUTS.get(name, INPUTS_TEXT)


def build_parser(light: bool = False) -> argparse.ArgumentParser:
    """The argparse parser of every subcommand; ``light``: every subcommand but ``findings`` (whose rule
    list would import the findings rules and with them plotly's neighbours: ~0.3 s), for a command line
    that names another subcommand (``LIGHT_COMMANDS``)."""
    parser = argparse.ArgumentParser(
        prog="tracedash",
        description="GPU profiling trace dashboard for nsys exports, "
        "Nsight Systems reports and PyTorch profiler (Kineto) traces.",
        epilog=INPUTS_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tracedash {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("summarize", help="write the seed-format JSON summary of a trace (or of each rank's trace)")
    p.add_argument(
        "trace",
        nargs="+",
        help="trace file (any input below); several files (a multi-rank run) are summarised in parallel on Dask",
    )
    p.add_argument(
        "-o",
        "--output",
        help="output file (default: stdout); with several files, a folder that gets "
        "NAME.summary.json per file (NAME: the whole file name, e.g. r0.sqlite.summary.json)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on an existing dask.distributed scheduler (default: a local cluster, one process per core)",
    )
    p.add_argument(
        "--workers", type=_dask_workers, help="local cluster size (default: the CPU cores, one per file at most)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the combined per-rank table as JSON (with each summary unless -o DIR)",
    )
    p.add_argument(
        "--dispatch-prefix",
        default="CG_DISPATCH",
        type=_prefix,
        help="NVTX name prefix of dispatch marks (default CG_DISPATCH)",
    )
    p.add_argument(
        "--steps",
        type=_steps_value,
        metavar="auto|PRESET|REGEX",
        help="add a 'steps' section (the step source and per-phase figures of the first annotating "
        "process; one file only): " + STEPS_HELP.replace("(default: auto)", "(default: no section)"),
    )
    _add_cache_options(p)
    p.set_defaults(func=_summarize)

    p = sub.add_parser("serve", help="serve the dashboard in the browser")
    p.add_argument("traces", nargs="*", help="trace files (default: the bundled sample_traces/)")
    p.add_argument(
        "--trace-dir",
        action="append",
        help="serve every .sqlite/.json file in DIR (repeatable; default: none, and with no "
        "TRACE either, the bundled sample_traces/)",
    )
    p.add_argument(
        "--ranks",
        nargs="+",
        metavar="TRACE",
        help="open these traces (nsys exports or Kineto JSON: "
        "the ranks of one run; a Kineto trace's distributedInfo.rank numbers it, else the order given, "
        "rank 0 first; one Kineto file holding several ranks is split into them) as device lanes of one "
        "view, each on its own session start (default: none: no ranks view)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_port, default=8050, help="port to bind (default 8050)")
    p.add_argument(
        "--steps",
        default="auto",
        type=_steps_value,
        metavar="auto|PRESET|REGEX",
        help="the step source of a page whose link has no 'steps' key: " + STEPS_HELP,
    )
    p.add_argument(
        "--dispatch-prefix",
        default="CG_DISPATCH",
        type=_prefix,
        help="NVTX name prefix of dispatch marks (default CG_DISPATCH)",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help="Dash debug mode on Flask's development server (one process; never for shared servers)",
    )
    p.add_argument(
        "--workers",
        type=_serve_workers,
        default=1,
        help="gunicorn worker processes (default 1; every mode but --debug runs on gunicorn)",
    )
    p.add_argument(
        "--memory-limit",
        type=_size,
        default=None,
        metavar="SIZE",
        help="loaded traces each process keeps, e.g. 4G (default: 40%% of RAM split between workers)",
    )
    p.add_argument(
        "--max-upload",
        type=_size,
        default=2 * 1024**3,
        metavar="SIZE",
        help="largest trace accepted by browser upload (default 2G)",
    )
    p.add_argument("--no-upload", action="store_true", help="turn browser uploads off")
    p.add_argument(
        "--upload-space",
        type=_size,
        default=None,
        metavar="SIZE",
        help="disk all uploads may take together, in progress and recent ones included "
        "(default 4x --max-upload; at most 32 uploads)",
    )
    p.add_argument(
        "--max-unzipped",
        type=_size,
        default=None,
        metavar="SIZE",
        help="largest size a .json.gz upload may expand to (default: --max-upload)",
    )
    p.add_argument(
        "--upload-memory",
        type=_size,
        default=None,
        metavar="SIZE",
        help="memory the process that checks an upload may use (default: --memory-limit, 1-4G)",
    )
    p.add_argument(
        "--upload-nsys-rep",
        action="store_true",
        help="accept .nsys-rep uploads (runs the installed nsys on them; off by default)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="a host name clients may use to reach the server (repeatable; loopback names and "
        "--host are always allowed); other Host headers are refused (DNS rebinding)",
    )
    p.add_argument(
        "--auth-token",
        metavar="FILE",
        help="ask for the token in FILE (first line, 16+ characters) once per browser session "
        "(default: $TRACEDASH_AUTH_TOKEN if set; else no sign-in)",
    )
    _add_cache_options(p)
    p.set_defaults(func=_serve)

    p = sub.add_parser(
        "inspect",
        help="how every input row was used (read, loaded, skipped by rule, not recognised), "
        "launches per process, warnings; for nsys exports also the tables, columns and loaders",
    )
    p.add_argument("trace", help="the trace file")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_cache_options(p)
    p.set_defaults(func=_inspect)

    p = sub.add_parser("export", help="render a view (from a dashboard link) as png, svg or pdf")
    p.add_argument("trace", help="the trace file (any input below)")
    p.add_argument(
        "--url",
        help="a dashboard link (or just its ?query) whose view to render; a link made for another trace is "
        "refused (default: no link: the default view)",
    )
    p.add_argument(
        "--figure",
        choices=["timeline", "gantt", "phases"],
        default="timeline",
        help="which figure to render (default timeline)",
    )
    p.add_argument(
        "--format",
        choices=["png", "svg", "pdf"],
        help="image format (default: from the output's extension, png when it has none)",
    )
    p.add_argument("-o", "--output", required=True, help="image file to write")
    p.add_argument(
        "--steps",
        type=_steps_value,
        metavar="auto|PRESET|REGEX",
        help="the step source of the phase views (default: the link's 'steps', else auto): " + STEPS_HELP,
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar trace cache")
    p.set_defaults(func=_export)

    p = sub.add_parser("report", help="write one self-contained offline HTML report of a view")
    p.add_argument("trace", help="the trace file (any input below)")
    p.add_argument(
        "--url",
        help="a dashboard link (or just its ?query) whose view to report; a link made for another trace is "
        "refused (default: no link: the default view)",
    )
    p.add_argument("-o", "--output", required=True, help="HTML file to write")
    p.add_argument(
        "--steps",
        type=_steps_value,
        metavar="auto|PRESET|REGEX",
        help="the step source of the phase views (default: the link's 'steps', else auto): " + STEPS_HELP,
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar trace cache")
    p.set_defaults(func=_report)

    p = sub.add_parser("cache", help="show or clear the columnar trace cache")
    p.add_argument(
        "action", choices=["info", "clear"], help="info: cached traces and their size; clear: remove every cached trace"
    )
    p.add_argument("--cache-dir", help="cache folder (default: $TRACEDASH_CACHE_DIR or the user cache folder)")
    p.set_defaults(func=_cache_command, no_cache=False)
    p = sub.add_parser("diff", help="compare two runs: baseline A, candidate B (deltas = B - A)")
    p.add_argument("baseline", help="trace A (any input below)")
    p.add_argument("candidate", help="trace B (any input below)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the stable JSON form (schema key 'tracedash.diff/1'; integers in ns) instead of text",
    )
    p.add_argument(
        "--top",
        type=_top,
        default=10,
        metavar="N",
        help="rows of the kernel, NVTX and API deltas to show (default 10; sorted by |change|)",
    )
    p.add_argument("--fail-if-slower", type=_slower_percent, metavar="PCT", help=SLOWER_HELP)
    p.add_argument(
        "--threshold",
        type=_tokens,
        metavar="TOKENS",
        help="prefill when a dispatch has at least TOKENS "
        "tokens, in both runs (default: the widest gap in log(token count) over both runs)",
    )
    p.add_argument(
        "--dispatch-prefix",
        default="CG_DISPATCH",
        type=_prefix,
        help="NVTX name prefix of dispatch marks (default CG_DISPATCH)",
    )
    p.add_argument(
        "--steps",
        type=_steps_value,
        metavar="auto|PRESET|REGEX",
        help="read the serving steps from this source (both runs, phase-aligned by the phases the "
        "annotations give): "
        + STEPS_HELP.replace("(default: auto)", "(default: the dispatch marks of --dispatch-prefix, as before)"),
    )
    _add_cache_options(p)
    p.set_defaults(func=_diff)

    if light:  # another subcommand than findings: parsed without importing the findings rules (nor plotly)
        _add_steps_parser(sub)
        _document_inputs(sub)
        return parser
    from dashboard.analysis.findings import RULES

    p = sub.add_parser(
        "findings",
        help="what to fix first: findings ranked by the time they cost, with evidence "
        "and a dashboard link each (docs/findings.md)",
    )
    p.add_argument("trace", help="nsys SQLite export, Kineto trace or summary JSON")
    p.add_argument("--json", action="store_true", help="print JSON (schema 'tracedash.findings/1'; times in ns)")
    p.add_argument(
        "--rule",
        action="append",
        choices=RULES,
        metavar="ID",
        help="evaluate only this rule (repeatable; default: every rule): " + ", ".join(RULES),
    )
    p.add_argument(
        "--param",
        action="append",
        type=_rule_param,
        metavar="RULE.NAME=VALUE",
        help="a rule parameter, e.g. gpu-starv.gap=1 (ms), gpu-low-util.chunks=60 (repeatable; default: "
        "each rule's own defaults, docs/findings.md)",
    )
    p.add_argument(
        "--threshold",
        type=_tokens,
        metavar="TOKENS",
        help="prefill when a dispatch has at least TOKENS tokens (default: automatic, as the dashboard)",
    )
    p.add_argument(
        "--dispatch-prefix",
        default="CG_DISPATCH",
        type=_prefix,
        help="NVTX name prefix of dispatch marks (default CG_DISPATCH)",
    )
    p.add_argument(
        "--steps",
        type=_steps_value,
        metavar="auto|PRESET|REGEX",
        help="read the serving findings' steps from this source: "
        + STEPS_HELP.replace("(default: auto)", "(default: the dispatch marks of --dispatch-prefix, as before)"),
    )
    _add_cache_options(p)
    p.set_defaults(func=_findings)
    _add_steps_parser(sub)
    _document_inputs(sub)
    return parser


def _steps_value(text: str) -> str:
    """``--steps auto|PRESET|REGEX``, checked (an unknown preset or unusable rule is a usage error)."""
    from dashboard.analysis.step_presets import StepSourceError, parse_step_source

    try:
        parse_step_source(text)
    except StepSourceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _pid(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}") from None


STEPS_HELP = (
    "where steps come from: auto (the preset whose annotations the trace holds), seed (CG_DISPATCH "
    "marks), vllm, sglang, trtllm, torch (ProfilerStep#N), or a regular expression with named groups "
    "(phase, tokens, context_requests, context_tokens, generation_requests, generation_tokens, "
    "batch_size, graph_mode) for any other server (default: auto)"
)


def _add_steps_parser(sub) -> None:
    p = sub.add_parser(
        "steps",
        help="the steps of a trace from its own annotations (vLLM, SGLang, TensorRT-LLM, "
        "CG_DISPATCH marks, ProfilerStep#N): phase, requests, tokens, kernels and GPU time per step",
    )
    p.add_argument("trace", help="the trace file (any input below)")
    p.add_argument("--steps", default="auto", type=_steps_value, metavar="auto|PRESET|REGEX", help=STEPS_HELP)
    p.add_argument(
        "--pid",
        type=_pid,
        help="the process whose steps to show (default: the lowest pid with steps; "
        "statistics of several processes are never merged)",
    )
    p.add_argument("--json", action="store_true", help="print JSON (source, steps, phases; times in ns)")
    p.add_argument(
        "--threshold",
        type=_tokens,
        metavar="TOKENS",
        help="seed preset: prefill when a dispatch has at "
        "least TOKENS tokens (default: the widest gap in log(token count))",
    )
    p.add_argument(
        "--dispatch-prefix",
        default="CG_DISPATCH",
        type=_prefix,
        help="seed preset: NVTX name prefix of dispatch marks (default CG_DISPATCH)",
    )
    _add_cache_options(p)
    p.set_defaults(func=_steps)


def _steps(args) -> int:
    """``tracedash steps TRACE``: the steps as a table or JSON (``steps_report``)."""
    from dashboard.analysis.step_presets import parse_step_source
    from dashboard.cli.steps import steps_json, steps_report, steps_text
    from dashboard.data.trace import load_trace

    spec = parse_step_source(args.steps, prefix=args.dispatch_prefix, threshold=args.threshold)
    trace = load_trace(args.trace, dispatch_prefix=args.dispatch_prefix, cache=_cache(args))
    report = steps_report(trace, spec, args.pid)
    if args.json:
        for note in report.notes:
            _say(f"tracedash: note: {note}", file=sys.stderr)
        sys.stdout.write(json.dumps(steps_json(report), indent=2) + "\n")
    else:
        sys.stdout.write(steps_text(report, Path(args.trace).name))
    return 0


SIZE_OPTIONS = ("--memory-limit", "--max-upload", "--upload-space", "--max-unzipped", "--upload-memory")


def _join_negative_sizes(argv: list[str]) -> list[str]:
    """``--memory-limit -1G`` -> ``--memory-limit=-1G``, so the size check ("not a size") answers,
    not argparse's "expected one argument" (it takes ``-1G`` for an option)."""
    import re

    out = []
    for arg in argv:
        if out and out[-1] in SIZE_OPTIONS and re.match(r"-[\d.]", arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


# Subcommands parsed by the light parser (every one but findings). Help, --version, no command and an
# unknown command get the full parser: its help and "invalid choice" lists name every subcommand.
LIGHT_COMMANDS = ("summarize", "serve", "inspect", "export", "report", "cache", "diff", "steps")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or usage)."""
    argv = _join_negative_sizes(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(light=bool(argv) and argv[0] in LIGHT_COMMANDS)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except TraceError as exc:
        _say(f"tracedash: error: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `tracedash summarize T | head`: the reader left; not an error
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0
    except Exception as exc:  # a bug, not bad input: still one line, no traceback (TRACEDASH_DEBUG=1 shows it)
        if os.environ.get("TRACEDASH_DEBUG"):
            raise
        from dashboard.errors import clean_message

        _say(f"tracedash: internal error: {clean_message(exc)} (set TRACEDASH_DEBUG=1 for details)", file=sys.stderr)
        return 1
