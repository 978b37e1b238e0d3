"""Production serving: the dashboard under gunicorn with N worker processes (``tracedash serve --workers N``).

Each worker builds its own app (its own TraceStore, bounded by its share of memory); all workers share
one private upload directory made by the master, so a trace uploaded through one worker is found by the
others (they rescan it on an unknown id). Workers are ``gthread`` (several threads each), so a slow
first load of one trace does not block other users of the same worker.
"""

from __future__ import annotations

from gunicorn.app.base import BaseApplication

# Seconds a request may take before gunicorn restarts the worker: a first load of a 10M-kernel
# export takes ~15 s on 2 cores, so this is generous.
WORKER_TIMEOUT_S = 300
THREADS_PER_WORKER = 4


class DashboardServer(BaseApplication):
    """A gunicorn application whose workers each call ``factory()`` to build the Flask server."""

    def __init__(self, factory, options: dict):
        self._factory = factory
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            if key in self.cfg.settings and value is not None:
                self.cfg.set(key, value)

    def load(self):
        return self._factory().server


def run_gunicorn(factory, host: str, port: int, workers: int) -> None:
    """Serve ``factory()``'s Dash app on ``host:port`` with ``workers`` processes until stopped
    (SIGINT/SIGTERM). Blocks."""
    DashboardServer(factory, {
        "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "workers": workers,
        "worker_class": "gthread",
        "threads": THREADS_PER_WORKER,
        "timeout": WORKER_TIMEOUT_S,
        "graceful_timeout": 10,
        "preload_app": False,
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "warning",
        "proc_name": "tracedash",
    }).run()
