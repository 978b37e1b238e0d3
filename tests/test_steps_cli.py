"""``tracedash steps``: JSON shape and values, text table, exit codes, per-process choice, light imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import step_traces as gen

from dashboard.cli import main

from paths import DATA, SEED

B200 = DATA / "kineto" / "b200_eager.json.gz"
CAPTURE = DATA / "steps" / "rocm_vllm_decode_graph_capture.json.gz"


def run(capsys, *argv):
    code = main(["steps", *map(str, argv), "--no-cache"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_of_a_vllm_prefill_step(capsys):
    code, out, err = run(capsys, B200, "--json")
    assert code == 0 and err == ""
    assert json.loads(out) == {
        "source": {"preset": "vllm", "rule": None, "auto": True},
        "steps": [
            {
                "start_ns": 0,
                "end_ns": 87412863,
                "name": "execute_context_1(888_788544)_generation_0(0)",
                "phase": "prefill",
                "context_requests": 1,
                "context_tokens": None,
                "generation_requests": 0,
                "generation_tokens": 0,
                "tokens": None,
                "batch_size": 1,
                "graph_mode": None,
                "kernels": 768,
                "gpu_time_ns": 10793638,
            }
        ],
        "phases": {
            "prefill": {
                "steps": 1,
                "requests": 1,
                "tokens": None,
                "total_ns": 87412863,
                "mean_ns": 87412863.0,
                "p50_ns": 87412863.0,
                "p90_ns": 87412863.0,
                "p99_ns": 87412863.0,
                "tokens_per_s": None,
                "kernels": 768,
                "gpu_time_ns": 10793638,
            }
        },
    }


def test_text_table(capsys):
    code, out, _ = run(capsys, B200)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "b200_eager.json.gz: steps from vLLM annotations (auto) · pid 6583 · 1 step"
    assert lines[2].split() == [
        "#",
        "start",
        "ms",
        "duration",
        "ms",
        "phase",
        "ctx",
        "req",
        "ctx",
        "tok",
        "gen",
        "req",
        "gen",
        "tok",
        "tokens",
        "batch",
        "graph",
        "kernels",
        "GPU",
        "ms",
        "name",
    ]
    assert lines[3].split() == [
        "0",
        "0.000",
        "87.413",
        "prefill",
        "1",
        "0",
        "0",
        "1",
        "768",
        "10.794",
        "execute_context_1(888_788544)_generation_0(0)",
    ]
    assert lines[-1].split() == ["prefill", "1", "1", "87.413", "87.413", "87.413", "87.413", "n/a", "768", "10.794"]


def test_capture_only_trace_has_no_phase_statistics(capsys):
    code, out, _ = run(capsys, CAPTURE, "--json")
    d = json.loads(out)
    assert code == 0 and d["phases"] == {} and [s["phase"] for s in d["steps"]] == ["capture"]
    assert d["steps"][0]["graph_mode"] == "FULL" and d["steps"][0]["batch_size"] == 32
    code, out, _ = run(capsys, CAPTURE)
    assert out.splitlines()[-1] == "per phase: no serving steps (graph captures are left out of the phase statistics)"


def test_summary_json_has_seed_steps_without_kernels(capsys):
    code, out, _ = run(capsys, SEED, "--json")
    d = json.loads(out)
    assert code == 0 and d["source"] == {"preset": "seed", "rule": None, "auto": True}
    assert len(d["steps"]) == 138 and {s["kernels"] for s in d["steps"]} == {None}
    assert d["phases"]["prefill"]["steps"] == 42 and d["phases"]["decode"]["steps"] == 96
    assert d["phases"]["prefill"]["tokens"] == 40 * 1600 + 2 * 742 and d["phases"]["decode"]["kernels"] is None
    code, out, _ = run(capsys, SEED)  # a summary names no process: no "pid -1" (QA)
    assert out.splitlines()[0] == f"{SEED.name}: steps from CG_DISPATCH marks (auto) · 138 steps"


def test_per_process_choice(tmp_path, capsys):
    a = gen.make_steps("trtllm", 41, pid=100, capture=False)
    b = gen.make_steps("trtllm", 42, pid=200, start_us=1100, corr0=10_000, capture=False)
    path = gen.nsys_trace(tmp_path / "tp.sqlite", a + b)
    code, out, err = run(capsys, path, "--json")
    assert code == 0 and len(json.loads(out)["steps"]) == len(a)
    assert "2 processes have steps (pid 100: 14, pid 200: 14); showing pid 100 (--pid chooses another)" in err
    code, out, _ = run(capsys, path, "--json", "--pid", "200")
    assert [s["name"] for s in json.loads(out)["steps"]] == [s.name for s in b]
    assert json.loads(out)["steps"] == [{k: r[k] for k in json.loads(out)["steps"][0]} for r in gen.expected_rows(b)]
    code, _, err = run(capsys, path, "--pid", "300")
    assert code == 2 and "--pid 300: no steps in that process (processes with steps: 100, 200)" in err


def test_explicit_preset_that_finds_nothing_says_what_the_trace_holds(capsys):
    code, out, _ = run(capsys, B200, "--steps", "trtllm")
    assert code == 0
    assert (
        "note: no TensorRT-LLM annotations in this trace; the trace holds vLLM annotations (--steps vllm, or auto)"
        in out.splitlines()
    )


@pytest.mark.parametrize(
    "value, message",
    [
        ("vlm", "argument --steps: 'vlm': unknown preset; one of auto, seed, vllm, sglang, trtllm, torch"),
        ("(abc", "argument --steps: '(abc': not a regular expression"),
        ("^x(?P<tok>\\d+)", "unknown group name(s) tok"),
        ("", "argument --steps: is empty: give auto, a preset name or a regular expression"),
        ("  ", "argument --steps: is empty: give auto, a preset name or a regular expression"),
    ],
)
def test_bad_steps_value_is_a_usage_error(capsys, value, message):
    with pytest.raises(SystemExit) as exc:
        main(["steps", str(B200), "--steps", value])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_missing_trace_exit_2(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path / "nope.json")
    assert code == 2 and err.startswith("tracedash: error:") and "Traceback" not in err


def test_steps_imports_neither_findings_nor_plotly():
    code = (
        "import sys; from dashboard.cli import main; rc = main(['steps', sys.argv[1], '--json', '--no-cache']); "
        "bad = sorted(m for m in sys.modules if m.startswith(('plotly', 'dash.', 'dashboard.analysis.findings'))"
        " or m in ('dash', 'dashboard.render')); print(rc, bad, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(B200)], capture_output=True, text=True, timeout=120)
    assert proc.stderr.strip().splitlines()[-1] == "0 []"


def test_a_table_of_ns_scale_steps_is_written_in_ns_not_as_zero_ms(capsys):
    """c24's four steps last 10-230 ns: in ms every time read 0.000. A column whose times are all below 1 µs is in
    ns (below 1 ms, in µs); a trace's usual steps stay in ms."""
    code, out, err = run(capsys, DATA / "cases" / "c24.sqlite")
    assert code == 0
    lines = out.splitlines()
    assert lines[2].split()[:3] == ["#", "start", "ns"] and "duration ns" in lines[2] and "GPU ns" in lines[2]
    assert [line.split()[:3] for line in lines[3:7]] == [
        ["0", "0", "100"],
        ["1", "100", "10"],
        ["2", "110", "10"],
        ["3", "120", "230"],
    ]
    assert [line.split()[-2] for line in lines[3:7]] == ["180", "50", "50", "50"]
    phases = lines[lines.index("per phase (graph captures left out):") + 1 :]
    assert phases[0].split()[4:8] == ["total", "ns", "p50", "ns"] and phases[0].endswith("GPU ns")
    assert phases[2].split()[:8] == ["decode", "3", "3", "250", "10", "186", "225", "12,000,000.0"]
    code, out, _ = run(capsys, SEED)
    lines = out.splitlines()
    assert code == 0 and lines[2].split()[1:5] == ["start", "ms", "duration", "ms"]
    phases = lines[lines.index("per phase (graph captures left out):") + 1]
    assert phases.split()[4:12] == ["total", "ms", "p50", "ms", "p90", "ms", "p99", "ms"]


def test_a_column_of_ms_and_ns_times_gets_the_decimals_its_smallest_time_needs():
    """One step of 2 ms beside steps of 10-100 ns: in ms at 3 decimals the short ones read 0.000."""
    from dashboard.cli.steps import _time, _time_unit

    unit = _time_unit([100, 10, 2_000_100])
    assert unit == ("ms", 1_000_000, 5)
    assert [_time(v, unit) for v in (100, 10, 2_000_100)] == ["0.00010", "0.00001", "2.00010"]
    assert _time_unit([1_234_567, 9_000_000]) == ("ms", 1_000_000, 3)  # usual steps: as before
    assert _time_unit([7, 1]) == ("ns", 1, 0) and _time_unit([0]) == ("ms", 1_000_000, 3)


def test_kernels_of_a_process_without_steps_are_said_to_be_in_no_step(capsys):
    """QA: the Triton example's one kernel runs in pid 1670242, its ProfilerStep#1 in pid 3100453: the step read
    "0 kernels, 0 ms" with nothing said about the kernel."""
    code, out, _ = run(capsys, DATA / "cases" / "field" / "triton_example.json.gz")
    assert code == 0
    assert (
        "note: 1 kernel of pid 1670242 (no steps there) is in no step: a kernel counts in a step of the process "
        "that launched it"
    ) in out.splitlines()
    code, out, _ = run(capsys, B200)  # its kernels run in the process of its steps: nothing to say
    assert code == 0 and "in no step" not in out


def test_kernels_of_other_processes_counted_per_process():
    import pandas as pd

    from dashboard.analysis.steps import kernels_of_other_processes

    kernels = pd.DataFrame({"pid": pd.array([7, 7, 9, 0, 9, 9], dtype="int32")})
    assert kernels_of_other_processes(kernels, [7]) == {0: 1, 9: 3}
    assert kernels_of_other_processes(kernels, [7, 9, 0]) == {}
    assert kernels_of_other_processes(kernels, []) == {}  # no steps at all: said otherwise
