"""Give memory that Arrow has freed back to the operating system."""

from __future__ import annotations

import sys


def release_freed_arrow_memory() -> None:
    """Return to the OS what Arrow's allocator holds after frees, for the calling thread.

    Why: pyarrow's default pool (mimalloc) keeps freed pages for reuse; after reading a 10M-kernel trace's
    Parquet cache it held ~1 GB that nothing used (``benchmarks/run.py``). mimalloc collects per thread, so
    each thread that did big Arrow work calls this when done (a load, a cache write, a view). A no-op
    when pyarrow was never imported.
    """
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()
