"""Load a PyTorch profiler (Kineto) Chrome-trace JSON into the same frames the nsys loader produces.

What maps where (``cat`` of the trace event -> frame):

* ``kernel`` -> KERNELS. Device and stream come from ``args.device``/``args.stream`` (else the GPU
  track's ``pid``/``tid``), the correlation id from ``args.correlation`` (else the ``ac2g`` flow
  end event at the kernel's start on the same track). ``pid`` is the process of the CUDA API call
  with that correlation id (0 when none is in the trace), so kernel <-> launch joins work as for
  nsys. ``name`` = ``short_name`` = the event name (Kineto writes demangled names only); ``launch``
  from ``args.grid``/``args.block``. ``graph_node_id`` is always NULL (Kineto does not record it).
* ``gpu_memcpy`` / ``gpu_memset`` -> MEMOPS (``kind`` "memcpy HtoD"... from ``args.kind`` or the
  event name "Memcpy HtoD (...)"; ``bytes`` from ``args.bytes``).
* ``cuda_runtime`` / ``hip_runtime`` -> API_CALLS with ``event_class`` 0, ``cuda_driver`` /
  ``hip_driver`` -> ``event_class`` 1 (nsys's TRACE_PROCESS_EVENT_CUDA_RUNTIME/DRIVER ids).
  ``global_tid`` is ``pid << 24 | tid`` (tid taken mod 2**24), nsys's packing.
* ``user_annotation`` (host ``record_function`` ranges, e.g. ``ProfilerStep#6``) -> NVTX_RANGES in
  the default domain, kind "push/pop"; instant ``user_annotation`` events -> NVTX_MARKS.
* ``gpu_user_annotation`` is **dropped**: it is Kineto's GPU-side copy of a ``user_annotation``
  (same name, stretched over the kernels it launched), not a kernel and not a host range. Keeping
  it as an NVTX range would count every annotation twice in the NVTX statistics and the dispatch
  list. ``cuda_sync`` (event/stream synchronisation shown on GPU tracks), ``cpu_op``,
  ``python_function`` and the rest are not mapped either.

Events may be ``ph: "X"`` complete events or ``B``/``E`` pairs; an ``E`` closes the most recent open
``B`` of the same (pid, tid) (Chrome Trace Event Format). An ``E`` with nothing open is ignored and
counted; a ``B`` never closed is dropped and counted, except a ``user_annotation``, which is kept as
an unclosed range ending at the largest timestamp in the trace (as nsys closes open NVTX ranges).
Both counts appear in ``TraceMeta.warnings``.

Times: Chrome-trace ``ts``/``dur`` are microseconds (``displayTimeUnit`` is a display preference
only, per the Trace Event Format spec; Kineto's ``displayTimeUnit: "ns"`` traces still write µs,
with three decimals). Numbers are parsed as ``decimal.Decimal`` (never through a binary float, so
``1712195495505583.2`` µs stays exact) and converted to integer ns (round half even past the ns).
The session origin (t = 0) is the start of the profiler's own ``cat: "Trace"`` span or of the earliest
mapped event, whichever is first, so frames hold small non-negative int64 ns like an nsys export. ``baseTimeNanoseconds`` only shifts the epoch of
every event alike, so it does not change any frame.
"""

from __future__ import annotations

import decimal
import os
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from dashboard.errors import TraceFormatError, TraceNotFoundError, clean_message
from dashboard.loaders.jsontext import decode_json
from dashboard.model import (
    API_CALLS,
    GRAPH_LAUNCHES,
    KERNELS,
    MEMOPS,
    NVTX_MARKS,
    NVTX_RANGES,
    TraceBundle,
    TraceMeta,
    conform,
    empty_frame,
)

__all__ = ["GZIP_MAGIC", "looks_like_kineto", "read_json_text", "parse_kineto", "load_kineto_json"]

GZIP_MAGIC = b"\x1f\x8b"
FORMAT = "kineto-json"

KERNEL_CATS = frozenset({"kernel"})
MEMCPY_CAT = "gpu_memcpy"
MEMSET_CAT = "gpu_memset"
API_EVENT_CLASS = {"cuda_runtime": 0, "hip_runtime": 0, "cuda_driver": 1, "hip_driver": 1}
RANGE_CAT = "user_annotation"
GPU_RANGE_CAT = "gpu_user_annotation"
_WANTED = KERNEL_CATS | {MEMCPY_CAT, MEMSET_CAT, RANGE_CAT} | set(API_EVENT_CLASS)
_TIMED_PH = frozenset({"X", "B", "E", "i", "I"})
_LIMIT_NS = 2**62
_THOUSAND = decimal.Decimal(1000)


# A gzip file may expand at most MAX_GZIP_RATIO times the compressed bytes read so far, plus
# GZIP_FLOOR_BYTES (real traces: 10-20x; a "gzip bomb" of whitespace: 1000x), and never past
# MAX_JSON_BYTES. Checked as it decompresses, so a bomb is refused after about GZIP_FLOOR_BYTES.
MAX_GZIP_RATIO = 64
GZIP_FLOOR_BYTES = 32 * 1024**2
MAX_JSON_BYTES = 8 * 1024**3
_GZIP_PIECE = 64 * 1024


def read_json_text(path: Path) -> bytes:
    """The JSON bytes of ``path``, gunzipped when the file starts with the gzip magic (any extension).

    Decompression is streamed and stops as soon as the output exceeds ``GZIP_FLOOR_BYTES +
    MAX_GZIP_RATIO x compressed bytes consumed`` (or ``MAX_JSON_BYTES``), so a small file cannot
    expand to fill the server's memory.

    Raises:
        TraceFormatError: a gzip file that is truncated or corrupt, or expands past the limit.
    """
    raw = path.read_bytes()
    if raw[:2] != GZIP_MAGIC:
        return raw
    out = bytearray()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pos = 0  # compressed bytes fed so far
    pending = b""
    try:
        while True:
            if not pending:
                if pos >= len(raw):
                    break
                pending, pos = raw[pos:pos + _GZIP_PIECE], pos + _GZIP_PIECE
            limit = min(MAX_JSON_BYTES, GZIP_FLOOR_BYTES + MAX_GZIP_RATIO * min(pos, len(raw)))
            out += d.decompress(pending, limit + 1 - len(out))
            pending = d.unconsumed_tail
            if len(out) > limit:
                raise TraceFormatError(
                    f"{path.name}: expands far more than a profiler trace compresses (over {len(out) / 1024**2:,.0f} "
                    f"MiB from {min(pos, len(raw)) / 1024**2:,.2f} MiB, more than {MAX_GZIP_RATIO}x): refused as a "
                    "likely gzip bomb. If it is a genuine trace, gunzip it and open the .json")
            if d.eof:
                rest = d.unused_data + raw[pos:]
                if rest[:2] != GZIP_MAGIC:  # trailing garbage after the stream is ignored, as gzip does
                    break
                raw, pos, pending = rest, 0, b""  # several gzip members, as gzip.decompress allows
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if not d.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFormatError(f"{path.name}: a gzip file that cannot be decompressed "
                               f"(truncated or corrupt: {clean_message(exc)})") from None
    return bytes(out)


def looks_like_kineto(head: bytes) -> bool:
    """Whether the first (decompressed) bytes of a JSON file look like a Chrome/Kineto trace.

    True for an object with a ``"traceEvents"`` key in ``head`` or a top-level array (the Chrome
    JSON Array Format; a tracedash summary is always an object).
    """
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1] == b"[" or b'"traceEvents"' in head


def _ns(value) -> int | None:
    """µs (int or Decimal) -> int ns; None when not a finite number or beyond 2**62 ns."""
    kind = type(value)
    if kind is decimal.Decimal:
        # adjusted() is the exponent of the leading digit: past 1e17 µs (> 2**62 ns) the value is out of
        # range, and checking first keeps "1e999999" from becoming a million-digit integer (minutes of CPU).
        if not value.is_finite() or value.adjusted() > 17:
            return None
        ns = int((value * _THOUSAND).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    elif kind is int:  # not bool: type() is exact
        if abs(value) >= _LIMIT_NS:
            return None
        ns = value * 1000
    else:
        return None
    return ns if abs(ns) < _LIMIT_NS else None


_DIGITS = re.compile(r"-?\d+")


def _intish(value, default: int = -1) -> int:
    """An id from JSON: an int, an integral number, or the last integer in a string ("stream 7")."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, decimal.Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    if isinstance(value, str):
        found = _DIGITS.findall(value)
        if found:
            return int(found[-1])
    return default


def _dims(value) -> tuple[int, int, int] | None:
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, int) and not isinstance(v, bool)
                                                           for v in value):
        return value[0], value[1], value[2]
    return None


def _memcpy_kind(name: str, args: dict) -> str:
    kind = args.get("kind")
    if isinstance(kind, str) and kind and not kind.isdigit():
        return f"memcpy {kind}"
    parts = name.split()
    if len(parts) >= 2 and parts[0].lower() == "memcpy":
        return f"memcpy {parts[1]}"
    return "memcpy"


_JSON_KIND = {int: "a number", float: "a number", str: "a string", list: "a list", bool: "true/false",
              type(None): "null"}


def parse_kineto(data, name: str) -> TraceBundle:
    """Convert a decoded Kineto/Chrome trace (numbers as ``int``/``Decimal``) into a TraceBundle.

    Args:
        data: the decoded JSON: an object with ``traceEvents`` (list) or a bare event list. Parse
            with ``json.loads(..., parse_float=decimal.Decimal)`` to keep timestamps exact.
        name: the file's base name (for messages and ``TraceMeta.source``).

    Returns:
        TraceBundle with frames in the shapes of ``model.KERNELS``, ``API_CALLS``, ``NVTX_RANGES``,
        ``NVTX_MARKS``, ``MEMOPS`` and an empty ``GRAPH_LAUNCHES`` (mapping in the module
        docstring), each sorted by start time (stable). ``meta.format`` is ``"kineto-json"``,
        ``meta.gpus`` comes from ``deviceProperties``, ``meta.tables`` lists the event categories
        present, ``meta.warnings`` the unmatched ``E``, unclosed ``B`` and bad-timestamp counts.

    Raises:
        TraceFormatError: not a Chrome trace (no ``traceEvents`` list), or events that are not objects.
    """
    if isinstance(data, dict):
        events = data.get("traceEvents")
        if not isinstance(events, list):
            raise TraceFormatError(
                f"{name}: neither a PyTorch profiler (Kineto) trace nor a tracedash summary: a JSON object "
                "without a 'traceEvents' list (expected the JSON written by torch.profiler's "
                "export_chrome_trace / tensorboard_trace_handler, or by 'tracedash summarize')")
    elif isinstance(data, list):
        events, data = data, {}
    else:
        raise TraceFormatError(f"{name}: not a Chrome trace: the top level is {type(data).__name__}")

    records: list[tuple] = []  # (cat, name, pid, tid, start_ns_abs, end_ns_abs, args, unclosed)
    flow_end: dict[tuple[int, int, int], int] = {}  # (pid, tid, ts_ns) of an ac2g flow end -> id
    stacks: dict[tuple, list] = {}
    cats: set = set()
    latest = None
    unmatched_ends = unclosed_begins = bad_times = 0
    marks: list[tuple] = []
    spans: list[int] = []
    wanted = _WANTED
    for ev in events:
        if type(ev) is not dict:
            raise TraceFormatError(f"{name}: not a Chrome trace: an entry of traceEvents is "
                                   f"{_JSON_KIND.get(type(ev), 'a ' + type(ev).__name__)}, not an event object")
        ph = ev.get("ph")
        cat = ev.get("cat")
        if type(cat) is str:
            cats.add(cat)
        else:
            cat = None  # a list or object here is malformed: the event is simply not one we map
        if type(ph) is not str:
            ph = None
        if ph == "X":
            if cat not in wanted:  # incl. gpu_user_annotation and cuda_sync: see the module docstring
                if cat == "Trace":  # the profiler's own span: the session start
                    ts = _ns(ev.get("ts"))
                    if ts is not None:
                        spans.append(ts)
                continue
            start = _ns(ev.get("ts"))
            dur_ns = _ns(ev.get("dur", 0))
            if start is None or dur_ns is None:
                bad_times += 1
                continue
            args = ev.get("args")
            end = start + dur_ns
            records.append((cat, str(ev.get("name", "")), _intish(ev.get("pid")), _intish(ev.get("tid")),
                            start, end, args if type(args) is dict else {}, False))
            if latest is None or end > latest:
                latest = end
        elif ph == "E":
            stack = stacks.get((str(ev.get("pid")), str(ev.get("tid"))))
            if not stack:
                unmatched_ends += 1
                continue
            begin = stack.pop()
            if begin is None:  # its B is not mapped, or had no usable ts (already counted)
                continue
            end = _ns(ev.get("ts"))
            if end is None:
                bad_times += 1
                continue
            b_cat, b_name, b_pid, b_tid, b_start, b_args = begin
            args = {**b_args, **ev["args"]} if type(ev.get("args")) is dict else b_args
            records.append((b_cat, b_name, b_pid, b_tid, b_start, end, args, False))
            if latest is None or end > latest:
                latest = end
        elif ph == "B":
            stack = stacks.setdefault((str(ev.get("pid")), str(ev.get("tid"))), [])
            if cat not in wanted:
                stack.append(None)
                continue
            start = _ns(ev.get("ts"))
            if start is None:
                stack.append(None)
                bad_times += 1
                continue
            args = ev.get("args")
            stack.append((cat, str(ev.get("name", "")), _intish(ev.get("pid")), _intish(ev.get("tid")), start,
                          args if type(args) is dict else {}))
            if latest is None or start > latest:
                latest = start
        elif ph in ("i", "I"):
            if cat == RANGE_CAT:
                ts = _ns(ev.get("ts"))
                if ts is None:
                    bad_times += 1
                    continue
                marks.append((ts, str(ev.get("name", "")), _intish(ev.get("pid")), _intish(ev.get("tid"))))
                if latest is None or ts > latest:
                    latest = ts
        elif ph == "f" and cat == "ac2g":
            ts = _ns(ev.get("ts"))
            if ts is not None:
                flow_end[(_intish(ev.get("pid")), _intish(ev.get("tid")), ts)] = _intish(ev.get("id"))

    for stack in stacks.values():
        for begin in stack:
            if begin is None:
                continue
            unclosed_begins += 1
            if begin[0] == RANGE_CAT:
                b_cat, b_name, b_pid, b_tid, b_start, b_args = begin
                records.append((b_cat, b_name, b_pid, b_tid, b_start, max(latest, b_start), b_args, True))
    # t = 0 at the profiler span's start or the earliest mapped event, like an nsys session start.
    starts = [r[4] for r in records] + [m[0] for m in marks] + spans
    origin_ns = min(starts) if starts else 0

    warnings = []
    if unmatched_ends:
        warnings.append(f"{unmatched_ends:,} 'E' event(s) without an open 'B' on their thread were ignored")
    if unclosed_begins:
        warnings.append(f"{unclosed_begins:,} 'B' event(s) never closed by an 'E' (annotations kept as "
                        "unclosed ranges ending at the last timestamp; other events dropped)")
    if bad_times:
        warnings.append(f"{bad_times:,} event(s) with a missing, non-numeric or out-of-range ts/dur were skipped")

    gpus = {}
    for dev in data.get("deviceProperties", []) if isinstance(data.get("deviceProperties"), list) else []:
        if isinstance(dev, dict) and isinstance(dev.get("id"), int) and not isinstance(dev.get("id"), bool):
            gpus[dev["id"]] = str(dev.get("name") or f"GPU {dev['id']}")

    by_cat: dict[str, list[tuple]] = {}
    for rec in records:
        by_cat.setdefault(rec[0], []).append(rec)
    api_recs = [r for c, rs in by_cat.items() if c in API_EVENT_CLASS for r in rs]
    api = _api_frame(api_recs, origin_ns)
    api_pid = dict(zip(api["correlation_id"].tolist(), api["pid"].tolist())) if len(api) else {}
    kernel_recs = [r for c, rs in by_cat.items() if c in KERNEL_CATS for r in rs]
    meta = TraceMeta(
        source=name,
        format=FORMAT,
        schema_version=str(data.get("schemaVersion", "")),
        gpus=dict(sorted(gpus.items())),
        tables=tuple(sorted(cats)),
        warnings=tuple(warnings),
        unmatched_ends=unmatched_ends,
    )
    return TraceBundle(
        meta=meta,
        kernels=_kernel_frame(kernel_recs, origin_ns, flow_end, api_pid),
        api_calls=api,
        nvtx_ranges=_range_frame(by_cat.get(RANGE_CAT, []), origin_ns),
        nvtx_marks=_mark_frame(marks, origin_ns),
        memops=_memop_frame(by_cat.get(MEMCPY_CAT, []) + by_cat.get(MEMSET_CAT, []), origin_ns),
        graph_launches=empty_frame(GRAPH_LAUNCHES),
    )


def _times(recs: list[tuple], origin_ns: int) -> tuple[np.ndarray, np.ndarray]:
    start = np.fromiter((r[4] - origin_ns for r in recs), dtype=np.int64, count=len(recs))
    end = np.fromiter((r[5] - origin_ns for r in recs), dtype=np.int64, count=len(recs))
    return start, end


def _sorted(frame: pd.DataFrame, schema: dict[str, str], key: str = "start_ns") -> pd.DataFrame:
    frame = frame.sort_values(key, kind="stable").reset_index(drop=True)
    return conform(frame, schema)


def _global_tid(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    return (pid.astype(np.int64) << 24) | (tid.astype(np.int64) & 0xFFFFFF)


def _kernel_frame(recs: list[tuple], origin_ns: int, flow_end: dict, api_pid: dict) -> pd.DataFrame:
    if not recs:
        return empty_frame(KERNELS)
    start, end = _times(recs, origin_ns)
    device, stream, context, corr, pid, launch = [], [], [], [], [], []
    for _cat, _name, r_pid, r_tid, r_start, _end, args, _u in recs:
        device.append(_intish(args.get("device"), r_pid))
        stream.append(_intish(args.get("stream"), r_tid))
        context.append(_intish(args.get("context"), 0))
        c = _intish(args.get("correlation"), -1)
        if c < 0:
            c = flow_end.get((r_pid, r_tid, r_start), -1)
        corr.append(c)
        pid.append(api_pid.get(c, 0) if c >= 0 else 0)
        grid, block = _dims(args.get("grid")), _dims(args.get("block"))
        launch.append("grid {}×{}×{} · block {}×{}×{}".format(*grid, *block) if grid and block else "")
    pid_arr = np.asarray(pid, dtype=np.int64)
    names = pd.Categorical([r[1] for r in recs])
    frame = pd.DataFrame({
        "start_ns": start, "end_ns": end,
        "device_id": np.asarray(device, dtype=np.int64), "context_id": np.asarray(context, dtype=np.int64),
        "stream_id": np.asarray(stream, dtype=np.int64), "correlation_id": np.asarray(corr, dtype=np.int64),
        "global_pid": pid_arr << 24, "pid": pid_arr,
        "graph_node_id": pd.array([pd.NA] * len(recs), dtype="Int64"),
        "short_name": names, "name": names, "launch": pd.Categorical(launch),
    })
    return _sorted(frame, KERNELS)


def _api_frame(recs: list[tuple], origin_ns: int) -> pd.DataFrame:
    if not recs:
        return empty_frame(API_CALLS)
    start, end = _times(recs, origin_ns)
    pid = np.fromiter((r[2] for r in recs), dtype=np.int64, count=len(recs))
    tid = np.fromiter((r[3] for r in recs), dtype=np.int64, count=len(recs))
    frame = pd.DataFrame({
        "start_ns": start, "end_ns": end, "global_tid": _global_tid(pid, tid), "pid": pid, "tid": tid,
        "correlation_id": np.fromiter((_intish(r[6].get("correlation"), -1) for r in recs), dtype=np.int64,
                                      count=len(recs)),
        "event_class": np.fromiter((API_EVENT_CLASS[r[0]] for r in recs), dtype=np.int64, count=len(recs)),
        "name": pd.Categorical([r[1] for r in recs]),
    })
    return _sorted(frame, API_CALLS)


def _range_frame(recs: list[tuple], origin_ns: int) -> pd.DataFrame:
    recs = [r for r in recs if r[5] >= r[4]]  # end before start: not a range (as for nsys)
    if not recs:
        return empty_frame(NVTX_RANGES)
    start, end = _times(recs, origin_ns)
    pid = np.fromiter((r[2] for r in recs), dtype=np.int64, count=len(recs))
    tid = np.fromiter((r[3] for r in recs), dtype=np.int64, count=len(recs))
    names = pd.Categorical([r[1] for r in recs])
    frame = pd.DataFrame({
        "start_ns": start, "end_ns": end, "name": names, "message": names,
        "domain": pd.Categorical([""] * len(recs)), "global_tid": _global_tid(pid, tid), "pid": pid, "tid": tid,
        "kind": pd.Categorical(["push/pop"] * len(recs)),
        "unclosed": np.fromiter((r[7] for r in recs), dtype=bool, count=len(recs)),
        "cross_thread": np.zeros(len(recs), dtype=bool),
    })
    return _sorted(frame, NVTX_RANGES)


def _mark_frame(marks: list[tuple], origin_ns: int) -> pd.DataFrame:
    if not marks:
        return empty_frame(NVTX_MARKS)
    pid = np.asarray([m[2] for m in marks], dtype=np.int64)
    tid = np.asarray([m[3] for m in marks], dtype=np.int64)
    frame = pd.DataFrame({"ts_ns": np.asarray([m[0] - origin_ns for m in marks], dtype=np.int64),
                          "name": pd.Categorical([m[1] for m in marks]), "global_tid": _global_tid(pid, tid),
                          "pid": pid, "tid": tid})
    return _sorted(frame, NVTX_MARKS, key="ts_ns")


_COPY_KINDS_IN_NAME = re.compile(r"\(\s*([A-Za-z][A-Za-z ]*?)\s*->\s*([A-Za-z][A-Za-z ]*?)\s*\)")
_SET_KIND_IN_NAME = re.compile(r"^Memset\s*\(\s*([A-Za-z][A-Za-z ]*?)\s*\)")


def _mem_kinds(name) -> tuple[str, str]:
    """(source, destination) memory kinds from a Kineto memop name: ``Memcpy HtoD (Pageable -> Device)``
    gives ("Pageable", "Device"), ``Memset (Device)`` ("", "Device"); ("", "") when the name has none."""
    text = str(name)
    if m := _COPY_KINDS_IN_NAME.search(text):
        return m.group(1), m.group(2)
    if m := _SET_KIND_IN_NAME.match(text):
        return "", m.group(1)
    return "", ""


def _memop_frame(recs: list[tuple], origin_ns: int) -> pd.DataFrame:
    if not recs:
        return empty_frame(MEMOPS)
    start, end = _times(recs, origin_ns)
    frame = pd.DataFrame({
        "start_ns": start, "end_ns": end,
        "device_id": np.asarray([_intish(r[6].get("device"), r[2]) for r in recs], dtype=np.int64),
        "stream_id": np.asarray([_intish(r[6].get("stream"), r[3]) for r in recs], dtype=np.int64),
        "kind": pd.Categorical([_memcpy_kind(r[1], r[6]) if r[0] == MEMCPY_CAT else "memset" for r in recs]),
        "bytes": np.asarray([max(_intish(r[6].get("bytes"), 0), 0) for r in recs], dtype=np.int64),
        "pid": np.full(len(recs), -1, dtype=np.int64),
        "context_id": np.asarray([_intish(r[6].get("context"), -1) for r in recs], dtype=np.int64),
        "correlation_id": np.asarray([_intish(r[6].get("correlation"), -1) for r in recs], dtype=np.int64),
        "src_kind": pd.Categorical([_mem_kinds(r[1])[0] for r in recs]),
        "dst_kind": pd.Categorical([_mem_kinds(r[1])[1] for r in recs]),
    })
    return _sorted(frame, MEMOPS)


def load_kineto_json(path: str | os.PathLike) -> TraceBundle:
    """Load a Kineto Chrome-trace JSON file (plain or gzip, told apart by content) into a TraceBundle.

    See ``parse_kineto`` for the frames and the module docstring for the event mapping and time
    conversion (exact: numbers are parsed as decimals, never as binary floats).

    Raises:
        TraceNotFoundError: missing path or not a regular file.
        TraceFormatError: corrupt gzip, not UTF-8, malformed JSON (with line and column), or a JSON
            that is not a Chrome trace.
    """
    p = Path(path)
    if not p.is_file():
        raise TraceNotFoundError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    data = decode_json(read_json_text(p), p.name, exact=True,
                       too_large="too large to be a timestamp or id (over 4,300 digits, or an exponent out of range)")
    return parse_kineto(data, p.name)
