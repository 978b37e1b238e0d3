"""tracedash export and report: a figure of a view, or the offline HTML report of a link."""

from __future__ import annotations

import sys
from pathlib import Path

from dashboard import units
from dashboard.cli.args import (
    _bare_link_trace,
    _check_link_trace,
    _check_output,
    _image_format,
    _load_for_view,
    _say,
    _with_steps,
    write_file,
)
from dashboard.errors import TraceError


def _notes_said(state) -> str:
    """ ", 2 notes" when the link carries notes (they are in the file written), else ""."""
    return f", {units.count(len(state.notes), 'note')}" if state.notes else ""


def _say_search_warnings(trace, state) -> None:
    """The link's search as the trace answers it: a query it cannot run, an occurrence past the last one."""
    from dashboard.render.search import search_warnings

    for w in search_warnings(trace, state):
        _say(f"tracedash: warning: {w}", file=sys.stderr)


def _export(args) -> int:
    from dashboard.render.export import (
        figure_for,
        image_bytes,
        image_refusal,
        link_query,
        state_from_url,
        values_an_image_cannot_set,
        view_for,
    )
    from dashboard.state import OTHER_VERSION, unknown_keys_note

    state = _bare_link_trace(args.url, _with_steps(state_from_url(args.url, strict=True), args), Path(args.trace))
    # as GET /export: a value the link cannot set is an error (exit 2); keys of other tools only a warning
    unknown = unknown_keys_note(link_query(args.url)) if args.url else ""
    if problems := values_an_image_cannot_set(state, besides=(unknown,) if unknown else ()):
        raise TraceError(image_refusal(problems, "correct the link"))
    for said in [w for w in state.warnings if w.startswith(OTHER_VERSION)] + ([unknown] if unknown else []):
        _say(f"tracedash: warning: {said}", file=sys.stderr)
    fmt = _image_format(args.format, Path(args.output))
    _check_output(Path(args.output), (Path(args.trace),))
    _check_link_trace(state.trace, Path(args.trace))
    trace = _load_for_view(args)
    _say_search_warnings(trace, state)
    data = image_bytes(figure_for(view_for(trace, state), args.figure), fmt, which=args.figure)
    write_file(Path(args.output), data)
    _say(f"wrote {args.output} ({len(data):,} bytes, {fmt}, {args.figure}{_notes_said(state)})", file=sys.stderr)
    return 0


def _report(args) -> int:
    from dashboard.render.export import report_for_url, state_from_url

    state = _bare_link_trace(args.url, _with_steps(state_from_url(args.url, strict=True), args), Path(args.trace))
    for w in state.warnings:  # as `export` does
        _say(f"tracedash: warning: {w}", file=sys.stderr)
    suffix = Path(args.output).suffix.lower()
    if suffix not in ("", ".html", ".htm"):
        raise TraceError(
            f"{Path(args.output).name}: a report is one HTML file: name it .html (for an image of a figure, "
            "use tracedash export)"
        )
    _check_output(Path(args.output), (Path(args.trace),))
    _check_link_trace(state.trace, Path(args.trace))
    trace = _load_for_view(args)
    _say_search_warnings(trace, state)
    text = report_for_url(trace, args.url, state=state)
    write_file(Path(args.output), text)
    _say(f"wrote {args.output} ({len(text.encode()) / 2**20:.1f} MiB{_notes_said(state)})", file=sys.stderr)
    return 0
