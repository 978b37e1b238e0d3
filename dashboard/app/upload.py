"""Browser upload of a trace file and the ``/healthz`` probe: plain Flask routes on the Dash server.

``POST /upload`` takes the raw file as the request body (not base64 in a callback, so a 2 GB export
streams to disk in pieces) with two headers: ``X-Trace-Name`` (the file's name, URL-encoded) and
``X-Requested-With: tracedash``. A custom header cannot be sent cross-site without a CORS pre-flight,
which this server never grants (and ``security.py`` refuses a foreign ``Origin``).

Bounds (``UploadPolicy``), all checked before a byte is written, under a lock shared by every worker:
the space holds at most ``max_files`` uploads and ``max_bytes`` in all, *counting uploads in
progress (by their Content-Length) and recent ones*; the least recently used uploads idle for
``UPLOAD_GRACE_S`` make room, and when none can, the answer is 507. One client address may hold at
most ``client_share`` of either (429). The disk must keep ``min_free_bytes`` free after the upload
(507). At most ``concurrent`` uploads stream into one process at a time (429), each at
``min_rate`` bytes/s on average after ``RATE_GRACE_S`` (408). The stored file is then loaded in a child
process limited to ``memory_bytes`` of memory (one load at a time in all workers; see
``upload_check``), with ``.json.gz`` expansion capped at ``max_unzipped_bytes``; ``.nsys-rep``
reports only with ``allow_nsys_rep``. On every failure the upload's folder is removed.

Answers are JSON: ``{"trace": id, "name": ...}`` (200) or ``{"error": message}`` with 400 (empty, cut
off), 403 (missing header), 404 (a path climbing out), 408 (too slow), 413 (over the limit), 415 (not
a trace, or one that cannot be loaded), 429 (this client's share, or too many at once), 500 (a bug),
503 (uploads off), 507 (the upload space or disk is full). No answer carries a server path or an OS
error text.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import re
import secrets
import shutil
import socket
import threading
import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from flask import Flask, jsonify, request
from werkzeug.exceptions import ClientDisconnected

from dashboard.app.security import error_answer
from dashboard.app.store import TraceStore
from dashboard.app.upload_folders import MAX_UPLOADS, UPLOAD_GRACE_S, UploadFolder, upload_folders
from dashboard.errors import TraceError

log = logging.getLogger(__name__)

DEFAULT_MAX_UPLOAD_BYTES = 2 * 1024**3
# Uploads kept on disk: at most MAX_UPLOADS files and this many times the upload limit.
UPLOAD_BUDGET_FACTOR = 4
MAX_NAME_BYTES = 120  # UTF-8 bytes of a stored upload's name (file systems allow 255)
RATE_GRACE_S = 30
PENDING = ".pending"  # sub-folder a file is written and checked in, before it is served
META = ".meta.json"
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class UploadPolicy:
    """The bounds of browser uploads (see the module docstring). ``None`` fields take their defaults
    from ``max_upload_bytes``: ``max_bytes`` 4x, ``max_unzipped_bytes`` 1x."""

    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    max_files: int = MAX_UPLOADS
    max_bytes: int | None = None
    client_share: float = 0.5
    max_unzipped_bytes: int | None = None
    memory_bytes: int = 2 * 1024**3
    allow_nsys_rep: bool = False
    min_free_bytes: int = 512 * 1024**2
    concurrent: int = 2
    min_rate: int = 64 * 1024
    load_timeout_s: float = 600

    @property
    def space_bytes(self) -> int:
        """Bytes all uploads on disk may take together."""
        return self.max_bytes if self.max_bytes is not None else UPLOAD_BUDGET_FACTOR * self.max_upload_bytes

    @property
    def unzipped_bytes(self) -> int:
        """The most a ``.json.gz`` upload may expand to."""
        return self.max_unzipped_bytes if self.max_unzipped_bytes is not None else self.max_upload_bytes


def safe_upload_name(raw: str) -> str:
    """A file name for an upload: the base name only, printable, ``[\\w.+()@ -]``, at most
    ``MAX_NAME_BYTES`` bytes in UTF-8 with the suffix kept; ``upload`` when nothing is left. Never a
    path, never hidden (no leading dot)."""
    name = unicodedata.normalize("NFC", raw or "").replace("\\", "/").split("/")[-1]
    name = "".join(ch for ch in name if ch.isprintable())
    name = re.sub(r"[^\w.+()@ -]", "_", name)
    no_stem = name.lstrip(" ").startswith(".")
    name = name.strip(" .")
    if no_stem and name:  # ".json", ".json.gz": suffixes without a stem keep all of them ("upload.json.gz")
        name = "upload." + name
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        suffix = next((x for x in (".json.gz", ".pt.trace.json") if name.lower().endswith(x)), None)
        if suffix is None:
            stem, dot, last = name.rpartition(".")
            suffix = "." + last if dot and len(last) < 16 else ""
        stem = name[: len(name) - len(suffix)]
        room = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
        stem = stem.encode("utf-8")[:room].decode("utf-8", "ignore")  # never half a character
        name = stem + suffix
    return name or "upload"


def _fail(status: int, message: str):
    return jsonify({"error": message}), status


def _suspicious_path(path: str) -> bool:
    """A request path with a ``..`` segment, a backslash or a NUL, after percent-decoding (twice)."""
    decoded = unquote(unquote(path))
    return "\x00" in decoded or "\\" in decoded or any(seg == ".." for seg in decoded.split("/"))


def _mib(n: float) -> str:
    return f"{n / 1024**2:,.0f} MiB"


class UploadRefused(Exception):
    """An upload refused before or while it is stored: ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@contextmanager
def _locked(path: Path):
    """An exclusive ``flock`` on ``path`` (created if needed): one holder among every worker process."""
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def client_key(address: str | None) -> str:
    """A short, stable key of a client address (stored with its uploads, to count its share)."""
    return hashlib.sha256((address or "?").encode("utf-8", "replace")).hexdigest()[:16]


def _free_idle(folders: list[UploadFolder], over, now: float) -> None:
    """Remove ``folders``' uploads idle for ``UPLOAD_GRACE_S`` (not in progress), least recently used first,
    while ``over()``; each removed one is marked ``removed``."""
    for f in folders:
        if not over():
            return
        if f.removed or f.in_progress or now - f.mtime < UPLOAD_GRACE_S:
            continue
        shutil.rmtree(f.path, ignore_errors=True)
        f.removed = True


def reserve_upload(upload_dir: Path, policy: UploadPolicy, client: str, nbytes: int) -> Path:
    """Make room for and create the folder of a new upload of ``nbytes`` (its random 128-bit token
    is the folder's name), under the upload space's lock.

    Removes least recently used uploads idle for ``UPLOAD_GRACE_S`` while the space (uploads,
    counting those in progress at their reserved size) would exceed ``policy``, then this client's own
    while its share would (every browser behind one address is one client: without that, its share,
    once used, was never freed).

    Raises:
        UploadRefused: 507 the space or the disk is full; 429 this client's share is used up.
    """
    with _locked(upload_dir / ".lock"):
        folders = upload_folders(upload_dir)
        now = time.time()

        def space_over() -> bool:
            live = [f for f in folders if not f.removed]
            return len(live) + 1 > policy.max_files or sum(f.bytes for f in live) + nbytes > policy.space_bytes

        _free_idle(folders, space_over, now)
        if space_over():
            live = [f for f in folders if not f.removed]
            raise UploadRefused(
                507,
                f"the server's upload space is full ({len(live)} uploads, "
                f"{_mib(sum(f.bytes for f in live))} of {_mib(policy.space_bytes)} in use, all in use in "
                f"the last {UPLOAD_GRACE_S // 60} minutes); try again later",
            )
        files_share = max(1, int(policy.max_files * policy.client_share))
        bytes_share = int(policy.space_bytes * policy.client_share)
        mine = [f for f in folders if f.client == client and not f.removed]

        def share_over() -> bool:
            live = [f for f in mine if not f.removed]
            return len(live) + 1 > files_share or sum(f.bytes for f in live) + nbytes > bytes_share

        _free_idle(mine, share_over, now)  # every browser behind one address is one client
        if share_over():
            live = [f for f in mine if not f.removed]
            over = (
                f"{len(live)} uploads, at most {files_share} per client"
                if len(live) + 1 > files_share
                else f"{_mib(sum(f.bytes for f in live))} in use or reserved and {_mib(nbytes)} asked for, "
                f"at most {_mib(bytes_share)} per client"
            )
            raise UploadRefused(
                429,
                f"you have used your share of this server's upload space ({over}, all in use in the last "
                f"{UPLOAD_GRACE_S // 60} minutes); try again later",
            )
        free = shutil.disk_usage(upload_dir).free
        if free - nbytes < policy.min_free_bytes:
            raise UploadRefused(507, "the server's disk is nearly full; the upload was not stored")
        folder = upload_dir / secrets.token_hex(16)
        folder.mkdir(mode=0o700)
        (folder / PENDING).mkdir(mode=0o700)
        (folder / META).write_text(json.dumps({"client": client, "reserved": nbytes}), encoding="utf-8")
        return folder


def _slow(sock) -> None:
    """Stop reading a too-slow (or cut-off) request body: the connection closes after the answer."""
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RD)
        except OSError:
            pass


def receive(folder: Path, name: str, length: int | None, policy: UploadPolicy) -> Path:
    """Stream the request body into ``folder/.pending/name``; returns the file.

    The body must arrive within ``RATE_GRACE_S`` + its length at ``policy.min_rate`` (a timer stops
    reading at that deadline, so a client sending a byte now and then holds a thread for a bounded time).

    Raises:
        UploadRefused: 400 empty or cut off, 408 slower than ``policy.min_rate``, 413 over the limit.
    """
    from dashboard.app.server import read_deadline

    part = folder / PENDING / name
    expected = length if length is not None else policy.max_upload_bytes
    timer, fired = read_deadline(request.environ, RATE_GRACE_S + expected / policy.min_rate)
    written = 0
    try:
        with open(part, "wb") as fh:
            while chunk := request.stream.read(_CHUNK):
                written += len(chunk)
                if written > policy.max_upload_bytes:
                    _slow(request.environ.get("gunicorn.socket"))
                    raise UploadRefused(
                        413, f"{name}: over this server's upload limit of {_mib(policy.max_upload_bytes)}"
                    )
                fh.write(chunk)
                if fired.is_set():
                    break
    except (ConnectionError, OSError, ClientDisconnected):
        if not fired.is_set():
            raise UploadRefused(400, f"{name}: the upload was cut off ({written:,} bytes arrived)") from None
    finally:
        timer.cancel()
    if fired.is_set():
        _slow(request.environ.get("gunicorn.socket"))
        raise UploadRefused(
            408,
            f"{name}: the upload was too slow (under {policy.min_rate // 1024} KiB/s on "
            "average); the server stopped waiting",
        )
    if written == 0:
        raise UploadRefused(400, f"{name}: the file is empty (0 bytes)")
    if length is not None and written != length:
        raise UploadRefused(400, f"{name}: the upload was cut off ({written:,} of {length:,} bytes arrived)")
    return part


def _scrub(message: str, *paths: Path) -> str:
    """``message`` without any server path in it (the folder becomes nothing, a file its base name)."""
    for p in sorted({str(x) for x in paths}, key=len, reverse=True):
        message = message.replace(p + "/", "").replace(p, "")
    return message


def register_routes(
    server: Flask,
    store: TraceStore,
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
    policy: UploadPolicy | None = None,
) -> None:
    """Add ``POST /upload``, ``GET /healthz`` and a guard that answers 404 to any path trying to climb
    out (``..``, encoded or not, backslashes, NUL) before Dash's own handlers see it.

    ``policy`` (default: ``UploadPolicy(max_upload_bytes)``) bounds the uploads.
    """
    from dash.exceptions import DependencyException

    from dashboard.app.upload_check import check_upload

    policy = policy or UploadPolicy(max_upload_bytes=max_upload_bytes)
    streaming = threading.BoundedSemaphore(policy.concurrent)

    # Both answer as every other 404 of the server does (``security.error_answer``): plain text to a GET
    @server.before_request
    def refuse_traversal():
        if _suspicious_path(request.path) or _suspicious_path((request.environ.get("RAW_URI") or "").split("?", 1)[0]):
            return error_answer(404, "not found")
        return None

    @server.errorhandler(DependencyException)
    def unknown_component_file(exc):  # Dash raises this (a 500) for unknown /_dash-component-suites/ files
        return error_answer(404, "not found")

    @server.get("/healthz")
    def healthz():
        return jsonify({"status": "ok", **store.stats()})

    @server.post("/upload")
    def upload():
        try:
            return _upload()
        except UploadRefused as exc:
            return _fail(exc.status, str(exc))
        except Exception:  # never an HTML 500 page: the browser shows this text as an alert
            log.exception("upload failed")
            return _fail(500, "the upload failed on the server (internal error; see the server log)")

    def _upload():
        if store.upload_dir is None:
            return _fail(503, "uploads are turned off on this server")
        if request.headers.get("X-Requested-With") != "tracedash":
            return _fail(403, "uploads must come from the tracedash page (X-Requested-With header missing)")
        name = safe_upload_name(unquote(request.headers.get("X-Trace-Name", "")))
        length = request.content_length  # None for a chunked upload: then the whole limit is reserved
        if length is not None and length > policy.max_upload_bytes:
            _slow(request.environ.get("gunicorn.socket"))
            return _fail(
                413, f"{name}: {_mib(length)} is over this server's upload limit of {_mib(policy.max_upload_bytes)}"
            )
        if not streaming.acquire(blocking=False):
            _slow(request.environ.get("gunicorn.socket"))
            return _fail(429, f"{name}: the server is busy with other uploads; try again in a moment")
        folder = None
        done = False
        try:
            folder = reserve_upload(
                store.upload_dir,
                policy,
                client_key(request.remote_addr),
                length if length is not None else policy.max_upload_bytes,
            )
            part = receive(folder, name, length, policy)
            with _locked(store.upload_dir / ".load.lock"):  # one load of an upload at a time, in all workers
                result = check_upload(
                    part,
                    memory_bytes=policy.memory_bytes,
                    max_unzipped_bytes=policy.unzipped_bytes,
                    allow_nsys_rep=policy.allow_nsys_rep,
                    timeout_s=policy.load_timeout_s,
                )
            if result.error:
                log.info("upload %s refused: %s (peak %s)", name, result.error, _mib(result.peak_rss_bytes))
                return _fail(415, _scrub(result.error, part.parent, store.upload_dir))
            final = folder / name
            part.rename(final)
            (folder / PENDING).rmdir()
            (folder / META).write_text(
                json.dumps({"client": client_key(request.remote_addr), "reserved": 0}), encoding="utf-8"
            )
            tid = store.add_upload(final)
            done = True
            return jsonify({"trace": tid, "name": name, "format": result.format, "bytes": final.stat().st_size})
        except TraceError as exc:
            return _fail(400, _scrub(str(exc), store.upload_dir))
        except OSError:
            log.exception("storing upload %s failed", name)
            return _fail(
                507 if shutil.disk_usage(store.upload_dir).free < policy.min_free_bytes else 500,
                f"{name}: could not be stored on the server",
            )
        finally:
            streaming.release()
            if folder is not None and not done:
                shutil.rmtree(folder, ignore_errors=True)
