"""Issue #6, security: ids never escape the served directories; uploads are bounded, sniffed and private."""

from __future__ import annotations

import os
import shutil
import threading
import time
from html import escape
from urllib.parse import quote

import pytest
from test_app import page_json, update_payload

from dashboard.app import create_app
from dashboard.app.store import TraceStore, trace_nbytes
from dashboard.app.trace_files import scan_dir
from dashboard.app.upload import safe_upload_name
from dashboard.app.upload_folders import prune_uploads
from dashboard.data.trace import load_trace
from dashboard.errors import TraceError, TraceNotFoundError
from dashboard.state import from_dict

from paths import SEED, nsys_trace

SMALL_NSYS = nsys_trace("nsys2025.5_rtx3060_cuda_graph_launch.sqlite")
TRAVERSALS = [
    "../../etc/passwd",
    "/etc/passwd",
    "..%2f..%2fetc%2fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd@0123abcd",
    "../seed.json@0123abcd",
    "..\\..\\etc\\passwd@0123abcd",
    "/etc/passwd@0123abcd",
    "seed.json\x00.sqlite@0123abcd",
    "..@0123abcd",
    "",
]


@pytest.fixture
def served(tmp_path):
    """A trace directory with the seed summary, plus a secret file next to (outside) it."""
    root = tmp_path / "traces"
    root.mkdir()
    shutil.copy(SEED, root / "seed.json")
    (tmp_path / "secret.json").write_text('{"secret": "do not serve"}')
    return root


@pytest.mark.parametrize("bad_id", TRAVERSALS)
def test_traversal_ids_are_refused_by_the_store_and_the_page(served, bad_id):
    app = create_app(trace_dirs=[served])
    store = app.server.config["TRACE_STORE"]
    with pytest.raises(TraceNotFoundError):
        store.path(bad_id)
    payload = update_payload(bad_id)
    body = app.server.test_client().post("/_dash-update-component", json=payload).get_data(as_text=True)
    # the state codec drops what is no trace id and says so; every well-formed id not served here gets
    # the one "not served here" answer
    sent = from_dict(payload["inputs"][0]["value"]).trace
    assert sent in ("", bad_id)
    expected = "is not served here" if sent else "No trace selected" if not bad_id else "Ignored trace="
    assert expected in body
    assert "do not serve" not in body and "root:" not in body


@pytest.mark.parametrize(
    "url",
    [
        "/assets/../../etc/passwd",
        "/assets/..%2f..%2fetc%2fpasswd",
        "/assets/%2e%2e/%2e%2e/etc/passwd",
        "/_dash-component-suites/..%2f..%2fetc/passwd",
        "/assets/%00",
        "/?trace=..%2f..%2fetc%2fpasswd",
    ],
)
def test_traversal_urls_never_return_files(served, url):
    resp = create_app(trace_dirs=[served]).server.test_client().get(url)
    body = resp.get_data(as_text=True)
    assert "root:" not in body and "do not serve" not in body
    assert resp.status_code == (200 if url.startswith("/?") else 404)  # the page itself explains a bad link
    if resp.status_code == 404:  # as every other 404 of a GET (QA: these answered JSON)
        assert (resp.mimetype, body) == ("text/plain", "not found\n")


def test_unknown_paths_answer_404_with_links_to_the_pages(served):
    client = create_app(trace_dirs=[served]).server.test_client()
    for page in ("/", "/compare/", "/compare", "/?trace=x", "/compare/?a=x"):
        resp = client.get(page)
        assert resp.status_code == 200 and '<div id="react-entry-point">' in resp.get_data(as_text=True), page
    for path in ("/does/not/exist", "/compare/x", "/trace", "/<script>alert(1)</script>"):
        resp = client.get(path)
        body = resp.get_data(as_text=True)
        assert resp.status_code == 404 and resp.mimetype == "text/html", path
        assert 'react-entry-point' not in body and "<script>" not in body
        assert '<a href="/">the dashboard</a>' in body and '<a href="/compare/">compare two runs</a>' in body
        assert f"There is no page at <code>{escape(path)}</code>" in body


def test_symlinks_leading_outside_the_trace_dir_are_not_served(served, tmp_path):
    (served / "outside.json").symlink_to(tmp_path / "secret.json")
    (served / "inside.json").symlink_to(served / "seed.json")
    names = [p.name for p in scan_dir(served)]
    assert names == ["seed.json"]  # the inside link resolves to seed.json itself (kept once)
    store = TraceStore(trace_dirs=[served])
    assert [i.split("@")[0] for i in store.ids()] == ["seed.json"]


def test_a_served_file_swapped_for_an_outside_symlink_is_refused(served, tmp_path):
    store = TraceStore(trace_dirs=[served])
    tid = store.ids()[0]
    assert store.path(tid) == (served / "seed.json").resolve()
    (served / "seed.json").unlink()
    (served / "seed.json").symlink_to(tmp_path / "secret.json")
    with pytest.raises(TraceNotFoundError, match="is not served here"):
        store.get(tid)


def test_fifo_in_trace_dir_is_skipped_not_hung(served):
    os.mkfifo(served / "pipe.sqlite")
    assert [p.name for p in scan_dir(served)] == ["seed.json"]


def test_files_exported_after_start_appear_on_next_page_load(served):
    app = create_app(trace_dirs=[served])
    app.server.test_client()
    assert "late.json" not in page_json(app)
    shutil.copy(SEED, served / "late.json")
    assert "late.json" in page_json(app)


def test_store_loads_a_trace_once_when_8_sessions_ask_together(served):
    calls = []

    def slow_loader(path, **kw):
        calls.append(path)
        time.sleep(0.3)
        return load_trace(path, **kw)

    store = TraceStore(trace_dirs=[served], loader=slow_loader)
    tid = store.ids()[0]
    barrier = threading.Barrier(8)
    got = []

    def session():
        barrier.wait()
        got.append(store.get(tid))

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 8 and all(g is got[0] for g in got)


def test_store_is_an_lru_bounded_by_memory(tmp_path):
    for i in range(3):
        shutil.copy(SMALL_NSYS, tmp_path / f"t{i}.sqlite")
        (tmp_path / f"t{i}.sqlite").write_bytes((tmp_path / f"t{i}.sqlite").read_bytes())
    one = trace_nbytes(load_trace(tmp_path / "t0.sqlite"))
    assert one > 1_000
    store = TraceStore(trace_dirs=[tmp_path], memory_limit=2 * one + one // 2)
    a, b, c = store.ids()  # same content: ids differ by suffix, all three are served
    assert len({a, b, c}) == 3
    store.get(a), store.get(b)
    assert list(store._loaded) == [a, b] and store.memory_bytes() == 2 * one
    store.get(a)  # a is now the most recent
    store.get(c)  # over the bound: the least recently used (b) goes
    assert list(store._loaded) == [a, c] and store.memory_bytes() <= store.memory_limit
    tiny = TraceStore(trace_dirs=[tmp_path], memory_limit=1)
    tiny.get(a)
    tiny.get(b)
    assert list(tiny._loaded) == [b]  # the trace asked for is kept even alone over the bound
    assert store.stats()["loads"] == 3


# ----- upload -------------------------------------------------------------------------------------


def _upload(client, data: bytes, name: str, header: bool = True):
    headers = {"X-Trace-Name": quote(name)}
    if header:
        headers["X-Requested-With"] = "tracedash"
    return client.post("/upload", data=data, headers=headers, content_type="application/octet-stream")


def test_upload_serves_the_trace_from_a_private_dir_and_names_cannot_escape(served, tmp_path):
    app = create_app(trace_dirs=[served])
    store = app.server.config["TRACE_STORE"]
    client = app.server.test_client()
    resp = _upload(client, SMALL_NSYS.read_bytes(), "../../../evil name<script>.sqlite")
    assert resp.status_code == 200, resp.get_json()
    tid = resp.get_json()["trace"]
    assert resp.get_json()["format"] == "nsys-sqlite"
    path = store.path(tid)
    assert path.parent.parent == store.upload_dir and path.name == "evil name_script_.sqlite"
    assert oct(store.upload_dir.stat().st_mode & 0o777) == "0o700"
    assert tid in store.ids() and store.label(tid).endswith("(uploaded)")
    body = client.post("/_dash-update-component", json=update_payload(tid, "api")).get_data(as_text=True)
    assert "cudaGraphLaunch" in body
    assert not list(tmp_path.glob("evil*")) and not list(served.glob("evil*"))


@pytest.mark.parametrize(
    "data, name, header, status, message",
    [
        (b"", "empty.sqlite", True, 400, "empty.sqlite: the file is empty (0 bytes)"),
        (
            b"hello, not a trace\n",
            "notes.sqlite",
            True,
            415,
            "notes.sqlite: not a SQLite database (no 'SQLite format 3' header)",
        ),
        (b"SQLite format 3\x00", "seed.sqlite", False, 403, "X-Requested-With header missing"),
        (b"x" * 5000, "big.json", True, 413, "big.json: 0 MiB is over this server's upload limit of 0 MiB"),
    ],
)
def test_bad_uploads_get_a_clear_answer_and_leave_nothing(served, data, name, header, status, message):
    app = create_app(trace_dirs=[served], max_upload_bytes=4096)
    store = app.server.config["TRACE_STORE"]
    resp = _upload(app.server.test_client(), data, name, header)
    assert resp.status_code == status and message in resp.get_json()["error"]
    assert _stored(store) == []


def _stored(store) -> list:
    """Everything in the upload folder but its lock files."""
    return [p for p in store.upload_dir.iterdir() if p.name not in (".lock", ".load.lock")]


def test_uploads_off_answers_503(served):
    app = create_app(trace_dirs=[served], uploads=False)
    resp = _upload(app.server.test_client(), SEED.read_bytes(), "s.json")
    assert resp.status_code == 503 and "turned off" in resp.get_json()["error"]
    assert 'id="upload-button"' not in app.server.test_client().get("/_dash-layout").get_data(as_text=True)


def test_uploads_on_disk_are_an_lru_that_spares_recent_ones(tmp_path):
    import os

    now = time.time()
    for i, age_s in enumerate([4000, 3000, 2000, 1000, 10]):  # u0 oldest ... u4 in use right now
        d = tmp_path / f"u{i}".ljust(32, "0").replace("u", "a")
        d.mkdir()
        (d / "t.sqlite").write_bytes(b"x" * 100)
        os.utime(d, (now - age_s, now - age_s))
    removed = prune_uploads(tmp_path, max_uploads=2, grace_s=300)
    assert [p.name[:2] for p in removed] == ["a0", "a1", "a2"]
    assert sorted(p.name[:2] for p in tmp_path.iterdir()) == ["a3", "a4"]
    # over the byte budget, but the only other upload is within the grace period: nothing more goes
    assert [p.name[:2] for p in prune_uploads(tmp_path, max_uploads=10, max_bytes=100, grace_s=300)] == ["a3"]
    assert [p.name[:2] for p in prune_uploads(tmp_path, max_uploads=0, grace_s=300)] == []  # a4: in use


def test_using_an_upload_marks_it_recent_for_every_worker(served):
    import os

    app = create_app(trace_dirs=[served])
    store = app.server.config["TRACE_STORE"]
    tid = _upload(app.server.test_client(), SMALL_NSYS.read_bytes(), "mine.sqlite").get_json()["trace"]
    folder = store.path(tid).parent
    os.utime(folder, (time.time() - 3600, time.time() - 3600))
    store.get(tid)  # already in memory: still a use
    assert time.time() - folder.stat().st_mtime < 60


def test_uploads_are_listed_only_for_their_link(served):
    app = create_app(trace_dirs=[served])
    store = app.server.config["TRACE_STORE"]
    client = app.server.test_client()
    tid = _upload(client, SMALL_NSYS.read_bytes(), "mine.sqlite").get_json()["trace"]
    assert tid in store.ids() and tid not in store.listed_ids()
    assert store.listed_ids([tid])[-1] == tid
    assert tid not in page_json(app)  # not listed for other users
    assert tid in page_json(app, "?trace=" + quote(tid))  # its link opens it
    options = [{"label": store.label(t), "value": t} for t in store.listed_ids([tid])]
    assert [o["value"] for o in options] == [*store.listed_ids(), tid]
    assert options[-1]["label"] == "mine.sqlite (uploaded)"


def test_an_upload_that_cannot_be_loaded_is_refused_and_removed(served):
    app = create_app(trace_dirs=[served])
    store = app.server.config["TRACE_STORE"]
    data = SMALL_NSYS.read_bytes()
    resp = _upload(app.server.test_client(), data[: len(data) // 2], "half.sqlite")
    assert resp.status_code == 415 and resp.get_json()["error"].startswith("half.sqlite: ")
    assert _stored(store) == [] and [t.split("@")[0] for t in store.ids()] == ["seed.json"]


def test_parallel_uploads_stay_within_the_hard_cap(served, monkeypatch):
    """Issue #14, 1: uploads in the last 5 minutes count toward the cap; when full the answer is 507.

    The child-process load check (tested on its own in test_security_server.py) is replaced by one
    that takes 0.2 s, so that uploads overlap as they do on a server without a Python start-up each."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import dashboard.app.upload_check as upload_check
    from dashboard.app.upload import UploadPolicy

    def quick_check(path, **kw):
        time.sleep(0.2)
        return upload_check.CheckResult(format="nsys-sqlite")

    monkeypatch.setattr(upload_check, "check_upload", quick_check)

    data = SMALL_NSYS.read_bytes()
    policy = UploadPolicy(
        max_upload_bytes=len(data) + 100, max_files=6, max_bytes=20 * len(data), concurrent=8, client_share=1.0
    )
    app = create_app(trace_dirs=[served], upload_policy=policy)
    store = app.server.config["TRACE_STORE"]

    def one(i):
        resp = _upload(app.server.test_client(), data + b"\0" * i, f"run{i}.sqlite")  # distinct content
        return resp.status_code, resp.get_json()

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(10)))
    codes = sorted(code for code, _ in results)
    assert codes == [200] * 6 + [507] * 4
    assert all("upload space is full" in body["error"] for code, body in results if code == 507)
    for code, body in results:  # all within the grace period: none pruned, every accepted id still opens
        if code == 200:
            assert store.path(body["trace"]).is_file()
    assert len(_stored(store)) == 6


def test_gzip_bomb_is_refused_without_filling_memory(tmp_path, monkeypatch):
    import gzip

    import dashboard.loaders.kineto_json as kj

    monkeypatch.setattr(kj, "GZIP_FLOOR_BYTES", 1024**2)
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as fh:
        fh.write(b'{"traceEvents": [' + b" " * (64 * 1024**2) + b"]}")
    assert bomb.stat().st_size < 100_000
    with pytest.raises(
        TraceError,
        match=r"^bomb.json.gz: expands far more than a profiler trace compresses "
        r"\(over 5 MiB from 0.06 MiB, more than 64x\).*gzip bomb",
    ):
        load_trace(bomb)


def test_upload_name_is_always_a_plain_base_name():
    assert safe_upload_name("a/b/../../c.sqlite") == "c.sqlite"
    assert safe_upload_name("..") == "upload"
    # a name without a stem keeps all its suffixes (never stored as "json" or "json.gz", which lose the kind)
    assert [safe_upload_name(n) for n in (".json", " ..sqlite", ".json.gz", ".pt.trace.json", ".hidden.json")] == [
        "upload.json",
        "upload.sqlite",
        "upload.json.gz",
        "upload.pt.trace.json",
        "upload.hidden.json",
    ]
    assert safe_upload_name("x\x00y\n.json") == "xy.json"
    assert safe_upload_name("C:\\Users\\me\\run.sqlite") == "run.sqlite"
    long = safe_upload_name("n" * 500 + ".sqlite")
    assert len(long) == 120 and long.endswith("nn.sqlite")
    # at most 120 UTF-8 bytes (not characters), the double suffix kept
    assert safe_upload_name("é" * 300 + ".json.gz") == "é" * 56 + ".json.gz"
    assert safe_upload_name("漢" * 100 + ".sqlite") == "漢" * 37 + ".sqlite"  # 118 bytes: no half character


def test_healthz_reports_memory_and_counts(served):
    client = create_app(trace_dirs=[served], memory_limit=10**9).server.test_client()
    body = client.get("/healthz").get_json()
    assert body == {
        "status": "ok",
        "traces": 1,
        "loaded": 0,
        "loads": 0,
        "memory_bytes": 0,
        "memory_limit_bytes": 10**9,
        "cache_writes_pending": 0,
    }


def test_dash_never_calls_out_and_debug_is_off(served):
    app = create_app(trace_dirs=[served])
    page = app.server.test_client().get("/").get_data(as_text=True)
    assert "https://" not in page and "http://" not in page
    assert app.server.debug is False


def test_a_trace_id_hashes_the_whole_file_once_and_keeps_it_beside_the_parquet_cache(tmp_path):
    """Issue #14, 6: equal ids mean equal content; the digest is computed once and cached with the Parquet key."""
    import hashlib

    import dashboard.app.trace_files as store_mod
    from dashboard.data.cache import TraceCache, file_identity

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    head = b"{" + b" " * 70_000
    a.write_bytes(head + b'"x": 1}')
    b.write_bytes(head + b'"x": 2}')  # same size and first 64 KiB
    cache = TraceCache(tmp_path / "cache")
    ida = store_mod.trace_id(a, cache)
    assert ida == f"a.json@{hashlib.sha256(a.read_bytes()).hexdigest()[:32]}"
    assert ida.split("@")[1] != store_mod.trace_id(b, cache).split("@")[1]
    stored = cache.entries_dir / f"{file_identity(a)}.sha256"
    assert stored.read_text() == hashlib.sha256(a.read_bytes()).hexdigest()
    store_mod._DIGESTS.clear()  # a new process: the digest comes from the cache, the file is not hashed again
    stored.write_text("f" * 64)
    assert store_mod.trace_id(a, cache) == "a.json@" + "f" * 32
    assert cache.clear() == 0 and not stored.exists()  # `tracedash cache clear` removes digests too


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {"output": "nonexistent.children", "outputs": {"id": "nonexistent", "property": "children"}, "inputs": []},
            "no callback has the output 'nonexistent.children'",
        ),
        ({"output": 5, "inputs": []}, "no callback has the output '5'"),
        ({"output": "page.children", "inputs": []}, "'inputs' holds 0 value(s), the callback takes 2"),
        ({"output": "page.children"}, "'inputs' holds 0 value(s), the callback takes 2"),
    ],
)
def test_a_callback_request_for_no_callback_gets_a_400_without_a_traceback(served, body, message, caplog):
    """Found by the fresh-clone QA: a well-formed request naming an output no callback has, or giving a
    callback the wrong number of inputs, answered 500 and logged Dash's KeyError / CallbackException."""
    app = create_app(trace_dirs=[served], uploads=False)
    with caplog.at_level("INFO"):
        resp = app.server.test_client().post("/_dash-update-component", json=body)
    assert resp.status_code == 400
    assert resp.get_json() == {"error": f"refused a malformed callback request: {message}"}
    assert not [r for r in caplog.records if r.exc_info]
    ok = app.server.test_client().post(
        "/_dash-update-component", json=update_payload(app.server.config["TRACE_STORE"].listed_ids()[0])
    )
    assert ok.status_code == 200  # a request the page sends still fits its callback


def test_an_over_long_text_value_is_named_as_too_long_not_as_the_wrong_kind():
    """The fresh-clone QA's 5 MB "?tab=aaaa…" search was refused as "expected text": it is text, too long."""
    from dashboard.app.security import MAX_TEXT_CHARS, check_kind

    with pytest.raises(ValueError, match=r"^page-url.search: text of 100,001 characters \(at most 100,000\)$"):
        check_kind("page-url.search", "text", "?" + "a" * MAX_TEXT_CHARS)
    with pytest.raises(ValueError, match=r"^page-url.search: expected text, got 5$"):
        check_kind("page-url.search", "text", 5)
    check_kind("page-url.search", "text", "?" + "a" * (MAX_TEXT_CHARS - 1))


def test_a_link_made_before_its_file_changed_opens_the_file_of_that_name_but_never_an_upload(served):
    from dashboard.app import main_state

    app = create_app(trace_dirs=[served])
    store = app.server.config["TRACE_STORE"]
    current = next(t for t in store.ids() if t.startswith("seed.json@"))
    stale = "seed.json@0123abcd"
    state, notices = main_state(f"?trace={quote(stale)}&tab=nvtx", store)
    assert state.trace == current and state.tab == "nvtx"
    assert notices == [
        f"The link asks for trace {stale!r}, which is not served here: the file 'seed.json' here has other content "
        "(it changed since the link was made, or the link's version is mistyped). Showing it as it is now."
    ]
    # its version cut to 8 hex digits by hand (the form links take, as a short git hash): that file, no notice
    short = current[: current.index("@") + 9]
    assert main_state(f"?trace={quote(short)}&tab=nvtx", store) == (state, [])
    assert store.explain_changed(short, current) is None and store.explain_changed(stale, current) is not None
    # an upload is private to its link: its name alone opens nothing
    resp = _upload(app.server.test_client(), SMALL_NSYS.read_bytes(), "mine.sqlite")
    assert resp.status_code == 200
    upload = resp.get_json()["trace"]
    state, notices = main_state(f"?trace={quote('mine.sqlite@0123abcd')}", store)
    assert state.trace != upload and notices == [store.explain_missing("mine.sqlite@0123abcd")]
    assert store.same_name("other.json@0123abcd") is None
    # the compare page resolves its two ids the same way
    from dashboard.app.compare_callbacks import choose_pair

    named = store.listed_ids([stale, "mine.sqlite@0123abcd"])
    a, b, notices = choose_pair(named, stale, "mine.sqlite@0123abcd", store.explain_missing, store)
    assert a == current and b != upload and b in named
    assert notices[:2] == [
        "Baseline: " + store.explain_changed(stale, current),
        "Candidate: " + store.explain_missing("mine.sqlite@0123abcd"),
    ]
    assert choose_pair(store.listed_ids([short]), short, current, store.explain_missing, store) == (
        current,
        current,
        [],
    )
    # a bare file name names the served file of that name (QA: "not served here", then "comparing with" it),
    # never an upload
    assert choose_pair(named, "seed.json", "mine.sqlite", store.explain_missing, store)[::2] == (
        current,
        [
            "Baseline: the link names the file 'seed.json': its trace is compared.",
            "Candidate: " + store.explain_missing("mine.sqlite"),
        ],
    )
    a, b, notices = choose_pair(named, upload, stale, store.explain_missing, store)  # an upload's id, unnamed
    assert (a, b, notices) == (
        named[0],
        current,
        ["Baseline: " + store.explain_missing(upload), "Candidate: " + store.explain_changed(stale, current)],
    )


def test_a_clients_own_idle_uploads_make_room_for_its_next_one(tmp_path):
    """One client (every browser behind 127.0.0.1 is one) used to be refused for good once it had made its share
    of uploads: only the server's whole space freed idle ones."""
    from dashboard.app.upload import PENDING, UploadPolicy, UploadRefused, reserve_upload

    policy = UploadPolicy(max_upload_bytes=1_000, max_files=8, max_bytes=8_000, client_share=0.5, min_free_bytes=0)

    def finished(folder, age_s: float):  # written, then last used age_s ago
        shutil.rmtree(folder / PENDING)
        (folder / "t.sqlite").write_bytes(b"x" * 100)
        t = time.time() - age_s
        os.utime(folder, (t, t))
        return folder

    idle = [finished(reserve_upload(tmp_path, policy, "a", 100), 900 - i) for i in range(3)]  # oldest first
    used = finished(reserve_upload(tmp_path, policy, "a", 100), 10)
    other = finished(reserve_upload(tmp_path, policy, "b", 100), 900)
    fifth = reserve_upload(tmp_path, policy, "a", 100)  # share: 4 uploads; the least recently used idle one goes
    assert [p.exists() for p in (*idle, used, other, fifth)] == [False, True, True, True, True, True]
    finished(fifth, 10)
    sixth = reserve_upload(tmp_path, policy, "a", 100)
    assert [p.exists() for p in idle] == [False, False, True] and sixth.exists()
    finished(sixth, 10)
    seventh = reserve_upload(tmp_path, policy, "a", 100)
    assert not idle[2].exists() and used.exists() and other.exists()
    finished(seventh, 10)
    with pytest.raises(UploadRefused) as refused:  # four uploads used in the last 5 minutes: none goes
        reserve_upload(tmp_path, policy, "a", 100)
    assert refused.value.status == 429 and "(4 uploads, at most 4 per client, all in use in the last 5 minutes)" in str(
        refused.value
    )
    mib = 1024**2  # the bytes share, named as such: an upload in progress counts at its reserved size
    big = UploadPolicy(max_upload_bytes=2 * mib, max_files=8, max_bytes=8 * mib, client_share=0.5, min_free_bytes=0)
    (tmp_path / "big").mkdir()
    reserve_upload(tmp_path / "big", big, "c", 3 * mib)
    with pytest.raises(UploadRefused) as refused:
        reserve_upload(tmp_path / "big", big, "c", 2 * mib)
    assert refused.value.status == 429
    assert "(3 MiB in use or reserved and 2 MiB asked for, at most 4 MiB per client, all in use" in str(refused.value)


def test_an_unknown_dash_component_file_is_a_plain_404(served):
    resp = create_app(trace_dirs=[served]).server.test_client().get("/_dash-component-suites/dash/nope.js")
    assert (resp.status_code, resp.mimetype, resp.get_data(as_text=True)) == (404, "text/plain", "not found\n")
