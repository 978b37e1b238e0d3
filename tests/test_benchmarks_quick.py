"""Every benchmark in benchmarks/ runs from a clean tree, as docs/benchmarks.md says: each one's ``--quick`` mode
(small inputs, seconds) runs here as its own process, exactly as a user types it, so a benchmark that breaks
(a moved module, a changed page, a renamed sample) fails `make test`. Timings are not checked (a benchmark's
figures are for people, on a quiet machine); what each run prints about its inputs is, to the value.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from paths import ROOT

BENCH = ROOT / "benchmarks"


def run(tmp_path: Path | None, script: str, *args: str, timeout: int = 180) -> str:
    """stdout + stderr of ``python benchmarks/SCRIPT ARGS`` from the repository root; fails on a non-zero exit.
    Generated traces go under ``tmp_path`` (``TMPDIR``), not the machine's temp folder (None: the usual one,
    for Chromium, whose socket path under pytest's deep temp folders is over the 108-byte limit)."""
    env = {**os.environ, **({"TMPDIR": str(tmp_path)} if tmp_path else {})}
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{script} {' '.join(args)} exited {proc.returncode}:\n{out[-4000:]}"
    assert "Traceback" not in out, out[-4000:]
    return out


def line(out: str, start: str) -> str:
    """The one printed line that starts (after indentation) with ``start``."""
    found = [ln.strip() for ln in out.splitlines() if ln.strip().startswith(start)]
    assert len(found) == 1, f"{start!r}: {found}\n{out}"
    return found[0]


# Printed by make_trace.py for a generated trace of 5,000 kernels (deterministic for a given count and seed).
GENERATED_5000 = "{'kernels': 5000, 'api': 5003, 'nvtx': 15, 'steps': 3}"


def test_make_trace_writes_the_counts_it_reports(tmp_path):
    out = run(tmp_path, "make_trace.py", str(tmp_path / "t.sqlite"), "--kernels", "5000")
    assert GENERATED_5000 in out
    con = sqlite3.connect(tmp_path / "t.sqlite")
    try:
        assert con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone() == (5000,)
        assert con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone() == (5003,)
        assert con.execute("SELECT count(*) FROM NVTX_EVENTS").fetchone() == (15,)
    finally:
        con.close()


def test_run_quick_times_summarize_against_the_bare_scan(tmp_path):
    out = run(tmp_path, "run.py", "--quick", "--workdir", str(tmp_path / "work"))
    assert GENERATED_5000 in out
    for label in (
        "bare SQLite scan (floor)",
        "tracedash summarize, cold",
        "tracedash summarize, warm (cache)",
        "cold / bare scan",
        "warm",
    ):
        assert re.search(r"\d+\.\d\d", line(out, label)), line(out, label)
    assert re.fullmatch(
        r"cold peak RSS\s+=\s+[\d,]+ MiB \(target for 10M kernels <= 1\.2 GB\)", line(out, "cold peak RSS")
    )
    assert ("nsys stats (3 reports)" in out) == ("cold / nsys stats" in out)


def test_compare_quick(tmp_path):
    out = run(tmp_path, "compare.py", "--quick")
    assert line(out, "shared pair") == (
        "shared pair (nccl before/after): 7,597 kernels, 0 dispatches, 11 kernel / 101 NVTX / 16 API names"
    )
    assert line(out, "generated pair") == (
        "generated pair (2,000 kernels each): 4,000 kernels, 4 dispatches, 12 kernel / 4 NVTX / 5 API names"
    )
    gates = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("gate:")]
    assert gates == ["gate: kernel_time +2.29 %", "gate: step_time:unsplit -1.26 %"]
    assert len(re.findall(r"x loading both", out)) == 4


def test_dask_summarize_quick_gives_the_same_summaries_as_one_process(tmp_path):
    out = run(tmp_path, "dask_summarize.py", "--quick")
    assert re.fullmatch(
        r"2 traces x 2,000 kernels \(\d+ MiB\) in .+ \[ready in \d+\.\d s\]; \d+ usable cores, "
        r"1 Dask workers",
        line(out, "2 traces x 2,000 kernels"),
    ), out
    assert line(out, "speed-up:").endswith("identical output: True")
    for label in (
        "sequential (one process)",
        "Dask LocalCluster (1 workers)",
        "cluster start-up + shutdown",
        "shell loop (2 processes)",
    ):
        line(out, label)


def test_findings_quick(tmp_path):
    out = run(tmp_path, "findings.py", "--quick")
    assert line(out, "nsys2026.2_2gpu_nccl_before.sqlite:").startswith(
        "nsys2026.2_2gpu_nccl_before.sqlite: 4,010 kernels, 7,466 CUDA API calls"
    )
    assert line(out, "generated_5000.sqlite:").startswith("generated_5000.sqlite: 5,000 kernels, 5,003 CUDA API calls")
    tops = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("top findings:")]
    # the sync rules cost the GPU idle their calls can have caused (780 µs; 9.2 ms), not their 325 ms / 790 ms blocked
    assert tops == [
        "top findings: exposed-comm 0.025 s; gpu-low-util 0.013 s; sync-in-loop 0.001 s",
        "top findings: sync-in-loop 0.009 s; cuda-sync-api 0.009 s; exposed-comm 0.007 s",
    ]
    assert len(re.findall(r"all 13 rules: \d+\.\d{3} s wall", out)) == 2


def test_interactions_quick_re_renders_only_the_views_a_change_reads(tmp_path):
    out = run(tmp_path, "interactions.py", "--quick")
    views = {m.group(1).strip(): m.group(2) for m in re.finditer(r"^  (.+?)\s+\d+\.\d ms.*?views: ([^;]+);", out, re.M)}
    assert views == {
        "kernel grouping → full": "kernels",
        "threshold → 100": "findings, gantt, phases, phase_figure, dispatches, compare_link",
        "tab → gaps": "(none: the browser sorts)",
        "API table sort → count": "(none: the browser sorts)",
        "gap threshold → 50 µs": "gaps",
        "zoom to 2.0–2.1 s": "timeline, gantt",
        "zoom, stats for window": "overview, timeline, gantt, phases, gpu, phase_figure, kernels, api, dispatches, "
        "gaps, nvtx",
    }


def test_search_quick_counts_each_query_on_the_generated_trace(tmp_path):
    out = run(tmp_path, "search.py", "--quick")
    assert line(out, "5,000 kernels").startswith("5,000 kernels, 5,003 CUDA API calls")
    matches = {q: line(out, q).split()[1] for q in ("elementwise", "cudaLaunchKernel", "CG_DISPATCH", "no_such_kernel")}
    assert matches == {"elementwise": "712", "cudaLaunchKernel": "2,311", "CG_DISPATCH": "3", "no_such_kernel": "0"}
    assert line(out, "/^(Kernel2|flash_fwd_kernel)$/").split()[1] == "1,586"
    assert line(out, "worst cold search").startswith("worst cold search + its lane or status: ")


def test_steps_quick_finds_the_same_steps_from_marks_and_vllm_ranges(tmp_path):
    out = run(tmp_path, "steps.py", "--quick")
    assert line(out, "5,000 kernels") == "5,000 kernels, 3 steps (seed_shaped_5000.sqlite)"
    for source in ("seed marks:", "vLLM ranges:"):
        assert line(out, source).endswith("(5,000 kernels attributed)")


def test_kineto_load_quick(tmp_path):
    out = run(tmp_path, "kineto_load.py", "--quick")
    row = line(out, "a100_3streams_event_sync.json.gz").split()
    assert row[3] == "149"  # events
    assert row[-1].endswith("x")  # the load against json.loads alone


def test_timeline_quick_stays_within_the_mark_budget(tmp_path):
    out = run(tmp_path, "timeline.py", "--quick")
    assert GENERATED_5000 in out
    assert line(out, "generated_5000.sqlite:").startswith("generated_5000.sqlite: 5,000 kernels loaded")
    rows = re.findall(r"^\s+(\d+\.\d{6}) s\s+\d+\s+([\d,]+)\s+\d+\.\d{3}$", out, re.M)
    assert [w for w, _ in rows] == [
        "0.822726",
        "0.082273",
        "0.008227",
        "0.000823",
        "0.010000",
        "0.001000",
        "0.000100",
        "0.000010",
    ]
    assert all(0 < int(m.replace(",", "")) <= 5000 for _, m in rows)
    assert re.search(r"^worst: \d+ ms \(target <= 300\), [\d,]+ marks \(budget 5,000\)", out, re.M)


def test_memory_quick_reports_the_load_and_every_first_page_view(tmp_path):
    from dashboard.app.views import VIEWS

    out = run(tmp_path, "memory.py", "--quick")
    assert GENERATED_5000 in out
    assert line(out, "generated_5000.sqlite:").startswith("generated_5000.sqlite: 5,000 kernels, 5,003 CUDA API calls")
    steps = re.findall(r"^(\w+)\s+\d+\.\d{2}\s+[\d,]+\s+[\d,]+$", out, re.M)
    assert steps == ["load"] + [v.name for v in VIEWS if v.on_load]
    assert re.search(r"^worst peak: [\d,]+ MiB = \d+\.\d\d GB \(\w+; target <= 2 GB\)$", out, re.M)
    assert line(out, "derived data kept:").startswith("derived data kept: ")


def test_load_quick_serves_every_request_without_error(tmp_path):
    out = run(tmp_path, "load.py", "--quick")
    assert re.fullmatch(
        r"tracedash load test: 2 users, 1 worker\(s\), \d+\.\d s, traces "
        r"nsys2025\.5_rtx3060_cuda_graph_launch\.sqlite, nsys2026\.2_2gpu_nccl_before\.sqlite",
        line(out, "tracedash load test:"),
    ), out
    assert re.search(r"^  requests [\d,]+  \(\d+\.\d req/s\)   errors 0$", out, re.M), out
    assert re.search(r"\(\d+ probes, 0 failed\) beside 1 slow clients", out), out
    for kind in ("view", "nvtx", "gaps", "zoom"):
        n = int(re.search(rf"^  {kind}\s.*\((\d+) requests\)$", out, re.M).group(1))
        assert n > 0, out
    assert "store after run: 2 trace(s)" in out


@pytest.mark.browser
@pytest.mark.long  # ~20 s: started first (tests/conftest.py)
def test_page_load_quick_measures_the_floor_the_page_and_a_fresh_servers_first_page():
    """One run covers every code path: ``--zoom`` (the timeline zoomed from the whole trace to 10 µs; its fresh
    server writes the Parquet cache), the floor and the in-memory table, then ``--warm-cache`` (a fresh server's first
    page, timed, in that cache)."""
    out = run(None, "page_load.py", "--quick", timeout=300)  # it removes its own temporary folder
    assert re.search(r"^floor \(2 dcc.Graph \+ 1 AG Grid\): settled \d+\.\d\d s, drawn \d+\.\d\d s$", out, re.M), out
    assert "failed" not in out
    zoom, rest = out.split("--zoom:\n")[1].split("\nfloor (")
    in_memory, warm = rest.split("\n--warm-cache:\n")
    row = line(in_memory, "nsys2022.4_cpu_llm_server_nvtx.sqlite")
    assert re.search(
        r"this tree\s+(\d+\.\d\d [+−]\s+\d+\.\d\d s\s+){3}\s*[\d,]+ MiB$",  # quick: no load without warming
        row,
    ), row
    row = line(warm, "nsys2022.4_cpu_llm_server_nvtx.sqlite")
    assert re.search(r"this tree\s+\d+\.\d\d [+−]\s+\d+\.\d\d s\s+.*\s\d+\.\d\d( \(\d+\.\d\d; \d+\.\d\d\))?$", row), row
    row = line(zoom, "nsys2022.4_cpu_llm_server_nvtx.sqlite")
    assert re.search(r"zoom round trip p50 \d+ ms, worst \d+ ms \(target p50 <= 250 ms\); every view after", row), row
    widths = re.findall(r"([\d.e-]+) s: \d+", line(zoom, "ms per zoom:"))  # whole activity down to 10 µs
    assert len(widths) == 4 and widths[2:] == ["0.001", "1e-05"], widths


def test_slices_quick_gives_the_one_pass_summary(tmp_path):
    out = run(tmp_path, "slices.py", "--quick")
    first = line(out, "seed_20000")
    assert re.fullmatch(r"seed_20000\.sqlite \(\d+ MiB\); \d+ usable cores, 1 Dask workers", first), out
    for label in ("one pass", "2 slices on Dask"):
        assert line(out, label).endswith("identical output: True"), out
