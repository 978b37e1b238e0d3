"""Static export (kaleido on the system Chromium) and the offline HTML report."""

import struct
import xml.etree.ElementTree as ET

import pytest

from dashboard.cli import main
from dashboard.render.export import report_for_url, state_from_url

from paths import SAMPLES, SEED, nsys_trace

TRACE = SAMPLES / "generated_seed_shaped_108k.sqlite"
LINK = "http://127.0.0.1:8050/?t0_ns=1000000000&t1_ns=1020000000&threshold=100&v=1"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_export_png_svg_pdf(tmp_path, capsys):
    png, svg, pdf = tmp_path / "v.png", tmp_path / "v.svg", tmp_path / "v.pdf"
    assert main(["export", str(TRACE), "--url", LINK, "-o", str(png), "--no-cache"]) == 0
    w, h = png_size(png.read_bytes())
    assert w == 3200 and h > 400  # 1600 px at 2x scale
    assert main(["export", str(TRACE), "--url", LINK, "--figure", "gantt", "-o", str(svg), "--no-cache"]) == 0
    root = ET.fromstring(svg.read_bytes())
    assert root.tag.endswith("svg")
    text = svg.read_text()
    assert "tracedash · generated_seed_shaped_108k.sqlite" in text and "window 1.000000–1.020000 s" in text
    assert "prefill ≥ 100.0 tokens (set)" in text
    assert main(["export", str(SEED), "--figure", "phases", "-o", str(pdf)]) == 0
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_image_export_asks_kaleido_again_when_its_page_was_not_ready(monkeypatch):
    """kaleido's start-up can lose a race on a busy machine ("kaleido_scopes is not defined"): the export asks
    again (it failed `make test` once); any other error is raised at once."""
    import plotly.graph_objects as go

    import dashboard.render.export as export

    calls = []

    def flaky(self, **kwargs):
        calls.append(kwargs["format"])
        if len(calls) == 1:
            raise RuntimeError("JavascriptError: ReferenceError: kaleido_scopes is not defined")
        return b"PNG"

    monkeypatch.setattr(export, "_ensure_kaleido", lambda: None)
    monkeypatch.setattr(export.time, "sleep", lambda s: None)
    monkeypatch.setattr(go.Figure, "to_image", flaky)
    assert export.image_bytes(go.Figure(), "png", which="gantt") == b"PNG" and calls == ["png", "png"]
    monkeypatch.setattr(go.Figure, "to_image", lambda self, **kw: (_ for _ in ()).throw(RuntimeError("other")))
    with pytest.raises(RuntimeError, match="other"):
        export.image_bytes(go.Figure(), "png", which="gantt")


def test_export_bad_figure_and_format(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["export", str(TRACE), "--figure", "nope", "-o", str(tmp_path / "x.png")])
    assert main(["export", str(TRACE), "-o", str(tmp_path / "x.gif"), "--no-cache"]) == 2
    assert ".gif is not an image format tracedash writes" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--url", "garbage", "-o", "{d}/x.png"],
            "--url 'garbage' is not a dashboard link: none of its keys (garbage)",
        ),
        (["--url", "https://host/?utm=1&ref=x", "-o", "{d}/x.png"], "none of its keys (utm, ref) is a view setting"),
        (["--format", "pdf", "-o", "{d}/x.png"], "--format pdf but the output x.png ends in .png: name it .pdf"),
        (["-o", "{d}/x.jpg"], "x.jpg: .jpg is not an image format tracedash writes"),
        (["-o", "{d}/no/such/x.png"], "x.png: cannot write: its folder {d}/no/such does not exist"),
        (["-o", "{d}"], "{d}: is a folder; give the file to write"),
    ],
)
def test_export_refuses_bad_arguments_before_reading_the_trace(tmp_path, capsys, args, message):
    """Each is refused with exit 2 before the trace is opened: the trace here does not exist, and the
    message is still about the argument, not about the missing file."""
    missing = str(tmp_path / "never-read.sqlite")
    argv = ["export", missing, *(a.format(d=tmp_path) for a in args)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracedash: error: ") and message.format(d=tmp_path) in err and "never-read" not in err
    assert not (tmp_path / "x.png").exists()


def test_report_refuses_garbage_url_and_bad_folder_before_reading(tmp_path, capsys):
    missing = str(tmp_path / "never-read.sqlite")
    assert main(["report", missing, "-o", str(tmp_path / "r.png")]) == 2  # HTML under an image name
    assert "r.png: a report is one HTML file: name it .html" in capsys.readouterr().err
    (tmp_path / "afile").write_text("x")
    assert main(["report", missing, "-o", str(tmp_path / "afile" / "r.html")]) == 2
    assert f"cannot write: {tmp_path / 'afile'} is a file, not a folder" in capsys.readouterr().err
    assert not (tmp_path / "r.png").exists()
    assert main(["report", missing, "--url", "not a link", "-o", str(tmp_path / "r.html")]) == 2
    assert "--url 'not a link' is not a dashboard link" in capsys.readouterr().err
    assert main(["report", missing, "-o", str(tmp_path / "nope" / "r.html")]) == 2
    assert f"cannot write: its folder {tmp_path / 'nope'} does not exist" in capsys.readouterr().err


def test_report_warns_of_unknown_link_keys(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(SEED), "--url", "?tab=gaps&utm_source=mail", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: Ignored utm_source in the link: not a view setting of this tracedash version." in err
    assert "?tab=gaps" in out.read_text()


def test_query_keys_splits_known_and_unknown():
    from dashboard.state import query_keys

    assert query_keys("?tab=gaps&foo=1&t0_ns=1&t1_ns=2&foo=2&v=1&bar") == (
        ["tab", "t0_ns", "t1_ns", "v"],
        ["foo", "bar"],
    )
    assert query_keys("") == ([], [])


def test_state_from_url_forms():
    assert state_from_url(LINK).window() == (1_000_000_000, 1_020_000_000)
    assert state_from_url("?tab=gaps&v=1").tab == "gaps"
    assert state_from_url("tab=gaps").tab == "gaps"
    assert state_from_url(None).tab == "kernels"


@pytest.mark.parametrize(
    "trace",
    [
        SEED,
        TRACE,
        nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"),
        nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite"),
    ],
    ids=lambda p: p.name,
)
def test_report_is_self_contained_and_small(trace, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(trace), "--url", LINK if trace == TRACE else "", "-o", str(out), "--no-cache"]) == 0
    html = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 2.5 * 2**20  # plotly.js's cartesian bundle inlined once (1.5 MB; the full one is 4.8)
    assert html.count("plotly.js (cartesian - minified) v") == 1 and "* plotly.js v" not in html
    assert html.count("<script") >= 3 and "<scriptsrc" not in html.replace(" ", "") and 'src="http' not in html
    assert f"tracedash report · {trace.name}" in html
    if trace == TRACE:
        assert "window: 1.000000–1.020000 s" in html and "prefill when tokens ≥ 100" in html
    if "cpu_llm" in trace.name:  # CUDA not traced: the NVTX table's GPU overlap was never measured
        assert "<h2>NVTX ranges</h2>" in html and "<td>—</td><td>—</td></tr>" in html and "0.0 %" not in html


def test_report_names_what_the_link_could_not_set(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert (
        main(["report", str(SEED), "--url", "?t0_ns=abc&t1_ns=5&tab=zz&threshold=100", "-o", str(out), "--no-cache"])
        == 0
    )
    err = capsys.readouterr().err
    assert "tracedash: warning: Ignored t0_ns/t1_ns='abc,5'" in err and "tracedash: warning: Ignored tab='zz'" in err
    html = out.read_text(encoding="utf-8")
    # the view link is what was applied; the values it could not apply are named under it, not shown as applied
    assert "View link: <code>?threshold=100&amp;v=" in html and "t0_ns=abc" not in html.split("Ignored")[0]
    assert "Ignored tab=&#x27;zz&#x27;" in html and "window: whole trace" in html


def test_report_inlines_the_full_plotly_bundle_when_the_partial_one_does_not_match(tmp_path, monkeypatch):
    import dashboard.render.export as export

    monkeypatch.setattr(export, "partial_bundle", lambda: None)  # e.g. plotly upgraded, assets/vendor not yet
    out = tmp_path / "r.html"
    assert main(["report", str(SEED), "-o", str(out), "--no-cache"]) == 0
    html = out.read_text(encoding="utf-8")
    assert html.count("* plotly.js v") == 1 and "(cartesian" not in html and out.stat().st_size > 4 * 2**20


def test_report_escapes_names(tmp_path):
    import sys

    from dashboard.data.trace import load_trace

    from factories import write_nsys_sqlite

    p = write_nsys_sqlite(
        tmp_path / "x.sqlite", kernels=[{"start": 1, "end": 9, "shortName": "<script>alert(1)</script>"}]
    )
    html = report_for_url(load_trace(p), None)
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert sys  # keep the import used


def test_export_refuses_a_link_whose_values_it_cannot_set(tmp_path, capsys):
    """As GET /export: an image of another view than the link asks for would be a false answer (QA: it drew the
    whole trace, exit 0); a key of another tool is only a warning."""
    out = tmp_path / "v.svg"
    assert main(["export", str(SEED), "--url", "?t0_ns=abc", "-o", str(out), "--no-cache"]) == 2
    assert capsys.readouterr().err == (
        "tracedash: error: Ignored t0_ns='abc' in the link: the window needs t1_ns too. Nothing was drawn: correct "
        "the link.\n"
    )
    assert main(["export", str(SEED), "--url", "?search=/(/", "-o", str(out), "--no-cache"]) == 2
    assert "Ignored search='/(/' in the link: /(/ is not a regular expression RE2 reads: " in capsys.readouterr().err
    assert not out.exists()
    assert main(["export", str(SEED), "--url", "?tab=gaps&utm_source=mail", "-o", str(out), "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert "tracedash: warning: Ignored utm_source in the link: not a view setting of this tracedash version." in err
    assert out.stat().st_size > 0
    # a reason that ends its own sentence is not given a second full stop (QA: "< 2^62.. Nothing was drawn")
    assert main(["export", str(SEED), "--url", "?note=abc", "-o", str(out), "--no-cache"]) == 2
    assert capsys.readouterr().err.endswith(" < 2^62. Nothing was drawn: correct the link.\n")
    # a link of another version has every setting read: drawn with its notice, as `report` and the page do
    # (QA: refused with the words "some settings may differ")
    out.unlink()
    assert main(["export", str(SEED), "--url", "?v=99&tab=gaps", "-o", str(out), "--no-cache"]) == 0
    assert capsys.readouterr().err.startswith(
        "tracedash: warning: The link was made by another version of tracedash (v=99); some settings may differ.\n"
        "wrote "
    )
    assert out.stat().st_size > 0


def test_stopping_the_image_export_waits_for_its_browser_only(monkeypatch):
    """stop_image_export waited up to 5 s for every child of the process (in a test worker, Playwright's driver)."""
    import subprocess

    import psutil

    from dashboard.figures.common import empty_figure
    from dashboard.render import export

    other = subprocess.Popen(["sleep", "30"])  # a child the export did not start
    try:
        export.image_bytes(empty_figure("x"), "svg")
        browser = {p.pid for p in export.export_browser()}
        assert browser and other.pid not in browser
        waited = []
        wait = psutil.wait_procs
        monkeypatch.setattr(psutil, "wait_procs", lambda procs, timeout: waited.extend(procs) or wait(procs, timeout))
        export.stop_image_export()
        pids = {p.pid for p in waited}
        assert browser <= pids and other.pid not in pids
        assert other.poll() is None and export.export_browser() == []
    finally:
        other.kill()
        other.wait()


NVTX_SAMPLE = SAMPLES / "nsys2022.4_cpu_llm_server_nvtx.sqlite"


def _export_in_a_process(out, **env):
    """``tracedash export`` of the NVTX sample to ``out`` in a process of its own (kaleido's server is per process),
    with ``env`` added to the environment."""
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "dashboard", "export", str(NVTX_SAMPLE), "-o", str(out), "--no-cache"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "browser, message",
    [
        # no browser at all: refused before kaleido's server starts (it used to wait forever, with a traceback)
        ("/nonexistent/chromium", "image export needs Chromium or Chrome (BROWSER_PATH='/nonexistent/chromium' is not"),
        # a program that is no browser: kaleido's server thread dies starting it; the export notices and says why
        ("/bin/false", "image export's browser stopped before the image was rendered: BrowserFailedError: The browser"),
    ],
)
def test_export_without_a_working_browser_fails_at_once_in_one_line(tmp_path, browser, message):
    out = tmp_path / "v.png"
    before = NVTX_SAMPLE.stat().st_mtime_ns
    proc = _export_in_a_process(out, BROWSER_PATH=browser)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"tracedash: error: {message}"), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not out.exists() and NVTX_SAMPLE.stat().st_mtime_ns == before


def test_export_stops_a_browser_that_never_answers(tmp_path):
    """QA: a browser that starts but never answers (here a script that sleeps) kept `export` waiting forever, and its
    processes outlived the command. Now the export gives up after TRACEDASH_EXPORT_TIMEOUT_S, kills them, says so."""
    import psutil

    browser = tmp_path / "hang.sh"
    browser.write_text("#!/bin/sh\nexec sleep 987.25\n")
    browser.chmod(0o755)
    out = tmp_path / "v.png"
    proc = _export_in_a_process(out, BROWSER_PATH=str(browser), TRACEDASH_EXPORT_TIMEOUT_S="3")
    assert (proc.returncode, proc.stderr) == (
        2,
        "tracedash: error: image export's browser did not answer within 3 s, and was stopped "
        "(TRACEDASH_EXPORT_TIMEOUT_S sets how long to wait)\n",
    )
    assert not out.exists()
    left = [p for p in psutil.process_iter(["cmdline"]) if "987.25" in " ".join(p.info["cmdline"] or [])]
    assert left == []
