"""A small nsys export whose window statistics are worked out by hand (tests/test_window.py and the
browser test of the "Stats for: visible window" switch)."""

from factories import write_nsys_sqlite

WINDOW = (80, 520)  # [t0_ns, t1_ns)


def write_window_fixture(path):
    """Kernels on two GPUs, CUDA API calls, NVTX ranges and a memcpy around the window [80, 520):

    ====== ================ =========== ===========================
    what   interval (ns)    device      inside [80, 520)
    ====== ================ =========== ===========================
    e      [60, 80)         0           no (ends at t0)
    a      [0, 100)         0           [80, 100)   = 20
    d      [120, 180)       1           [120, 180)  = 60
    b      [150, 400)       0           [150, 400)  = 250
    c      [500, 600)       0           [500, 520)  = 20
    f      [520, 530)       0           no (starts at t1)
    ====== ================ =========== ===========================

    Window: 4 kernels, kernel time 350 ns, busy union (all GPUs) [80,100) ∪ [120,400) ∪ [500,520)
    = 320 ns, span 80..520 = 440 ns, idle 120 ns. API calls [90,110) and [300,320) (2 calls, 40 ns;
    [700,800) is outside). NVTX r1 [50,250) -> 170 ns, r2 [260,900) -> 260 ns. memcpy [100,150) -> 50 ns.
    """

    def k(name, s, e, dev=0, corr=0):
        return {
            "start": s,
            "end": e,
            "deviceId": dev,
            "shortName": name,  # noqa: E731
            "demangledName": name,
            "correlationId": corr,
        }

    return write_nsys_sqlite(
        path,
        kernels=[
            k("e", 60, 80),
            k("a", 0, 100, corr=1),
            k("d", 120, 180, 1),
            k("b", 150, 400, corr=2),
            k("c", 500, 600, corr=3),
            k("f", 520, 530),
        ],
        runtime=[
            {"start": 90, "end": 110, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
            {"start": 300, "end": 320, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
            {"start": 700, "end": 800, "name": "cudaMemcpyAsync_v3020", "correlationId": 9},
        ],
        nvtx=[
            {"start": 50, "end": 250, "eventType": 59, "text": "r1"},
            {"start": 260, "end": 900, "eventType": 59, "text": "r2"},
        ],
        memcpy=[{"start": 100, "end": 150, "deviceId": 0}],
    )
