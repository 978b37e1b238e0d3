"""Which input a file is, from its content: nsys SQLite export, .nsys-rep report, Kineto JSON or summary JSON."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from dashboard.errors import TraceFormatError, TraceNotFoundError
from dashboard.loaders.nsys_rep import is_nsys_report
from dashboard.loaders.producers import other_producer_message
from dashboard.loaders.sqlite_access import SQLITE_MAGIC, damaged_header_message, not_sqlite_message

SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")  # names of a file that is meant to be an nsys SQLite export

GZIP_MAGIC = b"\x1f\x8b"
# The keys every seed-format summary has (``summary_json`` requires them): here, so that sniffing imports no loader.
REQUIRED_KEYS = ("gpu_activity_span_s", "gpu_busy_union_s", "kernel_count")
QDSTRM_SUFFIX = ".qdstrm"  # the raw stream nsys writes while recording, before it becomes an .nsys-rep
SUMMARY_KEYS = ("file", *REQUIRED_KEYS)  # a JSON with none of these in its first MiB is not a summary
SNIFF_BYTES = 1 << 20  # decompressed bytes looked at to tell a Kineto trace from a summary


def _json_head(path: Path, head: bytes) -> bytes | None:
    """Up to SNIFF_BYTES of the (gunzipped) text; None for a gzip stream that cannot be decompressed."""
    with open(path, "rb") as fh:
        raw = fh.read(SNIFF_BYTES)
    if head.startswith(GZIP_MAGIC):
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, SNIFF_BYTES)
        except zlib.error:
            return None
    return raw


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _utf16_json(text: bytes) -> bool:
    """True for JSON text in UTF-16 (a byte-order mark, or ``{``/``[`` with a zero byte beside it): what
    Windows PowerShell's ``>`` writes. tracedash reads JSON in UTF-8."""
    if text.startswith(UTF16_BOMS):
        return True
    body = text.lstrip(b"\x00 \t\r\n")
    return len(body) >= 2 and body[:1] in (b"{", b"[") and body[1:2] == b"\x00" or text[:2] in (b"\x00{", b"\x00[")


def _utf16_message(path: Path, gzipped: bool) -> str:
    inner = " (inside the gzip)" if gzipped else ""
    return (
        f"{path.name}: a JSON file in UTF-16{inner}; tracedash reads JSON in UTF-8 (as PyTorch writes it): "
        f"convert it, e.g. iconv -f UTF-16 -t UTF-8 IN > OUT, or in PowerShell write it with -Encoding utf8"
    )


def _complete_json(path: Path, text: bytes) -> bool:
    """True when ``text`` is the whole file and parses as JSON: a malformed or cut JSON goes on to the
    summary loader, whose message says where it breaks (more useful than "none of the formats")."""
    if len(text) >= SNIFF_BYTES or len(text) != path.stat().st_size:
        return True  # too large to check here: the key test alone decides
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def unfinished_capture_message(path: Path) -> str:
    """The one sentence for an ``.qdstrm`` file: an nsys capture that was never turned into a report."""
    rep = path.name[: -len(QDSTRM_SUFFIX)] + ".nsys-rep"
    return (
        f"{path.name}: an unfinished Nsight Systems capture (.qdstrm: the raw stream nsys writes while recording, "
        f"left when nsys stopped before importing it into a report); import it with the QdstrmImporter of "
        f"the Nsight Systems install (host-linux-x64/QdstrmImporter -i {path.name}), then open {rep} or its "
        f"SQLite export (nsys export --type sqlite {rep})"
    )


def looks_like_kineto(head: bytes) -> bool:
    """Whether the first (decompressed) bytes of a JSON file look like a Chrome/Kineto trace.

    True for an object with a ``"traceEvents"`` key in ``head`` or a top-level array (the Chrome
    JSON Array Format; a tracedash summary is always an object).
    """
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1] == b"[" or b'"traceEvents"' in head


def sniff_format(path: Path) -> str:
    """Return ``"nsys-sqlite"``, ``"nsys-rep"``, ``"kineto-json"`` or ``"summary-json"`` from the content.

    Gzip files are looked into (a ``.json.gz`` Kineto trace); a JSON with ``traceEvents`` in its
    first MiB (or a top-level array) is Kineto, a JSON object naming a summary key (``file``,
    ``gpu_busy_union_s``, ...) a summary; any other JSON is refused. ``.nsys-rep``
    reports are known by their first bytes or suffix.

    Raises:
        TraceNotFoundError: missing path, a directory or another non-regular file (device, pipe).
        TraceFormatError: empty file, or none of the formats (one sentence saying which it is not); an
            unfinished ``.qdstrm`` capture (known by its suffix, whatever it holds:
            ``unfinished_capture_message``).
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
    if head.startswith(SQLITE_MAGIC[:15]):  # the header's text without its NUL: cut or damaged, but SQLite
        raise TraceFormatError(damaged_header_message(path))
    if is_nsys_report(path, head):
        return "nsys-rep"
    if _utf16_json(head):
        raise TraceFormatError(_utf16_message(path, gzipped=False))
    if not head.startswith(GZIP_MAGIC) and (other := other_producer_message(path.name, head)):
        raise TraceFormatError(other)
    if head.startswith(GZIP_MAGIC) or head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        text = _json_head(path, head)
        if text is None:
            raise TraceFormatError(
                f"{path.name}: a gzip file whose data cannot be decompressed (corrupt, or not gzip past its "
                "first bytes); gunzip -t reports where it breaks"
            )
        if looks_like_kineto(text):
            return "kineto-json"
        if other := other_producer_message(path.name, text):
            raise TraceFormatError(other)
        if head.startswith(GZIP_MAGIC):
            if _utf16_json(text):
                raise TraceFormatError(_utf16_message(path, gzipped=True))
            if not text:
                if not _gzip_intact(path):
                    raise TraceFormatError(
                        f"{path.name}: a gzip file whose data cannot be decompressed (corrupt, or cut short: it "
                        "ends before its first block); gunzip -t reports where it breaks"
                    )
                raise TraceFormatError(f"{path.name}: a gzip file that holds nothing (0 bytes once decompressed)")
            if any(f'"{key}"'.encode() in text for key in SUMMARY_KEYS):
                raise TraceFormatError(
                    f"{path.name}: a gzipped tracedash summary JSON; summaries are read uncompressed: "
                    f"gunzip {path.name} and open the .json"
                )
            if len(text) < SNIFF_BYTES:  # all of its data was read: say whether it ended where gzip says it does
                if not _gzip_intact(path):
                    raise TraceFormatError(
                        f"{path.name}: a gzip file cut short or corrupt: its data breaks off after {len(text):,} "
                        "bytes (no 'traceEvents' before that); gunzip -t reports where it breaks"
                    )
                where = f"in its {len(text):,} bytes of data"
            else:
                where = "in its first MiB"
            raise TraceFormatError(
                f"{path.name}: a gzip file that is not a PyTorch profiler (Kineto) trace (no 'traceEvents' {where})"
            )
        if not any(f'"{key}"'.encode() in text for key in SUMMARY_KEYS) and _complete_json(path, text):
            raise TraceFormatError(
                f"{path.name}: a JSON file in none of the formats tracedash reads: neither a PyTorch profiler "
                "(Kineto) trace (no 'traceEvents') nor a tracedash summary (none of its keys, e.g. "
                "'gpu_busy_union_s')"
            )
        return "summary-json"
    # a name that promises gzip (a Kineto .json.gz) on data that is not: say that first
    if path.suffix.lower() in SQLITE_SUFFIXES:  # a name that promises SQLite: said as `inspect` says it
        raise TraceFormatError(not_sqlite_message(path))
    not_gzip = "named .gz but not gzip data (no gzip header); " if path.name.lower().endswith(".gz") else ""
    raise TraceFormatError(
        f"{path.name}: {not_gzip}neither an nsys SQLite export nor a tracedash summary JSON, a PyTorch profiler "
        "(Kineto) trace or an Nsight Systems report (export nsys reports with: nsys export --type sqlite "
        "REPORT.nsys-rep)"
    )


def _gzip_intact(path: Path) -> bool:
    """Whether a gzip file decompresses to its end without an error (called only for one that gave no
    data, so it reads almost nothing)."""
    import gzip

    try:
        with gzip.open(path, "rb") as f:
            while f.read(1 << 16):
                pass
        return True
    except (OSError, EOFError, zlib.error):
        return False
