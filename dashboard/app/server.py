"""Production serving: the dashboard under gunicorn (``tracedash serve``; ``--workers N`` processes, else one).

Each worker builds its own app (its own TraceStore, bounded by its share of memory); all workers share
one private upload directory made by the master, so a trace uploaded through one worker is found by the
others (they rescan it on an unknown id). Workers are ``BufferingThreadWorker``: gunicorn's ``gthread``
worker (several threads each, so a slow first load of one trace does not block other users) that
first reads each request's head and up to ``PREBUFFER_BODY_BYTES`` of its body in its event loop,
without a thread. A client that sends slowly (one byte every few seconds: "slowloris") therefore
holds no thread, and is cut off with 408 after ``HEAD_TIMEOUT_S``. Larger bodies (uploads) are read by
a thread under their own deadline (``dashboard.app.upload``), a few at a time.
"""

from __future__ import annotations

import io
import os
import re
import selectors
import threading
import time
from functools import partial

from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker

# Seconds a request may take before gunicorn restarts the worker: a first load of a 10M-kernel
# export takes ~15 s on 2 cores, so this is generous.
WORKER_TIMEOUT_S = 300
THREADS_PER_WORKER = 8
LIMIT_REQUEST_LINE = 8190  # bytes of "GET /?<link> HTTP/1.1" (gunicorn's largest bound; its default is 4094)
# A request's head and first body bytes must arrive within this many seconds of the first byte.
HEAD_TIMEOUT_S = 20
PREBUFFER_BODY_BYTES = 1024**2
MAX_HEAD_BYTES = 64 * 1024
_CUT_OFF = (
    b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 36\r\n\r\nthe request was cut off (incomplete)\n"
)
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d{1,19})")


def request_ready(buf: bytes | bytearray, body_bytes: int = PREBUFFER_BODY_BYTES) -> bool:
    """Whether ``buf`` (the bytes of a connection so far) holds a whole request head plus its body, or
    ``body_bytes`` of it; also True for a head too big or a chunked body (the thread's parser decides)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return len(buf) > MAX_HEAD_BYTES
    head = bytes(buf[:end]).lower()
    if b"\r\ntransfer-encoding:" in head:
        return True
    m = _CONTENT_LENGTH.search(head)
    length = int(m.group(1)) if m else 0
    return len(buf) - end - 4 >= min(length, body_bytes)


def _write_json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's answer to a request it cannot parse (a request line over 8,190 bytes, a bad header, ...) as one
    line of JSON, as every other error of this server, instead of its HTML page."""
    import json

    from gunicorn import util

    body = (json.dumps({"error": f"{reason}: {mesg}"}) + "\n").encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("latin-1", "replace")
    util.write_nonblock(sock, head + body)


class BufferingThreadWorker(ThreadWorker):
    """gunicorn's gthread worker, reading request heads (and small bodies) in the event loop."""

    def init_process(self):
        from concurrent.futures import ThreadPoolExecutor

        from gunicorn import util

        util.write_error = _write_json_error  # gunicorn's handle_error writes through it (its HTML page)
        self._buffering: dict = {}  # connection -> deadline (monotonic s)
        self._probe_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="healthz")
        super().init_process()

    def enqueue_req(self, conn):
        parser = getattr(conn, "parser", None)
        if getattr(conn, "td_ready", False) or (parser is not None and parser.unreader.buf.getvalue()):
            conn.td_ready = False
            if bytes(getattr(conn, "td_buf", None) or b"")[:13] in (b"GET /healthz ", b"GET /healthz?"):
                # A health probe never waits behind busy callback threads: it has its own thread.
                fs = self._probe_pool.submit(self.handle, conn)
                fs.add_done_callback(lambda fut: self.method_queue.defer(self.finish_request, conn, fut))
                return None
            return super().enqueue_req(conn)
        conn.td_buf = bytearray()
        conn.sock.setblocking(False)
        self._buffering[conn] = time.monotonic() + HEAD_TIMEOUT_S
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))
        return None

    def _readable(self, conn, _sock):
        try:
            data = conn.sock.recv(256 * 1024)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client stopped sending before its request was whole
            self._drop(conn, _CUT_OFF if conn.td_buf else b"")
            return
        conn.td_buf += data
        if request_ready(conn.td_buf):
            self.poller.unregister(conn.sock)
            self._buffering.pop(conn, None)
            conn.td_ready = True
            conn.data_ready = True
            self.enqueue_req(conn)

    def _drop(self, conn, answer: bytes = b""):
        self._buffering.pop(conn, None)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        if answer:
            try:
                conn.sock.send(answer)
            except OSError:
                pass
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self):
        super().murder_pending()
        now = time.monotonic()
        for conn in [c for c, deadline in self._buffering.items() if deadline <= now]:
            self._drop(
                conn,
                b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                b"Content-Length: 30\r\n\r\nthe request came too slowly.\r\n",
            )

    def handle(self, conn):
        buf = getattr(conn, "td_buf", None)
        if buf:
            conn.td_buf = None
            conn.sock.setblocking(True)
            conn.init()
            unreader = conn.parser.unreader
            rest = unreader.buf.getvalue()
            unreader.buf = io.BytesIO()
            unreader.buf.write(rest + bytes(buf))
        return super().handle(conn)


def read_deadline(environ: dict, seconds: float):
    """Arm a timer that stops reading the request body of ``environ`` after ``seconds`` (under gunicorn:
    the socket's read side is shut, so a blocked read returns what came). Returns ``(timer, fired)``:
    cancel the timer when done; ``fired.is_set()`` tells whether the deadline passed."""
    import socket

    fired = threading.Event()
    sock = environ.get("gunicorn.socket")

    def stop():
        fired.set()
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RD)
            except OSError:
                pass

    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    return timer, fired


def prepare(app) -> None:
    """Run Dash's one-time server set-up (``Dash._setup_server``: script and stylesheet registration) before
    the worker answers anything. Dash runs it in a hook of the first request and marks it done before it
    registers the scripts, so on a fresh worker the other threads' first requests found no script paths:
    a bundle answered 404 and the page never drew (seen with ``--workers 2``)."""
    with app.server.test_request_context("/"):
        app._setup_server()  # noqa: SLF001 - Dash has no public call for it


def start_warming(app) -> threading.Thread | None:
    """Render the default page (``app.warm``, loading its trace) in a daemon thread of this worker, so
    the first visitor does not wait for the trace to be read; ``TRACEDASH_NO_WARM=1`` turns it off."""
    if os.environ.get("TRACEDASH_NO_WARM") or not hasattr(app, "warm"):
        return None
    thread = threading.Thread(target=app.warm, name="tracedash-warm", daemon=True)
    thread.start()
    return thread


class DashboardServer(BaseApplication):
    """A gunicorn application whose workers each call ``factory()`` to build the Flask server."""

    def __init__(self, factory, options: dict):
        self._factory = factory
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            if key in self.cfg.settings and value is not None:
                self.cfg.set(key, value)

    def load(self):
        app = self._factory()
        prepare(app)
        start_warming(app)
        return app.server


def run_gunicorn(factory, host: str, port: int, workers: int, threads: int = THREADS_PER_WORKER) -> None:
    """Serve ``factory()``'s Dash app on ``host:port`` with ``workers`` processes of ``threads`` threads
    until stopped (SIGINT/SIGTERM). Blocks."""
    DashboardServer(
        factory,
        {
            "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
            "workers": workers,
            "worker_class": "dashboard.app.server.BufferingThreadWorker",
            "threads": threads,
            "timeout": WORKER_TIMEOUT_S,
            "graceful_timeout": 10,
            "keepalive": 5,
            # The longest link the state codec writes (five tables filtered to their bound: ~6.5 KB of query) must
            # open: gunicorn's default request line (4094 bytes) answered 414 to it. 8190 is gunicorn's maximum;
            # header fields (the Referer of `_dash-layout` carries the link) keep their 8190-byte default.
            "limit_request_line": LIMIT_REQUEST_LINE,
            "preload_app": False,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "warning",
            "proc_name": "tracedash",
        },
    ).run()
