"""Each table's columns, declared once: the dashboard's grids (``app.components.grid_columns``) and the offline
report's tables (``render.export``) are both derived from these.

A column's ``kind`` sets how its values read: ``text``, ``count`` (integer), ``duration`` (integer ns) or ``pct``.
The grid shows a duration in one fixed unit (``unit``, named in its header: "Total (ms)"); the report picks the
unit per value (``units.duration``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dashboard import units

KINDS = ("text", "count", "duration", "pct")


@dataclass(frozen=True)
class Column:
    """One table column.

    Attributes:
        field: the row key. title: the report's title (the grid's header is ``title (unit)`` for a duration).
        kind: one of ``KINDS``. unit: the grid's unit of a duration, ``"ms"`` or ``"µs"``.
        header: the grid's header where it says more than the title. report: a column of the report too.
        digits: decimals of a ``pct`` in the report.
        tooltip_field, flex, min_width, sort, header_tooltip: the grid's own settings (AG Grid's tooltipField,
        flex, minWidth, sort, headerTooltip).
    """

    field: str
    title: str
    kind: str = "text"
    unit: str = "ms"
    header: str | None = None
    report: bool = True
    digits: int = 1
    tooltip_field: str | None = None
    flex: int | None = None
    min_width: int | None = None
    sort: str | None = None
    header_tooltip: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.field!r}: unknown kind {self.kind!r} (one of {', '.join(KINDS)})")

    @property
    def grid_header(self) -> str:
        """The grid's header: ``header``, else the title with a duration's fixed unit."""
        if self.header is not None:
            return self.header
        return f"{self.title} ({self.unit})" if self.kind == "duration" else self.title


def report_format(column: Column) -> Callable[[object], str]:
    """How the report writes a (present) value of ``column``."""
    if column.kind == "count":
        return lambda v: f"{v:,}"
    if column.kind == "duration":
        return units.duration
    if column.kind == "pct":
        return lambda v: units.pct(v, column.digits)
    return str


def report_columns(columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """The columns the report shows."""
    return tuple(c for c in columns if c.report)


KERNELS = (
    Column("name", "Kernel", header="Kernel (short name)", tooltip_field="full_name", flex=3, min_width=220),
    Column("category", "Category", tooltip_field="rule", min_width=130),
    Column("count", "Count", "count"),
    Column("total_ns", "Total", "duration", sort="desc"),
    Column("mean_ns", "Mean", "duration", unit="µs"),
    Column(
        "kernel_pct",
        "% of kernel time",
        "pct",
        digits=2,
        header_tooltip="this row's kernel time / the kernel time of all rows (sums to 100 %); n/a for a summary "
        "JSON, which lists its top kernels only",
    ),
)

API_CALLS = (
    Column("name", "Call", header="CUDA API call", flex=2, min_width=200),
    Column("family", "Family", report=False, min_width=100),
    Column("raw_name", "Raw name", report=False, flex=2, min_width=200),
    Column("count", "Count", "count"),
    Column("total_ns", "Total", "duration", header="Total (ms, summed across threads)", sort="desc", min_width=150),
    Column("mean_ns", "Mean", "duration", unit="µs"),
)

NVTX_RANGES = (
    Column("name", "Range", header="NVTX range", tooltip_field="name", flex=3, min_width=220),
    Column("count", "Count", "count"),
    Column("sum_ns", "Sum", "duration", sort="desc"),
    Column("union_ns", "Union", "duration"),
    Column("gpu_overlap_ns", "GPU overlap", "duration"),
    Column("overlap_pct", "Overlap", "pct", header="Overlap %"),
)
