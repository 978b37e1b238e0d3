"""Statistics for a time window: a trace's frames clipped exactly to ``[t0_ns, t1_ns)``.

Like Perfetto's area selection and the Nsight GUI's "filter and zoom in": every panel computes its
numbers on the clipped frames with the very functions it uses for the whole trace, so one definition
holds for both. Rules (one for every frame):

- An interval row ``[start, end)`` is kept when it overlaps the window (``start < t1`` and
  ``end > t0``; a zero-length row when ``t0 <= start < t1``) and its times are cut at the window's
  edges: ``start = max(start, t0)``, ``end = min(end, t1)``. So counts are rows overlapping the
  window and durations are the parts inside it.
- Rows with ``end < start`` (invalid) are left out, as they are from every duration.
- Point events (NVTX marks) are kept when ``t0 <= ts < t1``.
- Dispatch steps (``phases.build_dispatches``) are clipped the same way, ``duration_ns`` recomputed;
  their token counts stay those of the whole step (a dispatch is counted once, in every window it
  overlaps).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from dashboard.model import TraceBundle


def overlapping(frame: pd.DataFrame, t0_ns: int, t1_ns: int) -> np.ndarray:
    """Boolean mask of the rows of an interval frame (``start_ns``, ``end_ns``) that overlap
    ``[t0_ns, t1_ns)`` (see the module docstring)."""
    s = frame["start_ns"].to_numpy(np.int64)
    e = frame["end_ns"].to_numpy(np.int64)
    return (e >= s) & (s < t1_ns) & ((e > t0_ns) | ((e == s) & (s >= t0_ns)))


def clip_frame(frame: pd.DataFrame, t0_ns: int, t1_ns: int) -> pd.DataFrame:
    """The rows of an interval frame that overlap ``[t0_ns, t1_ns)``, times cut at its edges.

    Args:
        frame: any frame with int64 ``start_ns`` and ``end_ns`` (other columns kept, dtypes kept).

    Returns:
        A new frame, same columns and dtypes, row order kept, index reset.

    Raises:
        ValueError: ``t1_ns <= t0_ns``.
    """
    if t1_ns <= t0_ns:
        raise ValueError(f"empty window [{t0_ns}, {t1_ns})")
    out = frame[overlapping(frame, t0_ns, t1_ns)].reset_index(drop=True)
    if out.empty:
        return out
    s = out["start_ns"].to_numpy(np.int64)
    e = out["end_ns"].to_numpy(np.int64)
    zero = e == s  # zero-length rows inside the window stay as they are
    cs, ce = np.maximum(s, t0_ns), np.minimum(e, t1_ns)
    out["start_ns"] = np.where(zero, s, cs).astype(np.int64)
    out["end_ns"] = np.where(zero, e, ce).astype(np.int64)
    return out


def clip_bundle(bundle: TraceBundle, t0_ns: int, t1_ns: int) -> TraceBundle:
    """A TraceBundle holding only what lies in ``[t0_ns, t1_ns)``: kernels, memory operations,
    CUDA API calls, NVTX ranges and CUDA graph launches clipped (``clip_frame``), NVTX marks with
    ``t0_ns <= ts_ns < t1_ns``. ``meta`` is the same object.

    Raises:
        ValueError: ``t1_ns <= t0_ns``.
    """
    m = bundle.nvtx_marks
    marks = m[(m["ts_ns"] >= t0_ns) & (m["ts_ns"] < t1_ns)].reset_index(drop=True)
    return replace(
        bundle,
        kernels=clip_frame(bundle.kernels, t0_ns, t1_ns),
        api_calls=clip_frame(bundle.api_calls, t0_ns, t1_ns),
        nvtx_ranges=clip_frame(bundle.nvtx_ranges, t0_ns, t1_ns),
        nvtx_marks=marks,
        memops=clip_frame(bundle.memops, t0_ns, t1_ns),
        graph_launches=clip_frame(bundle.graph_launches, t0_ns, t1_ns),
    )


def clip_dispatches(dispatches: pd.DataFrame, t0_ns: int, t1_ns: int) -> pd.DataFrame:
    """Dispatch steps (``phases.build_dispatches`` columns) overlapping ``[t0_ns, t1_ns)``, cut at
    its edges, ``duration_ns`` = clipped end − clipped start. Index kept (it aligns phases)."""
    if dispatches.empty:
        return dispatches
    mask = overlapping(dispatches, t0_ns, t1_ns)
    out = dispatches[mask].copy()
    if out.empty:
        return out
    s = np.maximum(out["start_ns"].to_numpy(np.int64), t0_ns)
    e = np.minimum(out["end_ns"].to_numpy(np.int64), t1_ns)
    out["start_ns"] = s.astype(np.int64)
    out["end_ns"] = np.maximum(e, s).astype(np.int64)
    out["duration_ns"] = (out["end_ns"] - out["start_ns"]).astype(out["duration_ns"].dtype)
    return out
