"""A small baseline/candidate pair of nsys exports built in code, for the compare tests.

Dispatches (mark -> next mark; the last ends at the last kernel end):
    A: 512@0 (1000 ns), 1@1000 (200), 1@1200 (200), 3@1400 (200)      -> ends 1600
    B: 512@0 (900 ns),  1@900 (200),  3@1100 (300), 5@1400 (300)       -> ends 1700
Kernels (ns):
    flash_fwd_kernel         A 600           B 500
    ampere_sgemm_128x64      A 300+100+100   B 300+150+100
    ncclDevKernel_AllReduce  A 100           B 200
    onlyA_kernel             A 100           B -
    onlyB_kernel             A -             B 50
"""

from __future__ import annotations

from pathlib import Path

from factories import write_nsys_sqlite


def _marks(pairs):
    return [{"start": t, "eventType": 34, "text": f"CG_DISPATCH:actual={n}:mode=NONE:padded={n}"} for t, n in pairs]


def _kernels(rows):
    return [{"start": s, "end": e, "shortName": n, "correlationId": i + 1} for i, (n, s, e) in enumerate(rows)]


def write_pair(folder: Path) -> tuple[Path, Path]:
    """Write ``baseline.sqlite`` and ``candidate.sqlite`` into ``folder``; return their paths."""
    a = write_nsys_sqlite(
        folder / "baseline.sqlite",
        kernels=_kernels(
            [
                ("flash_fwd_kernel", 0, 600),
                ("ampere_sgemm_128x64", 600, 900),
                ("ncclDevKernel_AllReduce", 1000, 1100),
                ("ampere_sgemm_128x64", 1200, 1300),
                ("onlyA_kernel", 1400, 1500),
                ("ampere_sgemm_128x64", 1500, 1600),
            ]
        ),
        runtime=[
            {"start": 1, "end": 11, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
            {"start": 20, "end": 30, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
        ],
        nvtx=[
            *_marks([(0, 512), (1000, 1), (1200, 1), (1400, 3)]),
            {"start": 0, "end": 100, "eventType": 59, "text": "aten::mm, seq = 1, op_id = 5"},
            {"start": 200, "end": 300, "eventType": 59, "text": "aten::mm, seq = 2, op_id = 6"},
        ],
    )
    b = write_nsys_sqlite(
        folder / "candidate.sqlite",
        kernels=_kernels(
            [
                ("flash_fwd_kernel", 0, 500),
                ("ampere_sgemm_128x64", 500, 800),
                ("ncclDevKernel_AllReduce", 900, 1100),
                ("ampere_sgemm_128x64", 1100, 1250),
                ("onlyB_kernel", 1400, 1450),
                ("ampere_sgemm_128x64", 1600, 1700),
            ]
        ),
        runtime=[
            {"start": 1, "end": 31, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
            {"start": 40, "end": 45, "name": "cudaMemcpyAsync_v3020", "correlationId": 2},
        ],
        nvtx=[
            *_marks([(0, 512), (900, 1), (1100, 3), (1400, 5)]),
            {"start": 0, "end": 150, "eventType": 59, "text": "aten::mm, seq = 9, op_id = 7"},
            {"start": 10, "end": 20, "eventType": 59, "text": "only_b_range"},
        ],
    )
    return a, b
