"""A history: every operation the clients began and how it ended, and every record they read.

Events follow the invoke/complete shape of Jepsen-style histories, so an operation whose outcome the
client never learned (a commit that timed out) stays visibly indeterminate instead of being guessed:

- ``txn`` (a producer's transaction) and ``ctp`` (one consume-transform-produce transaction):
  ``invoke`` with the records it writes, then ``ok`` with ``outcome`` committed or aborted, or ``info``
  with outcome unknown. ``ok`` carries ``offsets``: where each delivered record landed.
- ``read``: one record a read_committed consumer returned (process ``drain`` for the final read).
- ``drained``: where the final read of one partition ended, with that partition's LSO and high watermark.
- ``lso``: one sample of a partition's last stable offset.
- ``offsets``: the consume-transform-produce group's committed offsets at the end.
- ``fault``: ``invoke`` when the nemesis starts a fault, ``ok`` or ``info`` (could not) when done.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

PHASES = ("invoke", "ok", "info")


@dataclass(frozen=True)
class Event:
    """One thing a process of the workload did or saw, with when and its values."""
    index: int
    time: float  # seconds since the history began
    process: str  # "producer-0", "processor-0", "reader", "drain", "lso", "nemesis"
    kind: str
    phase: str
    value: dict

    def line(self) -> str:
        """One line a person reads in an anomaly's history."""
        shown = ", ".join(f"{key}={_short(item)}" for key, item in self.value.items())
        return f"#{self.index} {self.time:8.3f}s {self.process:<12} {self.kind} {self.phase}: {shown}"


def _short(value, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class History:
    """Appended to from many client threads; ``events`` is a snapshot in the order they were recorded."""

    def __init__(self, events: list[Event] | None = None):
        self._events: list[Event] = list(events or [])
        self._lock = threading.Lock()
        self._began = time.monotonic()

    def record(self, process: str, kind: str, phase: str = "ok", **value) -> Event:
        """Append an event of ``process`` in ``phase`` (``invoke``, ``ok`` or ``info``) and return it."""
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
        with self._lock:
            event = Event(len(self._events), round(time.monotonic() - self._began, 4), process, kind, phase, value)
            self._events.append(event)
        return event

    @property
    def events(self) -> list[Event]:
        """A copy of the events so far, in order."""
        with self._lock:
            return list(self._events)

    def dump(self, path: str | Path) -> Path:
        """Write the history as JSON lines to ``path`` and return it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as out:
            for event in self.events:
                out.write(json.dumps(asdict(event), separators=(",", ":"), default=str) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "History":
        """A history read back from a file :meth:`dump` wrote."""
        events = [Event(**json.loads(line)) for line in Path(path).read_text().splitlines() if line.strip()]
        return cls(events)
