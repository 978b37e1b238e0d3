"""Memory of one process serving a trace: the load, then each view of the first page rendered once.

Usage: python benchmarks/memory.py [--kernels 10000000] [--trace FILE] [--cache DIR] [--where] [--quick]
(``--quick``: 5,000 kernels: seconds; `make test` runs it)

Loads one (generated) trace as the server does (``load_trace``, the Parquet cache in ``--cache`` when given: run
twice with the same folder for the "cache warm" case), with the server's malloc settings
(``data.memory.tune_malloc``), then renders every view the first page asks for, in the page's order, one at a time
(as ``trace_gate`` lets them). The resident set size is sampled every 5 ms; per step it prints the wall time, the
peak during the step and the resident size after it, then the derived data the trace keeps (each memoised result's
own arrays: those it shares with the frames are not counted again). The issue's target for a served 10M-kernel
trace is a peak of at most 2 GB; the floor is the frames themselves (printed first).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dashboard.app.views import VIEWS, render_view  # noqa: E402
from dashboard.data.analysis import analysis_of  # noqa: E402
from dashboard.data.cache import TraceCache  # noqa: E402
from dashboard.data.memory import release_freed_arrow_memory, tune_malloc  # noqa: E402
from dashboard.data.trace import load_trace  # noqa: E402
from dashboard.state import ViewState  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from timeline import OneTrace  # noqa: E402  (a store serving one loaded trace)

MIB = 2**20


def rss() -> int:
    """Resident set size of this process, bytes (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Peak:
    """The largest ``rss()`` seen by a thread sampling every 5 ms since the last ``take``; with ``where``, also
    the package's lines the main thread was running when it was reached (``--where``)."""

    def __init__(self, where: bool = False) -> None:
        self.peak, self.where, self.at = rss(), where, ""
        self.main = threading.main_thread().ident
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        import traceback

        while True:
            now = rss()
            if now > self.peak:
                self.peak = now
                if self.where and (frame := sys._current_frames().get(self.main)) is not None:
                    lines = [f for f in traceback.extract_stack(frame) if "/dashboard/" in f.filename]
                    self.at = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in lines[::-1][:4])
                frame = None  # a frame held here would keep the main thread's arrays alive past their use
            time.sleep(0.005)

    def take(self) -> int:
        peak, self.peak = max(self.peak, rss()), rss()
        if self.where and self.at:
            print(f"    peak at {self.at}")
        self.at = ""
        return peak


def buffers(value, out: dict[int, int]) -> None:
    """The numpy buffers under ``value`` (frames, series, arrays, containers, dataclasses): address -> bytes."""
    if isinstance(value, pd.DataFrame):
        for c in value.columns:
            buffers(value[c], out)
    elif isinstance(value, (pd.Series, pd.Index)):
        arr = value.array
        if hasattr(arr, "codes"):
            buffers(np.asarray(arr.codes), out)
        elif hasattr(arr, "_data") and hasattr(arr, "_mask"):
            buffers(arr._data, out)
            buffers(arr._mask, out)
        elif value.dtype != object:
            buffers(np.asarray(arr), out)
    elif isinstance(value, np.ndarray):
        if value.dtype != object:
            base = value
            while isinstance(base.base, np.ndarray):
                base = base.base
            out[base.__array_interface__["data"][0]] = base.nbytes
    elif isinstance(value, dict):
        for v in value.values():
            buffers(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            buffers(v, out)
    elif hasattr(value, "__dict__"):
        for v in vars(value).values():
            buffers(v, out)


def bench(trace_path: Path, cache_dir: Path | None, where: bool = False) -> int:
    tune_malloc()
    peak = Peak(where)
    t0 = time.perf_counter()
    trace = load_trace(trace_path, cache=TraceCache(cache_dir) if cache_dir else TraceCache(enabled=False))
    release_freed_arrow_memory()
    load_s, load_peak = time.perf_counter() - t0, peak.take()
    b = trace.bundle
    frames: dict[int, int] = {}
    for name in ("kernels", "api_calls", "nvtx_ranges", "nvtx_marks", "memops", "graph_launches"):
        buffers(getattr(b, name, None), frames)
    print(
        f"{trace_path.name}: {len(b.kernels):,} kernels, {len(b.api_calls):,} CUDA API calls; "
        f"frames {sum(frames.values()) / MIB:,.0f} MiB"
    )
    print(f"{'step':24} {'wall s':>7} {'peak MiB':>9} {'after MiB':>10}")
    print(f"{'load':24} {load_s:7.2f} {load_peak / MIB:9,.0f} {rss() / MIB:10,.0f}", flush=True)
    store, state = OneTrace(trace), ViewState(trace="bench@00000000")
    worst = ("load", load_peak)
    for view in VIEWS:
        if not view.on_load:
            continue
        t0 = time.perf_counter()
        render_view(view, store, state)
        release_freed_arrow_memory()
        wall, p = time.perf_counter() - t0, peak.take()
        worst = max(worst, (view.name, p), key=lambda w: w[1])
        print(f"{view.name:24} {wall:7.2f} {p / MIB:9,.0f} {rss() / MIB:10,.0f}", flush=True)
    print(f"worst peak: {worst[1] / MIB:,.0f} MiB = {worst[1] / 1e9:.2f} GB ({worst[0]}; target <= 2 GB)")
    seen = dict(frames)
    kept = []
    for key, value in list(analysis_of(trace).memo._values.items()):
        own: dict[int, int] = {}
        buffers(value, own)
        mine = sum(n for a, n in own.items() if a not in seen)
        seen.update(own)
        if mine >= MIB:
            kept.append((mine, key))
    each = ", ".join(f"{'/'.join(str(k) for k in key)} {m / MIB:,.0f}" for m, key in sorted(kept, reverse=True))
    print(f"derived data kept: {sum(m for m, _ in kept) / MIB:,.0f} MiB ({each or 'no result of 1 MiB or more'})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=10_000_000)
    parser.add_argument("--trace", type=Path)
    parser.add_argument("--cache", type=Path, help="Parquet cache folder (default: none)")
    parser.add_argument("--quick", action="store_true", help="5,000 kernels (seconds)")
    parser.add_argument("--where", action="store_true", help="print where in the package each peak was reached")
    args = parser.parse_args(argv)
    if args.quick:
        args.kernels = 5_000
    with tempfile.TemporaryDirectory(prefix="tracedash-mem-") as work:
        trace_path = args.trace
        if trace_path is None:
            trace_path = Path(work) / f"generated_{args.kernels}.sqlite"
            subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "benchmarks" / "make_trace.py"),
                    str(trace_path),
                    "--kernels",
                    str(args.kernels),
                ],
                check=True,
            )
        return bench(trace_path, args.cache, args.where)


if __name__ == "__main__":
    raise SystemExit(main())
