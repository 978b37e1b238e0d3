"""``GET /export/<figure>.<format>?<link query>``: a figure of the view a link names, as a report-ready image.

The page's "PNG" / "PDF" links next to each figure point here with the query of the figure's own state
(its view slice), so the image, its caption and its file name are those of the figure on screen at the
moment of export, drawn in the report layout (``figures.common.report_layout``: no on-screen hints,
text of at least 14 px, a timeline no wider than 3:1) by the same code as ``tracedash export``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from flask import Flask, Response, jsonify, request

from dashboard.app.trace_files import file_name_problem, ids_of_file_name
from dashboard.errors import TraceError
from dashboard.render.export import (
    FIGURES,
    figure_for,
    image_bytes,
    image_refusal,
    values_an_image_cannot_set,
    view_for,
    without_default,
)
from dashboard.state import from_query

log = logging.getLogger(__name__)

MIMETYPES = {"png": "image/png", "pdf": "application/pdf", "svg": "image/svg+xml"}
_one_at_a_time = threading.Lock()  # one headless Chromium renders every image: exports queue


def export_href(which: str, fmt: str, query: str) -> str:
    """The page-relative link of figure ``which`` as ``fmt`` for the view query ``query`` (no ``?``)."""
    return f"export/{which}.{fmt}?{query}"


def report_hrefs(which: str, state) -> dict:
    """``{"png": href, "pdf": href}`` of figure ``which`` for the view state ``state`` (a view's slice)."""
    from dashboard.state import to_query

    query = to_query(state)
    return {fmt: export_href(which, fmt, query) for fmt in ("png", "pdf")}


def _error(status: int, message: str) -> Response:
    resp = jsonify({"error": message})
    resp.status_code = status
    return resp


def register_export_route(server: Flask, store) -> None:
    """Serve ``/export/<figure>.<format>`` (figure: timeline, gantt, phases; format: png, pdf, svg).

    Answers: 200 with the image (``Content-Disposition: attachment`` with the figure's file name from
    its state); 404 for an unknown figure or format, or a trace that is not served here; 400 for a
    link without a trace or with a value it cannot use (a bad window: never the whole trace instead); 503 when
    images cannot be made here (no Chromium for kaleido).
    """

    @server.route("/export/<which>.<fmt>")
    def export_image(which: str, fmt: str):
        if which not in FIGURES or fmt not in MIMETYPES:
            return _error(404, f"no such export: choose /export/{{{','.join(FIGURES)}}}.{{{','.join(MIMETYPES)}}}")
        state = from_query(request.query_string.decode("utf-8", "replace"))
        raw = request.args.get("trace", "")
        if not state.trace and raw and "@" not in raw:  # a file name, as the page opens it
            hits = ids_of_file_name(raw, store.listed_ids([]))
            if len(hits) != 1:
                return _error(404 if not hits else 400, f"{file_name_problem(raw, hits)} (?trace=NAME or NAME@HASH)")
            state = replace(state, trace=hits[0])
        if not state.trace:  # none, or one that is not a trace id (its warning says which; no default is drawn)
            why = next((w for w in state.warnings if w.startswith("Ignored trace=")), "")
            return _error(400, without_default(why) or "the link names no trace (?trace=NAME@HASH)")
        if problems := values_an_image_cannot_set(state, besides=("Ignored trace=",)):
            return _error(400, image_refusal(problems, "correct the link (copy it from the page's address bar)"))
        if (
            state.trace not in store.listed_ids([state.trace])
            and (same := store.same_name(state.trace)) is not None
            and store.explain_changed(state.trace, same) is None
        ):  # a version shortened by hand (NAME@8 hex digits) names the served file; the page opens it unsaid
            state = replace(state, trace=same)
        try:
            trace = store.get(state.trace)
        except TraceError as exc:
            return _error(404, str(exc))
        try:
            view = view_for(trace, state)
            with _one_at_a_time:
                data = image_bytes(figure_for(view, which), fmt, which=which)
        except TraceError as exc:  # no Chromium for kaleido, or a trace that cannot be shown
            return _error(503, str(exc))
        except Exception:  # a bug: logged, never a traceback in the answer
            log.exception("export of %s %s failed", state.trace, which)
            return _error(500, "internal error while drawing this image (see the server log)")
        name = view.filenames.get(which, f"tracedash_{which}")
        return Response(
            data, mimetype=MIMETYPES[fmt], headers={"Content-Disposition": f'attachment; filename="{name}.{fmt}"'}
        )
