"""The data layer: one derived-data object per loaded trace (``analysis.TraceAnalysis``).

Loaders turn files into typed frames (``dashboard.loaders``); ``dashboard.data.trace`` loads a file into a
``LoadedTrace``; this package owns every result derived from a trace and memoised for it (busy
unions, the kernel -> launch join, dispatches and their attribution, window cuts, findings), so that
render, findings, compare, export and the CLI share one copy.
"""
