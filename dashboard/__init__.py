"""tracedash: a browser dashboard for NVIDIA Nsight Systems (nsys) GPU profiling traces.

Importing ``dashboard`` (or ``dashboard.analysis``) never imports Dash: the app factory is
loaded lazily through ``dashboard.create_app``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "create_app", "load_trace"]


def __getattr__(name: str):  # PEP 562: keep Dash out of analysis-only imports
    if name == "create_app":
        from dashboard.app import create_app

        return create_app
    if name == "load_trace":
        from dashboard.data.trace import load_trace

        return load_trace
    raise AttributeError(name)
