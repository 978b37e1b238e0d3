"""Steps from the serving frameworks' own annotations (analysis.steps, analysis.step_presets).

Every preset, in Kineto JSON and in an nsys export built in code: a random (seeded) sequence of steps
written in the framework's exact format reads back exactly, with each step's kernels and GPU time.
The given real traces give their exact steps.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import step_traces as gen

from dashboard.analysis import phases as ph
from dashboard.analysis import step_presets as sp
from dashboard.analysis import steps as st
from dashboard.analysis.launches import kernel_launches
from dashboard.data.trace import load_trace
from dashboard.loaders import load_kineto_json, load_nsys_sqlite

from paths import DATA, SEED, nsys_trace

KINETO = DATA / "kineto"
STEPS_DATA = DATA / "steps"  # real framework traces used only here
WRITERS = {
    "kineto": (gen.kineto_trace, "t.json", load_kineto_json),
    "nsys": (gen.nsys_trace, "t.sqlite", load_nsys_sqlite),
}
COLUMNS = ["start_ns", "end_ns", "name", *gen.FIELDS]


def read_back(bundle, spec, end_ns=None):
    source, steps = st.bundle_steps(bundle, spec, end_ns=end_ns)
    g = st.step_kernels(steps, bundle.kernels, bundle.api_calls, kernel_launches(bundle.kernels, bundle.api_calls))
    rows = steps[COLUMNS].astype(object).where(steps[COLUMNS].notna(), None).to_dict("records")
    for r, k, t in zip(rows, g["kernels"].tolist(), g["gpu_time_ns"].tolist()):
        r["kernels"], r["gpu_time_ns"] = k, t
    return source, steps, rows


@pytest.mark.parametrize("fmt", WRITERS)
@pytest.mark.parametrize(
    "preset, seed", [("vllm", 1), ("vllm", 2), ("sglang", 3), ("sglang", 4), ("trtllm", 5), ("trtllm", 6), ("torch", 7)]
)
def test_random_range_steps_read_back_exactly(tmp_path, fmt, preset, seed):
    write, name, load = WRITERS[fmt]
    steps = gen.make_steps(preset, seed)
    bundle = load(write(tmp_path / name, steps))
    for spec in (sp.parse_step_source(preset), sp.parse_step_source("auto")):
        source, frame, rows = read_back(bundle, spec)
        assert source.preset == preset and source.auto == (spec.preset == "auto")
        assert rows == gen.expected_rows(steps)
        assert frame["pid"].tolist() == [100] * len(steps) and not frame["end_estimated"].any()
    phases = set(frame["phase"])
    assert {"prefill", "decode", "mixed"} <= phases if preset != "torch" else phases == {"step"}
    assert ("capture" in phases) == (preset in ("vllm", "sglang"))


@pytest.mark.parametrize("fmt", WRITERS)
@pytest.mark.parametrize("seed", [11, 12])
def test_random_seed_marks_read_back_exactly(tmp_path, fmt, seed):
    write, name, load = WRITERS[fmt]
    steps = gen.make_steps("seed", seed)
    bundle = load(write(tmp_path / name, steps, marks=True))
    end_ns = int(bundle.kernels["end_ns"].max())
    source, frame, rows = read_back(bundle, sp.parse_step_source("auto", threshold=256), end_ns)
    assert source == st.StepSource("seed", None, True, "CG_DISPATCH", 256)
    assert rows == gen.expected_rows(steps, marks=True, end_us=end_ns // 1000)
    # the same steps and phases as the dispatch list of every view today
    d = ph.build_dispatches(
        pd.DataFrame({"start_ns": [s.start_us * 1000 for s in steps], "name": [s.name for s in steps]}), end_ns=end_ns
    )
    assert frame[["start_ns", "end_ns", "name"]].values.tolist() == d[["start_ns", "end_ns", "name"]].values.tolist()
    assert frame["phase"].tolist() == ph.assign_phases(d, 256).tolist()
    assert frame["padded"].tolist() == d["padded"].tolist()


@pytest.mark.parametrize("fmt", WRITERS)
def test_nested_sglang_and_vllm_ranges_are_one_step(tmp_path, fmt):
    write, name, load = WRITERS[fmt]
    steps = gen.make_steps("sglang", 21, n=20, nested=1.0)
    assert sum(bool(s.inner) for s in steps) >= 15
    bundle = load(write(tmp_path / name, steps))
    assert len(bundle.nvtx_ranges) == len(steps) + sum(len(s.inner) for s in steps)
    source, frame, rows = read_back(bundle, sp.parse_step_source("auto"))
    assert source.preset == "sglang" and rows == gen.expected_rows(steps)
    # a native DECODE name gives no token count: the vLLM-style range of the same iteration does
    filled = [
        r for s, r in zip(steps, rows) if s.inner and s.name.startswith("step[DECODE bs=") and "g_sq=" not in s.name
    ]
    assert filled and all(r["generation_tokens"] is not None for r in filled)
    # the vLLM preset alone reads the inner ranges: one step per iteration too
    _, vframe, _ = read_back(bundle, sp.parse_step_source("vllm"))
    assert len(vframe) == sum(bool(s.inner) for s in steps)  # capture_N_DECODE is no vLLM capture


@pytest.mark.parametrize("fmt", WRITERS)
def test_profiler_steps_around_framework_steps_are_not_steps(tmp_path, fmt):
    write, name, load = WRITERS[fmt]
    steps = gen.make_steps("vllm", 31, capture=False)
    bundle = load(write(tmp_path / name, steps, profiler_steps=True))
    source, _, rows = read_back(bundle, sp.parse_step_source(None))
    assert source.preset == "vllm" and rows == gen.expected_rows(steps)
    source, frame, _ = read_back(bundle, sp.parse_step_source("torch"))
    assert frame["name"].tolist() == [f"ProfilerStep#{i}" for i in range(len(steps))]
    assert set(frame["phase"]) == {"step"}


@pytest.mark.parametrize("fmt", WRITERS)
def test_steps_and_their_kernels_stay_per_process(tmp_path, fmt):
    write, name, load = WRITERS[fmt]
    a = gen.make_steps("trtllm", 41, pid=100, capture=False)
    b = gen.make_steps("trtllm", 42, pid=200, start_us=1100, corr0=10_000, capture=False)  # overlapping in time
    bundle = load(write(tmp_path / name, a + b))
    source, frame, rows = read_back(bundle, sp.parse_step_source(None))
    assert st.step_processes(frame) == [100, 200]
    assert rows == gen.expected_rows(a + b)
    # a launch of process 200 inside a step of process 100 is not that step's
    overlap = [(x, y) for x in a for y in b if x.start_us < y.end_us and y.start_us < x.end_us]
    assert overlap
    stats = st.step_phase_stats(frame[frame["pid"] == 100].reset_index(drop=True))
    assert stats["steps"].sum() == len(a)


def test_capture_is_a_capture_step_left_out_of_the_phase_statistics(tmp_path):
    steps = gen.make_steps("vllm", 51)
    bundle = load_kineto_json(gen.kineto_trace(tmp_path / "t.json", steps))
    _, frame, rows = read_back(bundle, sp.parse_step_source(None))
    caps = [r for r in rows if r["phase"] == "capture"]
    assert [(r["name"], r["batch_size"], r["graph_mode"]) for r in caps] == [
        (s.name, int(s.name.split("_")[1]), s.name.rsplit("_", 1)[1]) for s in steps[:2]
    ]
    g = st.step_kernels(frame, bundle.kernels, bundle.api_calls)
    stats = st.step_phase_stats(frame, g).set_index("phase")
    assert "capture" not in stats.index
    assert stats["steps"].sum() == len(steps) - 2
    serving = frame["phase"] != "capture"
    assert stats["gpu_time_ns"].sum() == g["gpu_time_ns"][serving.to_numpy()].sum()


def test_phase_statistics_exact():
    ints = {
        "context_requests": [0, 0, 2, 0],
        "context_tokens": [0, 0, 900, 0],
        "generation_requests": [4, 5, 0, 6],
        "generation_tokens": [4, None, 0, 6],
        "tokens": [4, None, 900, 6],
        "batch_size": [4, 5, 2, 6],
        "padded": [None] * 4,
    }
    steps = pd.DataFrame(
        {
            "index": range(4),
            "pid": 1,
            "start_ns": [0, 100, 300, 400],
            "end_ns": [100, 300, 400, 1000],
            "duration_ns": [100, 200, 100, 600],
            "name": "x",
            "phase": ["decode", "decode", "prefill", "decode"],
            "graph_mode": None,
            "end_estimated": False,
            **{k: pd.array(v, "Int64") for k, v in ints.items()},
        }
    )[list(st.STEPS)].astype(st.STEPS)
    gpu = pd.DataFrame({"index": range(4), "kernels": [3, 1, 7, 2], "gpu_time_ns": [50, 20, 90, 10]})
    s = st.step_phase_stats(steps, gpu).set_index("phase")
    assert list(s.index) == ["prefill", "decode"]
    assert s.loc["prefill"].tolist() == [1, 2, 900, 100, 100.0, 100.0, 100.0, 100.0, 900 / 100e-9, 7, 90]
    d = s.loc["decode"]
    assert d["steps"] == 3 and d["requests"] == 15 and d["tokens"] is pd.NA
    assert math.isnan(s.at["decode", "tokens_per_s"])
    assert d["total_ns"] == 900 and d["p50_ns"] == 200.0 and d["p90_ns"] == pytest.approx(520.0)
    assert d["kernels"] == 6 and d["gpu_time_ns"] == 80


def test_seed_preset_is_the_dispatch_list_of_today():
    from dashboard.render import dispatches_for

    for trace in (load_trace(SEED), load_trace(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite"))):
        d = dispatches_for(trace, "CG_DISPATCH")
        marks = None if trace.bundle is not None else st.timeline_marks(trace.summary.dispatch_timeline)
        ranges = trace.bundle.nvtx_ranges if trace.bundle is not None else None
        marks = trace.bundle.nvtx_marks if trace.bundle is not None else marks
        source, s = st.build_steps(ranges, marks, sp.parse_step_source(None), end_ns=trace.summary.gpu_end_ns)
        assert source.preset == "seed" and source.auto and source.label == "CG_DISPATCH marks (auto)"
        for c in ("start_ns", "end_ns", "duration_ns", "name", "end_estimated"):
            assert s[c].tolist() == d[c].tolist(), c
        assert s["tokens"].equals(d["tokens"]) and s["padded"].equals(d["padded"])
        assert s["graph_mode"].tolist() == [m or None for m in d["mode"]]
        assert s["phase"].tolist() == ph.assign_phases(d, ph.default_threshold(d["tokens"])).tolist()
    assert len(s) == 46 and s["phase"].value_counts().to_dict() == {"decode": 43, "prefill": 3}


# --- the given real traces --------------------------------------------------------------------------
def real(name):
    b = load_kineto_json((STEPS_DATA if (STEPS_DATA / name).exists() else KINETO) / name)
    return read_back(b, sp.parse_step_source(None))


def test_vllm_decode_replay_is_one_decode_step():
    source, frame, rows = real("rocm_vllm_decode_graph_replay.json.gz")
    assert source.to_dict() == {"preset": "vllm", "rule": None, "auto": True}
    assert rows == [
        {
            "start_ns": 0,
            "end_ns": 2408598,
            "name": "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
            "phase": "decode",
            "context_requests": 0,
            "context_tokens": 0,
            "generation_requests": 32,
            "generation_tokens": 32,
            "tokens": 32,
            "batch_size": 32,
            "graph_mode": None,
            "kernels": 425,
            "gpu_time_ns": 10674517,
        }
    ]
    assert frame["pid"].tolist() == [851]


def test_vllm_capture_trace_is_one_capture_step():
    source, frame, rows = real("rocm_vllm_decode_graph_capture.json.gz")
    assert source.preset == "vllm"
    assert rows == [
        {
            "start_ns": 598172,
            "end_ns": 59005105,
            "name": "capture_32_FULL",
            "phase": "capture",
            "context_requests": None,
            "context_tokens": None,
            "generation_requests": None,
            "generation_tokens": None,
            "tokens": None,
            "batch_size": 32,
            "graph_mode": "FULL",
            "kernels": 7,
            "gpu_time_ns": 19633,
        }
    ]
    assert st.step_phase_stats(frame).empty


def test_vllm_variant_gives_request_counts_and_unknown_tokens():
    source, frame, rows = real("b200_eager.json.gz")
    assert rows == [
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
    ]


def test_profiler_steps_of_a_plain_pytorch_trace():
    source, frame, rows = real("v100_ns_resolution_rank0.pt.trace.json.gz")
    assert source.to_dict() == {"preset": "torch", "rule": None, "auto": True}
    assert [(r["name"], r["start_ns"], r["end_ns"], r["kernels"], r["gpu_time_ns"]) for r in rows] == [
        ("ProfilerStep#101", 95341768, 130457637, 870, 93696680),
        ("ProfilerStep#102", 130495502, 202572976, 870, 93734470),
        ("ProfilerStep#103", 202608979, 298306320, 870, 93601607),
        ("ProfilerStep#104", 298337435, 393888522, 870, 93705249),
        ("ProfilerStep#105", 393922079, 489621116, 870, 93415596),
    ]
    assert {r["phase"] for r in rows} == {"step"}


# --- annotation grammar -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, preset, expected",
    [
        ("execute_new_0_cached_0", "vllm", ("idle", 0, 0, 0, 0, 0, 0, None)),
        ("execute_context_2(14721)_generation_0(0)", "vllm", ("prefill", 2, 14721, 0, 0, 14721, 2, None)),
        ("execute_context_2(6144)_generation_3(3)", "vllm", ("mixed", 2, 6144, 3, 3, 6147, 5, None)),
        ("execute_context_1(a)_generation_2(b)", "vllm", ("mixed", 1, None, 2, None, None, 3, None)),
        (
            "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)",
            "vllm",
            ("mixed", 2, 6144, 3, 3, 6147, 5, None),
        ),
        ("capture_256_PIECEWISE", "vllm", ("capture", None, None, None, None, None, 256, "PIECEWISE")),
        (
            "step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]",
            "sglang",
            ("decode", 0, 0, 64, 128, 128, 64, None),
        ),
        (
            "step[DECODE bs=64 g_sqsq=64 g_sqsk=131072 g_sk=131072]",
            "sglang",
            ("decode", 0, 0, 64, None, None, 64, None),
        ),
        (
            "step[EXTEND bs=2 toks=14721 c_sqsq=108745533 c_sqsk=108745533 c_sk=14721]",
            "sglang",
            ("prefill", 2, 14721, 0, 0, 14721, 2, None),
        ),
        ("step[MIXED bs=3]", "sglang", ("mixed", None, None, None, None, None, 3, None)),
        ("step[DRAFT_EXTEND bs=4]", "sglang", ("draft", None, None, None, None, None, 4, None)),
        ("step[DRAFT_EXTEND_V2 bs=4]", "sglang", ("draft", None, None, None, None, None, 4, None)),
        ("step[SPLIT_PREFILL bs=1]", "sglang", ("prefill", 1, None, 0, 0, None, 1, None)),
        ("step[PREBUILT bs=2]", "sglang", ("step", None, None, None, None, None, 2, None)),
        ("step[TARGET_VERIFY bs=4 toks=16]", "sglang", ("verify", None, None, None, None, 16, 4, None)),
        ("capture_16_DECODE", "sglang", ("capture", None, None, None, None, None, 16, None)),
        ("_forward_step: 0 ctx reqs, 7 gen reqs", "trtllm", ("decode", 0, 0, 7, None, None, 7, None)),
        ("[Executor] _forward_step: 3 ctx reqs, 0 gen reqs", "trtllm", ("prefill", 3, None, 0, 0, None, 3, None)),
        ("CG_DISPATCH:actual=9:mode=FULL:padded=16", "seed", (None, None, None, None, None, 9, None, "FULL")),
    ],
)
def test_annotation_fields(name, preset, expected):
    assert tuple(sp.match_name(name, preset))[:8] == expected


@pytest.mark.parametrize(
    "name, preset",
    [
        ("execute_model", "vllm"),
        ("capture_32_FULL_extra(1)", "vllm"),
        ("gpu_model_runner: forward", "vllm"),
        ("step[decode bs=1]", "sglang"),
        ("_forward_step 3: 2 ctx reqs", "trtllm"),
        ("ProfilerStep#", "torch"),
        ("CG_DISPATCHX", "vllm"),
    ],
)
def test_names_that_are_not_steps(name, preset):
    assert sp.match_name(name, preset) is None


def test_user_rule_with_named_groups(tmp_path):
    rule = r"^fwd (?P<phase>\w+) n=(?P<batch_size>\d+) t=(?P<tokens>\w+)"  # t=x: tokens unknown
    spec = sp.parse_step_source(rule)
    assert spec == sp.StepSpec("rule", rule)
    nvtx = [
        {"start": 0, "end": 100, "eventType": 59, "text": "fwd prefill n=2 t=900"},
        {"start": 100, "end": 150, "eventType": 59, "text": "fwd generation n=8 t=8"},
        {"start": 150, "end": 170, "eventType": 59, "text": "other"},
        {"start": 170, "end": 190, "eventType": 34, "text": "fwd weird n=1 t=x"},
    ]
    from factories import write_nsys_sqlite

    b = load_nsys_sqlite(write_nsys_sqlite(tmp_path / "r.sqlite", nvtx=nvtx))
    source, frame = st.bundle_steps(b, spec, end_ns=200)
    assert source.to_dict() == {"preset": None, "rule": rule, "auto": False} and source.label == f"rule /{rule}/"
    assert frame[["start_ns", "end_ns", "phase", "batch_size", "tokens"]].astype(object).values.tolist() == [
        [0, 100, "prefill", 2, 900],
        [100, 150, "decode", 8, 8],
        [170, 200, "step", 1, pd.NA],
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("vlm", "'vlm': unknown preset; one of auto, seed, vllm, sglang, trtllm, torch"),
        ("(abc", "'(abc': not a regular expression"),
        ("(?P<tokns>\\d+)x", "unknown group name(s) tokns"),
        ("x*", "matches an empty name"),
    ],
)
def test_bad_step_sources(text, message):
    with pytest.raises(sp.StepSourceError, match=None) as exc:
        sp.parse_step_source(text)
    assert message in str(exc.value)


def test_no_annotations_is_no_steps_not_an_error(tmp_path):
    b = load_kineto_json(KINETO / "a100_3streams_event_sync.json.gz")
    source, frame = st.bundle_steps(b, sp.parse_step_source(None))
    assert source.to_dict() == {"preset": None, "rule": None, "auto": True} and frame.empty
    assert list(frame.columns) == list(st.STEPS) and source.label == "no step annotations (auto)"
    assert st.step_kernels(frame, b.kernels, b.api_calls).empty


def test_step_kernels_unit(tmp_path):
    steps = st.empty_steps()
    launches = pd.DataFrame({"kernel_index": [0, 1, 2], "pid": [1, 1, 2], "api_start_ns": [5, 15, 5]})
    steps = pd.concat(
        [
            steps,
            pd.DataFrame(
                {
                    "index": [0, 1],
                    "pid": [1, 2],
                    "start_ns": [0, 0],
                    "end_ns": [10, 10],
                    "duration_ns": [10, 10],
                    "end_estimated": False,
                }
            ),
        ]
    ).astype(st.STEPS)
    assert st.attribute_to_steps(steps, launches, 4).tolist() == [0, st.UNATTRIBUTED, 1, st.UNATTRIBUTED]
    assert np.array_equal(st.attribute_to_steps(steps, launches.iloc[:0], 2), [-1, -1])


def test_a_range_still_open_at_the_end_is_a_step_with_an_estimated_end(tmp_path):
    from factories import write_nsys_sqlite

    nvtx = [
        {"start": 0, "end": 100, "eventType": 59, "text": "execute_context_1(64)_generation_0(0)"},
        {"start": 100, "end": None, "eventType": 59, "text": "execute_context_0(0)_generation_3(3)"},
        {"start": 150, "end": 180, "eventType": 59, "text": "gpu_model_runner: forward"},
    ]
    b = load_nsys_sqlite(write_nsys_sqlite(tmp_path / "open.sqlite", nvtx=nvtx))
    source, frame = st.bundle_steps(b, sp.parse_step_source(None))
    assert source.preset == "vllm"
    # nsys closes an open range at the last NVTX timestamp (180); the sub-step scope is no step
    assert frame[["start_ns", "end_ns", "phase", "tokens", "end_estimated"]].values.tolist() == [
        [0, 100, "prefill", 64, False],
        [100, 180, "decode", 3, True],
    ]
