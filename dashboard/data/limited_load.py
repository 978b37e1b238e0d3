"""Load a trace under limits and print one JSON line: ``python -m dashboard.data.limited_load PATH MEMORY_BYTES
MAX_UNZIPPED_BYTES ALLOW_NSYS_REP`` (the child of ``dashboard.app.upload_check``, which watches its memory).

It sets its own address-space limit (``RLIMIT_AS``) as a backstop to the parent's watch, caps what a gzip stream
may expand to, loads the trace as the dashboard would (no cache) and prints ``{"format": kind}`` or
``{"error": message}``. It imports the loaders and the data layer only: a check starts a fresh interpreter.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Address space a Python process with pandas and pyarrow reserves without using it (thread arenas,
# allocator pools): measured 1.4-1.6 GiB here. The RSS watchdog is the real bound; RLIMIT_AS is the backstop.
ADDRESS_SPACE_OVERHEAD = 2 * 1024**3


def load_limited(path: Path, memory_bytes: int, max_unzipped: int, allow_nsys_rep: bool) -> dict:
    """What loading ``path`` in this process found, as the JSON line's dict. Sets this process's limits."""
    import resource

    limit = memory_bytes + ADDRESS_SPACE_OVERHEAD
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        import dashboard.loaders.kineto_json as kineto
        from dashboard.data.trace import load_trace
        from dashboard.errors import TraceError
        from dashboard.loaders import sniff_format

        kineto.MAX_JSON_BYTES = max_unzipped  # a .json.gz may not expand past this, whatever its ratio
        kind = sniff_format(path)
        if kind == "nsys-rep" and not allow_nsys_rep:
            return {
                "error": f"{path.name}: Nsight Systems reports are not accepted by upload on this server; "
                "upload the SQLite export (nsys export --type sqlite REPORT.nsys-rep)"
            }
        load_trace(path)
        return {"format": kind}
    except MemoryError:
        return {
            "error": f"{path.name}: loading it needs more than the {memory_bytes / 1024**2:,.0f} MiB of memory "
            "this server allows for an upload"
        }
    except TraceError as exc:
        message = str(exc)
        if "gzip bomb" in message:  # the loader's ratio guard, or the absolute cap set above
            message = (
                f"{path.name}: expands to more than this server accepts for an upload "
                f"({max_unzipped / 1024**2:,.0f} MiB unzipped, or 64x the compressed size)"
            )
        return {"error": message}


if __name__ == "__main__":
    p, mem, unz, rep = sys.argv[1:5]
    try:
        result = load_limited(Path(p), int(mem), int(unz), rep == "1")
    except Exception as exc:  # noqa: BLE001 - a bug: the parent answers with a generic line
        result = {"error": f"{Path(p).name}: the trace could not be loaded (internal error: {type(exc).__name__})"}
    sys.stdout.write(json.dumps(result) + "\n")
