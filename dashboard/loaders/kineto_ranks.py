"""Kineto files that hold several ranks: told apart and split into one decoded trace per rank.

Shapes recognised (``kineto_rank_parts``): a top-level list of trace objects; a TraceLens TraceFusion
merge (``args.rank`` on its events); one trace whose process metadata names two or more ranks. Such a
file is never shown as one GPU: ``parse_kineto`` refuses it (``MultiRankTraceError``) and
``load_kineto_ranks`` splits it.
"""

from __future__ import annotations

import re

from dashboard.errors import TraceFormatError

__all__ = ["MultiRankTraceError", "distributed_rank", "fused_rank", "kineto_rank_parts", "FUSED_HOW"]

_INT64_MAX = 2**63 - 1


def distributed_rank(data: dict) -> int | None:
    """The rank a trace declares (``distributedInfo.rank``: a non-negative int64), else None."""
    info = data.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if type(rank) is int and 0 <= rank <= _INT64_MAX else None


class MultiRankTraceError(TraceFormatError):
    """A Kineto file that holds the traces of several ranks: never shown as one GPU.

    ``ranks`` lists the ranks found; ``kineto_rank_parts`` splits the file into them.
    """

    def __init__(self, message: str, ranks: list[int]):
        super().__init__(message)
        self.ranks = ranks


_RANK_LABEL = re.compile(r"\brank\s*[:#=_-]?\s*(\d+)\b", re.IGNORECASE)


def _process_ranks(events: list) -> tuple[dict[str, int], int]:
    """pid (as text) -> rank, from process_name / process_labels metadata naming a rank; and how
    many pids are named for two different ranks (their events cannot be told apart)."""
    out: dict[str, int] = {}
    clashes: set[str] = set()
    for ev in events:
        if type(ev) is dict and ev.get("ph") == "M" and ev.get("name") in ("process_name", "process_labels"):
            args = ev.get("args")
            text = args.get("name", args.get("labels")) if type(args) is dict else None
            m = _RANK_LABEL.search(text) if isinstance(text, str) else None
            if m:
                pid, rank = str(ev.get("pid")), int(m.group(1))
                if out.setdefault(pid, rank) != rank:
                    clashes.add(pid)
    return out, len(clashes)


def fused_rank(ev) -> int | None:
    """The ``args.rank`` TraceLens TraceFusion writes on every event it merges (None: none)."""
    args = ev.get("args") if type(ev) is dict else None
    rank = args.get("rank") if type(args) is dict else None
    return rank if type(rank) is int and 0 <= rank <= _INT64_MAX else None


FUSED_HOW = (
    "open the per-rank traces TraceFusion merged (one PyTorch profiler trace per rank, as "
    "tensorboard_trace_handler writes them) with: tracedash serve --ranks FILE..."
)


def _fused_parts(events: list, name: str) -> dict[int, list] | None:
    """A TraceLens TraceFusion merge split by ``args.rank`` (rank -> events, metadata without a rank
    in every part), or None when the events do not carry two or more ranks that way. TraceFusion
    offsets pid and correlation per rank but leaves ``args.device`` as each rank's own GPU 0, so one
    view of it would show every rank's kernels on one GPU.

    Raises:
        TraceFormatError: some events that are not metadata carry no rank (cannot be split safely).
    """
    ranks = [fused_rank(ev) for ev in events]
    distinct = sorted({r for r in ranks if r is not None})
    if len(distinct) < 2:
        return None
    carried = sum(r is not None for r in ranks)
    orphans = sum(1 for ev, r in zip(events, ranks) if r is None and not (type(ev) is dict and ev.get("ph") == "M"))
    if carried < len(events) // 2:
        return None  # a few events with a 'rank' arg of their own: not a TraceFusion merge
    if orphans:
        raise TraceFormatError(
            f"{name}: a merge of {len(distinct)} ranks ({', '.join(map(str, distinct))}) by TraceLens TraceFusion "
            f"(args.rank on its events), but {orphans:,} event(s) carry no rank, so it cannot be split safely: "
            f"{FUSED_HOW}"
        )
    parts: dict[int, list] = {r: [] for r in distinct}
    for ev, r in zip(events, ranks):
        for rank in [r] if r is not None else distinct:  # rank-less metadata belongs to every rank
            parts[rank].append(ev)
    return parts


def kineto_rank_parts(data, name: str) -> list[tuple[int | None, object]] | None:
    """The ranks a decoded Kineto file holds, each as a decoded single-rank trace, or None for an
    ordinary one-rank trace.

    Three shapes are recognised: a top-level list of trace objects (each with its own
    ``traceEvents`` and ``distributedInfo``); a TraceLens TraceFusion merge (``args.rank`` on its
    events, pid and correlation offset per rank, ``args.device`` each rank's own GPU), split by
    ``args.rank`` (``_fused_parts``); and one trace whose process metadata
    (``process_name``/``process_labels``) names two or more ranks ("rank 0", "Rank 1 GPU 0", ...),
    split by process.

    Returns:
        ``[(rank or None, trace object), ...]`` in file order, or None.

    Raises:
        TraceFormatError: the process metadata names several ranks but some events belong to a
            process no rank is named for (the file cannot be split reliably): the message says how
            to split it.
    """
    if (
        isinstance(data, list)
        and len(data) >= 2
        and all(type(d) is dict and isinstance(d.get("traceEvents"), list) for d in data)
    ):
        return [(distributed_rank(d), d) for d in data]
    events = data.get("traceEvents") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(events, list):
        return None
    meta = (
        {k: v for k, v in data.items() if k not in ("traceEvents", "distributedInfo")} if isinstance(data, dict) else {}
    )
    fused = _fused_parts(events, name)
    if fused is not None:
        return [(r, {**meta, "traceEvents": evs, "distributedInfo": {"rank": r}}) for r, evs in fused.items()]
    rank_of, clashes = _process_ranks(events)
    ranks = sorted(set(rank_of.values()))
    if len(ranks) < 2:
        return None
    how = (
        "save each rank's events to its own file (one PyTorch profiler trace per rank, as "
        "tensorboard_trace_handler writes) and open them with: tracedash serve --ranks FILE..."
    )
    if clashes:
        raise TraceFormatError(
            f"{name}: holds {len(ranks)} ranks ({', '.join(map(str, ranks))}) in one file, but {clashes:,} process "
            f"id(s) are named for two different ranks, so it cannot be split safely: {how}"
        )
    parts: dict[int, list] = {r: [] for r in ranks}
    orphans = 0
    for ev in events:
        pid = str(ev.get("pid")) if type(ev) is dict else None
        if pid in rank_of:
            parts[rank_of[pid]].append(ev)
        elif type(ev) is dict and ev.get("ph") != "M":
            orphans += 1
    if orphans:
        raise TraceFormatError(
            f"{name}: holds {len(ranks)} ranks ({', '.join(map(str, ranks))}) in one file, but {orphans:,} event(s) "
            f"belong to a process no rank is named for, so it cannot be split safely: {how}"
        )
    return [(r, {**meta, "traceEvents": parts[r], "distributedInfo": {"rank": r}}) for r in ranks]
