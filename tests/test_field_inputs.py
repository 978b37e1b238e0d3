"""Inputs from the field (issue 26), the loader's side: work of other accelerators counted and named
(class 3), inputs described and other producers named (class 6). Each class: the handed file
(tests/data/cases/field/, copied from shared/cases/field/) plus members built here."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from dashboard.analysis.summary import summarize
from dashboard.cli import main
from dashboard.cli.inspect import format_inspect, inspect_trace
from dashboard.data.trace import load_trace
from dashboard.loaders.kineto_json import load_kineto_json
from dashboard.render import build_view
from dashboard.state import ViewState

from paths import DATA

FIELD = DATA / "cases" / "field"
MTIA = FIELD / "mtia_inference_rank_0.json.gz"  # HTA tests (MIT): an MTIA accelerator, no CUDA


def write(tmp_path: Path, events: list, name: str = "t.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    return p


def ev(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def report_text(trace) -> str:
    from dashboard.render.export import report_for_url

    page = re.sub(r"<script.*?</script>|<style.*?</style>", "", report_for_url(trace, None), flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", page)))


# ---- class 3: device work of other accelerators is counted and named, never "nothing ran" ----------------

MTIA_LINE = (
    "1,313 MTIA device events, not analysed; 823 MTIA runtime calls, not analysed: tracedash measures the GPU "
    "work of CUDA and HIP (kernel and memcpy/memset events) only, so the MTIA device's busy time, idle and "
    "utilisation are not measured (its work is in the trace, not shown)"
)
MTIA_ZEROS = (
    "no CUDA or HIP GPU work recorded: the GPU span, busy union and idle are 0 because this capture's "
    "accelerator work (1,313 MTIA device events, 823 MTIA runtime calls) is not analysed, not because a "
    "device was idle"
)
MTIA_CARD = (
    "not measured: 1,313 MTIA device events, 823 MTIA runtime calls, not analysed (tracedash measures CUDA "
    "and HIP GPU work); no kernel, CUDA API or memcpy/memset rows"
)


def test_the_mtia_trace_names_its_device_work_in_summarize_inspect_overview_and_report(capsys):
    b = load_kineto_json(MTIA)
    assert b.meta.unanalysed_device == (("MTIA device events", 1313), ("MTIA runtime calls", 823))
    assert b.meta.warnings == (MTIA_LINE,)
    assert summarize(b).warnings == (MTIA_LINE, MTIA_ZEROS)
    assert main(["summarize", str(MTIA), "--no-cache"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["warnings"] == [MTIA_LINE, MTIA_ZEROS] and "nothing ran" not in out + err
    info = inspect_trace(MTIA)
    other = next(a for a in info["accounts"] if a["kind"] == "events not shown")
    assert dict(map(tuple, other["skipped"]))["'mtia_ccp_events' events: MTIA device events, not analysed"] == 1313
    assert dict(map(tuple, other["skipped"]))["'mtia_runtime' events: MTIA runtime calls, not analysed"] == 823
    assert info["warnings"] == [MTIA_LINE, MTIA_ZEROS]
    assert "1,313 skipped: 'mtia_ccp_events' events: MTIA device events, not analysed" in format_inspect(info)
    trace = load_trace(MTIA, cache=None)
    cards = {c.label: c for c in build_view(trace, ViewState()).cards}
    for label in ("GPU activity span", "GPU busy (union)", "GPU idle in span", "Utilisation", "Kernels"):
        assert (cards[label].value, cards[label].hint) == ("n/a", MTIA_CARD)
    assert cards["Input warnings"].hint == MTIA_LINE
    text = report_text(trace)
    assert "CUDA was not traced" not in text and "NVTX only" not in text and "nothing ran" not in text
    assert MTIA_CARD in text and MTIA_LINE in text


def test_work_of_other_accelerators_built_in_code_is_counted_and_named(tmp_path):
    # an MTIA-like capture: device events and insight events on the device's track, runtime calls on the host
    events = [
        ev("mtia_ccp_events", "dma_request", 10, 5, pid=17, tid=3),
        ev("mtia_ccp_events", "merge", 20, 5, pid=17),
        ev("mtia_insight", "insight", 30, 1, pid=17),
        ev("mtia_runtime", "runFunction", 5, 2, pid=865),
        ev("user_annotation", "step", 0, 40, pid=865),
    ]
    b = load_kineto_json(write(tmp_path, events))
    assert b.meta.unanalysed_device == (
        ("MTIA device events", 2),
        ("MTIA device insight events", 1),
        ("MTIA runtime calls", 1),
    )
    assert b.meta.warnings == (
        "2 MTIA device events, not analysed; 1 MTIA device insight event, not analysed; 1 MTIA "
        "runtime call, not analysed: tracedash measures the GPU work of CUDA and HIP (kernel "
        "and memcpy/memset events) only, so the MTIA device's busy time, idle and utilisation "
        "are not measured (its work is in the trace, not shown)",
    )
    assert summarize(b).warnings[-1] == (
        "no CUDA or HIP GPU work recorded: the GPU span, busy union and idle are 0 because this capture's accelerator "
        "work (2 MTIA device events, 1 MTIA device insight event, 1 MTIA runtime call) is not analysed, not because "
        "a device was idle"
    )
    # an XPU capture: its kernels are measured; only its runtime calls are not analysed (no device clause)
    xpu = [
        ev("kernel", "gemm_kernel", 10, 30, pid=0, tid=7, device=0, stream=7, correlation=1),
        ev("xpu_runtime", "zeCommandListAppendLaunchKernel", 5, 2, pid=99, correlation=1),
        ev("privateuse1_driver", "drvLaunch", 6, 1, pid=99),
    ]
    xb = load_kineto_json(write(tmp_path, xpu, "xpu.json"))
    assert xb.meta.unanalysed_device == (("XPU runtime calls", 1), ("PrivateUse1 backend driver calls", 1))
    assert xb.meta.warnings == (
        "1 XPU runtime call, not analysed; 1 PrivateUse1 backend driver call, not analysed: "
        "tracedash measures the GPU work of CUDA and HIP (kernel and memcpy/memset events) only",
    )
    s = summarize(xb)
    assert (s.kernel_count, s.gpu_busy_union_ns, s.warnings) == (1, 30_000, xb.meta.warnings)
    # a CUDA trace has no such line
    assert load_kineto_json(write(tmp_path, xpu[:1], "cuda.json")).meta.unanalysed_device == ()


# ---- class 6: every input described, files of other producers named ---------------------------------------


def test_inspect_of_a_kineto_trace_lists_launch_calls_and_gpu_executions_per_process(tmp_path):
    info = inspect_trace(DATA / "kineto" / "a100_3streams_event_sync.json.gz")
    assert info["processes"] == [{"pid": 3727853, "launches": 3, "gpu_executions": 3}]
    assert (
        "launch calls and GPU executions (kernels + graph-level graphs) per process:\n"
        "  pid 3727853             3 launches          3 executed"
    ) in format_inspect(info)
    # built: a CUDA process whose second launch ran no recorded kernel, a HIP process, one that launched nothing
    events = [
        ev("cuda_runtime", "cudaLaunchKernel", 1, 1, pid=10, correlation=1),
        ev("cuda_runtime", "cudaLaunchKernel", 3, 1, pid=10, correlation=2),
        ev("cuda_runtime", "cudaMemcpyAsync", 4, 1, pid=10, correlation=3),
        ev("hip_runtime", "hipExtModuleLaunchKernel", 5, 1, pid=20, correlation=4),
        ev("cuda_runtime", "cudaStreamSynchronize", 6, 1, pid=30, correlation=5),
        ev("kernel", "k1", 10, 5, pid=0, tid=7, device=0, stream=7, correlation=1),
        ev("kernel", "k2", 20, 5, pid=0, tid=7, device=0, stream=7, correlation=4),
    ]
    info = inspect_trace(write(tmp_path, events))
    assert info["processes"] == [
        {"pid": 10, "launches": 2, "gpu_executions": 1},
        {"pid": 20, "launches": 1, "gpu_executions": 1},
    ]
    assert load_kineto_json(tmp_path / "t.json").meta.launches_by_pid == ((10, 2, 1), (20, 1, 1))


def _export_2020(path: Path) -> Path:
    """An nsys export in the 2020.x schema: no metadata table, no mangledName, NVTX without domainId and with
    every column NOT NULL, SCHED_EVENTS with an id column."""
    import sqlite3

    con = sqlite3.connect(path)
    con.executescript("""
    CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO StringIds VALUES (1, 'saxpy'), (2, 'void saxpy(int, float)'), (3, 'cudaLaunchKernel_v7000');
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER NOT NULL, globalPid INTEGER NOT NULL,
      demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER NOT NULL);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 3000, 0, 1, 7, 11, 4242 << 24, 2, 1, 1),
                                                  (5000, 6000, 0, 1, 7, 12, 4242 << 24, 2, 1, 1);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
      globalTid INTEGER NOT NULL, correlationId INTEGER NOT NULL, nameId INTEGER NOT NULL, returnValue INTEGER NOT
      NULL);
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (900, 950, 0, (4242 << 24) | 4242, 11, 3, 0),
                                                   (4900, 4950, 0, (4242 << 24) | 4242, 12, 3, 0);
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventType INTEGER NOT NULL,
      rangeId INTEGER NOT NULL, category INTEGER NOT NULL, color INTEGER NOT NULL, text TEXT NOT NULL,
      globalTid INTEGER NOT NULL, endGlobalTid INTEGER NOT NULL, textId INTEGER NOT NULL);
    INSERT INTO NVTX_EVENTS VALUES (500, 7000, 59, 0, 0, 0, 'step', (4242 << 24) | 4242, 0, 0);
    CREATE TABLE SCHED_EVENTS (id INTEGER PRIMARY KEY AUTOINCREMENT, start INT NOT NULL, cpu INT NOT NULL,
      isSchedIn INT NOT NULL, globalTid INT NOT NULL);
    """)
    con.commit()
    con.close()
    return path


OLD_TRAITS = [
    "no export metadata table (EXPORT_META_DATA or META_DATA_EXPORT), which every export from 2021.5 on has",
    "kernel table without mangledName (added in 2021)",
    "NVTX_EVENTS without domainId (no NVTX domains)",
    "NVTX_EVENTS.end declared NOT NULL (the 2019-2020 schema: default values for missing data)",
    "SCHED_EVENTS with an id column (the 2019-2020 schema)",
]


def test_an_export_older_than_2021_5_is_named_so_with_the_schema_traits_found(tmp_path):
    p = _export_2020(tmp_path / "old2020.sqlite")
    info = inspect_trace(p)
    assert (info["nsys_version"], info["old_schema"]) == ("", OLD_TRAITS)
    assert format_inspect(info).splitlines()[0] == (
        "old2020.sqlite: nsys version unknown: the export predates the supported range (2021.5 to 2026.2), read "
        "with the 2021.5 schema; schema traits found: " + "; ".join(OLD_TRAITS)
    )
    trace = load_trace(p, cache=None)
    assert (trace.summary.kernel_count, trace.summary.gpu_busy_union_ns, trace.summary.gpu_activity_span_ns) == (
        2,
        3_000,
        5_000,
    )  # read correctly: only the words were missing
    card = next(c for c in build_view(trace, ViewState()).cards if c.label == "nsys export")
    assert (card.value, card.hint) == (
        "unknown version",
        "nsys version unknown: no export metadata table, so older "
        "than the supported range (2021.5 to 2026.2) or stripped of that table, read "
        "with the 2021.5 schema",
    )
    # without a trait of an older schema beside the missing table, the words say it may also be a stripped export
    import sqlite3

    stripped = tmp_path / "stripped.sqlite"
    stripped.write_bytes(p.read_bytes())
    con = sqlite3.connect(stripped)
    con.executescript(
        "DROP TABLE SCHED_EVENTS; ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN mangledName INTEGER;"
        "DROP TABLE NVTX_EVENTS;"
    )
    con.close()
    assert format_inspect(inspect_trace(stripped)).splitlines()[0] == (
        "stripped.sqlite: nsys version unknown: no export metadata table, so older than the supported range (2021.5 "
        "to 2026.2) or stripped of that table, read with the 2021.5 schema; schema traits found: " + OLD_TRAITS[0]
    )
    # an export that records its version keeps it, and no trait is listed
    from factories import write_nsys_sqlite

    new = inspect_trace(write_nsys_sqlite(tmp_path / "new.sqlite", kernels=[{"start": 1, "end": 2}]))
    assert (new["old_schema"], format_inspect(new).splitlines()[0]) == (
        [],
        "new.sqlite: nsys 2024.5.1.113 (schema 3.13.2)",
    )


def _fake_nsys(tmp_path: Path, export: Path, monkeypatch) -> None:
    """An ``nsys`` on PATH whose ``export`` writes ``export`` (an SQLite made here) to the --output it is given."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "nsys"
    script.write_text(
        '#!/bin/sh\nout=""\nwhile [ $# -gt 0 ]; do [ "$1" = "--output" ] && out="$2"; shift; done\n'
        f'cp "{export}" "$out"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")


def test_inspect_of_a_qdrep_names_it_and_describes_its_export(tmp_path, monkeypatch):
    from dashboard.data.cache import TraceCache
    from dashboard.loaders.nsys_rep import REP_MAGIC

    from factories import write_nsys_sqlite

    export = write_nsys_sqlite(
        tmp_path / "made.sqlite",
        kernels=[{"start": 100, "end": 400, "correlationId": 1}],
        runtime=[{"start": 50, "end": 90, "name": "cudaLaunchKernel_v7000", "correlationId": 1}],
        version="2021.5.1.77",
    )
    _fake_nsys(tmp_path, export, monkeypatch)
    user = tmp_path / "user"
    user.mkdir()
    report = user / "run.qdrep"
    report.write_bytes(REP_MAGIC + b"\0" * 64)
    info = inspect_trace(report, cache=TraceCache(tmp_path / "cache"))
    text = format_inspect(info)
    assert text.splitlines()[0] == (
        "run.qdrep: Nsight Systems report (.qdrep, the report format of older Nsight "
        "Systems), nsys 2021.5.1.77 (schema 3.13.2)"
    )
    assert (info["file"], info["format"], info["counts"]["kernels"]) == ("run.qdrep", "nsys-rep", 1)
    assert "\nloaders:\n  kernels                  ok       CUPTI_ACTIVITY_KIND_KERNEL (1 rows)" in text
    assert "\ntables (" in text and "  StringIds [2 columns]: id, value" in text
    assert sorted(p.name for p in user.iterdir()) == ["run.qdrep"]  # nothing written next to the report
    assert list((tmp_path / "cache").rglob("*.sqlite")) == []  # the export is gone


def _xspace() -> bytes:
    from bad_inputs import _xspace as make

    return make()


def test_files_of_other_profilers_are_named_with_what_to_use_instead(tmp_path, capsys):
    import gzip

    from dashboard.errors import TraceFormatError
    from dashboard.loaders import sniff_format

    from bad_inputs import _rocprofv3

    cases = {
        "results.json": _rocprofv3(),
        "results.json.gz": gzip.compress(_rocprofv3()),
        "host.xplane.pb": _xspace(),
        "profile.pb": _xspace(),
        "profile.pb.gz": gzip.compress(_xspace()),
    }
    said = {}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(TraceFormatError) as err:
            sniff_format(tmp_path / name)
        said[name] = str(err.value)
        assert main(["summarize", str(tmp_path / name), "--no-cache"]) == 2
        assert capsys.readouterr().err == f"tracedash: error: {said[name]}\n"
    rocprof = (
        "a rocprofv3 (ROCprofiler-SDK) JSON ('rocprofiler-sdk-tool' records), not a format tracedash reads: "
        "record the run with the PyTorch profiler on ROCm instead (torch.profiler writes a Kineto trace with the "
        "HIP kernels and runtime calls, which tracedash reads); rocprofv3's own output opens in Perfetto "
        "(rocprofv3 --output-format pftrace)"
    )
    xplane = (
        "a JAX/TensorFlow profiler XPlane (XSpace protobuf, .xplane.pb), not a format tracedash reads: on NVIDIA "
        "GPUs record the JAX run under Nsight Systems (nsys profile --trace=cuda,nvtx python ...) and open its "
        "SQLite export (nsys export --type sqlite REPORT.nsys-rep); the XPlane itself opens in TensorBoard's or "
        "XProf's trace viewer"
    )
    assert said == {
        "results.json": f"results.json: {rocprof}",
        "results.json.gz": f"results.json.gz: {rocprof}",
        "host.xplane.pb": f"host.xplane.pb: {xplane}",
        "profile.pb": f"profile.pb: {xplane}",
        "profile.pb.gz": f"profile.pb.gz: {xplane}",
    }
    # not every binary file starting with 0x0A is an XPlane; not every gzip names a producer
    (tmp_path / "blob.bin").write_bytes(b"\n/host: not a protobuf")
    (tmp_path / "notes.json.gz").write_bytes(gzip.compress(b"hello"))
    for name, start in (
        ("blob.bin", "blob.bin: neither an nsys SQLite export"),
        ("notes.json.gz", "notes.json.gz: a gzip file that is not a PyTorch profiler"),
    ):
        with pytest.raises(TraceFormatError) as err:
            sniff_format(tmp_path / name)
        assert str(err.value).startswith(start)


def test_ranks_of_another_accelerator_keep_their_device_work_counted(tmp_path):
    from dashboard.data.multirank import load_ranks

    paths = []
    for rank, n in ((0, 2), (1, 3)):
        events = [ev("mtia_ccp_events", "dma_request", 10 * i, 5, pid=17) for i in range(n)]
        events.append(ev("user_annotation", "step", 0, 40, pid=865))
        p = tmp_path / f"r{rank}.json"
        p.write_text(json.dumps({"distributedInfo": {"rank": rank}, "traceEvents": events}), encoding="utf-8")
        paths.append(p)
    trace = load_ranks(paths)
    assert trace.meta.unanalysed_device == (("MTIA device events", 5),)
    assert trace.summary.warnings[-1] == (
        "no CUDA or HIP GPU work recorded: the GPU span, busy union and idle are 0 because this capture's accelerator "
        "work (5 MTIA device events) is not analysed, not because a device was idle"
    )
