"""Ingest benchmark: one generated trace, timed against the floor (a bare SQLite scan) and nsys stats.

Usage: python benchmarks/run.py [--kernels 2000000] [--trace FILE] [--runs 3] [--quick]
(``--quick``: 5,000 kernels, one run, in seconds: `make test` runs it so the benchmark keeps working)

In one run on the same file it times, each as a separate process (wall time and peak RSS):
  1. bare scan: sqlite3 reading start, end, deviceId, streamId, shortName of every kernel row (the floor);
  2. `tracedash summarize` cold (empty cache: SQLite -> the summary's columns -> summary, whose text is cached;
     a summary builds no Parquet frame cache: the dashboard's first open does);
  3. `tracedash summarize` warm (served from the cache);
  4. `nsys stats --report gpukernsum:base --report cudaapisum --report nvtxsum` when `nsys` is on PATH
     (install: ../shared/tools/install_nsys.sh), on a copy of the file (nsys may add tables to it);
and prints the medians and the ratios the targets are stated in:
  cold <= 0.12 x nsys stats (the big-traces issue), cold <= 10 x bare scan, warm <= 0.5 s,
  peak RSS <= 1.2 GB for 10M kernels.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

BARE_SCAN = """
import sqlite3, sys
con = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro&immutable=1", uri=True)
n = 0
for row in con.execute('SELECT start, "end", deviceId, streamId, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL'):
    n += 1
print(n)
"""


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """Run ``cmd``; return (wall seconds, peak RSS MiB of the child)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def median_run(label: str, cmd_factory, runs: int) -> tuple[float, float]:
    results = [cmd_factory() for _ in range(runs)]
    wall = statistics.median(r[0] for r in results)
    rss = max(r[1] for r in results)
    print(f"  {label:34s} {wall:8.2f} s   peak RSS {rss:8.0f} MiB   runs {' '.join(f'{r[0]:.2f}' for r in results)}")
    return wall, rss


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=2_000_000)
    parser.add_argument("--trace", type=Path, help="use this trace instead of generating one")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="where to put the generated trace (default: a temp dir)")
    parser.add_argument("--quick", action="store_true", help="5,000 kernels, one run (seconds; a smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.kernels, args.runs = 5_000, 1

    work = Path(args.workdir or tempfile.mkdtemp(prefix="tracedash-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    trace = args.trace
    if trace is None:
        trace = work / f"generated_{args.kernels}.sqlite"
        if not trace.exists():
            subprocess.run(
                [PY, str(ROOT / "benchmarks" / "make_trace.py"), str(trace), "--kernels", str(args.kernels)], check=True
            )
    size = trace.stat().st_size / 2**20
    print(f"trace: {trace} ({size:.0f} MiB); {os.cpu_count()} cores; python {sys.version.split()[0]}")
    cache_dir = work / "cache"
    tracedash = [PY, "-m", "dashboard", "summarize", str(trace), "-o", os.devnull, "--cache-dir", str(cache_dir)]

    def cold():
        shutil.rmtree(cache_dir, ignore_errors=True)
        return timed(tracedash)

    def warm():
        return timed(tracedash)

    bare, _ = median_run(
        "bare SQLite scan (floor)", lambda: timed([PY, "-c", BARE_SCAN, str(trace.resolve())]), args.runs
    )
    cold_s, cold_rss = median_run("tracedash summarize, cold", cold, args.runs)
    warm_s, _ = median_run("tracedash summarize, warm (cache)", warm, args.runs)
    nsys = shutil.which("nsys")
    nsys_s = None
    if nsys:
        copy = work / "nsys_copy.sqlite"

        def nsys_run():
            shutil.copy(trace, copy)
            for f in work.glob("nsys_out_*"):
                f.unlink()
            return timed(
                [
                    nsys,
                    "stats",
                    "--report",
                    "gpukernsum:base",
                    "--report",
                    "cudaapisum",
                    "--report",
                    "nvtxsum",
                    "--format",
                    "csv",
                    "--output",
                    str(work / "nsys_out"),
                    str(copy),
                ]
            )

        nsys_s, _ = median_run("nsys stats (3 reports)", nsys_run, args.runs)
    else:
        print("  nsys stats: skipped (nsys not on PATH; see ../shared/tools/install_nsys.sh)")
    print("ratios:")
    print(f"  cold / bare scan  = {cold_s / bare:6.2f}   (target <= 10)")
    if nsys_s:
        print(f"  cold / nsys stats = {cold_s / nsys_s:6.2f}   (target <= 0.12)")
    print(f"  warm              = {warm_s:6.2f} s (target <= 0.5 s)")
    print(f"  cold peak RSS     = {cold_rss:6.0f} MiB (target for 10M kernels <= 1.2 GB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
