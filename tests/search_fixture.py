"""A small nsys export whose search occurrences are counted by hand (tests/test_search.py and the
browser test of the timeline search)."""

from factories import GLOBAL_PID_1, write_nsys_sqlite

# (name, start_ns, end_ns) of the kernels on device 0, stream 7; each launched 1 µs before it starts.
KERNELS = [
    ("elementwise_kernel", 10_000, 12_000),
    ("gemm_bf16", 20_000, 25_000),
    ("elementwise_kernel", 30_000, 32_000),
    ("gemm_bf16", 40_000, 45_000),
    ("elementwise_kernel", 50_000, 52_000),
    ("gemm_bf16", 60_000, 65_000),
    ("elementwise_kernel", 70_000, 72_000),
    ("elementwise_kernel", 90_000, 92_000),
]
DEMANGLED = {"gemm_bf16": "void cutlass::Kernel<gemm_bf16_tensorop>(Params)"}
NVTX = [("decode", 0, 100_000), ("elementwise phase", 5_000, 15_000), ("elementwise phase", 85_000, 95_000)]

# "elementwise" in time order: (kind, start_ns, end_ns)
ELEMENTWISE = [
    ("nvtx", 5_000, 15_000),
    ("kernel", 10_000, 12_000),
    ("kernel", 30_000, 32_000),
    ("kernel", 50_000, 52_000),
    ("kernel", 70_000, 72_000),
    ("nvtx", 85_000, 95_000),
    ("kernel", 90_000, 92_000),
]


def write_search_fixture(path):
    """Write the export: 8 kernels (5 elementwise_kernel, 3 gemm_bf16 with a cutlass demangled name),
    their 8 ``cudaLaunchKernel`` calls ([start - 1,000, start - 500) each) and 3 NVTX ranges."""
    kernels = [
        {
            "start": s,
            "end": e,
            "shortName": n,
            "demangledName": DEMANGLED.get(n, n),
            "correlationId": i + 1,
            "globalPid": GLOBAL_PID_1,
        }
        for i, (n, s, e) in enumerate(KERNELS)
    ]
    runtime = [
        {"start": s - 1_000, "end": s - 500, "name": "cudaLaunchKernel_v7000", "correlationId": i + 1}
        for i, (_, s, _) in enumerate(KERNELS)
    ]
    nvtx = [{"start": s, "end": e, "eventType": 59, "text": n} for n, s, e in NVTX]
    return write_nsys_sqlite(path, kernels=kernels, runtime=runtime, nvtx=nvtx, gpus={0: "NVIDIA H100"})
