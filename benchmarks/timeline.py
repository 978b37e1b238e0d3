"""Timeline level-of-detail benchmark: server time and payload of zoom updates, mark budget.

Usage: python benchmarks/timeline.py [--kernels 2000000] [--trace FILE] [--quick]
(``--quick``: 5,000 kernels: seconds; `make test` runs it)

Loads one (generated) trace, renders the page's views once (the page as first opened), then redraws the
GPU timeline view for windows from the whole GPU activity down to 10 µs, as a zoom request does (the
timeline view's render for the zoomed state, and the JSON Dash sends), and prints per window: server
time, marks sent (must stay <= 5,000) and the payload (target <= 1.5 MB, <= 300 ms per update).
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from plotly.utils import PlotlyJSONEncoder  # noqa: E402

from dashboard.app.views import BY_NAME, VIEWS, render_view  # noqa: E402
from dashboard.data.trace import load_trace  # noqa: E402
from dashboard.state import ViewState, apply_relayout  # noqa: E402

MARK_BUDGET = 5_000


class OneTrace:
    """A store serving one loaded trace (what TraceStore.get returns once the trace is in memory)."""

    def __init__(self, trace):
        self.trace = trace

    def get(self, _trace_id):
        return self.trace


def marks(figure: dict) -> int:
    """Marks drawn: the points of every trace of the figure (numeric arrays arrive base64-encoded, as
    plotly's typed-array spec ``{"dtype", "bdata"}``)."""

    def size(x) -> int:
        if isinstance(x, dict):
            return np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"]).size
        return len(x or ())

    return sum(size(t.get("x")) for t in figure.get("data", ()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=2_000_000)
    parser.add_argument("--trace", type=Path)
    parser.add_argument("--quick", action="store_true", help="5,000 kernels (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.kernels = 5_000
    with tempfile.TemporaryDirectory(prefix="tracedash-tl-") as work:
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
        return bench(trace_path)


def bench(trace_path: Path) -> int:
    t0 = time.perf_counter()
    trace = load_trace(trace_path)
    print(f"{trace_path.name}: {trace.summary.kernel_count:,} kernels loaded in {time.perf_counter() - t0:.2f} s")
    store, base, view = OneTrace(trace), ViewState(trace="bench@00000000"), BY_NAME["timeline"]
    t0 = time.perf_counter()
    for v in VIEWS:
        render_view(v, store, base)
    print(f"first page (all {len(VIEWS)} views): {time.perf_counter() - t0:.2f} s")
    lo, hi = trace.summary.gpu_start_ns, trace.summary.gpu_end_ns
    if lo is None or hi is None or hi <= lo:
        raise SystemExit(f"timeline.py: {trace_path.name} has no GPU activity to zoom into")
    worst_ms = worst_mb = 0.0
    worst_marks = 0
    span = hi - lo
    print(f"{'window':>14} {'server ms':>10} {'marks':>7} {'payload MB':>11}")
    for width in [span, span // 10, span // 100, span // 1000, 10_000_000, 1_000_000, 100_000, 10_000]:
        width = max(min(width, span), 1_000)
        start = lo + (span - width) // 2
        state = apply_relayout(base, {"xaxis.range[0]": start / 1e9, "xaxis.range[1]": (start + width) / 1e9})
        t0 = time.perf_counter()
        out = render_view(view, store, state)  # no response cache: every window renders
        payload = json.dumps(out, cls=PlotlyJSONEncoder)
        ms = (time.perf_counter() - t0) * 1000
        n, mb = marks(out["figure"]), len(payload) / 1e6
        worst_ms, worst_mb, worst_marks = max(worst_ms, ms), max(worst_mb, mb), max(worst_marks, n)
        print(f"{width / 1e9:>12.6f} s {ms:>10.0f} {n:>7,} {mb:>11.3f}")
    print(
        f"worst: {worst_ms:.0f} ms (target <= 300), {worst_marks:,} marks (budget {MARK_BUDGET:,}), "
        f"{worst_mb:.3f} MB (target <= 1.5)"
    )
    return 0 if worst_marks <= MARK_BUDGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
