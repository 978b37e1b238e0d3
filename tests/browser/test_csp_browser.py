"""Issue #14, 7: under the Content-Security-Policy the pages still work in Chromium (figures draw, tables fill,
zoom updates) with no CSP violation, and the page cannot be framed by another page."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from waits import present

from dashboard.app import create_app

pytestmark = pytest.mark.browser

DATA = Path(__file__).resolve().parents[1] / "data"
NCCL = DATA / "nsys" / "nsys2026.2_2gpu_nccl_after.sqlite"
KINETO = Path(__file__).resolve().parents[2] / "sample_traces" / "h100_qwen1.5_0.5b_chat.json.gz"

WATCH = """() => { window.__csp = [];
  document.addEventListener('securitypolicyviolation',
    e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || ''))); }"""


@pytest.fixture
def app_dir(tmp_path):
    d = tmp_path / "served"
    d.mkdir()
    (d / "nccl.sqlite").write_bytes(NCCL.read_bytes())
    (d / "qwen.json.gz").write_bytes(KINETO.read_bytes())
    return d


def test_compare_page_works_under_the_csp_without_violations(page: Page, serve, app_dir, console_errors):
    """The compare page under the CSP (the dashboard page is checked after the team-token sign-in below)."""
    base = serve(create_app(trace_dirs=[app_dir]))
    page.add_init_script(f"({WATCH})()")
    resp = page.goto(base + "/compare/")
    csp = resp.headers["content-security-policy"]
    assert "script-src 'self' 'sha256-" in csp and "'unsafe-eval'" not in csp and "frame-ancestors 'none'" in csp
    expect(present(page.locator("#cmp-cards"), 60000)).to_contain_text("Regression gate", timeout=60000)
    page.locator("#cmp-step .main-svg, .js-plotly-plot .main-svg").first.wait_for(state="attached", timeout=60000)
    page.wait_for_timeout(1000)
    assert page.evaluate("() => window.__csp") == []
    assert [e for e in console_errors if "Content Security Policy" in e or "Refused" in e] == []


def test_a_framing_page_gets_nothing(page: Page, serve, app_dir, tmp_path):
    base = serve(create_app(trace_dirs=[app_dir]))
    page.goto(base + "/healthz")  # any page of another origin would do; a data: page frames the dashboard
    page.set_content(f'<iframe id="f" src="{base}/" width="800" height="600"></iframe>')
    page.wait_for_timeout(3000)
    frame = page.frame_locator("#f")
    expect(frame.locator("#overview")).to_have_count(0)


def test_team_token_sign_in_opens_the_linked_view(page: Page, serve, app_dir, console_errors):
    from dashboard.app.security import SecurityConfig

    token = "team-token-0123456789abcdef"
    base = serve(create_app(trace_dirs=[app_dir], security=SecurityConfig(auth_token=token)))
    page.goto(base + "/?tab=gaps")
    page.locator("input[name=token]").wait_for(state="visible")
    page.fill("input[name=token]", "not the token")
    page.click("button[type=submit]")
    expect(page.locator("[role=alert]")).to_have_text("That token is not right.")
    page.fill("input[name=token]", token)
    before = len(console_errors)
    refused = []  # after sign-in nothing the page needs is refused (the sign-in page's own favicon may be, late)
    page.on("response", lambda r: refused.append(r.url) if r.status == 401 and "favicon" not in r.url else None)
    page.add_init_script(f"({WATCH})()")  # the dashboard page after sign-in: under the CSP, no violation
    with page.expect_response(lambda r: r.request.resource_type == "document" and r.status == 200) as doc:
        page.click("button[type=submit]")
    expect(present(page.locator("#overview"), 60000)).to_contain_text("GPU", timeout=60000)
    assert "tab=gaps" in page.url
    csp = doc.value.headers.get("content-security-policy", "")
    assert "script-src 'self' 'sha256-" in csp and "'unsafe-eval'" not in csp and "frame-ancestors 'none'" in csp
    for graph in ("#timeline", "#gantt"):  # Plotly drew its SVG
        page.locator(f"{graph} .main-svg").first.wait_for(state="attached", timeout=60000)
    page.wait_for_function(
        "() => document.querySelectorAll('#timeline .cartesianlayer path').length > 50", timeout=60000
    )  # lanes drawn
    page.locator("#gap-table .ag-row").first.wait_for(state="attached", timeout=60000)  # rows filled
    page.wait_for_timeout(1000)
    assert page.evaluate("() => window.__csp") == []
    cookie = next(c for c in page.context.cookies() if c["name"] == "tracedash_session")
    assert (
        cookie["httpOnly"]
        and cookie["sameSite"] == "Strict"
        and cookie["expires"] == -1
        and token not in cookie["value"]
    )
    assert refused == []
    assert [e for e in console_errors[before:] if "Content Security Policy" in e] == []
