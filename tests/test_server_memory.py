"""The server gives freed frames' memory back to the system (dashboard.server.tune_malloc)."""

import os
import subprocess
import sys

import pytest

# Frees every other one of 20 8-MiB arrays after a 16-MiB one was freed (which, by default, raises
# glibc's mmap threshold to 16 MiB, so the 8-MiB arrays come from the heap, whose holes are kept).
# Prints the MiB kept free inside the heap and the MiB in mapped blocks (unmapped when freed), from
# glibc's own counters (mallinfo2), so the figures do not depend on what else the machine is doing.
PROBE = """
import ctypes, sys
import numpy as np
from dashboard.server import tune_malloc

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "tuned":
    assert tune_malloc()
a = np.ones(2 * 1024**2); del a
m0 = libc.mallinfo2()
blocks = [np.ones(1024**2) for _ in range(20)]
del blocks[::2]
m1 = libc.mallinfo2()
print((m1.fordblks - m0.fordblks) / 2**20, (m1.hblkhd - m0.hblkhd) / 2**20)
"""


def _has_mallinfo2() -> bool:
    import ctypes

    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _has_mallinfo2(), reason="glibc >= 2.33 malloc")
def test_tuned_malloc_returns_freed_frames_to_the_system():
    def kept_and_mapped_mib(mode: str) -> tuple[float, float]:
        # glibc's defaults, whatever this process was given (importing dask's distributed sets MALLOC_TRIM_THRESHOLD_)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True, env=env)
        kept, mapped = map(float, out.stdout.split())
        return kept, mapped

    kept, mapped = kept_and_mapped_mib("default")
    assert kept > 79 and mapped < 1, (kept, mapped)  # the 10 freed arrays: 80 MiB of holes kept in the heap
    kept, mapped = kept_and_mapped_mib("tuned")
    assert kept < 1 and 79 < mapped < 81, (kept, mapped)  # each array mapped on its own: freed ones unmapped


def test_a_traces_analyses_compute_one_at_a_time_and_may_nest():
    """render.memo: different analyses of one trace never run at once (their working memory would add
    up), an analysis may use another (re-entrant), and another trace's analyses do not wait."""
    import threading
    import time

    from dashboard import render

    class Trace:  # memo keys by object identity (weakly)
        pass

    a, b = Trace(), Trace()
    running, peak, lock = [0], [0], threading.Lock()

    def analysis(n):
        def compute():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.02)
            with lock:
                running[0] -= 1
            return n
        return compute

    threads = [threading.Thread(target=render.memo, args=(a, ("k", n), analysis(n))) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 1  # four analyses of a: one at a time
    assert [render.memo(a, ("k", n), lambda: -1) for n in range(4)] == [0, 1, 2, 3]  # kept, not recomputed
    assert render.memo(a, ("outer",), lambda: render.memo(a, ("inner",), lambda: 1) + 1) == 2

    started, b_done, saw_b = threading.Event(), threading.Event(), []

    def slow_a():  # holds a's gate until b's analysis has run
        started.set()
        saw_b.append(b_done.wait(10))
        return 0

    t = threading.Thread(target=render.memo, args=(a, ("slow",), slow_a))
    t.start()
    started.wait(10)
    assert render.memo(b, ("k",), lambda: b_done.set() or 7) == 7
    t.join()
    assert saw_b == [True]  # b's analysis ran while one of a's was computing
