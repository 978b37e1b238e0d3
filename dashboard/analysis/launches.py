"""The kernel -> launch-call join: each kernel's CUDA API call, on (process, correlation id).

Correlation ids are unique only within a process, so the key is the pair (nsys: ``globalPid =
globalTid & 0xFFFFFFFFFF000000``), and the first API row of a key is the launch call, as NVIDIA's
projection scripts join them. Several kernels can share one call (a node-traced CUDA graph launch).
A negative correlation id means "unknown" and never matches.

One implementation for every consumer (dispatch attribution, idle-gap causes, the timeline's launch
hovers, the findings): the API calls are indexed once by one int64 key per (pid, correlation id)
(``launch_key``) and kernels are looked up with a binary search; ids too large for the key fall back
to a merge on the two columns, with the same result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import PART_ROWS

KEY_CORR_BITS = 33  # key = (pid + 1) << 33 | (correlation id + 1)
_MAX_PID = 1 << 29  # keeps the key below 2**62


def launch_key(pid, corr) -> np.ndarray | None:
    """One int64 per (pid, correlation id) pair, order-preserving; None when some value does not fit
    (pid outside [-1, 2**29), correlation id outside [-1, 2**33 - 1))."""
    pid = np.asarray(pid, dtype=np.int64)
    corr = np.asarray(corr, dtype=np.int64)
    if not _key_fits(pid, corr):
        return None
    return ((pid + 1) << KEY_CORR_BITS) | (corr + 1)


def _key_fits(pid: np.ndarray, corr: np.ndarray) -> bool:
    """Whether every (pid, correlation id) pair fits ``launch_key`` (no copy of the columns)."""
    return not len(pid) or not (
        int(pid.min()) < -1
        or int(pid.max()) >= _MAX_PID
        or int(corr.min()) < -1
        or int(corr.max()) >= (1 << KEY_CORR_BITS) - 1
    )


@dataclass(frozen=True)
class LaunchIndex:
    """The API calls with a known correlation id by ``launch_key``: ``keys`` sorted and unique, ``rows``
    the position in the API frame of the first call with each key. ``keys`` is None when the ids do not
    fit the key (lookups then merge)."""

    keys: np.ndarray | None
    rows: np.ndarray | None


def launch_index(api_calls: pd.DataFrame) -> LaunchIndex:
    """``LaunchIndex`` of an API_CALLS frame (built once per trace by the derived-data layer)."""
    corr = api_calls["correlation_id"].to_numpy(np.int64)
    keys = launch_key(api_calls["pid"].to_numpy(), corr)
    if keys is None:
        return LaunchIndex(None, None)
    rows = _narrow(np.flatnonzero(corr >= 0), len(corr))
    keys = keys[rows]
    if keys.size > 1 and not (keys[1:] > keys[:-1]).all():  # usually file order is key order already
        order = np.argsort(keys, kind="stable")  # equal keys keep file order: the first call comes first
        keys, rows = keys[order], rows[order]
        first = np.r_[True, keys[1:] != keys[:-1]]
        keys, rows = keys[first], rows[first]
    return LaunchIndex(keys, rows)


def match_launches(
    kernels: pd.DataFrame, api_calls: pd.DataFrame, index: LaunchIndex | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(kernel_pos, api_pos)``: for every kernel that has a launch call, in kernel order, its row
    position in ``kernels`` and its call's row position in ``api_calls``.

    ``index``: ``launch_index(api_calls)`` when the caller keeps it (a zoom looks up a few kernels).
    """
    index = index if index is not None else launch_index(api_calls)
    kpid, kcorr = kernels["pid"].to_numpy(), kernels["correlation_id"].to_numpy()
    if index.keys is None or not _key_fits(kpid, kcorr):
        return _match_by_merge(kernels, api_calls)
    keys, rows = index.keys, index.rows
    if not len(keys) or not len(kernels):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    kernel_pos, api_pos = [], []
    for a in range(0, len(kernels), PART_ROWS):  # a part of the kernels at a time: 10M make no 80 MB temporaries
        corr = kcorr[a : a + PART_ROWS].astype(np.int64)
        wanted = launch_key(kpid[a : a + PART_ROWS], corr)
        pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        hit = (corr >= 0) & (keys[pos] == wanted)
        kernel_pos.append(_narrow(np.flatnonzero(hit) + a, len(kernels)))
        api_pos.append(rows[pos[hit]])
    return np.concatenate(kernel_pos), np.concatenate(api_pos)


def launches_at(launches: pd.DataFrame, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``match_launches`` for the kernel rows at ``positions`` (row positions in the kernel frame), looked up in
    the trace's ``kernel_launches`` frame (kernel order: a binary search): ``(i, api_pos)``, ``i`` the indices
    into ``positions`` of the kernels with a launch call. A zoom's few hundred drawn kernels need no index of
    every CUDA API call."""
    kernel_index = launches["kernel_index"].to_numpy()
    positions = np.asarray(positions, dtype=np.int64)
    if not len(kernel_index) or not len(positions):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # searched at the join's own dtype: an int64 search of an int32 column copies the whole column first
    wanted = positions.astype(kernel_index.dtype) if positions.max() <= np.iinfo(kernel_index.dtype).max else positions
    at = np.minimum(np.searchsorted(kernel_index, wanted), len(kernel_index) - 1)
    hit = kernel_index[at] == positions
    return np.flatnonzero(hit), launches["api_index"].to_numpy()[at[hit]].astype(np.int64)


def _match_by_merge(kernels: pd.DataFrame, api_calls: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``match_launches`` by a merge on (pid, correlation id), for ids too large for ``launch_key``."""
    k = pd.DataFrame(
        {
            "kernel_pos": np.arange(len(kernels)),
            "correlation_id": kernels["correlation_id"].to_numpy(),
            "pid": kernels["pid"].to_numpy(),
        }
    )
    a = pd.DataFrame(
        {
            "api_pos": np.arange(len(api_calls)),
            "correlation_id": api_calls["correlation_id"].to_numpy(),
            "pid": api_calls["pid"].to_numpy(),
        }
    )
    a = a[a["correlation_id"] >= 0].drop_duplicates(["correlation_id", "pid"], keep="first")
    out = k[k["correlation_id"] >= 0].merge(a, on=["correlation_id", "pid"], how="inner", sort=False)
    out = out.sort_values("kernel_pos", kind="stable")
    return out["kernel_pos"].to_numpy(np.int64), out["api_pos"].to_numpy(np.int64)


def kernel_launches(kernels: pd.DataFrame, api_calls: pd.DataFrame, index: LaunchIndex | None = None) -> pd.DataFrame:
    """Each kernel joined to the CUDA API call that launched it (see the module docstring).

    Returns:
        Frame with one row per matched kernel, in kernel order: kernel_index (row position in
        ``kernels``), api_index (row position in ``api_calls``), both int32 when the frames allow, pid and
        api_start_ns. Anything else of the call or the kernel is a lookup by position
        (``api_calls["name"].iloc[api_index]``, ``launch_call_ns``): a trace keeps this frame, and 10M launches
        cost 20 bytes each, not ~50.
    """
    kpos, apos = match_launches(kernels, api_calls, index)
    return pd.DataFrame(
        {
            "kernel_index": _narrow(kpos, len(kernels)),
            "api_index": _narrow(apos, len(api_calls)),
            "pid": kernels["pid"].to_numpy()[kpos],
            "api_start_ns": api_calls["start_ns"].to_numpy(np.int64)[apos],
        },
        copy=False,
    )


def launch_call_ns(launches: pd.DataFrame, api_calls: pd.DataFrame) -> np.ndarray:
    """The duration of each launch's call (end - start, int64 ns), aligned with ``launches`` (a
    ``kernel_launches`` frame of ``api_calls``): looked up when a findings rule needs it, not kept."""
    return api_calls["end_ns"].to_numpy(np.int64)[launches["api_index"].to_numpy()] - launches["api_start_ns"].to_numpy(
        np.int64
    )


def launch_call_total(launches: pd.DataFrame, api_calls: pd.DataFrame, keep, part: int = PART_ROWS) -> int:
    """Σ of the durations of the launch calls of the launches ``keep`` selects, each call once: one call can
    launch many kernels (a CUDA graph launch runs all of its nodes' kernels), and counted per kernel a 0.5 ms
    graph launch of 425 kernels read as 213 ms. ``keep``: positions in ``launches``, or a callable given a part's
    ``kernel_index`` values that returns which of them count (a boolean array). A part at a time (10M launches:
    no 10M-row temporaries)."""
    api_index = launches["api_index"].to_numpy()
    called = np.zeros(len(api_calls), dtype=bool)
    if callable(keep):
        kernel_index = launches["kernel_index"].to_numpy()
        for a in range(0, len(launches), part):
            called[api_index[a : a + part][keep(kernel_index[a : a + part])]] = True
    else:
        for a in range(0, len(keep), part):
            called[api_index[keep[a : a + part]]] = True
    start = api_calls["start_ns"].to_numpy(np.int64)
    end = api_calls["end_ns"].to_numpy(np.int64)
    total = 0
    for a in range(0, len(called), part):
        calls = np.flatnonzero(called[a : a + part]) + a
        total += int((end[calls] - start[calls]).sum())
    return total


def _narrow(positions: np.ndarray, rows: int) -> np.ndarray:
    """Row positions as int32 when the frame has fewer than 2**31 rows."""
    return positions.astype(np.int32, copy=False) if rows < np.iinfo(np.int32).max else positions
