"""Load a PyTorch profiler (Kineto) Chrome-trace JSON into the same frames the nsys loader produces.

What maps where (``cat`` of the trace event -> frame):

* ``kernel`` -> KERNELS. Device and stream come from ``args.device``/``args.stream`` (else the GPU
  track's ``pid``/``tid``), the correlation id from ``args.correlation`` (else the ``ac2g`` flow
  end event at the kernel's start on the same track). ``pid`` is the process of the CUDA API call
  with that correlation id, so kernel <-> launch joins work as for nsys. A kernel whose launch is not
  in the trace (launched before the host-side capture began) takes the trace's one CUDA API process
  when exactly one process made CUDA API calls (a Kineto trace is written by one process), else 0:
  otherwise one stream would show as two streams, "pid 0 · stream 7" and "pid 25286 · stream 7".
  Memcpy/memset rows take their process the same way (by correlation id, else the one CUDA API
  process, else -1): the nsys rules group GPU operations per (process, device), and memsets left in
  a process of their own made ``gpu-low-util`` report a busy GPU as mostly idle. ``name`` is the event name (demangled,
  or mangled where CUPTI or ROCm could not demangle it), ``short_name`` derived from
  it as nsys derives ``shortName``, never longer than ``SHORT_NAME_MAX`` (``kernel_short_names``); ``launch`` from
  ``args.grid``/``args.block``.
  ``graph_node_id`` is always NULL (Kineto does not record it). A kernel with ``ts`` 0 has no
  timestamp (CUPTI's start = end = 0): kept as a 0/0 row and counted in
  ``meta.dropped_zero_ts_kernels``, exactly as the SQLite loader does.
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

Category names of PyTorch <= 1.13 (``Kernel``, ``Runtime``, ``Memcpy``, ``Memset``, ``Operator``,
``Python``, ``Memory``, flow ``async_gpu``; see ``LEGACY_CATEGORIES``) are read as their current
names; ``meta.tables`` keeps the names as written.

Every event is accounted for in ``meta.accounts`` (one ``RowAccount`` per kind: kernels,
memcpy/memset, CUDA API calls, NVTX ranges, NVTX marks, events not shown): loaded, skipped by a
documented rule (missing or non-numeric times, negative duration, a byte count beyond int64, ...) or not
recognised (a category PyTorch's profiler never writes). A negative duration makes an invalid row
(left out of every frame, counted, one warning line); ``dur: -1`` on a ``user_annotation`` is a range
still open when profiling stopped (PyTorch >= 2.8), see below. An id beyond the int64 range
(correlation, stream, device, context, process, thread) is made unknown and the event kept, as Perfetto
reads such ids (one warning line counts them); a byte count beyond it makes the event unusable
(counted); never an ``OverflowError``. Launches recorded with no kernel activity at all (CUPTI range-profiler
mode, where kernels appear only as ``cuda_profiler_range`` counter events) set
``meta.gpu_activity_missing``: GPU busy is then unknown, not 0. A JSON whose events carry no
category PyTorch's profiler writes is a Chrome trace from another producer and is refused.

Events may be ``ph: "X"`` complete events or ``B``/``E`` pairs; an ``E`` closes the most recent open
``B`` of the same (pid, tid) (Chrome Trace Event Format). An ``E`` with nothing open is ignored and
counted; a ``B`` never closed is dropped and counted, except a ``user_annotation``, which is kept as
an unclosed range (``unclosed`` True), like an ``X`` with ``dur: -1``: both end where profiling
stopped, the end of the profiler's own ``Trace`` span when the file has one, else the last mapped
event's end (as nsys closes open NVTX ranges). The counts appear in ``TraceMeta.warnings``.

Times: ``ts``/``dur`` may also be numeric strings (``"1692108548132100.000"``), read as exact
decimals like numbers.

Times: Chrome-trace ``ts``/``dur`` are microseconds (``displayTimeUnit`` is a display preference
only, per the Trace Event Format spec; Kineto's ``displayTimeUnit: "ns"`` traces still write µs,
with three decimals). Numbers are parsed as ``decimal.Decimal`` (never through a binary float, so
``1712195495505583.2`` µs stays exact) and converted to integer ns (round half even past the ns).
The session origin (t = 0) is the start of the profiler's own ``cat: "Trace"`` span or of the earliest
mapped event, whichever is first, so frames hold small non-negative int64 ns like an nsys export.
``baseTimeNanoseconds`` only shifts the epoch of
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
from dashboard.loaders.kernel_names import kernel_short_name, kernel_short_names
from dashboard.loaders.kineto_ranks import MultiRankTraceError, distributed_rank, fused_rank, kineto_rank_parts
from dashboard.model import (
    API_CALLS,
    GRAPH_LAUNCHES,
    KERNELS,
    MEMOPS,
    NOT_SHOWN_KIND,
    NVTX_MARKS,
    NVTX_RANGES,
    UNNAMED_NVTX,
    RowAccount,
    TraceBundle,
    TraceMeta,
    conform,
    empty_frame,
)

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

GZIP_MAGIC = b"\x1f\x8b"
FORMAT = "kineto-json"

KERNEL_CAT = "kernel"
KERNEL_CATS = frozenset({KERNEL_CAT})
MEMCPY_CAT = "gpu_memcpy"
MEMSET_CAT = "gpu_memset"
API_EVENT_CLASS = {"cuda_runtime": 0, "hip_runtime": 0, "cuda_driver": 1, "hip_driver": 1}
RANGE_CAT = "user_annotation"
GPU_RANGE_CAT = "gpu_user_annotation"
TRACE_CAT = "Trace"
EPOCH_NS = 10**15  # ns after 1970-01-01 (11.6 days): timestamps at or past it are on an epoch clock
RANGE_PROFILER_CAT = "cuda_profiler_range"
_WANTED = KERNEL_CATS | {MEMCPY_CAT, MEMSET_CAT, RANGE_CAT} | set(API_EVENT_CLASS)
_LIMIT_NS = 2**62
_INT64_MAX = 2**63 - 1
_THOUSAND = decimal.Decimal(1000)

# Category names of PyTorch <= 1.13 (Kineto before the ActivityType renames; also what
# torch-tb-profiler's EventTypeMap accepts, case-insensitively) -> the current name.
LEGACY_CATEGORIES = {
    "Kernel": "kernel",
    "kernel": "kernel",
    "Runtime": "cuda_runtime",
    "runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy",
    "memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "memset": "gpu_memset",
    "Operator": "cpu_op",
    "operator": "cpu_op",
    "Python": "python_function",
    "python": "python_function",
    "Memory": "cpu_instant_event",
    "memory": "cpu_instant_event",
    "async_gpu": "ac2g",  # the kernel-launch flow arrows
    "trace": TRACE_CAT,
}
# Every category current Kineto writes (libkineto ActivityType names, flow categories, the
# profiler's own span): events of these that no frame holds are skipped by a rule, not unknown.
KNOWN_CATEGORIES = frozenset(
    {
        "cpu_op",
        "user_annotation",
        "gpu_user_annotation",
        "gpu_memcpy",
        "gpu_memset",
        "kernel",
        "external_correlation",
        "cuda_runtime",
        "cuda_driver",
        "hip_runtime",
        "hip_driver",
        "cpu_instant_event",
        "python_function",
        "overhead",
        "cuda_sync",
        "mtia_runtime",
        "mtia_ccp_events",
        "mtia_insight",
        "glow_runtime",
        "cuda_profiler_range",
        "hpu_op",
        "xpu_runtime",
        "xpu_driver",
        "privateuse1_runtime",
        "privateuse1_driver",
        "collective_comm",
        "gpu_pm_counter",
        "ac2g",
        "fwdbwd",
        TRACE_CAT,
    }
)
# Categories of accelerators whose work tracedash does not analyse (it measures CUDA and HIP GPU work):
# category -> (accelerator, what its events are, whether they are device work). Counted and named
# (``TraceMeta.unanalysed_device``, one warning line), never taken for "nothing ran".
OTHER_ACCELERATOR = {
    "mtia_ccp_events": ("MTIA", "device events", True),
    "mtia_insight": ("MTIA", "device insight events", True),
    "mtia_runtime": ("MTIA", "runtime calls", False),
    "xpu_runtime": ("XPU", "runtime calls", False),
    "xpu_driver": ("XPU", "driver calls", False),
    "privateuse1_runtime": ("PrivateUse1 backend", "runtime calls", False),
    "privateuse1_driver": ("PrivateUse1 backend", "driver calls", False),
    "glow_runtime": ("Glow", "runtime calls", False),
}
_LAUNCH_API = re.compile(
    r"^(cuda|cu|hip)(LaunchKernel|LaunchCooperativeKernel|LaunchKernelEx|ModuleLaunchKernel|"
    r"ExtModuleLaunchKernel|ExtLaunchKernel|GraphLaunch)",
    re.IGNORECASE,
)

# Kinds of RowAccount this loader fills (meta.accounts), in this order.
KIND_KERNELS = "kernels"
KIND_MEMOPS = "memcpy/memset"
KIND_API = "CUDA API calls"
KIND_RANGES = "NVTX ranges"  # user_annotation (record_function) ranges
KIND_MARKS = "NVTX marks"  # instant user_annotation events
KIND_OTHER = NOT_SHOWN_KIND  # everything no frame holds by design (CPU ops, flows, metadata, ...)
_KIND_OF = {
    KERNEL_CAT: KIND_KERNELS,
    MEMCPY_CAT: KIND_MEMOPS,
    MEMSET_CAT: KIND_MEMOPS,
    RANGE_CAT: KIND_RANGES,
    **{c: KIND_API for c in API_EVENT_CLASS},
}
RULE_BAD_TIME = "missing, non-numeric or out-of-range ts/dur"
RULE_NEGATIVE = "negative duration (invalid row)"
RULE_BIG_BYTES = "a byte count beyond the int64 range"
RULE_UNCLOSED_B = "'B' never closed by an 'E'"
RULE_E_UNMATCHED = "'E' without an open 'B' on its thread"
RULE_E_PAIRED = "'E' closing a 'B' (counted with its 'B')"
RULE_METADATA = "metadata (ph 'M': process and thread names)"
RULE_FLOW = "flow events (used only to link kernels to their launches)"
RULE_INSTANT = "instant events without a category (profiler markers)"


# A gzip file may expand at most MAX_GZIP_RATIO times the compressed bytes read so far, plus
# GZIP_FLOOR_BYTES (real traces: 10-20x; a "gzip bomb" of whitespace: 1000x), and never past
# MAX_JSON_BYTES. Checked as it decompresses, so a bomb is refused after about GZIP_FLOOR_BYTES.
MAX_GZIP_RATIO = 64
GZIP_FLOOR_BYTES = 32 * 1024**2
MAX_JSON_BYTES = 8 * 1024**3
_GZIP_PIECE = 64 * 1024


def _event_name(ev: dict) -> str:
    """An event's name as text: a missing, null or empty name is a visible ``<unnamed>``, never "None"."""
    name = ev.get("name")
    return UNNAMED_NVTX if name is None or name == "" else str(name)


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


def looks_like_kineto(head: bytes) -> bool:
    """Whether the first (decompressed) bytes of a JSON file look like a Chrome/Kineto trace.

    True for an object with a ``"traceEvents"`` key in ``head`` or a top-level array (the Chrome
    JSON Array Format; a tracedash summary is always an object).
    """
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1] == b"[" or b'"traceEvents"' in head


_NUMERIC_TEXT = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


def _ns(value) -> int | None:
    """µs (int, Decimal, or a numeric string such as ``"1692108548132100.000"``, read as an exact
    decimal like a JSON number) -> int ns; None when not a finite number or beyond 2**62 ns."""
    kind = type(value)
    if kind is str:
        if len(value) > 64 or not _NUMERIC_TEXT.fullmatch(value):
            return None
        value = decimal.Decimal(value.strip())
        kind = decimal.Decimal
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


_TOO_BIG = 2**64  # stands for any id past int64 (counted as unusable), without building a huge integer


def _intish(value, default: int = -1) -> int:
    """An id from JSON: an int, an integral number, or the last integer in a string ("stream 7").
    An id of more than 30 digits (``1e999999``, a 5,000-digit string) is returned as 2**64, which
    ``_in_int64`` refuses, without converting it (that would take minutes, or raise)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, decimal.Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value) if value.adjusted() <= 30 else _TOO_BIG
    if isinstance(value, str):
        found = _DIGITS.findall(value)
        if found:
            return int(found[-1]) if len(found[-1]) <= 31 else _TOO_BIG
    return default


def _dims(value) -> tuple[int, int, int] | None:
    if (
        isinstance(value, list)
        and len(value) == 3
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
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


_JSON_KIND = {
    int: "a number",
    float: "a number",
    str: "a string",
    list: "a list",
    bool: "true/false",
    type(None): "null",
}


def _in_int64(*values: int) -> bool:
    return all(-_INT64_MAX - 1 <= v <= _INT64_MAX for v in values)


_ARG_IDS = ("device", "stream", "context", "correlation")


def _known_ids(pid: int, tid: int, args: dict) -> tuple[int, int, dict, bool] | None:
    """The ids an event brings, each one beyond int64 made unknown (as Perfetto reads such ids, so the
    event is kept): a process or thread id becomes -1; an id in ``args`` is dropped, so it falls back
    as a missing one does (stream and device to the event's track, correlation to its flow arrow, else
    -1). Returns ``(pid, tid, args, whether an id was made unknown)``; None when ``args.bytes`` is
    beyond int64 (a size, not an id: the row is unusable)."""
    size = args.get("bytes")
    if size is not None and not _in_int64(_intish(size)):
        return None
    unknown = False
    if not _in_int64(pid):
        pid, unknown = -1, True
    if not _in_int64(tid):
        tid, unknown = -1, True
    bad = [key for key in _ARG_IDS if args.get(key) is not None and not _in_int64(_intish(args[key]))]
    if bad:
        args, unknown = {k: v for k, v in args.items() if k not in bad}, True
    return pid, tid, args, unknown


class _Tally:
    """Per-kind counts for ``TraceMeta.accounts``: read, skipped by rule, not recognised."""

    def __init__(self):
        self.read: dict[str, int] = {}
        self.skipped: dict[str, dict[str, int]] = {}
        self.unrecognised: dict[str, int] = {}

    def seen(self, kind: str) -> None:
        self.read[kind] = self.read.get(kind, 0) + 1

    def skip(self, kind: str, rule: str) -> None:
        rules = self.skipped.setdefault(kind, {})
        rules[rule] = rules.get(rule, 0) + 1

    def other(self, rule: str | None) -> None:
        """One event no frame holds: skipped by ``rule``, or not recognised (``None``)."""
        self.seen(KIND_OTHER)
        if rule is None:
            self.unrecognised[KIND_OTHER] = self.unrecognised.get(KIND_OTHER, 0) + 1
        else:
            self.skip(KIND_OTHER, rule)

    def accounts(self, loaded: dict[str, int]) -> tuple[RowAccount, ...]:
        out = []
        for kind in (KIND_KERNELS, KIND_MEMOPS, KIND_API, KIND_RANGES, KIND_MARKS, KIND_OTHER):
            if kind not in self.read:
                continue
            skipped = tuple(sorted(self.skipped.get(kind, {}).items(), key=lambda kv: (-kv[1], kv[0])))
            out.append(
                RowAccount(
                    kind=kind,
                    read=self.read[kind],
                    loaded=loaded.get(kind, 0),
                    skipped=skipped,
                    unrecognised=self.unrecognised.get(kind, 0),
                )
            )
        return tuple(out)


def _unanalysed_rule(cat: str) -> str:
    accelerator, what, _device = OTHER_ACCELERATOR[cat]
    return f"'{cat}' events: {accelerator} {what}, not analysed"


def _unanalysed(tally: _Tally) -> tuple[tuple[tuple[str, int], ...], str]:
    """The events of other accelerators found (``TraceMeta.unanalysed_device``) and the warning line
    naming them ("" without any): "1,313 MTIA device events, not analysed; 823 MTIA runtime calls, not
    analysed: ..."."""
    skipped = tally.skipped.get(KIND_OTHER, {})
    found = [(cat, skipped[_unanalysed_rule(cat)]) for cat in OTHER_ACCELERATOR if skipped.get(_unanalysed_rule(cat))]
    if not found:
        return (), ""
    counts = tuple((f"{OTHER_ACCELERATOR[c][0]} {OTHER_ACCELERATOR[c][1]}", n) for c, n in found)
    device = sorted({OTHER_ACCELERATOR[c][0] for c, _n in found if OTHER_ACCELERATOR[c][2]})
    line = "; ".join(f"{n:,} {what}, not analysed" for what, n in counts)
    line += ": tracedash measures the GPU work of CUDA and HIP (kernel and memcpy/memset events) only"
    if device:
        line += (
            f", so the {' and '.join(device)} device's busy time, idle and utilisation are not measured (its "
            "work is in the trace, not shown)"
        )
    return counts, line


def _other_rule(ph: str | None, cat: str | None) -> str | None:
    """The documented rule under which an event no frame holds is skipped (None: not recognised)."""
    if ph == "M":
        return RULE_METADATA
    if ph in ("s", "f", "t"):
        return RULE_FLOW
    if cat is None:
        return RULE_INSTANT if ph in ("i", "I") else None
    if cat in OTHER_ACCELERATOR:
        return _unanalysed_rule(cat)
    if cat in KNOWN_CATEGORIES:
        return f"'{cat}' events (not shown)"
    return None


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

    records: list[tuple] = []  # (cat, name, pid, tid, start_ns_abs, end_ns_abs, args, unclosed)
    open_ranges: list[tuple] = []  # annotations still open when profiling stopped: (cat, name, pid, tid, start, args)
    untimed: list[tuple] = []  # kernels with ts 0 (no timestamp, as CUPTI writes start = end = 0)
    zero_start: list[tuple] = []  # kernels at ts 0 with a duration: untimed on an epoch clock, else real
    flow_end: dict[tuple[int, int, int], int] = {}  # (pid, tid, ts_ns) of an ac2g flow end -> id
    stacks: dict[tuple, list] = {}
    cats: set = set()
    known = 0  # events whose category PyTorch's profiler writes (after mapping legacy names)
    latest = None
    unmatched_ends = 0
    marks: list[tuple] = []
    spans: list[tuple[int, int]] = []  # the profiler's own Trace spans (start, end)
    thread_names: dict[int, str] = {}  # global_tid -> name, from 'M' thread_name events
    tally = _Tally()
    seen, skip, other = tally.seen, tally.skip, tally.other
    range_profiler = unfinished = 0
    unknown_ids: dict[str, int] = {}  # loaded events per kind with an id beyond int64 made unknown
    unknown_begins: set[int] = set()  # id() of the open 'B' tuples that had such an id
    for ev in events:
        if type(ev) is not dict:
            raise TraceFormatError(
                f"{name}: not a Chrome trace: an entry of its event list (traceEvents, or the "
                f"file's top-level array) is "
                f"{_JSON_KIND.get(type(ev), 'a ' + type(ev).__name__)}, not an event object"
            )
        ph = ev.get("ph")
        cat = ev.get("cat")
        if type(cat) is str:
            cats.add(cat)
            cat = LEGACY_CATEGORIES.get(cat, cat)
            if cat in KNOWN_CATEGORIES:
                known += 1
        else:
            cat = None  # a list or object here is malformed: the event is simply not one we map
        if type(ph) is not str:
            ph = None
        if ph == "X":
            kind = _KIND_OF.get(cat)
            if kind is None:  # incl. gpu_user_annotation and cuda_sync: see the module docstring
                if cat == TRACE_CAT:  # the profiler's own span: the session start, and where profiling stopped
                    ts, dur = _ns(ev.get("ts")), _ns(ev.get("dur", 0))
                    if ts is not None:
                        spans.append((ts, ts + dur if dur is not None and dur >= 0 else ts))
                elif cat == RANGE_PROFILER_CAT:
                    range_profiler += 1
                other(_other_rule(ph, cat))
                continue
            seen(kind)
            start = _ns(ev.get("ts"))
            dur_ns = _ns(ev.get("dur", 0))
            if start is None or dur_ns is None:
                skip(kind, RULE_BAD_TIME)
                continue
            args = ev.get("args")
            args = args if type(args) is dict else {}
            ids = _known_ids(_intish(ev.get("pid")), _intish(ev.get("tid")), args)
            if ids is None:
                skip(kind, RULE_BIG_BYTES)
                continue
            pid, tid, args, unknown = ids
            if dur_ns < 0:
                if kind is KIND_RANGES and dur_ns == -1000:  # dur -1: still open when profiling stopped
                    unknown_ids[kind] = unknown_ids.get(kind, 0) + unknown
                    open_ranges.append((cat, _event_name(ev), pid, tid, start, args))
                    unfinished += 1
                    continue
                skip(kind, RULE_NEGATIVE)
                continue
            if start == 0 and kind is KIND_KERNELS:  # CUPTI's start = end = 0: no timestamp
                # ts 0 with a duration is a real time only in a trace on a relative clock (decided below)
                (untimed if dur_ns == 0 else zero_start).append(
                    (cat, _event_name(ev), pid, tid, 0, dur_ns, args, False)
                )
                continue
            end = start + dur_ns
            unknown_ids[kind] = unknown_ids.get(kind, 0) + unknown
            records.append((cat, _event_name(ev), pid, tid, start, end, args, False))
            if latest is None or end > latest:
                latest = end
        elif ph == "E":
            stack = stacks.get((str(ev.get("pid")), str(ev.get("tid"))))
            if not stack:
                unmatched_ends += 1
                other(RULE_E_UNMATCHED)
                continue
            other(RULE_E_PAIRED)
            begin = stack.pop()
            if begin is None:  # its B is not mapped, or had no usable ts (already counted)
                continue
            b_cat, b_name, b_pid, b_tid, b_start, b_args = begin
            kind = _KIND_OF[b_cat]
            end = _ns(ev.get("ts"))
            if end is None:
                skip(kind, RULE_BAD_TIME)
                continue
            if end < b_start:
                skip(kind, RULE_NEGATIVE)
                continue
            args = {**b_args, **ev["args"]} if type(ev.get("args")) is dict else b_args
            ids = _known_ids(b_pid, b_tid, args)
            if ids is None:
                skip(kind, RULE_BIG_BYTES)
                continue
            b_pid, b_tid, args, unknown = ids
            unknown_ids[kind] = unknown_ids.get(kind, 0) + (unknown or id(begin) in unknown_begins)
            records.append((b_cat, b_name, b_pid, b_tid, b_start, end, args, False))
            if latest is None or end > latest:
                latest = end
        elif ph == "B":
            stack = stacks.setdefault((str(ev.get("pid")), str(ev.get("tid"))), [])
            kind = _KIND_OF.get(cat)
            if kind is None:
                stack.append(None)
                other(_other_rule(ph, cat))
                continue
            seen(kind)
            start = _ns(ev.get("ts"))
            args = ev.get("args")
            args = args if type(args) is dict else {}
            ids = _known_ids(_intish(ev.get("pid")), _intish(ev.get("tid")), args)
            if start is None or ids is None:
                stack.append(None)
                skip(kind, RULE_BAD_TIME if start is None else RULE_BIG_BYTES)
                continue
            pid, tid, args, unknown = ids
            begin = (cat, _event_name(ev), pid, tid, start, args)
            if unknown:
                unknown_begins.add(id(begin))
            stack.append(begin)
            if latest is None or start > latest:
                latest = start
        elif ph in ("i", "I") and cat == RANGE_CAT:
            seen(KIND_MARKS)
            ts = _ns(ev.get("ts"))
            pid, tid, _args, unknown = _known_ids(_intish(ev.get("pid")), _intish(ev.get("tid")), {})
            if ts is None:
                skip(KIND_MARKS, RULE_BAD_TIME)
                continue
            unknown_ids[KIND_MARKS] = unknown_ids.get(KIND_MARKS, 0) + unknown
            marks.append((ts, _event_name(ev), pid, tid))
            if latest is None or ts > latest:
                latest = ts
        else:
            if ph == "M" and ev.get("name") == "thread_name" and type(ev.get("args")) is dict:
                label = ev["args"].get("name")
                pid, tid = _intish(ev.get("pid")), _intish(ev.get("tid"))
                if type(label) is str and label.strip() and _in_int64(pid, tid):
                    thread_names[(pid << 24) | (tid & 0xFFFFFF)] = label.strip()  # as _global_tid
            if ph == "f" and cat == "ac2g":
                ts = _ns(ev.get("ts"))
                flow_id = _intish(ev.get("id"))
                if ts is not None and _in_int64(flow_id):
                    flow_end[(_intish(ev.get("pid")), _intish(ev.get("tid")), ts)] = flow_id
            other(_other_rule(ph, cat))

    if cats and not known and events:
        shown = ", ".join(sorted(cats)[:5]) + (", …" if len(cats) > 5 else "")
        raise TraceFormatError(
            f"{name}: a Chrome trace from another producer, not a PyTorch profiler (Kineto) trace: none of its "
            f"{len(events):,} events has a PyTorch profiler category (kernel, cuda_runtime, cpu_op, user_annotation, "
            f"…); its categories are {shown}"
        )

    unclosed_begins = 0
    for stack in stacks.values():
        for begin in stack:
            if begin is None:
                continue
            unclosed_begins += 1
            if begin[0] == RANGE_CAT:
                unknown_ids[KIND_RANGES] = unknown_ids.get(KIND_RANGES, 0) + (id(begin) in unknown_begins)
                open_ranges.append(begin)
            else:
                skip(_KIND_OF[begin[0]], RULE_UNCLOSED_B)
    # Ranges still open are closed where profiling stopped: the end of the profiler's own Trace span
    # when the file has one, else the last event's end (as nsys closes open NVTX ranges).
    stop = max(e for _, e in spans) if spans else latest
    for b_cat, b_name, b_pid, b_tid, b_start, b_args in open_ranges:
        records.append(
            (b_cat, b_name, b_pid, b_tid, b_start, max(stop if stop is not None else b_start, b_start), b_args, True)
        )
    # A kernel at ts 0 among epoch timestamps has no timestamp (it would stretch the span over decades);
    # on a relative clock (small timestamps) ts 0 is the first microsecond.
    if any(r[4] >= EPOCH_NS for r in records):
        untimed += [(c, n, p, t, 0, 0, a, u) for c, n, p, t, _s, _e, a, u in zero_start]
    else:
        records += zero_start
        latest = max([latest or 0, *(r[5] for r in zero_start)]) if zero_start else latest
    # t = 0 at the profiler span's start or the earliest mapped event, like an nsys session start.
    starts = [r[4] for r in records] + [m[0] for m in marks] + [s for s, _ in spans]
    origin_ns = min(starts) if starts else 0

    by_cat: dict[str, list[tuple]] = {}
    for rec in records:
        by_cat.setdefault(rec[0], []).append(rec)
    api_recs = [r for c, rs in by_cat.items() if c in API_EVENT_CLASS for r in rs]
    api = _api_frame(api_recs, origin_ns)
    api_pid = dict(zip(api["correlation_id"].tolist(), api["pid"].tolist())) if len(api) else {}
    api_pids = api["pid"].unique().tolist() if len(api) else []
    # The process of a GPU operation whose launch is not in the trace (None: not one process to give it to).
    unlaunched_pid = int(api_pids[0]) if len(api_pids) == 1 else None
    kernel_recs = [r for c, rs in by_cat.items() if c in KERNEL_CATS for r in rs]
    kernel_recs += [(c, n, p, t, origin_ns, origin_ns, a, u) for c, n, p, t, _s, _e, a, u in untimed]
    memop_recs = by_cat.get(MEMCPY_CAT, []) + by_cat.get(MEMSET_CAT, [])
    range_recs = by_cat.get(RANGE_CAT, [])

    warnings = []
    if unmatched_ends:
        warnings.append(f"{unmatched_ends:,} 'E' event(s) without an open 'B' on their thread were ignored")
    where = "the end of the profiler's Trace span" if spans else "the last event's end"
    if unclosed_begins:
        warnings.append(
            f"{unclosed_begins:,} 'B' event(s) never closed by an 'E' (annotations kept as "
            f"unclosed ranges ending at {where}; other events dropped)"
        )
    if unfinished:
        warnings.append(
            f"{unfinished:,} annotation range(s) still open when profiling stopped (dur -1), kept "
            f"as unclosed ranges ending at {where}"
        )
    if any(unknown_ids.values()):
        counts = ", ".join(f"{kind} {n:,}" for kind, n in unknown_ids.items() if n)
        warnings.append(
            "events with an id beyond the int64 range (correlation, stream, device, context, process or "
            "thread) loaded with that id unknown, as Perfetto reads them (a stream or device from the "
            f"event's track, a correlation from its flow arrow, else -1): {counts}"
        )
    # Events skipped for bad times, negative durations or byte counts beyond int64 are reported through
    # meta.accounts (model.input_warnings gives one line per kind), not repeated here.
    unanalysed, line = _unanalysed(tally)
    if line:
        warnings.append(line)
    launches = int(api["name"].astype(str).str.match(_LAUNCH_API).sum()) if len(api) else 0
    missing = ""
    if not tally.read.get(KIND_KERNELS) and launches:
        missing = (
            f"no kernel activity although {launches:,} kernel launch(es) were recorded"
            + (
                f": recorded in CUPTI range-profiler mode ({range_profiler:,} cuda_profiler_range events hold "
                "counter values, not kernel timing)"
                if range_profiler
                else ": kernel tracing was off or lost"
            )
            + "; GPU busy, idle and utilisation are unknown (n/a)"
        )
        warnings.append(missing)

    gpus = {}
    for dev in data.get("deviceProperties", []) if isinstance(data.get("deviceProperties"), list) else []:
        if isinstance(dev, dict) and isinstance(dev.get("id"), int) and not isinstance(dev.get("id"), bool):
            gpus[dev["id"]] = str(dev.get("name") or f"GPU {dev['id']}")

    loaded = {
        KIND_KERNELS: len(kernel_recs),
        KIND_MEMOPS: len(memop_recs),
        KIND_API: len(api_recs),
        KIND_RANGES: len(range_recs),
        KIND_MARKS: len(marks),
    }
    kernels = _kernel_frame(kernel_recs, origin_ns, flow_end, api_pid, 0 if unlaunched_pid is None else unlaunched_pid)
    meta = TraceMeta(
        source=name,
        format=FORMAT,
        schema_version=str(data.get("schemaVersion", "")),
        gpus=dict(sorted(gpus.items())),
        tables=tuple(sorted(cats)),
        dropped_zero_ts_kernels=len(untimed),
        warnings=tuple(warnings),
        unmatched_ends=unmatched_ends,
        accounts=tally.accounts(loaded),
        rank=distributed_rank(data),
        gpu_activity_missing=missing,
        unanalysed_device=unanalysed,
        launches_by_pid=_launches_by_pid(api, kernels),
        thread_names=thread_names,
    )
    return TraceBundle(
        meta=meta,
        kernels=kernels,
        api_calls=api,
        nvtx_ranges=_range_frame(range_recs, origin_ns),
        nvtx_marks=_mark_frame(marks, origin_ns),
        memops=_memop_frame(memop_recs, origin_ns, api_pid, -1 if unlaunched_pid is None else unlaunched_pid),
        graph_launches=empty_frame(GRAPH_LAUNCHES),
    )


def _launches_by_pid(api: pd.DataFrame, kernels: pd.DataFrame) -> tuple[tuple[int, int, int], ...]:
    """``TraceMeta.launches_by_pid``: per process with kernel launch calls (``_LAUNCH_API``, CUDA and
    HIP), ``(pid, launch calls, kernel rows given that process)``, sorted by pid."""
    if api.empty:
        return ()
    pids = api.loc[api["name"].astype(str).str.match(_LAUNCH_API).to_numpy(bool), "pid"].to_numpy(np.int64)
    launched, calls = np.unique(pids, return_counts=True)
    ran = kernels["pid"].value_counts().to_dict()
    return tuple((int(p), int(n), int(ran.get(p, 0))) for p, n in zip(launched.tolist(), calls.tolist()))


def _times(recs: list[tuple], origin_ns: int) -> tuple[np.ndarray, np.ndarray]:
    start = np.fromiter((r[4] - origin_ns for r in recs), dtype=np.int64, count=len(recs))
    end = np.fromiter((r[5] - origin_ns for r in recs), dtype=np.int64, count=len(recs))
    return start, end


def _sorted(frame: pd.DataFrame, schema: dict[str, str], key: str = "start_ns") -> pd.DataFrame:
    frame = frame.sort_values(key, kind="stable").reset_index(drop=True)
    return conform(frame, schema)


def _global_tid(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    return (pid.astype(np.int64) << 24) | (tid.astype(np.int64) & 0xFFFFFF)


def _kernel_frame(
    recs: list[tuple], origin_ns: int, flow_end: dict, api_pid: dict, unlaunched_pid: int = 0
) -> pd.DataFrame:
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
        pid.append(api_pid.get(c, unlaunched_pid) if c >= 0 else unlaunched_pid)
        grid, block = _dims(args.get("grid")), _dims(args.get("block"))
        launch.append("grid {}×{}×{} · block {}×{}×{}".format(*grid, *block) if grid and block else "")
    pid_arr = np.asarray(pid, dtype=np.int64)
    names = pd.Categorical([r[1] for r in recs])
    short_of = np.asarray(kernel_short_names(list(names.categories)) or [""], dtype=object)
    frame = pd.DataFrame(
        {
            "start_ns": start,
            "end_ns": end,
            "device_id": np.asarray(device, dtype=np.int64),
            "context_id": np.asarray(context, dtype=np.int64),
            "stream_id": np.asarray(stream, dtype=np.int64),
            "correlation_id": np.asarray(corr, dtype=np.int64),
            "global_pid": pid_arr << 24,
            "pid": pid_arr,
            "graph_node_id": pd.array([pd.NA] * len(recs), dtype="Int64"),
            "short_name": pd.Categorical(short_of[names.codes]),
            "name": names,
            "launch": pd.Categorical(launch),
        }
    )
    return _sorted(frame, KERNELS)


def _api_frame(recs: list[tuple], origin_ns: int) -> pd.DataFrame:
    if not recs:
        return empty_frame(API_CALLS)
    start, end = _times(recs, origin_ns)
    pid = np.fromiter((r[2] for r in recs), dtype=np.int64, count=len(recs))
    tid = np.fromiter((r[3] for r in recs), dtype=np.int64, count=len(recs))
    frame = pd.DataFrame(
        {
            "start_ns": start,
            "end_ns": end,
            "global_tid": _global_tid(pid, tid),
            "pid": pid,
            "tid": tid,
            "correlation_id": np.fromiter(
                (_intish(r[6].get("correlation"), -1) for r in recs), dtype=np.int64, count=len(recs)
            ),
            "event_class": np.fromiter((API_EVENT_CLASS[r[0]] for r in recs), dtype=np.int64, count=len(recs)),
            "name": pd.Categorical([r[1] for r in recs]),
        }
    )
    return _sorted(frame, API_CALLS)


def _range_frame(recs: list[tuple], origin_ns: int) -> pd.DataFrame:
    if not recs:
        return empty_frame(NVTX_RANGES)
    start, end = _times(recs, origin_ns)
    pid = np.fromiter((r[2] for r in recs), dtype=np.int64, count=len(recs))
    tid = np.fromiter((r[3] for r in recs), dtype=np.int64, count=len(recs))
    names = pd.Categorical([r[1] or UNNAMED_NVTX for r in recs])  # no name: a visible <unnamed>, never blank
    frame = pd.DataFrame(
        {
            "start_ns": start,
            "end_ns": end,
            "name": names,
            "message": names,
            "domain": pd.Categorical([""] * len(recs)),
            "global_tid": _global_tid(pid, tid),
            "pid": pid,
            "tid": tid,
            "kind": pd.Categorical(["push/pop"] * len(recs)),
            "unclosed": np.fromiter((r[7] for r in recs), dtype=bool, count=len(recs)),
            "cross_thread": np.zeros(len(recs), dtype=bool),
        }
    )
    return _sorted(frame, NVTX_RANGES)


def _mark_frame(marks: list[tuple], origin_ns: int) -> pd.DataFrame:
    if not marks:
        return empty_frame(NVTX_MARKS)
    pid = np.asarray([m[2] for m in marks], dtype=np.int64)
    tid = np.asarray([m[3] for m in marks], dtype=np.int64)
    frame = pd.DataFrame(
        {
            "ts_ns": np.asarray([m[0] - origin_ns for m in marks], dtype=np.int64),
            "name": pd.Categorical([m[1] for m in marks]),
            "global_tid": _global_tid(pid, tid),
            "pid": pid,
            "tid": tid,
        }
    )
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


def _memop_frame(
    recs: list[tuple], origin_ns: int, api_pid: dict | None = None, unlaunched_pid: int = -1
) -> pd.DataFrame:
    if not recs:
        return empty_frame(MEMOPS)
    start, end = _times(recs, origin_ns)
    corr = [_intish(r[6].get("correlation"), -1) for r in recs]
    api_pid = api_pid or {}
    frame = pd.DataFrame(
        {
            "start_ns": start,
            "end_ns": end,
            "device_id": np.asarray([_intish(r[6].get("device"), r[2]) for r in recs], dtype=np.int64),
            "stream_id": np.asarray([_intish(r[6].get("stream"), r[3]) for r in recs], dtype=np.int64),
            "kind": pd.Categorical([_memcpy_kind(r[1], r[6]) if r[0] == MEMCPY_CAT else "memset" for r in recs]),
            "bytes": np.asarray([max(_intish(r[6].get("bytes"), 0), 0) for r in recs], dtype=np.int64),
            "pid": np.asarray(
                [api_pid.get(c, unlaunched_pid) if c >= 0 else unlaunched_pid for c in corr], dtype=np.int64
            ),
            "context_id": np.asarray([_intish(r[6].get("context"), -1) for r in recs], dtype=np.int64),
            "correlation_id": np.asarray(corr, dtype=np.int64),
            "src_kind": pd.Categorical([_mem_kinds(r[1])[0] for r in recs]),
            "dst_kind": pd.Categorical([_mem_kinds(r[1])[1] for r in recs]),
        }
    )
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
