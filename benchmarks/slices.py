"""`summarize` of one big trace in one pass vs per time slice on Dask: wall time and peak memory.

Usage: python benchmarks/slices.py [--trace PATH | --kernels 2000000] [--slices 2,4] [--workers N] [--runs 1] [--quick]
(``--quick``: a generated trace of 20,000 kernels, 2 slices, 1 worker: seconds)

Without ``--trace`` it generates a trace of KERNELS kernels with benchmarks/make_trace.py (kept under
$TMPDIR/tracedash-bench-slices/ and reused). Then it runs, each as its own process, cold (``--no-cache``):
``tracedash summarize TRACE`` (one pass) and ``tracedash summarize --slices N --workers W TRACE`` for each N
(a fresh local Dask cluster each time, its start and stop included), and prints per run the wall time
(median of RUNS), the peak RSS of the whole process tree (the CLI process, the Dask scheduler, nannies and
workers: their RSS summed, sampled every 20 ms) and the peak RSS of the largest single process in it (what
one machine of a real cluster would hold). Every sliced output is compared byte for byte with the one pass.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def measure(cmd: list[str]) -> tuple[float, float, float, bytes]:
    """Run ``cmd``: (wall s, peak tree RSS MiB, peak single-process RSS MiB, stdout)."""
    out = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.DEVNULL)
    root = psutil.Process(proc.pid)
    tree_peak = one_peak = 0
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        rss = []
        for p in procs:
            try:
                rss.append(p.memory_info().rss)
            except psutil.NoSuchProcess:
                pass
        tree_peak = max(tree_peak, sum(rss))
        one_peak = max(one_peak, max(rss, default=0))
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    out.seek(0)
    return wall, tree_peak / 2**20, one_peak / 2**20, out.read()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, help="an existing nsys SQLite export (default: generate one)")
    parser.add_argument("--kernels", type=int, default=2_000_000)
    parser.add_argument("--slices", default="2,4", help="slice counts, comma-separated")
    parser.add_argument("--workers", type=int, default=None, help="local cluster size (default: usable cores)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="20,000 kernels, 2 slices, 1 worker (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.trace, args.kernels, args.slices, args.workers, args.runs = None, 20_000, "2", 1, 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = args.workers or cores
    trace = args.trace
    if trace is None:
        from make_trace import generate

        trace = Path(tempfile.gettempdir()) / "tracedash-bench-slices" / f"seed_{args.kernels}.sqlite"
        if not trace.is_file():
            trace.parent.mkdir(parents=True, exist_ok=True)
            generate(trace, args.kernels)
    print(f"{trace.name} ({trace.stat().st_size / 2**20:.0f} MiB); {cores} usable cores, {workers} Dask workers")
    base = [sys.executable, "-m", "dashboard", "summarize", "--no-cache"]
    cases = [("one pass", [*base, str(trace)])] + [
        (f"{n} slices on Dask", [*base, "--slices", n, "--workers", str(workers), str(trace)])
        for n in args.slices.split(",")
    ]
    expected = None
    for label, cmd in cases:
        runs = [measure(cmd) for _ in range(args.runs)]
        text = runs[-1][3]
        expected = text if expected is None else expected
        wall = statistics.median(r[0] for r in runs)
        print(
            f"  {label:20s} {wall:7.2f} s   peak RSS: tree {max(r[1] for r in runs):6.0f} MiB, "
            f"largest process {max(r[2] for r in runs):6.0f} MiB   runs {' '.join(f'{r[0]:.2f}' for r in runs)}   "
            f"identical output: {text == expected}"
        )
        if text != expected:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
