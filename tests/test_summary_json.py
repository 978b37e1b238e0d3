"""The seed-format summary JSON loads into the same Summary model the SQLite path produces."""

import json

import pytest

from dashboard.analysis.summary import summary_to_dict
from dashboard.errors import TraceFormatError
from dashboard.loaders import load_summary_json
from dashboard.loaders.summary_json import parse_summary

from paths import SEED


def test_seed_loads_exactly(seed_dict):
    s = load_summary_json(SEED)
    assert s.file == "trace.2.sqlite"
    assert (s.kernel_count, s.graph_node_kernel_count) == (107899, 0)
    assert s.gpu_activity_span_ns == 17457997760 and s.gpu_busy_union_ns == 16999974145
    assert s.gpu_idle_within_span_ns == 458023615
    assert round(s.utilisation_pct, 4) == 97.3764
    assert len(s.api) == 18 and s.api.iloc[0]["name"] == "cudaStreamSynchronize_v3020"
    assert int(s.api.iloc[0]["total_ns"]) == 6388727360
    assert len(s.dispatch_timeline) == 138 and s.dispatch_timeline["start_ns"].is_monotonic_increasing
    assert s.top_kernels.iloc[0].tolist() == ["device_kernel", 4416, 5785133961]
    assert s.gpu_start_ns is None  # a summary carries no absolute GPU window


def test_seed_round_trips(seed_dict):
    back = summary_to_dict(load_summary_json(SEED))
    assert list(back) == [*seed_dict, "warnings"] and back["warnings"] == []  # the seed has no warnings list
    assert back["api"].keys() == seed_dict["api"].keys()
    for k, (count, total) in seed_dict["api"].items():
        assert back["api"][k][0] == count and abs(back["api"][k][1] - total) <= 1e-9
    assert back["dispatch"] == seed_dict["dispatch"]
    assert back["dispatch_timeline"] == sorted(seed_dict["dispatch_timeline"], key=lambda d: (d["start_ns"], d["name"]))
    assert abs(back["gpu_idle_within_span_s"] - seed_dict["gpu_idle_within_span_s"]) <= 1e-9


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ('{"gpu_activity_span_s": 1.0,', "malformed JSON at line 1"),
        ('{"a": 1,}', "malformed JSON"),
        ('{"file": "x"}', "missing key"),
        ("[1, 2]", "must be an object"),
    ],
)
def test_bad_json_text(tmp_path, text, message):
    p = tmp_path / "s.json"
    p.write_text(text)
    with pytest.raises(TraceFormatError, match=message):
        load_summary_json(p)


def test_invalid_utf8(tmp_path):
    p = tmp_path / "s.json"
    p.write_bytes(b'{"file": "\xff"}')
    with pytest.raises(TraceFormatError, match="not UTF-8"):
        load_summary_json(p)


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"api": ["x"]}, "'api' must be an object"),
        ({"api": {"cuX": [1]}}, r"api\['cuX'\] must be \[count, total_s\]"),
        ({"kernel_count": "many"}, "kernel_count must be an integer"),
        ({"gpu_busy_union_s": float("nan")}, "finite number"),
        ({"nvtx": {"r": {"count": 1}}}, "lacks 'sum_s'"),
        ({"dispatch_timeline": [{"name": "x"}]}, "needs start_ns and name"),
        ({"top_kernels": [["k", 3]]}, r"top_kernels\[0\]"),
    ],
)
def test_wrong_shapes_name_the_key(seed_dict, patch, message):
    with pytest.raises(TraceFormatError, match=message):
        parse_summary({**seed_dict, **patch}, "seed.json")


def test_optional_keys_default_to_empty():
    s = parse_summary({"gpu_activity_span_s": 2.0, "gpu_busy_union_s": 1.5, "kernel_count": 3}, "min.json")
    assert s.file == "min.json" and s.api.empty and s.nvtx.empty and s.dispatch_timeline.empty
    assert s.gpu_idle_within_span_ns == 500000000
    assert json.loads(json.dumps(summary_to_dict(s)))["top_kernels"] == []


def test_truncated_json_message_is_complete(tmp_path, seed_dict):
    text = json.dumps(seed_dict, indent=2)
    cut = text[: text.index('"', text.index('"top_kernels"') + 20) + 5]  # inside a kernel name
    p = tmp_path / "cut.json"
    p.write_text(cut)
    line = cut.count("\n") + 1
    column = len(cut) - cut.rindex("\n") - 5
    with pytest.raises(TraceFormatError) as err:
        load_summary_json(p)
    assert str(err.value) == (
        f"cut.json: malformed JSON at line {line}, column {column}: unterminated string (the file may be truncated)"
    )


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"a": 1 "b": 2}', "line 1, column 9: expected ',' between items"),
        ('{"a": 1} x', "line 1, column 10: extra data after the JSON value"),
        ('{"a": 1,\n', "line 2, column 1: expected a key in double quotes (the file may be truncated)"),
        ('{"a": ', "line 1, column 7: expected a value (the file may be truncated)"),
    ],
)
def test_json_error_messages_are_phrases(tmp_path, text, problem):
    p = tmp_path / "s.json"
    p.write_text(text)
    with pytest.raises(TraceFormatError) as err:
        load_summary_json(p)
    assert str(err.value) == f"s.json: malformed JSON at {problem}"


def test_warnings_round_trip_and_unknown_keys_are_reported(tmp_path, seed_dict):
    from dashboard.data.trace import load_trace

    p = tmp_path / "s.json"
    p.write_text(
        json.dumps(
            {**seed_dict, "warnings": ["pid 200: 50 launches, 0 kernels (possible capture gap)"], "extra_key": 1}
        )
    )
    t = load_trace(p)
    assert t.summary.warnings == (
        "pid 200: 50 launches, 0 kernels (possible capture gap)",
        "summary JSON: 1 unknown top-level key(s) ignored: 'extra_key'",
    )
    assert summary_to_dict(t.summary)["warnings"] == list(t.summary.warnings)
    assert t.meta.warnings == t.summary.warnings
    assert [(a.kind, a.read, a.loaded) for a in t.meta.accounts] == [
        ("CUDA API names", 18, 18),
        ("NVTX range names", len(seed_dict["nvtx"]), len(seed_dict["nvtx"])),
        ("dispatch marks", 138, 138),
        ("top kernels", 20, 20),
    ]
