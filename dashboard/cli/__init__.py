"""Command line: ``tracedash summarize|serve|inspect|export|report|cache|diff|findings|steps``.

One module per command (``summarize``, ``serve``, ``views``: export and report, ``compare``: diff, ``commands``:
inspect, findings, steps and cache), their argument types in ``args`` and the parser in ``parser``. Bad input
prints one clear line to stderr and exits with code 2; never a traceback.
"""

from __future__ import annotations

import os
import sys

from dashboard.cli.args import EXIT_INPUT_ERROR, _join_negative_sizes, _say, reader_left
from dashboard.cli.parser import LIGHT_COMMANDS, build_parser
from dashboard.errors import TraceError


def _refuse_unknown_options(parser, argv: list[str]) -> None:
    """An option no parser knows is named as such (argparse would first say that the trace or the command is
    missing: ``tracedash summarize --bogus`` answered "the following arguments are required: trace")."""
    import argparse
    import re

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    command = sub.choices.get(argv[0]) if argv else None
    actions = [a for p in (parser, command) if p is not None for a in p._actions]  # noqa: SLF001
    known = [o for a in actions for o in a.option_strings]
    takes_value = {o for a in actions if a.nargs != 0 for o in a.option_strings}
    after_value = False
    for arg in argv[1:] if command is not None else argv:
        if arg == "--":
            return
        if after_value or not arg.startswith("-") or arg == "-" or re.fullmatch(r"-[\d.]+", arg):
            after_value = False
            continue
        name = arg.split("=", 1)[0]
        hits = (
            [o for o in known if o == name]
            or [o for o in known if name.startswith("--") and o.startswith(name)]
            or [o for o in known if not name.startswith("--") and o == name[:2]]  # -oVALUE, as argparse reads it
        )
        if not hits:
            (command or parser).error(f"unrecognized arguments: {arg}")
        after_value = "=" not in arg and len(hits) == 1 and hits[0] == name and hits[0] in takes_value


# Commands that only read files and write their answer: once it is written, the process ends without tearing the
# interpreter down (``entry``). Not ``serve``, ``export`` and ``report`` (a server, a browser), nor ``cache``.
QUICK_EXIT_COMMANDS = frozenset({"summarize", "inspect", "findings", "steps", "diff"})


def entry() -> None:
    """The ``tracedash`` command (and ``python -m dashboard``): ``main``, then exit with its code."""
    argv = sys.argv[1:]
    code = main(argv)
    if argv[:1] and argv[0] in QUICK_EXIT_COMMANDS:
        _quick_exit(code)
    sys.exit(code)


def _quick_exit(code: int, threads=None) -> None:
    """Exit with ``code`` now, without the interpreter's teardown, when nothing else runs (``threads``: the
    process's, ``threading.enumerate()``; daemon threads aside), no child process is left and no Dask cluster
    was used.

    Why: freeing a summary's frames and pandas' and pyarrow's modules one object at a time took ~0.2 s after a
    2M-kernel summary was written, a tenth of the command. The atexit handlers still run first (temporary
    folders' finalizers, logging, thread pools), and both streams are flushed: only the freeing is skipped,
    which the operating system does at once."""
    import atexit
    import threading

    threads = threading.enumerate() if threads is None else threads
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threads):
        return
    processes = sys.modules.get("multiprocessing")
    if "distributed" in sys.modules or (processes is not None and processes.active_children()):
        return  # a Dask cluster or child processes: Python's own exit stops them
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: closed by the caller (`>&-`)
                stream.flush()
    except (OSError, ValueError):  # the answer could not be written: Python's own exit says so, with its code
        return
    atexit._run_exitfuncs()  # noqa: SLF001 - the handlers a normal exit runs, so none is skipped
    _flush_streams()
    os._exit(code)


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # closed (None), or a reader that left: nothing to flush to
            pass


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or usage)."""
    from contextlib import nullcontext

    from dashboard.data.memory import one_shot_allocators

    argv = _join_negative_sizes(list(sys.argv[1:] if argv is None else argv))
    # before the parser: building it imports pandas (and pyarrow) for findings and steps
    try:
        with nullcontext() if argv[:1] == ["serve"] else one_shot_allocators():
            return _run(argv)
    except KeyboardInterrupt:  # while the parser imports, before a command runs: no traceback either
        return 130


def _run(argv: list[str]) -> int:
    parser = build_parser(light=bool(argv) and argv[0] in LIGHT_COMMANDS)
    _refuse_unknown_options(parser, argv)
    args = parser.parse_args(argv)
    import warnings

    shown_before = warnings.showwarning
    warnings.showwarning = _one_line_warnings(shown_before)
    try:
        return args.func(args)
    except TraceError as exc:
        _say(f"tracedash: error: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        _leave_running_reads(130)
        return 130
    except BrokenPipeError:  # `tracedash summarize T | head`: the reader left; not an error
        reader_left()
        return 0
    except Exception as exc:  # a bug, not bad input: still one line, no traceback (TRACEDASH_DEBUG=1 shows it)
        if os.environ.get("TRACEDASH_DEBUG"):
            raise
        from dashboard.errors import clean_message

        _say(f"tracedash: internal error: {clean_message(exc)} (set TRACEDASH_DEBUG=1 for details)", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = shown_before


def _leave_running_reads(code: int, threads=None) -> None:
    """At Ctrl-C: when threads still read an export (SQLite cannot be stopped mid-query, and Python joins them at
    exit: seconds on a big trace), exit now with ``code``. Only when nothing else is running, e.g. a cache write
    (``threads``: the process's, ``threading.enumerate()``)."""
    import threading

    reads = sys.modules.get("dashboard.loaders.nsys_reads")  # not imported: no read was started
    threads = threading.enumerate() if threads is None else threads
    others = [t for t in threads if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if reads is not None and others and all(t.name.startswith(reads.READ_THREAD) for t in others):
        _flush_streams()
        os._exit(code)


def _one_line_warnings(fallback):
    """``warnings.showwarning`` for a command: tracedash's own warnings (their text starts "tracedash ") as one
    ``tracedash: warning: …`` line each, once per text, never Python's file:line form with a source line;
    anyone else's as Python shows them."""
    said: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if not text.startswith("tracedash "):
            return fallback(message, category, filename, lineno, file, line)
        if text not in said:
            said.add(text)
            _say(f"tracedash: warning: {text.removeprefix('tracedash ')}", file=sys.stderr)
        return None

    return show
