"""Many traces of one multi-rank run: per-file summaries (in parallel on Dask) and the merged view.

``summary_text`` is the per-file work of ``tracedash summarize``, the same for one file and for
many; ``summarize_many`` runs it once per file on a ``dask.distributed`` cluster (a local
cluster of processes by default, or an existing scheduler) and gathers the results in input
order. ``load_ranks`` opens several nsys exports as the ranks of one view (see
``dashboard.analysis.ranks.merge_ranks``).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from dashboard import units
from dashboard.analysis.ranks import declared_ranks, merge_ranks, rank_nvtx_stats, rank_table
from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX, summarize, summary_to_dict
from dashboard.data.cache import TraceCache, cached_summary_text
from dashboard.data.trace import LoadedTrace, load_trace
from dashboard.errors import TraceError, TraceFormatError, clean_message
from dashboard.loaders.summary_json import parse_summary
from dashboard.model import Summary

CONNECT_TIMEOUT = "10s"  # how long to try an existing scheduler before giving up

__all__ = ["FileSummary", "summary_text", "summarize_many", "summaries_of", "format_rank_table", "load_ranks"]


def summary_text(path: Path, dispatch_prefix: str, cache: TraceCache, progress=None) -> str:
    """The ``tracedash summarize`` output of one file: seed-format JSON, indent 2, final newline.

    Served from the cache when the same file and prefix were summarised before (``cached_summary_text``);
    otherwise computed (``computed_summary_text``).

    Raises:
        TraceNotFoundError, TraceFormatError: the file is missing or unreadable.
    """
    path = Path(path)
    text = cached_summary_text(cache, path, dispatch_prefix)
    return text if text is not None else computed_summary_text(path, dispatch_prefix, cache, progress)


def computed_summary_text(path: Path, dispatch_prefix: str, cache: TraceCache, progress=None, started=None) -> str:
    """``summary_text`` without the cache lookup: the trace loaded lean (through the frame cache, see
    ``load_trace``; ``started``: its reads, begun by the caller), summarised, and the text stored in the cache."""
    trace = load_trace(
        path, dispatch_prefix=dispatch_prefix, cache=cache, progress=progress, lean=True, started=started
    )
    text = json.dumps(summary_to_dict(trace.summary), indent=2) + "\n"
    if trace.bundle is not None:
        cache.store_summary_text(path, dispatch_prefix, text)
    return text


def _summarize_task(path: str, dispatch_prefix: str, cache_dir: str, use_cache: bool) -> tuple[str | None, str | None]:
    """One Dask task: ``(text, None)`` or ``(None, error message)``; never raises (the other
    files must still finish, and a message pickles where an exception might not)."""
    try:
        return summary_text(Path(path), dispatch_prefix, TraceCache(Path(cache_dir), enabled=use_cache)), None
    except TraceError as exc:
        return None, str(exc)
    except Exception as exc:  # a bug, not bad input: still one line
        return None, f"internal error: {clean_message(exc)}"


@dataclass(frozen=True)
class FileSummary:
    """The outcome for one input file: ``text`` (summarize output) or ``error`` (one line), and the
    rank the file declares (Kineto ``distributedInfo.rank``; None when it declares none)."""

    path: Path
    text: str | None
    error: str | None
    rank: int | None = None


def declared_rank(path: Path) -> int | None:
    """The rank a trace file declares: ``distributedInfo.rank`` of a Kineto trace (where PyTorch
    writes it: before or after ``traceEvents``), None for any other file or when absent/unreadable.
    Reads the file's text, not its events."""
    import re

    from dashboard.loaders import sniff_format
    from dashboard.loaders.kineto_json import read_json_text

    try:
        if sniff_format(Path(path)) != "kineto-json":
            return None
        text = read_json_text(Path(path))
    except (TraceError, OSError):
        return None
    key = text.rfind(b'"distributedInfo"')
    if key < 0:
        return None
    m = re.compile(rb'\s*:\s*').match(text, key + len(b'"distributedInfo"'))
    if not m:
        return None
    try:
        info, _ = json.JSONDecoder().raw_decode(text[m.end() : m.end() + (1 << 20)].decode("utf-8", "replace"))
    except ValueError:
        return None
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if type(rank) is int and rank >= 0 else None


def ranks_of(results: list[FileSummary]) -> tuple[list[int], list[str]]:
    """The rank of each result (``analysis.ranks.declared_ranks`` of what the files declare) and
    the warnings that choice gives."""
    return declared_ranks([r.rank for r in results], [r.path.name for r in results])


def _local_client(n_workers: int, processes: bool):
    from dask.distributed import Client, LocalCluster

    # Every listening socket on a free loopback port: Dask's default binds its HTTP server to port 8787
    # (on all interfaces for thread workers), and its scheduler takes tasks from whoever connects.
    loopback = "127.0.0.1:0"
    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=processes,
        host="127.0.0.1" if processes else None,
        dashboard_address=None,  # threads: inproc
        scheduler_kwargs={"dashboard": False, "dashboard_address": loopback},
        worker_dashboard_address=loopback,
        silence_logs=logging.ERROR,
    )
    return Client(cluster), cluster


def dask_client(scheduler: str | None, n_workers: int, processes: bool = True):
    """``(client, local cluster or None)``: a client of the scheduler at ``scheduler``, or of a new local
    cluster of ``n_workers`` (see ``_local_client``); the caller closes both.

    Raises:
        TraceError: the scheduler cannot be reached.
    """
    from dask.distributed import Client

    if scheduler:
        try:
            return Client(scheduler, timeout=CONNECT_TIMEOUT), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise TraceError(f"cannot reach the Dask scheduler at {scheduler}: {clean_message(exc)}") from None
    return _local_client(max(1, n_workers), processes)


def summarize_many(
    paths: list[Path],
    *,
    dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX,
    cache: TraceCache | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    processes: bool = True,
) -> list[FileSummary]:
    """Summarise every file as one Dask task (``summary_text``), results in input order.

    Args:
        paths: the input files (rank order).
        cache: the trace cache every worker uses (None: no cache).
        scheduler: address of an existing ``dask.distributed`` scheduler (``tcp://host:8786``);
            None starts a local cluster of ``n_workers`` processes with one thread each, no
            dashboard, every socket on a free loopback port and silenced logs, closed on return.
        n_workers: local workers (default: the usable CPU cores, at most one per file).
        processes: local workers as processes (True, the default) or threads (tests).

    Returns:
        One FileSummary per path, in the order given. A file that fails has ``error`` set;
        the others still finish.

    Raises:
        TraceError: the scheduler cannot be reached.
    """
    cache = cache or TraceCache(enabled=False)
    args = (dispatch_prefix, str(cache.root), bool(cache.enabled))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    client, cluster = dask_client(scheduler, max(1, min(n_workers or cores, len(paths))), processes)
    try:
        futures = [
            client.submit(_summarize_task, str(p), *args, key=f"summarize-{i}-{Path(p).name}", pure=False)
            for i, p in enumerate(paths)
        ]
        results = []
        for p, fut in zip(paths, futures):
            try:
                results.append(fut.result())
            except Exception as exc:  # the task never ran to its end (worker killed, e.g. out of memory)
                results.append((None, f"{Path(p).name}: the Dask task failed: {clean_message(exc)}"))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return [
        FileSummary(Path(p), text, error, declared_rank(p) if text is not None else None)
        for p, (text, error) in zip(paths, results)
    ]


def summaries_of(results: list[FileSummary]) -> list[Summary | None]:
    """Each successful result's summary text parsed back into a Summary (None for failures).

    Raises:
        TraceFormatError: a text is not a valid summary (never for summarize's own output).
    """
    return [None if r.text is None else parse_summary(json.loads(r.text), r.path.name) for r in results]


def short_reason(error: str, name: str, limit: int = 80) -> str:
    """A failed file's error without its leading ``PATH: `` (the table names the file), at most ``limit`` chars."""
    head, sep, rest = error.partition(": ")
    if sep and (head == name or head.endswith("/" + name) or head.endswith("\\" + name)):
        error = rest
    return clean_message(error, limit)


def _seconds(ns) -> str:
    """A table time in seconds with 6 decimals; "n/a" for an unknown one (GPU work not captured)."""
    return "n/a" if ns is pd.NA or ns is None else f"{ns / 1e9:.6f}"


def format_rank_table(table, failed: dict[int, tuple[str, str]] | None = None) -> str:
    """The combined per-rank table as aligned text lines (a ``rank_table`` frame in, a string out).

    Columns: rank, file, span, busy, idle, utilisation, kernels, top kernel (with its total
    time); the slowest rank is marked ``<- slowest``. Times in seconds with 6 decimals.
    ``failed`` maps rank -> (file name, error) for files that could not be summarised: each gets
    its row, in rank order, reading ``failed: <short reason>`` after the file name.
    """
    header = ["rank", "file", "span_s", "busy_s", "idle_s", "util", "kernels", "top kernel"]
    rows = [
        [
            str(r.rank),
            r.file,
            _seconds(r.span_ns),
            _seconds(r.busy_ns),
            _seconds(r.idle_ns),
            units.pct(r.utilisation_pct, unit="%"),
            f"{r.kernel_count:,}",
            f"{r.top_kernel} ({r.top_kernel_ns / 1e9:.6f} s)" if r.top_kernel else "-",
        ]
        for r in table.itertuples(index=False)
    ]
    failed = failed or {}
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    widths[0] = max([widths[0], *(len(str(k)) for k in failed)])
    widths[1] = max([widths[1], *(len(f) for f, _ in failed.values())])
    right = {0, 2, 3, 4, 5, 6}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    body = [
        (rank, line(cells).rstrip() + ("  <- slowest" if slow else ""))
        for rank, cells, slow in zip(table["rank"].tolist(), rows, table["slowest"].tolist())
    ]
    body += [
        (rank, line([str(rank), name]) + "  failed: " + short_reason(error, name))
        for rank, (name, error) in failed.items()
    ]
    return "\n".join([line(header).rstrip(), *(text for _, text in sorted(body, key=lambda b: b[0]))]) + "\n"


def _json_value(v):
    """A table cell as JSON takes it: numpy scalars as Python ones, NaN (n/a, e.g. the utilisation of a
    rank without GPU work) as None: ``json.dumps`` would write ``NaN``, which is not JSON."""
    if v is pd.NA:  # an unknown time (GPU work not captured)
        return None
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and v != v else v


def combined_json(results: list[FileSummary], *, include_summaries: bool) -> dict:
    """The ``summarize --json`` document of a multi-file run.

    Keys: ``ranks`` (rank_table rows, times as integer ns, n/a values as null), ``slowest_rank`` (int or None),
    ``errors`` (``{rank, file, error}`` per failed file), ``warnings`` (how ranks were assigned,
    see ``ranks_of``) and, when ``include_summaries``,
    ``summaries`` (``{rank, file, summary}`` with the seed-format summary of each good file).
    """
    ranks, warnings = ranks_of(results)
    table = rank_table(summaries_of(results), [r.path.name for r in results], ranks)
    doc = {
        "ranks": [{k: _json_value(v) for k, v in row.items()} for row in table.to_dict("records")],
        "slowest_rank": int(table.loc[table["slowest"], "rank"].iloc[0]) if table["slowest"].any() else None,
        "errors": [{"rank": i, "file": r.path.name, "error": r.error} for i, r in zip(ranks, results) if r.error],
        "warnings": warnings,
    }
    if include_summaries:
        doc["summaries"] = [
            {"rank": i, "file": r.path.name, "summary": json.loads(r.text)}
            for i, r in sorted(zip(ranks, results), key=lambda t: t[0])
            if r.text is not None
        ]
    return doc


def load_ranks(
    paths: list[Path], *, dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX, cache: TraceCache | None = None
) -> LoadedTrace:
    """Open several traces (nsys exports, Kineto traces) as the ranks of one view.

    A Kineto file holding several ranks is split into them (``load_kineto_ranks``). Each file's
    rank is what it declares (Kineto ``distributedInfo.rank``) when every file declares
    a different one, else its position in ``paths`` (see ``analysis.ranks.declared_ranks``; a
    warning in ``meta.warnings`` says which and why). Ranks are merged in rank order.

    Returns:
        A LoadedTrace whose bundle is ``merge_ranks`` of the files' bundles (each rank on its
        own session origin), its summary computed on the merged bundle with the NVTX statistics
        per rank (``rank_nvtx_stats``: each rank's ranges against its own kernels, names
        ``"rank r · name"``), and ``path`` a pseudo-path naming the ranks
        (``ranks(a.sqlite+b.sqlite)``) used for titles.

    Raises:
        TraceNotFoundError, TraceFormatError: a file is missing or unreadable, or is a summary
            JSON (no intervals to draw as a rank lane).
    """
    from dashboard.loaders.kineto_json import MultiRankTraceError, load_kineto_ranks

    bundles, names = [], []
    for p in map(Path, paths):
        try:
            trace = load_trace(p, dispatch_prefix=dispatch_prefix, cache=cache)
        except MultiRankTraceError:  # one Kineto file holding several ranks: split into them
            parts = load_kineto_ranks(p)
            bundles.extend(parts)
            names.extend(b.meta.source for b in parts)
            continue
        if trace.bundle is None:
            raise TraceFormatError(
                f"{p.name}: a summary JSON has no intervals: only nsys exports can be opened as ranks"
            )
        bundles.append(trace.bundle)
        names.append(p.name)
    ranks, warnings = declared_ranks([b.meta.rank for b in bundles], names)
    order = sorted(range(len(bundles)), key=lambda i: ranks[i])
    bundle = merge_ranks([bundles[i] for i in order], [names[i] for i in order], [ranks[i] for i in order])
    if warnings:
        bundle = replace(bundle, meta=replace(bundle.meta, warnings=(*warnings, *bundle.meta.warnings)))
    summary = replace(summarize(bundle, dispatch_prefix=dispatch_prefix), nvtx=rank_nvtx_stats(bundle))
    return LoadedTrace(Path(ranks_name(names)), bundle.meta, summary, bundle, dispatch_prefix)


def ranks_name(names: list[str]) -> str:
    """Display name of a group of ranks: ``ranks(a.sqlite+b.sqlite)`` (no path separators)."""
    return "ranks(" + "+".join(n.replace("/", "_") for n in names) + ")"
