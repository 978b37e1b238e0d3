"""Which files a server offers and their ids: trace files named or found in folders, the content hash that makes
an id, and whether a file reads as a trace (looked at once per file version)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from pathlib import Path

from dashboard.app.upload_folders import TOKEN_HEX
from dashboard.errors import TraceNotFoundError

log = logging.getLogger(__name__)

# .xplane.pb: a JAX profile's own file, offered so that opening it says what to record instead
TRACE_SUFFIXES = (".sqlite", ".json", ".json.gz", ".nsys-rep", ".qdrep", ".xplane.pb")

_WARNED: set[tuple[Path, Path]] = set()
# An id: the file's base name, "@", 32 hex digits (128 bits: the content's SHA-256, or an upload's random token).
ID_HEX = TOKEN_HEX
ID_RE = re.compile(r"^[^/\\\x00]{1,300}@[0-9a-f]{%d}$" % ID_HEX)
_DIGESTS: dict[tuple[Path, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


def is_trace_name(name: str) -> bool:
    """Whether a file name has a suffix the server offers (``TRACE_SUFFIXES``: ``.sqlite``, ``.json``, ...)."""
    return name.lower().endswith(TRACE_SUFFIXES)


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` lies under ``root`` (both resolved by the caller)."""
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def scan_dir(directory: Path) -> list[Path]:
    """Trace files directly in ``directory`` (sorted, resolved), as served.

    Regular files only (no FIFOs or devices, which would hang a reader); a symlink is followed only
    when its target lies inside ``directory`` itself; other symlinks are skipped with a log line.
    """
    root = directory.resolve()
    out: list[Path] = []
    try:
        entries = sorted(directory.iterdir())
    except OSError as exc:
        log.warning("cannot list %s: %s", directory, exc)
        return out
    for f in entries:
        if not is_trace_name(f.name):
            continue
        try:
            real = f.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if not is_inside(real, root):
            if (f, real) not in _WARNED:  # once per link, not at every rescan
                _WARNED.add((f, real))
                log.warning("skipping %s: it links outside the trace directory (%s)", f, real)
            continue
        if real.is_file():
            out.append(real)
    return list(dict.fromkeys(out))


def discover(paths: list[str | os.PathLike], trace_dirs: list[str | os.PathLike]) -> list[Path]:
    """Trace files from explicit paths plus every trace file in the directories (see ``scan_dir``).

    Returns resolved paths, first occurrence kept.

    Raises:
        TraceNotFoundError: an explicit path or directory does not exist, or is not a regular file.
    """
    found: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise TraceNotFoundError(f"{p}: no such file")
        if p.is_dir():
            trace_dirs = [*trace_dirs, p]
            continue
        if not p.is_file():
            raise TraceNotFoundError(f"{p}: not a regular file")
        found.append(p.resolve())
    for d in map(Path, trace_dirs):
        if not d.exists():
            raise TraceNotFoundError(f"{d}: no such directory")
        if not d.is_dir():
            raise TraceNotFoundError(f"{d}: not a directory (pass trace files without --trace-dir)")
        found.extend(scan_dir(d))
    return list(dict.fromkeys(found))


def content_digest(path: Path, cache=None) -> str:
    """SHA-256 (hex) of the whole file, computed once per (path, size, mtime) in this process and,
    with a ``TraceCache``, stored beside its Parquet entries under the same key (other workers and
    later runs read it instead of hashing again).

    Raises:
        OSError: the file cannot be read.
    """
    st = path.stat()
    key = (path, st.st_size, st.st_mtime_ns)
    with _DIGESTS_LOCK:
        if key in _DIGESTS:
            return _DIGESTS[key]
    digest = cache.content_digest(path) if cache is not None else None
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
        digest = h.hexdigest()
        if cache is not None:
            cache.store_content_digest(path, digest)
    with _DIGESTS_LOCK:
        _DIGESTS[key] = digest
    return digest


_SNIFFS: dict[tuple[Path, int, int], bool] = {}  # (path, size, mtime) -> whether it reads as a trace


def _version(path: Path) -> tuple[Path, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return path, st.st_size, st.st_mtime_ns


def sniffed(path: Path) -> bool | None:
    """What ``TraceStore.readable`` found for this version of the file, None when not looked at (or gone:
    False)."""
    key = _version(path)
    return False if key is None else _SNIFFS.get(key)


def remember_sniff(path: Path, ok: bool) -> None:
    """Keep what ``sniff_format`` found for this version of the file (see ``sniffed``)."""
    if (key := _version(path)) is not None:
        _SNIFFS[key] = ok


def trace_id(path: Path, cache=None) -> str:
    """Id of a served trace for links: base name + ``@`` + the first 32 hex digits (128 bits) of the
    SHA-256 of the whole file (see ``content_digest``). Never a path; equal ids mean equal content, on
    any server and in any worker. A file that cannot be read gets a hash of its name (it is then
    refused when opened)."""
    try:
        digest = content_digest(path, cache)
    except OSError:
        digest = hashlib.sha256(b"unreadable\0" + path.name.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{path.name}@{digest[:ID_HEX]}"


SHORT_ID_HEX = 8  # the fewest hex digits of a version ``shortened_id`` takes (links hold 8 or 32: state.schema)


def shortened_id(link_id: str, served_id: str) -> bool:
    """Whether ``link_id`` is ``served_id`` with its version (the hex after ``@``) cut short by hand, to at least
    ``SHORT_ID_HEX`` digits: the same file name, and the link's digits are the start of the served file's."""
    name, _, version = str(link_id).rpartition("@")
    served_name, _, served_version = served_id.rpartition("@")
    version = version.lower()
    return (
        name == served_name
        and SHORT_ID_HEX <= len(version) < len(served_version)
        and all(c in "0123456789abcdef" for c in version)
        and served_version.startswith(version)
    )


def ids_of_file_name(name: str, served: list[str]) -> list[str]:
    """The served trace ids (``NAME@HASH``) of the file name ``name`` (a link typed by hand: ``?trace=run.sqlite``)."""
    return [t for t in served if t.rpartition("@")[0] == name]


def file_name_problem(name: str, hits: list[str]) -> str:
    """Why a link's bare file name opened no trace: none or several served traces have it."""
    if not hits:
        return f"no trace named {name[:120]!r} is served here"
    return f"{len(hits)} served traces are named {name[:120]!r}: pick one in the Trace picker"
