"""Each table's columns, declared once: the dashboard's grids (``app.components.grid_columns``) and the offline
report's tables (``render.export``) are both derived from these.

A column's ``kind`` sets how its values read: ``text``, ``count`` (integer), ``duration`` (integer ns), ``pct``,
``instant`` (integer ns on the session timeline, shown in s) or ``number`` (an id: a pid, a GPU).
The grid shows a duration in one fixed unit (``unit``, named in its header: "Total (ms)"); the report picks the
unit per value (``units.duration``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dashboard import units

KINDS = ("text", "count", "duration", "pct", "instant", "number")


@dataclass(frozen=True)
class Column:
    """One table column.

    Attributes:
        field: the row key. title: the report's title (the grid's header is ``title (unit)`` for a duration).
        kind: one of ``KINDS``. unit: the grid's unit of a duration, ``"ms"`` or ``"µs"``.
        header: the grid's header where it says more than the title. report: a column of the report too.
        digits: decimals of a ``pct`` in the report.
        missing: why a cell has no value, the grid's tooltip over its "—"/"n/a" (a text column with a reason
        shows "—" for a missing value).
        tooltip_field, flex, min_width, max_width, sort, header_tooltip: the grid's own settings (AG Grid's
        tooltipField, flex, minWidth, maxWidth, sort, headerTooltip).
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
    max_width: int | None = None
    sort: str | None = None
    header_tooltip: str | None = None
    missing: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.field!r}: unknown kind {self.kind!r} (one of {', '.join(KINDS)})")

    @property
    def grid_header(self) -> str:
        """The grid's header: ``header``, else the title with a duration's fixed unit."""
        if self.header is not None:
            return self.header
        if self.kind == "duration":
            return f"{self.title} ({self.unit})"
        return f"{self.title} (s)" if self.kind == "instant" else self.title


def report_format(column: Column) -> Callable[[object], str]:
    """How the report writes a (present) value of ``column``."""
    if column.kind == "count":
        return lambda v: f"{v:,}"
    if column.kind == "duration":
        return units.duration
    if column.kind == "pct":
        return lambda v: units.pct(v, column.digits)
    if column.kind == "instant":
        return units.instant
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

_NOT_SAID = "—: the step's annotation does not give it (or a seed dispatch mark)"
_NO_KERNELS = "n/a: no kernel intervals to attribute (summary input or no kernels)"

DISPATCHES = (
    Column("index", "#", "count", min_width=110, max_width=120),
    Column("phase", "Phase"),
    Column("tokens", "Tokens", "count", missing="n/a: the mark's name carries no token count"),
    Column(
        "mode",
        "Graph mode",
        min_width=120,  # PIECEWISE whole
        header_tooltip="the CUDA-graph mode the annotation names (NONE, PIECEWISE, FULL)",
        missing="—: the annotation does not say",
    ),
    Column("padded", "Padded", "count", missing="n/a: the mark's name carries no padded size"),
    Column("start_ns", "Start", "instant", sort="asc"),
    Column(
        "duration_ns",
        "Step",
        "duration",
        header_tooltip="mark to next mark (the last: to the end of GPU activity, or estimated); "
        "(cut): the part inside the stats window",
    ),
    Column(
        "kernels",
        "Kernels",
        "count",
        header_tooltip="kernels launched by API calls inside this dispatch (correlation id + process)",
        missing=_NO_KERNELS,
    ),
    Column(
        "gpu_busy_ns",
        "GPU busy",
        "duration",
        header_tooltip="union of this dispatch's attributed kernels (by correlation id + process)",
        missing=_NO_KERNELS,
    ),
    Column(
        "launch_lead_ns",
        "Launch lead",
        "duration",
        unit="µs",
        header_tooltip="first attributed kernel start minus the dispatch mark (the step's start)",
        missing="n/a: no kernel was attributed to this dispatch",
    ),
    Column(
        "ns_per_token",
        "Time / token",
        "duration",
        unit="µs",
        missing="n/a: no token count (or 0 tokens) for this dispatch",
    ),
    # a framework's steps (vLLM, SGLang, TensorRT-LLM): what its annotation says of the batch
    Column(
        "context_requests",
        "Ctx req",
        "count",
        header_tooltip="context (prefill) requests in the step",
        missing=_NOT_SAID,
    ),
    Column(
        "context_tokens", "Ctx tok", "count", header_tooltip="context (prefill) tokens in the step", missing=_NOT_SAID
    ),
    Column(
        "generation_requests",
        "Gen req",
        "count",
        header_tooltip="generation (decode) requests in the step",
        missing=_NOT_SAID,
    ),
    Column(
        "generation_tokens",
        "Gen tok",
        "count",
        header_tooltip="generation (decode) tokens in the step",
        missing=_NOT_SAID,
    ),
    Column("batch_size", "Batch", "count", header_tooltip="requests in the step's batch", missing=_NOT_SAID),
    Column("pid", "pid", "number", header_tooltip="the annotating process"),
    Column("name", "Annotation", flex=2, min_width=220, tooltip_field="name"),
)

GAPS = (
    Column("device_id", "GPU", "number", min_width=110, max_width=120),
    Column("start_ns", "Start", "instant"),
    Column("duration_ns", "Idle", "duration", unit="µs", sort="desc"),
    Column("cause", "Host cause", flex=2, min_width=220, tooltip_field="cause"),
    Column(
        "memop_cover",
        "Memory op in gap",
        min_width=170,
        header_tooltip="memcpy/memset running during the gap (shown when the busy source does not count them)",
        tooltip_field="memop_cover",
    ),
    # wide enough for cudaStreamSynchronize / cuLaunchKernelEx
    Column("api_call", "CUDA API call", min_width=170, tooltip_field="api_call"),
    Column("nvtx_range", "Innermost NVTX range", flex=1, tooltip_field="nvtx_range"),
)
