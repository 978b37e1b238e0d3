"""Loaders: files -> typed pandas frames and the Summary model. Format is sniffed from content."""

from __future__ import annotations

from pathlib import Path

from dashboard.errors import TraceFormatError, TraceNotFoundError
import zlib

from dashboard.loaders.kineto_json import GZIP_MAGIC, load_kineto_json, looks_like_kineto
from dashboard.loaders.nsys_rep import is_nsys_report
from dashboard.loaders.nsys_sqlite import SQLITE_MAGIC, load_nsys_sqlite
from dashboard.loaders.summary_json import REQUIRED_KEYS, load_summary_json

__all__ = ["sniff_format", "load_nsys_sqlite", "load_summary_json", "load_kineto_json"]

SUMMARY_KEYS = ("file", *REQUIRED_KEYS)  # a JSON with none of these in its first MiB is not a summary
SNIFF_BYTES = 1 << 20  # decompressed bytes looked at to tell a Kineto trace from a summary


def _json_head(path: Path, head: bytes) -> bytes:
    """Up to SNIFF_BYTES of the (gunzipped) text; b"" for a gzip stream that cannot be decompressed."""
    with open(path, "rb") as fh:
        raw = fh.read(SNIFF_BYTES)
    if head.startswith(GZIP_MAGIC):
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, SNIFF_BYTES)
        except zlib.error:
            return b""
    return raw


def sniff_format(path: Path) -> str:
    """Return ``"nsys-sqlite"``, ``"nsys-rep"``, ``"kineto-json"`` or ``"summary-json"`` from the content.

    Gzip files are looked into (a ``.json.gz`` Kineto trace); a JSON with ``traceEvents`` in its
    first MiB (or a top-level array) is Kineto, a JSON object naming a summary key (``file``,
    ``gpu_busy_union_s``, ...) a summary; any other JSON is refused. ``.nsys-rep``
    reports are known by their first bytes or suffix.

    Raises:
        TraceNotFoundError: missing path, a directory or another non-regular file (device, pipe).
        TraceFormatError: empty file, or none of the formats (one sentence saying which it is not).
    """
    if not path.exists():
        raise TraceNotFoundError(f"{path}: no such file")
    if not path.is_file():
        kind = "a directory" if path.is_dir() else "a device, pipe or socket"
        raise TraceNotFoundError(f"{path}: not a regular file ({kind}); pass a .sqlite or .json file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise TraceNotFoundError(f"{path.name}: cannot be read ({exc.strerror or exc})") from exc
    if not head:
        raise TraceFormatError(f"{path.name}: the file is empty (0 bytes)")
    if head.startswith(SQLITE_MAGIC):
        return "nsys-sqlite"
    if is_nsys_report(path, head):
        return "nsys-rep"
    if head.startswith(GZIP_MAGIC) or head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        text = _json_head(path, head)
        if looks_like_kineto(text):
            return "kineto-json"
        if head.startswith(GZIP_MAGIC):
            raise TraceFormatError(
                f"{path.name}: a gzip file that is not a PyTorch profiler (Kineto) trace "
                "(no 'traceEvents' in its first MiB, or a corrupt gzip stream)")
        if not any(f'"{key}"'.encode() in text for key in SUMMARY_KEYS):
            raise TraceFormatError(
                f"{path.name}: a JSON file in none of the formats tracedash reads: neither a PyTorch profiler "
                "(Kineto) trace (no 'traceEvents') nor a tracedash summary (none of its keys, e.g. "
                "'gpu_busy_union_s')")
        return "summary-json"
    raise TraceFormatError(
        f"{path.name}: neither an nsys SQLite export nor a tracedash summary JSON, a PyTorch profiler "
        "(Kineto) trace or an Nsight Systems report (export nsys reports with: nsys export --type sqlite "
        "REPORT.nsys-rep)"
    )

