"""A table's columns are declared once (``render.columns``): the grid's column definitions and the report's
tables are derived from the same declaration."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.app.components import API_COLUMNS, KERNEL_COLUMNS, NVTX_COLUMNS, grid_columns
from dashboard.render.columns import API_CALLS, KERNELS, NVTX_RANGES, Column, report_columns, report_format
from dashboard.render.export import _table

MS = "params.value == null || params.value !== params.value ? '—' : d3.format(',.3f')(params.value / 1e6)"
US = "params.value == null || params.value !== params.value ? '—' : d3.format(',.2f')(params.value / 1e3)"
INT = "params.value == null || params.value !== params.value ? '—' : d3.format(',')(params.value)"
PCT = "params.value == null || params.value !== params.value ? 'n/a' : d3.format('.2f')(params.value) + ' %'"


def test_the_kind_gives_the_grids_formatter_filter_and_unit():
    declared = (
        Column("name", "Kernel", header="Kernel (short name)", tooltip_field="full_name", flex=3, min_width=220),
        Column("count", "Count", "count"),
        Column("total_ns", "Total", "duration", sort="desc"),
        Column("mean_ns", "Mean", "duration", unit="µs", header_tooltip="per call"),
        Column("kernel_pct", "% of kernel time", "pct"),
    )
    assert grid_columns(declared, count={"minWidth": 90}) == [
        {
            "headerName": "Kernel (short name)",
            "field": "name",
            "tooltipField": "full_name",
            "flex": 3,
            "minWidth": 220,
            "filter": "agTextColumnFilter",
        },
        {
            "headerName": "Count",
            "field": "count",
            "valueFormatter": {"function": INT},
            "filter": "agNumberColumnFilter",
            "minWidth": 90,
        },
        {
            "headerName": "Total (ms)",
            "field": "total_ns",
            "valueFormatter": {"function": MS},
            "filter": "agNumberColumnFilter",
            "sort": "desc",
        },
        {
            "headerName": "Mean (µs)",
            "field": "mean_ns",
            "valueFormatter": {"function": US},
            "filter": "agNumberColumnFilter",
            "headerTooltip": "per call",
        },
        {
            "headerName": "% of kernel time",
            "field": "kernel_pct",
            "valueFormatter": {"function": PCT},
            "filter": "agNumberColumnFilter",
        },
    ]


def test_the_grids_and_the_report_show_the_same_declared_fields():
    assert [c["field"] for c in KERNEL_COLUMNS] == [c.field for c in KERNELS]
    assert [c["field"] for c in API_COLUMNS] == [c.field for c in API_CALLS]
    assert [c["field"] for c in NVTX_COLUMNS] == [c.field for c in NVTX_RANGES]
    # the report leaves out the API table's family and raw name (the grid's extra detail)
    assert [c.field for c in report_columns(API_CALLS)] == ["name", "count", "total_ns", "mean_ns"]
    assert [c.field for c in report_columns(KERNELS)] == [c.field for c in KERNELS]


def test_the_report_writes_each_kind_in_the_unit_that_fits():
    frame = pd.DataFrame(
        {
            "name": ["gemm", "copy"],
            "category": ["GEMM", "memory"],
            "count": [12345, 2],
            "total_ns": [1_234_567, 812],
            "mean_ns": [100.0, 4210.0],
            "kernel_pct": [99.934, None],
        }
    )
    assert _table(frame, KERNELS, 1) == (
        "<table><thead><tr><th>Kernel</th><th>Category</th><th class='num'>Count</th><th class='num'>Total</th>"
        "<th class='num'>Mean</th><th class='num'>% of kernel time</th></tr></thead>"
        "<tbody><tr><td>gemm</td><td>GEMM</td><td class='num'>12,345</td><td class='num'>1.235 ms</td>"
        "<td class='num'>100 ns</td><td class='num'>99.93 %</td></tr></tbody></table>"
        "<p class='small'>First 1 of 2 rows.</p>"
    )
    assert "<td class='num'>4.21 µs</td><td class='num'>—</td>" in _table(frame, KERNELS, 2)
    assert report_format(Column("start_ns", "Start", "instant"))(1_234_567_890) == "1.234568 s"
    assert report_format(Column("pid", "pid", "number"))(4242) == "4242"


def test_an_unknown_kind_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match="column 'x': unknown kind 'bytes'"):
        Column("x", "X", "bytes")


def test_a_reason_for_a_missing_value_becomes_the_grids_tooltip():
    declared = (
        Column("mode", "Graph mode", missing="—: the annotation does not say"),
        Column("start_ns", "Start", "instant"),
        Column("pid", "pid", "number", max_width=120),
    )
    assert grid_columns(declared) == [
        {
            "headerName": "Graph mode",
            "field": "mode",
            "filter": "agTextColumnFilter",
            "valueFormatter": {
                "function": "params.value == null || params.value !== params.value ? '—' : params.value"
            },
            "tooltipValueGetter": {
                "function": "params.value == null ? ((params.data && params.data.note) || "
                "'—: the annotation does not say') : undefined"
            },
        },
        {
            "headerName": "Start (s)",
            "field": "start_ns",
            "valueFormatter": {"function": "d3.format(',.6f')(params.value / 1e9)"},
            "filter": "agNumberColumnFilter",
        },
        {"headerName": "pid", "field": "pid", "filter": "agNumberColumnFilter", "maxWidth": 120},
    ]
