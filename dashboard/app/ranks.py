"""``tracedash serve --ranks A B ...``: several traces offered as the ranks of one view.

``RanksStore`` wraps the server's TraceStore: it adds one trace id for the group (listed first)
and passes every other call through, so the rank files stay available one by one as well (the
dispatch and phase analysis needs a single rank).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from dashboard.app.store import TraceStore
from dashboard.app.trace_files import discover, trace_id
from dashboard.data.multirank import load_ranks, ranks_name
from dashboard.data.trace import LoadedTrace
from dashboard.errors import TraceError, TraceFormatError
from dashboard.loaders import sniff_format
from dashboard.loaders.nsys_schema import check_nsys_export

__all__ = ["RanksStore", "check_rank_file", "ranks_store", "ranks_trace_id"]


def ranks_trace_id(paths: list[Path]) -> str:
    """Stable id of a group of ranks for links: ``ranks(a.sqlite+b.sqlite)@`` + 32 hex digits of a
    hash of the members' own trace ids (in rank order). Never a path."""
    h = hashlib.sha256("\n".join(trace_id(Path(p)) for p in paths).encode("utf-8", "surrogateescape"))
    return f"{ranks_name([Path(p).name for p in paths])[:200]}@{h.hexdigest()[:32]}"


class RanksStore:
    """A TraceStore plus one merged multi-rank trace (``ranks_id``), loaded once and kept.

    Every attribute other than ids/label/path/get/explain_missing is the inner store's.
    """

    def __init__(
        self,
        inner: TraceStore,
        rank_files: list[Path],
        *,
        dispatch_prefix: str = "CG_DISPATCH",
        cache=None,
        n_ranks: int | None = None,
    ):
        self._inner = inner
        self.rank_files = [Path(p).resolve() for p in rank_files]
        self.n_ranks = n_ranks if n_ranks is not None else len(self.rank_files)  # a Kineto file may hold several
        self.ranks_id = ranks_trace_id(self.rank_files)
        self._prefix = dispatch_prefix
        self._cache = cache
        self._lock = threading.Lock()
        self._merged: LoadedTrace | None = None

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def ids(self) -> list[str]:
        """The group's id first, then the inner store's ids."""
        return [self.ranks_id, *self._inner.ids()]

    def listed_ids(self, extra=()) -> list[str]:
        """The group's id first, then the inner store's picker ids (see ``TraceStore.listed_ids``)."""
        return [self.ranks_id, *self._inner.listed_ids(extra)]

    def label(self, trace_id: str) -> str:
        """Picker label: ``"2 ranks: a.sqlite + b.sqlite"`` for the group, else the inner label."""
        if trace_id == self.ranks_id:
            return f"{self.n_ranks} ranks: " + " + ".join(p.name for p in self.rank_files)
        return self._inner.label(trace_id)

    def explain_missing(self, trace_id: str) -> str:
        """The inner store's message for an id not served here."""
        return self._inner.explain_missing(trace_id)

    def path(self, trace_id: str) -> Path:
        """The rank-0 file for the group (for names only), else the inner store's file."""
        return self.rank_files[0] if trace_id == self.ranks_id else self._inner.path(trace_id)

    def get(self, trace_id: str) -> LoadedTrace:
        """The merged trace for the group id (``load_ranks``, once), else the inner store's trace.

        Raises:
            TraceNotFoundError, TraceFormatError: as ``load_ranks`` / ``TraceStore.get``.
        """
        if trace_id != self.ranks_id:
            return self._inner.get(trace_id)
        with self._lock:
            if self._merged is None:
                self._merged = load_ranks(self.rank_files, dispatch_prefix=self._prefix, cache=self._cache)
            return self._merged


def check_rank_file(path: Path) -> int:
    """Cheap check that ``path`` can be a rank lane: an nsys SQLite export (with nsys tables), an
    ``.nsys-rep`` report or a Kineto trace (parsed, to refuse a JSON that only looks like one); never
    a summary JSON. Reads no nsys events.

    Returns:
        How many ranks the file holds (a Kineto file may hold several; every other file 1).

    Raises:
        TraceNotFoundError, TraceFormatError: naming the file.
    """
    fmt = sniff_format(Path(path))
    if fmt == "summary-json":
        raise TraceFormatError(
            f"{Path(path).name}: a summary JSON has no intervals: only nsys exports can be opened as ranks"
        )
    if fmt == "nsys-sqlite":
        check_nsys_export(path)
    elif fmt == "kineto-json":  # "looks like JSON" says little: parse it now (seconds), not at the first view
        from dashboard.loaders.kineto_json import load_kineto_ranks

        return len(load_kineto_ranks(path))
    return 1


def ranks_store(
    rank_files: list[str | os.PathLike],
    paths: list[str | os.PathLike] = (),
    trace_dirs: list[str | os.PathLike] = (),
    *,
    dispatch_prefix: str = "CG_DISPATCH",
    cache=None,
    memory_limit: int | None = None,
    upload_dir=None,
) -> RanksStore:
    """A RanksStore serving the ranks as one view plus every rank file and ``paths``/``trace_dirs``.

    Raises:
        TraceNotFoundError: a file or directory does not exist. TraceError: fewer than 2 ranks.
        TraceFormatError: a rank file cannot be opened as a rank (see ``check_rank_file``).
    """
    ranks = discover(list(rank_files), [])
    if not ranks:
        raise TraceError("--ranks needs at least two different trace files")
    # fail now, with the file's name, not when a browser first opens the group
    n_ranks = sum(check_rank_file(rank) for rank in ranks)
    if n_ranks < 2:
        raise TraceError("--ranks needs at least two different trace files (or one file holding several ranks)")
    files = list(dict.fromkeys([*ranks, *discover(list(paths), list(trace_dirs))]))
    inner = TraceStore(
        files, dispatch_prefix=dispatch_prefix, cache=cache, memory_limit=memory_limit, upload_dir=upload_dir or None
    )
    return RanksStore(inner, ranks, dispatch_prefix=dispatch_prefix, cache=cache, n_ranks=n_ranks)
