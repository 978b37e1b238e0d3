"""Generate a seed-shaped nsys SQLite export of N kernels (for benchmarks and the generated sample).

Shape (like the seed, a vLLM-style server): a step loop of dispatches, each marked by an NVTX mark
``CG_DISPATCH:actual=T:mode=NONE:padded=T`` — prefill chunks of 1600 or 742 tokens, decode batches of
1 or 3 tokens — and PLE-style NVTX ranges per step (``PLE_lookup_tokens=T`` around ``PLE_CPU_dedup``,
``PLE_CPU_gather`` and ``PLE_wait_for_GPU``). Each kernel is launched by one CUDA API call (same
correlation id and process) that starts before it; kernels alternate between two streams of device 0
that overlap. A ``cudaStreamSynchronize`` inside ``PLE_wait_for_GPU`` ends every step.

Tables follow the nsys 2024.5 DDL for the columns tracedash and nsys stats read (read columns by
name; extra NOT NULL columns are filled with zeros). Deterministic for a given (N, seed).

Usage: python benchmarks/make_trace.py OUT.sqlite --kernels 2000000 [--seed 0]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

KERNEL_NAMES = [
    ("device_kernel", "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...>>(Params)"),
    ("Kernel2", "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x4_nn_align8>(Params)"),
    ("_qsa_sparse_paged_gqa_splitk_kernel", "_qsa_sparse_paged_gqa_splitk_kernel"),
    (
        "nvjet_sm121_tst_mma_128x208x64_2_32x104x64_tmaAB_bz_TNNN",
        "nvjet_sm121_tst_mma_128x208x64_2_32x104x64_tmaAB_bz_TNNN",
    ),
    ("_hc_combine_norm_kernel", "_hc_combine_norm_kernel"),
    ("flash_fwd_kernel", "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>(Flash_fwd_params)"),
    (
        "rms_norm_kernel",
        "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, const c10::BFloat16*, float, int)",
    ),
    ("act_and_mul_kernel", "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel>(...)"),
    ("fused_moe_kernel", "fused_moe_kernel"),
    ("reshape_and_cache_flash_kernel", "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>(...)"),
    ("elementwise_kernel", "void at::native::elementwise_kernel<128, 2>(int, ...)"),
    (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096>)",
    ),
]
API_NAMES = ["cudaLaunchKernel_v7000", "cuLaunchKernelEx", "cudaLaunchKernelExC_v11060", "cuLaunchKernel"]
GLOBAL_PID = (1 << 48) | (4100 << 24)
GLOBAL_TID = GLOBAL_PID | 4100

KERNEL_DDL = """CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
    cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
    gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
    staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
    localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
    sharedMemoryLimitConfig INTEGER)"""
RUNTIME_DDL = """CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER,
    correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER)"""
NVTX_DDL = """CREATE TABLE NVTX_EVENTS (
    start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,
    color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER,
    uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
    floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData BLOB)"""


def plan_steps(n_kernels: int, rng: np.random.Generator) -> list[int]:
    """Token count per step: a few prefill chunks, then decode steps, repeating (about 780 kernels/step)."""
    pattern = [1600] * 3 + [742] + [1, 3] * 5 + [1600] * 2 + [3, 1] * 20
    steps, total, i = [], 0, 0
    while total < n_kernels:
        t = pattern[i % len(pattern)]
        steps.append(t)
        total += 1800 if t > 100 else 600
        i += 1
    return steps


def generate(path: Path, n_kernels: int, seed: int = 0) -> dict:
    """Write the trace; returns counts (kernels, api, nvtx rows, steps)."""
    rng = np.random.default_rng(seed)
    steps = plan_steps(n_kernels, rng)
    per_step = np.array([1800 if t > 100 else 600 for t in steps])
    per_step[-1] -= per_step.sum() - n_kernels  # exactly n_kernels in total
    if path.exists():
        path.unlink()
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    strings: dict[str, int] = {}
    for name in [n for pair in KERNEL_NAMES for n in pair] + [*API_NAMES, "cudaStreamSynchronize_v3020"]:
        strings.setdefault(name, len(strings) + 1)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in strings.items()])
    con.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    con.executemany(
        "INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
        [
            ("EXPORT_PRODUCT_VERSION", "2024.5.1.113"),
            ("EXPORT_SCHEMA_VERSION", "3.13.2"),
            ("GENERATOR", "tracedash benchmarks/make_trace.py"),
        ],
    )
    con.execute("CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation TEXT)")
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'Generated GB10-class GPU', '0000:01:00.0')")
    con.execute(
        "CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER, duration INTEGER, startTime INTEGER, stopTime INTEGER)"
    )
    con.execute(KERNEL_DDL)
    con.execute(RUNTIME_DDL)
    con.execute(NVTX_DDL)

    # Kernel durations: prefill kernels longer than decode kernels; heavy-tailed mix of names.
    weights = np.array([6, 16, 1, 1, 5, 1.5, 5, 5, 1, 5, 8, 0.5])
    name_idx = rng.choice(len(KERNEL_NAMES), size=n_kernels, p=weights / weights.sum())
    step_of = np.repeat(np.arange(len(steps)), per_step)
    is_prefill = np.array(steps)[step_of] > 100
    dur = np.where(is_prefill, rng.integers(20_000, 400_000, n_kernels), rng.integers(2_000, 60_000, n_kernels))
    stream = np.where(np.arange(n_kernels) % 3 == 0, 13, 7)
    # GPU timeline: kernels issued back to back per step with small gaps; stream 13 overlaps stream 7.
    gap = rng.integers(200, 3_000, n_kernels)
    advance = np.where(stream == 13, dur // 3, dur) + gap
    start = 50_000_000 + np.cumsum(advance) - advance
    # Step boundaries: a host gap (sync + CPU work) between steps.
    step_gap = np.where(np.array(steps) > 100, 2_500_000, 900_000)  # > host tail + next step's lead
    start = start + np.repeat(np.cumsum(step_gap) - step_gap, per_step)
    end = start + dur
    corr = np.arange(1, n_kernels + 1)
    # The host issues a step's launches quickly (about 6 µs apart) and runs ahead of the GPU, then
    # waits for it in cudaStreamSynchronize (PLE_wait_for_GPU), as a serving loop does.
    first_of_step = np.r_[0, np.cumsum(per_step)[:-1]]
    k_in_step = np.arange(n_kernels) - np.repeat(first_of_step, per_step)
    host_start = np.repeat(start[first_of_step] - 60_000, per_step) + k_in_step * rng.integers(4_000, 8_000, n_kernels)
    api_start = np.minimum(host_start, start - 5_000)
    api_end = api_start + rng.integers(2_000, 9_000, n_kernels)
    api_name = np.array([strings[n] for n in API_NAMES])[name_idx % len(API_NAMES)]
    short_ids = np.array([strings[s] for s, _ in KERNEL_NAMES])[name_idx]
    full_ids = np.array([strings[f] for _, f in KERNEL_NAMES])[name_idx]

    chunk = 250_000
    for lo in range(0, n_kernels, chunk):
        hi = min(lo + chunk, n_kernels)
        con.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, "
            "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, "
            "blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) "
            "VALUES (?,?,0,1,0,?,?,?,?,?,32,128,1,1,256,1,1,0,0,0,0,?)",
            zip(
                start[lo:hi].tolist(),
                end[lo:hi].tolist(),
                stream[lo:hi].tolist(),
                corr[lo:hi].tolist(),
                [GLOBAL_PID] * (hi - lo),
                full_ids[lo:hi].tolist(),
                short_ids[lo:hi].tolist(),
                corr[lo:hi].tolist(),
            ),
        )
        con.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,0,NULL)",
            zip(
                api_start[lo:hi].tolist(),
                api_end[lo:hi].tolist(),
                (name_idx[lo:hi] % 2).tolist(),
                [GLOBAL_TID] * (hi - lo),
                corr[lo:hi].tolist(),
                api_name[lo:hi].tolist(),
            ),
        )

    # Per step: dispatch mark, PLE ranges, and a stream sync at the end.
    first = np.r_[0, np.cumsum(per_step)[:-1]]
    last = np.cumsum(per_step) - 1
    nvtx, sync = [], []
    prev_end = 0
    for i, tokens in enumerate(steps):
        s0 = max(int(api_start[first[i]]) - 300_000, prev_end + 10_000)
        s1 = int(end[first[i] : last[i] + 1].max()) + 20_000
        cpu = 40_000 if tokens < 100 else 250_000
        nvtx.append((s0 - 1_000, None, 34, f"CG_DISPATCH:actual={tokens}:mode=NONE:padded={tokens}"))
        nvtx.append((s0, s1 + cpu + 30_000, 59, f"PLE_lookup_tokens={tokens}"))
        prev_end = s1 + cpu + 30_000  # push/pop ranges of one thread nest: the next step starts after
        nvtx.append((s0 + 10_000, s0 + 30_000, 59, "PLE_CPU_dedup"))
        nvtx.append((s1 + 10_000, s1 + 10_000 + cpu, 59, "PLE_CPU_gather"))
        wait_start = int(api_end[last[i]]) + 5_000
        nvtx.append((wait_start, s1, 59, "PLE_wait_for_GPU"))
        sync.append((wait_start + 1_000, s1 - 2_000, 0, GLOBAL_TID, 0, strings["cudaStreamSynchronize_v3020"]))
    con.executemany(
        f"INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?,?,?,?,{GLOBAL_TID},0)",
        nvtx,
    )
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,0,NULL)", sync)
    duration = int(end.max()) + 10_000_000
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (?, ?, 0, ?)", (1 << 48, duration, duration))
    con.commit()
    con.close()
    return {"kernels": n_kernels, "api": n_kernels + len(sync), "nvtx": len(nvtx), "steps": len(steps)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--kernels", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    counts = generate(args.out, args.kernels, args.seed)
    size_mb = args.out.stat().st_size / 2**20
    print(f"{args.out}: {counts} {size_mb:.1f} MiB in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
