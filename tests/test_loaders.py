"""Loader tests: every shared trace, and small exports built in code."""

import os
import sqlite3

import numpy as np
import pandas as pd
import pytest

from dashboard import model
from dashboard.analysis.summary import summarize
from dashboard.errors import TraceFormatError, TraceNotFoundError
from dashboard.loaders import load_nsys_sqlite, sniff_format

from factories import GLOBAL_TID_1, write_nsys_sqlite
from paths import NSYS_TRACES, golden_summary, nsys_trace

FRAMES = {
    "kernels": model.KERNELS,
    "api_calls": model.API_CALLS,
    "nvtx_ranges": model.NVTX_RANGES,
    "nvtx_marks": model.NVTX_MARKS,
    "memops": model.MEMOPS,
    "graph_launches": model.GRAPH_LAUNCHES,
}


def assert_schema(bundle):
    for attr, schema in FRAMES.items():
        frame = getattr(bundle, attr)
        assert list(frame.columns) == list(schema), attr
        assert [str(t) for t in frame.dtypes] == stored_dtypes(frame, schema), attr


def stored_dtypes(frame, schema):
    """The schema's dtypes, with the id columns int32 in a non-empty frame (every id of these traces fits)."""
    return ["int32" if c in model.NARROW_IDS and t == "int64" and len(frame) else t for c, t in schema.items()]


def test_ids_are_int32_when_every_value_fits_and_int64_otherwise():
    schema = {"start_ns": "int64", "pid": "int64", "stream_id": "int64", "name": "category"}
    frame = pd.DataFrame(
        {"start_ns": [1, 2], "pid": [2**31 - 1, -(2**31)], "stream_id": [7, 2**31], "name": ["a", "b"]}
    )
    out = model.conform(frame, schema)
    assert [str(t) for t in out.dtypes] == ["int64", "int32", "int64", "category"]
    assert out["pid"].tolist() == [2**31 - 1, -(2**31)] and out["stream_id"].tolist() == [7, 2**31]
    assert model.conform(out, schema)["pid"].dtype == np.int32  # conformed again: kept as it is
    empty = model.conform(frame.iloc[:0], schema)
    assert [str(t) for t in empty.dtypes] == ["int64", "int64", "int64", "category"]


@pytest.mark.parametrize("trace", NSYS_TRACES, ids=lambda p: p.stem)
def test_every_shared_trace_loads_with_canonical_schema(trace):
    bundle = load_nsys_sqlite(trace)
    assert_schema(bundle)
    gold = golden_summary(trace)
    assert len(bundle.kernels) == gold["kernel_count"]
    assert bundle.meta.nsys_version.startswith(trace.name[4:10])  # e.g. "2024.5"
    assert not bundle.kernels["short_name"].astype(str).str.startswith("<unnamed").any()
    assert not bundle.nvtx_ranges["name"].astype(str).str.startswith("<unnamed").any()
    assert (bundle.nvtx_ranges["end_ns"] >= bundle.nvtx_ranges["start_ns"]).all()


@pytest.mark.parametrize("trace", NSYS_TRACES, ids=lambda p: p.stem)
def test_loading_never_changes_the_file(trace, tmp_path):
    copy = tmp_path / trace.name
    copy.write_bytes(trace.read_bytes())
    before = (copy.read_bytes(), os.stat(copy).st_mtime_ns)
    load_nsys_sqlite(copy)
    assert (copy.read_bytes(), os.stat(copy).st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [trace.name]  # no -journal / -wal / -shm


def test_backtrace_duplicates_dropped():
    path = nsys_trace("nsys2022.2_a100_saxpy_mpi_backtraces.sqlite")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    total, dup = con.execute("SELECT count(*), sum(eventClass = 67) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
    con.close()
    assert (total, dup) == (95, 38)
    api = load_nsys_sqlite(path).api_calls
    assert len(api) == 57
    assert not (api["event_class"] == 67).any()


def test_llm_server_nvtx_details():
    b = load_nsys_sqlite(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite"))
    r = b.nvtx_ranges.set_index("name")
    assert len(b.nvtx_marks) == 46
    assert b.nvtx_marks["name"].astype(str).str.startswith("CG_DISPATCH:actual=").all()
    assert len(b.nvtx_ranges) == 148 + 47
    never = r.loc["never_popped"]
    assert never["kind"] == "push/pop" and not bool(never["unclosed"])  # nsys closed it at session end
    assert bool(r.loc["request_lifetime_crossthread", "cross_thread"])
    wait = b.nvtx_ranges[b.nvtx_ranges["name"] == "engine:PLE_wait_for_GPU"]
    assert len(wait) == 46 and set(wait["domain"]) == {"engine"} and set(wait["message"]) == {"PLE_wait_for_GPU"}
    assert set(wait["kind"]) == {"start/end"}
    assert "✓ unicode_range_é" in set(b.nvtx_ranges["name"])
    assert b.kernels.empty and b.api_calls.empty and b.memops.empty  # no CUDA tables at all


def test_tensorrt_registered_strings_and_negative_domain_rows():
    b = load_nsys_sqlite(nsys_trace("nsys2022.4_tensorrt_nvtx_only.sqlite"))
    assert len(b.nvtx_ranges) == 19552 + 2444
    assert (b.nvtx_ranges["start_ns"] > 0).all()  # domain-create rows (start -10.6 s) are not ranges
    assert set(b.nvtx_ranges["domain"]) >= {"TensorRT", "myelin-exec"}


def test_cuda_graph_launch_trace():
    b = load_nsys_sqlite(nsys_trace("nsys2025.5_rtx3060_cuda_graph_launch.sqlite"))
    assert b.graph_launches[["start_ns", "end_ns", "graph_id"]].values.tolist() == [
        [339410404, 339412132, 1],
        [339416612, 339417988, 1],
    ]
    assert len(b.kernels) == 3 and b.kernels["graph_node_id"].isna().all()


def test_metadata_and_gpu_names():
    b = load_nsys_sqlite(nsys_trace("nsys2024.5_a100_cloverleaf.sqlite"))
    assert b.meta.nsys_version == "2024.5.1.113" and b.meta.schema_version == "3.13.2"
    assert b.meta.gpus == {i: "NVIDIA A100-SXM4-80GB" for i in range(4)}
    assert b.nvtx_ranges.empty and list(b.nvtx_ranges.columns) == list(model.NVTX_RANGES)
    assert set(b.memops["kind"].astype(str)) <= {"memcpy HtoD", "memcpy DtoH", "memcpy DtoD"}
    assert len(b.memops) == 279


def test_fixture_missing_tables_give_typed_empty_frames(tmp_path):
    path = write_nsys_sqlite(
        tmp_path / "only_nvtx.sqlite", nvtx=[{"start": 10, "end": 20, "eventType": 59, "text": "a"}]
    )
    b = load_nsys_sqlite(path)
    assert_schema(b)
    assert b.kernels.empty and b.api_calls.empty and b.memops.empty and b.graph_launches.empty
    assert b.nvtx_ranges[["start_ns", "end_ns", "name"]].values.tolist() == [[10, 20, "a"]]


def test_fixture_zero_timestamps_and_zero_length_kernels(tmp_path):
    kernels = [
        {"start": 0, "end": 0},
        {"start": 1000, "end": 1100},
        {"start": 1200, "end": 1300},
        {"start": 0, "end": 0},
        {"start": 1150, "end": 1150},
    ]
    b = load_nsys_sqlite(write_nsys_sqlite(tmp_path / "z.sqlite", kernels=kernels))
    assert b.meta.dropped_zero_ts_kernels == 2
    s = summarize(b)
    assert (s.kernel_count, s.gpu_activity_span_ns, s.gpu_busy_union_ns) == (5, 300, 200)
    assert (s.gpu_start_ns, s.gpu_end_ns) == (1000, 1300)


def test_fixture_names_ids_and_nvtx_rules(tmp_path):
    nvtx = [
        {"start": -500, "end": None, "eventType": 75, "text": "dom", "domainId": 3},
        {"start": 10, "end": 50, "eventType": 59, "textId": "registered", "domainId": 3},
        {"start": 20, "end": None, "eventType": 59, "text": "open"},
        {"start": 30, "end": 25, "eventType": 59, "text": "backwards"},  # end < start: skipped
        {"start": 40, "end": 90, "eventType": 60, "text": "handoff", "endGlobalTid": GLOBAL_TID_1 + 1},
        {"start": 45, "end": None, "eventType": 34, "text": "CG_DISPATCH:actual=7"},
    ]
    b = load_nsys_sqlite(write_nsys_sqlite(tmp_path / "n.sqlite", nvtx=nvtx))
    r = b.nvtx_ranges.set_index("message")
    assert sorted(b.nvtx_ranges["name"]) == ["dom:registered", "handoff", "open"]
    assert r.loc["open", "end_ns"] == 90 and bool(r.loc["open", "unclosed"])
    assert bool(r.loc["handoff", "cross_thread"]) and r.loc["handoff", "kind"] == "start/end"
    assert int(r.loc["registered", "pid"]) == 100 and int(r.loc["registered", "tid"]) == 101
    assert b.nvtx_marks[["ts_ns", "name"]].values.tolist() == [[45, "CG_DISPATCH:actual=7"]]


def test_fixture_kernel_table_without_optional_columns(tmp_path):
    path = tmp_path / "bare.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO StringIds VALUES (1, 'void k<int>()')")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, demangledName INTEGER)")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5, 15, 1)")
    con.commit()
    con.close()
    b = load_nsys_sqlite(path)
    assert_schema(b)
    k = b.kernels.iloc[0]
    assert (k["short_name"], k["name"], k["device_id"], k["stream_id"]) == ("void k<int>()", "void k<int>()", 0, 0)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"this is not sqlite at all", "not a SQLite database"),
    ],
)
def test_bad_files(tmp_path, content, message):
    p = tmp_path / "bad.sqlite"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError, match=message):
        load_nsys_sqlite(p)


def test_sqlite_without_nsys_tables(tmp_path):
    p = tmp_path / "other.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE people (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="not an nsys export.*people"):
        load_nsys_sqlite(p)


def test_truncated_export(tmp_path):
    src = (nsys_trace("nsys2024.6_h100_nvfuser.sqlite")).read_bytes()
    p = tmp_path / "cut.sqlite"
    p.write_bytes(src[: len(src) // 2])
    with pytest.raises(TraceFormatError, match="cut.sqlite"):
        load_nsys_sqlite(p)


def test_missing_and_directory(tmp_path):
    with pytest.raises(TraceNotFoundError, match="no such file"):
        load_nsys_sqlite(tmp_path / "nope.sqlite")
    with pytest.raises(TraceNotFoundError, match="not a regular file"):
        sniff_format(tmp_path)


def test_sniff_format(tmp_path, seed_dict):
    assert sniff_format(NSYS_TRACES[0]) == "nsys-sqlite"
    j = tmp_path / "s.txt"
    j.write_text('\n  {"file": "a.sqlite"}')
    assert sniff_format(j) == "summary-json"  # then refused by the summary loader for its missing keys
    j.write_text("\n  {}")  # no summary key, no traceEvents: none of our formats
    with pytest.raises(TraceFormatError, match=r"^s.txt: a JSON file in none of the formats tracedash reads"):
        sniff_format(j)
    with pytest.raises(TraceFormatError, match="neither"):
        (tmp_path / "x.bin").write_bytes(b"\x00\x01")
        sniff_format(tmp_path / "x.bin")


def test_empty_frame_and_conform():
    f = model.empty_frame(model.KERNELS)
    assert list(f.columns) == list(model.KERNELS) and len(f) == 0
    with pytest.raises(KeyError):
        model.conform(pd.DataFrame({"start_ns": [1]}), model.KERNELS)
    # every call gives a frame of its own: what one caller adds or changes is not in the next one
    f["extra"] = []
    f["start_ns"] = f["start_ns"] + 1
    g = model.empty_frame(model.KERNELS)
    assert g is not f and list(g.columns) == list(model.KERNELS)
    assert [str(t) for t in g.dtypes] == [str(t) for t in f.dtypes[:-1]]
    # conform casts only what differs, and never changes its input
    raw = pd.DataFrame({"start_ns": [5], "name": ["k"], "extra": [0]})
    out = model.conform(raw, {"start_ns": "int64", "name": "category"})
    out.loc[0, "start_ns"] = 7
    assert raw["start_ns"].tolist() == [5] and str(raw["name"].dtype) != "category"
    assert list(out.columns) == ["start_ns", "name"] and out["name"].cat.categories.dtype == "str"


@pytest.mark.parametrize(
    "trace",
    [nsys_trace("nsys2022.2_a100_saxpy_mpi_backtraces.sqlite"), nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")],
    ids=lambda p: p.stem,
)
def test_sqlite3_fallback_reader_gives_the_same_frames(trace, monkeypatch):
    from dashboard.loaders import nsys_reads, sqlite_access

    fast = load_nsys_sqlite(trace)
    monkeypatch.setattr(nsys_reads, "_HAVE_ADBC", False)  # the kernel and CUDA API reads
    monkeypatch.setattr(sqlite_access, "_HAVE_ADBC", False)  # every other table's
    slow = load_nsys_sqlite(trace)
    for attr in FRAMES:
        pd.testing.assert_frame_equal(
            getattr(fast, attr), getattr(slow, attr), check_categorical=False, check_exact=True
        )


def test_fixture_invalid_kernel_rows_are_counted_not_summed(tmp_path):
    from dashboard.analysis.kernel_times import invalid_kernel_count

    kernels = [
        {"start": 100, "end": 200},
        {"start": 500, "end": 100},
        {"start": 300, "end": 400},
        {"start": -5, "end": 10},
    ]
    b = load_nsys_sqlite(write_nsys_sqlite(tmp_path / "bad.sqlite", kernels=kernels))
    s = summarize(b)
    assert (s.kernel_count, s.gpu_activity_span_ns, s.gpu_busy_union_ns) == (4, 300, 200)
    assert invalid_kernel_count(b.kernels) == 2
    assert s.top_kernels.values.tolist() == [["kernel", 4, 200]]  # invalid rows add 0, never negative time


def test_fixture_hand_edited_ids_and_timestamps(tmp_path):
    path = write_nsys_sqlite(
        tmp_path / "odd.sqlite",
        kernels=[{"start": 10, "end": 20}],
        nvtx=[{"start": 5, "end": None, "eventType": 59, "text": "r"}],
        gpus={0: "GPU"},
    )
    con = sqlite3.connect(path)
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES ('zero', 'bad')")
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text) VALUES ('abc', NULL, 59, 'junk')")
    con.commit()
    con.close()
    b = load_nsys_sqlite(path)
    assert b.meta.gpus == {0: "GPU"}
    assert b.nvtx_ranges[["start_ns", "end_ns", "name"]].values.tolist() == [[5, 5, "r"]]


def test_quoted_table_names_are_probed(tmp_path):
    path = write_nsys_sqlite(tmp_path / "q.sqlite", kernels=[{"start": 1, "end": 2}])
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE "we""ird" (a INTEGER)')
    con.commit()
    con.close()
    assert len(load_nsys_sqlite(path).kernels) == 1


def test_fixture_domain_ids_are_per_process(tmp_path):
    tid_a = GLOBAL_TID_1
    tid_b = (1 << 48) | (200 << 24) | 201
    nvtx = [
        {"start": 1, "end": None, "eventType": 75, "text": "alpha", "domainId": 1, "globalTid": tid_a},
        {"start": 1, "end": None, "eventType": 75, "text": "beta", "domainId": 1, "globalTid": tid_b},
        {"start": 10, "end": 20, "eventType": 59, "text": "step", "domainId": 1, "globalTid": tid_a},
        {"start": 10, "end": 30, "eventType": 59, "text": "step", "domainId": 1, "globalTid": tid_b},
        {"start": 40, "end": 50, "eventType": 59, "text": "step", "domainId": 0, "globalTid": tid_b},
    ]
    b = load_nsys_sqlite(write_nsys_sqlite(tmp_path / "d.sqlite", nvtx=nvtx))
    assert sorted(zip(b.nvtx_ranges["name"], b.nvtx_ranges["pid"])) == [
        ("alpha:step", 100),
        ("beta:step", 200),
        ("step", 200),
    ]
    stats = summarize(b).nvtx.set_index("name")
    assert stats.loc["beta:step", "sum_ns"] == 20 and stats.loc["alpha:step", "count"] == 1
