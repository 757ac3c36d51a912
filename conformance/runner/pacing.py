"""Waiting without holding a worker: ``--jobs N`` counts the items that are working, not those asleep.

An item that waits on a timer (an ``until`` between two looks, a ``wait`` step, a retry's pause) needs
nothing from the machine while it sleeps. If it kept its place among the N, a target that departs often
(every ``until`` waits out its ``for_ms``) would make the run as long as the sum of those waits divided by N.
So :class:`Slots` lends the place out for the length of the sleep: :func:`pause` gives it back, sleeps, and
takes one again before the item goes on, ahead of items that have not started yet, so an item that is
already running is not kept waiting by new ones. Outside a run with slots (a serial run, a test), ``pause``
is ``time.sleep``.

A pause may end later than asked when every place is taken on its return. Every wait that uses it looks at
the broker again before it concludes anything, so a later look can only see more, never turn a pass into a
fail.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from contextlib import contextmanager
from typing import Callable, TypeVar

T = TypeVar("T")
_held = threading.local()  # the Slots whose place this thread holds, if any


class Slots:
    """``count`` places to work in; a thread holds one from :meth:`run`'s start to its end, except while
    it pauses. A freed place is handed to one waiting thread: a paused one coming back first, else the new
    work with the lowest :meth:`ticket` (the order it was handed in). Waking only that thread matters: with
    a run's 64 threads under one condition, every freed place woke all of them to find it taken, which
    cost the harness a tenth of its CPU."""

    def __init__(self, count: int):
        self._free = count  # never above 0 while a thread waits: a freed place goes straight to one
        self._waiting: list[tuple[int, int, threading.Event]] = []  # (0 back from a pause | 1 new, order, wake)
        self._tickets = itertools.count()
        self._returns = itertools.count()
        self._lock = threading.Lock()

    def ticket(self) -> int:
        """A place in the queue of new work, taken when the work is handed in."""
        return next(self._tickets)

    def run(self, work: Callable[..., T], *args, ticket: int | None = None) -> T:
        self._take(returning=False, ticket=self.ticket() if ticket is None else ticket)
        _held.slots = self
        try:
            return work(*args)
        finally:
            _held.slots = None
            self._give()

    def _take(self, returning: bool, ticket: int = 0) -> None:
        with self._lock:
            if self._free:
                self._free -= 1
                return
            handed = threading.Event()
            heapq.heappush(self._waiting, (0, next(self._returns), handed) if returning else (1, ticket, handed))
        handed.wait()

    def _give(self) -> None:
        with self._lock:
            if self._waiting:
                heapq.heappop(self._waiting)[2].set()
            else:
                self._free += 1


@contextmanager
def lending():
    """While the block waits on something else than the machine, this thread's place is lent to another item."""
    slots = getattr(_held, "slots", None)
    if slots is None:
        yield
        return
    slots._give()
    try:
        yield
    finally:
        slots._take(returning=True)


def pause(seconds: float) -> None:
    """Sleep ``seconds``, lending this thread's place to another item meanwhile."""
    slots = getattr(_held, "slots", None)
    if slots is None:
        time.sleep(seconds)
        return
    slots._give()
    try:
        time.sleep(seconds)
    finally:
        slots._take(returning=True)
