"""Loaders: files -> typed pandas frames and the Summary model. Format is sniffed from content."""

from __future__ import annotations

from pathlib import Path

from dashboard.errors import TraceFormatError, TraceNotFoundError
import zlib

from dashboard.loaders.kineto_json import GZIP_MAGIC, load_kineto_json, looks_like_kineto
from dashboard.loaders.nsys_rep import is_nsys_report
from dashboard.loaders.nsys_sqlite import SQLITE_MAGIC, load_nsys_sqlite
from dashboard.loaders.summary_json import load_summary_json

__all__ = ["sniff_format", "load_nsys_sqlite", "load_summary_json", "load_kineto_json"]

QDSTRM_SUFFIX = ".qdstrm"  # the raw stream nsys writes while recording, before it becomes an .nsys-rep
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


def unfinished_capture_message(path: Path) -> str:
    """The one sentence for an ``.qdstrm`` file: an nsys capture that was never turned into a report."""
    rep = path.name[: -len(QDSTRM_SUFFIX)] + ".nsys-rep"
    return (f"{path.name}: an unfinished Nsight Systems capture (.qdstrm: the raw stream nsys writes while recording, "
            f"left when nsys stopped before importing it into a report); import it with the QdstrmImporter of "
            f"the Nsight Systems install (host-linux-x64/QdstrmImporter -i {path.name}), then open {rep} or its "
            f"SQLite export (nsys export --type sqlite {rep})")


def sniff_format(path: Path) -> str:
    """Return ``"nsys-sqlite"``, ``"nsys-rep"``, ``"kineto-json"`` or ``"summary-json"`` from the content.

    Gzip files are looked into (a ``.json.gz`` Kineto trace); a JSON with ``traceEvents`` in its
    first MiB (or a top-level array) is Kineto, any other JSON object a summary. ``.nsys-rep``
    reports are known by their first bytes or suffix.

    Raises:
        TraceNotFoundError: missing path, a directory or another non-regular file (device, pipe).
        TraceFormatError: empty file or neither format; an unfinished ``.qdstrm`` capture (known by
            its suffix, whatever it holds: ``unfinished_capture_message``).
    """
    if not path.exists():
        raise TraceNotFoundError(f"{path}: no such file")
    if not path.is_file():
        kind = "a directory" if path.is_dir() else "a device, pipe or socket"
        raise TraceNotFoundError(f"{path}: not a regular file ({kind}); pass a .sqlite or .json file")
    if path.name.lower().endswith(QDSTRM_SUFFIX):
        raise TraceFormatError(unfinished_capture_message(path))
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
        return "summary-json"
    raise TraceFormatError(
        f"{path.name}: neither an nsys SQLite export nor a tracedash summary JSON, a PyTorch profiler "
        "(Kineto) trace or an Nsight Systems report (export nsys reports with: nsys export --type sqlite "
        "REPORT.nsys-rep)"
    )

