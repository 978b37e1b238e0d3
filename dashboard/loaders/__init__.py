"""Loaders: files -> typed pandas frames and the Summary model. Format is sniffed from content."""

from __future__ import annotations

from pathlib import Path

from dashboard.errors import TraceFormatError, TraceNotFoundError
from dashboard.loaders.nsys_sqlite import SQLITE_MAGIC, load_nsys_sqlite
from dashboard.loaders.summary_json import load_summary_json

__all__ = ["sniff_format", "load_nsys_sqlite", "load_summary_json"]


def sniff_format(path: Path) -> str:
    """Return ``"nsys-sqlite"`` or ``"summary-json"`` from the file's first bytes.

    Raises:
        TraceNotFoundError: missing path or a directory.
        TraceFormatError: empty file or neither format.
    """
    if not path.exists():
        raise TraceNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise TraceNotFoundError(f"{path}: not a regular file (a directory?); pass a .sqlite or .json file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise TraceNotFoundError(f"{path.name}: cannot be read ({exc.strerror or exc})") from exc
    if not head:
        raise TraceFormatError(f"{path.name}: the file is empty (0 bytes)")
    if head.startswith(SQLITE_MAGIC):
        return "nsys-sqlite"
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        return "summary-json"
    raise TraceFormatError(
        f"{path.name}: neither an nsys SQLite export nor a tracedash summary JSON "
        "(export nsys reports with: nsys export --type sqlite REPORT.nsys-rep)"
    )

