"""One definition per figure (issue 12 §2-§3): the cases of shared/cases as exact-value tests, plus
members of each class built in code. The CLI (`summarize`) and the dashboard call the same functions."""

from __future__ import annotations

import json

from factories import GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA

from dashboard.cli import main
from dashboard.render import kernel_rows, nvtx_rows
from dashboard.trace import load_trace

CASES = DATA / "cases"


def summarize_cli(capsys, path) -> dict:
    assert main(["summarize", "--no-cache", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


# --- null_short_names: a NULL shortName falls back to the row's demangled name, in CLI and dashboard alike


def test_null_short_names_case(capsys):
    path = CASES / "c26_nullshort.sqlite"
    cli = [(n, c, round(s * 1e9)) for n, (c, s) in summarize_cli(capsys, path)["top_kernels"]]
    dash = [(r["name"], r["count"], r["total_ns"]) for r in kernel_rows(load_trace(path))]
    assert cli == dash
    assert [(c, t) for _, c, t in dash] == [(2, 150), (1, 20), (1, 10), (1, 5)]
    assert dash[1][0].endswith("...B>") and dash[2][0].endswith("...A>") and dash[3][0] == "核函数_λ<int>"
    assert not any("unnamed" in n for n, _, _ in dash)


def test_null_short_name_built_in_code(tmp_path, capsys):
    """Another member: shortName ids that StringIds does not hold fall back the same way."""
    import sqlite3

    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=[
        {"start": 0, "end": 30, "shortName": "a", "demangledName": "void ns::a_kernel<1>()"},
        {"start": 40, "end": 50, "shortName": "b", "demangledName": "void ns::b_kernel<2>()"}])
    with sqlite3.connect(path) as con:  # point b's shortName at a missing string
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = 999 WHERE start = 40")
    cli = [(n, round(s * 1e9)) for n, (_, s) in summarize_cli(capsys, path)["top_kernels"]]
    dash = [(r["name"], r["total_ns"]) for r in kernel_rows(load_trace(path))]
    assert cli == dash == [("a", 30), ("void ns::b_kernel<2>()", 10)]


# --- unnamed_nvtx_range: a range with neither text nor a registered string is a visible <unnamed> row


def test_unnamed_nvtx_range_case(capsys):
    path = CASES / "c18.sqlite"
    nvtx = summarize_cli(capsys, path)["nvtx"]
    assert nvtx["<unnamed>"]["count"] == 1 and round(nvtx["<unnamed>"]["sum_s"] * 1e9) == 50
    assert nvtx["forward"]["count"] == 2 and round(nvtx["forward"]["sum_s"] * 1e9) == 200
    rows = {r["name"]: (r["count"], r["sum_ns"]) for r in nvtx_rows(load_trace(path), grouped=False)}
    assert rows == {"forward": (2, 200), "<unnamed>": (1, 50)}
    assert "" not in set(load_trace(path).bundle.nvtx_ranges["name"].astype(str))


def test_unnamed_nvtx_mark_and_start_end_range(tmp_path):
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=[{"start": 0, "end": 10}], nvtx=[
        {"start": 0, "end": 30, "eventType": 60, "globalTid": GLOBAL_TID_1},
        {"start": 5, "end": None, "eventType": 34, "globalTid": GLOBAL_TID_1}])
    b = load_trace(path).bundle
    assert b.nvtx_ranges["name"].astype(str).tolist() == ["<unnamed>"]
    assert b.nvtx_marks["name"].astype(str).tolist() == ["<unnamed>"]
