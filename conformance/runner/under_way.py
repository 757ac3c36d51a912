"""Which items a runner had under way beside each other: after a crash, who can be blamed for it.

In a serial run the item after which the target stopped answering is the one that took it down. In a
parallel run any item under way at the time may have; blaming the one that happened to notice would turn
another case's crash into its failure, so the runner needs to know whether an item ran alone.
"""

from __future__ import annotations

import itertools
import threading


class UnderWay:
    def __init__(self):
        self._lock = threading.Lock()
        self._tokens = itertools.count()
        self._labels: dict[int, str] = {}
        self._beside: dict[int, set[str]] = {}  # token -> labels of the items that ran while it did

    def start(self, label: str) -> int:
        with self._lock:
            token = next(self._tokens)
            for beside in self._beside.values():
                beside.add(label)
            self._beside[token] = set(self._labels.values())
            self._labels[token] = label
            return token

    def finish(self, token: int) -> list[str]:
        """The items that ran, for some of the time, beside this one (none in a serial run)."""
        with self._lock:
            del self._labels[token]
            return sorted(self._beside.pop(token))
