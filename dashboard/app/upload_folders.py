"""Uploaded files on disk: one private folder per upload, kept as an LRU by last use across worker processes."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

# An upload folder's name: the random token (128 bits, hex) that is also the second half of its trace id.
TOKEN_HEX = 32
TOKEN_RE = re.compile(r"^[0-9a-f]{%d}$" % TOKEN_HEX)


def make_upload_dir() -> Path:
    """A new private (mode 0700) temporary directory for browser uploads."""
    return Path(tempfile.mkdtemp(prefix="tracedash-uploads-"))


# Uploads on disk: an LRU by last use (the folder's mtime, touched on every use by any worker), kept
# to MAX_UPLOADS files and a byte budget that count uploads in progress and recent ones (see
# dashboard.app.upload.reserve_upload); one used or written in the last UPLOAD_GRACE_S is never removed
# to make room (the new upload is refused instead). A folder still being written and untouched for
# UPLOAD_STALL_S is a leftover of a killed process.
MAX_UPLOADS = 32
UPLOAD_GRACE_S = 300
UPLOAD_STALL_S = 3600
_TOUCH_EVERY_S = 10


def touch_upload(folder: Path) -> None:
    """Mark an upload folder as just used (its mtime), at most every few seconds; races are harmless."""
    import time

    try:
        if time.time() - folder.stat().st_mtime > _TOUCH_EVERY_S:
            os.utime(folder)
    except OSError:
        pass


@dataclass
class UploadFolder:
    """One upload on disk: its folder, last use (mtime, s), bytes it counts for (the file, or while
    in progress the larger of what is written and what was reserved), the client key, whether it
    is still being written."""

    path: Path
    mtime: float
    bytes: int
    client: str
    in_progress: bool
    removed: bool = False


def upload_folders(upload_dir: Path) -> list[UploadFolder]:
    """Every upload folder (a 32-hex token name) in ``upload_dir``, least recently used first."""
    import json
    import time

    out = []
    for sub in upload_dir.iterdir() if upload_dir.is_dir() else []:
        if not TOKEN_RE.match(sub.name) or sub.is_symlink() or not sub.is_dir():
            continue
        try:
            st = sub.stat()
            files = [f for f in sub.rglob("*") if f.is_file()]
            size = sum(f.stat().st_size for f in files if f.name != ".meta.json")
            try:
                meta = json.loads((sub / ".meta.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                meta = {}
            pending = (sub / ".pending").is_dir()
            newest = max([st.st_mtime, *(f.stat().st_mtime for f in files)])
        except OSError:  # removed meanwhile by another worker
            continue
        reserved = int(meta.get("reserved", 0) or 0) if pending else 0
        stale = pending and time.time() - newest > UPLOAD_STALL_S
        out.append(
            UploadFolder(sub, st.st_mtime, max(size, reserved), str(meta.get("client", "")), pending and not stale)
        )
    out.sort(key=lambda f: f.mtime)
    return out


def prune_uploads(
    upload_dir: Path, max_uploads: int = MAX_UPLOADS, max_bytes: int | None = None, grace_s: float = UPLOAD_GRACE_S
) -> list[Path]:
    """Delete the least recently used upload folders beyond ``max_uploads`` folders or ``max_bytes``
    in all, never one used or written in the last ``grace_s`` seconds nor one being written. Safe
    against other threads and worker processes doing the same.

    Returns the folders removed, oldest first.
    """
    import time

    folders = upload_folders(upload_dir)
    now = time.time()
    total = sum(f.bytes for f in folders)
    count = len(folders)
    removed = []
    for f in folders:
        if count <= max_uploads and (max_bytes is None or total <= max_bytes):
            break
        if f.in_progress or now - f.mtime < grace_s:
            continue
        shutil.rmtree(f.path, ignore_errors=True)
        removed.append(f.path)
        count -= 1
        total -= f.bytes
    return removed
