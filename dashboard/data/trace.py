"""A loaded trace as every view needs it: the Summary model, plus event frames for nsys input."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from dashboard.analysis.preview import LoadPreview, load_preview
from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX, KernelSummary, kernel_summary, summarize
from dashboard.data.cache import TraceCache
from dashboard.data.memory import release_freed_arrow_memory
from dashboard.errors import TraceError, TraceFormatError, clean_message
from dashboard.loaders import load_kineto_json, load_nsys_sqlite, load_summary_json, sniff_format
from dashboard.loaders.nsys_rep import export_report
from dashboard.loaders.side_files import check_no_writer
from dashboard.loaders.summary_json import summary_meta
from dashboard.model import Summary, TraceBundle, TraceMeta

__all__ = ["LoadStatus", "LoadedTrace", "load_trace"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedTrace:
    """A trace as the views need it: always a Summary, plus event frames for nsys input.

    ``bundle`` is None for a summary JSON (no intervals); views that need intervals say so.
    """

    path: Path
    meta: TraceMeta
    summary: Summary
    bundle: TraceBundle | None
    dispatch_prefix: str

    @property
    def name(self) -> str:
        """The file's base name."""
        return self.path.name


@dataclass(frozen=True)
class LoadStatus:
    """Where the load of one trace stands, for a page waiting on it (``TraceStore.load_status``).

    ``state``: ``"idle"`` (not in memory and no load running), ``"loading"``, ``"loaded"`` or
    ``"failed"`` (the last load raised ``error``). While loading: ``stage`` is the stage running, as
    ``load_trace`` reports it (``""`` before the first, ``"waiting"`` while another upload loads),
    ``elapsed_s`` the seconds since the load began, ``stage_s`` since the stage began, ``rows`` the
    rows the stage reads where the loader says (``(("kernels", 2000000),)``), ``preview`` the kernel rows'
    preview once the loader has read their times (``analysis.preview``; None before, and for inputs without
    one). Loaded or failed: ``age_s``, the seconds since that load ended (``inf``: not known).
    """

    name: str
    state: str
    stage: str = ""
    elapsed_s: float = 0.0
    stage_s: float = 0.0
    rows: tuple[tuple[str, int], ...] = ()
    error: str = ""
    age_s: float = 0.0
    preview: LoadPreview | None = None


def load_trace(
    path: str | os.PathLike,
    *,
    dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX,
    cache: TraceCache | None = None,
    progress=None,
    lean: bool = False,
    cache_writer=None,
    preview=None,
    started=None,
) -> LoadedTrace:
    """Load a trace file of either supported format.

    Args:
        path: an nsys SQLite export or a seed-format summary JSON (any extension).
        dispatch_prefix: NVTX name prefix of dispatch marks (used for nsys input).
        cache: where to keep the columnar copy of an nsys export (None: no cache).
        progress: optional callable taking a stage name, called as each stage starts (and a ``rows``
            keyword if it takes one: see ``load_nsys_sqlite``). The stages: ``"nsys export"`` (a report),
            ``"cached frames"``, the SQLite reader's (``"names"``, ``"kernels and CUDA API calls"``,
            ``"NVTX"``, ``"memcpy/memset"``, ``"graphs"``), ``"PyTorch trace"``, ``"summary JSON"``, then
            ``"summary"`` (the Summary model computed from the frames).
        lean: for a summary only: use cached frames if there are any, else read just the columns
            the summary needs and do not build the frame cache (the dashboard builds it).
        cache_writer: how a new cache entry is written (``TraceCache.load_bundle``'s ``defer``): None
            before returning (the CLI); the server passes a background writer.
        preview: optional callable taking a ``LoadPreview`` of the kernel rows, computed in a thread of its own
            as soon as the loader has their times (an nsys export or its cached frames, not ``lean``); never
            called when the preview cannot be computed. The server shows it while the rest loads.
        started: with ``lean``, the reads of this nsys export that ``loaders.nsys_reads.begin_reads`` began (a cold
            ``summarize`` starts them before pandas is imported, having found no cached frames); closed here.

    Raises:
        TraceNotFoundError, TraceFormatError: with a message naming the file and the problem.
    """
    p = Path(path)
    try:
        return _load(p, dispatch_prefix, cache, progress, lean, cache_writer, _preview_from_times(preview), started)
    except TraceError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, ArithmeticError, MemoryError, OSError, sqlite3.Error) as exc:
        # A file this malformed is still the input's fault: say so, never show a traceback.
        raise TraceFormatError(f"{p.name}: cannot be read: {clean_message(exc)}") from exc
    finally:
        if started is not None:
            started.close()  # already closed when the loader took it; else its threads are waited for here
        release_freed_arrow_memory()


def _preview_from_times(preview):
    """The loaders' ``on_kernel_times`` for a ``preview`` callback (None without one): the preview is computed in
    a daemon thread, which it returns: a SQLite read goes on meanwhile, a cache read waits for it
    (``TraceCache.load_bundle``); a failure there is logged, never the load's."""
    if preview is None:
        return None

    def on_times(start_ns, end_ns, device_id) -> threading.Thread:
        def run() -> None:
            try:
                preview(load_preview(start_ns, end_ns, device_id))
            except Exception:  # noqa: BLE001 - a preview is optional: the load goes on without it
                log.exception("the load preview failed")

        thread = threading.Thread(target=run, name="tracedash-preview", daemon=True)
        thread.start()
        return thread

    return on_times


def _load(
    p: Path,
    dispatch_prefix: str,
    cache: TraceCache | None,
    progress,
    lean: bool,
    cache_writer=None,
    on_kernel_times=None,
    started=None,
) -> LoadedTrace:
    step = progress or (lambda stage: None)
    kind = sniff_format(p)
    early: list[KernelSummary] = []  # a lean read's kernel side of the summary, made while the API totals are read

    def early_summary(kernels, nvtx_ranges, nvtx_marks) -> None:
        early.append(kernel_summary(kernels, nvtx_ranges, nvtx_marks, dispatch_prefix))

    if kind == "nsys-sqlite":
        check_no_writer(p)  # before the cache: a file being written must not be served from an old copy

        def build(path: Path):
            return load_nsys_sqlite(path, progress=progress, on_kernel_times=on_kernel_times)

        if lean:  # a read begun by the caller: it found no cached frames
            bundle = (cache.cached_bundle(p) if cache is not None and started is None else None) or load_nsys_sqlite(
                p, progress=progress, lean=True, started=started, before_api=early_summary
            )
        elif cache is not None:
            bundle = cache.load_bundle(
                p, build, progress=progress, defer=cache_writer, on_kernel_times=on_kernel_times
            )[0]
        else:
            bundle = build(p)
    elif kind == "kineto-json":

        def build_kineto(path: Path):
            step("PyTorch trace")
            return load_kineto_json(path)

        if cache is not None:
            bundle = cache.load_bundle(p, build_kineto, progress=progress, defer=cache_writer)[0]
        else:
            bundle = build_kineto(p)
    elif kind == "nsys-rep":
        bundle = _load_report(p, cache, progress, cache_writer, on_kernel_times)
    else:
        step("summary JSON")
        summary = load_summary_json(p)
        meta = summary_meta(summary, p.name)
        return LoadedTrace(p, meta, summary, None, dispatch_prefix)
    step("summary")
    summary = summarize(bundle, dispatch_prefix=dispatch_prefix, kernel_part=early[0] if early else None)
    return LoadedTrace(p, bundle.meta, summary, bundle, dispatch_prefix)


def _load_report(p: Path, cache: TraceCache | None, progress, cache_writer=None, on_kernel_times=None) -> TraceBundle:
    """An .nsys-rep report: exported with the installed nsys into a temporary folder inside the cache
    folder (the system temp folder without a usable cache; never next to the report), loaded as
    SQLite, then the export is deleted: the Parquet cache keeps the frames. ``meta.source`` is the
    report's name."""
    import dataclasses
    import tempfile

    def build(path: Path) -> TraceBundle:
        if progress:
            progress("nsys export")
        parent = None
        if cache is not None and cache.enabled:
            try:
                cache.root.mkdir(parents=True, exist_ok=True)
                parent = cache.root
            except OSError:
                parent = None
        with tempfile.TemporaryDirectory(prefix=".nsys-rep-", dir=parent) as tmp:
            bundle = load_nsys_sqlite(
                export_report(path, Path(tmp), "export"), progress=progress, on_kernel_times=on_kernel_times
            )
        return dataclasses.replace(bundle, meta=dataclasses.replace(bundle.meta, source=path.name))

    if cache is None:
        return build(p)
    return cache.load_bundle(p, build, progress=progress, defer=cache_writer, on_kernel_times=on_kernel_times)[0]
