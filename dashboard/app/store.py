"""TraceStore: the traces a server offers, addressed by id, loaded once, kept in an LRU bounded by memory.

Security model: a trace id is never a path. Ids resolve only to files found in the configured trace
directories (symlinks that lead outside them are refused), to the trace files named on the command line,
or to uploads in the server's private upload directory. Anything else is "not served here".
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dashboard.app.trace_files import ID_RE, is_inside, remember_sniff, scan_dir, shortened_id, sniffed, trace_id
from dashboard.app.upload_folders import TOKEN_RE, touch_upload
from dashboard.data.analysis import analysis_of
from dashboard.data.trace import LoadedTrace, LoadStatus, load_trace
from dashboard.errors import TraceError, TraceNotFoundError

log = logging.getLogger(__name__)

# The memory bound when none is configured: this share of the machine's RAM, split between workers.
DEFAULT_MEMORY_SHARE = 0.4


def trace_nbytes(trace: LoadedTrace) -> int:
    """Memory held by a loaded trace, in bytes: pandas ``memory_usage(deep=True)`` of every event frame
    and summary frame (derived per-view caches die with the trace and are not counted)."""
    parts = [trace.summary] + ([trace.bundle] if trace.bundle is not None else [])
    frames = [v for part in parts for v in vars(part).values() if isinstance(v, pd.DataFrame)]
    return int(sum(int(f.memory_usage(index=True, deep=True).sum()) for f in frames))


def default_memory_limit(workers: int = 1) -> int:
    """Bytes of loaded traces one server process may keep: ``DEFAULT_MEMORY_SHARE`` of physical RAM,
    split between ``workers`` processes (psutil's total memory)."""
    import psutil

    return int(psutil.virtual_memory().total * DEFAULT_MEMORY_SHARE / max(1, workers))


def _takes(fn, name: str) -> bool:
    """Whether ``fn`` accepts the keyword argument ``name`` (a test's loader may take fewer than ``load_trace``)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


@dataclass
class _Loading:
    """A load in progress (``TraceStore.load_status``): its stage, when it and the load began (monotonic s), the
    rows the stage reads where the loader said, and the kernel rows' preview once the loader gave one."""

    started_s: float
    stage: str = ""
    stage_started_s: float = 0.0
    rows: tuple[tuple[str, int], ...] = ()
    preview: object = None


class TraceStore:
    """Thread-safe map of trace id -> file, with loaded traces kept while they fit in ``memory_limit`` bytes.

    - Ids come from ``trace_id`` (``name@`` + 128 bits of the content's SHA-256; two files with the
      same name and content are one id, the first served). An upload's id is ``name@`` + the random
      128-bit token naming its folder: the link is the only way to it. ``ids()`` rescans the trace
      directories, so a trace exported after start-up appears on the next page load.
    - A trace is loaded at most once at a time even when several callbacks ask for it together; no
      database connection is shared between threads (every load opens its own, read-only).
    - Least recently used traces are dropped when the total exceeds the bound; the trace just asked
      for is always kept, even alone over the bound. Uploaded files have their own bound on disk
      (see ``upload_folders.prune_uploads``): every use marks an upload as recent, in any worker process.
    """

    def __init__(
        self,
        files: list[Path] = (),
        *,
        trace_dirs: list[str | os.PathLike] = (),
        memory_limit: int | None = None,
        dispatch_prefix: str = "CG_DISPATCH",
        cache=None,
        upload_dir: str | os.PathLike | None = None,
        loader=load_trace,
        clock=time.monotonic,
    ):
        self._lock = threading.RLock()
        self._paths: dict[str, Path] = {}
        self._by_path: dict[tuple[Path, int, int], str] = {}
        self._explicit = [Path(f).resolve() for f in files]
        self._dirs = [Path(d) for d in trace_dirs]
        self._upload_dir = Path(upload_dir).resolve() if upload_dir else None
        self._loaded: OrderedDict[str, tuple[LoadedTrace, int]] = OrderedDict()
        self._loading: dict[str, threading.Lock] = {}
        self._upload_gate = threading.BoundedSemaphore(1)  # uploads load one at a time (their parse is unvetted)
        self.memory_limit = int(memory_limit) if memory_limit else default_memory_limit()
        self._prefix = dispatch_prefix
        self._trace_cache = cache
        self._loader = loader
        self._loader_progress = _takes(loader, "progress")
        self._loader_writer = _takes(loader, "cache_writer")
        self._loader_preview = _takes(loader, "preview")
        self._clock = clock
        self._progress: dict[str, _Loading] = {}  # trace id -> its load in progress
        self._failed: dict[str, str] = {}  # trace id -> the error of its last load, until the next one starts
        self._ended: dict[str, float] = {}  # trace id -> when its last load ended (clock s)
        self._background: set[str] = set()  # trace ids a load_in_background thread is loading
        self._writer: ThreadPoolExecutor | None = None  # writes new cache entries, one at a time
        self._writes: set[Future] = set()
        self.loads = 0  # how many times a file was actually read (for tests and /healthz)
        self.refresh()

    # ----- which files are served -------------------------------------------------------------
    def _register(self, f: Path) -> str:
        try:
            st = f.stat()
            key = (f, st.st_size, st.st_mtime_ns)
        except OSError:
            key = (f, -1, -1)
        if key in self._by_path:
            return self._by_path[key]
        if self._upload_dir is not None and f.parent.parent == self._upload_dir:
            tid = f"{f.name}@{f.parent.name}"  # the folder's random token
        else:
            tid = trace_id(f, self._trace_cache)
        self._paths.setdefault(tid, f)  # the same id twice is the same content: the first file serves it
        self._by_path[key] = tid
        return tid

    def refresh(self) -> None:
        """Rescan the trace directories and the upload directory (explicit files are kept)."""
        files = list(self._explicit)
        for d in self._dirs:
            if d.is_dir():
                files.extend(scan_dir(d))
        files.extend(self._uploads())
        with self._lock:
            live = set()
            for f in dict.fromkeys(files):
                live.add(self._register(f))
            for tid in [t for t in self._paths if t not in live]:  # deleted/changed files
                del self._paths[tid]
                self._failed.pop(tid, None)
                self._ended.pop(tid, None)
            for key in [k for k, t in self._by_path.items() if t not in live]:
                del self._by_path[key]

    def _uploads(self) -> list[Path]:
        if self._upload_dir is None or not self._upload_dir.is_dir():
            return []
        out = []
        for sub in sorted(self._upload_dir.iterdir()):
            if TOKEN_RE.match(sub.name) and sub.is_dir() and not sub.is_symlink():
                try:
                    out.extend(
                        f.resolve()
                        for f in sorted(sub.iterdir())
                        if not f.name.startswith(".") and f.is_file() and not f.is_symlink()
                    )
                except OSError:  # removed meanwhile
                    continue
        return out

    def _allowed(self, f: Path) -> bool:
        """Whether a file may be read: named on the command line, or (after resolving links) inside a
        trace directory or the upload directory."""
        try:
            real = f.resolve(strict=True)
        except (OSError, RuntimeError):
            return False
        if real in self._explicit:
            return True
        roots = [d.resolve() for d in self._dirs] + ([self._upload_dir] if self._upload_dir else [])
        return any(is_inside(real, r) for r in roots) and real.is_file()

    def ids(self) -> list[str]:
        """Trace ids served now, in the order files were given, then directory order, then uploads."""
        self.refresh()
        with self._lock:
            return list(self._paths)

    def listed_ids(self, extra: list[str | None] = ()) -> list[str]:
        """Ids for a trace picker: every served file, but uploads only when named in ``extra`` (the
        trace of the link being opened). An upload is private to whoever holds its link."""
        ids = self.ids()
        wanted = {t for t in extra if t}
        return [t for t in ids if not self.is_upload(t) or t in wanted]

    def is_upload(self, trace_id: str) -> bool:
        """Whether ``trace_id`` names a file uploaded through the browser."""
        with self._lock:
            p = self._paths.get(trace_id)
        return bool(p is not None and self._upload_dir is not None and is_inside(p, self._upload_dir))

    def label(self, trace_id: str) -> str:
        """What the trace picker shows for an id: the file's base name (``uploaded`` marked, a file known not to
        read as a trace by its first bytes, see ``readable``, marked "cannot be read", and one whose last load
        failed, whatever the reason, "did not load": its page says why)."""
        with self._lock:
            p = self._paths.get(trace_id)
            failed = trace_id in self._failed
        if p is None:
            return trace_id
        if self.is_upload(trace_id):
            return f"{p.name} (uploaded)"
        if sniffed(p) is False:
            return f"{p.name} (cannot be read)"
        return f"{p.name} (did not load)" if failed else p.name

    def readable(self, trace_id: str) -> bool:
        """Whether the file of ``trace_id`` reads as a trace by its first bytes (``sniff_format``, once per
        file identity): a page without a trace in its link opens the first readable one. An id not served
        here reads as readable (its page says why it is not)."""
        with self._lock:
            p = self._paths.get(trace_id)
        if p is None:
            return True
        known = sniffed(p)
        if known is None:
            from dashboard.loaders import sniff_format

            try:
                sniff_format(p)
                known = True
            except TraceError:
                known = False
            remember_sniff(p, known)
        return known

    def same_name(self, trace_id: str) -> str | None:
        """The id of the served file (never an upload) with the file name of ``trace_id`` when its
        content hash differs (a link made before the file changed), or None. Uploads are left out: they
        are private to their links, and a name must not open one."""
        name = str(trace_id).rpartition("@")[0]
        hits = [t for t in self.listed_ids() if t != trace_id and t.rpartition("@")[0] == name]
        return hits[0] if name and len(hits) == 1 else None

    def explain_changed(self, trace_id: str, renamed: str) -> str | None:
        """The notice for a link whose trace id names a served file (``same_name``) with other content; None
        when the link's version is the start of the file's (``shortened_id``: a hash shortened by hand)."""
        if shortened_id(trace_id, renamed):
            return None
        return (
            f"The link asks for trace {str(trace_id)[:120]!r}, which is not served here: the file "
            f"{renamed.rpartition('@')[0]!r} here has other content (it changed since the link was made, or the "
            "link's version is mistyped). Showing it as it is now."
        )

    def explain_missing(self, trace_id: str) -> str:
        """The one message for a link whose trace id does not resolve and names no served file
        (``same_name``): a removed upload, a made-up id or an upload's changed id all get it, so an answer
        tells nothing about what is served beyond the trace picker. The id is
        quoted as Python writes it: a control character reads as ``\\x00``, never as an invisible glyph."""
        return f"The link asks for trace {str(trace_id)[:120]!r}, which is not served here. Showing another trace."

    def path(self, trace_id: str) -> Path:
        """The file behind ``trace_id``.

        Raises:
            TraceNotFoundError: the id is malformed (a path, ``..``, NUL, ...), unknown, or its file
                has left the served directories.
        """
        missing = TraceNotFoundError(f"trace {str(trace_id)[:120]!r} is not served here")
        if not isinstance(trace_id, str) or not ID_RE.match(trace_id) or trace_id.startswith("."):
            raise missing
        with self._lock:
            p = self._paths.get(trace_id)
        if p is None:
            self.refresh()  # an upload made through another worker, or a file added since
            with self._lock:
                p = self._paths.get(trace_id)
        if p is None or not self._allowed(p):
            raise missing
        return p

    # ----- loaded traces ----------------------------------------------------------------------
    def get(self, trace_id: str) -> LoadedTrace:
        """The loaded trace for ``trace_id`` (loaded on first use, then kept while memory allows).

        Raises:
            TraceNotFoundError: unknown id. TraceFormatError: the file cannot be read.
        """
        path = self.path(trace_id)
        if self.is_upload(trace_id):
            touch_upload(path.parent)
        with self._lock:
            if trace_id in self._loaded:
                self._loaded.move_to_end(trace_id)
                return self._loaded[trace_id][0]
            gate = self._loading.setdefault(trace_id, threading.Lock())
        with gate:
            with self._lock:
                if trace_id in self._loaded:
                    self._loaded.move_to_end(trace_id)
                    return self._loaded[trace_id][0]
                loading = self._progress[trace_id] = _Loading(self._clock())
                self._failed.pop(trace_id, None)
            try:
                trace = self._load(path, trace_id, loading)
            except Exception as exc:
                with self._lock:
                    self._progress.pop(trace_id, None)
                    self._failed[trace_id] = str(exc) if isinstance(exc, TraceError) else "internal error"
                    self._ended[trace_id] = self._clock()
                    self._loading.pop(trace_id, None)
                raise
            size = trace_nbytes(trace)
            with self._lock:
                self.loads += 1
                self._loaded[trace_id] = (trace, size)
                self._evict(keep=trace_id)
                self._loading.pop(trace_id, None)
                self._progress.pop(trace_id, None)
                self._ended[trace_id] = self._clock()
            if isinstance(trace, LoadedTrace):  # after the cache write, on the same thread: the page comes first
                self._on_writer_thread(
                    lambda: analysis_of(trace).prepare_zooms(), what="preparing the timeline's zooms"
                )
            return trace

    def _load(self, path: Path, trace_id: str, loading: _Loading) -> LoadedTrace:
        """Read ``path`` with the loader, recording its stages in ``loading``."""

        def stage(name: str, rows=None) -> None:
            with self._lock:
                loading.stage, loading.stage_started_s, loading.rows = name, self._clock(), tuple(rows or ())

        def preview(p) -> None:
            with self._lock:
                loading.preview = p

        kw = {"dispatch_prefix": self._prefix}
        if self._loader_progress:
            kw["progress"] = stage
        if self._loader_preview:
            kw["preview"] = preview
        if self.is_upload(trace_id):  # never the disk cache; one at a time
            stage("waiting")
            with self._upload_gate:
                stage("")
                return self._loader(path, cache=None, **kw)
        if self._loader_writer and self._trace_cache is not None:
            kw["cache_writer"] = self._on_writer_thread
        return self._loader(path, cache=self._trace_cache, **kw)

    def load_status(self, trace_id: str) -> LoadStatus:
        """Where ``trace_id`` stands: in memory, being loaded (stage, rows, seconds), failed, or idle; for
        loaded and failed, ``age_s`` is the seconds since the load ended. Cheap: reads no file (a page polls
        it while it waits)."""
        with self._lock:
            p = self._paths.get(trace_id)
            name = p.name if p is not None else str(trace_id).rpartition("@")[0]
            now = self._clock()
            age = now - self._ended[trace_id] if trace_id in self._ended else float("inf")
            if trace_id in self._loaded:
                return LoadStatus(name, "loaded", age_s=age)
            loading = self._progress.get(trace_id)
            if loading is not None:
                stage_s = now - loading.stage_started_s if loading.stage else 0.0
                return LoadStatus(
                    name,
                    "loading",
                    loading.stage,
                    now - loading.started_s,
                    stage_s,
                    loading.rows,
                    preview=loading.preview,
                )
            if trace_id in self._failed:
                return LoadStatus(name, "failed", error=self._failed[trace_id], age_s=age)
            if trace_id in self._background:  # its thread has not reached the loader yet
                return LoadStatus(name, "loading")
            return LoadStatus(name, "idle")

    def load_in_background(self, trace_id: str) -> None:
        """Start loading ``trace_id`` in a thread of its own unless it is in memory or being loaded (a page's
        views then return at once, and the page polls ``load_status`` instead of holding connections open).
        The outcome is in ``load_status``; a bug is logged."""
        with self._lock:
            if trace_id in self._loaded or trace_id in self._progress or trace_id in self._background:
                return
            self._background.add(trace_id)

        def run() -> None:
            try:
                self.get(trace_id)
            except TraceError:  # recorded by get for the page's status
                pass
            except Exception:
                log.exception("loading %s failed", trace_id)
            finally:
                with self._lock:
                    self._background.discard(trace_id)

        threading.Thread(target=run, name="tracedash-load", daemon=True).start()

    # ----- cache entries written after the page is served ------------------------------------
    def _on_writer_thread(self, write, what: str = "writing a cache entry") -> None:
        """Run ``write`` (a new cache entry's write, or other work a served trace can wait for) on the store's
        writer thread; a failure is logged."""

        def run() -> None:
            try:
                write()
            except Exception:  # the trace is served all the same; the next load builds the entry again
                log.exception("%s failed", what)

        with self._lock:
            if self._writer is None:
                self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracedash-cache-write")
            future = self._writer.submit(run)
            self._writes.add(future)
        future.add_done_callback(self._write_done)

    def _write_done(self, future: Future) -> None:
        with self._lock:
            self._writes.discard(future)

    def flush_cache_writes(self, timeout: float | None = None) -> bool:
        """Wait until every cache write asked for so far has finished (or ``timeout`` seconds); returns
        whether none is left."""
        with self._lock:
            pending = set(self._writes)
        return not wait_futures(pending, timeout=timeout).not_done

    def is_loaded(self, trace_id: str) -> bool:
        """Whether ``trace_id`` is in memory now (``get`` returns it without reading a file)."""
        with self._lock:
            return trace_id in self._loaded

    def _evict(self, keep: str) -> None:
        while self.memory_bytes() > self.memory_limit and len(self._loaded) > 1:
            victim = next(t for t in self._loaded if t != keep)
            del self._loaded[victim]
            log.info("evicted %s from memory", victim)

    def memory_bytes(self) -> int:
        """Bytes held by loaded traces (see ``trace_nbytes``)."""
        with self._lock:
            return sum(size for _, size in self._loaded.values())

    def stats(self) -> dict:
        """Served/loaded counts and memory figures, for ``/healthz`` (uploads are not counted: their
        number is nobody else's business)."""
        with self._lock:
            listed = sum(1 for t in self._paths if not self.is_upload(t))
            return {
                "traces": listed,
                "loaded": len(self._loaded),
                "loads": self.loads,
                "memory_bytes": self.memory_bytes(),
                "memory_limit_bytes": self.memory_limit,
                "cache_writes_pending": len(self._writes),
            }

    # ----- uploads ----------------------------------------------------------------------------
    @property
    def upload_dir(self) -> Path | None:
        """The private directory uploads are kept in (None: uploads are off)."""
        return self._upload_dir

    def add_upload(self, file: Path) -> str:
        """Serve a file already written inside the upload directory; returns its id.

        Raises:
            TraceError: uploads are off, or the file is not inside the upload directory.
        """
        if self._upload_dir is None:
            raise TraceError("uploads are turned off on this server")
        real = Path(file).resolve()
        if not is_inside(real, self._upload_dir) or not real.is_file():
            raise TraceError("an upload must be stored in the server's upload directory")
        with self._lock:
            return self._register(real)

    def remove_upload(self, trace_id: str) -> None:
        """Forget an uploaded trace and delete its file (and its per-upload folder)."""
        with self._lock:
            p = self._paths.pop(trace_id, None)
            self._loaded.pop(trace_id, None)
            for key in [k for k, t in self._by_path.items() if t == trace_id]:
                del self._by_path[key]
        if p is not None and self._upload_dir is not None and is_inside(p, self._upload_dir):
            shutil.rmtree(p.parent if p.parent != self._upload_dir else p, ignore_errors=True)
