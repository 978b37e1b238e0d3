"""The dashboard's views: one module per view, registered in ``VIEWS``.

A view owns the state fields it reads, its pure render function, its layout fragment and its one
callback (``base.View``, ``base.register_view``). The sync callback (``dashboard/app/sync.py``)
turns every UI event into a new ``ViewState`` and writes each view's slice store only when a field
that view reads changed, so a control change recomputes and re-sends only the views that read it
(changing the kernel grouping re-renders the kernel table, nothing else). Identical slices are
served from the response cache.

Adding a view (e.g. a Findings panel):

1. Write ``dashboard/app/views/findings.py`` with ``VIEW = View(name="findings", fields=(...),
   outputs={...}, render=..., empty=..., layout=..., slot="side")`` — ``render(trace, state)``
   calls pure functions of dashboard/render.py or dashboard/analysis and returns the outputs' values.
2. Add ``findings.VIEW`` to ``VIEWS`` below (one line). If it is a table tab, also add its name to
   ``state.TABS``; if it has a new state field, add one ``Field`` to ``state.FIELDS``.

The page places each view's ``layout(state)`` in its ``slot`` (see ``page_layout``).
"""

from __future__ import annotations

from dashboard.app.views import (
    alerts,
    api,
    compare_link,
    dispatches,
    findings,
    gantt,
    gaps,
    gpu,
    kernels,
    nvtx,
    overview,
    phase_figure,
    phases,
    timeline,
)
from dashboard.app.views.base import ResponseCache, View, register_view, render_view, slice_data, view_slice

VIEWS: list[View] = [
    alerts.VIEW,
    findings.VIEW,
    overview.VIEW,
    timeline.VIEW,  # directly under the overview cards, full width; the Gantt below on the same x axis
    gantt.VIEW,
    phases.VIEW,
    gpu.VIEW,
    phase_figure.VIEW,
    kernels.VIEW,
    kernels.FILTER_VIEW,
    api.VIEW,
    dispatches.VIEW,
    gaps.VIEW,
    nvtx.VIEW,
    compare_link.VIEW,
]
BY_NAME = {v.name: v for v in VIEWS}


def register_views(app, store, cache: ResponseCache | None = None) -> ResponseCache:
    """Register every view's callback on ``app``; returns the response cache they share."""
    cache = cache or ResponseCache()
    for view in VIEWS:
        register_view(app, store, view, cache)
    return cache


def in_slot(slot: str, state) -> list:
    """Layout fragments of the views in ``slot``, in registration order."""
    return [v.layout(state) for v in VIEWS if v.slot == slot and v.layout is not None]


__all__ = ["VIEWS", "BY_NAME", "View", "ResponseCache", "register_views", "render_view", "slice_data", "view_slice",
           "in_slot"]
