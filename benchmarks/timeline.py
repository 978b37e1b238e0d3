"""Timeline level-of-detail benchmark: server time and payload of zoom updates, mark budget.

Usage: python benchmarks/timeline.py [--kernels 2000000] [--trace FILE]

Loads one (generated) trace, then redraws the GPU timeline for windows from the whole trace down
to 10 µs, as a zoom does (render.zoomed_timeline), and prints per window: server time, marks sent
(must stay <= 5,000) and the figure's JSON payload (target <= 1.5 MB, <= 300 ms per update).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dashboard.state import ViewState

from dashboard.render import build_view, time_extent, phase_view, zoomed_timeline  # noqa: E402
from dashboard.trace import load_trace  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=2_000_000)
    parser.add_argument("--trace", type=Path)
    args = parser.parse_args(argv)
    trace_path = args.trace
    if trace_path is None:
        trace_path = Path(tempfile.mkdtemp(prefix="tracedash-tl-")) / f"generated_{args.kernels}.sqlite"
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_trace.py"), str(trace_path),
                        "--kernels", str(args.kernels)], check=True)
    t0 = time.perf_counter()
    trace = load_trace(trace_path)
    print(f"{trace_path.name}: {trace.summary.kernel_count:,} kernels loaded in {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    build_view(trace, ViewState())
    print(f"first full view (all figures and tables): {time.perf_counter() - t0:.2f} s")
    lo, hi = time_extent(trace, phase_view(trace, ViewState()).dispatches)
    worst_ms = worst_mb = 0.0
    worst_marks = 0
    span = hi - lo
    print(f"{'window':>14} {'server ms':>10} {'marks':>7} {'payload MB':>11}")
    for width in [span, span // 10, span // 100, span // 1000, 10_000_000, 1_000_000, 100_000, 10_000]:
        start = lo + (span - width) // 2
        relayout = {"xaxis.range[0]": start / 1e9, "xaxis.range[1]": (start + width) / 1e9}
        t0 = time.perf_counter()
        fig = zoomed_timeline(trace, ViewState(), relayout)
        payload = fig.to_json()
        ms = (time.perf_counter() - t0) * 1000
        marks = sum(len(t.x) for t in fig.data if t.x is not None)
        mb = len(payload) / 1e6
        worst_ms, worst_mb, worst_marks = max(worst_ms, ms), max(worst_mb, mb), max(worst_marks, marks)
        print(f"{width / 1e9:>12.6f} s {ms:>10.0f} {marks:>7,} {mb:>11.3f}")
    print(f"worst: {worst_ms:.0f} ms (target <= 300), {worst_marks:,} marks (budget 5,000), "
          f"{worst_mb:.3f} MB (target <= 1.5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
