"""``PriorityGate``: a re-entrant lock that lets its waiters in by priority, then by arrival.

A large trace's first page asks for every view at once, and they render one at a time under the trace's gate
(``data.analysis.trace_gate``): the order they get in decides what the user sees first. With this gate, of the
requests waiting, the overview and the timeline render before the tables and the findings (a render that holds
the gate is never interrupted: the first request to come takes a free gate, whatever its priority).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from contextlib import contextmanager


class PriorityGate:
    """One holder at a time (re-entrant for it); ``hold(priority)`` waits until no one holds the gate and no
    waiter has a lower ``priority`` (or the same one and came first)."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0
        self._waiting: list[tuple[int, int]] = []  # heap of (priority, arrival)
        self._arrivals = itertools.count()

    @property
    def waiting(self) -> int:
        """How many threads wait for the gate."""
        with self._cond:
            return len(self._waiting)

    @contextmanager
    def hold(self, priority: int = 0):
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
            else:
                ticket = (priority, next(self._arrivals))
                heapq.heappush(self._waiting, ticket)
                try:
                    while self._owner is not None or self._waiting[0] != ticket:
                        self._cond.wait()
                except BaseException:  # a waiter that gives up must not stay at the head of the queue
                    self._waiting.remove(ticket)
                    heapq.heapify(self._waiting)
                    self._cond.notify_all()
                    raise
                heapq.heappop(self._waiting)
                self._owner, self._depth = me, 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    self._cond.notify_all()
