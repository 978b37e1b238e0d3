"""The Dash app (the only package that imports dash): ``create_app`` builds a ready server."""

from __future__ import annotations

import atexit
import os
import shutil
from pathlib import Path

from dash import Dash

from dashboard.app.callbacks import register_callbacks
from dashboard.app.compare_callbacks import mount_compare, register_compare_link
from dashboard.app.layout import build_layout
from dashboard.app.store import TraceStore, discover, make_upload_dir
from dashboard.app.security import SecurityConfig, register_security
from dashboard.app.upload import DEFAULT_MAX_UPLOAD_BYTES, UploadPolicy, register_routes

__all__ = ["create_app", "assets_folder"]


def assets_folder() -> str:
    """The CSS/JS folder: inside the installed package, else the repository's top-level assets/."""
    packaged = Path(__file__).resolve().parent.parent / "assets"
    if packaged.is_dir():
        return str(packaged)
    return str(Path(__file__).resolve().parent.parent.parent / "assets")


def create_app(paths: list[str | os.PathLike] = (), trace_dirs: list[str | os.PathLike] = (),
               dispatch_prefix: str = "CG_DISPATCH", store: TraceStore | None = None, cache=None,
               memory_limit: int | None = None, uploads: bool | str | os.PathLike = True,
               max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES, upload_policy: UploadPolicy | None = None,
               security: SecurityConfig | None = None) -> Dash:
    """Build the dashboard for the given trace files and directories.

    Args:
        cache: a ``dashboard.cache.TraceCache`` for nsys exports (None: load from SQLite each time).
        memory_limit: bytes of loaded traces to keep (None: ``store.default_memory_limit()``).
        uploads: True: browser uploads go to a new private temp directory, removed at exit; a path:
            use that directory (shared by gunicorn workers); False: uploads off.
        max_upload_bytes: the largest upload accepted (default 2 GiB).
        upload_policy: every bound of uploads (default: ``UploadPolicy(max_upload_bytes)``).
        security: allowed host names, access token, callback body limit (default: loopback only).

    Raises:
        TraceNotFoundError: a given path or directory does not exist.
    """
    if store is None:
        discover(list(paths), list(trace_dirs))  # validates every path; directories are then rescanned live
        files = [p for p in map(Path, paths) if not p.is_dir()]
        dirs = [*trace_dirs, *(p for p in map(Path, paths) if p.is_dir())]
        upload_dir = None
        if uploads is True:
            upload_dir = make_upload_dir()
            atexit.register(shutil.rmtree, upload_dir, True)
        elif uploads:
            upload_dir = Path(uploads)
        store = TraceStore(files, trace_dirs=dirs, memory_limit=memory_limit, dispatch_prefix=dispatch_prefix,
                           cache=cache, upload_dir=upload_dir)
    policy = upload_policy or UploadPolicy(max_upload_bytes=max_upload_bytes)
    app = Dash(
        __name__,
        title="tracedash",
        assets_folder=assets_folder(),
        suppress_callback_exceptions=False,
        update_title=None,
    )

    def layout():
        trace_ids = store.listed_ids()  # rescans: new exports appear; uploads only through their link
        return build_layout(trace_ids, trace_ids[0] if trace_ids else None, dispatch_prefix,
                            labels={t: store.label(t) for t in trace_ids},
                            uploads=store.upload_dir is not None, max_upload_bytes=policy.max_upload_bytes)

    app.layout = layout
    register_callbacks(app, store)
    register_routes(app.server, store, policy.max_upload_bytes, policy)
    register_compare_link(app)
    compare = mount_compare(app, store, dispatch_prefix)  # /compare/: a second Dash app on this server
    register_security(app.server, [app, compare], security)
    app.server.config["TRACE_STORE"] = store
    return app
