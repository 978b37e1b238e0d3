"""Every phase view reads the steps (render_steps): vLLM, SGLang and TensorRT-LLM traces built in code
give the Gantt, Per phase, the phase figure, the Steps table, summarize's steps section, export and
report with exact values; the seed preset's views are today's; the link's ``steps`` key round-trips."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from step_traces import Step, kineto_trace, nsys_trace

from dashboard.app.views import BY_NAME as VIEWS
from dashboard.data.trace import load_trace
from dashboard.render.steps import process_options, step_spec, step_view
from dashboard.state import ViewState, apply_control, from_query, to_query

TID = "t.json@0123abcd"


def vllm_steps(pid: int = 100, shift_us: int = 0) -> list[Step]:
    """A capture, a prefill, two decodes and a mixed step in vLLM's exact names (times in µs;
    launches: (correlation id, launch call start, kernel start, kernel end))."""
    c = pid * 10
    s = shift_us
    return [
        Step("capture_8_FULL", 1000 + s, 4000 + s, pid, {}, [(c + 1, 1500 + s, 1600 + s, 1700 + s)]),
        Step(
            "execute_context_2(300)_generation_0(0)",
            5000 + s,
            6000 + s,
            pid,
            {},
            [(c + 2, 5100 + s, 5200 + s, 5500 + s), (c + 3, 5200 + s, 5400 + s, 5600 + s)],
        ),  # union 400 µs
        Step(
            "execute_context_0(0)_generation_8(8)", 6100 + s, 6400 + s, pid, {}, [(c + 4, 6150 + s, 6200 + s, 6300 + s)]
        ),
        Step(
            "execute_context_1(100)_generation_7(7)",
            6500 + s,
            7300 + s,
            pid,
            {},
            [(c + 5, 6600 + s, 6700 + s, 7000 + s)],
        ),
        Step(
            "execute_context_0(0)_generation_8(8)", 7400 + s, 7600 + s, pid, {}, [(c + 6, 7450 + s, 7500 + s, 7550 + s)]
        ),
    ]


def sglang_steps() -> list[Step]:
    return [
        Step("step[EXTEND bs=3 toks=900]", 1000, 3000, 100, {}, [(1, 1100, 1200, 2200)]),
        Step("step[DECODE bs=16]", 3100, 3400, 100, {}, [(2, 3150, 3200, 3350)]),
        Step("step[DECODE bs=16]", 3500, 3700, 100, {}, [(3, 3550, 3600, 3650)]),
        Step("step[MIXED bs=5 toks=260]", 3800, 4600, 100, {}, [(4, 3850, 3900, 4500)]),
        Step("step[IDLE bs=0]", 4700, 4800, 100, {}, [(5, 4710, 4720, 4730)]),
    ]


def trtllm_steps() -> list[Step]:
    return [
        Step(
            "[Executor] _forward_step 1: 2 ctx reqs, 0 gen reqs, 512 ctx tokens",
            1000,
            2500,
            100,
            {},
            [(1, 1100, 1200, 2400)],
        ),
        Step("[Executor] _forward_step 2: 0 ctx reqs, 2 gen reqs", 2600, 2800, 100, {}, [(2, 2650, 2700, 2780)]),
        Step(
            "[Executor] _forward_step 3: 1 ctx reqs, 2 gen reqs, 128 ctx tokens",
            2900,
            3600,
            100,
            {},
            [(3, 2950, 3000, 3500)],
        ),
    ]


def render(trace, view, **state):
    return VIEWS[view].render(trace, ViewState(trace=TID, **state))


def table(values) -> dict[str, list[str]]:
    """The Per phase table's cells: header and one list per metric row."""
    head, body = values["table"]
    out = {"": [th.children for th in head.children.children]}
    for tr in body.children:
        cells = [td.children for td in tr.children]
        out[cells[0]] = cells[1:]
    return out


@pytest.fixture
def vllm(tmp_path):
    return load_trace(kineto_trace(tmp_path / "v.json", vllm_steps()))


def test_vllm_per_phase_exact(vllm):
    got = table(render(vllm, "phases"))
    assert got == {
        "": ["", "prefill", "decode", "mixed"],
        "Steps": ["1", "2", "1"],
        "Requests": ["2", "16", "8"],
        "Tokens": ["300", "16", "107"],
        "Total time": ["1.000 ms", "500.00 µs", "800.00 µs"],
        "Mean step": ["1.000 ms", "250.00 µs", "800.00 µs"],
        "p50 step": ["1.000 ms", "250.00 µs", "800.00 µs"],
        "p90 step": ["1.000 ms", "290.00 µs", "800.00 µs"],
        "p99 step": ["1.000 ms", "299.00 µs", "800.00 µs"],
        "Tokens / s": ["300,000", "32,000", "133,750"],  # 300 / 1 ms, 16 / 500 µs, 107 / 800 µs
        "Kernels (by correlation)": ["2", "2", "1"],
        "GPU time attributed (by correlation)": ["400.00 µs", "150.00 µs", "300.00 µs"],
    }
    src = render(vllm, "step_source")
    assert src["text"] == "Steps from: vLLM annotations (auto)"
    assert src["steps_note"] == {} and src["dispatch_note"] == {"display": "none"} and src["options"] == []


def test_vllm_gantt_bars_and_hover(vllm):
    fig = render(vllm, "gantt")["figure"]
    bars = {t.name: t for t in fig.data}
    assert list(bars) == ["prefill (1)", "decode (2)", "mixed (1)", "capture (1)"]
    assert list(fig.layout.yaxis.categoryarray) == ["capture", "mixed", "decode", "prefill"]
    d = bars["decode (2)"]
    assert list(d.base) == [0.0061, 0.0074] and [round(x * 1e9) for x in d.x] == [300_000, 200_000]
    assert d.hovertext[0] == (
        "<b>decode</b> #2<br>execute_context_0(0)_generation_8(8)<br>context 0 req · 0 tok · "
        "generation 8 req · 8 tok<br>tokens 8 · batch 8 · graph mode ?<br>start 0.006100 s · "
        "duration 300.00 µs<br>kernels 1 · GPU time 100.00 µs (by correlation)"
    )
    cap = bars["capture (1)"].hovertext[0]
    assert "batch 8 · graph mode FULL" in cap and "context ? req · ? tok" in cap
    assert fig.layout.title.text.startswith("Steps · v.json · from vLLM annotations (auto)")


def test_a_zoomed_step_gantt_draws_the_steps_near_its_window_and_keeps_every_row(vllm):
    """Zoomed to [6100, 6300) µs, widened to [5900, 6500): the prefill [5000, 6000) and decode [6100, 6400) steps
    are drawn; mixed and capture keep their rows and legend entries, with no bar (the figure keeps its height)."""
    whole = render(vllm, "gantt")["figure"]
    fig = render(vllm, "gantt", t0_ns=6_100_000, t1_ns=6_300_000)["figure"]
    drawn = {t.name: [b for b in t.base if not math.isnan(b)] for t in fig.data}
    assert drawn == {
        "prefill (0 in view of 1)": [0.005],
        "decode (1 in view of 2)": [0.0061],
        "mixed (0 in view of 1)": [],
        "capture (0 in view of 1)": [],
    }
    assert list(fig.layout.yaxis.categoryarray) == list(whole.layout.yaxis.categoryarray)
    assert {y for t in fig.data for y in t.y} == set(fig.layout.yaxis.categoryarray)  # each row holds a bar
    assert fig.layout.height == whole.layout.height


def test_the_step_gantt_legend_counts_the_whole_trace_when_only_the_longest_steps_are_drawn(vllm, monkeypatch):
    """Over its budget the step Gantt draws the longest steps; its legend still counts every step (it counted the
    drawn ones: "prefill (1,021)" of 1,367, and "1,367 in view of 1,021" zoomed out)."""
    import dashboard.render.steps as rs

    monkeypatch.setattr(rs, "GANTT_STEP_BUDGET", 2)
    fig = render(vllm, "gantt")["figure"]
    assert [t.name for t in fig.data] == ["prefill (1)", "decode (2)", "mixed (1)", "capture (1)"]
    assert sum(1 for t in fig.data for b in t.base if not math.isnan(b)) == 2  # the 2 longest drawn
    wide = render(vllm, "gantt", t0_ns=0, t1_ns=20_000_000)["figure"]
    assert [t.name for t in wide.data] == [
        "prefill (1 in view of 1)",
        "decode (2 in view of 2)",
        "mixed (1 in view of 1)",
        "capture (1 in view of 1)",
    ]


def test_vllm_steps_table_rows(vllm):
    rows = render(vllm, "dispatches")["rows"]
    assert [r["phase"] for r in rows] == ["capture", "prefill", "decode", "mixed", "decode"]
    assert rows[3] == {
        "index": 3,
        "phase": "mixed",
        "tokens": 107,
        "mode": None,
        "padded": None,
        "start_ns": 6_500_000,
        "end_ns": 7_300_000,
        "duration_ns": 800_000,
        "end_estimated": False,
        "row_id": "3",
        "pid": 100,
        "name": "execute_context_1(100)_generation_7(7)",
        "context_requests": 1,
        "context_tokens": 100,
        "generation_requests": 7,
        "generation_tokens": 7,
        "batch_size": 8,
        "kernels": 1,
        "gpu_busy_ns": 300_000,
        "launch_lead_ns": 200_000,
        "ns_per_token": 800_000 / 107,
    }  # its kernel starts at 6.7 ms
    assert rows[0]["mode"] == "FULL" and rows[0]["tokens"] is None and rows[0]["gpu_busy_ns"] == 100_000
    assert [r["launch_lead_ns"] for r in rows] == [600_000, 200_000, 100_000, 200_000, 100_000]


def test_vllm_phase_figure(vllm):
    out = render(vllm, "phase_figure")
    boxes = [t for t in out["figure"].data if t.type == "box"]
    assert [b.name for b in boxes] == ["prefill", "decode", "mixed"]  # the capture is not a serving step
    assert [list(b.y) for b in boxes] == [[1.0], [0.3, 0.2], [0.8]]
    assert out["note"] == "" and out["box_style"] == {}


def test_sglang_nsys_views(tmp_path):
    t = load_trace(nsys_trace(tmp_path / "s.sqlite", sglang_steps()))
    got = table(render(t, "phases"))
    assert got[""] == ["", "prefill", "decode", "mixed", "idle"]
    assert got["Steps"] == ["1", "2", "1", "1"] and got["Requests"] == ["3", "32", "n/a", "0"]
    assert got["Tokens"] == ["900", "n/a", "260", "0"]  # SGLang's DECODE name gives no token count
    assert got["Tokens / s"] == ["450,000", "n/a", "325,000", "0"]  # idle: 0 tokens in 100 µs
    assert got["GPU time attributed (by correlation)"] == ["1.000 ms", "200.00 µs", "600.00 µs", "10.00 µs"]
    assert render(t, "step_source")["text"] == "Steps from: SGLang annotations (auto)"
    names = [b.name for b in render(t, "gantt")["figure"].data]
    assert names == ["prefill (1)", "decode (2)", "mixed (1)", "idle (1)"]


def test_trtllm_views(tmp_path):
    t = load_trace(kineto_trace(tmp_path / "r.json", trtllm_steps()))
    got = table(render(t, "phases"))
    assert got[""] == ["", "prefill", "decode", "mixed"]
    assert got["Requests"] == ["2", "2", "3"] and got["Tokens"] == ["512", "n/a", "n/a"]
    assert got["Total time"] == ["1.500 ms", "200.00 µs", "700.00 µs"]
    rows = render(t, "dispatches")["rows"]
    assert [
        (r["context_requests"], r["context_tokens"], r["generation_requests"], r["generation_tokens"]) for r in rows
    ] == [(2, 512, 0, 0), (0, 0, 2, None), (1, 128, 2, None)]
    assert render(t, "step_source")["text"] == "Steps from: TensorRT-LLM annotations (auto)"


def test_several_processes_grouped_in_the_gantt_and_never_merged(tmp_path):
    t = load_trace(kineto_trace(tmp_path / "tp.json", vllm_steps(100) + vllm_steps(200, shift_us=20)))
    fig = render(t, "gantt")["figure"]
    assert list(fig.layout.yaxis.categoryarray) == [
        "pid 200 · capture",
        "pid 200 · mixed",
        "pid 200 · decode",
        "pid 200 · prefill",
        "pid 100 · capture",
        "pid 100 · mixed",
        "pid 100 · decode",
        "pid 100 · prefill",
    ]
    assert [b.name for b in fig.data] == ["prefill (2)", "decode (4)", "mixed (2)", "capture (2)"]
    first = table(render(t, "phases"))
    assert first["Steps"] == ["1", "2", "1"]  # pid 100 only, not 2 / 4 / 2
    assert render(t, "phases")["scope"] == (
        "Stats for: whole trace · pid 100 (2 processes with steps: statistics of one, never merged)"
    )
    sv = step_view(t, ViewState(trace=TID, step_pid=200))
    assert sv.pid == 200 and sv.steps["start_ns"].tolist()[:2] == [1_020_000, 5_020_000]
    assert process_options(sv) == [
        {"label": "pid 100 (5 steps)", "value": 100},
        {"label": "pid 200 (5 steps)", "value": 200},
    ]
    assert render(t, "step_source", step_pid=200)["box"] == {}
    assert {r["pid"] for r in render(t, "dispatches", step_pid=200)["rows"]} == {200}


def test_stats_window_counts_the_steps_wholly_inside(vllm):
    out = render(vllm, "phases", t0_ns=6_050_000, t1_ns=7_500_000, stats="window")
    assert table(out)[""] == ["", "decode", "mixed"] and table(out)["Steps"] == ["1", "1"]
    assert out["scope"] == (
        "Stats for: steps wholly inside the window 0.006050–0.007500 s (1 step cut by its edges left out)"
    )


def test_a_preset_the_trace_does_not_hold_says_so(vllm):
    out = render(vllm, "phases", steps="trtllm")
    assert out["empty"] == ("No TensorRT-LLM annotations in this trace: choose another source in “Steps from”.")
    assert (
        render(vllm, "gantt", steps="trtllm")["figure"]
        .layout.annotations[0]
        .text.startswith("No TensorRT-LLM annotations in this trace")
    )
    assert render(vllm, "step_source", steps="trtllm")["text"] == "Steps from: TensorRT-LLM annotations"


def test_a_user_rule_reads_the_steps(vllm):
    rule = r"^execute_context_(?P<context_requests>\d+)\((?P<context_tokens>\d+)\)_generation_0"
    out = render(vllm, "phases", steps=rule)
    # the rule gives the context side only: the generation side, so the tokens, are unknown (never 0)
    assert table(out)[""] == ["", "prefill"] and table(out)["Tokens"] == ["n/a"] and table(out)["Steps"] == ["1"]
    assert render(vllm, "dispatches", steps=rule)["rows"][0]["context_tokens"] == 300
    assert render(vllm, "step_source", steps=rule)["text"] == f"Steps from: rule /{rule}/"


def test_the_seed_preset_keeps_the_dispatch_views(tmp_path):
    from paths import SEED

    t = load_trace(SEED)
    for state in (ViewState(trace=TID), ViewState(trace=TID, steps="seed")):
        assert step_view(t, state) is None
        assert repr(VIEWS["phases"].render(t, state)) == repr(VIEWS["phases"].render(t, ViewState(trace=TID)))
    assert render(t, "step_source")["text"] == "Steps from: CG_DISPATCH marks (auto)"
    assert render(t, "step_source")["dispatch_note"] == {}


def test_links_with_steps_and_old_links():
    rule = r"^fwd_(?P<tokens>\d+)"
    s = ViewState(trace=TID, steps=rule, step_pid=7)
    q = to_query(s)
    assert q == "step_pid=7&steps=%5Efwd_%28%3FP%3Ctokens%3E%5Cd%2B%29&trace=t.json%400123abcd&v=1"
    assert from_query(q) == s
    assert from_query("steps=VLLM").steps == "vllm" and "steps" not in to_query(ViewState(trace=TID))
    bad = from_query("steps=vlm&trace=" + TID)
    assert bad.steps == "auto" and bad.warnings == (
        "Ignored steps='vlm' in the link: not a preset (auto, seed, vllm, sglang, trtllm, torch) or a usable rule; "
        "using the default.",
    )
    # a link made before steps existed: its prefix and threshold are the seed preset's parameters
    old = from_query("prefix=execute_&threshold=100")
    assert step_spec(old).preset == "seed" and step_spec(old).prefix == "execute_" and step_spec(old).threshold == 100
    assert step_spec(from_query("threshold=100")).preset == "auto"


def test_a_bad_rule_in_the_box_is_a_clear_notice():
    s = ViewState(trace=TID, steps="vllm")
    new, notice = apply_control(s, "steps", "(abc")
    assert new == s and notice.startswith(
        "“Steps from” takes auto, a preset or a rule: '(abc': not a regular "
        "expression (missing ), unterminated subpattern"
    )
    assert notice.endswith("; keeping vllm.")
    assert apply_control(s, "steps", "") == (replace(s, steps="auto"), None)
    assert apply_control(s, "steps", "SGLang") == (replace(s, steps="sglang"), None)


def test_summarize_steps_section(tmp_path, capsys):
    from dashboard.cli import main

    path = kineto_trace(tmp_path / "v.json", vllm_steps())
    assert main(["summarize", str(path), "--no-cache"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "steps" not in plain
    assert main(["summarize", str(path), "--steps", "auto", "--no-cache"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in out.items() if k != "steps"} == plain  # the seed's fields unchanged
    assert out["steps"]["source"] == {"preset": "vllm", "rule": None, "auto": True, "label": "vLLM annotations (auto)"}
    assert out["steps"]["pid"] == 100 and out["steps"]["processes"] == {"100": 5}
    assert out["steps"]["phases"]["decode"] == {
        "steps": 2,
        "requests": 16,
        "tokens": 16,
        "total_s": 0.0005,
        "mean_s": 0.00025,
        "p50_s": 0.00025,
        "p90_s": 0.00029,
        "p99_s": 0.000299,
        "tokens_per_s": 32000.0,
        "kernels": 2,
        "gpu_time_s": 0.00015,
    }
    assert list(out["steps"]["phases"]) == ["prefill", "decode", "mixed"]
    assert main(["summarize", str(path), str(path), "--steps", "auto"]) == 2


def test_report_and_export_with_steps(tmp_path, capsys):
    from dashboard.cli import main

    path = kineto_trace(tmp_path / "v.json", vllm_steps())
    assert main(["report", str(path), "-o", str(tmp_path / "r.html"), "--no-cache"]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "steps from: vLLM annotations (auto)" in html and "<h2>Steps</h2>" in html
    assert "<td>Tokens / s</td><td class=num>300,000</td><td class=num>32,000</td><td class=num>133,750</td>" in html
    assert main(["report", str(path), "-o", str(tmp_path / "r2.html"), "--steps", "trtllm", "--no-cache"]) == 0
    assert "steps from: TensorRT-LLM annotations" in (tmp_path / "r2.html").read_text()
    assert (
        main(["export", str(path), "--figure", "gantt", "-o", str(tmp_path / "g.svg"), "--steps", "vllm", "--no-cache"])
        == 0
    )
    assert "from vLLM annotations" in (tmp_path / "g.svg").read_text()
    with pytest.raises(SystemExit) as exc:  # a usage error, before anything is read
        main(["report", str(path), "-o", str(tmp_path / "r3.html"), "--steps", "nope"])
    assert exc.value.code == 2
    assert "'nope': unknown preset" in capsys.readouterr().err


def test_serving_findings_read_the_steps(vllm, tmp_path, capsys):
    from dashboard.render.findings import findings_for

    found = {f.rule: f for f in findings_for(vllm, steps=step_spec(ViewState()))}
    hb = found["host-bound-steps"]
    # The GPU's idle inside the steps: 600 + 500 + 200 + 100 µs. Without their own GPU work the steps spend
    # (1000-400) + (800-300) + (300-100) + (200-50) µs; the last step's last 50 µs are past the GPU activity span.
    assert hb.cost_ns == 1_400_000
    cols = ["phase", "steps", "host_bound_steps", "step_ns", "gpu_busy_ns", "without_own_gpu_ns", "gpu_idle_ns"]
    assert hb.rows[cols].values.tolist() == [
        ["prefill", 1, 1, 1_000_000, 400_000, 600_000, 600_000],
        ["mixed", 1, 1, 800_000, 300_000, 500_000, 500_000],
        ["decode", 2, 2, 500_000, 150_000, 350_000, 300_000],
    ]
    assert not {f.rule: f for f in findings_for(vllm)}["host-bound-steps"].evaluated  # the marks, as before
    panel = VIEWS["findings"].render(vllm, ViewState(trace=TID))["children"]
    assert "host-bound-steps" in repr(panel) and "1.45 ms" in repr(panel)


def test_diff_is_phase_aligned_on_the_steps(tmp_path, capsys):
    from dashboard.cli import main

    a = kineto_trace(tmp_path / "a.json", vllm_steps())
    b = kineto_trace(tmp_path / "b.json", vllm_steps()[:4])  # the last decode step left out
    assert main(["diff", str(a), str(b), "--steps", "auto", "--json", "--no-cache"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {p["phase"]: (p["a_dispatches"], p["b_dispatches"], p["a_mean_ns"], p["b_mean_ns"]) for p in out["phases"]}
    assert got == {
        "prefill": (1, 1, 1_000_000, 1_000_000),
        "decode": (2, 1, 250_000, 300_000),
        "mixed": (1, 1, 800_000, 800_000),
    }
    assert out["threshold"] is None
    plain = tmp_path / "p.sqlite"
    from factories import write_nsys_sqlite

    write_nsys_sqlite(plain, nvtx=[{"start": 0, "end": 10, "eventType": 59, "text": "other"}])
    assert main(["diff", str(a), str(plain), "--steps", "vllm", "--no-cache"]) == 2
    assert (
        "the candidate p.sqlite has no such steps (steps from: vLLM annotations); both runs need the same step source"
    ) in capsys.readouterr().err


def test_compare_page_aligns_the_steps_of_both_runs(tmp_path):
    from dashboard.app.compare_callbacks import compare_steps
    from dashboard.app.views.compare_link import compare_href

    from factories import write_nsys_sqlite

    a = load_trace(kineto_trace(tmp_path / "a.json", vllm_steps()))
    b = load_trace(kineto_trace(tmp_path / "b.json", vllm_steps()[:4]))
    spec, steps, note = compare_steps(a, b, ViewState())
    assert spec.preset == "auto" and note == ""
    assert [len(x[0]) for x in steps] == [4, 3] and list(steps[1][1]) == ["prefill", "decode", "mixed"]
    plain = load_trace(
        write_nsys_sqlite(tmp_path / "p.sqlite", nvtx=[{"start": 0, "end": 9, "eventType": 59, "text": "other"}])
    )
    assert compare_steps(a, plain, ViewState())[1:] == (
        None,
        "Only A has steps from vLLM annotations (auto); B has "
        "none, so the phases are compared from the dispatch "
        "marks of both runs.",
    )
    assert compare_href(ViewState(trace=TID, steps="sglang")) == "compare/?a=t.json%400123abcd&steps=sglang"


def test_profiler_steps_through_the_findings_and_the_report(tmp_path):
    """Phase ``step`` (ProfilerStep#N) and SGLang's ``idle`` are per-phase rows of the serving findings too."""
    from dashboard.render.export import report_html
    from dashboard.render.findings import findings_for

    steps = [
        Step(
            f"ProfilerStep#{i}",
            1000 + 1000 * i,
            1900 + 1000 * i,
            100,
            {},
            [(i + 1, 1100 + 1000 * i, 1200 + 1000 * i, 1300 + 1000 * i)],
        )
        for i in range(3)
    ]
    t = load_trace(kineto_trace(tmp_path / "p.json", steps))
    hb = {f.rule: f for f in findings_for(t, steps=step_spec(ViewState()))}["host-bound-steps"]
    assert hb.rows[["phase", "steps", "host_bound_steps", "step_ns", "gpu_busy_ns"]].values.tolist() == [
        ["step", 3, 3, 2_700_000, 300_000]
    ]
    assert "steps from: PyTorch profiler steps (ProfilerStep#N) (auto)" in report_html(t, ViewState())
    s = load_trace(nsys_trace(tmp_path / "s.sqlite", sglang_steps()))
    rows = {f.rule: f for f in findings_for(s, steps=step_spec(ViewState()))}["host-bound-steps"].rows
    assert set(rows["phase"]) <= {"prefill", "decode", "mixed", "idle"} and "idle" in set(rows["phase"])
