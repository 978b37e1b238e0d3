"""A corpus of bad inputs, written in code into a temporary folder (issue #6, "Bad input").

Each ``Case`` writes one file (or folder) with ``make(dir) -> Path`` and says what must happen:
``error`` is a fragment of the message every surface (loader, CLI, page) must show, or None for
inputs that must load (with the exact counts the tests check). SQLite variants start from
``factories.write_nsys_sqlite`` and are then damaged with plain ``sqlite3`` / byte edits.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from factories import write_nsys_sqlite

CENTURY_NS = 100 * 365 * 86_400 * 10**9  # 100 years: 3.1536e18 ns, still below 2**62
SCRIPT_NAME = "<script>window.__pwned=1</script>"
IMG_NAME = '<img src=x onerror="window.__pwned=2">'
LONG_NAME = "k" * 9_990 + "_long_name"  # 10,000 characters


@dataclass(frozen=True)
class Case:
    id: str
    make: Callable[[Path], Path]
    error: str | None  # message fragment for inputs that must be refused; None: must load


def _valid(path: Path, n: int = 2_000) -> Path:
    """A valid multi-page export: ``n`` kernels, one dispatch mark per 100, a runtime call each."""
    kernels = [
        {"start": 1_000 + 10 * i, "end": 1_005 + 10 * i, "correlationId": i + 1, "shortName": f"kern_{i % 7}"}
        for i in range(n)
    ]
    runtime = [
        {"start": 990 + 10 * i, "end": 995 + 10 * i, "name": "cudaLaunchKernel_v7000", "correlationId": i + 1}
        for i in range(n)
    ]
    nvtx = [
        {"start": 1_000 + 1_000 * j, "eventType": 34, "text": f"CG_DISPATCH:actual={1600 if j % 2 else 1}"}
        for j in range(n // 100)
    ]
    return write_nsys_sqlite(path, kernels=kernels, runtime=runtime, nvtx=nvtx, gpus={0: "NVIDIA H100"})


def _bytes(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        (d / name).write_bytes(data)
        return d / name

    return make


def _no_nsys_tables(d: Path) -> Path:
    p = d / "plain.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE people (id INTEGER, name TEXT)")
    con.execute("INSERT INTO people VALUES (1, 'ada')")
    con.commit()
    con.close()
    return p


def _truncated(d: Path) -> Path:
    full = _valid(d / "full.tmp")
    data = full.read_bytes()
    full.unlink()
    p = d / "truncated.sqlite"
    p.write_bytes(data[: len(data) // 2])
    return p


def _corrupt_page(d: Path) -> Path:
    """Header and schema page kept; every page from the second quarter of the file on is garbage."""
    full = _valid(d / "full.tmp")
    data = bytearray(full.read_bytes())
    full.unlink()
    page = int.from_bytes(data[16:18], "big")
    first = (len(data) // page) // 4
    for i in range(first * page, len(data) - page, page):
        data[i : i + page] = bytes([0xA5]) * page
    p = d / "corrupt.sqlite"
    p.write_bytes(bytes(data))
    return p


def _no_short_name(d: Path) -> Path:
    p = write_nsys_sqlite(
        d / "no_shortname.sqlite",
        kernels=[
            {"start": 100, "end": 200, "shortName": "gemm", "demangledName": "void gemm<128>(float*)"},
            {"start": 300, "end": 350, "shortName": "relu", "demangledName": "void relu(float*)"},
        ],
    )
    con = sqlite3.connect(p)
    con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN shortName")
    con.commit()
    con.close()
    return p


def _end_before_start(d: Path) -> Path:
    return write_nsys_sqlite(
        d / "end_before_start.sqlite",
        kernels=[
            {"start": 100, "end": 200, "shortName": "good"},
            {"start": 500, "end": 400, "shortName": "backwards"},
            {"start": 300, "end": 350, "shortName": "good"},
            {"start": 900, "end": 10, "shortName": "backwards"},
        ],
    )


def _centuries(d: Path) -> Path:
    return write_nsys_sqlite(
        d / "centuries.sqlite",
        kernels=[
            {"start": 1_000, "end": 2_000, "shortName": "good"},
            {"start": 1_500, "end": 1_500 + CENTURY_NS, "shortName": "forever"},
            {"start": 3_000, "end": 4_000, "shortName": "good"},
        ],
        nvtx=[
            {"start": 900, "end": 900 + CENTURY_NS, "eventType": 59, "text": "eternal_range"},
            {"start": 1_000, "end": 4_000, "eventType": 59, "text": "step"},
        ],
    )


def _unconstrained(path: Path, table: str) -> sqlite3.Connection:
    """Reopen ``path`` with ``table`` copied into a table without NOT NULL constraints."""
    con = sqlite3.connect(path)
    con.execute(f"ALTER TABLE {table} RENAME TO old_t")
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM old_t")
    con.execute("DROP TABLE old_t")
    return con


def _null_times(d: Path) -> Path:
    """NULL, NaN (stored as NULL) and text 'NaN' in start/end of kernels, API calls, memcpy and NVTX;
    NVTX ranges with an end beyond 2**62 ns or a text end, and one open range (NULL end)."""
    p = write_nsys_sqlite(
        d / "null_times.sqlite",
        kernels=[
            {"start": 100, "end": 200, "shortName": "ok", "correlationId": 1},
            {"start": 300, "end": 400, "shortName": "null_start", "correlationId": 2},
            {"start": 500, "end": 600, "shortName": "null_end", "correlationId": 3},
            {"start": 700, "end": 800, "shortName": "nan_text", "correlationId": 4},
            {"start": 900, "end": 1_000, "shortName": "ok", "correlationId": 5},
        ],
        runtime=[
            {"start": 90, "end": 95, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
            {"start": 290, "end": 295, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
        ],
        memcpy=[{"start": 210, "end": 250}, {"start": 260, "end": 280}],
        nvtx=[
            {"start": 50, "end": 1_100, "eventType": 59, "text": "outer"},
            {"start": 60, "end": 70, "eventType": 59, "text": "null_start"},
            {"start": 70, "end": 2**62 + 5, "eventType": 59, "text": "absurd_end"},
            {"start": 75, "end": 80, "eventType": 59, "text": "text_end"},
            {"start": 80, "end": None, "eventType": 59, "text": "open"},
        ],
    )
    con = _unconstrained(p, "CUPTI_ACTIVITY_KIND_KERNEL")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL WHERE correlationId = 2")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = ? WHERE correlationId = 3", (float("nan"),))
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'NaN', \"end\" = 'NaN' WHERE correlationId = 4")
    con.commit()
    con.close()
    con = _unconstrained(p, "CUPTI_ACTIVITY_KIND_RUNTIME")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = NULL WHERE correlationId = 2")
    con.commit()
    con.close()
    con = _unconstrained(p, "CUPTI_ACTIVITY_KIND_MEMCPY")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = NULL WHERE start = 260")
    con.commit()
    con.close()
    con = _unconstrained(p, "NVTX_EVENTS")
    con.execute("UPDATE NVTX_EVENTS SET start = NULL WHERE text = 'null_start'")
    con.execute("UPDATE NVTX_EVENTS SET \"end\" = 'soon' WHERE text = 'text_end'")
    con.commit()
    con.close()
    return p


def _long_names(d: Path) -> Path:
    return write_nsys_sqlite(
        d / "long_names.sqlite",
        kernels=[{"start": 100, "end": 200, "shortName": LONG_NAME, "demangledName": "void " + LONG_NAME + "()"}],
        runtime=[{"start": 90, "end": 95, "name": LONG_NAME}],
        nvtx=[
            {"start": 50, "end": 300, "eventType": 59, "text": LONG_NAME},
            {"start": 60, "eventType": 34, "text": "CG_DISPATCH:" + LONG_NAME},
        ],
    )


def _html_names(d: Path) -> Path:
    return write_nsys_sqlite(
        d / "html_names.sqlite",
        kernels=[
            {"start": 1_000, "end": 2_000, "shortName": SCRIPT_NAME, "demangledName": IMG_NAME},
            {"start": 2_500, "end": 2_600, "shortName": IMG_NAME, "demangledName": SCRIPT_NAME},
        ],
        runtime=[{"start": 900, "end": 950, "name": SCRIPT_NAME}],
        nvtx=[
            {"start": 800, "end": 3_000, "eventType": 59, "text": IMG_NAME},
            {"start": 850, "end": 2_900, "eventType": 60, "text": SCRIPT_NAME},
            {"start": 950, "eventType": 34, "text": "CG_DISPATCH:actual=7:mode=" + IMG_NAME},
        ],
        gpus={0: SCRIPT_NAME},
    )


def _summary_html_names(d: Path) -> Path:
    """A seed-format summary whose names (NVTX, kernels, API calls, dispatches) are HTML/JS or 10,000 long."""
    data = {
        **SEED_MIN,
        "kernel_count": 2,
        "api": {SCRIPT_NAME: [1, 0.25], LONG_NAME: [2, 0.5]},
        "nvtx": {
            IMG_NAME: {"count": 1, "sum_s": 1.0, "union_s": 1.0, "gpu_overlap_s": 0.5},
            LONG_NAME: {"count": 1, "sum_s": 0.5, "union_s": 0.5, "gpu_overlap_s": 0.0},
        },
        "top_kernels": [[SCRIPT_NAME, [1, 0.75]], [IMG_NAME, [1, 0.5]]],
        "dispatch": {"CG_DISPATCH:actual=1:mode=" + IMG_NAME: 1, "CG_DISPATCH:actual=1600:mode=NONE": 1},
        "dispatch_timeline": [
            {"start_ns": 0, "name": "CG_DISPATCH:actual=1600:mode=NONE"},
            {"start_ns": 1_000_000, "name": "CG_DISPATCH:actual=1:mode=" + IMG_NAME},
        ],
    }
    p = d / "summary_html_names.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def _directory(d: Path) -> Path:
    p = d / "a_folder.sqlite"
    p.mkdir()
    return p


def _cut_gzip() -> bytes:
    """A gzipped JSON head cut inside its data, after exactly 2,000 bytes of it (stored, not deflated, so the
    bytes cut are the data's): what a copy cut short by a full disk or an interrupted upload leaves."""
    data = b'{"schemaVersion": 1, "deviceProperties": [], "pad": "' + b"x" * 4000 + b'"}'
    packer = zlib.compressobj(level=0, wbits=31)
    whole = packer.compress(data) + packer.flush()
    return whole[: 10 + 5 + 2000]  # gzip header, stored block header, 2,000 data bytes


def _rocprofv3() -> bytes:
    """A rocprofv3 (ROCprofiler-SDK) ``--output-format json`` file: its records under 'rocprofiler-sdk-tool'."""
    tool = {
        "metadata": {"pid": 4242, "init_time": 1000, "fini_time": 9000},
        "agents": [{"node_id": 1, "type": 2, "name": "gfx942"}],
        "kernel_symbols": [{"kernel_id": 1, "kernel_name": "_Z6squarePfi.kd", "formatted_kernel_name": "square"}],
        "buffer_records": {
            "kernel_dispatch": [
                {
                    "start_timestamp": 2000,
                    "end_timestamp": 3000,
                    "correlation_id": {"internal": 1},
                    "dispatch_info": {"kernel_id": 1, "dispatch_id": 1},
                }
            ],
            "hip_api": [],
            "memory_copy": [],
        },
        "callback_records": {},
        "strings": {"buffer_records": []},
    }
    return json.dumps({"rocprofiler-sdk-tool": [tool]}).encode()


def _xspace() -> bytes:
    """A JAX/TensorFlow profiler XSpace protobuf (what ``jax.profiler.trace`` writes as HOST.xplane.pb): two
    planes, each with id (field 1) and name (field 2), serialised by hand (field 1 of XSpace: planes)."""
    out = b""
    for pid, name in ((1, b"/host:CPU"), (2, b"/device:GPU:0")):
        plane = b"\x08" + bytes([pid]) + b"\x12" + bytes([len(name)]) + name
        out += b"\x0a" + bytes([len(plane)]) + plane
    return out + b"\x22\x04host"  # hostnames (field 4)


SEED_MIN = {"gpu_activity_span_s": 2.0, "gpu_busy_union_s": 1.5, "kernel_count": 3}
_GZ = gzip.compress(b'{"traceEvents": []}' * 100)

# Cases the loader must refuse: (id, maker, message fragment after "<file name>: ").
REFUSED = [
    Case("empty", _bytes("empty.sqlite", b""), "the file is empty (0 bytes)"),
    Case(
        "text_named_sqlite",
        _bytes("notes.sqlite", b"just some notes\n"),
        "not a SQLite database (no 'SQLite format 3' header)",
    ),
    Case(
        "sqlite_header_cut",  # QA: inspect said "no 'SQLite format 3' header" of a file that starts with it
        _bytes("cut_header.sqlite", b"SQLite format 3"),
        "starts like a SQLite database but its header is cut or damaged (15 bytes: a SQLite file is at least 512); "
        "export the nsys report again: nsys export --type sqlite REPORT.nsys-rep",
    ),
    Case("sqlite_without_nsys_tables", _no_nsys_tables, "a SQLite database but not an nsys export (found: people)"),
    Case("truncated_half", _truncated, "the SQLite file is damaged or truncated"),
    Case("corrupt_pages", _corrupt_page, "the SQLite file is damaged or truncated"),
    Case(
        "json_truncated",
        _bytes("cut.json", json.dumps(SEED_MIN).encode()[:30]),
        "malformed JSON at line 1, column 30: unterminated string (the file may be truncated)",
    ),
    Case(
        "json_trailing_comma",
        _bytes("comma.json", b'{"gpu_activity_span_s": 2.0, "kernel_count": 3,}'),
        "malformed JSON at line 1, column 48",
    ),
    Case(
        "json_invalid_escape",
        _bytes("escape.json", b'{"file": "a\\qb", "kernel_count": 3}'),
        "malformed JSON at line 1, column 12: invalid backslash escape in a string",
    ),
    Case(
        "json_control_character",
        _bytes("control.json", b'{"file": "a\x01b", "kernel_count": 3}'),
        "malformed JSON at line 1, column 12: a control character (e.g. a raw newline or tab) inside a string",
    ),
    Case(
        "json_invalid_utf8",
        _bytes("latin1.json", b'{"file": "caf\xe9", "kernel_count": 3}'),
        "not UTF-8 text (invalid byte at offset 13)",
    ),
    Case(
        "json_missing_keys",
        _bytes("partial.json", b'{"gpu_activity_span_s": 2.0}'),
        "not a tracedash summary: missing key(s) gpu_busy_union_s, kernel_count",
    ),
    Case(
        "json_list_for_dict",
        _bytes("listy.json", json.dumps({**SEED_MIN, "api": [["cuX", 1, 0.5]]}).encode()),
        "'api' must be an object, got list",
    ),
    Case(
        "json_wrong_type",
        _bytes("wrongtype.json", json.dumps({**SEED_MIN, "kernel_count": "3"}).encode()),
        "kernel_count must be an integer, got '3'",
    ),
    Case("directory", _directory, "not a regular file"),
    # JSON in UTF-16 (what Windows PowerShell's `>` writes), with and without a byte-order mark, and gzipped
    Case(
        "json_utf16_bom",
        _bytes("ps.json", json.dumps({"traceEvents": []}).encode("utf-16")),
        "a JSON file in UTF-16; tracedash reads JSON in UTF-8",
    ),
    Case(
        "json_utf16le_no_bom",
        _bytes("ps_le.json", json.dumps(SEED_MIN).encode("utf-16-le")),
        "a JSON file in UTF-16; tracedash reads JSON in UTF-8",
    ),
    Case(
        "gzip_utf16",
        _bytes("ps.json.gz", gzip.compress(json.dumps({"traceEvents": []}).encode("utf-16"))),
        "a JSON file in UTF-16 (inside the gzip)",
    ),
    Case(
        "gzip_corrupt",
        _bytes("cut.json.gz", _GZ[:12] + b"\x00" * 40 + _GZ[52:]),
        "a gzip file whose data cannot be decompressed",
    ),
    Case("gzip_empty", _bytes("none.json.gz", gzip.compress(b"")), "a gzip file that holds nothing"),
    Case(
        "gzip_cut_in_its_header",
        _bytes("badgz.json.gz", b"\x1f\x8b\x08\x00garbage"),
        "a gzip file whose data cannot be decompressed (corrupt, or cut short: it ends before its first block)",
    ),
    Case(
        "gzip_summary_json",
        _bytes("seed.json.gz", gzip.compress(json.dumps(SEED_MIN).encode())),
        "a gzipped tracedash summary JSON; summaries are read uncompressed: gunzip seed.json.gz and open the .json",
    ),
    Case(
        "gzip_not_kineto",
        _bytes("notes.json.gz", gzip.compress(b"hello")),
        "a gzip file that is not a PyTorch profiler (Kineto) trace (no 'traceEvents' in its 5 bytes of data)",
    ),
    Case(  # plain text under a Kineto trace's gzip name: it got only the generic message
        "text_named_json_gz",
        _bytes("trace.json.gz", b"hello, not compressed\n"),
        "named .gz but not gzip data (no gzip header); neither an nsys SQLite export nor a tracedash summary JSON",
    ),
    Case(  # the first 3,000 bytes of a real Kineto trace's gzip: it was called "no 'traceEvents' in its first MiB"
        "gzip_kineto_cut_short",
        _bytes("cut.json.gz", _cut_gzip()),
        "a gzip file cut short or corrupt: its data breaks off after 2,000 bytes (no 'traceEvents' before that); "
        "gunzip -t reports where it breaks",
    ),
    # files of other profilers (issue 26 class 6): named with their producer and what to use instead
    Case(
        "rocprofv3_json",
        _bytes("results.json", _rocprofv3()),
        "a rocprofv3 (ROCprofiler-SDK) JSON ('rocprofiler-sdk-tool' records), not a format tracedash reads: "
        "record the run with the PyTorch profiler on ROCm instead",
    ),
    Case(
        "rocprofv3_json_gz",
        _bytes("results.json.gz", gzip.compress(_rocprofv3())),
        "a rocprofv3 (ROCprofiler-SDK) JSON ('rocprofiler-sdk-tool' records)",
    ),
    Case(
        "xplane_pb",
        _bytes("host.xplane.pb", _xspace()),
        "a JAX/TensorFlow profiler XPlane (XSpace protobuf, .xplane.pb), not a format tracedash reads: on NVIDIA "
        "GPUs record the JAX run under Nsight Systems (nsys profile --trace=cuda,nvtx python ...)",
    ),
    Case(
        "speedscope_json",
        _bytes(
            "profile.speedscope.json",
            json.dumps(
                {
                    "$schema": "https://www.speedscope.app/file-format-schema.json",
                    "profiles": [],
                    "shared": {"frames": []},
                }
            ).encode(),
        ),
        "a speedscope profile (e.g. py-spy record --format speedscope): CPU stack samples, not a GPU trace",
    ),
]

# Inputs that must load (the tests check their exact counts).
LOADED = [
    Case("missing_short_name", _no_short_name, None),
    Case("end_before_start", _end_before_start, None),
    Case("durations_of_centuries", _centuries, None),
    Case("null_and_nan_times", _null_times, None),
    Case("names_of_10000_characters", _long_names, None),
    Case("html_and_script_names", _html_names, None),
    Case("summary_json_with_html_and_long_names", _summary_html_names, None),
]

ALL = REFUSED + LOADED
BY_ID = {c.id: c for c in ALL}


def write_case(case_id: str, d: Path) -> Path:
    """Write corpus case ``case_id`` into folder ``d`` and return its path."""
    return BY_ID[case_id].make(Path(d))


def write_valid(d: Path) -> Path:
    """The valid multi-page export the damaged cases start from (for the locked-file case)."""
    return _valid(Path(d) / "valid.sqlite")
