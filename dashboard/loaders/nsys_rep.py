"""Nsight Systems reports (``.nsys-rep``/``.qdrep``): export to SQLite with the installed ``nsys``.

The export is written into a folder of ours (the trace cache, or a temporary folder), never next
to the user's report, and the report itself is only read. Without ``nsys`` on PATH, or when the
installed ``nsys`` cannot read the report (cut short, or recorded by a newer Nsight Systems), a
TraceFormatError says exactly which command to run by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from dashboard.errors import TraceFormatError, clean_message

__all__ = ["REP_MAGIC", "REP_SUFFIXES", "is_nsys_report", "manual_export_command", "nsys_version", "export_report"]

REP_MAGIC = b"NVIDIA Tegra Profiler Report"  # first bytes of every .nsys-rep/.qdrep seen (2021.x-2026.x)
REP_SUFFIXES = (".nsys-rep", ".qdrep")
EXPORT_TIMEOUT_S = 1800


def is_nsys_report(path: Path, head: bytes) -> bool:
    """Whether a file is an Nsight Systems report, by its first bytes or its suffix."""
    return head.startswith(REP_MAGIC) or path.name.lower().endswith(REP_SUFFIXES)


def _has_report_magic(path: Path) -> bool:
    """Whether the file starts with ``REP_MAGIC`` (False when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(REP_MAGIC)) == REP_MAGIC
    except OSError:
        return False


def manual_export_command(path: Path) -> str:
    """The command a user runs to export ``path`` by hand (output next to a name they choose)."""
    return f"nsys export --type sqlite --output {path.stem}.sqlite {path.name}"


def nsys_version(nsys: str) -> str:
    """``nsys --version`` output, e.g. "NVIDIA Nsight Systems version 2022.4.2.1-df9881f" ("" if it fails)."""
    try:
        out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""


def export_report(path: Path, out_dir: Path, key: str) -> Path:
    """Export an ``.nsys-rep`` report to ``out_dir/<key>.sqlite`` with ``nsys export`` and return that path.

    An existing ``<key>.sqlite`` (an earlier export of the same file identity) is reused. The export
    goes to a temporary name first and is renamed into place, so a failed export leaves nothing.

    Args:
        path: the report (read only).
        out_dir: folder for the export (created if missing); never the report's own folder.
        key: file-identity key of the report (``cache.file_identity``), so a changed report is re-exported.

    Raises:
        TraceFormatError: ``nsys`` not on PATH; the export failed (message from nsys, with the two likely
            causes: a report cut short, or one recorded by a newer Nsight Systems; or, when the file lacks the report
            header, "not an Nsight Systems report"); or the folder cannot be written.
    """
    target = out_dir / f"{key}.sqlite"
    if target.is_file():
        return target
    nsys = shutil.which("nsys")
    if nsys is None and not _has_report_magic(path):
        raise TraceFormatError(
            f"{path.name}: not an Nsight Systems report (it does not start with the report header "
            f"{REP_MAGIC.decode()!r}). Pass an .nsys-rep recorded by nsys, or its SQLite export "
            f"({manual_export_command(path)})"
        )
    if nsys is None:
        raise TraceFormatError(
            f"{path.name}: an Nsight Systems report; reading it needs 'nsys' on PATH, which was not found. "
            f"Export it by hand and open the .sqlite instead: {manual_export_command(path)}"
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TraceFormatError(f"{path.name}: cannot create {out_dir} for the export ({exc.strerror or exc})") from exc
    tmp = out_dir / f".tmp-{key}-{os.getpid()}.sqlite"
    cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(tmp), str(path)]
    try:
        run = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=EXPORT_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        tmp.unlink(missing_ok=True)
        raise TraceFormatError(
            f"{path.name}: 'nsys export' did not finish within {EXPORT_TIMEOUT_S} s; "
            f"export it by hand: {manual_export_command(path)}"
        ) from None
    except OSError as exc:
        raise TraceFormatError(f"{path.name}: cannot run {nsys} ({exc.strerror or exc})") from exc
    if run.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        said = [
            ln.strip()
            for ln in (run.stderr + "\n" + run.stdout).replace("\r", "\n").splitlines()
            if ln.strip() and not ln.strip().startswith("Exporting ")
        ]
        why = clean_message(' '.join(said[-2:]) or 'no message', 160)
        if not _has_report_magic(path):
            raise TraceFormatError(
                f"{path.name}: not an Nsight Systems report (it does not start with the report header "
                f"{REP_MAGIC.decode()!r}; 'nsys export' failed: {why}). Pass an .nsys-rep recorded by nsys, "
                "or its SQLite export"
            )
        version = nsys_version(nsys) or nsys
        raise TraceFormatError(
            f"{path.name}: 'nsys export' failed (exit {run.returncode}: {why}). "
            f"The installed {version} cannot read this report: it may be cut short (copied before the recording "
            "ended, or truncated in transfer), or recorded by a newer Nsight Systems, whose nsys then exports "
            f"it: {manual_export_command(path)}"
        )
    os.replace(tmp, target)
    return target
