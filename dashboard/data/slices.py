"""``tracedash summarize`` of one nsys export per time slice, as Dask tasks: for a capture bigger than a
worker's memory. Each task reads only its slice's rows (``loaders.nsys_slices``) and returns small
partial figures; the combination (``analysis.summary_slices.combine``) gives the single pass's summary to
the ns. An export that cannot be cut exactly (``SliceReader.unsliceable``) is summarised in one pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dashboard.analysis.kernel_times import MAX_KERNEL_DURATION_NS
from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX, summary_to_dict
from dashboard.analysis.summary_slices import (
    SlicePartial,
    api_part,
    combine,
    dispatch_part,
    kernel_part,
    lookahead,
    merge_accounts,
    nvtx_part,
    owned_rows,
)
from dashboard.data.slice_count import _cores
from dashboard.errors import TraceError, TraceFormatError, clean_message
from dashboard.loaders.nsys_slices import SliceReader, owned_condition
from dashboard.loaders.nsys_tables import RULE_BACKTRACE, RULE_BAD_TIME, launches_by_pid
from dashboard.model import RowAccount, Summary


@dataclass(frozen=True)
class SlicePlan:
    """Where one export is cut (``edges``: the inner boundaries, ns) and what every slice needs from the
    whole file (where open NVTX ranges close, the NVTX domain names)."""

    path: str
    edges: tuple[int, ...]
    close_at: int
    domains: dict
    dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX

    @property
    def count(self) -> int:
        """Number of slices."""
        return len(self.edges) + 1


def plan_slices(path: Path, slices: int, dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX) -> SlicePlan | str:
    """Cut ``[first kernel start, last kernel end]`` into ``slices`` equal slices (fewer when the span has
    fewer ns; one without kernels), or say why the export cannot be cut exactly (a string).

    Raises:
        TraceNotFoundError, TraceFormatError: the file is missing or not a readable nsys export.
    """
    with SliceReader(path) as r:
        if reason := r.unsliceable():
            return reason
        span = r.kernel_time_range(MAX_KERNEL_DURATION_NS)
        edges: tuple[int, ...] = ()
        if span is not None and slices > 1:
            lo, hi = span
            edges = tuple(sorted({lo + (hi - lo) * k // slices for k in range(1, slices)} - {lo}))
        return SlicePlan(str(path), edges, r.nvtx_close_at(), r.domain_names(), dispatch_prefix)


def slice_partial(plan: SlicePlan, i: int) -> SlicePartial:
    """The figures of slice ``i`` of ``plan`` (one Dask task): reads only the rows the slice needs."""
    edges = list(plan.edges)
    lo = edges[i - 1] if i > 0 else None
    hi = edges[i] if i < len(edges) else None
    where = owned_condition(edges, i)
    part = SlicePartial(lo, hi)
    with SliceReader(plan.path) as r:
        read = r.kernels_owned_or_before(edges, i)
        mine = owned_rows(read, lo)
        owned, before = read[mine].reset_index(drop=True), read[~mine].reset_index(drop=True)
        need = lookahead(read, hi)
        del read
        after = r.kernels_after(hi, *need) if need else owned.iloc[:0]
        busy, cands = kernel_part(part, owned, before, after)
        kernel_rows = len(owned)
        del owned, before, after
        api, api_account, bad_api = r.api_totals(where)
        api_part(part, api)
        part.launch_calls = {p: n for p, n, _ in launches_by_pid(api, np.zeros(0, np.int64))}
        del api
        ranges, marks, bad_nvtx, nvtx_accounts = r.nvtx(where, plan.close_at, plan.domains)
        ranges_before = r.nvtx_ranges_before(lo, plan.close_at, plan.domains) if lo is not None else ranges.iloc[:0]
        nvtx_part(part, ranges, ranges_before, busy, cands)
        dispatch_part(part, marks, ranges, plan.dispatch_prefix)
        part.counts.update(nvtx_ranges=len(ranges), nvtx_marks=len(marks))
        del ranges, marks, ranges_before
        memops, bad_memops, memops_account = r.memops(where)
        graphs, bad_graphs, graph_account, graph_pids = r.graph_launches(where)
    part.counts.update(memops=memops, graph_launches=graphs)
    for p, n in zip(*np.unique(graph_pids, return_counts=True)):
        part.executions[int(p)] = part.executions.get(int(p), 0) + int(n)
    part.invalid = {
        "CUDA API calls": bad_api,
        "memcpy/memset": bad_memops,
        "CUDA graph launches": bad_graphs,
        **bad_nvtx,
    }
    kernels = RowAccount("kernels", kernel_rows, kernel_rows)
    part.accounts = [kernels, *([api_account] if api_account else []), *nvtx_accounts, memops_account, graph_account]
    return part


def combine_slices(plan: SlicePlan, parts: list[SlicePartial]) -> Summary:
    """The summary of the export of ``plan`` from the figures of all its slices (in slice order)."""
    invalid: dict[str, int] = {}
    launch_calls: dict[int, int] = {}
    executions: dict[int, int] = {}
    for p in parts:
        for src, dst in ((p.invalid, invalid), (p.launch_calls, launch_calls), (p.executions, executions)):
            for k, v in src.items():
                dst[k] = dst.get(k, 0) + v
    with SliceReader(plan.path, strings=False) as r:
        meta = r.meta(
            sum(p.counts.get("zero_ts_kernels", 0) for p in parts),
            invalid,
            merge_accounts([p.accounts for p in parts], (RULE_BACKTRACE, RULE_BAD_TIME)),
            launch_calls,
            executions,
        )
    return combine(parts, meta, plan.dispatch_prefix)


def _slice_task(plan: SlicePlan, i: int) -> tuple[SlicePartial | None, str | None]:
    """One Dask task: ``(partial, None)`` or ``(None, error message)`` (a message pickles where an
    exception might not)."""
    try:
        return slice_partial(plan, i), None
    except TraceError as exc:
        return None, str(exc)
    except Exception as exc:  # a bug, not bad input: still one line
        return None, f"internal error in slice {i}: {clean_message(exc)}"


def run_in_process(plan: SlicePlan) -> list[SlicePartial]:
    """Every slice of ``plan`` one after the other in this process (tests; what each Dask task runs)."""
    return [slice_partial(plan, i) for i in range(plan.count)]


def run_on_dask(plan: SlicePlan, *, scheduler: str | None = None, n_workers: int | None = None, processes=True):
    """Every slice of ``plan`` as one Dask task (a local cluster, or the scheduler at ``scheduler``; see
    ``multirank.dask_client``), results in slice order.

    Raises:
        TraceError: the scheduler cannot be reached, or a slice failed (its message).
    """
    from dashboard.data.multirank import dask_client

    client, cluster = dask_client(scheduler, min(n_workers or _cores(), plan.count), processes)
    try:
        name = Path(plan.path).name
        futures = [
            client.submit(_slice_task, plan, i, key=f"summarize-slice-{i}-{name}", pure=False)
            for i in range(plan.count)
        ]
        parts = []
        for i, fut in enumerate(futures):
            try:
                part, error = fut.result()
            except Exception as exc:  # the task never ran to its end (worker killed, e.g. out of memory)
                raise TraceError(f"{name}: the Dask task of slice {i} failed: {clean_message(exc)}") from None
            if error:
                raise TraceFormatError(error)
            parts.append(part)
        return parts
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sliced_summary(path: Path, slices: int, dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX, run=run_in_process):
    """The summary of ``path`` computed per time slice (``run``: how the slices run), or None when the
    export cannot be cut exactly (then the caller summarises it in one pass)."""
    plan = plan_slices(Path(path), slices, dispatch_prefix)
    if isinstance(plan, str):
        return None
    return combine_slices(plan, run(plan))


def summary_json_text(summary: Summary) -> str:
    """A summary as ``tracedash summarize`` writes it."""
    return json.dumps(summary_to_dict(summary), indent=2) + "\n"
