"""Side files of a SQLite database: whether another program is writing it (standard library only: the
CLI checks this before answering from its cache, without importing the loaders)."""

from __future__ import annotations

from pathlib import Path

from dashboard.errors import TraceFormatError

WRITER_SIDE_FILES = ("-wal", "-journal")


def check_no_writer(path: Path) -> None:
    """Raise ``TraceFormatError`` when another program is writing ``path`` (or crashed while writing).

    A non-empty ``NAME-journal`` (rollback mode: the file may hold uncommitted pages) or ``NAME-wal``
    (WAL mode: committed changes not yet in the file) next to it means the file alone is not a
    consistent database. Reading it immutable would silently give partial data, and opening it
    normally would write (recover the journal, create ``-shm``), which tracedash never does.
    An exclusive lock alone, with nothing written yet, leaves no side file: the file is read as is.
    """
    for suffix in WRITER_SIDE_FILES:
        side = path.with_name(path.name + suffix)
        try:
            size = side.stat().st_size
        except OSError:
            continue
        if size > 0:
            raise TraceFormatError(
                f"{path.name}: another program is writing this SQLite file, or stopped while writing it "
                f"({side.name} exists next to it, {size:,} bytes), so its content may be incomplete. Try again "
                "when the writer has finished; after a crash, open it once with sqlite3 to recover it."
            )
