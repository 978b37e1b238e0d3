"""Property fuzz (issue #6): the JSON loaders and the URL-state parser let no exception escape other
than the project's own input error (``TraceError``); the state parser, documented as never
raising, lets none escape at all. Derandomized, so a run is repeatable."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.data.trace import load_trace
from dashboard.errors import TraceError
from dashboard.loaders.summary_json import load_summary_json, parse_summary
from dashboard.model import Summary
from dashboard.state import ViewState, from_params, from_query, to_query

from paths import SEED

FUZZ = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Through load_trace (parse + summary of every frame, ~0.1 s an example): fewer examples; the parser alone
# (test_kineto_parser_raises_only_its_own_error) keeps FUZZ's 250 over the same mutations.
FUZZ_PIPELINE = settings(FUZZ, max_examples=100)

SEED_DATA = json.loads(SEED.read_text(encoding="utf-8"))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def _paths(value, prefix=()):
    """Every path (tuple of keys/indexes) into a JSON value, the root included."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):  # a few items of each list are enough
            yield from _paths(v, (*prefix, i))


SEED_PATHS = list(_paths(SEED_DATA))


def _mutate(data, path, action, value):
    """Replace, delete or wrap the value at ``path`` of a deep copy of ``data``."""
    out = copy.deepcopy(data)
    if not path:
        return value
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if action == "replace":
        parent[key] = value
    elif action == "delete":
        del parent[key]
    else:  # "wrap": the right value, in the wrong container
        parent[key] = [parent[key]]
    return out


mutations = st.tuples(st.sampled_from(SEED_PATHS), st.sampled_from(("replace", "delete", "wrap")), json_values)


@FUZZ
@given(mutations)
def test_summary_parser_on_mutated_seed(mutation):
    data = _mutate(SEED_DATA, *mutation)
    try:
        s = parse_summary(data, "fuzz.json")
    except TraceError as exc:
        assert str(exc).startswith("fuzz.json: ") and "\n" not in str(exc)
        return
    assert isinstance(s, Summary)
    assert 0 <= s.gpu_busy_union_ns <= s.gpu_activity_span_ns + 1 and s.kernel_count >= 0


@FUZZ
@given(json_values)
def test_summary_parser_on_any_json_value(value):
    try:
        parse_summary(value, "any.json")
    except TraceError:
        pass


def _dumps(data) -> bytes:
    return json.dumps(data, allow_nan=True).encode("utf-8")


SEED_BYTES = _dumps(SEED_DATA)

byte_edits = st.one_of(
    st.binary(max_size=300),  # arbitrary bytes
    st.tuples(st.integers(0, len(SEED_BYTES)), st.binary(max_size=8)).map(  # seed with bytes spliced in
        lambda t: SEED_BYTES[: t[0]] + t[1] + SEED_BYTES[t[0] + len(t[1]) :]
    ),
    st.integers(0, len(SEED_BYTES)).map(lambda n: SEED_BYTES[:n]),  # seed cut anywhere
    st.binary(max_size=60).map(lambda b: b"{" + b),  # sniffed as JSON: every JSON loader is reached
    mutations.map(lambda m: _dumps(_mutate(SEED_DATA, *m))),
)


@FUZZ
@given(byte_edits)
def test_summary_loader_on_bytes(tmp_path, data):
    p = tmp_path / "fuzz.json"
    p.write_bytes(data)
    try:
        load_summary_json(p)
    except TraceError as exc:
        assert "fuzz.json" in str(exc)


@FUZZ
@given(byte_edits)
def test_load_trace_on_bytes(tmp_path, data):
    """Through format sniffing, so whichever loader the bytes select (summary, Kineto, SQLite) is fuzzed."""
    p = tmp_path / "fuzz.json"
    p.write_bytes(data)
    try:
        load_trace(p)
    except TraceError as exc:
        assert "fuzz.json" in str(exc)
    assert p.read_bytes() == data


def test_mutation_helper_reaches_deep_values():
    paths = set(SEED_PATHS)
    assert ("api", "cudaStreamSynchronize_v3020", 1) in paths and ("dispatch_timeline", 0, "start_ns") in paths
    assert _mutate({"a": [1, 2]}, ("a", 1), "wrap", None) == {"a": [1, [2]]}


# ---- URL state ------------------------------------------------------------------------------------------------

KEYS = (
    "trace",
    "tab",
    "t0_ns",
    "t1_ns",
    "lanes",
    "threshold",
    "prefix",
    "busy",
    "sort",
    "kernel",
    "kernel_names",
    "hide_devices",
    "group",
    "gap_us",
    "v",
)
hostile_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            " ",
            "nan",
            "inf",
            "-inf",
            "1e999",
            "-0",
            "0x10",
            "1_000",
            "9" * 30,
            "-" + "9" * 19,
            "%00",
            "\x00",
            "a\nb",
            "../../etc/passwd",
            "<script>x</script>",
            "gpu,,nvtx",
            ",",
            "name@0123abcd",
            "name@0123ABCD",
            "-total_ns",
            "--count",
            "full",
            "1",
            "true",
        ]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
param_values = st.one_of(
    hostile_text, st.lists(hostile_text, max_size=3), st.none(), st.integers(), st.floats(), st.booleans(), json_values
)


def _check_state(state):
    assert isinstance(state, ViewState)
    q = to_query(state)
    again = from_query(q)  # what a parser accepts must be written canonically and read back equal
    assert again == state and again.warnings == ()
    assert to_query(again) == q
    for w in state.warnings:
        assert isinstance(w, str) and "\n" not in w and len(w) < 400


@FUZZ
@given(st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), param_values, max_size=8))
def test_from_params_never_raises_and_round_trips(params):
    _check_state(from_params(params))


@FUZZ
@given(
    st.lists(st.tuples(st.sampled_from(KEYS), hostile_text), max_size=8),
    st.sampled_from(["", "?", "??"]),
    st.sampled_from(["&", ";", "&&"]),
)
def test_from_query_never_raises_and_round_trips(pairs, lead, sep):
    from urllib.parse import quote

    query = lead + sep.join(f"{k}={quote(v, safe='')}" for k, v in pairs)
    state = from_query(query)
    _check_state(state)
    if lead in ("", "?") and sep == "&":
        for key, value in pairs:  # a value for a known key is either taken or reported, never dropped silently
            if key in ("tab", "busy", "kernel_names") and value != getattr(ViewState(), key):
                first = next(v for k, v in pairs if k == key)
                if first == value:
                    assert getattr(state, key) == value or any(f"{key}=" in w for w in state.warnings)


@FUZZ
@given(st.binary(max_size=200))
def test_from_query_on_undecodable_bytes(raw):
    _check_state(from_query(raw.decode("latin-1")))
    _check_state(from_query(raw.decode("utf-8", "surrogateescape")))


# ---- Kineto (PyTorch profiler) JSON, when that loader is present ----------------------------------------------

KINETO_SEED = {
    "schemaVersion": 1,
    "displayTimeUnit": "ms",
    "baseTimeNanoseconds": 1700000000000000000,
    "traceEvents": [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 7,
            "tid": 7,
            "ts": 100.0,
            "dur": 5.5,
            "args": {"correlation": 1},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm",
            "pid": 0,
            "tid": 7,
            "ts": 110.25,
            "dur": 20.0,
            "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [128, 1, 1], "block": [256, 1, 1]},
        },
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": 0,
            "tid": 7,
            "ts": 131.0,
            "dur": 3.0,
            "args": {"device": 0, "stream": 7, "bytes": 4096},
        },
        {"ph": "B", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 90.0},
        {"ph": "E", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 140.0},
        {"ph": "i", "cat": "user_annotation", "name": "CG_DISPATCH:actual=1", "pid": 7, "tid": 7, "ts": 95.0},
        {"ph": "s", "cat": "ac2g", "id": 1, "pid": 7, "tid": 7, "ts": 100.0},
        {"ph": "f", "cat": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 110.25, "bp": "e"},
    ],
}
KINETO_PATHS = list(_paths(KINETO_SEED))


@FUZZ_PIPELINE
@given(st.tuples(st.sampled_from(KINETO_PATHS), st.sampled_from(("replace", "delete", "wrap")), json_values))
def test_kineto_trace_on_mutated_events(tmp_path, mutation):
    """Through ``load_trace`` (what the CLI and the page call); the file keeps ``traceEvents`` so it
    is sniffed as Kineto whatever the mutation."""
    pytest.importorskip("dashboard.loaders.kineto_json")
    data = _mutate(KINETO_SEED, *mutation)
    if not (isinstance(data, dict) and "traceEvents" in data):
        data = {"traceEvents": [], "fuzzed": data}
    p = tmp_path / "k.json"
    p.write_bytes(_dumps(data))
    try:
        bundle = load_trace(p).bundle
    except TraceError as exc:
        assert str(exc).startswith("k.json: ")
        return
    for frame in (bundle.kernels, bundle.api_calls, bundle.memops, bundle.nvtx_ranges):
        if len(frame):
            assert (frame["end_ns"] >= frame["start_ns"]).all()


def test_kineto_seed_loads(tmp_path):
    """The fuzz seed itself is a valid trace, so mutations start from every frame being filled."""
    pytest.importorskip("dashboard.loaders.kineto_json")
    p = tmp_path / "k.json"
    p.write_bytes(_dumps(KINETO_SEED))
    b = load_trace(p).bundle
    assert b.kernels[["start_ns", "end_ns"]].values.tolist() == [[20_250, 40_250]]
    assert b.nvtx_ranges["name"].tolist() == ["ProfilerStep#1"]
    assert len(b.memops) == 1 and len(b.api_calls) == 1 and len(b.nvtx_marks) == 1


@FUZZ
@given(st.tuples(st.sampled_from(KINETO_PATHS), st.sampled_from(("replace", "delete", "wrap")), json_values))
def test_kineto_parser_raises_only_its_own_error(mutation):
    """The parser itself (not ``load_trace``'s safety net, which would turn a TypeError into a vague
    "cannot be read"): a malformed event is skipped or named, never a Python error."""
    from dashboard.loaders.kineto_json import parse_kineto

    data = _mutate(KINETO_SEED, *mutation)
    try:
        bundle = parse_kineto(data, "k.json")
    except TraceError as exc:
        assert str(exc).startswith("k.json: ") and "Error" not in str(exc)
        return
    assert (bundle.kernels["end_ns"] >= bundle.kernels["start_ns"]).all()
