"""Multi-rank summarize benchmark: 16 generated traces, sequential vs on a local Dask cluster.

Usage: python benchmarks/dask_summarize.py [--files 16] [--kernels 200000] [--workers N] [--runs 1] [--quick]
(``--quick``: 2 traces of 2,000 kernels, 1 Dask worker: seconds)

Generates FILES traces of KERNELS kernels each with benchmarks/make_trace.py (seed = rank; kept
under $TMPDIR/tracedash-bench-ranks/ and reused by later runs), then times, cold (no tracedash
cache: every file is read from SQLite and summarised):
  1. sequential: ``summary_text`` (the per-file work of ``tracedash summarize``) on each file in turn,
     in this process;
  2. Dask: ``summarize_many`` on a fresh LocalCluster (processes, one thread each, N workers,
     default = usable cores), cluster start-up and shutdown included;
  3. the local cluster's start-up + shutdown alone (no tasks), to show the fixed cost;
  4. a shell loop: one ``tracedash summarize FILE --no-cache`` process per file, in turn (what a user
     without multi-file summarize would run; each process pays the Python start-up and imports);
and prints the wall times (median of RUNS), the throughput and the speed-up. Both paths produce the
same summaries (checked byte for byte).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dashboard.data.cache import TraceCache  # noqa: E402
from dashboard.data.multirank import _local_client, summarize_many, summary_text  # noqa: E402


def traces(workdir: Path, files: int, kernels: int) -> list[Path]:
    """The generated rank traces (made once, then reused)."""
    from make_trace import generate

    workdir.mkdir(parents=True, exist_ok=True)
    out = []
    for rank in range(files):
        path = workdir / f"rank{rank:02d}_{kernels}.sqlite"
        if not path.is_file():
            tmp = path.with_suffix(".part")
            tmp.unlink(missing_ok=True)
            generate(tmp, kernels, seed=rank)
            tmp.rename(path)
        out.append(path)
    return out


def timed(fn, runs: int) -> tuple[float, list[float], object]:
    """Median wall seconds of ``runs`` calls, all the times, and the last result."""
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--kernels", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=None, help="local cluster size (default: usable cores)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tracedash-bench-ranks")
    parser.add_argument("--quick", action="store_true", help="2 traces of 2,000 kernels, 1 worker (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.kernels, args.workers, args.runs = 2, 2_000, 1, 1

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = args.workers or cores
    t0 = time.perf_counter()
    paths = traces(args.workdir, args.files, args.kernels)
    size = sum(p.stat().st_size for p in paths)
    print(
        f"{len(paths)} traces x {args.kernels:,} kernels ({size / 2**20:.0f} MiB) in {args.workdir} "
        f"[ready in {time.perf_counter() - t0:.1f} s]; {cores} usable cores, {workers} Dask workers"
    )
    no_cache = TraceCache(enabled=False)

    seq_s, seq_all, seq_texts = timed(lambda: [summary_text(p, "CG_DISPATCH", no_cache) for p in paths], args.runs)
    dask_s, dask_all, results = timed(lambda: summarize_many(paths, cache=no_cache, n_workers=workers), args.runs)

    def startup():
        client, cluster = _local_client(workers, True)
        client.close()
        cluster.close()

    start_s, start_all, _ = timed(startup, args.runs)

    def shell_loop():
        for p in paths:
            subprocess.run(
                [sys.executable, "-m", "dashboard", "summarize", str(p), "--no-cache"],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                check=True,
            )

    loop_s, loop_all, _ = timed(shell_loop, args.runs)
    bad = [r.path.name for r in results if r.error]
    if bad:
        raise SystemExit(f"failed on the cluster: {bad}")
    same = [r.text for r in results] == seq_texts
    total = len(paths) * args.kernels
    print(
        f"  sequential (one process)       {seq_s:7.2f} s   {total / seq_s / 1e6:6.2f} M kernels/s   "
        f"runs {' '.join(f'{t:.2f}' for t in seq_all)}"
    )
    print(
        f"  Dask LocalCluster ({workers} workers)  {dask_s:7.2f} s   {total / dask_s / 1e6:6.2f} M kernels/s   "
        f"runs {' '.join(f'{t:.2f}' for t in dask_all)}"
    )
    print(f"  cluster start-up + shutdown    {start_s:7.2f} s   runs {' '.join(f'{t:.2f}' for t in start_all)}")
    print(
        f"  shell loop ({len(paths)} processes)        {loop_s:7.2f} s   {total / loop_s / 1e6:6.2f} M kernels/s   "
        f"runs {' '.join(f'{t:.2f}' for t in loop_all)}"
    )
    print(f"  speed-up vs the shell loop: {loop_s / dask_s:.2f}x")
    print(
        f"  speed-up: {seq_s / dask_s:.2f}x (ideal {min(workers, cores, len(paths))}x on {cores} cores); "
        f"per file sequential {seq_s / len(paths):.2f} s; identical output: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
