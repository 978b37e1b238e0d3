"""Load test: simulated users drive the dashboard's main callbacks over loopback (issue #6).

    python benchmarks/load.py                      # 8 users, 60 s, 2 traces, one process (one gunicorn worker)
    python benchmarks/load.py --workers 2          # the same under gunicorn with 2 workers
    python benchmarks/load.py --duration 10 --users 4 --max-requests 500
    python benchmarks/load.py --slow-clients 0       # without the 10 slow clients
    python benchmarks/load.py --quick              # seconds: 2 users, 1 slow client, 1.5 s, two small traces

The server is a real ``tracedash serve`` subprocess bound to 127.0.0.1 on a free port (nothing leaves the
machine). Each user opens one of two traces (users alternate), then loops: the full page (its ``_dash-layout``
request with the link as Referer: every view arrives drawn), the NVTX table, the idle gaps, and three zooms of the
timeline at random windows, like a person exploring. Requests are built from the app's own ``/_dash-dependencies``
and each view's state slice (``dashboard.app.views.slice_data``), so the payloads are what the browser sends. The
run stops at ``--duration`` seconds or ``--max-requests``.

Beside the users, ``--slow-clients`` (default 10) sockets each send a callback request's headers with
``Content-Length: 1000000`` and then one byte every 2 s (reconnecting when the server cuts them off),
and a probe asks ``GET /healthz`` every 250 ms (timeout 5 s).

Printed: requests/s, p50/p95/p99 latency per callback and overall, errors (non-200, connection
errors, or an "internal error" alert in the answer; must be 0), ``/healthz`` p50/p99 and failures
(p99 must stay under 1 s), how often the server cut a slow client off, and the server's peak RSS
(all its processes), sampled every 100 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import requests

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = [
    ROOT / "sample_traces" / "generated_seed_shaped_108k.sqlite",
    ROOT / "sample_traces" / "nsys2026.2_2gpu_nccl_before.sqlite",
]
QUICK_TRACES = [
    ROOT / "tests" / "data" / "nsys" / "nsys2025.5_rtx3060_cuda_graph_launch.sqlite",
    ROOT / "sample_traces" / "nsys2026.2_2gpu_nccl_before.sqlite",
]
# What a user asks for: "view" is the page of a trace (the ``_dash-layout`` request of its link, which carries every
# view drawn), the others one view's callback.
CALLBACKS = {"view": (), "nvtx": ("nvtx",), "gaps": ("gaps",), "zoom": ("timeline",)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_outputs(output: str) -> list[dict]:
    parts = output[2:-2].split("...") if output.startswith("..") else [output]
    return [dict(zip(("id", "property"), p.rsplit(".", 1))) for p in parts]


class Driver:
    """Builds callback payloads as the page sends them: one request per view, its state slice as input."""

    def __init__(self, base: str):
        from dashboard.app import ids

        self.base = base
        self.deps = {}
        self.dep_list = requests.get(base + "/_dash-dependencies", timeout=30).json()
        for dep in self.dep_list:
            for inp in dep["inputs"]:
                if isinstance(inp["id"], str) and inp["id"].startswith("{"):
                    pid = json.loads(inp["id"])
                    if pid.get("type") == ids.VIEW_SLICE:
                        self.deps[pid["view"]] = dep
        missing = {v for names in CALLBACKS.values() for v in names} - set(self.deps)
        if missing:
            raise SystemExit(f"load.py: cannot find the callbacks of {', '.join(sorted(missing))}")
        self.trace_ids = self.listed_ids()

    def listed_ids(self) -> list[str]:
        """The trace picker's ids, as a browser opening ``/`` gets them: the ``_dash-layout`` of the bare root
        is the empty shell (a Referer without a query may be a long link cut to its origin), so the page comes
        from the routing callback, which ``dcc.Location`` fires with the browser's own location as it mounts."""
        from dashboard.app import PAGE, PAGE_URL

        route = f"{PAGE}.children"
        if not any(dep["output"] == route for dep in self.dep_list):
            raise SystemExit(f"load.py: the app has no routing callback ({route}) to open the page with")
        resp = requests.post(
            self.base + "/_dash-update-component",
            timeout=120,
            json={
                "output": route,
                "outputs": {"id": PAGE, "property": "children"},
                "inputs": [
                    {"id": PAGE_URL, "property": "pathname", "value": "/"},
                    {"id": PAGE_URL, "property": "search", "value": ""},
                ],
                "changedPropIds": [f"{PAGE_URL}.pathname"],
                "state": [],
            },
        )
        if resp.status_code != 200:
            raise SystemExit(
                f"load.py: the page's routing callback answered HTTP {resp.status_code}: {resp.text[:200]}"
            )
        return list(dict.fromkeys(re.findall(r'"value": ?"([^"]+@[0-9a-f]{32})"', resp.text)))

    def payload(self, view: str, state) -> dict:
        from dashboard.app import ids
        from dashboard.app.views import BY_NAME, slice_data

        dep = self.deps[view]
        outputs = parse_outputs(dep["output"])
        sid = ids.slice_id(view)
        inputs = [
            {**r, "id": sid, "value": slice_data(BY_NAME[view], state)}
            if r["id"].startswith("{")
            else {**r, "value": None}
            for r in dep["inputs"]
        ]  # the slice, and the unset render kick
        return {
            "output": dep["output"],
            "outputs": outputs if dep["output"].startswith("..") else outputs[0],
            "inputs": inputs,
            "state": [{**r, "value": None} for r in dep["state"]],
            "changedPropIds": [json.dumps(sid, sort_keys=True, separators=(",", ":")) + ".data"],
        }


def user(
    driver: Driver,
    trace_id: str,
    extent_s: tuple[float, float],
    stop: threading.Event,
    budget: list,
    results: list,
    seed: int,
) -> None:
    from dashboard.state import ViewState, apply_relayout

    rng = random.Random(seed)
    session = requests.Session()
    state = ViewState(trace=trace_id)

    def call(name: str, st) -> None:
        from dashboard.state import to_query

        for view in CALLBACKS[name] or (None,):
            with LOCK:
                if budget[0] <= 0 or stop.is_set():
                    stop.set()
                    return
                budget[0] -= 1
            t0 = time.perf_counter()
            error = ""
            try:
                if view is None:  # the page of the link, as the browser asks for it
                    resp = session.get(
                        driver.base + "/_dash-layout",
                        timeout=120,
                        headers={"Referer": f"{driver.base}/?{to_query(st)}"},
                    )
                else:
                    resp = session.post(
                        driver.base + "/_dash-update-component", json=driver.payload(view, st), timeout=120
                    )
                if resp.status_code not in (200, 204):
                    error = f"HTTP {resp.status_code}"
                elif "internal error" in resp.text:
                    error = "internal error alert"
            except requests.RequestException as exc:
                error = type(exc).__name__
            results.append((name, time.perf_counter() - t0, error))

    while not stop.is_set():
        call("view", state)
        call("nvtx", state)
        call("gaps", state)
        for _ in range(3):
            lo, hi = extent_s  # windows inside the GPU activity (a trace's session may start long before it)
            width = (hi - lo) * rng.choice([0.5, 0.1, 0.01, 0.001])
            t0 = rng.uniform(lo, max(hi - width, lo))
            call("zoom", apply_relayout(state, {"xaxis.range[0]": t0, "xaxis.range[1]": t0 + width}))


LOCK = threading.Lock()
SLOW_HEAD = (
    b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 1000000\r\n\r\n"
)


def slow_client(port: int, stop: threading.Event, cut: list) -> None:
    """Headers, then a byte every 2 s, for as long as the run lasts; reconnect when cut off."""
    sock = None
    while not stop.is_set():
        try:
            if sock is None:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                sock.sendall(SLOW_HEAD)
            if stop.wait(2):
                break
            sock.sendall(b" ")
        except OSError:
            with LOCK:
                cut[0] += 1
            if sock is not None:
                sock.close()
            sock = None
    if sock is not None:
        sock.close()


def probe_health(base: str, stop: threading.Event, out: list) -> None:
    """``GET /healthz`` every 250 ms on a new connection: (latency s, ok)."""
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            ok = requests.get(base + "/healthz", timeout=5, headers={"Connection": "close"}).status_code == 200
        except requests.RequestException:
            ok = False
        out.append((time.perf_counter() - t0, ok))
        stop.wait(0.25)


def sample_rss(pid: int, stop: threading.Event, peak: list) -> None:
    proc = psutil.Process(pid)
    while not stop.is_set():
        try:
            rss = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
            peak[0] = max(peak[0], rss)
        except psutil.Error:
            pass
        time.sleep(0.1)


def percentiles(latencies: list[float]) -> str:
    if not latencies:
        return "no requests"
    p50, p95, p99 = np.percentile(np.array(latencies) * 1000, [50, 95, 99])
    return f"p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  p99 {p99:7.1f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    ap.add_argument("--max-requests", type=int, default=50_000, help="stop after this many requests")
    ap.add_argument("--workers", type=int, default=1, help="tracedash serve --workers (1: one process)")
    ap.add_argument("--traces", nargs=2, type=Path, default=DEFAULT_TRACES)
    ap.add_argument("--slow-clients", type=int, default=10, help="slow sockets beside the users (default 10)")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    ap.add_argument(
        "--quick", action="store_true", help="seconds, for `make test`: 2 users, 1 slow client, 1.5 s, two small traces"
    )
    args = ap.parse_args()
    if args.quick:
        args.users, args.duration, args.slow_clients, args.traces = 2, 1.5, 1, QUICK_TRACES

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as cache_dir:
        cmd = [
            sys.executable,
            "-m",
            "dashboard",
            "serve",
            *map(str, args.traces),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(args.workers),
            "--cache-dir",
            cache_dir,
        ]
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        stop, peak = threading.Event(), [0]
        sampler = threading.Thread(target=sample_rss, args=(server.pid, stop, peak), daemon=True)
        sampler.start()
        try:
            deadline = time.monotonic() + 120
            while True:
                if server.poll() is not None:
                    raise SystemExit(f"load.py: the server exited: {server.stderr.read()}")
                try:
                    requests.get(base + "/healthz", timeout=2)
                    break
                except requests.RequestException:
                    if time.monotonic() > deadline:
                        raise SystemExit("load.py: the server did not come up in 120 s") from None
                    time.sleep(0.3)
            driver = Driver(base)
            from dashboard.data.trace import load_trace

            by_name = {tid.split("@", 1)[0]: tid for tid in driver.trace_ids}
            missing = [t.name for t in args.traces if t.name not in by_name]
            if missing:
                raise SystemExit(
                    f"load.py: the page lists no trace named {', '.join(missing)} "
                    f"(it lists {', '.join(sorted(by_name)) or 'none'})"
                )
            ids = [by_name[t.name] for t in args.traces]
            summaries = [load_trace(t, lean=True).summary for t in args.traces]
            extents = [(s.gpu_start_ns / 1e9, s.gpu_end_ns / 1e9) for s in summaries]
            # Warm-up: one load of each trace per worker process is not what the steady state measures.
            for tid in ids:
                for _ in range(args.workers):
                    from dashboard.state import ViewState, to_query

                    requests.get(
                        base + "/_dash-layout",
                        timeout=300,
                        headers={"Connection": "close", "Referer": f"{base}/?{to_query(ViewState(trace=tid))}"},
                    )
            results: list = []
            budget = [args.max_requests]
            users = [
                threading.Thread(target=user, args=(driver, ids[i % 2], extents[i % 2], stop, budget, results, i))
                for i in range(args.users)
            ]
            cut, health_lat = [0], []
            extras = [
                threading.Thread(target=slow_client, args=(port, stop, cut), daemon=True)
                for _ in range(args.slow_clients)
            ]
            extras.append(threading.Thread(target=probe_health, args=(base, stop, health_lat), daemon=True))
            for x in extras:
                x.start()
            t0 = time.perf_counter()
            for u in users:
                u.start()
            timer = threading.Timer(args.duration, stop.set)
            timer.start()
            for u in users:
                u.join()
            timer.cancel()
            elapsed = time.perf_counter() - t0
            for x in extras:
                x.join(timeout=10)
            health = requests.get(base + "/healthz", timeout=10).json()
        finally:
            stop.set()
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()

    errors = [r for r in results if r[2]]
    print(
        f"tracedash load test: {args.users} users, {args.workers} worker(s), {elapsed:.1f} s, traces "
        f"{', '.join(t.name for t in args.traces)}"
    )
    print(f"  requests {len(results):,}  ({len(results) / elapsed:.1f} req/s)   errors {len(errors)}")
    health_fail = sum(1 for _, ok in health_lat if not ok)
    print(
        f"  /healthz {percentiles([lat for lat, _ in health_lat])}  ({len(health_lat)} probes, {health_fail} "
        f"failed) beside {args.slow_clients} slow clients (cut off and reconnected {cut[0]} times)"
    )
    print(f"  all      {percentiles([r[1] for r in results])}")
    for name in CALLBACKS:
        lat = [r[1] for r in results if r[0] == name]
        print(f"  {name:<8} {percentiles(lat)}  ({len(lat)} requests)")
    print(
        f"  server peak RSS {peak[0] / 1024**2:,.0f} MiB (all processes); store after run: "
        f"{health['loaded']} trace(s), {health['memory_bytes'] / 1024**2:,.1f} MiB of "
        f"{health['memory_limit_bytes'] / 1024**3:,.1f} GiB bound (in the process that answered)"
    )
    for name, _, err in errors[:10]:
        print(f"  error: {name}: {err}")
    if args.json:
        lat = np.array([r[1] for r in results]) * 1000
        args.json.write_text(
            json.dumps(
                {
                    "users": args.users,
                    "workers": args.workers,
                    "seconds": elapsed,
                    "requests": len(results),
                    "requests_per_s": len(results) / elapsed,
                    "errors": len(errors),
                    "p50_ms": float(np.percentile(lat, 50)),
                    "p95_ms": float(np.percentile(lat, 95)),
                    "p99_ms": float(np.percentile(lat, 99)),
                    "peak_rss_bytes": peak[0],
                    "slow_clients": args.slow_clients,
                    "healthz_p99_ms": float(np.percentile([x for x, _ in health_lat] or [0], 99)) * 1000,
                    "healthz_failed": health_fail,
                },
                indent=2,
            )
        )
    health_p99 = float(np.percentile([x for x, _ in health_lat], 99)) if health_lat else 0.0
    return 1 if errors or health_fail or health_p99 >= 1.0 else 0


if __name__ == "__main__":
    raise SystemExit(main())
