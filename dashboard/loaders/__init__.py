"""Loaders: files -> typed pandas frames and the Summary model. Format is sniffed from content.

The loaders are imported when first used (``dashboard.loaders.load_nsys_sqlite`` and the rest), so that
a command answered from the cache, or a light module such as ``side_files``, never imports pandas.
"""

from __future__ import annotations

import importlib

__all__ = ["sniff_format", "load_nsys_sqlite", "load_summary_json", "load_kineto_json"]

_HOMES = {
    "sniff_format": "sniff",
    "load_nsys_sqlite": "nsys_sqlite",
    "load_summary_json": "summary_json",
    "load_kineto_json": "kineto_json",
}


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
