"""``tracedash inspect``: what tracedash finds in a trace file of any supported format.

For an nsys SQLite export: the tables and columns, which loader reads which table, and then, from
the loaded events, how every input row was used (``TraceMeta.accounts``), the launch calls and GPU
executions of each process, and the input warnings; an export older than 2021.5 (no version recorded)
is named so, with the schema traits found. An ``.nsys-rep``/``.qdrep`` report is exported once and
described as its export is. For a Kineto trace or a summary JSON: the format, the counts and the
same accounts, launch calls per process and warnings.
"""

from __future__ import annotations

import os
from pathlib import Path

from dashboard.data.cache import TraceCache
from dashboard.loaders import sniff_format
from dashboard.loaders.nsys_sqlite import inspect_export
from dashboard.loaders.nsys_traits import predates_text
from dashboard.model import input_warnings

__all__ = ["inspect_trace", "format_inspect"]

FORMAT_NAMES = {
    "nsys-sqlite": "nsys SQLite export",
    "nsys-rep": "Nsight Systems report (.nsys-rep)",
    "kineto-json": "PyTorch profiler (Kineto) trace",
    "summary-json": "tracedash summary JSON",
}
QDREP_NAME = "Nsight Systems report (.qdrep, the report format of older Nsight Systems)"


def _inspect_report(p: Path, cache: TraceCache | None, info: dict):
    """A report: exported once (as ``load_trace`` exports it: into a folder of ours, never next to the
    report), its export described (nsys version, schema, tables) and loaded; ``info`` gets the
    export's description under the report's own name."""
    import dataclasses
    import tempfile

    from dashboard.data.trace import load_trace
    from dashboard.loaders.nsys_rep import export_report

    parent = None
    if cache is not None and cache.enabled:
        try:
            cache.root.mkdir(parents=True, exist_ok=True)
            parent = cache.root
        except OSError:
            parent = None
    with tempfile.TemporaryDirectory(prefix=".nsys-rep-", dir=parent) as tmp:
        export = export_report(p, Path(tmp), "export")
        info.update({**inspect_export(export), "file": p.name})
        trace = load_trace(export, cache=None)
    meta = dataclasses.replace(trace.meta, source=p.name)
    return dataclasses.replace(trace, path=p, meta=meta, bundle=dataclasses.replace(trace.bundle, meta=meta))


def inspect_trace(path: str | os.PathLike, cache: TraceCache | None = None) -> dict:
    """Describe a trace file.

    Returns:
        dict with ``file``, ``format`` (as ``sniff_format``), ``format_name``; ``counts``
        (events loaded per kind, or the summary's list lengths); ``accounts`` (list of dicts:
        kind, read, loaded, skipped [[rule, count]...], unrecognised); ``processes`` (list of
        dicts pid, launches, gpu_executions, for processes that made launch calls); ``warnings``
        (``input_warnings`` plus kernel rows with unusable times). For an nsys export also
        ``nsys_version``, ``schema_version``, ``tables``, ``rows``, ``loaders`` (see
        ``inspect_export``).

    Raises:
        TraceNotFoundError, TraceFormatError: as ``load_trace`` for the same file.
    """
    from dashboard.data.trace import load_trace

    p = Path(path)
    fmt = sniff_format(p)  # a SQLite name without the header is told so there, as every command tells it
    name = QDREP_NAME if fmt == "nsys-rep" and p.name.lower().endswith(".qdrep") else FORMAT_NAMES.get(fmt, fmt)
    info: dict = {"file": p.name, "format": fmt, "format_name": name}
    if fmt == "nsys-sqlite":
        info.update(inspect_export(p))
        trace = load_trace(p, cache=cache)
    elif fmt == "nsys-rep":
        trace = _inspect_report(p, cache, info)
    else:
        trace = load_trace(p, cache=cache)
    meta, b, s = trace.meta, trace.bundle, trace.summary
    if b is not None:
        info["counts"] = {
            "kernels": len(b.kernels),
            "CUDA API calls": len(b.api_calls),
            "NVTX ranges": len(b.nvtx_ranges),
            "NVTX marks": len(b.nvtx_marks),
            "memcpy/memset": len(b.memops),
            "CUDA graph launches": len(b.graph_launches),
        }
    else:
        info["counts"] = {
            "kernels (kernel_count)": s.kernel_count,
            "CUDA API names": len(s.api),
            "NVTX range names": len(s.nvtx),
            "dispatch marks": len(s.dispatch_timeline),
            "top kernels": len(s.top_kernels),
        }
    info["accounts"] = [
        {
            "kind": a.kind,
            "read": a.read,
            "loaded": a.loaded,
            "skipped": [[rule, n] for rule, n in a.skipped],
            "unrecognised": a.unrecognised,
        }
        for a in meta.accounts
    ]
    info["processes"] = [{"pid": pid, "launches": n, "gpu_executions": e} for pid, n, e in meta.launches_by_pid]
    info["warnings"] = list(s.warnings) if b is not None else list(input_warnings(meta))
    return info


def format_inspect(info: dict) -> str:
    """The text form of ``inspect_trace``'s dict (no final newline)."""
    out = []
    export = "tables" in info  # an nsys export, or the export of a report
    if export:
        version = (
            f"nsys {info['nsys_version']}"
            if info["nsys_version"]
            else predates_text(info["old_schema"])
            if info.get("old_schema")
            else "nsys version unknown"
        )
        head = f"{info['file']}: " + (f"{info['format_name']}, " if info["format"] == "nsys-rep" else "") + version
        out.append(head + (f" (schema {info['schema_version']})" if info["schema_version"] else ""))
    else:
        out.append(f"{info['file']}: {info['format_name']}")
    out += ["", "input rows (read = loaded + skipped + not recognised):"]
    if not info["accounts"]:
        out.append("  none")
    for a in info["accounts"]:
        lost = "".join(f"; {n:,} skipped: {rule}" for rule, n in a["skipped"])
        lost += f"; {a['unrecognised']:,} not recognised" if a["unrecognised"] else ""
        out.append(f"  {a['kind']:24s} {a['read']:>12,} read, {a['loaded']:,} loaded{lost}")
    out += ["", "loaded:"] + [f"  {k:24s} {v:>12,}" for k, v in info["counts"].items()]
    if info["processes"]:
        out += ["", "launch calls and GPU executions (kernels + graph-level graphs) per process:"]
        out += [
            f"  pid {r['pid']:<10} {r['launches']:>10,} launches {r['gpu_executions']:>10,} executed"
            for r in info["processes"]
        ]
    out += ["", f"warnings ({len(info['warnings'])}):"] + [f"  {w}" for w in info["warnings"] or ["none"]]
    if export:
        out += ["", "loaders:"]
        for label, ld in info["loaders"].items():
            table = ld["table"] or "-"
            rows = info["rows"].get(ld["table"], 0) if ld["table"] else 0
            missing = f"; missing columns: {', '.join(ld['missing'])}" if ld["missing"] else ""
            out.append(f"  {label:24s} {ld['status']:8s} {table} ({rows:,} rows){missing}")
        out += ["", "other tables with rows (not read by tracedash):"]
        out += [f"  {name:40s} {n:>12,} rows" for name, n in info["unread"].items()] or ["  none"]
        out += ["", f"tables ({len(info['tables'])}):"]
        out += [f"  {name} [{len(cols)} columns]: {', '.join(cols)}" for name, cols in info["tables"].items()]
    return "\n".join(out)
