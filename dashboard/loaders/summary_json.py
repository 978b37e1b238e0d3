"""Read a seed-format JSON summary (``tracedash summarize`` output) into the Summary model."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

from dashboard.errors import TraceFormatError, TraceNotFoundError
from dashboard.loaders.jsontext import decode_json
from dashboard.loaders.sniff import REQUIRED_KEYS
from dashboard.model import (
    API_STATS,
    DISPATCH_MARKS,
    KERNEL_STATS,
    NVTX_STATS,
    SUMMARY_NOTE,
    RowAccount,
    Summary,
    TraceMeta,
    conform,
)

# every key ``summarize`` writes (summary_contract.md); any other top-level key is reported, not read
KNOWN_KEYS = frozenset(
    (
        "file",
        "gpu_activity_span_s",
        "gpu_busy_union_s",
        "gpu_idle_within_span_s",
        "kernel_count",
        "graph_node_kernel_count",
        "api",
        "nvtx",
        "dispatch",
        "dispatch_timeline",
        "top_kernels",
        "notes",
        "warnings",
    )
)
LIMIT = 2**62  # ns (about 146 years) and counts: anything larger is not a real trace


UNKNOWN_GPU_TIME = (
    "the summary's GPU span, busy union and idle are null: GPU work was launched but not captured; "
    "GPU busy, idle and utilisation are unknown (n/a)"
)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _s_to_ns(value, where: str, name: str, *, signed: bool = False) -> int:
    """Seconds (JSON number) -> int ns; must be finite, in range and (unless ``signed``) >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TraceFormatError(f"{name}: {where} must be a number of seconds, got {_short(value)}")
    try:
        seconds = float(value)
    except OverflowError:  # an integer too large for a float
        raise TraceFormatError(f"{name}: {where} is out of range ({_short(value)} s)") from None
    if math.isnan(seconds):
        raise TraceFormatError(f"{name}: {where} must be a finite number of seconds, got {_short(value)}")
    if math.isinf(seconds) or abs(seconds) * 1e9 >= LIMIT:
        raise TraceFormatError(f"{name}: {where} is out of range ({_short(value)} s)")
    ns = round(seconds * 1e9)
    if ns < 0 and not signed:
        raise TraceFormatError(f"{name}: {where} must not be negative, got {_short(value)}")
    return int(ns)


def _int(value, where: str, name: str, *, signed: bool = False) -> int:
    """An integer (or an integral float) within range; counts (unless ``signed``) must be >= 0."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceFormatError(f"{name}: {where} must be an integer, got {_short(value)}")
    if abs(value) >= LIMIT:
        raise TraceFormatError(f"{name}: {where} is out of range ({_short(value)})")
    if value < 0 and not signed:
        raise TraceFormatError(f"{name}: {where} must not be negative, got {value}")
    return value


def _dict(value, where: str, name: str) -> dict:
    if not isinstance(value, dict):
        raise TraceFormatError(f"{name}: '{where}' must be an object, got {type(value).__name__}")
    return value


def _list(value, where: str, name: str) -> list:
    if not isinstance(value, list):
        raise TraceFormatError(f"{name}: '{where}' must be a list, got {type(value).__name__}")
    return value


def _consistency_warnings(
    d: dict,
    name: str,
    span: int,
    busy: int,
    kernel_count: int,
    graph_kernels: int,
    top_rows: list,
    dispatch: dict,
    timeline: list,
) -> list[str]:
    """Lines for a summary whose fields contradict each other (every ``summarize`` output agrees with
    itself): the file's own ``gpu_idle_within_span_s`` against span − busy (more than 2 ns apart: its
    value is not used), GPU time with no kernel, more kernels in ``top_kernels`` or with a graph node
    than ``kernel_count``, and dispatch counts against the dispatch timeline."""
    out = []
    if "gpu_idle_within_span_s" in d:
        idle = _s_to_ns(d["gpu_idle_within_span_s"], "gpu_idle_within_span_s", name, signed=True)
        if abs(idle - (span - busy)) > 2:
            out.append(
                f"summary JSON: gpu_idle_within_span_s ({idle / 1e9} s) is not span - busy "
                f"({(span - busy) / 1e9} s); span - busy is used"
            )
    if kernel_count == 0 and (span or busy):
        out.append(
            f"summary JSON: kernel_count is 0 but the GPU activity span is {span / 1e9} s and busy {busy / 1e9} s"
        )
    if (top := sum(r[1] for r in top_rows)) > kernel_count:
        out.append(f"summary JSON: top_kernels hold {top:,} kernels, more than kernel_count ({kernel_count:,})")
    if graph_kernels > kernel_count:
        out.append(f"summary JSON: graph_node_kernel_count ({graph_kernels:,}) exceeds kernel_count ({kernel_count:,})")
    if dispatch and timeline and (n := sum(dispatch.values())) != len(timeline):
        out.append(f"summary JSON: dispatch counts add up to {n:,} but dispatch_timeline has {len(timeline):,} entries")
    return out


def parse_summary(data: object, name: str) -> Summary:
    """Validate a decoded seed-format object and convert it to a Summary (times to int ns).

    Optional keys (api, nvtx, dispatch, dispatch_timeline, top_kernels, notes, warnings,
    graph_node_kernel_count) default to empty. ``file`` defaults to ``name``. The file's own
    ``warnings`` (a list of strings) are kept, and top-level keys not in ``KNOWN_KEYS`` are
    reported in one more warning line.

    Raises:
        TraceFormatError: a required key is missing or any value has the wrong type; the
            message names the key.
    """
    d = _dict(data, "top level", name)
    missing = [k for k in REQUIRED_KEYS if k not in d]
    if missing:
        raise TraceFormatError(
            f"{name}: not a tracedash summary: missing key(s) {', '.join(missing)} "
            "(expected the format written by 'tracedash summarize', or a PyTorch profiler trace with "
            "a 'traceEvents' list)"
        )
    api_rows = []
    for key, val in _dict(d.get("api", {}), "api", name).items():
        pair = _list(val, f"api[{key!r}]", name)
        if len(pair) != 2:
            raise TraceFormatError(f"{name}: api[{key!r}] must be [count, total_s]")
        api_rows.append(
            (str(key), _int(pair[0], f"api[{key!r}] count", name), _s_to_ns(pair[1], f"api[{key!r}] total", name))
        )
    nvtx_rows = []
    for key, val in _dict(d.get("nvtx", {}), "nvtx", name).items():
        v = _dict(val, f"nvtx[{key!r}]", name)
        try:
            nvtx_rows.append(
                (
                    str(key),
                    _int(v["count"], f"nvtx[{key!r}].count", name),
                    _s_to_ns(v["sum_s"], f"nvtx[{key!r}].sum_s", name),
                    _s_to_ns(v.get("union_s", v["sum_s"]), f"nvtx[{key!r}].union_s", name),
                    _s_to_ns(v.get("gpu_overlap_s", 0.0), f"nvtx[{key!r}].gpu_overlap_s", name),
                )
            )
        except KeyError as exc:
            raise TraceFormatError(f"{name}: nvtx[{key!r}] lacks {exc.args[0]!r}") from None
        _, _, sum_ns, union_ns, overlap_ns = nvtx_rows[-1]
        if union_ns > sum_ns + 1 or overlap_ns > union_ns + 1:
            raise TraceFormatError(f"{name}: nvtx[{key!r}] is impossible: need gpu_overlap_s <= union_s <= sum_s")
    top_rows = []
    for i, item in enumerate(_list(d.get("top_kernels", []), "top_kernels", name)):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], list) and len(item[1]) == 2):
            raise TraceFormatError(f"{name}: top_kernels[{i}] must be [name, [count, total_s]]")
        top_rows.append(
            (
                str(item[0]),
                _int(item[1][0], f"top_kernels[{i}] count", name),
                _s_to_ns(item[1][1], f"top_kernels[{i}] total", name),
            )
        )
    timeline = []
    for i, item in enumerate(_list(d.get("dispatch_timeline", []), "dispatch_timeline", name)):
        ev = _dict(item, f"dispatch_timeline[{i}]", name)
        if "start_ns" not in ev or "name" not in ev:
            raise TraceFormatError(f"{name}: dispatch_timeline[{i}] needs start_ns and name")
        timeline.append((_int(ev["start_ns"], f"dispatch_timeline[{i}].start_ns", name, signed=True), str(ev["name"])))
    dispatch = {
        str(k): _int(v, f"dispatch[{k!r}]", name) for k, v in _dict(d.get("dispatch", {}), "dispatch", name).items()
    }
    notes = d.get("notes", SUMMARY_NOTE)
    warnings = [str(w) for w in _list(d.get("warnings", []), "warnings", name)]
    unknown = [str(k) for k in d if k not in KNOWN_KEYS]
    if unknown:
        warnings.append(
            f"summary JSON: {len(unknown):,} unknown top-level key(s) ignored: "
            + ", ".join(_short(k) for k in unknown[:5])
            + (", ..." if len(unknown) > 5 else "")
        )

    # null span and busy: GPU work launched but not captured (what `summarize` writes then): unknown, not 0
    unknown = d["gpu_activity_span_s"] is None and d["gpu_busy_union_s"] is None
    if unknown:
        d = {**d, "gpu_activity_span_s": 0, "gpu_busy_union_s": 0}
        if d.get("gpu_idle_within_span_s", 0) is None:
            d["gpu_idle_within_span_s"] = 0
    span = _s_to_ns(d["gpu_activity_span_s"], "gpu_activity_span_s", name)
    busy = _s_to_ns(d["gpu_busy_union_s"], "gpu_busy_union_s", name)
    if busy > span + 1:
        raise TraceFormatError(
            f"{name}: gpu_busy_union_s ({busy / 1e9} s) exceeds gpu_activity_span_s "
            f"({span / 1e9} s): a busy union cannot be longer than its span"
        )
    kernel_count = _int(d["kernel_count"], "kernel_count", name)
    graph_kernels = _int(d.get("graph_node_kernel_count", 0), "graph_node_kernel_count", name)
    warnings += _consistency_warnings(d, name, span, busy, kernel_count, graph_kernels, top_rows, dispatch, timeline)
    api = pd.DataFrame(api_rows, columns=list(API_STATS)).sort_values(
        ["total_ns", "name"], ascending=[False, True], kind="stable"
    )
    tl = pd.DataFrame(timeline, columns=list(DISPATCH_MARKS)).sort_values(["start_ns", "name"], kind="stable")
    return Summary(
        file=str(d.get("file", name)),
        gpu_activity_span_ns=span,
        gpu_busy_union_ns=busy,
        kernel_count=kernel_count,
        graph_node_kernel_count=graph_kernels,
        api=conform(api.reset_index(drop=True), API_STATS),
        nvtx=conform(pd.DataFrame(nvtx_rows, columns=list(NVTX_STATS)), NVTX_STATS),
        dispatch=dispatch,
        dispatch_timeline=conform(tl.reset_index(drop=True), DISPATCH_MARKS),
        top_kernels=conform(pd.DataFrame(top_rows, columns=list(KERNEL_STATS)), KERNEL_STATS),
        notes=notes if isinstance(notes, str) else SUMMARY_NOTE,
        warnings=tuple(warnings),
        gpu_activity_missing=(UNKNOWN_GPU_TIME if unknown else ""),
    )


def load_summary_json(path: str | os.PathLike) -> Summary:
    """Load a seed-format summary JSON file.

    Raises:
        TraceNotFoundError: missing or not a regular file.
        TraceFormatError: empty, not UTF-8, malformed JSON (with line and column), or wrong shape.
    """
    p = Path(path)
    if not p.is_file():
        raise TraceNotFoundError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    data = decode_json(p.read_bytes(), p.name, too_large="too large to be a count or time (over 4,300 digits)")
    return parse_summary(data, p.name)


def summary_meta(summary: Summary, name: str) -> TraceMeta:
    """The TraceMeta of a summary read from JSON: its warnings, and one account per list in it
    ("CUDA API names", "NVTX range names", "dispatch marks", "top kernels"; every entry is read
    and loaded: a malformed one refuses the whole file)."""
    lists = (
        ("CUDA API names", len(summary.api)),
        ("NVTX range names", len(summary.nvtx)),
        ("dispatch marks", len(summary.dispatch_timeline)),
        ("top kernels", len(summary.top_kernels)),
    )
    return TraceMeta(
        source=name,
        format="summary-json",
        warnings=tuple(summary.warnings),
        accounts=tuple(RowAccount(kind, n, n) for kind, n in lists if n),
        gpu_activity_missing=summary.gpu_activity_missing,
    )
