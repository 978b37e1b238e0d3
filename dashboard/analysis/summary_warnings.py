"""What a summary says about kernel rows it does not use as recorded and about GPU work it could not measure:
the sentences of ``summarize``'s warnings, from counts alone (also when a summary is combined from time slices)."""

from __future__ import annotations

from typing import NamedTuple

from dashboard import units
from dashboard.model import TraceMeta

UNTIMED_KERNELS = (
    "no kernel row has usable timestamps (each lacks one or has an invalid one): the GPU span, busy "
    "union and idle are unknown (n/a; null in `summarize` JSON), not 0"
)


class FrameCounts(NamedTuple):
    """Rows of each frame of a bundle (and the kernel rows that count for span and busy): what the
    warnings about missing GPU work need, also when a summary is combined from time slices."""

    kernels: int
    usable_kernels: int
    api_calls: int
    nvtx_ranges: int
    nvtx_marks: int
    memops: int
    graph_launches: int


def untimed_line(meta: TraceMeta, n: FrameCounts) -> str:
    """``UNTIMED_KERNELS`` when kernel rows were read but none counts for span and busy, else ""."""
    if n.kernels:
        return "" if n.usable_kernels else UNTIMED_KERNELS
    read = sum(a.read for a in meta.accounts if a.kind == "kernels")
    return UNTIMED_KERNELS if read else ""


def kernel_row_lines(overruns: int, invalid: int) -> list[str]:
    """``kernel_row_warnings`` from the two counts (``overrun_kernel_count``, ``invalid_kernel_count``)."""
    out = []
    if n := overruns:
        out.append(
            f"{units.count(n, 'kernel')} ran past the end of a later kernel on the same stream (a timestamp "
            "artifact): clipped to the next kernel's start for busy time, span and durations."
        )
    if n := invalid:
        out.append(
            f"{units.count(n, 'invalid kernel row')} (end < start, a missing or impossible timestamp, or a duration "
            "over 24 h) left out of span, busy time and kernel times."
        )
    return out


# How to record the GPU work a trace lacks, per input format (the capture-gap warning ends with it).
CAPTURE_ADVICE = {
    "kineto-json": (
        "record with the CUDA activity on (torch.profiler ProfilerActivity.CUDA), not in CUPTI range-profiler mode"
    ),
}
NSYS_CAPTURE_ADVICE = (
    "record with CUDA tracing on (`nsys profile --trace=cuda ...`); under WSL2, Nsight Systems "
    "may not trace GPU activity (see the WSL2 limits in its user guide): profile on native Linux "
    "to record kernels"
)


CUDA_TRACE_ADVICE = {
    "nsys-sqlite": "record it with `nsys profile --trace=cuda,nvtx ...`",
    "kineto-json": "record it with torch.profiler's ProfilerActivity.CUDA",
}


def not_captured_line(meta: TraceMeta, counts: FrameCounts) -> str:
    """The capture-gap sentence (see ``summary.gpu_activity_not_captured``) from a trace's meta and frame sizes."""
    if counts.kernels or not meta.gpu_activity_missing:
        return ""
    calls = sum(n for _, n, _ in meta.launches_by_pid)
    launched = (
        f"{units.count(calls, 'kernel launch call')} {'was' if calls == 1 else 'were'} recorded"
        if calls
        else "kernel launch calls were recorded"
    )
    return (
        f"GPU activity was not captured: {launched} but no kernel or CUDA graph execution, so the GPU span, "
        f"busy union and idle are unknown (n/a; null in `summarize` JSON), not 0; "
        f"{CAPTURE_ADVICE.get(meta.format, NSYS_CAPTURE_ADVICE)}"
    )


def graph_level_line(launches: int) -> str:
    """Why a summary's figures leave out CUDA graphs traced at graph level (one execution row per graph launch,
    no kernel rows inside): the contract counts kernel rows only, so without this line they read as complete."""
    return (
        f"{units.count(launches, 'CUDA graph launch', 'launches')}, traced at graph level (no kernel rows inside), "
        f"{'is' if launches == 1 else 'are'} not counted as GPU work: the GPU span, busy union and idle count kernel "
        "rows only, so graph time inside the span counts as idle and graph time outside it is left out; the "
        "dashboard counts graphs as opaque GPU work by default; re-profile with --cuda-graph-trace=node for "
        "per-kernel detail"
    )


def gpu_work_lines(meta: TraceMeta, counts: FrameCounts) -> list[str]:
    """``gpu_work_warnings`` from a trace's meta and frame sizes."""
    if untimed := untimed_line(meta, counts):
        return [untimed]
    if counts.kernels:
        return [graph_level_line(counts.graph_launches)] if counts.graph_launches else []
    if gap := not_captured_line(meta, counts):
        return [gap]
    others = [
        what for what, n in (("CUDA graph launches", counts.graph_launches), ("memcpy/memset", counts.memops)) if n
    ]
    if others:
        return [
            f"no kernel rows (only {' and '.join(others)}): the GPU span, busy union and idle count kernel rows, so "
            "they are 0 here; the dashboard's other busy sources count the rest"
        ]
    if other := meta.unanalysed_device:  # work of an accelerator tracedash does not measure (MTIA, ...)
        return [
            "no CUDA or HIP GPU work recorded: the GPU span, busy union and idle are 0 because this capture's "
            f"accelerator work ({', '.join(units.count_of(n, what) for what, n in other)}) is not analysed, not "
            "because a device was idle"
        ]
    if not (counts.api_calls or counts.nvtx_ranges or counts.nvtx_marks):
        return [
            "no events loaded: no kernel, CUDA API, NVTX or memcpy/memset rows, so every figure of this summary is 0"
        ]
    if not counts.api_calls:  # CUDA not traced (NVTX only): what ran on a GPU is unknown, not "nothing"
        advice = CUDA_TRACE_ADVICE.get(meta.format, CUDA_TRACE_ADVICE["nsys-sqlite"])
        return [
            f"CUDA was not traced (no kernel, CUDA API, CUDA graph or memcpy/memset rows): the GPU span, busy "
            f"union and idle are 0 by the summary contract's definition, not measured; GPU work, if any ran, was "
            f"not recorded ({advice})"
        ]
    return [
        "no GPU work recorded (no kernel, CUDA graph or memcpy/memset rows): the GPU span, busy union and idle "
        "are 0 because nothing ran on a GPU in this capture, not because a GPU was idle"
    ]
