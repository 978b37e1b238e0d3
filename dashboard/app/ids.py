"""Every component id of the dashboard (one place, so tests can check they are unique)."""

TRACE_PICKER = "trace-picker"
DISPATCH_PREFIX = "dispatch-prefix"
STEPS_SOURCE = "steps-source"  # the "Steps from" text box: auto, a preset or a rule (state.steps)
STEPS_PRESET = "steps-preset"  # the preset list beside it (writes its choice into the box, client-side)
STEPS_FROM = "steps-from"  # "Steps from: vLLM annotations (auto)" in the Per phase panel
STEP_PID = "step-pid"  # the process whose step statistics are shown
STEPS_NOTE = "phases-note-steps"
DISPATCH_NOTE = "phases-note-dispatch"
TIMELINE_SEARCH = "timeline-search"  # the search box over the timeline (state.search)
SEARCH_PREV = "search-prev"
SEARCH_NEXT = "search-next"
SEARCH_STATUS = "search-status"  # "gemm: 43,077 in the trace, 212 in view (…)"
SEARCH_STEP = "search-step"  # {"n", "dir"}: the last Next (+1) / Previous (-1), from buttons or Enter / Shift+Enter
THRESHOLD = "phase-threshold"
BUSY_SOURCE = "busy-source"
ALERTS = "alerts"
OVERVIEW = "overview"
GANTT = "gantt"
PHASE_TABLE = "phase-table"
TIMELINE = "timeline"
TABLE_TABS = "table-tabs"
KERNEL_TABLE = "kernel-table"
API_TABLE = "api-table"
NVTX_TABLE = "nvtx-table"
THRESHOLD_HINT = "threshold-hint"
GPU_TABLE = "gpu-table"
NVTX_GROUP = "nvtx-group"
API_GROUP = "api-group"
PHASE_FIGURE = "phase-analysis"
DISPATCH_TABLE = "dispatch-table"
GAP_THRESHOLD = "gap-threshold"
GAP_TABLE = "gap-table"
GAP_FIGURE = "gap-causes"
LANES = "timeline-lanes"
URL = "url"
COPY_LINK = "copy-link"
STATE_NOTICE = "state-notice"
REPORT_BUTTON = "report-button"
REPORT_DOWNLOAD = "report-download"
KERNEL_FILTER = "kernel-filter"
KERNEL_NAMES = "kernel-names"
HIDE_DEVICES = "hide-devices"
COMPARE_LINK = "compare-link"  # header link to the compare page (/compare/?a=<trace>)
SVG_BUTTON = "svg-download"  # pattern-matching type: {"type": SVG_BUTTON, "graph": GANTT}
UPLOAD_BUTTON = "upload-button"
UPLOAD_STATUS = "upload-status"
UPLOAD_ALERT = "upload-alert"
STATE = "view-state"  # the page's ViewState (dcc.Store, ``state.to_dict``)
SEARCH = "view-search"  # {"search": "?query", "replace": bool}: written to the address bar client-side
ROW_CLICK = "row-click"  # {"kind", "start_ns", "end_ns"} of the last clicked table row (client-side)
STATS_FOR = "stats-for"
X_RANGE = "x-range"  # the timeline's new x range after a zoom/pan/reset (client-side, autosize left out)
KEY_EVENT = "key-event"  # {"key": "fit" | "clear", "n": press count}: the F / Escape key (client-side)
GRID_EVENTS = "grid-events"  # {"sorts": {table: column state}, "filters": {table: model}} the user changed
LANE_CONTROLS = "lane-controls"
PRERENDERED = "page-prerendered"  # True when the page arrived with every view drawn (views.prerender)
LOAD_STATUS = "load-status"  # "Loading big.sqlite: reading kernels … · 4.2 s" while the page's trace loads
LOAD_POLL = "load-poll"  # the dcc.Interval that updates it, enabled only while a load runs
LOAD_PREVIEW = "load-preview"  # the load preview the poll sent ({"trace", "cards", "figure"}), shown once per load
RENDER_KICK = "render-kick"  # set client-side on load when it did not: every view's callback then renders
VIEW_SLICE = "view-slice"  # pattern-matching type: {"type": VIEW_SLICE, "view": name}: the fields a view reads
NOTE_TEXT = "note-text"  # the text box of "Add note"
NOTE_ADD = "note-add"
NOTES_LIST = "notes-list"  # the Notes panel's list
NOTE_ZOOM = "note-zoom"  # pattern-matching type: {"type": NOTE_ZOOM, "index": i}: zoom to note i
NOTE_REMOVE = "note-remove"  # pattern-matching type: {"type": NOTE_REMOVE, "index": i}: the × of note i


def scope(view: str) -> str:
    """Id of the one-line "Stats for: …" note of a statistics view."""
    return f"{view}-scope"


def tab_id(view: str) -> str:
    """Id of the tab of a table view (its label can change: the dispatch table is "Steps" for a framework's steps)."""
    return f"tab-{view}"


def slice_id(view: str) -> dict:
    """Id of the store holding the state fields ``view`` reads (its callback's only input)."""
    return {"type": VIEW_SLICE, "view": view}


ALL = [
    TRACE_PICKER,
    DISPATCH_PREFIX,
    THRESHOLD,
    BUSY_SOURCE,
    ALERTS,
    OVERVIEW,
    GANTT,
    PHASE_TABLE,
    TIMELINE,
    TABLE_TABS,
    KERNEL_TABLE,
    API_TABLE,
    NVTX_TABLE,
    THRESHOLD_HINT,
    GPU_TABLE,
    NVTX_GROUP,
    PHASE_FIGURE,
    DISPATCH_TABLE,
    GAP_THRESHOLD,
    GAP_TABLE,
    GAP_FIGURE,
    LANES,
    URL,
    COPY_LINK,
    STATE_NOTICE,
    REPORT_BUTTON,
    REPORT_DOWNLOAD,
    KERNEL_FILTER,
    HIDE_DEVICES,
    KERNEL_NAMES,
    UPLOAD_BUTTON,
    UPLOAD_STATUS,
    UPLOAD_ALERT,
    STATE,
    SEARCH,
    ROW_CLICK,
    STATS_FOR,
    LANE_CONTROLS,
    API_GROUP,
    X_RANGE,
    GRID_EVENTS,
    KEY_EVENT,
    PRERENDERED,
    RENDER_KICK,
    NOTE_TEXT,
    NOTE_ADD,
    NOTES_LIST,
    STEPS_SOURCE,
    STEPS_PRESET,
    STEPS_FROM,
    STEP_PID,
    STEPS_NOTE,
    DISPATCH_NOTE,
    TIMELINE_SEARCH,
    SEARCH_PREV,
    SEARCH_NEXT,
    SEARCH_STATUS,
    SEARCH_STEP,
]
