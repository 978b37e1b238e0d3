"""Kernel table (by short or demangled name), whole trace or visible window; its quick filter."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.components import KERNEL_COLUMNS, kernel_grid_options, state_grid
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import kernel_rows, scope_text, windowed


def render(trace, state):
    """Kernel table rows (graph-level CUDA graphs as rows when the busy source counts them)."""
    w = state.stats_window()
    rows, scope = kernel_rows(windowed(trace, w), state.kernel_names, state.busy), scope_text(trace, w)
    if trace.bundle is None and rows:  # a summary JSON lists its top kernels only
        scope += (
            f" · the summary lists its top {len(rows):,} kernels, {sum(r['count'] for r in rows):,} of its "
            f"{trace.summary.kernel_count:,}: a share of all kernel time is n/a"
        )
    return {"rows": rows, "scope": scope}


def layout(state):
    """The kernels view's layout fragment (grouping control and table) for the page built from ``state``."""
    return html.Div(
        children=[
            html.Label(
                className="inline-control",
                children=[
                    "Filter kernels ",
                    dcc.Input(
                        id=ids.KERNEL_FILTER,
                        type="text",
                        debounce=0.6,
                        value=state.kernel,
                        placeholder="name, category…",
                        className="text-input",
                    ),
                    " Group by ",
                    dcc.RadioItems(
                        id=ids.KERNEL_NAMES,
                        value=state.kernel_names,
                        inline=True,
                        className="radio",
                        options=[
                            {"label": " short name", "value": "short"},
                            {"label": " demangled name (each template instance)", "value": "full"},
                        ],
                    ),
                ],
            ),
            html.Div(id=ids.scope("kernels"), className="scope"),
            state_grid(
                "kernels",
                ids.KERNEL_TABLE,
                KERNEL_COLUMNS,
                state,
                getRowId="params.data.row_id",
                quick_filter=state.kernel,
            ),
        ]
    )


VIEW = View(
    name="kernels",
    fields=("kernel_names", "busy", STATS_WINDOW),
    slot="tabs",
    tab="Kernels",
    outputs={"rows": (ids.KERNEL_TABLE, "rowData"), "scope": (ids.scope("kernels"), "children")},
    render=render,
    empty=lambda message: {"rows": [], "scope": ""},
    layout=layout,
)

# The quick filter only re-filters rows the browser holds: no trace is read, no rows are re-sent.
FILTER_VIEW = View(
    name="kernel_filter",
    fields=("kernel",),
    slot="none",
    needs_trace=False,
    memoise=False,
    on_load=False,
    outputs={"options": (ids.KERNEL_TABLE, "dashGridOptions")},
    render=lambda trace, state: {"options": kernel_grid_options(state.kernel)},
)
