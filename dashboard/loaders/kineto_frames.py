"""Kineto events -> the typed frames of ``model`` (``KERNELS``, ``API_CALLS``, ``NVTX_RANGES``,
``NVTX_MARKS``, ``MEMOPS``), each sorted by start time (stable), and the per-process launch counts.

A kernel's ``pid`` is the process of the CUDA API call with its correlation id, so kernel <-> launch
joins work as for nsys. A kernel whose launch is not in the trace (launched before the host-side capture
began) takes the trace's one CUDA API process when exactly one process made CUDA API calls (a Kineto
trace is written by one process), else 0: otherwise one stream would show as two streams, "pid 0 ·
stream 7" and "pid 25286 · stream 7". Memcpy/memset rows take their process the same way (by
correlation id, else the one CUDA API process, else -1): the nsys rules group GPU operations per
(process, device), and memsets left in a process of their own made ``gpu-low-util`` report a busy GPU
as mostly idle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.loaders.kernel_names import kernel_short_names
from dashboard.loaders.kineto_categories import (
    _LAUNCH_API,
    API_EVENT_CLASS,
    KERNEL_CATS,
    KIND_API,
    KIND_KERNELS,
    KIND_MARKS,
    KIND_MEMOPS,
    KIND_RANGES,
    MEMCPY_CAT,
    MEMSET_CAT,
    RANGE_CAT,
)
from dashboard.loaders.kineto_events import KinetoEvents, _dims, _intish
from dashboard.model import API_CALLS, KERNELS, MEMOPS, NVTX_MARKS, NVTX_RANGES, UNNAMED_NVTX, conform, empty_frame


@dataclass(frozen=True)
class KinetoFrames:
    """The frames of one trace, and how many events each kind loaded (for ``meta.accounts``)."""

    kernels: pd.DataFrame
    api_calls: pd.DataFrame
    nvtx_ranges: pd.DataFrame
    nvtx_marks: pd.DataFrame
    memops: pd.DataFrame
    loaded: dict[str, int]


def build_frames(log: KinetoEvents) -> KinetoFrames:
    """The frames of a read and settled ``KinetoEvents``, times relative to its ``origin_ns``."""
    origin_ns = log.origin_ns
    by_cat: dict[str, list[tuple]] = {}
    for rec in log.records:
        by_cat.setdefault(rec[0], []).append(rec)
    api_recs = [r for c, rs in by_cat.items() if c in API_EVENT_CLASS for r in rs]
    api = api_frame(api_recs, origin_ns)
    api_pid = dict(zip(api["correlation_id"].tolist(), api["pid"].tolist())) if len(api) else {}
    api_pids = api["pid"].unique().tolist() if len(api) else []
    # The process of a GPU operation whose launch is not in the trace (None: not one process to give it to).
    unlaunched_pid = int(api_pids[0]) if len(api_pids) == 1 else None
    kernel_recs = [r for c, rs in by_cat.items() if c in KERNEL_CATS for r in rs]
    kernel_recs += [(c, n, p, t, origin_ns, origin_ns, a, u) for c, n, p, t, _s, _e, a, u in log.untimed]
    memop_recs = by_cat.get(MEMCPY_CAT, []) + by_cat.get(MEMSET_CAT, [])
    range_recs = by_cat.get(RANGE_CAT, [])
    loaded = {
        KIND_KERNELS: len(kernel_recs),
        KIND_MEMOPS: len(memop_recs),
        KIND_API: len(api_recs),
        KIND_RANGES: len(range_recs),
        KIND_MARKS: len(log.marks),
    }
    return KinetoFrames(
        kernels=kernel_frame(
            kernel_recs, origin_ns, log.flow_end, api_pid, 0 if unlaunched_pid is None else unlaunched_pid
        ),
        api_calls=api,
        nvtx_ranges=range_frame(range_recs, origin_ns),
        nvtx_marks=mark_frame(log.marks, origin_ns),
        memops=memop_frame(memop_recs, origin_ns, api_pid, -1 if unlaunched_pid is None else unlaunched_pid),
        loaded=loaded,
    )


def gpu_activity_missing(log: KinetoEvents, api: pd.DataFrame) -> str:
    """``TraceMeta.gpu_activity_missing``: the warning line when kernel launches were recorded without
    any kernel activity (CUPTI range-profiler mode, or kernel tracing off), else ""."""
    launches = int(api["name"].astype(str).str.match(_LAUNCH_API).sum()) if len(api) else 0
    if log.tally.read.get(KIND_KERNELS) or not launches:
        return ""
    return (
        f"no kernel activity although {launches:,} kernel launch(es) were recorded"
        + (
            f": recorded in CUPTI range-profiler mode ({log.range_profiler:,} cuda_profiler_range events hold "
            "counter values, not kernel timing)"
            if log.range_profiler
            else ": kernel tracing was off or lost"
        )
        + "; GPU busy, idle and utilisation are unknown (n/a)"
    )


def launches_by_pid(api: pd.DataFrame, kernels: pd.DataFrame) -> tuple[tuple[int, int, int], ...]:
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


def global_tid(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """nsys's ``global_tid`` packing: ``pid << 24 | tid`` (tid taken mod 2**24)."""
    return (pid.astype(np.int64) << 24) | (tid.astype(np.int64) & 0xFFFFFF)


def kernel_frame(
    recs: list[tuple], origin_ns: int, flow_end: dict, api_pid: dict, unlaunched_pid: int = 0
) -> pd.DataFrame:
    """KERNELS from kernel records: device, stream, context and correlation from ``args`` (else the
    track's pid/tid, the ``ac2g`` flow end at the kernel's start), ``pid`` from the launch's process."""
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
            "pid": pid_arr,
            "graph_node_id": pd.array([pd.NA] * len(recs), dtype="Int64"),
            "short_name": pd.Categorical(short_of[names.codes]),
            "name": names,
            "launch": pd.Categorical(launch),
        }
    )
    return _sorted(frame, KERNELS)


def api_frame(recs: list[tuple], origin_ns: int) -> pd.DataFrame:
    """API_CALLS from CUDA/HIP runtime and driver records (``event_class`` 0 runtime, 1 driver)."""
    if not recs:
        return empty_frame(API_CALLS)
    start, end = _times(recs, origin_ns)
    pid = np.fromiter((r[2] for r in recs), dtype=np.int64, count=len(recs))
    tid = np.fromiter((r[3] for r in recs), dtype=np.int64, count=len(recs))
    frame = pd.DataFrame(
        {
            "start_ns": start,
            "end_ns": end,
            "global_tid": global_tid(pid, tid),
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


def range_frame(recs: list[tuple], origin_ns: int) -> pd.DataFrame:
    """NVTX_RANGES from ``user_annotation`` records: the default domain, kind "push/pop"."""
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
            "global_tid": global_tid(pid, tid),
            "pid": pid,
            "tid": tid,
            "kind": pd.Categorical(["push/pop"] * len(recs)),
            "unclosed": np.fromiter((r[7] for r in recs), dtype=bool, count=len(recs)),
            "cross_thread": np.zeros(len(recs), dtype=bool),
        }
    )
    return _sorted(frame, NVTX_RANGES)


def mark_frame(marks: list[tuple], origin_ns: int) -> pd.DataFrame:
    """NVTX_MARKS from instant ``user_annotation`` events."""
    if not marks:
        return empty_frame(NVTX_MARKS)
    pid = np.asarray([m[2] for m in marks], dtype=np.int64)
    tid = np.asarray([m[3] for m in marks], dtype=np.int64)
    frame = pd.DataFrame(
        {
            "ts_ns": np.asarray([m[0] - origin_ns for m in marks], dtype=np.int64),
            "name": pd.Categorical([m[1] for m in marks]),
            "global_tid": global_tid(pid, tid),
            "pid": pid,
            "tid": tid,
        }
    )
    return _sorted(frame, NVTX_MARKS, key="ts_ns")


def _memcpy_kind(name: str, args: dict) -> str:
    kind = args.get("kind")
    if isinstance(kind, str) and kind and not kind.isdigit():
        return f"memcpy {kind}"
    parts = name.split()
    if len(parts) >= 2 and parts[0].lower() == "memcpy":
        return f"memcpy {parts[1]}"
    return "memcpy"


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


def memop_frame(
    recs: list[tuple], origin_ns: int, api_pid: dict | None = None, unlaunched_pid: int = -1
) -> pd.DataFrame:
    """MEMOPS from ``gpu_memcpy``/``gpu_memset`` records (kind, bytes and memory kinds from ``args`` or the name)."""
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
