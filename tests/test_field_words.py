"""Issue 26 (traces from the field), classes 1, 2, 4 and 5: the words around correct numbers stay true.

1. Warnings agree: launches without kernel rows never read "no GPU work" / "nothing ran"; `summarize` writes
   null where `report` says n/a.
2. Every share is bounded by its whole (≤ 100 %) or n/a; severity never comes from a made-up denominator.
4. A finding never states the absence of a kind of call the trace holds under driver-API (cu*) names.
5. A per-step figure needs steps: without dispatch marks it is n/a.

Fixtures are built in code (pid 100, thread 101 unless said; times in ns); the handed field files are cases too.
"""

import json
import math
import sqlite3

import pytest
from factories import GLOBAL_PID_1, GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA

from dashboard.analysis import findings as fd
from dashboard.analysis.summary import summary_to_dict
from dashboard.findings_report import findings_for, findings_json
from dashboard.loaders.summary_json import parse_summary
from dashboard.render import overview_cards
from dashboard.trace import load_trace

TRITON = DATA / "cases" / "field" / "triton_example.json.gz"
RANGE_MODE = DATA / "cases" / "kineto_cupti_range_mode" / "hta_cupti_profiler_trace.json.gz"
GLOBAL_TID_2 = GLOBAL_PID_1 | 102  # pid 100, tid 102


def _api(start, end, name, corr, tid=GLOBAL_TID_1):
    return {"start": start, "end": end, "name": name, "correlationId": corr, "globalTid": tid}


def _mark(ts, text):
    return {"start": ts, "end": None, "eventType": 34, "text": text}


def _copies(path, rows):
    """Add CUPTI_ACTIVITY_KIND_MEMCPY rows (start, end, correlation id, bytes, copyKind, srcKind, dstKind) and
    CUPTI_ACTIVITY_KIND_MEMSET rows (start, end, correlation id, bytes, memKind) to an export."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
                "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
                "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, "
                "srcKind INTEGER, dstKind INTEGER)")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, "
                "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
                "correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, "
                "memKind INTEGER)")
    for r in rows:
        if r[0] == "memset":
            con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,0,1,7,?,?,0,?,?)",
                        (r[1], r[2], r[3], GLOBAL_PID_1, r[4], r[5]))
        else:
            con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,0,1,7,?,?,?,?,?,?)",
                        (r[1], r[2], r[3], GLOBAL_PID_1, *r[4:]))
    con.commit()
    con.close()
    return path


PAGEABLE, PINNED, DEVICE = 0, 1, 2
HTOD, DTOH = 1, 2


def build_offload(path, marks=False):
    """An OpenMP-offload-shaped capture: every CUDA call is a driver-API call (no cuda* runtime name).

    cuLaunchKernel [9000, 9500) -> kernel [10000, 12000); cuMemcpyHtoDAsync_v2 [13000, 13100) of 1 MiB pageable
    memory -> copy [13050, 23050); cuStreamSynchronize [13100, 23100); cuLaunchKernel [39000, 39400) -> kernel
    [40000, 41000); cuMemcpyDtoH_v2 [41000, 45000) of 4 MiB into pageable memory -> copy [41100, 44900);
    cuCtxSynchronize [45000, 46000). ``marks``: dispatch marks at 8000 and 30000 (tokens 1 and 2)."""
    write_nsys_sqlite(path, kernels=[
        {"start": 10000, "end": 12000, "correlationId": 1, "shortName": "__omp_offloading_main_l10"},
        {"start": 40000, "end": 41000, "correlationId": 4, "shortName": "__omp_offloading_main_l20"},
    ], runtime=[
        _api(9000, 9500, "cuLaunchKernel", 1),
        _api(13000, 13100, "cuMemcpyHtoDAsync_v2", 2),
        _api(13100, 23100, "cuStreamSynchronize", 3),
        _api(39000, 39400, "cuLaunchKernel", 4),
        _api(41000, 45000, "cuMemcpyDtoH_v2", 5),
        _api(45000, 46000, "cuCtxSynchronize", 6),
    ], nvtx=[_mark(8000, "CG_DISPATCH:actual=1"), _mark(30000, "CG_DISPATCH:actual=2")] if marks else ())
    return _copies(path, [("memcpy", 13050, 23050, 2, 1 << 20, HTOD, PAGEABLE, DEVICE),
                          ("memcpy", 41100, 44900, 5, 4 << 20, DTOH, DEVICE, PAGEABLE)])


def build_openacc(path):
    """An OpenACC-shaped capture (the NVHPC runtime calls the driver): cuLaunchKernel [1000, 1200) -> kernel
    [1500, 2500); cuMemcpyDtoHAsync_v2 [3000, 3100) into pageable memory -> copy [3050, 5050) (256 KiB);
    cuMemsetD32_v2 [6000, 6500) on pinned memory -> memset [6100, 6400); cuEventSynchronize [7000, 9000)."""
    write_nsys_sqlite(path, kernels=[{"start": 1500, "end": 2500, "correlationId": 1, "shortName": "main_12_gpu"}],
                      runtime=[_api(1000, 1200, "cuLaunchKernel", 1), _api(3000, 3100, "cuMemcpyDtoHAsync_v2", 2),
                               _api(6000, 6500, "cuMemsetD32_v2", 3), _api(7000, 9000, "cuEventSynchronize", 4)])
    return _copies(path, [("memcpy", 3050, 5050, 2, 256 << 10, DTOH, DEVICE, PAGEABLE),
                          ("memset", 6100, 6400, 3, 4096, PINNED)])


def build_not_captured(path):
    """A WSL2-shaped capture: 3 cudaLaunchKernel calls and a cudaStreamSynchronize [5000, 9000), no kernel row
    (GPU activity not recorded); an NVTX range "step" [500, 10000)."""
    write_nsys_sqlite(path, runtime=[_api(1000, 1100, "cudaLaunchKernel_v7000", 1),
                                     _api(2000, 2100, "cudaLaunchKernel_v7000", 2),
                                     _api(3000, 3100, "cudaLaunchKernel_v7000", 3),
                                     _api(5000, 9000, "cudaStreamSynchronize_v3020", 4)],
                      nvtx=[{"start": 500, "end": 10000, "eventType": 59, "text": "step"}])
    return path


def by_rule(trace):
    return {f.rule: f for f in findings_for(trace)}


def records(f):
    return f.rows.to_dict("records")
