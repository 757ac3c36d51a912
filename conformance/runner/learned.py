"""What a run learns about its target that later items use: versions that break, requests that take it down.

A set-up or check step whose version of an API closes the connection (or answers what cannot be read, or
UNSUPPORTED_VERSION for a version advertised) goes on at the next version down (:func:`.observe.version_down`).
Once one item has met that, every later item's step goes down at once: sending the broken version again only
costs time, and on librdkafka's mock a JoinGroup v6 that closes the connection leaves a member behind that the
group then waits out (29 s of the next JoinGroup's answer, for every item that sent one).

A request that took the target down while its item ran alone (so nothing else can have) is a hazard for the
rest of the run: an item running beside others stops before it sends that request at that version again, and
runs alone after the others (:mod:`.parallel`), so the next crash it causes costs no other item its verdict and
the run stays parallel until then.

Both are kept for the life of the target they were learnt on: a request that closed the connection just as the
target crashed says nothing about its version, so :meth:`Learned.broke` ignores what was met on an earlier life.
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class KnownHazard(Exception):
    """Raised before an item running beside others sends a request known to take the target down."""

    def __init__(self, api: str, version: int, *, again: bool = False):
        super().__init__(f"{api} v{version} took the target down earlier in this run")
        self.api, self.version = api, version
        self.again = again  # the target went down while the item waited to be alone: it starts over


class Learned:
    """One target's broken versions and hazardous requests, shared by every item the runner runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.life = 0  # how often the target was brought back: what was met on an older life is not kept
        self._broken: dict[tuple[str, int], str] = {}  # (api, version) -> how it broke
        self._hazards: dict[tuple[str, int], str] = {}  # (api, version) -> the item that took the target down

    def new_life(self) -> None:
        with self._lock:
            self.life += 1

    # ---------------------------------------------------------------------- broken versions
    def broke(self, api: str, version: int, how: str, life: int) -> None:
        """``api`` v``version`` broke (``how``: 'connection closed') for an item that started on ``life``."""
        with self._lock:
            if life == self.life:
                self._broken.setdefault((api, version), how)

    def broken(self, api: str, version: int) -> str | None:
        """How ``api`` v``version`` broke for an earlier item, or None."""
        with self._lock:
            return self._broken.get((api, version))

    # ---------------------------------------------------------------------- hazards
    def took_down(self, api: str, version: int, item: str) -> None:
        """``item``, alone on the target, took it down with ``api`` v``version``."""
        with self._lock:
            self._hazards.setdefault((api, version), item)

    def hazard(self, api: str, version: int) -> str | None:
        """The item that took the target down with ``api`` v``version``, or None."""
        with self._lock:
            return self._hazards.get((api, version))

    @property
    def hazards(self) -> int:
        with self._lock:
            return len(self._hazards)


class ItemView:
    """What one item sees of :class:`Learned`: the life it started on, whether it runs beside others, and how it
    gets the target to itself (``alone``: returns once no other item is under way, and keeps it so until the item
    is judged; None: the item cannot wait for that, and stops before a hazard instead)."""

    def __init__(self, learned: Learned, *, beside_others: bool, life: int, alone: Callable[[], None] | None = None):
        self.learned = learned
        self.life = life
        self.beside_others = beside_others
        self.alone = alone
        self.started = time.monotonic()

    def broke(self, api: str, version: int, how: str) -> None:
        self.learned.broke(api, version, how, self.life)

    def broken(self, api: str, version: int) -> str | None:
        return self.learned.broken(api, version)

    def before_sending(self, api: str, version: int) -> None:
        """Before a request that took the target down earlier in the run, an item running beside others either
        waits until it has the target to itself (it has run long: its work so far is worth keeping), or stops
        (:class:`KnownHazard`: it runs again alone once the others are done; quicker than a wait for every item
        under way to end)."""
        if not self.beside_others or self.learned.hazard(api, version) is None:
            return
        if self.alone is None or time.monotonic() - self.started < WAIT_ALONE_AFTER_S:
            raise KnownHazard(api, version)
        self.alone()
        self.beside_others = False
        if self.learned.life != self.life:  # another item's crash meanwhile: what this one set up is gone
            raise KnownHazard(api, version, again=True)


# An item that meets a known hazard after this long beside others waits to send it alone rather than run again.
WAIT_ALONE_AFTER_S = 5.0
