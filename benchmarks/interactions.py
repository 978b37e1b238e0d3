"""Server time of one control change, as the page makes it: the state transition, then every view
whose slice changed re-rendered (trace in memory, response cache cold), and the JSON it sends.

Usage: python benchmarks/interactions.py [--trace FILE] [--repeat 5] [--quick]
(``--quick``: a 0.5 MB test trace, one run: seconds; `make test` runs it)

Prints, per interaction: the views it re-renders, their summed server time (render + JSON) (median of ``--repeat``
runs, each after a fresh memo of the changed fields), the slowest view, and the bytes sent.
Target (issue 11): a change that affects one view (kernel grouping, tab, sort, threshold)
<= 0.2 s server time on sample_traces/generated_seed_shaped_108k.sqlite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from plotly.utils import PlotlyJSONEncoder  # noqa: E402

from dashboard.app.views import VIEWS, render_view, view_slice  # noqa: E402
from dashboard.data.trace import load_trace  # noqa: E402
from dashboard.state import ViewState, apply_control, apply_grid, apply_relayout, column_state_for  # noqa: E402

TARGET_MS = 200.0  # server time of a change that re-renders one view (issue 11)


class OneTrace:
    """A store serving one loaded trace (what TraceStore.get returns once the trace is in memory)."""

    def __init__(self, trace):
        self.trace = trace

    def get(self, _trace_id):
        return self.trace


def interactions(base: ViewState):
    yield "kernel grouping → full", apply_control(base, "kernel_names", "full")[0]
    yield "threshold → 100", apply_control(base, "threshold", 100)[0]
    yield "tab → gaps", apply_control(base, "tab", "gaps")[0]
    yield "API table sort → count", apply_grid(base, "api", column_state=column_state_for("api", "count"))
    yield "gap threshold → 50 µs", apply_control(base, "gap_us", 50)[0]
    yield "zoom to 2.0–2.1 s", apply_relayout(base, {"xaxis.range": [2.0, 2.1]})
    w = apply_control(base, "stats", "window")[0]
    yield "zoom, stats for window", apply_relayout(w, {"xaxis.range": [2.0, 2.1]})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=ROOT / "sample_traces" / "generated_seed_shaped_108k.sqlite")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a small sample, one run (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.trace, args.repeat = ROOT / "tests" / "data" / "nsys" / "nsys2025.5_rtx3060_cuda_graph_launch.sqlite", 1
    base = ViewState(trace="bench@00000000")
    print(
        f"{args.trace.name}; server time per control change (median of {args.repeat}, trace in memory; "
        f"target <= {TARGET_MS:.0f} ms for a change that re-renders one view)"
    )
    for label, new in interactions(base):
        touched = [v for v in VIEWS if view_slice(v, new) != view_slice(v, base)]
        runs, slowest, sent = [], ("", 0.0), 0
        for _ in range(args.repeat):
            trace = load_trace(args.trace)  # a fresh trace object: no memoised analyses of the new fields
            store = OneTrace(trace)
            for v in VIEWS:  # the page as loaded: every view rendered for the old state
                render_view(v, store, base)
            total, sent = 0.0, 0
            for v in touched:
                t0 = time.perf_counter()
                out = render_view(v, store, new)
                sent += len(json.dumps(out, cls=PlotlyJSONEncoder))  # Dash serialises the response: counted
                dt = time.perf_counter() - t0
                total += dt
                slowest = max(slowest, (v.name, dt), key=lambda x: x[1])
            runs.append(total)
        names = ", ".join(v.name for v in touched) or "(none: the browser sorts)"
        ms = statistics.median(runs) * 1000
        verdict = (" OK" if ms <= TARGET_MS else " OVER TARGET") if len(touched) == 1 else ""
        print(
            f"  {label:<26} {ms:8.1f} ms{verdict}  views: {names}; slowest {slowest[0]} "
            f"{slowest[1] * 1000:.1f} ms; {sent / 1024:.0f} KiB sent"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
