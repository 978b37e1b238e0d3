"""Command line: ``tracedash summarize|serve|inspect|export|report|cache|diff|findings|steps``.

One module per command (``summarize``, ``serve``, ``views``: export and report, ``compare``: diff, ``commands``:
inspect, findings, steps and cache), their argument types in ``args`` and the parser in ``parser``. Bad input
prints one clear line to stderr and exits with code 2; never a traceback.
"""

from __future__ import annotations

import os
import sys

from dashboard.cli.args import EXIT_INPUT_ERROR, _join_negative_sizes, _say
from dashboard.cli.parser import LIGHT_COMMANDS, build_parser
from dashboard.errors import TraceError


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
