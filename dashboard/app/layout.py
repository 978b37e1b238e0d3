"""The page builder: header controls and the whole page, each view's fragment from dashboard/app/views.

Views never import this module (their building blocks are in ``app.components``): no import circle.
"""

from __future__ import annotations

from dash import dcc, html

from dashboard.analysis.gpu_time import BUSY_SOURCES
from dashboard.app import ids
from dashboard.app.components import PICKER_MAX_HEIGHT_PX, alert
from dashboard.app.load_banner import load_banner
from dashboard.app.views import VIEWS, in_slot, slice_data
from dashboard.app.views.compare_link import compare_href
from dashboard.app.views.overview import STATS_FOR_OPTIONS
from dashboard.state import to_dict


def upload_control(max_upload_bytes: int) -> html.Div:
    """The "Open file…" button and its status line; assets/tracedash.js posts the file to ``/upload``
    (a drop anywhere on the page does the same)."""
    return html.Div(
        className="upload",
        children=[
            html.Button(
                "Open file…",
                id=ids.UPLOAD_BUTTON,
                className="button",
                title=f"Upload a .sqlite, .json or .json.gz trace (up to {max_upload_bytes / 1024**3:g} GiB), "
                "or drop it anywhere on the page",
                **{"data-max-bytes": str(max_upload_bytes)},
            ),
            html.Span(id=ids.UPLOAD_STATUS, className="hint", **{"aria-live": "polite"}),
        ],
    )


# The "Steps from" list (``analysis.step_presets.PRESETS`` and auto), then "rule" for the box's own text.
STEP_PRESET_OPTIONS = [
    {"label": "auto", "value": "auto"},
    {"label": "seed (CG_DISPATCH marks)", "value": "seed"},
    {"label": "vLLM", "value": "vllm"},
    {"label": "SGLang", "value": "sglang"},
    {"label": "TensorRT-LLM", "value": "trtllm"},
    {"label": "PyTorch (ProfilerStep#N)", "value": "torch"},
    {"label": "rule (regular expression)", "value": "rule"},
]


def preset_choice(steps: str) -> str:
    """The "Steps from" list's value for a state's step source: the preset, or ``rule``."""
    return steps if steps in {o["value"] for o in STEP_PRESET_OPTIONS} - {"rule"} else "rule"


def header_controls(state, options: list[dict], uploads: bool, max_upload_bytes: int) -> list:
    """The header's controls, each set from ``state`` (a link opens with its controls already set)."""
    return [
        html.Label(
            [
                "Trace",
                # the slot keeps the dropdown's size while its lazily loaded code arrives (seconds, while a big
                # trace's load holds the browser): the header's controls never shift
                html.Div(
                    className="picker-slot",
                    children=dcc.Dropdown(
                        id=ids.TRACE_PICKER,
                        options=options,
                        value=state.trace or None,
                        clearable=False,
                        className="picker",
                        maxHeight=PICKER_MAX_HEIGHT_PX,
                    ),
                ),
            ]
        ),  # ~8 traces before it scrolls
        *([upload_control(max_upload_bytes)] if uploads else []),
        html.Label(
            [
                "Steps from",
                html.Div(
                    className="steps-controls",
                    children=[
                        html.Div(
                            className="steps-picker-slot",
                            children=dcc.Dropdown(
                                id=ids.STEPS_PRESET,
                                options=STEP_PRESET_OPTIONS,
                                value=preset_choice(state.steps),
                                clearable=False,
                                searchable=False,
                                className="steps-picker",
                            ),
                        ),
                        dcc.Input(
                            id=ids.STEPS_SOURCE,
                            type="text",
                            value=state.steps,
                            debounce=True,
                            spellCheck=False,
                            placeholder="auto, a preset or a regular expression",
                            className="text-input",
                        ),
                    ],
                ),
            ],
            title="Where the phase views' steps come from: the annotations of a serving framework "
            "(auto picks the one the trace holds), or a rule for any other server: a regular "
            "expression whose named groups (phase, tokens, context_requests, ...) give the step's "
            "fields, e.g. ^forward_(?P<tokens>\\d+)",
        ),
        html.Label(
            [
                "Seed marks prefix",
                dcc.Input(
                    id=ids.DISPATCH_PREFIX,
                    type="text",
                    value=state.prefix,
                    debounce=True,
                    spellCheck=False,
                    className="text-input",
                ),
            ],
            title="the seed preset's parameter: NVTX marks or ranges whose name starts with it are dispatch "
            "marks (a step lasts to the next one)",
        ),
        html.Label(
            [
                "Prefill when tokens ≥",
                # no min=0: the browser would send an invalid number as None, which reads as "automatic"
                dcc.Input(
                    id=ids.THRESHOLD,
                    type="number",
                    debounce=True,
                    placeholder="auto",
                    value=state.threshold,
                    className="num-input",
                ),
                html.Span(id=ids.THRESHOLD_HINT, className="hint"),
            ]
        ),
        html.Label(
            [
                "GPU busy counts",
                dcc.RadioItems(
                    id=ids.BUSY_SOURCE,
                    value=state.busy,
                    inline=True,
                    className="radio",
                    options=[{"label": f" {label}", "value": value} for value, label in BUSY_SOURCES.items()],
                ),
            ]
        ),
        html.Label(
            [
                "Stats for",
                dcc.RadioItems(
                    id=ids.STATS_FOR,
                    value=state.stats,
                    inline=True,
                    className="radio",
                    options=list(STATS_FOR_OPTIONS),
                ),
            ],
            title="Overview, Per GPU, Per phase and the tables: for the whole trace, or for the timeline's "
            "visible window with intervals clipped at its edges",
        ),
        html.Button("Copy link", id=ids.COPY_LINK, className="button", title="Copy a link to this view"),
        html.Button(
            "Download report",
            id=ids.REPORT_BUTTON,
            className="button",
            title="One offline HTML file of this view: figures, tables and settings",
        ),
        dcc.Download(id=ids.REPORT_DOWNLOAD),
        html.A(
            "Compare…",
            id=ids.COMPARE_LINK,
            href=compare_href(state),
            className="button",
            title="Compare this trace (as baseline A) with another run",
        ),
    ]


def build_layout(
    state,
    trace_ids: list[str],
    labels: dict[str, str] | None = None,
    uploads: bool = False,
    max_upload_bytes: int = 2 * 1024**3,
    notices: list[str] = (),
    search: str = "",
    prerendered: bool = False,
    load_line: str | None = None,
) -> html.Div:
    """The whole page for ``state``: header controls, alerts, overview, the timeline (full width, the
    dispatch Gantt above it on the same x axis), per-phase and per-GPU panels, the phase figure and
    the tables. Every view's fragment comes from dashboard/app/views; every slice store is filled
    here, so the views render once on load.

    ``search`` is the canonical query written to the address bar (replacing what was typed);
    ``notices`` are the link's warnings; ``uploads`` adds the "Open file…" control; ``prerendered``:
    the caller fills the views' outputs (``views.prerender``), else the page asks for them on load;
    ``load_line``: the status line of its trace's load (``load_banner.initial_line``), polled until done.
    """
    labels = labels or {}
    options = [{"label": labels.get(t, t), "value": t} for t in trace_ids]
    tabs = [v for v in VIEWS if v.slot == "tabs"]
    return html.Div(
        className="app",
        children=[
            dcc.Store(id=ids.STATE, data=to_dict(state)),
            dcc.Store(id=ids.SEARCH, data={"search": search, "replace": True}),
            dcc.Store(id=ids.ROW_CLICK),
            dcc.Store(id=ids.X_RANGE),
            dcc.Store(id=ids.GRID_EVENTS),
            dcc.Store(id=ids.KEY_EVENT),
            dcc.Store(id=ids.PRERENDERED, data=prerendered),
            dcc.Store(id=ids.RENDER_KICK, data=0),  # never None on a page: see views.base.register_view
            *[dcc.Store(id=ids.slice_id(v.name), data=slice_data(v, state)) for v in VIEWS],
            html.Header(
                className="topbar",
                children=[
                    html.Div(
                        className="brand",
                        children=[
                            html.Span("tracedash", className="logo"),
                            html.Span("GPU trace dashboard", className="tagline"),
                        ],
                    ),
                    html.Div(className="controls", children=header_controls(state, options, uploads, max_upload_bytes)),
                ],
            ),
            *load_banner(load_line),
            *in_slot("alerts", state),
            html.Div(id=ids.UPLOAD_ALERT, className="alerts"),
            html.Div(
                id=ids.STATE_NOTICE,
                className="alerts",
                title="Click to dismiss",
                n_clicks=0,
                children=[alert(n, "info") for n in notices],
            ),
            *in_slot("cards", state),
            # The Gantt and the timeline: full page width, one above the other, so their time axes line up.
            html.Section(className="timeline-section", children=in_slot("main", state)),
            html.Section(
                className="row stats-row",
                children=[html.Div(className="half", children=[f]) for f in in_slot("side", state)],
            ),
            *in_slot("figures", state),
            html.Section(
                className="panel",
                children=dcc.Tabs(
                    id=ids.TABLE_TABS,
                    value=state.tab,
                    children=[
                        dcc.Tab(label=v.tab, value=v.name, id=ids.tab_id(v.name), children=v.layout(state))
                        for v in tabs
                    ],
                ),
            ),
            html.Footer(
                "Times are on the trace's own timeline (nsys: the session's, 0 = capture start). GPU busy is an "
                "interval union, not a sum of kernel times; CUDA API and NVTX totals overlap GPU work and each "
                "other.",
                className="footer",
            ),
        ],
    )
