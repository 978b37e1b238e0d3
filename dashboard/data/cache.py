"""Columnar cache of loaded nsys traces (Parquet via pyarrow) in a user cache directory.

An entry is keyed by the trace file's identity: resolved path, size, mtime and a SHA-256 of its
first 64 KiB (the SQLite header and first pages), plus the cache format version. A changed file
gets a new key, so a stale entry is never used. Entries are written to a temporary folder and
renamed into place (atomic); an entry that cannot be read back in full is deleted and rebuilt,
never trusted. A cache folder that cannot be written (read-only, full disk) degrades to no cache
with one warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas and the model load lazily: a warm `summarize` never imports them
    from dashboard.model import TraceBundle

from dashboard.data.memory import release_freed_arrow_memory

log = logging.getLogger(__name__)

CACHE_FORMAT = 16  # bump whenever a frame schema, the loader's output or a cached summary's text changes
HEADER_BYTES = 64 * 1024
ENV_DIR = "TRACEDASH_CACHE_DIR"
FRAME_NAMES = ("kernels", "api_calls", "nvtx_ranges", "nvtx_marks", "memops", "graph_launches")


PREVIEW_COLUMNS = ("start_ns", "end_ns", "device_id")  # what analysis.preview reads of the kernels


def _schemas() -> dict[str, dict[str, str]]:
    from dashboard import model

    return {
        "kernels": model.KERNELS,
        "api_calls": model.API_CALLS,
        "nvtx_ranges": model.NVTX_RANGES,
        "nvtx_marks": model.NVTX_MARKS,
        "memops": model.MEMOPS,
        "graph_launches": model.GRAPH_LAUNCHES,
    }


_TO_PANDAS = {"self_destruct": True, "split_blocks": True}  # pyarrow's Table.to_pandas options for low memory


def default_cache_dir() -> Path:
    """``$TRACEDASH_CACHE_DIR`` if set, else the platform's user cache folder for tracedash."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    import platformdirs

    return Path(platformdirs.user_cache_dir("tracedash", appauthor=False))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_identity(path: Path) -> str:
    """Hex key of a file's identity (path, size, mtime, hash of the first 64 KiB, cache format)."""
    p = Path(path).resolve()
    st = p.stat()
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        h.update(fh.read(HEADER_BYTES))
    ident = f"{CACHE_FORMAT}|{p}|{st.st_size}|{st.st_mtime_ns}|{h.hexdigest()}"
    return hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def cached_summary_text(cache: "TraceCache", path: Path, dispatch_prefix: str) -> str | None:
    """The cached ``summarize`` output of ``path`` for ``dispatch_prefix``, or None. A file another program is
    writing is refused first (``side_files.check_no_writer``), never answered from an older summary. Needs
    only the standard library: a warm ``summarize`` answers before the loaders and pandas are imported.

    Raises:
        TraceFormatError: a writer's side file is next to ``path``.
    """
    from dashboard.loaders.side_files import check_no_writer

    check_no_writer(path)
    return cache.load_summary_text(path, dispatch_prefix) if path.is_file() else None


class TraceCache:
    """Load-or-build cache of TraceBundles and summary JSON texts.

    Args:
        root: cache folder (default ``default_cache_dir()``); created on first write.
        enabled: False turns every call into a pass-through (``--no-cache``).
    """

    def __init__(self, root: Path | None = None, *, enabled: bool = True):
        self.root = Path(root) if root is not None else default_cache_dir()
        self.enabled = enabled
        self._warned = False

    @property
    def entries_dir(self) -> Path:
        """Folder holding one sub-folder per cached trace."""
        return self.root / f"v{CACHE_FORMAT}"

    def _warn(self, message: str) -> None:
        if not self._warned:
            warnings.warn(f"tracedash cache disabled: {message}", RuntimeWarning, stacklevel=3)
            self._warned = True
        self.enabled = False

    def load_bundle(
        self,
        path: Path,
        build: Callable[[Path], TraceBundle],
        *,
        progress: Callable[[str], None] | None = None,
        defer: Callable[[Callable[[], None]], object] | None = None,
        on_kernel_times: Callable | None = None,
    ) -> tuple[TraceBundle, bool]:
        """Return ``(bundle, from_cache)``: the cached frames of ``path``, or ``build(path)`` stored.

        Args:
            progress: called with the stage ``"cached frames"`` as a stored entry is read.
            defer: runs the write of a new entry: called with a function of no arguments that writes it
                (e.g. an executor's ``submit``), so the bundle is returned before it is written; None writes
                it before returning (a command that exits right after must not lose it). Either way the
                entry appears whole or not at all (see ``_write``).
            on_kernel_times: as ``load_nsys_sqlite``'s: called with the cached kernels' ``start_ns``, ``end_ns``
                and ``device_id`` columns before the frames are read (a hit only; ``build`` gets its own); when it
                returns a thread (``data.trace``'s preview), the frames are read once that thread ends.

        Raises:
            Whatever ``build`` raises (the trace's own errors); cache problems never raise.
        """
        if not self.enabled:
            return build(path), False
        try:
            key = file_identity(path)
        except OSError:
            return build(path), False
        entry = self.entries_dir / key
        # An entry may hold only the output of `summarize` (no frames yet): not an error, just a miss.
        if (entry / "meta.json").is_file():
            if progress is not None:
                progress("cached frames")
            bundle = self._read(entry, on_kernel_times)
            if bundle is not None:
                return bundle, True
            shutil.rmtree(entry, ignore_errors=True)  # corrupt: rebuild, never trust
        bundle = build(path)
        if defer is None:
            self._write(entry, bundle)
        else:
            defer(partial(self._write, entry, bundle))
        return bundle, False

    def has_bundle(self, path: Path) -> bool:
        """Whether ``cached_bundle`` may find frames of ``path``: an entry's metadata is there (nothing is read, and
        pandas is not imported)."""
        if not self.enabled:
            return False
        try:
            return (self.entries_dir / file_identity(path) / "meta.json").is_file()
        except OSError:
            return False

    def cached_bundle(self, path: Path) -> TraceBundle | None:
        """The cached frames of ``path`` if a valid entry exists (never builds one)."""
        if not self.enabled:
            return None
        try:
            entry = self.entries_dir / file_identity(path)
        except OSError:
            return None
        return self._read(entry) if (entry / "meta.json").is_file() else None

    def _read(self, entry: Path, on_kernel_times: Callable | None = None) -> TraceBundle | None:
        import pandas as pd

        from dashboard.model import RowAccount, TraceBundle, TraceMeta, conform

        try:
            meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
            if meta.get("cache_format") != CACHE_FORMAT:
                return None
            for name in FRAME_NAMES:  # a flipped byte in a data page must not become a wrong answer
                if _sha256(entry / f"{name}.parquet") != meta["sha256"][name]:
                    raise ValueError(f"{name}.parquet does not match its checksum")
            if on_kernel_times is not None:  # three columns first: a page previews them before the rest is read
                times = pd.read_parquet(entry / "kernels.parquet", columns=list(PREVIEW_COLUMNS))
                previewing = on_kernel_times(*(times[c] for c in PREVIEW_COLUMNS))
                del times
                # Beside the frames' read the preview's thread shared the cores and the memory bus with it and
                # often came only as the read ended; first, it is on the page long before (docs/benchmarks.md).
                if isinstance(previewing, threading.Thread):
                    previewing.join()
            frames = {}
            for name, schema in _schemas().items():
                # Arrow's copy of each column is freed as pandas takes it, and the pool's freed pages go back to
                # the OS before the next frame: a 10M-kernel entry read peaked at twice its size otherwise.
                frame = pd.read_parquet(entry / f"{name}.parquet", to_pandas_kwargs=_TO_PANDAS)
                frames[name] = conform(frame, schema)
                del frame
                release_freed_arrow_memory()
            m = meta["meta"]
            m["gpus"] = {int(k): v for k, v in m["gpus"].items()}
            m["tables"] = tuple(m["tables"])
            m["thread_names"] = {int(k): v for k, v in m.get("thread_names", {}).items()}
            m["warnings"] = tuple(m.get("warnings", ()))
            m["accounts"] = tuple(
                RowAccount(**{**a, "skipped": tuple((str(r), int(n)) for r, n in a["skipped"])})
                for a in m.get("accounts", ())
            )
            m["launches_by_pid"] = tuple(tuple(int(v) for v in t) for t in m.get("launches_by_pid", ()))
            m["unanalysed_device"] = tuple((str(w), int(n)) for w, n in m.get("unanalysed_device", ()))
            m["rank_devices"] = {int(k): (int(v[0]), int(v[1])) for k, v in m.get("rank_devices", {}).items()}
            m["rank_pids"] = {int(k): (int(v[0]), int(v[1])) for k, v in m.get("rank_pids", {}).items()}
            return TraceBundle(meta=TraceMeta(**m), **frames)
        except Exception as exc:  # noqa: BLE001 - any unreadable entry is rebuilt
            log.warning("ignoring unreadable cache entry %s: %s", entry.name, exc)
            return None

    def _write(self, entry: Path, bundle: TraceBundle) -> None:
        if bundle.api_totals is not None:  # a summary's read: its CUDA API calls are totals, not the rows a view needs
            raise ValueError("a bundle read for a summary (lean) is never cached")
        tmp = None
        try:
            self.entries_dir.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{entry.name}-", dir=self.entries_dir))
            digests = {}
            for name in FRAME_NAMES:
                getattr(bundle, name).to_parquet(tmp / f"{name}.parquet", index=False, compression=None)
                release_freed_arrow_memory()  # the frame's Arrow copy, before the next frame's
                digests[name] = _sha256(tmp / f"{name}.parquet")
            (tmp / "meta.json").write_text(
                json.dumps({"cache_format": CACHE_FORMAT, "meta": asdict(bundle.meta), "sha256": digests}),
                encoding="utf-8",
            )
            try:
                os.rename(tmp, entry)
                tmp = None
            except OSError:  # the entry exists: it holds `summarize` output only, or another process stored it first
                if entry.is_dir() and not (entry / "meta.json").is_file():
                    for name in [f"{n}.parquet" for n in FRAME_NAMES] + ["meta.json"]:  # meta.json last
                        os.replace(tmp / name, entry / name)
        except OSError as exc:
            self._warn(f"cannot write to {self.root} ({exc.strerror or exc})")
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def _summary_path(self, path: Path, dispatch_prefix: str) -> Path:
        tag = hashlib.sha256(dispatch_prefix.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return self.entries_dir / file_identity(path) / f"summary-{tag}.json"

    def load_summary_text(self, path: Path, dispatch_prefix: str) -> str | None:
        """The cached ``summarize`` output for ``path`` and prefix, or None."""
        if not self.enabled:
            return None
        try:
            stored = json.loads(self._summary_path(path, dispatch_prefix).read_text(encoding="utf-8"))
            text = stored["text"]
            if hashlib.sha256(text.encode("utf-8")).hexdigest() != stored["sha256"]:
                return None  # damaged: recompute, never trust
            json.loads(text)
            return text
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store_summary_text(self, path: Path, dispatch_prefix: str, text: str) -> None:
        """Store ``summarize`` output next to the cached frames (atomic replace)."""
        if not self.enabled:
            return
        try:
            target = self._summary_path(path, dispatch_prefix)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-summary-", dir=target.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "text": text}, fh)
            os.replace(tmp, target)
        except OSError as exc:
            self._warn(f"cannot write to {self.root} ({exc.strerror or exc})")

    def content_digest(self, path: Path) -> str | None:
        """The SHA-256 (hex) of the whole file stored by ``store_content_digest`` under the file's
        identity key (the same key as its Parquet entry), or None."""
        if not self.enabled:
            return None
        try:
            text = (self.entries_dir / f"{file_identity(path)}.sha256").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return text if re.fullmatch(r"[0-9a-f]{64}", text) else None

    def store_content_digest(self, path: Path, digest: str) -> None:
        """Keep the whole-file SHA-256 of ``path`` beside its entry (atomic replace); never raises."""
        if not self.enabled:
            return
        try:
            self.entries_dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-digest-", dir=self.entries_dir)
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(digest)
            os.replace(tmp, self.entries_dir / f"{file_identity(path)}.sha256")
        except OSError as exc:
            self._warn(f"cannot write to {self.root} ({exc.strerror or exc})")

    def clear(self) -> int:
        """Delete every cached entry (and nothing else); returns how many were removed."""
        if not self.root.is_dir():
            return 0
        n = 0
        for child in self.root.iterdir():
            if not (child.is_dir() and re.fullmatch(r"v\d+", child.name)):
                continue
            for entry in child.iterdir():
                if entry.is_file() and (
                    re.fullmatch(r"[0-9a-f]{32}\.sha256", entry.name) or entry.name.startswith(".tmp-")
                ):
                    entry.unlink(missing_ok=True)
                    continue
                if entry.is_dir() and (re.fullmatch(r"[0-9a-f]{32}", entry.name) or entry.name.startswith(".tmp-")):
                    shutil.rmtree(entry, ignore_errors=True)
                    n += 0 if entry.exists() or entry.name.startswith(".tmp-") else 1
            try:
                child.rmdir()
            except OSError:
                pass
        return n
