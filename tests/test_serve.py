"""Issue #6: `tracedash serve --workers N` (gunicorn) serves, shares uploads between workers, stops cleanly."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import pytest
import requests
from test_app import update_payload

from dashboard.cli import main

from paths import SEED, nsys_trace


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(base: str, proc: subprocess.Popen, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read()}")
        try:
            return requests.get(base + "/healthz", timeout=2).json()
        except requests.RequestException:
            time.sleep(0.3)
    raise AssertionError("server did not come up")


def test_serve_with_gunicorn_workers_shares_uploads_and_stops_on_sigterm(tmp_path):
    shutil.copy(SEED, tmp_path / "seed.json")
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dashboard",
            "serve",
            "--trace-dir",
            str(tmp_path),
            "--workers",
            "2",
            "--port",
            str(port),
            "--memory-limit",
            "256M",
            "--no-cache",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        health = _wait_ready(base, proc)
        assert health["memory_limit_bytes"] == 256 * 1024**2 and health["traces"] == 1
        index = requests.get(base + "/", timeout=10)
        assert index.status_code == 200
        # every script of a fresh worker's page loads, fetched all at once as a browser does (Dash's first-request
        # set-up raced with them: a bundle answered 404 and the page never drew; server.prepare runs it first)
        import re
        from concurrent.futures import ThreadPoolExecutor

        scripts = re.findall(r'<script src="([^"]+)"', index.text)
        assert len(scripts) >= 5
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda src: requests.get(base + src, timeout=30).status_code, scripts))
        assert codes == [200] * len(scripts)
        data = (nsys_trace("nsys2025.5_rtx3060_cuda_graph_launch.sqlite")).read_bytes()
        up = requests.post(
            base + "/upload",
            data=data,
            timeout=30,
            headers={"X-Requested-With": "tracedash", "X-Trace-Name": quote("graph run.sqlite")},
        )
        assert up.status_code == 200, up.text
        tid = up.json()["trace"]
        # Whichever worker answers (connections are not kept alive here), the upload is found.
        for _ in range(6):
            body = requests.post(
                base + "/_dash-update-component",
                json=update_payload(tid, "api"),
                timeout=60,
                headers={"Connection": "close"},
            ).text
            assert "not served here" not in body and "cudaGraphLaunch" in body
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "2 gunicorn workers" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", "--workers", "0"], "--workers must be 1-64, got 0"),
        (["serve", "--memory-limit", "lots"], "not a size: 'lots'"),
        (["serve", "--max-upload=-1G"], "not a size: '-1G'"),
        (["serve", "--memory-limit", "0"], "size must be positive"),
    ],
)
def test_serve_options_are_checked(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_serve_warns_when_binding_beyond_this_machine(tmp_path, monkeypatch, capsys):
    import dashboard.app.server as server

    ran = {}
    shutil.copy(SEED, tmp_path / "seed.json")
    monkeypatch.setattr(
        server,
        "run_gunicorn",
        lambda factory, host, port, workers: ran.update(host=host, workers=workers, debug=factory().server.debug),
    )
    assert main(["serve", "--trace-dir", str(tmp_path), "--host", "0.0.0.0", "--port", str(_free_port())]) == 0
    err = capsys.readouterr().err
    assert "warning: serving on 0.0.0.0: anyone who can reach this address can read the traces" in err
    assert "one gunicorn worker" in err  # a production server even in one process
    assert ran == {"host": "0.0.0.0", "workers": 1, "debug": False}


def test_single_process_server_removes_its_uploads_on_sigterm(tmp_path):
    import os

    shutil.copy(SEED, tmp_path / "seed.json")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard", "serve", "--trace-dir", str(tmp_path), "--port", str(port), "--no-cache"],
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, proc)
        up = requests.post(
            base + "/upload",
            data=SEED.read_bytes(),
            timeout=30,
            headers={"X-Requested-With": "tracedash", "X-Trace-Name": "mine.json"},
        )
        assert up.status_code == 200, up.text
        assert [p.name.startswith("tracedash-uploads-") for p in tmp.iterdir()] == [True]
        assert list(tmp.glob("tracedash-uploads-*/*/mine.json"))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert list(tmp.iterdir()) == []


def test_prepare_registers_dash_scripts_before_any_request():
    from dashboard.app import create_app
    from dashboard.app.server import prepare

    app = create_app([SEED])
    assert app.registered_paths == {}
    prepare(app)
    assert {"dash", "dash_ag_grid"} <= set(app.registered_paths)


def test_serve_debug_starts(tmp_path):
    """--debug runs Flask's reloader: its child serves on the socket its parent holds (the bind check made the
    child exit with "Address already in use")."""
    shutil.copy(SEED, tmp_path / "seed.json")
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dashboard",
            "serve",
            "--trace-dir",
            str(tmp_path),
            "--debug",
            "--port",
            str(port),
            "--no-cache",
            "--no-upload",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _wait_ready(f"http://127.0.0.1:{port}", proc)["traces"] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert "Address already in use" not in err and "Traceback" not in err, err


def test_a_taken_port_is_the_only_line_serve_prints(tmp_path):
    """QA: a port in use printed "serving 1 trace(s) on ..." before the error; now the error is the one line."""
    import socket

    shutil.copy(SEED, tmp_path / "seed.json")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "dashboard",
                "serve",
                "--trace-dir",
                str(tmp_path),
                "--port",
                str(port),
                "--no-cache",
                "--no-upload",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2 and "serving" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"tracedash: error: cannot serve on 127.0.0.1:{port}: Address already in use"
    ]
