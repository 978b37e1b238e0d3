"""Browser upload of a trace file and the ``/healthz`` probe: plain Flask routes on the Dash server.

``POST /upload`` takes the raw file as the request body (not base64 in a callback, so a 2 GB export
streams to disk in 1 MiB pieces) with two headers: ``X-Trace-Name`` (the file's name, URL-encoded)
and ``X-Requested-With: tracedash``. A custom header cannot be sent cross-site without a CORS
pre-flight, which this server never grants, so another web page cannot push files into it.

Answers are JSON: ``{"trace": id, "name": ...}`` (200) or ``{"error": message}`` with 400 (empty or
unreadable), 403 (missing header), 404 (a path climbing out), 413 (over the limit), 415 (not a trace, or
a trace that cannot be loaded: it is deleted, never listed), 500 (a bug, still JSON), 503 (uploads off).
"""

from __future__ import annotations

import logging
import re
import secrets
import shutil
import unicodedata
from urllib.parse import unquote

from flask import Flask, jsonify, request

from dashboard.app.store import MAX_UPLOADS, TraceStore, prune_uploads
from dashboard.errors import TraceError, clean_message
from dashboard.loaders import sniff_format

log = logging.getLogger(__name__)

DEFAULT_MAX_UPLOAD_BYTES = 2 * 1024**3
# Uploads kept on disk: an LRU by last use, at most MAX_UPLOADS files and this many times the upload limit.
UPLOAD_BUDGET_FACTOR = 4
_CHUNK = 1 << 20


def safe_upload_name(raw: str) -> str:
    """A file name for an upload: the base name only, printable, ``[\\w.+()@ -]``, at most 120 characters
    with the suffix kept; ``upload`` when nothing is left. Never a path."""
    name = unicodedata.normalize("NFC", raw or "").replace("\\", "/").split("/")[-1]
    name = "".join(ch for ch in name if ch.isprintable())
    name = re.sub(r"[^\w.+()@ -]", "_", name).strip(" .")
    if len(name) > 120:
        suffix = next((x for x in (".json.gz", ".pt.trace.json") if name.lower().endswith(x)), None)
        if suffix is None:
            stem, dot, last = name.rpartition(".")
            suffix = "." + last if dot and len(last) < 16 else ""
        name = name[: 120 - len(suffix)] + name[len(name) - len(suffix):]
    return name or "upload"


def _fail(status: int, message: str):
    return jsonify({"error": message}), status


def _suspicious_path(path: str) -> bool:
    """A request path with a ``..`` segment, a backslash or a NUL, after percent-decoding (twice)."""
    decoded = unquote(unquote(path))
    return "\x00" in decoded or "\\" in decoded or any(seg == ".." for seg in decoded.split("/"))


def register_routes(server: Flask, store: TraceStore, max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES) -> None:
    """Add ``POST /upload``, ``GET /healthz`` and a guard that answers 404 to any path trying to climb
    out (``..``, encoded or not, backslashes, NUL) before Dash's own handlers see it."""
    from dash.exceptions import DependencyException

    @server.before_request
    def refuse_traversal():
        if _suspicious_path(request.path) or _suspicious_path((request.environ.get("RAW_URI") or "").split("?", 1)[0]):
            return _fail(404, "not found")
        return None

    @server.errorhandler(DependencyException)
    def unknown_component_file(exc):  # Dash raises this (a 500) for unknown /_dash-component-suites/ files
        return _fail(404, "not found")

    @server.get("/healthz")
    def healthz():
        return jsonify({"status": "ok", **store.stats()})

    @server.post("/upload")
    def upload():
        try:
            return _upload()
        except Exception:  # never an HTML 500 page: the browser shows this text as an alert
            log.exception("upload failed")
            return _fail(500, "the upload failed on the server (internal error; see the server log)")

    def _upload():
        if store.upload_dir is None:
            return _fail(503, "uploads are turned off on this server")
        if request.headers.get("X-Requested-With") != "tracedash":
            return _fail(403, "uploads must come from the tracedash page (X-Requested-With header missing)")
        name = safe_upload_name(unquote(request.headers.get("X-Trace-Name", "")))
        length = request.content_length  # None for a chunked upload: then only the streamed count is checked
        if length is not None and length > max_upload_bytes:
            return _fail(413, f"{name}: {length / 1024**2:,.0f} MiB is over this server's upload limit of "
                              f"{max_upload_bytes / 1024**2:,.0f} MiB")
        prune_uploads(store.upload_dir, MAX_UPLOADS, UPLOAD_BUDGET_FACTOR * max_upload_bytes)
        folder = store.upload_dir / secrets.token_hex(8)
        folder.mkdir(mode=0o700)
        part = folder / (name + ".part")
        written = 0
        try:
            with open(part, "wb") as fh:
                while chunk := request.stream.read(_CHUNK):
                    written += len(chunk)
                    if written > max_upload_bytes:
                        raise TraceError(f"{name}: over this server's upload limit of "
                                         f"{max_upload_bytes / 1024**2:,.0f} MiB")
                    fh.write(chunk)
            if written == 0:
                raise TraceError(f"{name}: the file is empty (0 bytes)")
            if length is not None and written != length:
                raise TraceError(f"{name}: the upload was cut off ({written:,} of {length:,} bytes arrived)")
            final = folder / name
            part.rename(final)
            try:
                kind = sniff_format(final)
            except TraceError as exc:
                shutil.rmtree(folder, ignore_errors=True)
                return _fail(415, str(exc))
            tid = store.add_upload(final)
        except TraceError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            return _fail(400, str(exc))
        except OSError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            return _fail(400, f"{name}: could not be stored: {clean_message(exc)}")
        try:  # load it now: a file that cannot be shown is refused here, not left in the picker
            store.get(tid)
        except TraceError as exc:
            store.remove_upload(tid)
            return _fail(415, str(exc))
        except Exception:  # a bug: still nothing left behind
            store.remove_upload(tid)
            raise
        return jsonify({"trace": tid, "name": name, "format": kind, "bytes": written})
