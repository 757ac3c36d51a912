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
from typing import Callable, TypeVar

T = TypeVar("T")
_held = threading.local()  # the Slots whose place this thread holds, if any


class Slots:
    """``count`` places to work in; a thread holds one from :meth:`run`'s start to its end, except while
    it pauses. New work gets its place in the order of its :meth:`ticket` (the order it was handed in),
    not in whatever order waiting threads wake."""

    def __init__(self, count: int):
        self._free = count
        self._returning = 0  # paused threads waiting for a place again: they go before new work
        self._waiting: list[int] = []  # tickets of new work waiting for a place (a heap)
        self._tickets = itertools.count()
        self._changed = threading.Condition()

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
        with self._changed:
            if returning:
                self._returning += 1
                while self._free == 0:
                    self._changed.wait()
                self._returning -= 1
            else:
                heapq.heappush(self._waiting, ticket)
                while self._free == 0 or self._returning or self._waiting[0] != ticket:
                    self._changed.wait()
                heapq.heappop(self._waiting)
                self._changed.notify_all()  # the next ticket may go too, if a place is left
            self._free -= 1

    def _give(self) -> None:
        with self._changed:
            self._free += 1
            self._changed.notify_all()


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
