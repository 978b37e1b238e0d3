"""The view state: ViewState (everything a shared link reproduces), its defaults, tabs, lanes and table columns."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STATE_VERSION = 1
# The notice of a link written by another version: its settings were all read; it is not a value left unset.
OTHER_VERSION = "The link was made by another version of tracedash"


TABS = ("kernels", "api", "dispatches", "gaps", "nvtx")


LANES = ("nvtx", "marks", "gpu", "streams", "memops")


BUSY = ("kernel-rows", "kernels", "kernels+memops")  # analysis.gpu_time.BUSY_SOURCES


STATS = ("trace", "window")


MARK_KINDS = ("kernel", "dispatch", "gap", "nvtx", "api")  # nvtx, api: a search occurrence


# Sortable columns of every table (AG Grid column ids), and each table's default sort.
TABLE_COLUMNS = {
    "kernels": ("name", "category", "count", "total_ns", "mean_ns", "kernel_pct"),
    "api": ("name", "family", "raw_name", "count", "total_ns", "mean_ns"),
    "nvtx": ("name", "count", "sum_ns", "union_ns", "gpu_overlap_ns", "overlap_pct"),
    "dispatches": (
        "index",
        "phase",
        "tokens",
        "mode",
        "padded",
        "start_ns",
        "duration_ns",
        "kernels",
        "gpu_busy_ns",
        "launch_lead_ns",
        "ns_per_token",
        "context_requests",
        "context_tokens",
        "generation_requests",
        "generation_tokens",
        "batch_size",
        "pid",
        "name",
    ),
    "gaps": ("device_id", "start_ns", "duration_ns", "cause", "api_call", "nvtx_range", "memop_cover"),
}


DEFAULT_SORTS = {
    "kernels": "-total_ns",
    "api": "-total_ns",
    "nvtx": "-sum_ns",
    "dispatches": "start_ns",
    "gaps": "-duration_ns",
}


SORT_COLUMNS = TABLE_COLUMNS["kernels"]


# Per-table state attributes: sort (``col`` / ``-col``) and AG Grid column-filter model (canonical JSON).
SORT_ATTR = {
    "kernels": "sort",
    "api": "api_sort",
    "nvtx": "nvtx_sort",
    "dispatches": "dispatch_sort",
    "gaps": "gap_sort",
}


FILTER_ATTR = {t: f"{t}_filter" for t in TABLE_COLUMNS}


_TRACE_ID = re.compile(r"[^/\\\x00-\x1f]{1,255}@[0-9a-f]{8}(?:[0-9a-f]{24})?")  # 32 hex now; 8 in old links


_INT = re.compile(r"-?[0-9]{1,19}")


_MAX_TEXT = 200


_MAX_FILTER = 600


_FILTER_OPS = {
    "contains",
    "notContains",
    "equals",
    "notEqual",
    "startsWith",
    "endsWith",
    "lessThan",
    "lessThanOrEqual",
    "greaterThan",
    "greaterThanOrEqual",
    "inRange",
    "blank",
    "notBlank",
}


@dataclass(frozen=True)
class ViewState:
    """Everything a shared link reproduces. Defaults are what a fresh page shows (see ``FIELDS``)."""

    trace: str = ""
    tab: str = "kernels"
    t0_ns: int | None = None
    t1_ns: int | None = None
    lanes: tuple[str, ...] = LANES
    threshold: float | None = None
    prefix: str = "CG_DISPATCH"
    steps: str = "auto"  # the step source: auto, a preset (seed, vllm, sglang, trtllm, torch) or a user rule
    step_pid: int | None = None  # the annotating process whose step statistics are shown (None: the first)
    busy: str = "kernels"
    sort: str = "-total_ns"
    kernel: str = ""
    kernel_names: str = "short"
    api_by: str = "name"  # CUDA API table rows: per call ("name") or per family
    hide_devices: tuple[int, ...] = ()
    group: bool | None = None  # None: automatic (grouped when NVTX names carry op_id, as PyTorch's do)
    gap_us: float = 10.0
    stats: str = "trace"
    mark: tuple[str, int, int] | None = None  # (kind, start_ns, end_ns) of the clicked row marked in the timeline
    api_sort: str = DEFAULT_SORTS["api"]
    nvtx_sort: str = DEFAULT_SORTS["nvtx"]
    dispatch_sort: str = DEFAULT_SORTS["dispatches"]
    gap_sort: str = DEFAULT_SORTS["gaps"]
    kernels_filter: str = ""
    api_filter: str = ""
    nvtx_filter: str = ""
    dispatches_filter: str = ""
    gaps_filter: str = ""
    search: str = ""  # the timeline search (analysis.search.parse_query: substring or /regex/)
    hit: int | None = None  # the search occurrence last gone to (1-based, in time order)
    warnings: tuple[str, ...] = field(default=(), compare=False)
    notes: tuple[tuple[int, int, str], ...] = ()  # (t0_ns, t1_ns, text); t0 == t1: a point (state.notes)

    def __post_init__(self):  # lanes, devices and notes are sets: keep them in one canonical order
        object.__setattr__(self, "lanes", tuple(v for v in LANES if v in set(self.lanes)))
        object.__setattr__(self, "hide_devices", tuple(sorted(set(int(d) for d in self.hide_devices))))
        object.__setattr__(self, "notes", tuple(sorted({(int(a), int(b), str(t)) for a, b, t in self.notes})))

    def window(self) -> tuple[int, int] | None:
        """``(t0_ns, t1_ns)`` when both are set, else None."""
        return (self.t0_ns, self.t1_ns) if self.t0_ns is not None and self.t1_ns is not None else None

    def stats_window(self) -> tuple[int, int] | None:
        """The window statistics are computed on: the zoom window with ``stats=window``, else None
        (whole trace)."""
        return self.window() if self.stats == "window" else None


DEFAULT = ViewState()


def context_start(start_ns: int, pad_ns: int) -> int:
    """Where a window showing an item from ``start_ns`` with ``pad_ns`` of context before it starts: never before 0
    (the trace's start) for an item after it (a row click, the F key, a search hit or a note near the start)."""
    return max(start_ns - pad_ns, 0) if start_ns >= 0 else start_ns - pad_ns
