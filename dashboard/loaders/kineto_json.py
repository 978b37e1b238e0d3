"""Load a PyTorch profiler (Kineto) Chrome-trace JSON into the same frames the nsys loader produces.

In steps: ``read_json_text`` (the file's bytes, gunzipped with a guard against gzip bombs), the
decoded JSON's events read in one pass by ``kineto_events.KinetoEvents``, then turned into frames by
``kineto_frames``; ``kineto_categories`` says what each event category is (legacy names, other
accelerators, the skip rules), ``kineto_ranks`` splits files holding several ranks.

What maps where (``cat`` of the trace event -> frame):

* ``kernel`` -> KERNELS. Device and stream come from ``args.device``/``args.stream`` (else the GPU
  track's ``pid``/``tid``), the correlation id from ``args.correlation`` (else the ``ac2g`` flow
  end event at the kernel's start on the same track). ``pid`` is the process of the CUDA API call
  with that correlation id (a launch not in the trace: see ``kineto_frames``). ``name`` is the event
  name (demangled, or mangled where CUPTI or ROCm could not demangle it), ``short_name`` derived from
  it as nsys derives ``shortName``, never longer than ``SHORT_NAME_MAX`` (``kernel_short_names``);
  ``launch`` from ``args.grid``/``args.block``. ``graph_node_id`` is always NULL (Kineto does not
  record it). A kernel with ``ts`` 0 has no timestamp (CUPTI's start = end = 0): kept as a 0/0 row and
  counted in ``meta.dropped_zero_ts_kernels``, exactly as the SQLite loader does.
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

Every event is accounted for in ``meta.accounts`` (one ``RowAccount`` per kind: kernels,
memcpy/memset, CUDA API calls, NVTX ranges, NVTX marks, events not shown): loaded, skipped by a
documented rule (missing or non-numeric times, negative duration, a byte count beyond int64, ...) or not
recognised (a category PyTorch's profiler never writes). A negative duration makes an invalid row
(left out of every frame, counted, one warning line); ``dur: -1`` on a ``user_annotation`` is a range
still open when profiling stopped (PyTorch >= 2.8), kept as an unclosed range (``kineto_events``).
Launches recorded with no kernel activity at all (CUPTI range-profiler mode, where kernels appear only
as ``cuda_profiler_range`` counter events) set ``meta.gpu_activity_missing``: GPU busy is then unknown,
not 0. A JSON whose events carry no category PyTorch's profiler writes is a Chrome trace from another
producer and is refused.

Times are exact integer ns (``kineto_events``). The session origin (t = 0) is the start of the
profiler's own ``cat: "Trace"`` span or of the earliest mapped event, whichever is first, so frames hold
small non-negative int64 ns like an nsys export. ``baseTimeNanoseconds`` only shifts the epoch of every
event alike, so it does not change any frame.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from dashboard.errors import TraceFormatError, TraceNotFoundError, clean_message
from dashboard.loaders.jsontext import decode_json
from dashboard.loaders.kernel_names import kernel_short_name
from dashboard.loaders.kineto_categories import FORMAT
from dashboard.loaders.kineto_events import KinetoEvents, unanalysed_events
from dashboard.loaders.kineto_frames import build_frames, gpu_activity_missing, launches_by_pid
from dashboard.loaders.kineto_ranks import MultiRankTraceError, distributed_rank, fused_rank, kineto_rank_parts
from dashboard.loaders.sniff import GZIP_MAGIC, looks_like_kineto
from dashboard.model import GRAPH_LAUNCHES, TraceBundle, TraceMeta, empty_frame

__all__ = [
    "GZIP_MAGIC",
    "looks_like_kineto",
    "read_json_text",
    "parse_kineto",
    "load_kineto_json",
    "kernel_short_name",
    "kineto_rank_parts",
    "load_kineto_ranks",
    "MultiRankTraceError",
]

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
                pending, pos = raw[pos : pos + _GZIP_PIECE], pos + _GZIP_PIECE
            limit = min(MAX_JSON_BYTES, GZIP_FLOOR_BYTES + MAX_GZIP_RATIO * min(pos, len(raw)))
            out += d.decompress(pending, limit + 1 - len(out))
            pending = d.unconsumed_tail
            if len(out) > limit:
                raise TraceFormatError(
                    f"{path.name}: expands far more than a profiler trace compresses (over {len(out) / 1024**2:,.0f} "
                    f"MiB from {min(pos, len(raw)) / 1024**2:,.2f} MiB, more than {MAX_GZIP_RATIO}x): refused as a "
                    "likely gzip bomb. If it is a genuine trace, gunzip it and open the .json"
                )
            if d.eof:
                rest = d.unused_data + raw[pos:]
                if rest[:2] != GZIP_MAGIC:  # trailing garbage after the stream is ignored, as gzip does
                    break
                raw, pos, pending = rest, 0, b""  # several gzip members, as gzip.decompress allows
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if not d.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFormatError(
            f"{path.name}: a gzip file that cannot be decompressed "
            f"(truncated or corrupt: {clean_message(exc, with_type=False)})"
        ) from None
    return bytes(out)


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
        ``meta.gpus`` comes from ``deviceProperties``, ``meta.rank`` from ``distributedInfo.rank``,
        ``meta.tables`` lists the event categories present (as written), ``meta.accounts`` how every
        event was used (kinds ``kernels``, ``memcpy/memset``, ``CUDA API calls``, ``NVTX ranges``,
        ``NVTX marks``, ``events not shown``), ``meta.warnings`` one line per problem found.

    Raises:
        TraceFormatError: not a Chrome trace (no ``traceEvents`` list), events that are not objects,
            or a Chrome trace from another producer (no PyTorch profiler category at all).
        MultiRankTraceError: the file holds several ranks (``kineto_rank_parts``); open it with
            ``load_kineto_ranks`` instead.
    """
    events, data = _trace_events(data, name)
    log = KinetoEvents(name)
    log.read(events)
    log.settle()
    frames = build_frames(log)
    warnings = log.warnings()
    unanalysed, line = unanalysed_events(log.tally)
    if line:
        warnings.append(line)
    missing = gpu_activity_missing(log, frames.api_calls)
    if missing:
        warnings.append(missing)
    meta = TraceMeta(
        source=name,
        format=FORMAT,
        schema_version=str(data.get("schemaVersion", "")),
        gpus=_gpus(data),
        tables=tuple(sorted(log.cats)),
        dropped_zero_ts_kernels=len(log.untimed),
        warnings=tuple(warnings),
        unmatched_ends=log.unmatched_ends,
        accounts=log.tally.accounts(frames.loaded),
        rank=distributed_rank(data),
        gpu_activity_missing=missing,
        unanalysed_device=unanalysed,
        launches_by_pid=launches_by_pid(frames.api_calls, frames.kernels),
        thread_names=log.thread_names,
    )
    return TraceBundle(
        meta=meta,
        kernels=frames.kernels,
        api_calls=frames.api_calls,
        nvtx_ranges=frames.nvtx_ranges,
        nvtx_marks=frames.nvtx_marks,
        memops=frames.memops,
        graph_launches=empty_frame(GRAPH_LAUNCHES),
    )


def _trace_events(data, name: str) -> tuple[list, dict]:
    """``(events, the top-level object)`` of a decoded trace ({} for a bare event list); refuses a file
    holding several ranks (``MultiRankTraceError``) and anything that is not a Chrome trace."""
    parts = kineto_rank_parts(data, name)
    if parts is not None:
        ranks = [r if r is not None else i for i, (r, _d) in enumerate(parts)]
        events = data.get("traceEvents") if isinstance(data, dict) else None
        fused = isinstance(events, list) and any(fused_rank(ev) is not None for ev in events)
        how = " (merged by TraceLens TraceFusion: args.rank on its events)" if fused else ""
        raise MultiRankTraceError(
            f"{name}: holds the traces of {len(parts)} ranks ({', '.join(map(str, ranks))}) in one file{how}; one view "
            f"of it would mix their GPUs and clocks. Open it as ranks, each on its own lanes: tracedash serve "
            f"--ranks {name}",
            ranks,
        )
    if isinstance(data, dict):
        events = data.get("traceEvents")
        if not isinstance(events, list):
            raise TraceFormatError(
                f"{name}: neither a PyTorch profiler (Kineto) trace nor a tracedash summary: a JSON object "
                "without a 'traceEvents' list (expected the JSON written by torch.profiler's "
                "export_chrome_trace / tensorboard_trace_handler, or by 'tracedash summarize')"
            )
    elif isinstance(data, list):
        events, data = data, {}
    else:
        raise TraceFormatError(f"{name}: not a Chrome trace: the top level is {type(data).__name__}")
    return events, data


def _gpus(data: dict) -> dict[int, str]:
    """``TraceMeta.gpus`` from ``deviceProperties``: device id -> name, by id."""
    gpus = {}
    for dev in data.get("deviceProperties", []) if isinstance(data.get("deviceProperties"), list) else []:
        if isinstance(dev, dict) and isinstance(dev.get("id"), int) and not isinstance(dev.get("id"), bool):
            gpus[dev["id"]] = str(dev.get("name") or f"GPU {dev['id']}")
    return dict(sorted(gpus.items()))


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
    data = decode_json(
        read_json_text(p),
        p.name,
        exact=True,
        too_large="too large to be a timestamp or id (over 4,300 digits, or an exponent out of range)",
    )
    return parse_kineto(data, p.name)


def load_kineto_ranks(path: str | os.PathLike) -> list[TraceBundle]:
    """Every rank of a Kineto file, one TraceBundle each (``meta.rank`` set, ``meta.source``
    ``"FILE [rank r]"``), in file order: a file holding several ranks split into them
    (``kineto_rank_parts``), or the one rank of an ordinary trace.

    Raises:
        TraceNotFoundError, TraceFormatError: as ``load_kineto_json``.
    """
    p = Path(path)
    if not p.is_file():
        raise TraceNotFoundError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    data = decode_json(
        read_json_text(p),
        p.name,
        exact=True,
        too_large="too large to be a timestamp or id (over 4,300 digits, or an exponent out of range)",
    )
    parts = kineto_rank_parts(data, p.name)
    if parts is None:
        return [parse_kineto(data, p.name)]
    out = []
    for i, (rank, part) in enumerate(parts):
        label = f"{p.name} [rank {rank if rank is not None else i}]"
        out.append(parse_kineto(part, label))
    return out
