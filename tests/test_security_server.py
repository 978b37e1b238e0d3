"""Issue #14: a shared server lets in only what belongs. Each test drives a real `tracedash serve` on
loopback (a random port) with the request that showed the fault, numbered as in the issue."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import psutil
import pytest
import requests
from test_app import kick_input, update_payload

from paths import SEED, nsys_trace

GRAPH = nsys_trace("nsys2025.5_rtx3060_cuda_graph_launch.sqlite")
MiB = 1024**2
HEADERS = {"X-Requested-With": "tracedash"}


def view_payload(trace_id: str, view: str) -> dict:
    """A callback request for one view (its slice store is its only input), like ``update_payload``."""
    from dashboard.app import ids
    from dashboard.app.views import BY_NAME, slice_data
    from dashboard.state import ViewState

    payload = update_payload(trace_id)
    if view == "alerts":
        return payload
    data = slice_data(BY_NAME[view], ViewState(trace=trace_id))
    data["trace"] = trace_id
    outputs = [{"id": i, "property": p} for i, p in BY_NAME[view].outputs.values()]
    sid = json.dumps(ids.slice_id(view), sort_keys=True, separators=(",", ":"))
    payload.update(
        inputs=[{"id": ids.slice_id(view), "property": "data", "value": data}, *kick_input(BY_NAME[view])],
        changedPropIds=[f"{sid}.data"],
    )
    if outputs:
        payload.update(output=".." + "...".join(f"{o['id']}.{o['property']}" for o in outputs) + "..", outputs=outputs)
    return payload


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `tracedash serve` subprocess on 127.0.0.1 with its own TMPDIR (where its uploads go)."""

    def __init__(self, tmp: Path, *args: str):
        self.traces = tmp / "traces"
        self.tmp = tmp / "tmp"
        self.traces.mkdir()
        self.tmp.mkdir()
        shutil.copy(SEED, self.traces / "seed.json")
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.args = args
        self.proc = None

    def start(self) -> Server:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dashboard",
                "serve",
                "--trace-dir",
                str(self.traces),
                "--port",
                str(self.port),
                "--no-cache",
                *self.args,
            ],
            env={**os.environ, "TMPDIR": str(self.tmp)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.proc.stderr.read()}")
            try:
                requests.get(self.base + "/healthz", timeout=2)
                return self
            except requests.RequestException:
                time.sleep(0.3)
        raise AssertionError("server did not come up")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.communicate(timeout=30)[1]

    @property
    def upload_dir(self) -> Path:
        return next(self.tmp.glob("tracedash-uploads-*"))

    def stored(self) -> list[Path]:
        """Everything in the upload folder except its lock files."""
        return [p for p in self.upload_dir.iterdir() if p.name not in (".lock", ".load.lock")]

    def rss(self) -> int:
        proc = psutil.Process(self.proc.pid)
        return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)])

    def upload(self, data: bytes, name: str, **headers) -> requests.Response:
        return requests.post(
            self.base + "/upload", data=data, timeout=120, headers={**HEADERS, "X-Trace-Name": quote(name), **headers}
        )

    def view(self, trace_id: str, view: str = "alerts", **kw) -> requests.Response:
        """The answer of one view's callback for ``trace_id``, as the page asks for it."""
        return requests.post(
            self.base + "/_dash-update-component", json=view_payload(trace_id, view), timeout=120, **kw
        )

    def page(self, search: str = "", **kw) -> requests.Response:
        """The trace page's components for a link (the page's routing callback)."""
        return requests.post(
            self.base + "/_dash-update-component",
            timeout=60,
            **kw,
            json={
                "output": "page.children",
                "outputs": {"id": "page", "property": "children"},
                "inputs": [
                    {"id": "page-url", "property": "pathname", "value": "/"},
                    {"id": "page-url", "property": "search", "value": search},
                ],
                "changedPropIds": ["page-url.pathname"],
                "state": [],
            },
        )

    def listed(self) -> list[str]:
        """Trace ids in the trace picker of a fresh page."""
        return list(dict.fromkeys(re.findall(r'"value": ?"([^"]+@[0-9a-f]{32})"', self.page().text)))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(
        tmp_path_factory.mktemp("one"),
        "--max-upload",
        "3M",
        "--upload-space",
        "8M",
        "--max-unzipped",
        "80M",
        "--upload-memory",
        "400M",
    ).start()
    yield srv
    srv.stop()


def _clear_uploads(server: Server) -> None:
    for p in server.stored():
        shutil.rmtree(p, ignore_errors=True)


# ----- 1. upload disk cap ---------------------------------------------------------------------------


def test_1_parallel_uploads_never_exceed_the_cap_recent_ones_included(server):
    _clear_uploads(server)
    # 0.5 MiB + 1 MiB of whole zero pages (SQLite reads the page count from its header); space 8 MiB, one
    # client may take half: 4 MiB = 2 uploads, so 5 parallel ones overrun the share
    data = GRAPH.read_bytes() + b"\0" * MiB
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(5) as pool:
        answers = list(pool.map(lambda i: server.upload(data + b"\0" * (4096 * i), f"r{i}.sqlite"), range(5)))
    codes = [a.status_code for a in answers]
    assert set(codes) <= {200, 429, 507} and codes.count(200) >= 1 and codes.count(200) < 5
    refused = [a.json()["error"] for a in answers if a.status_code != 200]
    assert all("share of this server's upload space" in e or "busy with other uploads" in e for e in refused)
    folders = server.stored()
    assert len(folders) == codes.count(200) <= 2
    assert sum(f.stat().st_size for p in folders for f in p.rglob("*") if f.is_file()) <= 4 * MiB
    # sequentially, once this client's share is used, the next one is refused with a message
    while (r := server.upload(data + b"\1", "more.sqlite")).status_code == 200:
        pass
    assert r.status_code == 429 and "at most" in r.json()["error"]
    _clear_uploads(server)


def test_1_a_full_disk_refuses_before_writing(tmp_path, monkeypatch):
    import shutil as sh

    from dashboard.app import create_app

    (tmp_path / "t").mkdir()
    shutil.copy(SEED, tmp_path / "t" / "seed.json")
    app = create_app(trace_dirs=[tmp_path / "t"])
    real = sh.disk_usage
    monkeypatch.setattr(sh, "disk_usage", lambda p: real(p)._replace(free=100 * MiB))
    resp = app.server.test_client().post(
        "/upload", data=GRAPH.read_bytes(), headers={**HEADERS, "X-Trace-Name": "g.sqlite"}
    )
    assert resp.status_code == 507 and "disk is nearly full" in resp.get_json()["error"]
    store = app.server.config["TRACE_STORE"]
    assert [p for p in store.upload_dir.iterdir() if not p.name.startswith(".")] == []


# ----- 2. memory from .json.gz uploads ----------------------------------------------------------------


def _kineto(events: int, pad: int = 0) -> bytes:
    ev = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": f"k{i % 97}",
            "pid": 0,
            "tid": 7,
            "ts": i * 2.0,
            "dur": 1.0,
            "args": {"device": 0, "stream": 7, "correlation": i},
        }
        for i in range(events)
    ]
    return json.dumps({"traceEvents": ev}).encode() + b" " * pad


def test_2_gzip_expanding_past_max_unzipped_is_refused(server):
    _clear_uploads(server)
    bomb = gzip.compress(_kineto(10, pad=90 * MiB), 9)  # 90 MiB unzipped, > 80M --max-unzipped, ~1000x
    resp = server.upload(bomb, "bomb.json.gz")
    assert resp.status_code == 415
    assert "expands to more than this server accepts for an upload (80 MiB unzipped" in resp.json()["error"]
    assert server.stored() == []


def test_2_a_trace_needing_more_memory_than_allowed_is_refused_in_a_child(server):
    _clear_uploads(server)
    data = gzip.compress(_kineto(400_000), 6)  # ~60 MiB of JSON, over 400 MiB once parsed into objects
    assert len(data) < 3 * MiB
    before = server.rss()
    peak = [before]
    stop = threading.Event()

    def sample():
        proc = psutil.Process(server.proc.pid)
        while not stop.is_set():
            try:
                peak[0] = max(
                    peak[0],
                    sum(
                        p.memory_info().rss
                        for p in [proc, *proc.children()]
                        if "limited_load" not in " ".join(p.cmdline())
                    ),
                )
            except psutil.Error:
                pass
            time.sleep(0.05)

    t = threading.Thread(target=sample)
    t.start()
    try:
        resp = server.upload(data, "big.json.gz")
    finally:
        stop.set()
        t.join()
    assert resp.status_code == 415, resp.text
    assert "needs more than the 400 MiB of memory this server allows for an upload" in resp.json()["error"]
    assert peak[0] - before < 100 * MiB  # the server itself did not parse it
    assert server.stored() == []


# ----- 3. slow clients --------------------------------------------------------------------------------


def test_3_slow_clients_do_not_stall_the_workers(tmp_path):
    srv = Server(tmp_path, "--workers", "2").start()
    socks, stop = [], threading.Event()
    try:
        for _ in range(10):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(
                b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000000\r\n\r\n"
            )
            socks.append(s)

        def trickle():
            while not stop.wait(2):
                for s in socks:
                    try:
                        s.sendall(b" ")
                    except OSError:
                        pass

        t = threading.Thread(target=trickle, daemon=True)
        t.start()
        latencies = []
        for _ in range(10):
            t0 = time.perf_counter()
            assert requests.get(srv.base + "/healthz", timeout=5, headers={"Connection": "close"}).ok
            latencies.append(time.perf_counter() - t0)
            time.sleep(0.5)
        assert max(latencies) < 1.0, latencies
        assert srv.view(srv.listed()[0]).status_code == 200
    finally:
        stop.set()
        for s in socks:
            s.close()
        srv.stop()


# ----- 4. Host and Origin -------------------------------------------------------------------------------


def test_4_a_foreign_host_reads_nothing(server):
    resp = server.page(headers={"Host": "evil.example"})
    assert resp.status_code == 421 and "seed.json" not in resp.text
    assert requests.get(server.base + "/_dash-layout", headers={"Host": "evil.example"}, timeout=10).status_code == 421
    assert requests.get(server.base + "/", headers={"Host": "evil.example:8050"}, timeout=10).status_code == 421
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", "app.localhost"):
        assert requests.get(server.base + "/_dash-layout", headers={"Host": host}, timeout=10).status_code == 200


def test_4_allowed_host_is_let_in(tmp_path):
    srv = Server(tmp_path, "--allowed-host", "dash.team.example").start()
    try:
        ok = srv.page(headers={"Host": "dash.team.example:443"})
        assert ok.status_code == 200 and "seed.json" in ok.text
        assert requests.get(srv.base + "/", headers={"Host": "other.example"}, timeout=10).status_code == 421
    finally:
        srv.stop()


def test_4_state_changing_requests_from_another_origin_are_refused(server):
    tid = server.listed()[0]
    foreign = server.view(tid, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "another site" in foreign.json()["error"]
    assert server.view(tid, headers={"Origin": "null"}).status_code == 403
    assert server.view(tid, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert server.view(tid, headers={"Sec-Fetch-Site": "same-site", "Origin": server.base}).status_code == 403
    assert server.view(tid, headers={"Sec-Fetch-Site": "same-origin", "Origin": "null"}).status_code == 200
    assert server.view(tid, headers={"Origin": server.base}).status_code == 200
    up = server.upload(SEED.read_bytes(), "s.json", Origin="http://evil.example")
    assert up.status_code == 403 and server.stored() == []


# ----- 5. upload links are secret; one answer for every unknown id -------------------------------------------


def test_5_upload_ids_are_random_tokens_and_bad_ids_get_one_answer(server):
    _clear_uploads(server)
    traces = requests.get(server.base + "/healthz", timeout=10).json()["traces"]
    a = server.upload(SEED.read_bytes(), "seed.json").json()["trace"]
    b = server.upload(SEED.read_bytes(), "seed.json").json()["trace"]
    served = server.listed()[0]
    assert re.fullmatch(r"seed\.json@[0-9a-f]{32}", a) and len({a, b, served}) == 3  # same content, 3 ids
    assert a not in server.listed() and "17.458 s" in server.view(a, "overview").text
    assert requests.get(server.base + "/healthz", timeout=10).json()["traces"] == traces == 1  # no upload count
    answers = {}
    for tid in (
        "seed.json@" + "0" * 32,
        "seed.json@00000000",
        "nothing.json@" + "0" * 32,
        a[:-1] + ("0" if a[-1] != "0" else "1"),
    ):  # a served name, an old-style id, unknown, a near-upload
        view = server.view(tid).text.replace("\\u002f", "/").replace(tid, "ID")
        link = server.page("?" + urlencode({"trace": tid})).text.replace(tid, "ID")
        compare = requests.post(
            server.base + "/_dash-update-component",
            timeout=60,
            json={
                "output": "page.children",
                "outputs": {"id": "page", "property": "children"},
                "inputs": [
                    {"id": "page-url", "property": "pathname", "value": "/compare/"},
                    {"id": "page-url", "property": "search", "value": "?" + urlencode({"a": tid})},
                ],
                "changedPropIds": ["page-url.pathname"],
                "state": [],
            },
        ).text.replace(tid, "ID")
        notices = re.findall(r"The link asks for trace[^\"]*", link + compare)
        answers[tid] = (view, tuple(notices))
    # an id naming the served seed.json (made up, old-style, or next to an upload's) gets one answer: the link
    # opens the served file of that name, as it would for a link made before the file changed; the upload
    # changes nothing in it
    named = {answers[t] for t in answers if not t.startswith("nothing")}
    assert len(named) == 1
    view, notices = next(iter(named))
    assert "is not served here" in view and notices
    assert all(
        "which is not served here: the file 'seed.json' here has other content (it changed since the link was made" in n
        for n in notices
    )
    view, notices = answers["nothing.json@" + "0" * 32]
    assert "is not served here" in view and notices and all("which is not served here. Showing" in n for n in notices)
    assert all(a not in str(x) and b not in str(x) for x in answers.values())
    _clear_uploads(server)


# ----- 6. ids hash the whole content -------------------------------------------------------------------


def test_6_files_alike_in_size_and_first_64_kib_get_different_ids(tmp_path):
    srv = Server(tmp_path)
    text = SEED.read_text()
    assert '"kernel_count": 107899' in text
    (srv.traces / "seed.json").unlink()
    assert text.startswith("{")
    (srv.traces / "a.json").write_text("{" + " " * 70_000 + text[1:])
    (srv.traces / "b.json").write_text(
        "{" + " " * 70_000 + text[1:].replace('"kernel_count": 107899', '"kernel_count": 207899')
    )
    srv.start()
    try:
        ids = srv.listed()
        assert len(ids) == 2 and ids[0].split("@")[1] != ids[1].split("@")[1]
        bodies = [srv.view(t, "overview", headers={"Connection": "close"}).text for t in ids]
        assert "107,899" in bodies[0] and "207,899" in bodies[1]
    finally:
        srv.stop()


# ----- 7. security headers on every route -------------------------------------------------------------------


def test_7_every_answer_forbids_framing_and_sniffing(server):
    answers = [
        requests.get(server.base + p, timeout=30)
        for p in (
            "/",
            "/_dash-layout",
            "/_dash-dependencies",
            "/assets/tracedash.css",
            "/healthz",
            "/compare/",
            "/no/such/page",
            "/assets/../../etc/passwd",
        )
    ]
    answers.append(server.upload(b"", "e.json"))
    answers.append(server.view(server.listed()[0]))
    for r in answers:
        csp = r.headers.get("Content-Security-Policy", "")
        assert "frame-ancestors 'none'" in csp and "default-src 'self'" in csp, r.url
        assert "script-src 'self' 'sha256-" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        assert r.headers["X-Frame-Options"] == "DENY" and r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Referrer-Policy"] == "same-origin"


# ----- 8. leftovers and leaks --------------------------------------------------------------------------------


@pytest.mark.parametrize("sent", [1_500_000, 300_000])  # past the server's read-ahead (the app reads), within it
def test_8_a_body_shorter_than_its_length_leaves_nothing(server, sent):
    _clear_uploads(server)
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(
            "POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Requested-With: tracedash\r\nX-Trace-Name: cut.sqlite"
            "\r\nContent-Length: 2000000\r\n\r\n".encode()
            + (GRAPH.read_bytes() * 3)[:sent]
        )
        s.shutdown(socket.SHUT_WR)
        s.settimeout(30)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
            if b"cut off" in answer:
                break
        answer = answer.decode(errors="replace")
    assert answer.startswith("HTTP/1.1 400") and "cut off" in answer
    time.sleep(0.5)
    assert server.stored() == []


def test_8_names_are_bounded_in_bytes_and_errors_carry_no_path(server):
    _clear_uploads(server)
    resp = server.upload(b"not a trace at all", "é" * 200 + ".sqlite")
    assert resp.status_code == 415
    err = resp.json()["error"]
    assert str(server.tmp) not in err and "/tmp" not in err and "Errno" not in err
    assert err.startswith("é" * 56 + ".sqlite: ")
    ok = server.upload(SEED.read_bytes(), "notes.part")  # a name that looks like a temporary file still opens
    assert ok.status_code == 200 and "17.458 s" in server.view(ok.json()["trace"], "overview").text
    _clear_uploads(server)


@pytest.mark.parametrize(
    "raw, message",
    [
        ('["a", "b"]', "view-slice:alerts.data: expected an object with keys q"),
        ("[1e400, 2e400]", "number out of range"),
        ("[NaN, 1]", "non-finite number NaN"),
        ('{"q": 5, "trace": "x"}', "view-slice:alerts.data.q: expected text, got 5"),
    ],
)
def test_8_malformed_callback_inputs_get_a_message_not_a_500(server, raw, message):
    payload = update_payload(server.listed()[0])
    payload["inputs"][0]["value"] = "__W__"
    body = json.dumps(payload).replace('"__W__"', raw)
    resp = requests.post(
        server.base + "/_dash-update-component", data=body, timeout=30, headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 400 and message in resp.json()["error"]


def test_8_no_callback_answers_a_500_to_inputs_of_the_wrong_kind(server):
    """Every input of every callback of the page, given values no page sends: a 400 with a message (or the
    callback's own answer), never a 500."""
    deps = requests.get(server.base + "/_dash-dependencies", timeout=30).json()
    tid = server.listed()[0]
    answers = 0

    def concrete(i):  # a pattern id as the page sends it for one view
        if isinstance(i, str) and i.startswith("{"):
            return {k: ("alerts" if isinstance(v, list) else v) for k, v in json.loads(i).items()}
        return i

    for dep in deps:
        if dep.get("clientside_function"):
            continue
        out = dep["output"]
        parts = out[2:-2].split("...") if out.startswith("..") else [out]
        outputs = [dict(zip(("id", "property"), p.rsplit(".", 1))) for p in parts]
        inputs = [{**r, "id": concrete(r["id"])} for r in dep["inputs"]]
        state = [{**r, "id": concrete(r["id"]), "value": None} for r in dep["state"]]
        for i, inp in enumerate(inputs):
            for bad in ("x", 5, [[1]], {"a": 1}, [1, 2, 3]):
                values = [
                    {**r, "value": bad if j == i else (tid if r["id"] == "trace-picker" else None)}
                    for j, r in enumerate(inputs)
                ]
                key = (
                    json.dumps(inp["id"], sort_keys=True, separators=(",", ":"))
                    if isinstance(inp["id"], dict)
                    else inp["id"]
                )
                resp = requests.post(
                    server.base + "/_dash-update-component",
                    timeout=60,
                    json={
                        "output": out,
                        "outputs": outputs if len(outputs) > 1 else outputs[0],
                        "inputs": values,
                        "state": state,
                        "changedPropIds": [f"{key}.{inp['property']}"],
                    },
                )
                assert resp.status_code < 500, (out, inp, bad, resp.text[:200])
                if resp.status_code == 400:
                    assert resp.json()["error"].startswith("refused a malformed callback request")
                answers += 1
    assert answers > 50


def test_8_callback_bodies_over_10_mib_are_refused_unread(server):
    t0 = time.perf_counter()
    resp = requests.post(
        server.base + "/_dash-update-component",
        data=b"[" + b"1," * (6 * MiB) + b"1]",
        timeout=60,
        headers={"Content-Type": "application/json"},
    )
    assert resp.status_code == 413 and "10 MiB" in resp.json()["error"]
    assert time.perf_counter() - t0 < 10


# ----- 9. uploads never run nsys unless asked ---------------------------------------------------------------


def test_9_nsys_reports_are_refused_by_upload_by_default(server):
    _clear_uploads(server)
    resp = server.upload(b"NVIDIA Tegra Profiler Report" + b"\0" * 4096, "run.nsys-rep")
    assert resp.status_code == 415
    err = resp.json()["error"]
    assert "not accepted by upload on this server" in err and "nsys export --type sqlite" in err
    assert "version" not in err and server.stored() == []


# ----- the team token --------------------------------------------------------------------------------------


def test_auth_token_is_asked_once_per_browser_session(tmp_path):
    token = "s3cret-team-token-0123456789"
    (tmp_path / "token").write_text(token + "\n")
    srv = Server(tmp_path, "--auth-token", str(tmp_path / "token")).start()
    try:
        page = requests.get(srv.base + "/?trace=x", headers={"Accept": "text/html"}, timeout=10)
        assert page.status_code == 401 and 'name="token"' in page.text and "seed.json" not in page.text
        assert requests.get(srv.base + "/_dash-layout", timeout=10).status_code == 401
        assert requests.get(srv.base + "/healthz", timeout=10).ok  # a proxy's health check needs no token
        bad = requests.post(srv.base + "/?trace=x", data={"token": "wrong"}, timeout=10, allow_redirects=False)
        assert bad.status_code == 401 and "not right" in bad.text
        s = requests.Session()
        good = s.post(srv.base + "/?trace=x", data={"token": token}, timeout=10, allow_redirects=False)
        assert good.status_code == 303 and good.headers["Location"] == "/?trace=x"
        cookie = good.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Expires" not in cookie
        assert token not in cookie
        assert s.get(srv.base + "/_dash-layout", timeout=10).status_code == 200
        bearer = srv.page(headers={"Authorization": f"Bearer {token}"})
        assert bearer.status_code == 200 and "seed.json" in bearer.text
        assert srv.page().status_code == 401
    finally:
        srv.stop()


def test_10_the_longest_link_the_codec_writes_opens(server):
    """Every table filtered to the codec's bound (~6.5 KB of query with a long trace name): the page and its
    `_dash-layout` (the link as Referer) answer 200 with the filters; gunicorn's default request line answered 414."""
    from urllib.parse import quote

    from dashboard.app.server import LIMIT_REQUEST_LINE
    from dashboard.state import TABLE_COLUMNS, ViewState, canonical_filter, to_query

    filters = {}
    for table, columns in TABLE_COLUMNS.items():
        model = {}
        for col in columns:  # conditions until the model's JSON reaches the codec's bound, with characters to escape
            more = {**model, col: {"filterType": "text", "type": "contains", "filter": "&%\"<>" * 40}}
            if len(json.dumps(more)) > 600:
                break
            model = more
        filters[f"{table}_filter"] = canonical_filter(json.dumps(model), table)
    tid = server.listed()[0]
    query = to_query(ViewState(trace=tid, t0_ns=10**9, t1_ns=2 * 10**9, **filters))
    long_name = len(quote("x" * 200 + "@" + "0" * 32)) - len(quote(tid))  # room for a 200-character file name
    assert len(query) > 4094 and len("GET /? HTTP/1.1") + len(query) + long_name < LIMIT_REQUEST_LINE
    page = requests.get(f"{server.base}/?{query}", timeout=30)
    assert page.status_code == 200 and "<html" in page.text.lower()
    layout = requests.get(server.base + "/_dash-layout", headers={"Referer": f"{server.base}/?{query}"}, timeout=60)
    assert layout.status_code == 200
    from dashboard.app import ids

    def find(node):
        if isinstance(node, dict):
            if node.get("props", {}).get("id") == ids.SEARCH:
                return node["props"]["data"]
            return next((f for f in map(find, node.values()) if f is not None), None)
        if isinstance(node, list):
            return next((f for f in map(find, node) if f is not None), None)
        return None

    assert find(layout.json()) == {"search": "?" + query, "replace": True}  # built from the whole link, unchanged
    # past the limit: gunicorn's answer, as one line of JSON like every other error (QA: its HTML page)
    over = requests.get(f"{server.base}/?trace={'x' * LIMIT_REQUEST_LINE}", timeout=30)
    assert over.status_code == 414 and over.headers["Content-Type"] == "application/json"
    assert over.json()["error"].startswith("URI Too Long: ") and over.text.count("\n") == 1
    assert requests.get(server.base + "/healthz", timeout=10).ok
