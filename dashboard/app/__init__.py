"""The Dash app (the only package that imports dash): ``create_app`` builds a ready server."""

from __future__ import annotations

import os
from pathlib import Path

from dash import Dash

from dashboard.app.callbacks import register_callbacks
from dashboard.app.compare_callbacks import mount_compare, register_compare_link
from dashboard.app.layout import build_layout
from dashboard.app.store import TraceStore, discover

__all__ = ["create_app", "assets_folder"]


def assets_folder() -> str:
    """The CSS/JS folder: inside the installed package, else the repository's top-level assets/."""
    packaged = Path(__file__).resolve().parent.parent / "assets"
    if packaged.is_dir():
        return str(packaged)
    return str(Path(__file__).resolve().parent.parent.parent / "assets")


def create_app(paths: list[str | os.PathLike] = (), trace_dirs: list[str | os.PathLike] = (),
               dispatch_prefix: str = "CG_DISPATCH", store: TraceStore | None = None, cache=None) -> Dash:
    """Build the dashboard for the given trace files and directories.

    Args:
        cache: a ``dashboard.cache.TraceCache`` for nsys exports (None: load from SQLite each time).

    Raises:
        TraceNotFoundError: a given path or directory does not exist.
    """
    store = store or TraceStore(discover(list(paths), list(trace_dirs)), dispatch_prefix=dispatch_prefix, cache=cache)
    trace_ids = store.ids()
    app = Dash(
        __name__,
        title="tracedash",
        assets_folder=assets_folder(),
        suppress_callback_exceptions=False,
        update_title=None,
    )
    app.layout = build_layout(trace_ids, trace_ids[0] if trace_ids else None, dispatch_prefix,
                              labels={t: store.label(t) for t in trace_ids})
    register_callbacks(app, store)
    register_compare_link(app)
    mount_compare(app, store, dispatch_prefix)  # /compare/: a second Dash app on this server
    app.server.config["TRACE_STORE"] = store
    return app
