"""Command line: ``tracedash summarize`` and ``tracedash serve``.

Bad input prints one clear line to stderr and exits with code 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dashboard import __version__
from dashboard.errors import TraceError

EXIT_INPUT_ERROR = 2


def default_trace_dir() -> Path | None:
    """``./sample_traces`` if present, else the repository's bundled ``sample_traces/``."""
    for candidate in (Path.cwd() / "sample_traces", Path(__file__).resolve().parent.parent / "sample_traces"):
        if candidate.is_dir():
            return candidate
    return None


def _summarize(args) -> int:
    from dashboard.analysis.summary import summary_to_dict
    from dashboard.trace import load_trace

    trace = load_trace(args.trace, dispatch_prefix=args.dispatch_prefix)
    text = json.dumps(summary_to_dict(trace.summary), indent=2) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        out = Path(args.output)
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise TraceError(f"{out}: cannot write ({exc.strerror or exc})") from exc
    return 0


def _serve(args) -> int:
    from dashboard.app import create_app

    dirs = list(args.trace_dir or [])
    if not args.traces and not dirs:
        d = default_trace_dir()
        if d is None:
            raise TraceError("no traces given and no sample_traces/ folder found: pass TRACE files or --trace-dir DIR")
        dirs = [d]
    app = create_app(args.traces, dirs, dispatch_prefix=args.dispatch_prefix)
    store = app.server.config["TRACE_STORE"]
    if not store.ids():
        raise TraceError("no .sqlite or .json traces found in " + ", ".join(map(str, dirs or args.traces)))
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: serving on {args.host}: anyone who can reach this address can read the traces",
              file=sys.stderr)
    print(f"tracedash {__version__}: serving {len(store.ids())} trace(s) on http://{args.host}:{args.port}/",
          file=sys.stderr)
    app.run(host=args.host, port=args.port, debug=args.debug, dev_tools_disable_version_check=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every subcommand (summarize, serve)."""
    parser = argparse.ArgumentParser(prog="tracedash", description="GPU profiling trace dashboard for nsys exports.")
    parser.add_argument("--version", action="version", version=f"tracedash {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("summarize", help="write the seed-format JSON summary of a trace")
    p.add_argument("trace", help="nsys SQLite export (nsys export --type sqlite) or summary JSON")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.add_argument("--dispatch-prefix", default="CG_DISPATCH", help="NVTX name prefix of dispatch marks")
    p.set_defaults(func=_summarize)

    p = sub.add_parser("serve", help="serve the dashboard in the browser")
    p.add_argument("traces", nargs="*", help="trace files (default: the bundled sample_traces/)")
    p.add_argument("--trace-dir", action="append", help="serve every .sqlite/.json file in DIR (repeatable)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8050)
    p.add_argument("--dispatch-prefix", default="CG_DISPATCH", help="NVTX name prefix of dispatch marks")
    p.add_argument("--debug", action="store_true", help="Dash debug mode (never for shared servers)")
    p.set_defaults(func=_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except TraceError as exc:
        print(f"tracedash: error: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        return 130
