"""Which items a runner had under way beside each other: after a crash, who can be blamed for it.

In a serial run the item after which the target stopped answering is the one that took it down. In a
parallel run any item under way at the time may have; blaming the one that happened to notice would turn
another case's crash into its failure, so the runner needs to know whether an item ran alone, and, where
it cannot find out which one did it, which items were under way and what each sent last.
"""

from __future__ import annotations

import itertools
import threading


class UnderWay:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens = itertools.count()
        self._labels: dict[int, str] = {}
        self._transcripts: dict[int, object] = {}  # token -> the item's transcript (a client Transcript)
        self._beside: dict[int, set[str]] = {}  # token -> labels of the items that ran while it did

    def start(self, label: str, transcript=None) -> int:
        with self._lock:
            token = next(self._tokens)
            for beside in self._beside.values():
                beside.add(label)
            self._beside[token] = set(self._labels.values())
            self._labels[token] = label
            self._transcripts[token] = transcript
            return token

    def labels(self) -> list[str]:
        """The items under way now."""
        with self._lock:
            return list(self._labels.values())

    def alone_from_now(self, token: int) -> None:
        """The item of ``token`` has the target to itself from now on: what ran beside it before is forgotten."""
        with self._lock:
            self._beside[token] = set()

    def beside(self, token: int) -> list[str]:
        """The items that ran, for some of the time so far, beside this one (none in a serial run)."""
        with self._lock:
            return sorted(self._beside[token])

    def finish(self, token: int) -> None:
        with self._lock:
            del self._labels[token]
            self._transcripts.pop(token, None)
            self._beside.pop(token)

    def now(self, but: int | None = None) -> list[str]:
        """Every item under way at this moment but the one of token ``but``, each with the last request it sent."""
        with self._lock:
            under_way = [(label, self._transcripts.get(token)) for token, label in self._labels.items() if token != but]
        return sorted(f"{label} (last sent: {last_request(transcript)})" for label, transcript in under_way)


# The step name of the harness's own liveness probe (an ApiVersions on a fresh connection, asked after a closed
# connection): never the request that took a target down, so never named as the last one an item sent.
LIVENESS_PROBE = "is the target still up?"


def _sent(transcript) -> list:
    """The exchanges an item's own steps made, the harness's liveness probes left out."""
    return [exchange for exchange in (getattr(transcript, "exchanges", None) or []) if exchange.step != LIVENESS_PROBE]


def last_sent(transcript):
    """The last exchange an item's own steps made, or None."""
    exchanges = _sent(transcript)
    return exchanges[-1] if exchanges else None


def unanswered(transcript, before: float) -> bool:
    """Whether the last request an item sent got no answer and went out before the target was seen down at
    ``before`` (wall clock): the item was waiting on the target when it went down, so its request may be what
    took it down. One that was answered was not; one sent once it was seen down met the crash, not caused it.
    (One sent between the crash and the moment it was seen counts as a suspect too: only a run alone can tell.)"""
    last = last_sent(transcript)
    return last is not None and last.response is None and last.sent_at <= before


def last_request(transcript) -> str:
    """``Metadata v12, step '1 send Metadata'``: the last request in a transcript, or that it sent none."""
    exchanges = _sent(transcript)
    if not exchanges:
        return "no request yet"
    last = exchanges[-1]
    return f"{last.api} v{last.version}" + (f", step '{last.step}'" if last.step else "")


def replayable(transcript, limit: int = 512) -> str:
    """The last request of a transcript as the bytes that replay it: where it is in the transcript (whose
    ``request_bytes`` keep it), and its hex where it is short enough to show."""
    everything = list(getattr(transcript, "exchanges", None) or [])
    exchanges = _sent(transcript)
    if not exchanges:
        return "it sent no request"
    frame = bytes(exchanges[-1].request_bytes)
    shown = f", hex {frame.hex()}" if len(frame) <= limit else ""
    return (f"the request that did it: {last_request(transcript)}, exchange {everything.index(exchanges[-1]) + 1} of the transcript "
            f"(its request_bytes, {len(frame)} bytes with the size prefix{shown})")
