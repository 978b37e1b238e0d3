"""Compare two runs: delta frames, pairing by dispatch type, sort order, JSON, figures, CLI, page."""

import json
import math

import pandas as pd
import pytest

from dashboard.analysis.compare import SCHEMA, compare_runs, comparison_to_dict, name_delta
from dashboard.app.compare_callbacks import choose_pair, pair_query, parse_pair
from dashboard.cli import main
from dashboard.data.trace import load_trace
from dashboard.render.compare import compare_view, comparison_text

from compare_fixtures import write_pair
from paths import SEED, nsys_trace

BEFORE = nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")
AFTER = nsys_trace("nsys2026.2_2gpu_nccl_after.sqlite")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return write_pair(tmp_path_factory.mktemp("pair"))


@pytest.fixture(scope="module")
def cmp(pair):
    a, b = pair
    return compare_runs(load_trace(a), load_trace(b))


@pytest.fixture(scope="module")
def shared():
    return compare_runs(load_trace(BEFORE), load_trace(AFTER))


def rows(frame, cols):
    return [
        tuple(None if (isinstance(v, float) and math.isnan(v)) else v for v in r)
        for r in frame[cols].itertuples(index=False, name=None)
    ]


def test_dispatches_paired_by_phase_and_token_count(cmp):
    assert cmp.threshold == pytest.approx(math.sqrt(5 * 512))  # one split for both runs: tokens 1, 3, 5 | 512
    t = cmp.dispatch_types
    assert rows(
        t, ["phase", "tokens", "a_count", "b_count", "a_total_ns", "b_total_ns", "delta_mean_pct", "paired"]
    ) == [
        ("prefill", 512, 1, 1, 1000, 900, -10.0, True),
        ("decode", 1, 2, 1, 400, 200, 0.0, True),
        ("decode", 3, 1, 1, 200, 300, 50.0, True),
        ("decode", 5, 0, 1, 0, 300, None, False),  # only the candidate has 5-token steps
    ]


def test_phase_deltas_raw_and_matched_to_the_baseline_mix(cmp):
    p = cmp.phases.set_index("phase")
    assert p.loc["decode", ["a_dispatches", "b_dispatches", "a_total_ns", "b_total_ns"]].tolist() == [3, 3, 600, 800]
    assert p.loc["decode", "delta_mean_pct"] == pytest.approx(100 * (800 / 3 - 200) / 200)
    # matched: A's mix (2 x 1-token, 1 x 3-token) at B's per-type means (200, 300) = 700 vs 600
    assert p.loc["decode", ["paired_types", "matched_a_ns", "matched_b_ns"]].tolist() == [2, 600, 700]
    assert p.loc["decode", "matched_delta_pct"] == pytest.approx(100 / 6)
    assert p.loc["prefill", ["matched_a_ns", "matched_b_ns", "matched_delta_pct"]].tolist() == [1000, 900, -10.0]
    assert cmp.gate.metric == "step_time:decode" and (cmp.gate.a_ns, cmp.gate.b_ns) == (600, 700)
    assert cmp.gate.delta_pct == pytest.approx(100 / 6)
    # a phase's total over its 3 dispatches (600 ns), not one step's time: the text says which
    assert cmp.gate.explanation == (
        "decode total step time (the sum over its dispatches) at the baseline's token "
        "mix (2 dispatch types paired by phase and token count), the worst phase"
    )


def test_kernel_deltas_sorted_by_absolute_change_with_one_sided_names(cmp):
    k = cmp.kernels
    # |Δ total| desc, then |Δ count| desc, then name
    assert rows(
        k, ["name", "a_count", "b_count", "a_total_ns", "b_total_ns", "delta_total_ns", "only_in", "category"]
    ) == [
        ("onlyA_kernel", 1, 0, 100, 0, -100, "a", "other"),
        ("flash_fwd_kernel", 1, 1, 600, 500, -100, "", "attention"),
        ("ncclDevKernel_AllReduce", 1, 1, 100, 200, 100, "", "communication"),
        ("onlyB_kernel", 0, 1, 0, 50, 50, "b", "other"),
        ("ampere_sgemm_128x64", 3, 3, 500, 550, 50, "", "GEMM"),
    ]
    gemm = k.set_index("name").loc["ampere_sgemm_128x64"]
    assert (gemm["a_mean_ns"], gemm["b_mean_ns"]) == pytest.approx((500 / 3, 550 / 3))
    only_b = k.set_index("name").loc["onlyB_kernel"]
    assert math.isnan(only_b["delta_total_pct"]) and math.isnan(only_b["delta_mean_ns"])
    # The grid shows no mean for the side without a call ("—"), never a 0.00 µs kernel.
    from dashboard.render.compare import delta_rows

    recs = {r["name"]: r for r in delta_rows(k)}
    assert (recs["onlyB_kernel"]["a_mean_ns"], recs["onlyB_kernel"]["b_mean_ns"]) == (None, 50.0)
    assert (recs["onlyA_kernel"]["a_mean_ns"], recs["onlyA_kernel"]["b_mean_ns"]) == (100.0, None)
    assert recs["ampere_sgemm_128x64"]["a_mean_ns"] == pytest.approx(500 / 3)


def test_category_nvtx_and_api_deltas(cmp):
    assert rows(cmp.categories, ["name", "a_total_ns", "b_total_ns", "delta_total_ns"]) == [
        ("attention", 600, 500, -100),
        ("communication", 100, 200, 100),
        ("GEMM", 500, 550, 50),
        ("other", 100, 50, -50),
    ]
    # per-call fields stripped: "aten::mm, seq = 1, op_id = 5" and "aten::mm, seq = 9, ..." are one name
    assert rows(cmp.nvtx, ["name", "a_count", "b_count", "a_total_ns", "b_total_ns", "only_in"]) == [
        ("aten::mm", 2, 1, 200, 150, ""),
        ("only_b_range", 0, 1, 0, 10, "b"),
    ]
    assert rows(cmp.api, ["name", "a_count", "b_count", "a_total_ns", "b_total_ns", "delta_mean_pct", "only_in"]) == [
        ("cudaLaunchKernel", 2, 1, 20, 30, 200.0, ""),
        ("cudaMemcpyAsync", 0, 1, 0, 5, None, "b"),
    ]


def test_overview_deltas(cmp):
    o = cmp.overview.set_index("metric")
    assert o.loc["gpu_activity_span_ns", ["a", "b", "delta"]].tolist() == [1600, 1700, 100]
    assert o.loc["gpu_busy_union_ns", ["a", "b", "delta"]].tolist() == [1300, 1300, 0]
    assert o.loc["gpu_idle_within_span_ns", "delta_pct"] == pytest.approx(100 / 3)
    assert cmp.utilisation_pct == pytest.approx((100 * 1300 / 1600, 100 * 1300 / 1700))  # one GPU: mean = any
    assert cmp.any_gpu_utilisation_pct == pytest.approx(cmp.utilisation_pct)


def test_a_run_without_gpu_work_compares_as_na_not_minus_100_percent(tmp_path):
    from dashboard.render.compare import delta_cards

    from factories import write_nsys_sqlite

    gpu = load_trace(write_nsys_sqlite(tmp_path / "g.sqlite", kernels=[{"start": 1000, "end": 1500}]))
    cpu = load_trace(
        write_nsys_sqlite(tmp_path / "c.sqlite", nvtx=[{"start": 0, "end": 9, "eventType": 59, "text": "s"}])
    )
    c = compare_runs(gpu, cpu)
    o = c.overview.set_index("metric")
    assert o.loc["gpu_busy_union_ns", "a"] == 500 and o.loc["gpu_busy_union_ns", "b"] is pd.NA
    assert o.loc["gpu_busy_union_ns", "delta"] is pd.NA and math.isnan(o.loc["gpu_busy_union_ns", "delta_pct"])
    # B did not trace CUDA: its kernel count is unknown too, and the page and `diff` say so once
    assert o.loc["kernel_count", "a"] == 1 and o.loc["kernel_count", "b"] is pd.NA and c.cuda_traced == (True, False)
    from dashboard.render.compare import untraced_note

    assert untraced_note(c).startswith("B (candidate) did not trace CUDA (NVTX only)")
    # ... and its grid cells read "—" (None) and `diff`'s "n/a", not a count of 0 and a total of 0.000 ms (QA)
    kernels = comparison_text(c).split("\nKernels (")[1].splitlines()
    assert kernels[3].split() == ["kernel", "1", "n/a", "500", "ns", "n/a", "-500", "ns", "gone", "n/a", "n/a"]
    row = compare_view(c).kernel_rows[0]
    assert (row["a_count"], row["a_total_ns"], row["b_count"], row["b_total_ns"], row["b_mean_ns"]) == (
        1,
        500,
        None,
        None,
        None,
    )
    api_only = load_trace(
        write_nsys_sqlite(tmp_path / "api.sqlite", runtime=[{"start": 0, "end": 10, "name": "cudaMalloc"}])
    )
    c2 = compare_runs(gpu, api_only)  # CUDA traced, no kernel ran: 0 kernels is a measurement
    assert c2.overview.set_index("metric").loc["kernel_count", ["a", "b", "delta"]].tolist() == [1, 0, -1]
    assert untraced_note(c2) == "" and c2.cuda_traced == (True, True)
    card = next(x for x in delta_cards(c) if x.hint.startswith("gpu_busy_union_ns"))
    assert (card.a, card.b, card.change, card.tone) == ("500 ns", "n/a", "n/a", "same")  # never a green -100 %
    assert card.hint.endswith("B recorded no GPU work (no kernel, CUDA-graph or memcpy/memset rows)")
    assert comparison_to_dict(c)["overview"]["gpu_busy_union_ns"] == {
        "a": 500,
        "b": None,
        "delta": None,
        "delta_pct": None,
    }


def test_name_delta_of_empty_frames():
    import pandas as pd

    empty = pd.DataFrame({"name": [], "count": [], "total_ns": []})
    out = name_delta(empty, empty)
    assert out.empty and list(out.columns)[:3] == ["name", "a_count", "b_count"]


def test_shared_pair_shows_nccl_and_attention_changes(shared):
    k = shared.kernels.set_index("name")
    assert shared.kernels["name"].head(2).tolist() == ["flash_fwd_kernel", "ncclDevKernel_SendRecv"]
    assert k.loc["flash_fwd_kernel", ["a_count", "b_count", "a_total_ns", "b_total_ns", "delta_total_ns"]].tolist() == [
        68,
        60,
        272317378,
        240755667,
        -31561711,
    ]
    assert k.loc["ncclDevKernel_SendRecv", ["a_count", "b_count", "a_total_ns", "b_total_ns"]].tolist() == [
        66,
        62,
        25401752,
        33742101,
    ]
    assert k.loc["ncclDevKernel_SendRecv", "delta_mean_pct"] == pytest.approx(
        100 * (33742101 / 62 - 25401752 / 66) / (25401752 / 66)
    )  # +41.4 % per call
    c = shared.categories.set_index("name")
    assert c.loc["communication", "delta_total_ns"] == 33742101 - 25401752
    assert c.loc["attention", "delta_total_ns"] == -31561711
    assert shared.phases.empty and shared.dispatch_types.empty  # no dispatch marks in this pair
    # gate without dispatches: kernel time at the baseline's kernel counts (11 names on both sides)
    assert (shared.gate.metric, shared.gate.a_ns, shared.gate.b_ns) == ("kernel_time", 535200650, 547458270)
    o = shared.overview.set_index("metric")
    assert o.loc["gpu_busy_union_ns", ["a", "b"]].tolist() == [285205624, 266434672]


def test_same_summary_json_twice_is_all_zero():
    s = load_trace(SEED)
    c = compare_runs(s, s)
    assert (c.kernels["delta_total_ns"] == 0).all() and (c.api["delta_total_ns"] == 0).all()
    assert c.phases["phase"].tolist() == ["prefill", "decode"] and (c.phases["matched_delta_pct"] == 0).all()
    assert c.gate.metric == "step_time:prefill" and c.gate.delta_pct == 0.0
    assert c.a_file == c.b_file == SEED.name  # the file's name, not the "file" field inside it


def test_json_is_stable_and_integer_ns(cmp):
    d = comparison_to_dict(cmp, top=2)
    assert list(d) == [
        "schema",
        "baseline",
        "candidate",
        "gate",
        "overview",
        "utilisation_pct",
        "any_gpu_utilisation_pct",
        "threshold",
        "phases",
        "dispatch_types",
        "kernels",
        "categories",
        "nvtx",
        "api",
    ]
    assert d["schema"] == SCHEMA == "tracedash.diff/1"
    assert d["gate"] == {
        "metric": "step_time:decode",
        "a_ns": 600,
        "b_ns": 700,
        "delta_pct": 16.6667,
        "explanation": d["gate"]["explanation"],
    }
    assert d["overview"]["gpu_activity_span_ns"] == {"a": 1600, "b": 1700, "delta": 100, "delta_pct": 6.25}
    assert [k["name"] for k in d["kernels"]] == ["onlyA_kernel", "flash_fwd_kernel"]  # --top 2
    gemm = comparison_to_dict(cmp)["kernels"][4]
    assert gemm["a_mean_ns"] == 167 and isinstance(gemm["a_mean_ns"], int)  # 500/3 rounded to whole ns
    assert d["dispatch_types"][3] == {
        "phase": "decode",
        "tokens": 5,
        "a_count": 0,
        "b_count": 1,
        "a_total_ns": 0,
        "b_total_ns": 300,
        "a_mean_ns": None,
        "b_mean_ns": 300,
        "a_p50_ns": None,
        "b_p50_ns": 300,
        "delta_mean_ns": None,
        "delta_mean_pct": None,
        "paired": False,
    }
    assert json.dumps(d) == json.dumps(comparison_to_dict(cmp, top=2))


def test_text_report_and_view(cmp):
    text = comparison_text(cmp, top=3)
    assert "Regression gate [step_time:decode]: 600 ns -> 700 ns (+16.67 %; positive = B slower)" in text
    assert "Kernels (by |change of total|, top 3 of 5)" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("onlyA_kernel"))
    assert line.split() == ["onlyA_kernel", "1", "0", "100", "ns", "0", "ns", "-100", "ns", "gone", "n/a", "n/a"]
    v = compare_view(cmp, a_label="A", b_label="B")
    assert [c.label for c in v.cards][:3] == ["Regression gate", "GPU activity span", "GPU busy (union)"]
    assert v.cards[0].tone == "worse" and v.cards[1].change == "+100 ns (+6.25 %)"
    assert [t.name for t in v.step_figure.data] == ["A", "B"]
    assert list(v.step_figure.data[1].x) == ["prefill", "decode", "decode", "decode"]
    assert list(v.step_figure.data[1].y) == pytest.approx([0.9, 0.2, 0.3, 0.3])  # µs: the longest step is 1 µs
    assert v.step_figure.layout.yaxis.title.text == "step time (µs, log)"
    bars = v.kernel_figure.data[0]
    assert list(v.kernel_figure.layout.yaxis.ticktext) == [
        "ampere_sgemm_128x64",
        "onlyB_kernel",
        "ncclDevKernel_AllReduce",
        "flash_fwd_kernel",
        "onlyA_kernel",
    ]  # largest change on top (plotly draws bottom-up)
    assert list(bars.marker.color) == ["#e03131", "#e03131", "#e03131", "#2f9e44", "#2f9e44"]
    assert list(bars.x) == [50, 50, 100, -100, -100]  # ns: the largest change is 100 ns
    assert [a.text for a in v.kernel_figure.layout.annotations][:5] == [
        "+50 ns  (+10.0 %; per call +10.0 %)",
        "+50 ns  (new)",
        "+100 ns  (+100.0 %; per call +100.0 %)",
        "-100 ns  (-16.7 %; per call -16.7 %)",
        "-100 ns  (-100.0 %)",
    ]
    assert v.kernel_rows[0]["abs_delta_ns"] == 100 and v.kernel_rows[3]["delta_total_pct"] is None


# ---- CLI ------------------------------------------------------------------------------------------------


def test_cli_diff_text(pair, capsys):
    a, b = pair
    assert main(["diff", str(a), str(b), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("A (baseline):  baseline.sqlite\nB (candidate): candidate.sqlite\n")
    assert "Per phase (prefill when tokens >= 50.6; matched = B at A's token mix)" in out


def test_cli_diff_json_parses_and_is_stable(pair, capsys):
    a, b = pair
    assert main(["diff", str(a), str(b), "--json", "--top", "1", "--no-cache"]) == 0
    first = capsys.readouterr().out
    assert main(["diff", str(a), str(b), "--json", "--top", "1", "--no-cache"]) == 0
    assert capsys.readouterr().out == first
    d = json.loads(first)
    assert d["schema"] == "tracedash.diff/1" and [k["name"] for k in d["kernels"]] == ["onlyA_kernel"]


@pytest.mark.parametrize("limit, code", [("10", 3), ("16.6", 3), ("16.7", 0), ("50", 0)])
def test_cli_fail_if_slower(pair, capsys, limit, code):
    a, b = pair
    assert main(["diff", str(a), str(b), "--fail-if-slower", limit, "--no-cache"]) == code
    err = capsys.readouterr().err
    assert ("16.67 % slower" in err and "step_time:decode" in err) if code else err == ""


def test_cli_fail_if_slower_shared_pair(capsys):
    assert main(["diff", str(BEFORE), str(AFTER), "--fail-if-slower", "2", "--no-cache"]) == 3
    assert "2.29 % slower" in capsys.readouterr().err
    assert main(["diff", str(AFTER), str(BEFORE), "--fail-if-slower", "0", "--no-cache"]) == 0  # reverse: faster


def test_cli_diff_bad_input_exit_2(pair, tmp_path, capsys):
    a, _ = pair
    assert main(["diff", str(a), str(tmp_path / "missing.sqlite")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracedash: error: ") and "no such file" in err and "Traceback" not in err
    (tmp_path / "junk.sqlite").write_bytes(b"hello")
    assert main(["diff", str(tmp_path / "junk.sqlite"), str(a)]) == 2
    for bad in (["--top", "0"], ["--fail-if-slower", "abc"], ["--fail-if-slower", "nan"]):
        with pytest.raises(SystemExit) as exc:
            main(["diff", str(a), str(a), *bad])
        assert exc.value.code == 2


# ---- compare page -----------------------------------------------------------------------------------------


def test_pair_query_round_trip():
    assert pair_query("a.sqlite@0123abcd", "b c.sqlite@89abcdef") == "?a=a.sqlite%400123abcd&b=b+c.sqlite%4089abcdef"
    assert parse_pair(pair_query("a.sqlite@0123abcd", "b c.sqlite@89abcdef")) == (
        "a.sqlite@0123abcd",
        "b c.sqlite@89abcdef",
    )
    assert parse_pair("") == (None, None) and parse_pair("?a=x") == ("x", None)


def test_choose_pair_defaults_and_unknown_ids():
    served = ["x@1", "y@2", "z@3"]
    explain = lambda t: f"'{t}' is not served here."  # noqa: E731
    picked = (
        "No candidate B in the link: comparing with {}, the served trace closest to A by kind and name. "
        "Pick the candidate above."
    )
    assert choose_pair(served, None, None, explain) == ("x@1", "y@2", [picked.format("y")])
    assert choose_pair(served, "z@3", None, explain) == ("z@3", "x@1", [picked.format("x")])  # ties: after A, wrapping
    assert choose_pair(served, "nope@0", "y@2", explain) == ("x@1", "y@2", ["Baseline: 'nope@0' is not served here."])
    assert choose_pair(served, "x@1", "z@3", explain) == ("x@1", "z@3", [])  # B chosen: no notice
    assert choose_pair(served, "x@1", "gone@9", explain)[2] == [  # a B not served: replaced, and said so
        "Candidate: 'gone@9' is not served here.",
        "Comparing instead with y, the served trace closest to A by kind and name. Pick the candidate above.",
    ]
    assert choose_pair(["only@1"], None, None, explain) == ("only@1", "only@1", [])
    assert choose_pair([], "a", "b", explain)[:2] == (None, None)


def test_the_default_candidate_is_the_closest_trace_by_kind_and_name():
    """Compare… from the 2-GPU NCCL trace must not pick the seed summary because it is listed next."""
    from dashboard.app.compare_callbacks import closest_candidate

    served = [
        "000_seed_summary.json@1",
        "h100_qwen.json.gz@2",
        "nsys2022.4_cpu_llm_server_nvtx.sqlite@3",
        "nsys2026.2_2gpu_nccl_after.sqlite@4",
        "nsys2026.2_2gpu_nccl_before.sqlite@5",
        "zz_summary.json@6",
    ]
    assert closest_candidate(served, "nsys2026.2_2gpu_nccl_before.sqlite@5") == "nsys2026.2_2gpu_nccl_after.sqlite@4"
    assert closest_candidate(served, "nsys2022.4_cpu_llm_server_nvtx.sqlite@3") == "nsys2026.2_2gpu_nccl_after.sqlite@4"
    assert closest_candidate(served, "000_seed_summary.json@1") == "zz_summary.json@6"  # same kind before name
    assert closest_candidate(served, "h100_qwen.json.gz@2") == "nsys2022.4_cpu_llm_server_nvtx.sqlite@3"  # none alike


def test_compare_page_is_a_page_of_the_same_app(pair):
    from test_app import page_json

    from dashboard.app import create_app

    app = create_app(list(pair))
    client = app.server.test_client()
    assert client.get("/compare/").status_code == 200
    page = page_json(app, "", "/compare/")
    assert "baseline.sqlite@" in page and "cmp-kernel-grid" in page and "cmp-step-figure" in page
    assert '"compare-link"' in page_json(app)
    # one Dash app: the compare callbacks are on the main app's dependency list, none under /compare/
    deps = client.get("/_dash-dependencies").get_json()
    assert any("cmp-kernel-grid" in d["output"] for d in deps)


def test_cli_threshold_is_shared_by_both_runs(pair, capsys):
    a, b = pair
    assert main(["diff", str(a), str(b), "--json", "--threshold", "2", "--fail-if-slower", "0", "--no-cache"]) == 0
    d = json.loads(capsys.readouterr().out)
    # tokens >= 2 are prefill: prefill pairs 3 (200 -> 300) and 512 (1000 -> 900), decode pairs 1 (2 x 200 -> 200)
    assert d["threshold"] == 2.0
    assert [(p["phase"], p["paired_types"], p["matched_a_ns"], p["matched_b_ns"]) for p in d["phases"]] == [
        ("prefill", 2, 1200, 1200),
        ("decode", 1, 400, 400),
    ]
    assert d["gate"]["metric"] == "step_time:prefill" and d["gate"]["delta_pct"] == 0.0
    for bad in ("0", "-3", "many"):
        with pytest.raises(SystemExit) as exc:
            main(["diff", str(a), str(b), "--threshold", bad])
        assert exc.value.code == 2


def test_cli_gate_that_cannot_be_measured_warns_and_passes(tmp_path, capsys):
    from factories import write_nsys_sqlite

    a = write_nsys_sqlite(tmp_path / "a.sqlite", kernels=[{"start": 0, "end": 100, "shortName": "only_in_a"}])
    b = write_nsys_sqlite(tmp_path / "b.sqlite", kernels=[{"start": 0, "end": 900, "shortName": "only_in_b"}])
    assert main(["diff", str(a), str(b), "--fail-if-slower", "1", "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert "warning: the gate (kernel_time) cannot be measured" in captured.err
    assert "Regression gate [kernel_time]: n/a -> n/a (n/a; positive = B slower)" in captured.out


def test_delta_bars_show_names_literally():
    import pandas as pd

    from dashboard.figures.compare import build_delta_bars

    name = '<img src=x onerror="alert(1)">' + "k" * 60
    d = pd.DataFrame(
        {
            "name": [name],
            "a_count": [1],
            "b_count": [2],
            "a_total_ns": [10],
            "b_total_ns": [30],
            "delta_total_ns": [20],
            "delta_total_pct": [200.0],
            "a_mean_ns": [10.0],
            "b_mean_ns": [15.0],
            "delta_mean_pct": [50.0],
        }
    )
    fig = build_delta_bars(d)
    # elided to 48 characters first, then escaped (no split entity); quotes stay (Plotly shows &quot; verbatim)
    assert list(fig.layout.yaxis.ticktext) == ['&lt;img src=x onerror="alert(1)"&gt;' + "k" * 17 + "…"]
    assert fig.data[0].customdata[0][0] == '&lt;img src=x onerror="alert(1)"&gt;' + "k" * 60
    assert fig.layout.annotations[0].text == "+20 ns  (+200.0 %; per call +50.0 %)"


def test_compare_page_findings_are_the_diffs(capsys):
    """The compare page's Findings tab lists what `tracedash diff --json` lists, row for row."""
    from dashboard.app.compare_callbacks import compare_findings
    from dashboard.data.trace import load_trace

    a, b = nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"), nsys_trace("nsys2026.2_2gpu_nccl_after.sqlite")
    rows = compare_findings(load_trace(a), load_trace(b), "CG_DISPATCH")
    assert main(["diff", "--json", "--no-cache", str(a), str(b)]) in (0, 3)
    assert rows == json.loads(capsys.readouterr().out)["findings"]
    by_rule = {r["rule"]: r for r in rows}
    assert by_rule["exposed-comm"]["change"] == "changed" and by_rule["exposed-comm"]["delta_ns"] == 8_340_349


def test_gate_gives_no_verdict_when_shared_kernels_hold_little_of_either_run(tmp_path, capsys):
    """Two runs that share a few kernel names but not their work: the kernel-time gate read -78 % (B
    "faster") for the 2-GPU NCCL sample against the 108k sample. Under 50 % of a run's kernel time in
    shared names, the gate is n/a, says why, and never fails; at 50 % or more it measures."""
    from dashboard.analysis.compare import regression_gate

    from factories import write_nsys_sqlite

    a = write_nsys_sqlite(
        tmp_path / "a.sqlite",
        kernels=[{"start": 0, "end": 100, "shortName": "shared"}, {"start": 200, "end": 300, "shortName": "only_a"}],
    )
    b = write_nsys_sqlite(
        tmp_path / "b.sqlite",
        kernels=[{"start": 0, "end": 150, "shortName": "shared"}, {"start": 200, "end": 1200, "shortName": "only_b"}],
    )
    assert main(["diff", str(a), str(b), "--fail-if-slower", "1", "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: the gate (kernel_time) cannot be measured: the 1 kernel names on both sides hold 50.0 % of the "
        "baseline's and 13.0 % of the candidate's kernel time (under 50 %): the runs do not run the same work"
    ) in err
    kernels = pd.DataFrame(
        {
            "a_count": [1, 1],
            "b_count": [1, 1],
            "a_total_ns": [100, 100],
            "b_total_ns": [150, 100],
            "b_mean_ns": [150.0, 100.0],
        }
    )
    gate = regression_gate(pd.DataFrame({"paired_types": []}), kernels)
    assert (gate.a_ns, gate.b_ns, gate.delta_pct) == (200, 250, 25.0)
    gate = regression_gate(
        pd.DataFrame({"paired_types": []}),
        pd.concat(
            [
                kernels,
                pd.DataFrame(
                    {
                        "a_count": [1],
                        "b_count": [0],
                        "a_total_ns": [201],
                        "b_total_ns": [0],
                        "b_mean_ns": [float("nan")],
                    }
                ),
            ]
        ),
    )
    assert math.isnan(gate.delta_pct) and gate.explanation.startswith("not measured: the 2 kernel names")


def test_changes_of_a_hundred_percent_and_more_read_in_whole_percent():
    from dashboard.render.compare import _pct_text

    # QA: the gate card said "+6866.92 %" where the page's tables say "+6,867 %"
    assert [_pct_text(p) for p in (6866.92, -100.0, 99.994, 12.345, float("nan"), None)] == [
        "+6,867 %",
        "-100 %",
        "+99.99 %",
        "+12.35 %",
        "n/a",
        "n/a",
    ]
