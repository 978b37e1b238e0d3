"""GPU busy / idle per device and for all GPUs, kernel time sums, and kernel -> API-call joins.

Definitions (the dashboard's; the seed summary keeps kernels only, see summary_contract.md):

* kernel sum: Σ (end − start) of kernels. Concurrent streams add up, so it can exceed the span;
  it is never shown as utilisation.
* busy: length of the union of the chosen GPU work intervals (kernels; optionally memcpy/memset;
  CUDA graph launches traced at graph level, which have no kernel rows, as opaque intervals).
  Streams are keyed by (device, stream): the same stream id on two devices never merges.
* window: from the first start to the last end of the chosen work over all devices.
* idle: window − busy, per device within the same (all-GPU) window; utilisation = busy / window.

::

    dev 0  stream 7 [0,80) [90,100)     busy 90   idle 10 in [0,100)
    dev 1  stream 7 [0,80)              busy 80   idle 20
    dev 2  stream 7      [10,90)        busy 80   idle 20
    all GPUs (union)    [0,100)         busy 100  idle 0
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import union_length
from dashboard.analysis.summary import kernel_durations, timed_kernels

ALL_GPUS = -1  # device_id of the all-GPU row

GPU_TIME: dict[str, str] = {
    "device_id": "int64",  # ALL_GPUS for the union over every device
    "kernels": "int64",
    "kernel_sum_ns": "int64",
    "busy_ns": "int64",
    "window_ns": "int64",
    "idle_ns": "int64",
    "utilisation_pct": "float64",
    "streams": "int64",
}


def gpu_work(kernels: pd.DataFrame, memops: pd.DataFrame | None = None, graph_launches: pd.DataFrame | None = None,
             *, include_memops: bool = False, include_graphs: bool = True) -> pd.DataFrame:
    """The GPU work intervals that count as busy.

    Args:
        kernels: KERNELS frame; rows without timestamps and invalid rows are left out.
        memops: MEMOPS frame, counted when ``include_memops``.
        graph_launches: GRAPH_LAUNCHES frame (graph-level CUDA graph tracing), counted when
            ``include_graphs``: each launch is one opaque interval.

    Returns:
        Frame (device_id, stream_id, start_ns, end_ns, kind) with kind in
        {"kernel", "memop", "graph"}, in input order per kind.
    """
    k = timed_kernels(kernels)
    parts = [pd.DataFrame({"device_id": k["device_id"].to_numpy(), "stream_id": k["stream_id"].to_numpy(),
                           "start_ns": k["start_ns"].to_numpy(), "end_ns": k["end_ns"].to_numpy(), "kind": "kernel"})]
    if include_memops and memops is not None and not memops.empty:
        parts.append(pd.DataFrame({"device_id": memops["device_id"].to_numpy(), "stream_id": memops["stream_id"].to_numpy(),
                                   "start_ns": memops["start_ns"].to_numpy(), "end_ns": memops["end_ns"].to_numpy(),
                                   "kind": "memop"}))
    if include_graphs and graph_launches is not None and not graph_launches.empty:
        g = graph_launches
        parts.append(pd.DataFrame({"device_id": g["device_id"].to_numpy(), "stream_id": g["stream_id"].to_numpy(),
                                   "start_ns": g["start_ns"].to_numpy(), "end_ns": g["end_ns"].to_numpy(),
                                   "kind": "graph"}))
    out = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return out.astype({"device_id": "int64", "stream_id": "int64", "start_ns": "int64", "end_ns": "int64"})


def gpu_time(work: pd.DataFrame, kernels: pd.DataFrame | None = None) -> pd.DataFrame:
    """Busy, idle and utilisation per device and for all GPUs together.

    Args:
        work: frame from ``gpu_work``.
        kernels: KERNELS frame for the kernel count and kernel sum columns (optional).

    Returns:
        GPU_TIME frame: one row per device (sorted by id), then the ALL_GPUS row. Empty (typed)
        when there is no work. ``streams`` counts distinct (device, stream) pairs.
    """
    if work.empty:
        return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in GPU_TIME.items()})
    lo = int(work["start_ns"].min())
    hi = int(work["end_ns"].max())
    window = hi - lo
    ksum = kcount = None
    if kernels is not None:
        dur = kernel_durations(kernels)
        ksum = dur.groupby(kernels["device_id"].to_numpy()).sum()
        kcount = kernels.groupby("device_id").size()
    rows = []
    for dev, grp in work.groupby("device_id", sort=True):
        busy = union_length(grp["start_ns"].to_numpy(), grp["end_ns"].to_numpy())
        rows.append((int(dev), int(kcount.get(dev, 0)) if kcount is not None else 0,
                     int(ksum.get(dev, 0)) if ksum is not None else 0, busy, window, window - busy,
                     100.0 * busy / window if window > 0 else 0.0, grp["stream_id"].nunique()))
    busy_all = union_length(work["start_ns"].to_numpy(), work["end_ns"].to_numpy())
    rows.append((ALL_GPUS, sum(r[1] for r in rows), sum(r[2] for r in rows), busy_all, window, window - busy_all,
                 100.0 * busy_all / window if window > 0 else 0.0, sum(r[7] for r in rows)))
    return pd.DataFrame(rows, columns=list(GPU_TIME)).astype(GPU_TIME)


def kernel_launches(kernels: pd.DataFrame, api_calls: pd.DataFrame) -> pd.DataFrame:
    """Join each kernel to the CUDA API call that launched it, on correlation id AND process.

    Correlation ids are unique only within a process, so the join key is (correlation_id, pid)
    (nsys: ``globalPid = globalTid & 0xFFFFFFFFFF000000``). Several kernels can share one launch
    (a node-traced CUDA graph launch).

    Returns:
        Frame with one row per matched kernel, in kernel order: kernel_index (row position in
        ``kernels``), api_index (row position in ``api_calls``), correlation_id, pid,
        api_name, api_start_ns, kernel_start_ns.
    """
    k = pd.DataFrame({"kernel_index": np.arange(len(kernels)), "correlation_id": kernels["correlation_id"].to_numpy(),
                      "pid": kernels["pid"].to_numpy(), "kernel_start_ns": kernels["start_ns"].to_numpy()})
    a = pd.DataFrame({"api_index": np.arange(len(api_calls)), "correlation_id": api_calls["correlation_id"].to_numpy(),
                      "pid": api_calls["pid"].to_numpy(), "api_name": api_calls["name"].astype(str).to_numpy(),
                      "api_start_ns": api_calls["start_ns"].to_numpy()})
    a = a[a["correlation_id"] >= 0].drop_duplicates(["correlation_id", "pid"], keep="first")
    out = k[k["correlation_id"] >= 0].merge(a, on=["correlation_id", "pid"], how="inner", sort=False)
    out = out.sort_values("kernel_index", kind="stable").reset_index(drop=True)
    return out[["kernel_index", "api_index", "correlation_id", "pid", "api_name", "api_start_ns", "kernel_start_ns"]]
