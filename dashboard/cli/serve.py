"""tracedash serve: the dashboard, on gunicorn workers or the Flask debug server."""

from __future__ import annotations

import os
import sys

from dashboard import __version__
from dashboard.cli.args import _cache, _say, default_trace_dir
from dashboard.errors import TraceError


def _check_named_files(paths) -> None:
    """A file named on the command line that is no trace is refused now, with the message ``summarize`` gives
    (a folder is scanned for traces instead; a bad file found in one shows its error in the page). An nsys export
    is opened and its schema probed too (no rows read): a SQLite file that is no nsys export, or one whose
    tables cannot be read, is refused as well."""
    from pathlib import Path

    from dashboard.loaders import sniff_format

    for p in map(Path, paths):
        if not p.is_dir() and sniff_format(p) == "nsys-sqlite":
            from dashboard.loaders.nsys_reads import estimate_rows

            estimate_rows(p)


def _serve(args) -> int:
    from functools import partial

    from dashboard.app import create_app
    from dashboard.app.store import default_memory_limit
    from dashboard.app.upload_folders import make_upload_dir
    from dashboard.data.memory import tune_malloc

    tune_malloc()  # before any trace is loaded or worker forked: freed frames go back to the system
    dirs = list(args.trace_dir or [])
    if not args.traces and not dirs and not args.ranks:
        d = default_trace_dir()
        if d is None:
            raise TraceError("no traces given and no sample_traces/ folder found: pass TRACE files or --trace-dir DIR")
        dirs = [d]
    _check_named_files([*args.traces, *(args.ranks or [])])
    workers = args.workers or 1
    if workers > 1 and args.debug:
        raise TraceError("--debug runs one process: leave out --workers")
    upload_dir = False if args.no_upload else make_upload_dir()  # shared by every worker
    if upload_dir:
        import atexit
        import shutil

        atexit.register(shutil.rmtree, upload_dir, True)
    memory_limit = args.memory_limit or default_memory_limit(workers)
    from dashboard.app.security import SecurityConfig, read_token
    from dashboard.app.upload import UploadPolicy

    try:
        token = read_token(args.auth_token)
    except ValueError as exc:
        raise TraceError(str(exc)) from None
    security = SecurityConfig(host=args.host, allowed_hosts=tuple(args.allowed_host or ()), auth_token=token)
    policy = UploadPolicy(
        max_upload_bytes=args.max_upload,
        max_bytes=args.upload_space,
        max_unzipped_bytes=args.max_unzipped,
        allow_nsys_rep=args.upload_nsys_rep,
        memory_bytes=args.upload_memory or max(1024**3, min(memory_limit, 4 * 1024**3)),
    )
    if args.ranks:  # several traces as the ranks of one view (listed first); each rank also on its own
        from dashboard.app.ranks import ranks_store

        def factory():
            return create_app(
                dispatch_prefix=args.dispatch_prefix,
                upload_policy=policy,
                security=security,
                steps=args.steps,
                store=ranks_store(
                    args.ranks,
                    args.traces,
                    dirs,
                    dispatch_prefix=args.dispatch_prefix,
                    cache=_cache(args),
                    memory_limit=memory_limit,
                    upload_dir=upload_dir,
                ),
            )
    else:
        factory = partial(
            create_app,
            args.traces,
            dirs,
            dispatch_prefix=args.dispatch_prefix,
            cache=_cache(args),
            memory_limit=memory_limit,
            uploads=upload_dir,
            upload_policy=policy,
            security=security,
            steps=args.steps,
        )
    app = factory()  # built here too, so bad paths fail now with one line, before any worker starts
    store = app.server.config["TRACE_STORE"]
    if not store.ids():
        raise TraceError("no .sqlite or .json traces found in " + ", ".join(map(str, dirs or args.traces)))
    if not os.environ.get("WERKZEUG_RUN_MAIN"):  # --debug's reloader child: its parent holds the socket already
        # before the warnings and "serving": a taken port or an unknown host is the only line printed
        _check_bind(args.host, args.port)
    if args.host not in ("127.0.0.1", "localhost", "::1") and token is None:
        _say(
            f"warning: serving on {args.host}: anyone who can reach this address can read the traces "
            "(--auth-token FILE asks for a team token)",
            file=sys.stderr,
        )
    mode = (
        f"{workers} gunicorn workers"
        if workers > 1
        else ("one process (Flask debug server)" if args.debug else "one gunicorn worker")
    )
    _say(
        f"tracedash {__version__}: serving {len(store.ids())} trace(s) on http://{args.host}:{args.port}/ "
        f"({mode}, up to {memory_limit / 1024**3:.1f} GiB of loaded traces{' each' if workers > 1 else ''})",
        file=sys.stderr,
    )
    if not args.debug:  # gunicorn exits on SIGTERM/SIGINT like Ctrl-C: the upload folder is removed at exit
        from dashboard.app.server import run_gunicorn

        run_gunicorn(factory, args.host, args.port, workers)
    else:
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        _say("(--debug: Flask's development server; never for a shared server)", file=sys.stderr)
        if os.environ.get("WERKZEUG_RUN_MAIN"):  # the reloader's child serves; the parent only watches
            from dashboard.app.server import prepare, start_warming

            prepare(app)
            start_warming(app)
        app.run(host=args.host, port=args.port, debug=True, dev_tools_disable_version_check=True)
    return 0


def _check_bind(host: str, port: int) -> None:
    """Fail early, with one line, when the address cannot be served (in use, unknown host)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, addr = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
    except OSError as exc:
        raise TraceError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
