"""Every component id of the dashboard (one place, so tests can check they are unique)."""

TRACE_PICKER = "trace-picker"
DISPATCH_PREFIX = "dispatch-prefix"
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
SYNC_SINK = "x-sync-sink"
THRESHOLD_HINT = "threshold-hint"
GPU_TABLE = "gpu-table"
NVTX_GROUP = "nvtx-group"
PHASE_FIGURE = "phase-analysis"
DISPATCH_TABLE = "dispatch-table"

ALL = [TRACE_PICKER, DISPATCH_PREFIX, THRESHOLD, BUSY_SOURCE, ALERTS, OVERVIEW, GANTT, PHASE_TABLE, TIMELINE,
       TABLE_TABS, KERNEL_TABLE, API_TABLE, NVTX_TABLE, SYNC_SINK, THRESHOLD_HINT, GPU_TABLE, NVTX_GROUP, PHASE_FIGURE, DISPATCH_TABLE]
