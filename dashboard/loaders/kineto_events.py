"""Reading a Kineto trace's events in one pass: decoding times and ids, pairing ``B``/``E`` events,
counting every event for ``TraceMeta.accounts``, then settling where open ranges end and which kernels
have no timestamp.

Events may be ``ph: "X"`` complete events or ``B``/``E`` pairs; an ``E`` closes the most recent open
``B`` of the same (pid, tid) (Chrome Trace Event Format). An ``E`` with nothing open is ignored and
counted; a ``B`` never closed is dropped and counted, except a ``user_annotation``, which is kept as
an unclosed range (``unclosed`` True), like an ``X`` with ``dur: -1``: both end where profiling
stopped, the end of the profiler's own ``Trace`` span when the file has one, else the last mapped
event's end (as nsys closes open NVTX ranges).

Times: ``ts``/``dur`` are microseconds (``displayTimeUnit`` is a display preference only, per the
Trace Event Format spec; Kineto's ``displayTimeUnit: "ns"`` traces still write µs, with three
decimals), also as numeric strings (``"1692108548132100.000"``). Numbers are parsed as
``decimal.Decimal`` (never through a binary float, so ``1712195495505583.2`` µs stays exact) and
converted to integer ns (round half even past the ns). An id beyond the int64 range (correlation,
stream, device, context, process, thread) is made unknown and the event kept, as Perfetto reads such
ids; a byte count beyond it makes the event unusable (counted); never an ``OverflowError``.
"""

from __future__ import annotations

import decimal
import re

from dashboard import units
from dashboard.errors import TraceFormatError
from dashboard.loaders.kineto_categories import (
    _KIND_OF,
    KIND_API,
    KIND_KERNELS,
    KIND_MARKS,
    KIND_MEMOPS,
    KIND_OTHER,
    KIND_RANGES,
    KNOWN_CATEGORIES,
    LEGACY_CATEGORIES,
    OTHER_ACCELERATOR,
    RANGE_CAT,
    RANGE_PROFILER_CAT,
    RULE_BAD_TIME,
    RULE_BIG_BYTES,
    RULE_E_PAIRED,
    RULE_E_UNMATCHED,
    RULE_NEGATIVE,
    RULE_UNCLOSED_B,
    TRACE_CAT,
    other_rule,
    unanalysed_rule,
)
from dashboard.model import UNNAMED_NVTX, RowAccount

EPOCH_NS = 10**15  # ns after 1970-01-01 (11.6 days): timestamps at or past it are on an epoch clock
_LIMIT_NS = 2**62
_INT64_MAX = 2**63 - 1
_THOUSAND = decimal.Decimal(1000)


def _event_name(ev: dict) -> str:
    """An event's name as text: a missing, null or empty name is a visible ``<unnamed>``, never "None"."""
    name = ev.get("name")
    return UNNAMED_NVTX if name is None or name == "" else str(name)


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


def unanalysed_events(tally: _Tally) -> tuple[tuple[tuple[str, int], ...], str]:
    """The events of other accelerators found (``TraceMeta.unanalysed_device``) and the warning line
    naming them ("" without any): "1,313 MTIA device events, not analysed; 823 MTIA runtime calls, not
    analysed: ..."."""
    skipped = tally.skipped.get(KIND_OTHER, {})
    found = [(cat, skipped[unanalysed_rule(cat)]) for cat in OTHER_ACCELERATOR if skipped.get(unanalysed_rule(cat))]
    if not found:
        return (), ""
    counts = tuple((f"{OTHER_ACCELERATOR[c][0]} {OTHER_ACCELERATOR[c][1]}", n) for c, n in found)
    device = sorted({OTHER_ACCELERATOR[c][0] for c, _n in found if OTHER_ACCELERATOR[c][2]})
    line = "; ".join(f"{units.count_of(n, what)}, not analysed" for what, n in counts)
    line += ": tracedash measures the GPU work of CUDA and HIP (kernel and memcpy/memset events) only"
    if device:
        line += (
            f", so the {' and '.join(device)} device's busy time, idle and utilisation are not measured (its "
            "work is in the trace, not shown)"
        )
    return counts, line


class KinetoEvents:
    """The events of one trace: ``read`` them in one pass, then ``settle`` where open ranges end, which
    kernels at ts 0 have no timestamp, and the session origin (t = 0)."""

    def __init__(self, name: str):
        self.name = name  # the file's base name, for messages
        self.records: list[tuple] = []  # (cat, name, pid, tid, start_ns_abs, end_ns_abs, args, unclosed)
        self.open_ranges: list[tuple] = []  # annotations still open at the stop: (cat, name, pid, tid, start, args)
        self.untimed: list[tuple] = []  # kernels with ts 0 (no timestamp, as CUPTI writes start = end = 0)
        self.zero_start: list[tuple] = []  # kernels at ts 0 with a duration: untimed on an epoch clock, else real
        self.flow_end: dict[tuple[int, int, int], int] = {}  # (pid, tid, ts_ns) of an ac2g flow end -> id
        self.stacks: dict[tuple, list] = {}
        self.cats: set = set()
        self.known = 0  # events whose category PyTorch's profiler writes (after mapping legacy names)
        self.latest: int | None = None
        self.unmatched_ends = 0
        self.unclosed_begins = 0
        self.marks: list[tuple] = []
        self.spans: list[tuple[int, int]] = []  # the profiler's own Trace spans (start, end)
        self.thread_names: dict[int, str] = {}  # global_tid -> name, from 'M' thread_name events
        self.tally = _Tally()
        self.range_profiler = 0
        self.unfinished = 0
        self.unknown_ids: dict[str, int] = {}  # loaded events per kind with an id beyond int64 made unknown
        self.unknown_begins: set[int] = set()  # id() of the open 'B' tuples that had such an id
        self.origin_ns = 0

    def read(self, events: list) -> None:
        """Read every event, in order.

        Raises:
            TraceFormatError: an entry that is not an event object, or a Chrome trace from another
                producer (no PyTorch profiler category at all).
        """
        complete, end, begin, mark, other = self._complete, self._end, self._begin, self._mark, self._other
        cats, known = self.cats, 0
        for ev in events:
            if type(ev) is not dict:
                raise TraceFormatError(
                    f"{self.name}: not a Chrome trace: an entry of its event list (traceEvents, or the "
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
                complete(ev, cat)
            elif ph == "E":
                end(ev)
            elif ph == "B":
                begin(ev, cat)
            elif ph in ("i", "I") and cat == RANGE_CAT:
                mark(ev)
            else:
                other(ev, ph, cat)
        self.known = known
        if cats and not known and events:
            shown = ", ".join(sorted(cats)[:5]) + (", …" if len(cats) > 5 else "")
            raise TraceFormatError(
                f"{self.name}: a Chrome trace from another producer, not a PyTorch profiler (Kineto) trace: none of "
                f"its {len(events):,} events has a PyTorch profiler category (kernel, cuda_runtime, cpu_op, "
                f"user_annotation, …); its categories are {shown}"
            )

    def _reach(self, ts: int) -> None:
        if self.latest is None or ts > self.latest:
            self.latest = ts

    def _count_unknown(self, kind: str, n: int) -> None:
        self.unknown_ids[kind] = self.unknown_ids.get(kind, 0) + n

    def _complete(self, ev: dict, cat: str | None) -> None:
        """A ``ph: "X"`` event."""
        tally = self.tally
        kind = _KIND_OF.get(cat)
        if kind is None:  # incl. gpu_user_annotation and cuda_sync: see kineto_json's docstring
            if cat == TRACE_CAT:  # the profiler's own span: the session start, and where profiling stopped
                ts, dur = _ns(ev.get("ts")), _ns(ev.get("dur", 0))
                if ts is not None:
                    self.spans.append((ts, ts + dur if dur is not None and dur >= 0 else ts))
            elif cat == RANGE_PROFILER_CAT:
                self.range_profiler += 1
            tally.other(other_rule("X", cat))
            return
        tally.seen(kind)
        start = _ns(ev.get("ts"))
        dur_ns = _ns(ev.get("dur", 0))
        if start is None or dur_ns is None:
            tally.skip(kind, RULE_BAD_TIME)
            return
        args = ev.get("args")
        args = args if type(args) is dict else {}
        ids = _known_ids(_intish(ev.get("pid")), _intish(ev.get("tid")), args)
        if ids is None:
            tally.skip(kind, RULE_BIG_BYTES)
            return
        pid, tid, args, unknown = ids
        if dur_ns < 0:
            if kind is KIND_RANGES and dur_ns == -1000:  # dur -1: still open when profiling stopped
                self._count_unknown(kind, unknown)
                self.open_ranges.append((cat, _event_name(ev), pid, tid, start, args))
                self.unfinished += 1
                return
            tally.skip(kind, RULE_NEGATIVE)
            return
        if start == 0 and kind is KIND_KERNELS:  # CUPTI's start = end = 0: no timestamp
            # ts 0 with a duration is a real time only in a trace on a relative clock (decided in settle)
            (self.untimed if dur_ns == 0 else self.zero_start).append(
                (cat, _event_name(ev), pid, tid, 0, dur_ns, args, False)
            )
            return
        end = start + dur_ns
        self._count_unknown(kind, unknown)
        self.records.append((cat, _event_name(ev), pid, tid, start, end, args, False))
        self._reach(end)

    def _end(self, ev: dict) -> None:
        """A ``ph: "E"`` event: closes the most recent open ``B`` of its (pid, tid)."""
        tally = self.tally
        stack = self.stacks.get((str(ev.get("pid")), str(ev.get("tid"))))
        if not stack:
            self.unmatched_ends += 1
            tally.other(RULE_E_UNMATCHED)
            return
        tally.other(RULE_E_PAIRED)
        begin = stack.pop()
        if begin is None:  # its B is not mapped, or had no usable ts (already counted)
            return
        b_cat, b_name, b_pid, b_tid, b_start, b_args = begin
        kind = _KIND_OF[b_cat]
        end = _ns(ev.get("ts"))
        if end is None:
            tally.skip(kind, RULE_BAD_TIME)
            return
        if end < b_start:
            tally.skip(kind, RULE_NEGATIVE)
            return
        args = {**b_args, **ev["args"]} if type(ev.get("args")) is dict else b_args
        ids = _known_ids(b_pid, b_tid, args)
        if ids is None:
            tally.skip(kind, RULE_BIG_BYTES)
            return
        b_pid, b_tid, args, unknown = ids
        self._count_unknown(kind, unknown or id(begin) in self.unknown_begins)
        self.records.append((b_cat, b_name, b_pid, b_tid, b_start, end, args, False))
        self._reach(end)

    def _begin(self, ev: dict, cat: str | None) -> None:
        """A ``ph: "B"`` event: opened on its (pid, tid) until an ``E`` closes it."""
        tally = self.tally
        stack = self.stacks.setdefault((str(ev.get("pid")), str(ev.get("tid"))), [])
        kind = _KIND_OF.get(cat)
        if kind is None:
            stack.append(None)
            tally.other(other_rule("B", cat))
            return
        tally.seen(kind)
        start = _ns(ev.get("ts"))
        args = ev.get("args")
        args = args if type(args) is dict else {}
        ids = _known_ids(_intish(ev.get("pid")), _intish(ev.get("tid")), args)
        if start is None or ids is None:
            stack.append(None)
            tally.skip(kind, RULE_BAD_TIME if start is None else RULE_BIG_BYTES)
            return
        pid, tid, args, unknown = ids
        begin = (cat, _event_name(ev), pid, tid, start, args)
        if unknown:
            self.unknown_begins.add(id(begin))
        stack.append(begin)
        self._reach(start)

    def _mark(self, ev: dict) -> None:
        """An instant ``user_annotation`` event: an NVTX mark."""
        self.tally.seen(KIND_MARKS)
        ts = _ns(ev.get("ts"))
        pid, tid, _args, unknown = _known_ids(_intish(ev.get("pid")), _intish(ev.get("tid")), {})
        if ts is None:
            self.tally.skip(KIND_MARKS, RULE_BAD_TIME)
            return
        self._count_unknown(KIND_MARKS, unknown)
        self.marks.append((ts, _event_name(ev), pid, tid))
        self._reach(ts)

    def _other(self, ev: dict, ph: str | None, cat: str | None) -> None:
        """An event no frame holds; thread names and the ``ac2g`` flow ends (kernel -> launch) are kept."""
        if ph == "M" and ev.get("name") == "thread_name" and type(ev.get("args")) is dict:
            label = ev["args"].get("name")
            pid, tid = _intish(ev.get("pid")), _intish(ev.get("tid"))
            if type(label) is str and label.strip() and _in_int64(pid, tid):
                self.thread_names[(pid << 24) | (tid & 0xFFFFFF)] = label.strip()  # as kineto_frames.global_tid
        if ph == "f" and cat == "ac2g":
            ts = _ns(ev.get("ts"))
            flow_id = _intish(ev.get("id"))
            if ts is not None and _in_int64(flow_id):
                self.flow_end[(_intish(ev.get("pid")), _intish(ev.get("tid")), ts)] = flow_id
        self.tally.other(other_rule(ph, cat))

    def settle(self) -> int:
        """After ``read``: close what is still open, decide the kernels at ts 0, and return the session
        origin (also ``origin_ns``)."""
        for stack in self.stacks.values():
            for begin in stack:
                if begin is None:
                    continue
                self.unclosed_begins += 1
                if begin[0] == RANGE_CAT:
                    self._count_unknown(KIND_RANGES, id(begin) in self.unknown_begins)
                    self.open_ranges.append(begin)
                else:
                    self.tally.skip(_KIND_OF[begin[0]], RULE_UNCLOSED_B)
        # Ranges still open are closed where profiling stopped: the end of the profiler's own Trace span
        # when the file has one, else the last event's end (as nsys closes open NVTX ranges).
        records = self.records
        stop = max(e for _, e in self.spans) if self.spans else self.latest
        for b_cat, b_name, b_pid, b_tid, b_start, b_args in self.open_ranges:
            end = max(stop if stop is not None else b_start, b_start)
            records.append((b_cat, b_name, b_pid, b_tid, b_start, end, b_args, True))
        # A kernel at ts 0 among epoch timestamps has no timestamp (it would stretch the span over decades);
        # on a relative clock (small timestamps) ts 0 is the first microsecond.
        if any(r[4] >= EPOCH_NS for r in records):
            self.untimed += [(c, n, p, t, 0, 0, a, u) for c, n, p, t, _s, _e, a, u in self.zero_start]
        else:
            records += self.zero_start
        # t = 0 at the profiler span's start or the earliest mapped event, like an nsys session start.
        starts = [r[4] for r in records] + [m[0] for m in self.marks] + [s for s, _ in self.spans]
        self.origin_ns = min(starts) if starts else 0
        return self.origin_ns

    def _past_the_trace_span(self) -> str:
        """The warning for annotation ranges that end after the profiler's own Trace span ("" without any, or
        without a Trace span): their time past it was not profiled, so a step there looks idle when nothing was
        recorded (a 13.3 s ProfilerStep#1 in a 355 ms Trace span). Ranges closed there as unclosed are not meant."""
        if not self.spans:
            return ""
        stop = max(e for _, e in self.spans)
        past = [(r[5] - stop, r[1]) for r in self.records if r[0] == RANGE_CAT and not r[7] and r[5] > stop]
        if not past:
            return ""
        over, name = max(past, key=lambda p: p[0])
        end, its = ("ends", "its") if len(past) == 1 else ("end", "their")
        return (
            f"{units.count(len(past), 'annotation range')} {end} after the profiler's Trace span (where profiling "
            f"stopped), {name} by {units.duration_short(over)}: {its} time past it was not profiled, so a step "
            "there can read as idle"
        )

    def warnings(self) -> list[str]:
        """One line per problem found in reading (unmatched ends, unclosed or unfinished ranges, ids made
        unknown). Events skipped for bad times, negative durations or byte counts beyond int64 are
        reported through ``meta.accounts`` (``model.input_warnings`` gives one line per kind) instead."""
        out = []
        if self.unmatched_ends:
            out.append(f"{self.unmatched_ends:,} 'E' event(s) without an open 'B' on their thread were ignored")
        where = "the end of the profiler's Trace span" if self.spans else "the last event's end"
        if self.unclosed_begins:
            out.append(
                f"{self.unclosed_begins:,} 'B' event(s) never closed by an 'E' (annotations kept as "
                f"unclosed ranges ending at {where}; other events dropped)"
            )
        if self.unfinished:
            out.append(
                f"{self.unfinished:,} annotation range(s) still open when profiling stopped (dur -1), kept "
                f"as unclosed ranges ending at {where}"
            )
        if past := self._past_the_trace_span():
            out.append(past)
        if any(self.unknown_ids.values()):
            counts = ", ".join(f"{kind} {n:,}" for kind, n in self.unknown_ids.items() if n)
            out.append(
                "events with an id beyond the int64 range (correlation, stream, device, context, process or "
                "thread) loaded with that id unknown, as Perfetto reads them (a stream or device from the "
                f"event's track, a correlation from its flow arrow, else -1): {counts}"
            )
        return out
