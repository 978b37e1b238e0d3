"""The server gives freed frames' memory back to the system (dashboard.server.tune_malloc)."""

import subprocess
import sys

import pytest

# Frees every other one of 20 8-MiB arrays after a 16-MiB one was freed (which, by default, raises
# glibc's mmap threshold to 16 MiB, so the 8-MiB arrays come from the heap, whose holes are kept).
PROBE = """
import sys
import numpy as np, psutil
from dashboard.server import tune_malloc
if sys.argv[1] == "tuned":
    assert tune_malloc()
p = psutil.Process()
a = np.ones(2 * 1024**2); del a
base = p.memory_info().rss
blocks = [np.ones(1024**2) for _ in range(20)]
del blocks[::2]
print((p.memory_info().rss - base) / 1024**2)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc")
def test_tuned_malloc_returns_freed_frames_to_the_system():
    def held_mib(mode: str) -> float:
        out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
        return float(out.stdout)

    assert held_mib("default") > 140  # 80 MiB live + 80 MiB of holes kept in the heap
    assert 70 < held_mib("tuned") < 100  # the 80 MiB still referenced, nothing more


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
