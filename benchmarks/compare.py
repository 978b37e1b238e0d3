"""Compare benchmark: how long ``tracedash diff`` and the compare page take once both traces are loaded.

Usage: python benchmarks/compare.py [--kernels 200000] [--runs 3] [--quick]
(``--quick``: 2,000 kernels a generated trace, one run: seconds)

Times, on the shared before/after pair (sample_traces/nsys2026.2_2gpu_nccl_before.sqlite and
tests/data/nsys/nsys2026.2_2gpu_nccl_after.sqlite) and on two
generated seed-shaped traces of KERNELS kernels each (benchmarks/make_trace.py, seeds 0 and 1, kept
under $TMPDIR/tracedash-bench-compare/):
  1. loading both traces (``load_trace``, no cache: what a cold ``tracedash diff --no-cache`` pays);
  2. ``compare_runs`` (all delta frames, dispatch pairing, gate);
  3. ``comparison_to_dict`` + ``json.dumps`` (the --json output);
  4. ``compare_view`` (cards, three figures, grid records: the compare page's callback minus transport);
and prints the median of RUNS for 2-4 (load: one run) and the row counts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dashboard.analysis.compare import compare_runs, comparison_to_dict  # noqa: E402
from dashboard.data.trace import load_trace  # noqa: E402
from dashboard.render.compare import compare_view  # noqa: E402


def timed(fn, runs: int) -> tuple[float, object]:
    """Median wall seconds of ``runs`` calls and the last result."""
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def bench(label: str, a_path: Path, b_path: Path, runs: int) -> None:
    """Print the timings of one pair."""
    t_load, (a, b) = timed(lambda: (load_trace(a_path), load_trace(b_path)), 1)
    t_cmp, c = timed(lambda: compare_runs(a, b), runs)
    t_json, text = timed(lambda: json.dumps(comparison_to_dict(c, top=10), indent=2), runs)
    t_view, _ = timed(lambda: compare_view(c), runs)
    kernels = len(a.bundle.kernels) + len(b.bundle.kernels)
    print(
        f"{label}: {kernels:,} kernels, {len(c.a_dispatches) + len(c.b_dispatches):,} dispatches, "
        f"{len(c.kernels)} kernel / {len(c.nvtx)} NVTX / {len(c.api)} API names"
    )
    print(f"  load both (cold, no cache) {t_load:8.3f} s")
    print(f"  compare_runs               {t_cmp:8.3f} s")
    print(f"  --json (top 10)            {t_json:8.3f} s  ({len(text):,} bytes)")
    print(f"  compare_view (page)        {t_view:8.3f} s")
    print(f"  gate: {c.gate.metric} {c.gate.delta_pct:+.2f} %")
    # The floor: reading both traces, which `tracedash diff` pays before it compares anything.
    print(
        f"  compare_runs + --json = {(t_cmp + t_json) / t_load:.2f} x loading both; "
        f"compare page = {t_view / t_load:.2f} x loading both"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=int, default=200_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="2,000 kernels a generated trace, one run (seconds)")
    args = p.parse_args(argv)
    if args.quick:
        args.kernels, args.runs = 2_000, 1
    # the "before" capture is also a bundled sample, so it lives in sample_traces/; "after" only in the test data
    bench(
        "shared pair (nccl before/after)",
        ROOT / "sample_traces" / "nsys2026.2_2gpu_nccl_before.sqlite",
        ROOT / "tests" / "data" / "nsys" / "nsys2026.2_2gpu_nccl_after.sqlite",
        args.runs,
    )
    from make_trace import generate

    work = Path(tempfile.gettempdir()) / "tracedash-bench-compare"
    work.mkdir(exist_ok=True)
    paths = []
    for seed in (0, 1):
        path = work / f"gen{args.kernels}_s{seed}.sqlite"
        if not path.exists():
            generate(path, args.kernels, seed=seed)
        paths.append(path)
    bench(f"generated pair ({args.kernels:,} kernels each)", paths[0], paths[1], args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
