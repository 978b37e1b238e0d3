"""TraceStore: the traces a server offers, addressed by id, loaded once and kept in a small LRU."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

from dashboard.errors import TraceNotFoundError
from dashboard.trace import LoadedTrace, load_trace

TRACE_SUFFIXES = (".sqlite", ".json", ".txt")


def discover(paths: list[str | os.PathLike], trace_dirs: list[str | os.PathLike]) -> list[Path]:
    """Trace files from explicit paths plus every ``*.sqlite``/``*.json`` file in the directories.

    Raises:
        TraceNotFoundError: an explicit path or directory does not exist.
    """
    found: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise TraceNotFoundError(f"{p}: no such file")
        if p.is_dir():
            trace_dirs = [*trace_dirs, p]
            continue
        found.append(p)
    for d in map(Path, trace_dirs):
        if not d.exists():
            raise TraceNotFoundError(f"{d}: no such directory")
        if not d.is_dir():
            raise TraceNotFoundError(f"{d}: not a directory (pass trace files without --trace-dir)")
        found.extend(sorted(f for f in d.iterdir() if f.is_file() and f.suffix.lower() in (".sqlite", ".json")))
    unique = list(dict.fromkeys(f.resolve() for f in found))
    return unique


def trace_id(path: Path) -> str:
    """Stable id of a trace for links: base name + 8 hex digits of a hash of its size and first
    64 KiB. Never a path; the same file gives the same id on any server."""
    h = hashlib.sha256()
    try:
        h.update(str(path.stat().st_size).encode())
        with open(path, "rb") as fh:
            h.update(fh.read(64 * 1024))
    except OSError:
        h.update(path.name.encode("utf-8", "surrogateescape"))
    return f"{path.name}@{h.hexdigest()[:8]}"


class TraceStore:
    """Thread-safe map of trace id -> file, with loaded traces cached (at most ``capacity``).

    Ids are file base names (``-2``, ``-3`` appended on clashes). A trace is loaded at most once
    at a time even when several callbacks ask for it together.
    """

    def __init__(self, files: list[Path], capacity: int = 6, dispatch_prefix: str = "CG_DISPATCH", cache=None):
        self._paths: dict[str, Path] = {}
        for f in files:
            tid = trace_id(f)
            n = 2
            while tid in self._paths:  # the same content served twice: keep both, distinctly
                tid, n = f"{trace_id(f)[:-9]}-{n}{trace_id(f)[-9:]}", n + 1
            self._paths[tid] = f
        self._cache: OrderedDict[str, LoadedTrace] = OrderedDict()
        self._capacity = max(1, capacity)
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._prefix = dispatch_prefix
        self._trace_cache = cache

    def ids(self) -> list[str]:
        """Trace ids in the order the files were given."""
        return list(self._paths)

    def label(self, trace_id: str) -> str:
        """What the trace picker shows for an id: the file's base name."""
        return self._paths[trace_id].name if trace_id in self._paths else trace_id

    def explain_missing(self, trace_id: str) -> str:
        """A message for a link whose trace id is not served here (file changed, or absent)."""
        name = trace_id.rsplit("@", 1)[0]
        if any(p.name == name for p in self._paths.values()):
            return (f"The link asks for trace '{trace_id}', but the file '{name}' served here has different "
                    "content (it changed since the link was made). Showing the current file instead.")
        return f"The link asks for trace '{trace_id}', which is not served here. Showing another trace."

    def path(self, trace_id: str) -> Path:
        """The file behind ``trace_id``; raises TraceNotFoundError for an unknown id."""
        try:
            return self._paths[trace_id]
        except KeyError:
            raise TraceNotFoundError(f"trace '{trace_id}' is not served here") from None

    def get(self, trace_id: str) -> LoadedTrace:
        """The loaded trace for ``trace_id``.

        Raises:
            TraceNotFoundError: unknown id. TraceFormatError: the file cannot be read.
        """
        path = self.path(trace_id)
        with self._lock:
            if trace_id in self._cache:
                self._cache.move_to_end(trace_id)
                return self._cache[trace_id]
            gate = self._loading.setdefault(trace_id, threading.Lock())
        with gate:
            with self._lock:
                if trace_id in self._cache:
                    return self._cache[trace_id]
            trace = load_trace(path, dispatch_prefix=self._prefix, cache=self._trace_cache)
            with self._lock:
                self._cache[trace_id] = trace
                while len(self._cache) > self._capacity:
                    self._cache.popitem(last=False)
            return trace
