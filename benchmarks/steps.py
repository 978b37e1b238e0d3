"""Time step detection (``analysis.steps``) on a seed-shaped trace of N kernels (``make_trace.py``).

Two sources on the same kernels: the trace's own ``CG_DISPATCH`` marks (seed preset, ``auto``) and the
same steps written as vLLM ``execute_context_…`` ranges (vLLM preset, ``auto``). Timed separately:
``build_steps`` (matching the annotations, nesting, phases), ``kernel_launches`` (the kernel -> launch
join, which the views compute once for other panels too) and ``step_kernels`` (per-step kernels and GPU
time). Target: detection + per-step GPU time at most 0.3 s for 2M kernels (issue 24).

Usage: python benchmarks/steps.py [--kernels 2000000] [--trace PATH] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard.analysis import step_presets as sp  # noqa: E402
from dashboard.analysis import steps as st  # noqa: E402
from dashboard.analysis.launches import kernel_launches  # noqa: E402
from dashboard.loaders import load_nsys_sqlite  # noqa: E402
from dashboard.model import NVTX_RANGES, conform  # noqa: E402


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def vllm_ranges(bundle, steps: pd.DataFrame) -> pd.DataFrame:
    """The seed steps as vLLM v0.14 ranges over the same extents (prefill: context, decode: generation)."""
    names = [
        f"execute_context_1({t})_generation_0(0)" if p == "prefill" else f"execute_context_0(0)_generation_{t}({t})"
        for p, t in zip(steps["phase"], steps["tokens"].fillna(1).astype(int))
    ]
    n = len(steps)
    cat = pd.Categorical(names)
    tid = bundle.nvtx_marks["global_tid"].iloc[0] if len(bundle.nvtx_marks) else 0
    df = pd.DataFrame(
        {
            "start_ns": steps["start_ns"].to_numpy(),
            "end_ns": steps["end_ns"].to_numpy(),
            "name": cat,
            "message": cat,
            "domain": pd.Categorical([""] * n),
            "global_tid": np.full(n, tid),
            "pid": steps["pid"].to_numpy(),
            "tid": np.full(n, tid & 0xFFFFFF),
            "kind": pd.Categorical(["push/pop"] * n),
            "unclosed": np.zeros(n, bool),
            "cross_thread": np.zeros(n, bool),
        }
    )
    return conform(pd.concat([bundle.nvtx_ranges, conform(df, NVTX_RANGES)], ignore_index=True), NVTX_RANGES)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=int, default=2_000_000)
    p.add_argument("--trace", type=Path, help="an existing make_trace.py output (default: generate one)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="5,000 kernels, once each (seconds; `make test` runs it)")
    args = p.parse_args(argv)
    if args.quick:
        args.kernels, args.repeat = 5_000, 1
    path = args.trace
    if path is None:
        from make_trace import generate

        path = Path(tempfile.mkdtemp()) / f"seed_shaped_{args.kernels}.sqlite"
        generate(path, args.kernels)
    b = load_nsys_sqlite(path)
    end_ns = int(b.kernels["end_ns"].max())
    auto = sp.parse_step_source("auto")
    t_launch, launches = best(lambda: kernel_launches(b.kernels, b.api_calls), args.repeat)
    t_seed, (src, seed) = best(lambda: st.bundle_steps(b, auto, end_ns=end_ns), args.repeat)
    t_gpu, gpu = best(lambda: st.step_kernels(seed, b.kernels, b.api_calls, launches), args.repeat)
    ranges = vllm_ranges(b, seed)
    t_vllm, (vsrc, vsteps) = best(lambda: st.build_steps(ranges, None, auto, end_ns=end_ns), args.repeat)
    t_vgpu, vgpu = best(lambda: st.step_kernels(vsteps, b.kernels, b.api_calls, launches), args.repeat)
    assert src.preset == "seed" and vsrc.preset == "vllm" and len(vsteps) == len(seed)
    print(f"{len(b.kernels):,} kernels, {len(seed):,} steps ({path.name})")
    print(f"kernel_launches (shared with other views): {t_launch:.3f} s")
    print(
        f"seed marks:  build_steps {t_seed:.3f} s + step_kernels {t_gpu:.3f} s = {t_seed + t_gpu:.3f} s "
        f"({int(gpu['kernels'].sum()):,} kernels attributed)"
    )
    print(
        f"vLLM ranges: build_steps {t_vllm:.3f} s + step_kernels {t_vgpu:.3f} s = {t_vllm + t_vgpu:.3f} s "
        f"({int(vgpu['kernels'].sum()):,} kernels attributed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
