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
   calls pure functions of dashboard/render/__init__.py or dashboard/analysis and returns the outputs' values.
2. Add ``findings.VIEW`` to ``VIEWS`` below (one line). If it is a table tab, also add its name to
   ``state.TABS``; if it has a new state field, add one ``Field`` to ``state.FIELDS``.

The page places each view's ``layout(state)`` in its ``slot`` (see ``page_layout``).
"""

from __future__ import annotations

import json

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
    notes,
    nvtx,
    overview,
    phase_figure,
    phases,
    step_source,
    timeline,
)
from dashboard.app.views.base import (
    PageCache,
    ResponseCache,
    View,
    register_view,
    render_outcome,
    render_view,
    slice_data,
    view_slice,
)

VIEWS: list[View] = [
    alerts.VIEW,
    findings.VIEW,
    overview.VIEW,
    timeline.VIEW,  # directly under the overview cards, full width; the Gantt below on the same x axis
    gantt.VIEW,
    notes.VIEW,  # "Add note" and the Notes panel, under the Gantt
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
    step_source.VIEW,
]
BY_NAME = {v.name: v for v in VIEWS}
_BY_PRIORITY = tuple(sorted(VIEWS, key=lambda v: v.priority))  # stable: page order within a priority


def register_views(app, store, cache: ResponseCache | None = None) -> ResponseCache:
    """Register every view's callback on ``app``; returns the response cache they share."""
    cache = cache or ResponseCache()
    for view in VIEWS:
        register_view(app, store, view, cache)
    return cache


def _id_key(cid) -> str:
    return cid if isinstance(cid, str) else json.dumps(cid, sort_keys=True)


def page_outcomes(store, state, cache: ResponseCache | None = None):
    """``(view, values, rendered)`` for every view a page draws on load (``on_load``), in order, through
    ``render_outcome`` (so through ``cache``): what ``prerender`` fills a page with and what the server's
    start-up warming renders ahead of the first visitor. By ``View.priority``: what the page shows first is
    cached first."""
    for view in _BY_PRIORITY:
        if view.on_load:
            yield (view, *render_outcome(view, store, state, cache))


def prerender(page, store, state, cache: ResponseCache | None = None) -> bool:
    """Fill, in place, every view's outputs in ``page`` (the layout ``layout.build_layout`` made from
    ``state``) with what the view renders for ``state``, so a page arrives drawn: on load no view
    callback runs (they fire only when their slice store changes, see ``register_view``).

    Views with ``on_load=False`` are skipped (their layout already holds their values); an output
    whose component is not in ``page`` is ignored. Never raises for a bad trace: ``render_view``
    gives each view its ``empty`` values with the error, which the alerts view shows.

    Returns:
        True when every view rendered; False when one shows a load or internal error instead.
    """
    targets = {_id_key(c.id): c for c in page._traverse() if getattr(c, "id", None) is not None}
    complete = True
    for view, values, rendered in page_outcomes(store, state, cache):
        complete &= rendered
        for name, (cid, prop) in view.outputs.items():
            if name in values and (comp := targets.get(_id_key(cid))) is not None:
                setattr(comp, prop, values[name])
    return complete


def in_slot(slot: str, state) -> list:
    """Layout fragments of the views in ``slot``, in registration order."""
    return [v.layout(state) for v in VIEWS if v.slot == slot and v.layout is not None]


__all__ = [
    "VIEWS",
    "BY_NAME",
    "View",
    "ResponseCache",
    "PageCache",
    "page_outcomes",
    "render_outcome",
    "register_views",
    "render_view",
    "slice_data",
    "view_slice",
    "in_slot",
    "prerender",
]
