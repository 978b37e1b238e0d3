"""Load time of PyTorch profiler (Kineto) traces, and what exact (decimal) number parsing costs.

Run: ``.venv/bin/python benchmarks/kineto_load.py [TRACE.json.gz ...] [--quick]`` (default: tests/data/kineto/*;
``--quick``: the smallest of them, one load: seconds, `make test` runs it).
Prints, per trace, the best of 3 cold loads (no cache) and the split: gunzip, json.loads with
float vs Decimal numbers (the floor: parsing the JSON alone), and the whole load against that floor.
"""

from __future__ import annotations

import argparse
import decimal
import gzip
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dashboard.loaders.kineto_json import load_kineto_json  # noqa: E402

RUNS = 3


def best(fn, n=None) -> float:
    n = n or RUNS
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(paths: list[Path]) -> None:
    print(
        f"{'trace':45} {'MB gz':>6} {'MB json':>7} {'events':>7} {'gunzip':>7} {'json float':>10} "
        f"{'json Decimal':>12} {'load total':>10} {'/ json float':>12}"
    )
    for p in paths:
        raw = p.read_bytes()
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        n = len(json.loads(text).get("traceEvents", []))
        t_gz = best(lambda: gzip.decompress(raw)) if raw[:2] == b"\x1f\x8b" else 0.0
        t_float = best(lambda: json.loads(text))
        t_dec = best(lambda: json.loads(text, parse_float=decimal.Decimal))
        t_load = best(lambda: load_kineto_json(p))
        print(
            f"{p.name[:45]:45} {len(raw) / 1e6:6.2f} {len(text) / 1e6:7.2f} {n:7,} {t_gz:6.3f}s {t_float:9.3f}s "
            f"{t_dec:11.3f}s {t_load:9.3f}s {t_load / max(t_float, 1e-9):11.1f}x"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--quick", action="store_true", help="the smallest test trace, one load (seconds)")
    args = parser.parse_args()
    traces = args.traces or sorted((ROOT / "tests" / "data" / "kineto").glob("*.json.gz"))
    if args.quick:
        RUNS = 1
        traces = args.traces or [min(traces, key=lambda p: p.stat().st_size)]
    main(traces)
