"""How many time slices a `summarize` of one export needs to fit in memory. Importable without pandas: `summarize`
decides this before it starts reading."""

from __future__ import annotations

import math
import os
from pathlib import Path

from dashboard.loaders.nsys_reads import estimate_rows

# Peak memory of a single-pass `summarize` per row of the export (kernels, CUDA API calls, NVTX events,
# memcpy/memset), measured on generated traces (docs/benchmarks.md, "Summarize per time slice"), rounded up.
BYTES_PER_ROW = 160
# The share of a worker's memory a slice may take (the rest: Python, the string table, Dask itself).
WORKER_SHARE = 0.5


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def auto_slice_count(path: Path, workers: int | None = None, available: int | None = None) -> int:
    """Slices for ``path`` so that each fits a worker: the estimated single-pass memory
    (``BYTES_PER_ROW`` per row) against ``WORKER_SHARE`` of the memory each of ``workers`` (default: the
    cores) may use of ``available`` (default: the memory available now). 1 when it fits in one pass.

    Raises:
        TraceNotFoundError, TraceFormatError: as ``load_nsys_sqlite``.
    """
    import psutil

    need = estimate_rows(path) * BYTES_PER_ROW
    avail = psutil.virtual_memory().available if available is None else available
    if need <= avail * WORKER_SHARE:
        return 1
    per_worker = avail * WORKER_SHARE / (workers or _cores())
    return max(2, math.ceil(need / per_worker))
