"""Page load time per sample trace in headless Chromium (run: .venv/bin/python benchmarks/page_load.py).

For each trace in sample_traces/ (or the paths given), serves it alone on a free loopback port and
measures, in a fresh browser context, the time from navigation to: the Gantt drawn, the timeline drawn
and the kernel table filled (or the page's alert shown). Prints one line per trace, median of --runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright
from werkzeug.serving import make_server

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dashboard.app import create_app  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-quic", "--no-first-run"]
READY = """() => {
  const drawn = id => { const gd = document.querySelector('#' + id + ' .js-plotly-plot');
                        return gd && gd._fullLayout && gd.querySelector('.main-svg'); };
  const grid = document.querySelector('#kernel-table');
  const overview = document.querySelector('#overview .card');
  return (drawn('gantt') && drawn('timeline') && overview && grid) || document.querySelector('#alerts .alert-error');
}"""


def measure(path: Path, runs: int) -> list[float]:
    app = create_app([path])
    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_port}/"
    times = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            for _ in range(runs):
                ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
                page = ctx.new_page()
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_function(READY, timeout=120000)
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                times.append(time.perf_counter() - t0)
                ctx.close()
            browser.close()
    finally:
        srv.shutdown()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    traces = args.traces or sorted(p for p in (ROOT / "sample_traces").iterdir() if p.suffix in (".sqlite", ".json"))
    for t in traces:
        times = measure(t, args.runs)
        print(f"{t.name:50s} median {statistics.median(times):6.2f} s   runs {' '.join(f'{x:.2f}' for x in times)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
