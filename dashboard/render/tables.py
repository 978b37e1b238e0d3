"""The kernel, CUDA API, idle-gap and NVTX tables as plain records."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard import units
from dashboard.analysis.gpu_time import (
    busy_parts,
    cuda_traced,
)
from dashboard.analysis.idle import NO_HOST_ACTIVITY, gap_causes, idle_by_cause, largest_idle_gaps
from dashboard.analysis.kernel_times import kernel_busy_union
from dashboard.analysis.ranks import RANKS_FORMAT, rank_nvtx_stats
from dashboard.analysis.summary import nvtx_stats
from dashboard.analysis.tables import (
    api_table,
    group_nvtx_stats,
    kernel_table,
    longest_instances,
    normalize_nvtx_name,
    nvtx_table,
)
from dashboard.analysis.timeline import (
    BUSY_KERNELS,
)
from dashboard.data.analysis import analysis_of, memo
from dashboard.data.trace import LoadedTrace
from dashboard.figures.idle import build_idle_causes
from dashboard.figures.theme import DEFAULT_THEME, Theme
from dashboard.render.base import GAP_CAUSE_LIMIT, _records, launches_of, not_traced
from dashboard.state import ViewState


def device_ids(trace: LoadedTrace) -> list[int]:
    """GPUs with any work in the trace (kernels, memory operations, graph launches), sorted. Kept with the trace:
    the timeline asks at every zoom (three passes over 10M rows: ~50 ms)."""
    b = trace.bundle
    if b is None:
        return []

    def compute() -> list[int]:
        ids_ = set(b.kernels["device_id"].unique().tolist()) | set(b.memops["device_id"].unique().tolist())
        ids_ |= set(b.graph_launches["device_id"].unique().tolist())
        return sorted(int(d) for d in ids_)

    return list(memo(trace, ("device_ids",), compute))


def kernel_rows(trace: LoadedTrace, by: str = "short", busy_source: str = BUSY_KERNELS) -> list[dict]:
    """Kernel table rows; with events, each row also holds its longest instance (start_ns,
    end_ns) so a click can zoom the timeline to it, and a row_id. When the busy source counts
    graph-level CUDA graphs, each graph is an opaque row ("CUDA graph 7", see ``tables.graph_rows``)."""
    kernels = trace.bundle.kernels if trace.bundle is not None else None
    graphs = trace.bundle.graph_launches if trace.bundle is not None and busy_parts(busy_source)[1] else None
    table = kernel_table(kernels, trace.summary, by=by, graph_launches=graphs)
    table["row_id"] = [str(i) for i in range(len(table))]
    if kernels is not None and not kernels.empty:
        where = longest_instances(kernels, by)
        if graphs is not None and not graphs.empty:
            g = graphs.assign(dur=graphs["end_ns"] - graphs["start_ns"]).sort_values(
                "dur", ascending=False, kind="stable"
            )
            g = g.drop_duplicates("graph_id")
            where = pd.concat(
                [
                    where[["s", "e"]],
                    pd.DataFrame(
                        {"s": g["start_ns"].to_numpy(), "e": g["end_ns"].to_numpy()},
                        index=pd.Index([f"CUDA graph {int(i)}" for i in g["graph_id"]]),
                    ),
                ]
            )
        table["start_ns"] = table["name"].map(where["s"]).astype("Int64")
        table["end_ns"] = table["name"].map(where["e"]).astype("Int64")
    return _records(table)


def api_rows(trace: LoadedTrace, by: str = "name") -> list[dict]:
    """CUDA API table rows per cleaned call name (``by="name"``) or per family (``by="family"``):
    see ``tables.api_table``."""
    return _records(api_table(trace.summary, by=by))


def idle_view(
    trace: LoadedTrace, state: ViewState, min_gap_ns: int, theme: Theme = DEFAULT_THEME, grouped: bool = False
) -> tuple[list[dict], go.Figure, str]:
    """Largest GPU idle gaps with host causes (table rows, at most ``GAP_CAUSE_LIMIT``), total idle
    time by cause (figure), and a line saying how many gaps there are and, when over the limit, that
    the rows are the largest ones ("" without intervals or kernels).

    ``grouped`` names NVTX ranges by their normalised name (as the NVTX table does when grouped), so
    PyTorch's per-call names (``aten::mul, op_id = 317126``) add up to one cause."""
    b = trace.bundle
    if b is None or b.kernels.empty:
        why = (
            "This summary has no intervals: idle gaps need an nsys SQLite export."
            if b is None
            else "This trace has no kernels, so the GPU has no idle gaps to explain."
        )
        return [], build_idle_causes(idle_by_cause(pd.DataFrame()), note=why, theme=theme), ""
    largest, n_gaps = largest_idle_gaps(
        analysis_of(trace).busy_unions(state.busy), min_gap_ns=min_gap_ns, n=GAP_CAUSE_LIMIT
    )
    memops = None if busy_parts(state.busy)[0] else b.memops  # counted as busy: no gap to cover
    causes = gap_causes(
        largest,
        b.kernels,
        b.api_calls,
        b.nvtx_ranges,
        limit=GAP_CAUSE_LIMIT,
        memops=memops,
        launches=launches_of(trace, None),
    )
    if grouped and not causes.empty:
        ranges = [normalize_nvtx_name(r) if isinstance(r, str) and r else r for r in causes["nvtx_range"]]
        apis = causes["api_call"].tolist()
        causes = causes.assign(
            nvtx_range=ranges,
            cause=[f"{a} in {r}" if a and r else (a or r or NO_HOST_ACTIVITY) for a, r in zip(apis, ranges)],
        )
    note = f"{n_gaps:,} gap{'' if n_gaps == 1 else 's'} ≥ {units.duration(min_gap_ns)}"
    if n_gaps > GAP_CAUSE_LIMIT:
        note += f"; causes of the {GAP_CAUSE_LIMIT:,} largest"
    listed = (
        f"{n_gaps:,} gaps ≥ {units.duration(min_gap_ns)}: the table and chart hold the {GAP_CAUSE_LIMIT:,} largest"
        if n_gaps > GAP_CAUSE_LIMIT
        else note
    )
    rows = _records(
        causes.assign(
            row_id=[str(i) for i in range(len(causes))],
            memop_cover=[
                f"{k} covers {units.duration(n)}" if k else "" for k, n in zip(causes["memop"], causes["memop_ns"])
            ],
        )
    )
    return rows, build_idle_causes(idle_by_cause(causes), note=note, theme=theme), listed


def nvtx_rows(trace: LoadedTrace, grouped: bool) -> list[dict]:
    """NVTX table rows; ``grouped`` merges unique-per-call names (``aten::mul, op_id = 317126``).

    With events the grouped union and GPU overlap are recomputed exactly from the intervals; for
    a summary input they are sums of the per-name values (an upper bound).
    """
    if not grouped:
        return _unmeasured_overlap(trace, _records(nvtx_table(trace.summary)))
    if trace.bundle is not None and trace.meta.format == RANKS_FORMAT:  # per rank, against its own GPU work
        stats = rank_nvtx_stats(trace.bundle, normalize_nvtx_name)
    elif trace.bundle is not None:
        r = trace.bundle.nvtx_ranges
        renamed = r.assign(name=[normalize_nvtx_name(n) for n in r["name"].astype(str)])
        stats = nvtx_stats(renamed, kernel_busy_union(trace.bundle.kernels))
    else:
        stats = group_nvtx_stats(trace.summary.nvtx)
    return _unmeasured_overlap(trace, _records(nvtx_table(trace.summary, stats)))


def _unmeasured_overlap(trace: LoadedTrace, rows: list[dict]) -> list[dict]:
    """A range's GPU overlap in a trace without CUDA tracing (``cuda_traced``) was never measured: None
    ("—", with ``UNMEASURED_OVERLAP`` in the row's ``overlap_note`` for the hover), not 0 ns and 0.00 %."""
    if not cuda_traced(trace):
        for r in rows:
            r["gpu_overlap_ns"] = r["overlap_pct"] = None
            r["overlap_note"] = (
                f"—: not measured, {not_traced(trace)[len('not measured: ') :]}"
                if trace.meta.unanalysed_device
                else UNMEASURED_OVERLAP
            )
    return rows


UNMEASURED_OVERLAP = "—: not measured, CUDA was not traced (NVTX only)"


def effective_group(trace: LoadedTrace, group: bool | None) -> bool:
    """Whether the NVTX table groups by normalised name: ``group`` when set, else automatically when
    the trace's NVTX names carry ``op_id`` (PyTorch's emit_nvtx / Kineto names are unique per call)."""
    if group is not None:
        return bool(group)
    return memo(
        trace,
        ("nvtx_has_op_id",),
        lambda: (
            bool(trace.summary.nvtx["name"].astype(str).str.contains("op_id", regex=False).any())
            if len(trace.summary.nvtx)
            else False
        ),
    )
