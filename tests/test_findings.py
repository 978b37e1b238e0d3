"""Serving rules (analysis.findings) on a small export built in code with exact numbers, the seed
summary, the CLI (`tracedash findings`), and the findings diff of two runs.

The fixture (pid 100, thread 101; times in ns), see docs/findings.md for the worked example:

    dispatch  mark    tokens actual/padded  mode  window          GPU 0 kernels (launch call)
    D0        1000    1000 / 1024           FULL  [1000, 11000)   [1200, 9200)  (api [1100, 1200))
    D1        11000   1 / 8                 NONE  [11000, 21000)  [11400, 11500) (api [11100, 11400)),
                                                                  [11800, 11900) (api [11500, 11800));
                                                                  cudaStreamSynchronize [11900, 20000)
                                                                  in NVTX "wait" [11850, 20500) in "step"
    D2        21000   3 / 4                 NONE  [21000, 30000)  [21200, 30000) (api [21100, 21200));
                                                                  cudaMemcpyAsync pageable copy [21300, 21350)
    GPU 1: ncclDevKernel [2000, 6000), gemm [5000, 7000); before D0: cudaMemcpy pageable HtoD [300, 400)
"""

import contextlib
import io
import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from dashboard import units
from dashboard.analysis import findings as fd
from dashboard.cli import main
from dashboard.data.trace import load_trace
from dashboard.render.findings import diff_findings, findings_for, findings_json, link_for
from dashboard.state import from_query

from factories import GLOBAL_PID_1, GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA, SAMPLES, SEED, nsys_trace


def _api(start, end, name, corr):
    return {"start": start, "end": end, "name": name, "correlationId": corr, "globalTid": GLOBAL_TID_1}


def _mark(ts, text):
    return {"start": ts, "end": None, "eventType": 34, "text": text}


def build_fixture(path, padded_decode=8):
    write_nsys_sqlite(
        path,
        kernels=[
            {"start": 1200, "end": 9200, "correlationId": 1, "shortName": "gemm_prefill"},
            {"start": 11400, "end": 11500, "correlationId": 2, "shortName": "rmsnorm"},
            {"start": 11800, "end": 11900, "correlationId": 3, "shortName": "rmsnorm"},
            {"start": 21200, "end": 30000, "correlationId": 4, "shortName": "gemm_decode"},
            {"start": 2000, "end": 6000, "correlationId": 90, "deviceId": 1, "shortName": "ncclDevKernel_AllReduce"},
            {"start": 5000, "end": 7000, "correlationId": 91, "deviceId": 1, "shortName": "gemm_tp"},
        ],
        runtime=[
            _api(200, 500, "cudaMemcpy_v3020", 6),
            _api(1100, 1200, "cudaLaunchKernel_v7000", 1),
            _api(11100, 11400, "cudaLaunchKernel_v7000", 2),
            _api(11500, 11800, "cudaLaunchKernel_v7000", 3),
            _api(11900, 20000, "cudaStreamSynchronize_v3020", 10),
            _api(21100, 21200, "cudaLaunchKernel_v7000", 4),
            _api(21250, 21300, "cudaMemcpyAsync_v3020", 5),
        ],
        nvtx=[
            _mark(1000, "CG_DISPATCH:actual=1000:mode=FULL:padded=1024"),
            _mark(11000, f"CG_DISPATCH:actual=1:mode=NONE:padded={padded_decode}"),
            _mark(21000, "CG_DISPATCH:actual=3:mode=NONE:padded=4"),
            {"start": 11000, "end": 21000, "eventType": 59, "text": "step"},
            {"start": 11850, "end": 20500, "eventType": 59, "text": "wait"},
        ],
    )
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, "
        "srcKind INTEGER, dstKind INTEGER)"
    )
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,0,1,7,?,?,?,1,0,2)",
        [(300, 400, 6, GLOBAL_PID_1, 1 << 20), (21300, 21350, 5, GLOBAL_PID_1, 8)],
    )
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def fixture_path(tmp_path_factory):
    return build_fixture(tmp_path_factory.mktemp("f") / "serving.sqlite")


@pytest.fixture(scope="module")
def found(fixture_path):
    trace = load_trace(fixture_path)
    return {f.rule: f for f in findings_for(trace)}


def rows(f):
    return f.rows.to_dict("records")


def test_ranking_and_severities(fixture_path):
    ranked = findings_for(load_trace(fixture_path))
    # gpu-low-util: GPU 0's window [300, 30000) (the copy at 300 counts for nsys) in 30 chunks of 990 ns;
    # chunks 9-20 (11880 ns at 1.7 %) and chunk 0 (990 ns at 19.2 %) are idle for 12477 ns
    assert [(f.rule, f.cost_ns) for f in ranked] == [
        ("gpu-low-util", 12477),
        ("padding-waste", 11234),
        ("host-bound-steps", 9800),
        ("sync-in-loop", 9300),  # the sync [11900, 20000) on an idle GPU, then until the kernel at 21200
        ("cuda-sync-api", 9300),
        ("exposed-comm", 3000),
        ("decode-no-graphs", 700),
        ("launch-bound", 400),
        ("cuda-sync-memcpy", 100),
        ("pageable-in-loop", 50),
        ("cuda-async-memcpy", 50),
        ("gpu-starv", 0),
        ("cuda-sync-memset", 0),
    ]
    # reference: GPU activity span [1200, 30000) = 28800 ns; 9800 / 28800 = 34 % -> high, 400 -> 1.4 % -> low
    by = {f.rule: f for f in ranked}
    assert (by["host-bound-steps"].severity, by["launch-bound"].severity, by["gpu-starv"].severity) == (
        "high",
        "low",
        "none",
    )


def test_one_row_reads_in_the_singular(found):
    assert found["sync-in-loop"].summary.startswith("1 blocking call in the dispatch loop holds the host 8.1 µs;")
    assert found["cuda-sync-api"].summary.startswith("1 synchronisation call, 8.1 µs in all;")
    assert found["pageable-in-loop"].summary.startswith(
        "1 synchronous or pageable copy inside the dispatch loop takes 50 ns of GPU copy time, most in decode (1 copy);"
    )
    assert found["gpu-low-util"].summary.startswith("2 chunks under 50 % GPU in-use")


def test_host_bound_steps(found):
    f = found["host-bound-steps"]
    assert rows(f) == [
        {
            "phase": "decode",
            "steps": 2,
            "host_bound_steps": 1,
            "step_ns": 10000,
            "gpu_busy_ns": 200,
            "without_own_gpu_ns": 9800,
            "gpu_idle_ns": 9800,
            "cause": "cudaStreamSynchronize in wait",
            "cause_idle_ns": 9100,  # its gap [11900, 21200) inside the step [11000, 21000): never over gpu_idle_ns
        }
    ]
    assert (f.view.tab, f.view.t0_ns, f.view.t1_ns, f.view.mark) == (
        "dispatches",
        10000,
        22000,
        ("dispatch", 11000, 21000),
    )
    state = from_query(link_for(f, "serving.sqlite@0123abcd"))
    assert (state.tab, state.window(), state.mark) == ("dispatches", (10000, 22000), ("dispatch", 11000, 21000))
    assert "1 of 3 steps" in f.summary and "cudaStreamSynchronize in wait" in f.summary


def test_sync_in_loop(found):
    f = found["sync-in-loop"]
    assert rows(f) == [
        {
            "phase": "decode",
            "steps": 2,
            "calls": 1,
            "calls_per_step": 0.5,
            "blocked_ns": 8100,
            "step_ns": 19000,
            "share_pct": 42.63,
            "api_name": "cudaStreamSynchronize_v3020",
            "nvtx_range": "wait",
            "top_blocked_ns": 8100,
            "gpu_idle_ns": 9300,
        }
    ]
    assert f.cost_ns == 9300 and f.summary.endswith(
        "; no GPU work (kernel, CUDA graph or memcpy/memset) ran for 9.3 µs while it blocked, or after it returned "
        "from waiting on the GPU, until the GPU got work again: the time it cost."
    )


def test_blocking_calls_without_gpu_work_cost_their_union_and_nested_ones_hold_a_thread_once(tmp_path):
    """No kernel: the blocked time stands as the cost, but as a union (two threads blocked over [0, 1000) at once and
    a call nested in another on the first thread: 1 µs, not the 2.5 µs of their durations in a 1 µs trace), and the
    lead says what each thread was held (the union of its own calls) beside the durations' sum."""
    path = write_nsys_sqlite(
        tmp_path / "nokernels.sqlite",
        runtime=[
            _api(0, 1000, "cudaStreamSynchronize_v3020", 1),
            _api(200, 700, "cudaStreamSynchronize_v3020", 2),  # nested in the first, same thread
            {**_api(0, 1000, "cudaDeviceSynchronize_v3020", 3), "globalTid": GLOBAL_TID_1 + 1},
        ],
    )
    by = {f.rule: f for f in findings_for(load_trace(path))}
    assert by["sync-in-loop"].cost_ns == by["cuda-sync-api"].cost_ns == 1000
    assert "3 blocking calls hold 2 host threads 2 µs (2.5 µs summed over the calls)" in by["sync-in-loop"].summary
    assert by["sync-in-loop"].summary.endswith(
        "no GPU work was recorded, so what they cost the GPU is unknown: the time they blocked (calls at the same "
        "time counted once) stands as the cost."
    )


def test_blocking_calls_outside_the_gpu_work_are_not_measured_and_a_call_of_no_time_costs_nothing(tmp_path):
    """Syncs before the first kernel and after the last one: not "no GPU time lost", but not measured; a
    zero-length sync as the GPU goes idle waited on nothing (it was charged the whole gap after it)."""
    kernels = [
        {"start": 10_000, "end": 11_000, "correlationId": 1, "shortName": "gemm"},
        {"start": 15_000, "end": 16_000, "correlationId": 2, "shortName": "gemm"},
    ]
    launches = [_api(9_000, 9_100, "cudaLaunchKernel_v7000", 1), _api(9_200, 9_300, "cudaLaunchKernel_v7000", 2)]
    outside = write_nsys_sqlite(
        tmp_path / "outside.sqlite",
        kernels=kernels,
        runtime=[
            *launches,
            _api(1_000, 5_000, "cudaStreamSynchronize_v3020", 10),
            _api(20_000, 30_000, "cudaStreamSynchronize_v3020", 11),
        ],
    )
    by = {f.rule: f for f in findings_for(load_trace(outside))}
    for rule in ("sync-in-loop", "cuda-sync-api"):
        assert by[rule].cost_ns == 0 and by[rule].summary.endswith(
            "; they lie outside the recorded GPU work (its first start to its last end), so what they cost the GPU "
            "is not measured."
        ), by[rule].summary
    instant = write_nsys_sqlite(
        tmp_path / "instant.sqlite",
        kernels=kernels,
        runtime=[*launches, _api(11_000, 11_000, "cudaStreamSynchronize_v3020", 10)],
    )
    by = {f.rule: f for f in findings_for(load_trace(instant))}
    assert by["sync-in-loop"].cost_ns == by["cuda-sync-api"].cost_ns == 0


def test_a_host_bound_steps_cause_counts_only_the_idle_its_row_counts(tmp_path):
    """GPU 0 waits [1100, 5000) on a sync while GPU 1 runs [1000, 3000) (launched before the step): no GPU was busy
    only over [3000, 5000). The cause's idle is measured as gpu_idle_ns is (2 µs), not as GPU 0's whole gap (3.9 µs,
    more than the row's idle)."""
    path = write_nsys_sqlite(
        tmp_path / "two_gpus.sqlite",
        kernels=[
            {"start": 1000, "end": 1100, "correlationId": 1, "shortName": "gemm"},
            {"start": 1000, "end": 3000, "correlationId": 2, "deviceId": 1, "shortName": "allreduce"},
            {"start": 5000, "end": 5100, "correlationId": 3, "shortName": "gemm"},
        ],
        runtime=[
            {**_api(100, 110, "cudaLaunchKernel_v7000", 2), "globalTid": GLOBAL_TID_1 + 1},
            _api(950, 960, "cudaLaunchKernel_v7000", 1),
            _api(1150, 4990, "cudaStreamSynchronize_v3020", 10),
            _api(4992, 4998, "cudaLaunchKernel_v7000", 3),
        ],
        nvtx=[_mark(900, "CG_DISPATCH:actual=1:mode=NONE:padded=1")],
    )
    f = {x.rule: x for x in findings_for(load_trace(path))}["host-bound-steps"]
    assert [(r["gpu_idle_ns"], r["cause"], r["cause_idle_ns"]) for r in rows(f)] == [
        (2000, "cudaStreamSynchronize", 2000)
    ]
    assert f.cost_ns == 2000 and f.summary.endswith(", mainly cudaStreamSynchronize (2 µs).")


def test_a_sync_that_returns_while_the_gpu_has_queued_work_costs_no_gpu_time(tmp_path):
    """A host thread blocked while the GPU runs its queued kernels loses no GPU time: the rules say so and cost 0,
    whatever the blocked time (the 2-GPU NCCL trace: 325 ms blocked over 2 threads, in a 300 ms trace)."""
    path = write_nsys_sqlite(
        tmp_path / "busy.sqlite",
        kernels=[
            {"start": 1000, "end": 9000, "correlationId": 1, "shortName": "gemm"},
            {"start": 9000, "end": 20000, "correlationId": 2, "shortName": "gemm"},
        ],
        runtime=[
            _api(900, 1000, "cudaLaunchKernel_v7000", 1),
            _api(1100, 1200, "cudaLaunchKernel_v7000", 2),
            _api(1300, 8000, "cudaStreamSynchronize_v3020", 10),  # returns into busy GPU time
        ],
    )
    by = {f.rule: f for f in findings_for(load_trace(path))}
    for rule in ("sync-in-loop", "cuda-sync-api"):
        assert (by[rule].cost_ns, by[rule].severity) == (0, "none"), rule
        assert by[rule].summary.endswith(
            "GPU work (kernels, CUDA graphs, memcpy/memset) never stopped while it blocked or right after it returned, "
            "within its first-to-last span: no GPU time lost."
        ), by[rule].summary
    assert by["sync-in-loop"].rows["blocked_ns"].tolist() == [6700]


def test_launch_bound(found):
    f = found["launch-bound"]
    assert rows(f) == [
        {
            "phase": "decode",
            "steps": 2,
            "kernels": 3,
            "kernels_per_step": 1.5,
            "short_kernel_pct": 66.67,
            "launch_ns_per_step": 350,
            "launch_over_kernel_ns": 400,
            "launch_bound": True,
        },
        {
            "phase": "prefill",
            "steps": 1,
            "kernels": 1,
            "kernels_per_step": 1.0,
            "short_kernel_pct": 0.0,
            "launch_ns_per_step": 100,
            "launch_over_kernel_ns": 0,
            "launch_bound": False,
        },
    ]
    assert f.view.sort == "-count" and from_query(link_for(f)).sort == "-count"


def test_launch_bound_a_launch_at_a_time_is_the_one_pass_finding(fixture_path, monkeypatch):
    """10M launches are worked through 2M at a time: parts of one launch give the same rows and text."""
    import dashboard.analysis.findings.host as host

    whole = {f.rule: f for f in findings_for(load_trace(fixture_path))}["launch-bound"]
    monkeypatch.setattr(host, "PART_ROWS", 1)
    parts = {f.rule: f for f in findings_for(load_trace(fixture_path))}["launch-bound"]
    assert (rows(parts), parts.summary, parts.cost_ns) == (rows(whole), whole.summary, 400)


def test_decode_without_graphs(found):
    f = found["decode-no-graphs"]
    assert rows(f) == [
        {
            "phase": "decode",
            "steps": 2,
            "no_graph_steps": 2,
            "no_graph_pct": 100.0,
            "mode_none_steps": 2,
            "launches_per_step": 1.5,
            "launch_ns": 700,
        }
    ]


def test_padding_waste(found):
    f = found["padding-waste"]
    assert rows(f) == [
        {
            "phase": "decode",
            "steps": 2,
            "padded_steps": 2,
            "actual_tokens": 4,
            "padded_tokens": 12,
            "waste_tokens": 8,
            "waste_pct": 66.67,
            "waste_ns": 11000,
        },
        {
            "phase": "prefill",
            "steps": 1,
            "padded_steps": 1,
            "actual_tokens": 1000,
            "padded_tokens": 1024,
            "waste_tokens": 24,
            "waste_pct": 2.34,
            "waste_ns": 234,
        },
    ]


def test_exposed_communication(found):
    assert rows(found["exposed-comm"]) == [
        {"device_id": 1, "comm_ns": 4000, "overlapped_ns": 1000, "exposed_ns": 3000, "exposed_pct": 75.0}
    ]


def test_pageable_and_sync_copies_in_the_loop(found):
    f = found["pageable-in-loop"]
    assert [(r["phase"], r["rule"], r["duration_ns"], r["bytes"]) for r in rows(f)] == [
        ("", "cuda-sync-memcpy", 100, 1 << 20),
        ("decode", "cuda-async-memcpy", 50, 8),
    ]
    assert f.cost_ns == 50  # the copy before the first dispatch is listed but costs nothing


def test_no_padding_gives_no_rows_and_zero_cost(tmp_path):
    trace = load_trace(build_fixture(tmp_path / "p.sqlite", padded_decode=1))
    f = {x.rule: x for x in findings_for(trace, rules=["padding-waste"])}["padding-waste"]
    assert f.cost_ns == 11234 - 8750 and len(f.rows) == 2  # D1 no longer padded: 10000 * 7 // 8 gone


def test_link_opens_the_view(found):
    f = found["sync-in-loop"]
    state = from_query(link_for(f, "serving.sqlite@0123abcd"))
    assert (state.trace, state.tab, state.t0_ns, state.t1_ns) == ("serving.sqlite@0123abcd", "api", 10900, 21000)
    assert state.warnings == ()


def test_seed_summary_yields_the_synchronisation_finding():
    ranked = findings_for(load_trace(SEED))
    # 6.39 s blocked, but the GPU was idle only 458 ms of its 17.458 s span (17.45799776 - 16.999974145 s): the
    # most the calls can have cost
    by = {f.rule: f for f in ranked}
    assert (by["sync-in-loop"].cost_ns, by["sync-in-loop"].severity) == (17_457_997_760 - 16_999_974_145, "medium")
    assert rows(by["sync-in-loop"])[0] == {
        "api_name": "cudaStreamSynchronize_v3020",
        "calls": 92,
        "blocked_ns": 6388727360,
        "nvtx_range": "PLE_wait_for_GPU",
        "range_count": 46,
        "range_sum_ns": 6389229296,
    }
    assert "6.39 s" in by["sync-in-loop"].summary and "PLE_wait_for_GPU" in by["sync-in-loop"].summary
    starv = next(f for f in ranked if f.rule == "gpu-starv")
    assert starv.note == fd.NEEDS_EVENTS and starv.rows.empty and "not evaluated" in starv.summary


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_cli_json_rule_and_param(fixture_path):
    code, out, _ = run_cli(
        "findings",
        str(fixture_path),
        "--json",
        "--no-cache",
        "--rule",
        "host-bound-steps",
        "--param",
        "host-bound-steps.share=1",
    )
    doc = json.loads(out)
    assert code == 0 and list(doc) == ["schema", "trace", "findings"]
    assert [f["rule"] for f in doc["findings"]] == ["host-bound-steps"]
    f = doc["findings"][0]
    assert f["params"] == {"share": 1} and f["rows"] == [] and f["cost_ns"] == 0  # 200 / 10000 = 2 % is not < 1 %
    from dashboard.app.trace_files import trace_id

    assert from_query(f["link"]).trace == trace_id(fixture_path)  # the id the dashboard serves the file under


@pytest.mark.parametrize(
    "param, message",
    [
        ("gpu-starv.gapp=1", "has no parameter 'gapp'"),
        ("gpu-low-util.chunks=0", "from 1 to 1000"),
        ("gpu-low-util.chunks=2.5", "must be a whole number"),
        ("gpu-starv.gap=x", "expected RULE.NAME=NUMBER"),
        ("nosuch.x=1", "unknown rule 'nosuch'"),
        ("gpu-starv.gap=1e308", "must be a number from 0 to 1000000000, got 1e+308\n"),  # not 309 digits
    ],
)
def test_cli_bad_params_exit_2(fixture_path, param, message):
    code, _, err = run_cli("findings", str(fixture_path), "--no-cache", "--param", param)
    assert code == 2 and message in err and "Traceback" not in err


def test_cli_text(fixture_path):
    code, out, _ = run_cli("findings", str(fixture_path), "--no-cache")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "Findings for serving.sqlite (ranked by the time they cost)"
    assert " 2. [high] padding-waste: 11.2 µs" in lines and "13. [none] cuda-sync-memset: no cost" in lines


def test_diff_lists_findings_that_change(tmp_path):
    a = findings_for(load_trace(build_fixture(tmp_path / "a.sqlite")))
    b = findings_for(load_trace(build_fixture(tmp_path / "b.sqlite", padded_decode=1)))
    d = {r["rule"]: r for r in diff_findings(a, b)}
    assert d["padding-waste"]["change"] == "changed" and d["padding-waste"]["delta_ns"] == -8750
    assert d["host-bound-steps"]["change"] == "same" and d["gpu-starv"]["change"] == "same"
    assert {r["rule"]: r["change"] for r in diff_findings(a, [])}["sync-in-loop"] == "disappeared"
    assert {r["rule"]: r["change"] for r in diff_findings([], a)}["sync-in-loop"] == "appeared"


def test_json_document_keys_in_fixed_order(fixture_path):
    trace = load_trace(fixture_path)
    doc = findings_json(trace, findings_for(trace))
    assert len(doc["findings"]) == len(fd.RULES)
    for f in doc["findings"]:
        assert list(f)[:7] == ["rule", "severity", "cost_ns", "summary", "link", "params", "rows"]
        assert isinstance(f["cost_ns"], int)


def test_cli_diff_lists_findings(capsys):

    before, after = nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"), nsys_trace("nsys2026.2_2gpu_nccl_after.sqlite")
    assert main(["diff", str(before), str(after), "--json", "--no-cache"]) == 0
    d = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["findings"]}
    # the GPU idle while the nsys golden rows' calls blocked (324,534,733 / 289,752,725 ns in all) or until the GPU
    # got work after they returned: checked by a brute-force pass over the SQLite rows
    assert (d["cuda-sync-api"]["a_cost_ns"], d["cuda-sync-api"]["b_cost_ns"]) == (780_390, 1_254_327)
    assert d["cuda-sync-api"]["change"] == "changed" and d["gpu-starv"]["change"] == "same"
    assert main(["diff", str(before), str(after), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "Findings (A -> B):\n  changed     exposed-comm" in out
    assert "  changed     cuda-sync-api          780 µs ->    1.25 ms (+474 µs)\n" in out


def test_report_puts_findings_first(fixture_path, tmp_path):
    out = tmp_path / "r.html"
    code, _, _ = run_cli("report", str(fixture_path), "-o", str(out), "--no-cache")
    text = out.read_text(encoding="utf-8")
    assert code == 0 and text.index("<h2>Findings (what to fix first)</h2>") < text.index("<div class=\"cards\">")
    assert "[high] padding-waste</b> · 11.2 µs" in text


def test_no_dispatch_marks_sync_is_per_thread_share_of_the_span():

    trace = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    f = findings_for(trace, rules=["sync-in-loop", "exposed-comm"])
    sync = next(x for x in f if x.rule == "sync-in-loop")
    r = rows(sync)[0]
    lo, hi = fd.trace_span(trace.bundle)
    assert (lo, hi) == (60111430336, 60411416408)  # first to last recorded row, wider than the GPU span
    # no steps: no step time (n/a); the share is of the 2 blocking threads' time over the trace's span
    assert (r["phase"], r["steps"], r["calls"], r["blocked_ns"], r["step_ns"], r["share_pct"]) == (
        "all",
        0,
        33,
        324534733,
        None,
        round(100 * 324534733 / (2 * (hi - lo)), 2),
    )
    assert r["share_pct"] == 54.09
    assert r["nvtx_range"] == "aten::copy_"  # per-call NVTX names (op_id = ...) grouped
    comm = next(x for x in f if x.rule == "exposed-comm")
    assert [(x["device_id"], x["exposed_pct"]) for x in rows(comm)] == [(0, 100.0), (1, 100.0)]
    assert from_query(link_for(comm)).kernel == "ncclDevKernel_SendRecv"


@pytest.mark.parametrize(
    "name",
    [
        "nsys2026.2_2gpu_nccl_before.sqlite",
        "nsys2024.6_h100_nvfuser.sqlite",
        "nsys2022.2_a100_saxpy_mpi_backtraces.sqlite",
    ],
)
def test_indexed_join_equals_the_merge_join(name):
    """launches.kernel_launches through the packed-key index pairs kernels and calls exactly as the merge
    on (pid, correlation id) it falls back to for ids too large to pack."""

    from dashboard.analysis.launches import _match_by_merge, kernel_launches

    t = load_trace(nsys_trace(name))
    ctx = fd.build_context(t.summary, t.bundle)
    kpos, apos = _match_by_merge(t.bundle.kernels, t.bundle.api_calls)
    ours = ctx.launches()
    assert len(ours) > 0 and ours is ctx.derived.launches()
    assert ours["kernel_index"].tolist() == kpos.tolist()
    assert ours["api_index"].tolist() == apos.tolist()
    assert kernel_launches(t.bundle.kernels, t.bundle.api_calls)["api_index"].tolist() == apos.tolist()


def test_attribution_and_busy_equal_the_dashboards():
    """Context.attribution / dispatch_busy equal attribution.attribute_kernels / dispatch_metrics."""
    from dashboard.analysis.attribution import attribute_kernels, dispatch_metrics

    from paths import SAMPLES

    t = load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite")
    ctx = fd.build_context(t.summary, t.bundle)
    ref = attribute_kernels(t.bundle.kernels, t.bundle.api_calls, ctx.dispatches)
    assert (ctx.attribution() == ref).all() and (ref >= 0).sum() == 108_000
    busy = dispatch_metrics(ctx.dispatches, t.bundle.kernels, ref)["gpu_busy_ns"].to_numpy()
    assert ctx.dispatch_busy().tolist() == busy.tolist()


@pytest.mark.parametrize(
    "path",
    sorted(__import__("paths").NSYS_DIR.glob("*.sqlite")) + sorted(__import__("paths").DATA.glob("kineto/*.json.gz")),
    ids=lambda p: p.name,
)
def test_every_shared_trace_gives_every_rule(path):
    trace = load_trace(path)
    ranked = findings_for(trace)
    assert sorted(f.rule for f in ranked) == sorted(fd.RULES)
    costs = [f.cost_ns for f in ranked]
    assert costs == sorted(costs, reverse=True) and all(isinstance(c, int) and c >= 0 for c in costs)
    for f in ranked:
        assert (f.cost_ns == 0) == (f.severity == "none") and f.summary.endswith(".")
        assert from_query(link_for(f, "x.sqlite@0123abcd")).warnings == ()


def test_cpu_only_trace_is_not_called_host_bound():

    f = {x.rule: x for x in findings_for(load_trace(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")))}
    assert f["host-bound-steps"].cost_ns == 0 and not f["host-bound-steps"].evaluated
    assert f["host-bound-steps"].summary == (
        "Not evaluated: this trace has no GPU work (no kernel, CUDA-graph or memcpy/memset row)."
    )
    assert f["decode-no-graphs"].cost_ns == 0 and f["decode-no-graphs"].rows.empty
    # NVTX only: every rule that reads CUDA rows says which rows it lacks; the one that reads only the
    # dispatch marks ran and found nothing
    assert {r: x.note for r, x in f.items() if not x.evaluated} == {
        "gpu-starv": "the trace has no GPU work",
        "gpu-low-util": "the trace has no GPU work",
        "host-bound-steps": "the trace has no GPU work",
        "exposed-comm": "the trace has no kernel rows",
        "cuda-sync-api": "the trace has no CUDA API calls",
        "sync-in-loop": "the trace has no CUDA API calls",
        "launch-bound": "the trace has no kernel rows or CUDA API calls",
        "cuda-sync-memcpy": "the trace has no memcpy/memset rows",
        "cuda-sync-memset": "the trace has no memcpy/memset rows",
        "cuda-async-memcpy": "the trace has no memcpy/memset rows",
        "pageable-in-loop": "the trace has no memcpy/memset rows",
        "decode-no-graphs": "the trace has no kernel rows",
    }
    assert f["padding-waste"].evaluated
    # its summary JSON holds no kernel and no CUDA API total: the same rules are not evaluated there
    t = load_trace(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite"))
    s = {x.rule: x for x in fd.evaluate(t.summary, None)}  # the summary alone, as its summary JSON loads
    assert not s["decode-no-graphs"].evaluated and not s["sync-in-loop"].evaluated
    assert s["sync-in-loop"].note == "the trace has no CUDA API calls"
    # a prefix that names no mark: the rules that need dispatch steps say so, they found nothing only if they looked
    g = {x.rule: x for x in findings_for(load_trace(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")), prefix="FOO")}
    assert (g["padding-waste"].evaluated, g["padding-waste"].note) == (False, "no dispatch marks named FOO…")
    assert (
        g["padding-waste"].summary
        == "Not evaluated: no dispatch marks named FOO… in this trace (see --dispatch-prefix)."
    )
    # marks without token counts (PLE_…): padding cannot be measured, so it is not "nothing found" either
    p = {
        x.rule: x for x in findings_for(load_trace(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")), prefix="PLE_")
    }
    assert (p["padding-waste"].evaluated, p["padding-waste"].note) == (
        False,
        "no dispatch mark gives actual= and padded=",
    )


def test_graph_launch_shared_by_its_kernels_in_launch_bound(tmp_path):
    # one 1,000 ns call launches 4 kernels of 300 ns (a node-traced graph launch): 250 ns each, none short
    p = write_nsys_sqlite(
        tmp_path / "g.sqlite",
        kernels=[
            {"start": 2000 + 400 * i, "end": 2300 + 400 * i, "correlationId": 1, "graphNodeId": i + 1} for i in range(4)
        ],
        runtime=[_api(1000, 2000, "cudaGraphLaunch_v10000", 1)],
    )
    f = findings_for(load_trace(p), rules=["launch-bound"])[0]
    # no dispatch marks, no steps: the per-step figures are n/a (issue 26: was 4.0 and 1000 beside steps 0)
    assert rows(f) == [
        {
            "phase": "all",
            "steps": 0,
            "kernels": 4,
            "kernels_per_step": None,
            "short_kernel_pct": 0.0,
            "launch_ns_per_step": None,
            "launch_over_kernel_ns": 0,
            "launch_bound": False,
        }
    ]


def test_a_hip_graph_replay_step_is_graphed_and_its_graph_launch_counts_once():
    """QA, 2026-12-07: on the ROCm vLLM replay trace (one decode step: one 0.5 ms hipGraphLaunch running 425 kernels
    without graph node ids) decode-no-graphs said "1 of 1 decode dispatches run without CUDA graphs … 213 ms of
    launch calls" on a trace 19 ms long: the graph's kernels were read as ungraphed (no node id), and the graph
    launch was counted once per kernel it ran."""
    from dashboard.analysis.step_presets import parse_step_source

    trace = load_trace(DATA / "kineto" / "rocm_vllm_decode_graph_replay.json.gz")
    f = findings_for(trace, rules=["decode-no-graphs"], steps=parse_step_source("vllm"))[0]
    assert (f.summary, f.cost_ns) == ("The decode dispatch uses HIP graphs.", 0)  # a ROCm trace's own word


def test_a_launch_call_of_several_kernels_counts_once_in_the_launch_call_total():
    from dashboard.analysis.launches import launch_call_total

    api = pd.DataFrame({"start_ns": [0, 2_000], "end_ns": [1_000, 2_500]})
    launches = pd.DataFrame({"kernel_index": [0, 1, 2], "api_index": [0, 0, 1], "api_start_ns": [0, 0, 2_000]})
    assert launch_call_total(launches, api, np.array([0, 1, 2])) == 1_500  # was 2,500: the first call twice
    assert launch_call_total(launches, api, np.array([0, 1])) == 1_000
    assert launch_call_total(launches, api, np.array([2]), part=1) == 500
    assert launch_call_total(launches, api, np.array([], np.int64)) == 0
    # a selector of kernel rows, a part at a time: kernels 1 and 2 (calls 0 and 1 once each), then kernel 0 alone
    for part in (1, 2, 3):
        assert launch_call_total(launches, api, lambda k: k >= 1, part=part) == 1_500
        assert launch_call_total(launches, api, lambda k: k == 0, part=part) == 1_000
        assert launch_call_total(launches, api, lambda k: k > 5, part=part) == 0


@pytest.mark.parametrize("case", __import__("bad_inputs").ALL, ids=lambda c: c.id)
def test_bad_input_corpus(case, tmp_path):
    """Refused inputs: exit 2, one line naming the file and the problem, no traceback; inputs that load
    give a valid findings document. The file is never changed and no side file appears."""
    import hashlib

    path = case.make(tmp_path)
    before = (
        sorted(p.name for p in tmp_path.iterdir()),
        (hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None),
    )
    code, out, err = run_cli("findings", str(path), "--json", "--no-cache")
    if case.error:
        assert code == 2 and case.error in err and "Traceback" not in err and err.count("\n") == 1
    else:
        doc = json.loads(out)
        assert code == 0 and len(doc["findings"]) == len(fd.RULES)
    after = (
        sorted(p.name for p in tmp_path.iterdir()),
        (hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None),
    )
    assert after == before


def test_a_percentage_over_nothing_is_na_never_a_clean_zero():
    """Evidence shares over a zero denominator (a phase without step time, zero padded tokens, a zero-length
    communication union) are None in the rows ("n/a" in the page, null in --json), and "n/a" in a sentence."""
    import pandas as pd

    from dashboard.analysis.findings import _pct_text, _round_pct
    from dashboard.render.findings import rows_of

    assert _round_pct(5, 0) is None and _round_pct(0, 0) is None and _round_pct(1, 3) == 33.33
    assert _pct_text(5, 0) == "n/a" and _pct_text(1, 4, ".0f") == "25" and _pct_text(1, 3) == "33.3"
    rows = rows_of(
        pd.DataFrame(
            [
                {"phase": "decode", "waste_pct": _round_pct(0, 0)},
                {"phase": "prefill", "waste_pct": _round_pct(24, 1024)},
            ]
        )
    )
    assert rows == [{"phase": "decode", "waste_pct": None}, {"phase": "prefill", "waste_pct": 2.34}]


def test_evidence_reads_as_words_and_units_in_the_grid_and_the_report():
    """Evidence columns are titled in words (the snake_case field stays the --json key and the grid's
    tooltip); the report prints durations with their unit, percentages and counts, never raw ns."""
    from dashboard.app.views.findings import _column
    from dashboard.render.findings import evidence_cell, evidence_header, evidence_html

    assert [
        evidence_header(f)
        for f in ("calls_per_step", "blocked_ns", "share_pct", "api_name", "nvtx_range", "launch_ns_per_step")
    ] == ["calls per step", "blocked", "share %", "API name", "NVTX range", "launch per step"]
    assert evidence_cell("launch_ns_per_step", 508_432_383) == "508.432 ms"  # printed as 508,432,383 before
    assert [
        evidence_cell("blocked_ns", 5_163_000_000),
        evidence_cell("lead_ns", 812),
        evidence_cell("share_pct", 95.84),
        evidence_cell("steps", 12345),
        evidence_cell("calls_per_step", 1.0),
        evidence_cell("exposed_pct", float("nan")),
        evidence_cell("phase", "decode"),
        evidence_cell("launch_bound", True),
    ] == ["5.163 s", "812 ns", "95.8 %", "12,345", "1.00", "—", "decode", "yes"]
    col = _column("blocked_ns", 5)
    assert (col["headerName"], col["headerTooltip"]) == ("blocked", "blocked_ns")
    frame = pd.DataFrame({"api_name": ["<cudaX>"], "blocked_ns": [1_500_000]})
    assert evidence_html(frame) == (
        "<table class='findings-rows'><thead><tr><th>API name</th><th class='num'>blocked</th>"
        "</tr></thead><tbody><tr><td>&lt;cudaX&gt;</td><td class='num'>1.500 ms</td></tr>"
        "</tbody></table>"
    )
    assert evidence_html(frame.iloc[:0]) == ""
    # identifiers are printed as they are: pid 25286, never "25,286"
    assert [evidence_cell("pid", 25286), evidence_cell("device_id", 1000), evidence_cell("kernels", 25286)] == [
        "25286",
        "1000",
        "25,286",
    ]
    assert "valueFormatter" not in _column("tid", 25286) and "valueFormatter" in _column("kernels", 25286)


def test_findings_text_prints_evidence_with_units_and_no_nan():
    """``tracedash findings`` (text): the evidence of a trace without dispatch marks has an undefined
    calls-per-step (NaN in the frame): it prints "—", durations with units, ids without separators."""
    from dashboard.render.findings import findings_for, findings_text

    trace = load_trace(SAMPLES / "h100_qwen1.5_0.5b_chat.json.gz")
    text = findings_text(trace, findings_for(trace))
    assert "NaN" not in text and "blocked_ns" not in text and "duration_ns" not in text
    # no steps: step time and calls per step are n/a ("—"); the share is of the thread's time over the trace's span
    assert (
        "      phase steps calls calls per step   blocked step share %              API name     NVTX range top blocked"
        in text
    )
    assert (
        "        all     0     3              — 16.277 ms    —  32.8 % cudaDeviceSynchronize ProfilerStep#6   14.103 ms"
        in text
    )
    assert "      14.103 ms 540.53 µs 25286 25286 cudaDeviceSynchronize" in text


def test_a_summary_s_decode_without_graphs_estimate_never_outlasts_the_decode_steps():
    """On a summary JSON the launch total is spread over all dispatches alike, so prefill's heavier
    launching was charged to decode: the seed's estimate was 8.05 s × 96/138 = 5.6 s against 2.758 s of
    decode steps. The launch calls of a step cannot outlast it: the cost is at most the steps' own time."""
    trace = load_trace(SEED)
    f = {x.rule: x for x in findings_for(trace)}["decode-no-graphs"]
    assert f.cost_ns == 2_758_419_104 and f.rows["launch_ns"].tolist() == [2_758_419_104]
    assert f.summary.endswith(
        "2.76 s of launch calls (estimated from totals, which spread all launches over all "
        "dispatches alike; at most the steps' own time)."
    )


def test_the_cli_reads_the_steps_the_findings_panel_reads(capsys):
    """`tracedash findings` without --steps reads the steps as the page does (auto): triton's ProfilerStep#1 is a
    step on both, where the CLI used to say "not evaluated" beside the page's evaluated finding."""
    triton = DATA / "cases" / "field" / "triton_example.json.gz"
    assert main(["findings", str(triton), "--json", "--no-cache"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert main(["findings", str(triton), "--json", "--no-cache", "--steps", "auto"]) == 0
    assert json.loads(capsys.readouterr().out) == default
    hb = next(f for f in default["findings"] if f["rule"] == "host-bound-steps")
    # ProfilerStep#1 lasts 13.3 s; the GPU's only work is one 1.76 µs kernel: never "no GPU time lost"
    assert hb["summary"] == (
        "1 of 1 step keeps the GPU busy with its own work under 50 % of the step (13.3 s without it); only 1.76 µs "
        "of its 13.3 s lies within the GPU activity span (first to last GPU work), where the GPU was never idle: the "
        "rest is outside the recorded GPU work, so what it cost the GPU is not measured."
    )
    from dashboard.render.steps import step_spec
    from dashboard.state import ViewState

    page = {f.rule: f for f in findings_for(load_trace(triton), steps=step_spec(ViewState()))}["host-bound-steps"]
    assert page.summary == hb["summary"]


def test_rules_without_steps_say_what_auto_looked_for_and_what_another_accelerator_holds():
    from dashboard.render.steps import step_spec
    from dashboard.state import ViewState

    torchrun = findings_for(
        load_trace(nsys_trace("nsys2026.2_h100_2gpu_torchrun_1s.sqlite")), steps=step_spec(ViewState())
    )
    hb = {f.rule: f for f in torchrun}["host-bound-steps"]
    assert (hb.evaluated, hb.note) == (False, "no step annotations")
    assert hb.summary == (
        "Not evaluated: no serving steps in this trace (no dispatch marks named CG_DISPATCH…, nor vLLM, SGLang, "
        "TensorRT-LLM or ProfilerStep annotations; see --steps and --dispatch-prefix)."
    )
    mtia = {f.rule: f for f in findings_for(load_trace(DATA / "cases" / "field" / "mtia_inference_rank_0.json.gz"))}
    assert mtia["gpu-starv"].summary == (
        "Not evaluated: this trace has no GPU work (no kernel, CUDA-graph or memcpy/memset row); its 1,313 MTIA device "
        "events and 823 MTIA runtime calls are not analysed."
    )
    assert mtia["sync-in-loop"].summary == "Not evaluated: this trace has no CUDA API calls."


def test_findings_and_steps_say_the_traces_warnings_as_summarize_does(tmp_path, capsys):
    """A sync call that ends before it starts is not loaded: `findings` said "No blocking CUDA synchronisation
    calls." and nothing else; the trace's warnings now go to stderr as summarize's do."""
    path = write_nsys_sqlite(
        tmp_path / "reversed.sqlite",
        kernels=[{"start": 1000, "end": 2000, "correlationId": 1, "shortName": "gemm"}],
        runtime=[_api(900, 950, "cudaLaunchKernel_v7000", 1), _api(5000, 3000, "cudaStreamSynchronize_v3020", 2)],
    )
    warning = (
        "tracedash: warning: reversed.sqlite: CUDA API calls: 1 of 2 rows not loaded: 1 with unusable times "
        "(NULL, end < start or beyond 2^62 ns)\n"
    )
    for command in (["findings", "--no-cache"], ["steps", "--no-cache"], ["summarize", "--no-cache", "-o", "-"]):
        code, _, err = run_cli(command[0], str(path), *command[1:])
        assert (code, err) == (0, warning), command


def test_gpu_low_util_link_frames_the_lowest_chunk_its_sentence_names():
    """The NCCL sample's two chunks under 50 %: 36.0 % from 60.221 s on GPU 1 (named first) and 37.5 % from
    60.401 s on GPU 0, the longer; the link framed the longer one, not the one the sentence names."""
    trace = load_trace(SAMPLES / "nsys2026.2_2gpu_nccl_before.sqlite")
    f = {f.rule: f for f in findings_for(trace)}["gpu-low-util"]
    low = rows(f)[0]
    assert (low["in_use_pct"], low["start_ns"], low["device_id"]) == (36.0, 60221022359, 1)
    assert "the lowest at 36.0 % from 60.221 s" in f.summary
    assert f.view.t0_ns <= low["start_ns"] and low["start_ns"] + low["duration_ns"] <= f.view.t1_ns
    assert f.view.t1_ns < 60401000000  # the other chunk is not framed with it


def test_sync_in_loop_over_several_phases_says_why_its_phase_leads_and_what_it_blocked():
    """The 108k sample blocks 6.67 s in all, 5.16 s of it in prefill, but decode's calls cost the GPU more idle
    (165 of the 238 ms): decode leads, and its own blocked time is not read against the total."""
    f = {f.rule: f for f in findings_for(load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite"))}["sync-in-loop"]
    assert f.summary.startswith(
        "144 blocking calls in the dispatch loop hold the host 6.67 s; decode, the phase they cost the GPU most "
        "(165 ms idle): 1 per step, 73.2 % of its step time, 1.51 s blocked, mostly cudaStreamSynchronize inside "
        "PLE_wait_for_GPU (1.51 s); "
    )
    assert [(r["phase"], r["blocked_ns"] // 10**6) for r in rows(f)] == [("decode", 1507), ("prefill", 5162)]


def test_a_rocm_trace_calls_its_graphs_hip_graphs_and_a_cuda_trace_cuda_graphs():
    """QA: the ROCm traces' blocking findings said "no GPU work (kernel, CUDA graph or memcpy/memset)"."""
    from dashboard.analysis.findings.base import blocking_cost, graph_word

    t = load_trace(DATA / "kineto" / "rocm_vllm_decode_graph_replay.json.gz")
    assert graph_word(t.bundle) == "HIP graph"
    ctx = fd.build_context(t.summary, t.bundle)
    gap_starts, gap_ends = ctx.no_gpu_busy()  # when no GPU was busy: a call blocked over the longest costs it
    i = int(np.argmax(gap_ends - gap_starts))
    cost, clause = blocking_cost(ctx, gap_starts[i : i + 1], gap_ends[i : i + 1])
    assert cost == int(gap_ends[i] - gap_starts[i]) > 0
    assert clause.startswith(f"no GPU work (kernel, HIP graph or memcpy/memset) ran for {units.duration_short(cost)}")
    assert graph_word(load_trace(SAMPLES / "nsys2026.2_2gpu_nccl_before.sqlite").bundle) == "CUDA graph"
    assert graph_word(None) == "CUDA graph"
