"""Load an uploaded trace in a child process whose memory is limited (``dashboard.data.limited_load``).

The parent (``dashboard.app.upload``) runs this on every upload before it is served, one at a time,
and watches the child's resident memory (``check_upload``). The child sets its own address-space
limit (``RLIMIT_AS``) as a backstop, caps what a gzip stream may expand to, loads the trace as the
dashboard would (no cache) and prints one JSON line: ``{"format": kind}`` or ``{"error": message}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

POLL_S = 0.05
CHILD_ENV = {"MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class CheckResult:
    """What loading an upload in the child found: ``format`` (sniffed kind) or ``error`` (one line)."""

    format: str | None = None
    error: str | None = None
    peak_rss_bytes: int = 0


def check_upload(
    path: Path, *, memory_bytes: int, max_unzipped_bytes: int, allow_nsys_rep: bool, timeout_s: float = 600
) -> CheckResult:
    """Load ``path`` in a child process limited to ``memory_bytes`` of resident memory.

    Returns ``CheckResult(format=...)`` when it loads, else ``CheckResult(error=...)`` with a message
    naming only the file's base name (never a path or an OS error text).
    """
    import psutil

    cmd = [
        sys.executable,
        "-m",
        "dashboard.data.limited_load",  # the data layer only: importing dashboard.app (dash) cost 0.5 s a check
        str(path),
        str(memory_bytes),
        str(max_unzipped_bytes),
        "1" if allow_nsys_rep else "0",
    ]
    here = str(Path(__file__).resolve().parent.parent)  # the child runs this very copy of the package
    path_env = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **CHILD_ENV, "PYTHONPATH": path_env},
        cwd="/",
    )
    peak, killed = 0, None
    deadline = time.monotonic() + timeout_s
    try:
        ps = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                rss = ps.memory_info().rss
            except psutil.Error:
                break
            peak = max(peak, rss)
            if rss > memory_bytes:
                killed = "memory"
                proc.kill()
                break
            if time.monotonic() > deadline:
                killed = "time"
                proc.kill()
                break
            time.sleep(POLL_S)
        out, _ = proc.communicate(timeout=60)
    except (subprocess.TimeoutExpired, psutil.Error):
        proc.kill()
        out = proc.communicate()[0]
    name = path.name
    if killed == "memory":
        return CheckResult(
            error=f"{name}: loading it needs more than the {memory_bytes / 1024**2:,.0f} MiB of "
            "memory this server allows for an upload",
            peak_rss_bytes=peak,
        )
    if killed == "time":
        return CheckResult(error=f"{name}: loading it took longer than {timeout_s:.0f} s", peak_rss_bytes=peak)
    try:
        answer = json.loads(out.decode("utf-8").strip().splitlines()[-1])
    except (ValueError, IndexError, UnicodeDecodeError):
        return CheckResult(
            error=f"{name}: the trace could not be loaded (the loader stopped: out of memory "
            f"or a bug; limit {memory_bytes / 1024**2:,.0f} MiB)",
            peak_rss_bytes=peak,
        )
    return CheckResult(format=answer.get("format"), error=answer.get("error"), peak_rss_bytes=peak)
