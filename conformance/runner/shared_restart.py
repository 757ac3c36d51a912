"""One broker restart for several items at once: the items of cases marked ``serial: restart``.

Such a case only asks that the broker restart at one point of its steps (a transaction it opened must
survive the restart, or be aborted by the next producer instance). Five of them, one restart each, were a
run's longest chain: a JVM start each on a machine busy with the other items. Run together, they share
restarts: they all run at once, and an item's restart step waits until every other item of the group has
reached a restart step or ended; then the broker restarts once and they all go on. The broker therefore
never restarts while one of them is between its own steps: each sees the restart exactly where its steps
ask for it, as when alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class SharedRestart:
    """The rendezvous of ``members`` items around ``restart`` (the target's): see the module. Each item
    must :meth:`leave` once it has ended, however it ended; all of them must run at once."""

    def __init__(self, restart: Callable[[], None], members: int):
        self._restart = restart
        self._changed = threading.Condition()
        self._members = members  # items of the group that have not ended, begun or not
        self._waiting = 0  # of those, the ones waiting at a restart step
        self.restarts = 0  # rounds done, each one restart of the broker
        self._failure: BaseException | None = None  # why the latest round's restart failed

    def restart(self) -> None:
        """An item's restart step: returns once the broker has restarted, raises what the restart raised."""
        with self._changed:
            self._waiting += 1
            round_ = self.restarts
            due = self._due()
        if due:
            self._restart_once()
        with self._changed:
            self._changed.wait_for(lambda: self.restarts != round_)
            # No later round can have ended meanwhile: it would need this item at a restart step again.
            if self._failure is not None:
                raise self._failure

    def leave(self) -> None:
        """An item has ended: the others no longer wait for it."""
        with self._changed:
            self._members -= 1
            due = self._due()
        if due:
            self._restart_once()

    def _due(self) -> bool:
        """Under the lock: every item not ended waits at a restart. Then the caller restarts the broker; no
        other can meanwhile, since every other item is waiting or has ended."""
        return 0 < self._waiting >= self._members

    def _restart_once(self) -> None:
        failure = None
        try:
            self._restart()
        except BaseException as error:  # noqa: BLE001 - handed to every waiting item, each reports it
            failure = error
        with self._changed:
            self._failure, self._waiting = failure, 0
            self.restarts += 1
            self._changed.notify_all()
