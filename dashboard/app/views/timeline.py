"""The GPU timeline: full page width under the overview cards, redrawn at the zoom window."""

from dash import dcc, html

from dashboard.analysis.gpu_time import has_gpu_work
from dashboard.app import ids
from dashboard.app.components import LANE_LABELS, figure_buttons, graph_config
from dashboard.app.export_route import report_hrefs
from dashboard.app.keys_help import keys_button, keys_overlay
from dashboard.app.views.base import TIMELINE, WINDOW, View
from dashboard.figures.common import empty_figure, pending_figure, wire_figure
from dashboard.model import device_label
from dashboard.render import device_ids, timeline_view_spec
from dashboard.render.search import search_status

MIN_HEIGHT_PX = 470  # at least 45 % of a 1000 px high viewport


def render(trace, state):
    """The timeline view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    fig, filename = timeline_view_spec(trace, state)  # a plain dict: no Plotly objects per zoom
    fig["layout"]["height"] = max(int(fig["layout"].get("height") or 0), MIN_HEIGHT_PX)
    wire_figure(fig)
    devices = device_ids(trace)
    has_lanes = trace.bundle is not None
    return {
        "lanes_options": lane_options(trace),
        "search_status": search_status(trace, state),
        "figure": fig,
        "config": graph_config(filename),
        **report_hrefs("timeline", state),
        "devices": [
            {"label": f" {device_label(d, trace.meta.gpus, trace.meta.rank_devices)}", "value": d} for d in devices
        ],
        "devices_style": {} if len(devices) > 1 else {"display": "none"},
        "lanes_style": {} if has_lanes else {"display": "none"},
    }


def lane_options(trace) -> list[dict]:
    """The lane checkboxes for the rows this trace has (a CPU-only trace gets no GPU lanes to tick); a lane
    without rows keeps its place in the state and the link."""
    b = trace.bundle
    if b is None:
        return []
    has = {
        "nvtx": not b.nvtx_ranges.empty,
        "marks": not b.nvtx_marks.empty,
        "gpu": has_gpu_work(b),
        "streams": not b.kernels.empty,
        "memops": not b.memops.empty,
    }
    return [{"label": f" {label}", "value": v} for v, label in LANE_LABELS if has[v]]


def search_box(state) -> html.Div:
    """The search over the timeline: a box, Previous / Next, and the count of occurrences."""
    return html.Div(
        className="search-box",
        title="A case-insensitive substring of a kernel (short or demangled), NVTX range or mark, or CUDA API "
        "call name; /…/ for a regular expression (RE2). Enter: next occurrence, Shift+Enter: previous.",
        children=[
            dcc.Input(
                id=ids.TIMELINE_SEARCH,
                type="search",
                value=state.search,
                debounce=True,
                spellCheck=False,
                placeholder="Search kernels, NVTX, CUDA API calls (text or /regex/)",
                className="text-input search-input",
            ),
            html.Button(
                "◀", id=ids.SEARCH_PREV, className="button search-step", title="Previous occurrence (Shift+Enter)"
            ),
            html.Button("▶", id=ids.SEARCH_NEXT, className="button search-step", title="Next occurrence (Enter)"),
            html.Span(id=ids.SEARCH_STATUS, className="hint search-status", **{"aria-live": "polite"}),
            dcc.Store(id=ids.SEARCH_STEP),
        ],
    )


def layout(state):
    """The timeline view's layout fragment for the page built from ``state``."""
    return html.Div(
        className="panel timeline-panel",
        children=[
            _with_keys(figure_buttons(ids.TIMELINE)),
            keys_overlay(),
            search_box(state),
            html.Div(
                id=ids.LANE_CONTROLS,
                className="lanes",
                # kept hidden (in its place) until the view knows which lanes the trace has: a big trace's load
                # preview showed every lane's box, memcpy/memset too, for a trace that might have none
                style={"visibility": "hidden"},
                children=[
                    dcc.Checklist(
                        id=ids.LANES,
                        value=list(state.lanes),
                        inline=True,
                        className="radio lanes",
                        options=[{"label": f" {label}", "value": v} for v, label in LANE_LABELS],
                    ),
                    html.Div(
                        id="hide-devices-box",
                        className="lanes",
                        # shown by the view once it knows the trace has several GPUs (a big trace's page waits for
                        # its load: an empty "Hide GPUs:" stood there meanwhile)
                        style={} if state.hide_devices else {"display": "none"},
                        children=[
                            "Hide GPUs: ",
                            dcc.Checklist(
                                id=ids.HIDE_DEVICES,
                                value=list(state.hide_devices),
                                options=[{"label": f" GPU {d}", "value": d} for d in state.hide_devices],
                                inline=True,
                                className="radio",
                            ),
                        ],
                    ),
                ],
            ),
            dcc.Loading(
                type="dot",
                delay_show=300,
                children=dcc.Graph(
                    id=ids.TIMELINE,
                    figure=pending_figure(MIN_HEIGHT_PX),
                    config=graph_config("tracedash-timeline"),
                    style={"minHeight": f"{MIN_HEIGHT_PX}px"},
                ),
            ),
        ],
    )


def _with_keys(buttons: html.Div) -> html.Div:
    buttons.children.insert(0, keys_button())  # the keys (assets/tracedash.js) are found from the timeline
    return buttons


VIEW = View(
    name="timeline",
    priority=TIMELINE,
    fields=("prefix", "busy", "lanes", "hide_devices", "mark", "search", "hit", WINDOW, "notes"),
    slot="main",
    outputs={
        "figure": (ids.TIMELINE, "figure"),
        "config": (ids.TIMELINE, "config"),
        "png": (f"{ids.TIMELINE}-report-png", "href"),
        "pdf": (f"{ids.TIMELINE}-report-pdf", "href"),
        "devices": (ids.HIDE_DEVICES, "options"),
        "devices_style": ("hide-devices-box", "style"),
        "lanes_style": (ids.LANE_CONTROLS, "style"),
        "lanes_options": (ids.LANES, "options"),
        "search_status": (ids.SEARCH_STATUS, "children"),
    },
    render=render,
    empty=lambda message: {"figure": empty_figure("No trace to show.", height=200)},
    layout=layout,
)
