"""What a page shows of a big trace while it loads: overview cards and a coarse timeline of its kernel rows as
recorded (``analysis.preview``), each saying it is a preview and what the full view adds."""

from __future__ import annotations

import pandas as pd

from dashboard import units
from dashboard.analysis.preview import PREVIEW_BINS, LoadPreview, preview_lanes
from dashboard.figures.common import empty_figure, wire_figure
from dashboard.figures.timeline import gpu_timeline_spec
from dashboard.model import device_label
from dashboard.render.base import Card

PREVIEW_NOTE = (
    "Preview while the trace loads: kernel rows as recorded (same-stream overruns not clipped yet; CUDA graph "
    "launches, memcpy/memset, NVTX and CUDA API calls not read yet). The full view replaces it when the load ends."
)
PREVIEW_TITLE = "GPU timeline: preview while the trace loads"
PREVIEW_BUSY_LABEL = "kernel rows as recorded"


def preview_cards(preview: LoadPreview) -> list[Card]:
    """Kernel rows, their span, busy union and idle as recorded, and per GPU its busy union (with several GPUs);
    every hint says it is a preview."""
    hint = " (preview: kernel rows as recorded, before overrun clipping)"
    if preview.first_ns is None:
        return [
            Card("Kernels", f"{preview.kernel_rows:,}", "kernel rows in the trace (preview)"),
            Card("GPU busy (union)", units.NA, "no kernel row has usable timestamps (preview)"),
        ]
    span = preview.span_ns
    busy = preview.device_busy_ns()
    several = len(busy) > 1  # named as the full overview names the all-GPU figures
    cards = [
        Card("Kernel span", units.duration(span), "first kernel start to last kernel end, all GPUs" + hint),
        Card(
            "Any GPU busy" if several else "Kernel busy (union)",
            units.duration(preview.busy_ns),
            "union of kernel intervals, all GPUs" + hint,
        ),
        Card("Idle in span", units.duration(span - preview.busy_ns), "span minus busy union" + hint),
        Card(
            "Any-GPU utilisation" if several else "Utilisation",
            units.pct(100.0 * preview.busy_ns / span if span else float("nan"), 2),
            "busy union / span" + hint,
        ),
        Card("Kernels", f"{preview.kernel_rows:,}", "kernel rows in the trace (preview)"),
    ]
    if several:
        cards.append(
            Card(
                "Busy per GPU",
                f"{len(busy)} GPUs",
                " · ".join(f"{device_label(d)} {units.duration(ns)}" for d, ns in busy.items()) + hint,
            )
        )
    return cards


def preview_figure(preview: LoadPreview, height_px: int) -> dict:
    """The coarse timeline: per GPU its busy fraction in ``PREVIEW_BINS`` bins over the kernels' span, as the
    figure dict the browser receives (``wire_figure``)."""
    lanes = preview_lanes(preview, PREVIEW_BINS)
    if not lanes:
        fig = empty_figure("No kernel row has usable timestamps: nothing to preview.", title=PREVIEW_TITLE)
        spec = fig.to_plotly_json()
    else:
        spec = gpu_timeline_spec(
            lanes,
            pd.DataFrame(),  # no NVTX ranges or marks are read yet
            pd.DataFrame(),
            gpus={},
            x_range_ns=(preview.first_ns, preview.last_ns),
            busy_label=PREVIEW_BUSY_LABEL,
            notes=[PREVIEW_NOTE],
            uirevision="preview",
            title=PREVIEW_TITLE,
        )
    spec["layout"]["height"] = max(int(spec["layout"].get("height") or 0), height_px)
    return wire_figure(spec)
