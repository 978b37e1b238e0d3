"""Give freed memory back to the operating system: what Arrow's allocator holds, and glibc's settings for a
process of large frames (``tune_malloc``; here, not in the server module, so that a probe needs no web stack)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


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


# What a command that reads a trace once and exits asks of the allocators (``one_shot_allocators``): the variable,
# its value, and the module that reads it once, on import or first use (then too late to set).
ONE_SHOT_SETTINGS = (("ARROW_DEFAULT_MEMORY_POOL", "system", "pyarrow"), ("NUMPY_MADVISE_HUGEPAGE", "0", "numpy"))


@contextmanager
def one_shot_allocators() -> Iterator[None]:
    """Within it, allocation settings for a command that reads a trace once and exits (every command but ``serve``,
    which keeps the defaults and gives memory back after each load: ``release_freed_arrow_memory``, ``tune_malloc``):

    - Arrow's buffers from the system allocator (glibc), not its default mimalloc pool, which hands freed segments
      back to the system and faults them in again for the next batch of columns;
    - no transparent-huge-page advice for numpy's large arrays: on a machine whose memory is fragmented the kernel
      compacts memory to find huge pages on the first touch of each array.

    Both cost a cold ``summarize`` of a big trace seconds of system time (docs/benchmarks.md, Ingest); ``serve``'s
    views are faster with the huge pages. Each setting is left alone when the user set the
    variable or its module is already imported; each is set only for the command (child processes it starts
    inherit it)."""
    chosen = [name for name, _, module in ONE_SHOT_SETTINGS if name not in os.environ and module not in sys.modules]
    for name, value, _ in ONE_SHOT_SETTINGS:
        if name in chosen:
            os.environ[name] = value
    try:
        yield
    finally:
        for name in chosen:
            os.environ.pop(name, None)


# glibc malloc settings for a server of large pandas frames (mallopt(3) parameter numbers).
M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8
MMAP_THRESHOLD_BYTES = 4 * 1024**2  # larger blocks (a column of a big frame) are mapped, and unmapped when freed
ARENA_MAX = 2


def tune_malloc() -> bool:
    """Make the process give the memory of freed frames back to the system (glibc only).

    By default glibc raises its mmap threshold as large blocks are freed (up to 32 MiB), so the
    columns of a large trace's frames end up in the heap, and each of the server's threads gets its
    own arena (up to 8 per core), which keeps what it freed. A server rendering a 2M-kernel trace's
    views in several threads then held ~1.5 GiB at rest where ~0.6 GiB was live. A fixed threshold
    of ``MMAP_THRESHOLD_BYTES`` and ``ARENA_MAX`` arenas: peak PSS 1.55-1.7 -> ~1.0 GiB, same load
    time (``benchmarks/page_load.py --big``). Returns False where mallopt is unavailable (not glibc).
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_ARENA_MAX, ARENA_MAX))
