"""The argument parser of every subcommand (light: without the findings rules, for every command but findings)."""

from __future__ import annotations

import argparse

from dashboard import __version__
from dashboard.cli.args import (
    SLOWER_HELP,
    STEPS_HELP,
    _add_cache_options,
    _dask_workers,
    _pid,
    _port,
    _prefix,
    _rule_param,
    _serve_workers,
    _size,
    _slices,
    _slower_percent,
    _steps_value,
    _tokens,
    _top,
)
from dashboard.cli.commands import _cache_command, _findings, _inspect, _steps
from dashboard.cli.compare import _diff
from dashboard.cli.serve import _serve
from dashboard.cli.summarize import _summarize
from dashboard.cli.views import _export, _report

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


FINDINGS_HELP = (
    "what to fix first: findings ranked by the time they cost, with evidence and a dashboard link each "
    "(docs/findings.md)"
)


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
        "--slices",
        type=_slices,
        metavar="N",
        help="summarise one nsys export in N time slices, one Dask task each (a local cluster, or --scheduler), "
        "with the same numbers as one pass; default: sliced by itself when the trace's estimated frames exceed "
        "half the memory available (one slice per worker's share)",
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
    _add_cache_options(p)
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
    _add_cache_options(p)
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
        sub.add_parser("findings", help=FINDINGS_HELP)  # named in the usage line of a light command's error
        _add_steps_parser(sub)
        _document_inputs(sub)
        return parser
    from dashboard.analysis.findings import RULES

    p = sub.add_parser("findings", help=FINDINGS_HELP)
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
        default="auto",
        type=_steps_value,
        metavar="auto|PRESET|REGEX",
        help="read the serving findings' steps from this source, as the dashboard's findings panel does: " + STEPS_HELP,
    )
    _add_cache_options(p)
    p.set_defaults(func=_findings)
    _add_steps_parser(sub)
    _document_inputs(sub)
    return parser


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


# Subcommands parsed by the light parser (every one but findings). Help, --version, no command and an
# unknown command get the full parser: its help and "invalid choice" lists name every subcommand.
LIGHT_COMMANDS = ("summarize", "serve", "inspect", "export", "report", "cache", "diff", "steps")
