"""Time the timeline search on a seed-shaped trace of N kernels (``make_trace.py``): server time of one
search (matching the names, ordering the occurrences), of the status line and search lane of a whole-trace
timeline and of a zoom, and of one Next. Target: at most 0.3 s per search on 2M kernels (issue 28).

Each query is timed cold (a new trace analysis, so the search's memo is empty) and warm (memoised), best
of ``--repeat``.

Usage: python benchmarks/search.py [--kernels 2000000] [--trace PATH] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard.analysis.search import find, parse_query  # noqa: E402
from dashboard.data.analysis import analysis_of  # noqa: E402
from dashboard.data.trace import load_trace  # noqa: E402
from dashboard.render.search import go_to, search_lane, search_status  # noqa: E402
from dashboard.state import DEFAULT  # noqa: E402

QUERIES = ("elementwise", "/^(Kernel2|flash_fwd_kernel)$/", "cudaLaunchKernel", "CG_DISPATCH", "no_such_kernel")
TARGET_S = 0.3


def best(fn, repeat: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


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
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from make_trace import generate

        path = Path(tempfile.mkdtemp()) / f"seed_shaped_{args.kernels}.sqlite"
        generate(path, args.kernels)
    trace = load_trace(path)
    a = analysis_of(trace)
    kernels = a.timed_kernels()  # shared with every other view: not the search's cost
    print(f"{len(trace.bundle.kernels):,} kernels, {len(trace.bundle.api_calls):,} CUDA API calls ({path.name})")
    print(f"{'query':40} {'matches':>10} {'search':>8} {'status':>8} {'lane':>8} {'zoomed':>8} {'next':>8}")
    worst = 0.0
    for q in QUERIES:
        query = parse_query(q)
        t_find, occ = best(lambda: find(trace.bundle, kernels, query), args.repeat)
        state = replace(DEFAULT, search=q)
        t_status, _ = best(lambda: search_status(trace, state), args.repeat)
        extent = (int(kernels["start_ns"].min()), int(kernels["end_ns"].max()))
        t_lane, _ = best(lambda: search_lane(trace, state, extent), args.repeat)
        mid = (extent[0] + extent[1]) // 2
        zoomed = (mid, mid + 2_000_000)
        t_zoom, _ = best(lambda: search_lane(trace, state, zoomed), args.repeat)
        t_next, _ = best(lambda: go_to(trace, state, 1), args.repeat)
        worst = max(worst, t_find + t_status, t_find + t_lane)
        print(
            f"{q[:40]:40} {len(occ):>10,} {t_find:>7.3f}s {t_status:>7.3f}s {t_lane:>7.3f}s {t_zoom:>7.3f}s "
            f"{t_next:>7.3f}s"
        )
    verdict = "OK" if worst <= TARGET_S else "OVER TARGET"
    print(f"worst cold search + its lane or status: {worst:.3f} s (target <= {TARGET_S} s): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
