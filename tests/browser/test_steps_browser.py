"""A vLLM-annotated trace in the browser: the Gantt has prefill, decode and mixed rows, Per phase the
three phases, the table tab reads "Steps", and a link with a step source reopens with it."""

import pytest
from playwright.sync_api import Page, expect
from waits import figure_js, present, until

from dashboard.app import create_app

pytestmark = pytest.mark.browser


def test_vllm_steps_in_every_phase_view_and_the_link(page: Page, serve, tmp_path, artifacts, console_errors):
    from step_traces import kineto_trace
    from test_step_views import vllm_steps

    kineto_trace(tmp_path / "vllm.json", vllm_steps())
    base = serve(create_app(trace_dirs=[tmp_path]))
    page.goto(base)
    expect(present(page.locator("#steps-from"))).to_have_text("Steps from: vLLM annotations (auto)")
    page.wait_for_function(
        figure_js("gantt", "gd.layout.yaxis.categoryarray.join() === 'capture,mixed,decode,prefill'"), timeout=30000
    )
    legend = page.evaluate(figure_js("gantt", "gd.data.map(t => t.name).join('|')"))
    assert legend == "prefill (1)|decode (2)|mixed (1)|capture (1)"
    head = page.locator("#phase-table thead th").all_inner_texts()
    assert head == ["", "prefill", "decode", "mixed"]
    expect(page.locator("#phase-table tbody tr").first).to_have_text("Steps121")
    expect(page.locator("#phase-table")).to_contain_text("Tokens / s300,00032,000133,750")
    expect(page.locator("#table-tabs")).to_contain_text("Steps")
    page.screenshot(path=str(artifacts / "steps_vllm.png"), full_page=False)

    # a bad rule in the box: a notice, the step source kept
    box = page.locator("#steps-source")
    box.fill("(abc")
    box.press("Enter")
    expect(present(page.locator("#state-notice"))).to_contain_text(
        "“Steps from” takes auto, a preset or a rule: '(abc': not a regular expression"
    )
    expect(page.locator("#steps-from")).to_have_text("Steps from: vLLM annotations (auto)")

    # the preset list writes the box; the link holds it and reopens with it
    page.click("#steps-preset")
    page.get_by_text("TensorRT-LLM", exact=True).click()
    page.wait_for_function(until("window.location.search.includes('steps=trtllm')"), timeout=30000)
    expect(page.locator("#steps-from")).to_have_text("Steps from: TensorRT-LLM annotations")
    box.fill("vllm")
    box.press("Enter")
    page.wait_for_function(until("window.location.search.includes('steps=vllm')"), timeout=30000)
    expect(page.locator("#steps-from")).to_have_text("Steps from: vLLM annotations")
    link = page.url
    other = page.context.new_page()
    other.goto(link)
    expect(present(other.locator("#steps-from"))).to_have_text("Steps from: vLLM annotations")
    assert other.locator("#steps-source").input_value() == "vllm"
    other.wait_for_function(
        figure_js("gantt", "gd.data.map(t => t.name).join('|') === 'prefill (1)|decode (2)|mixed (1)|capture (1)'"),
        timeout=30000,
    )
    assert console_errors == []
