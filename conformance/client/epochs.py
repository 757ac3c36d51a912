"""Fast-forward a transactional id's producer epoch through the protocol itself.

A producer epoch is a 16-bit number, and the end of its space (Kafka rotates the producer id once the
epoch reaches ``Short.MaxValue - 1``) is reached only after tens of thousands of bumps. KIP-360's
InitProducerId with the current producer id and epoch bumps the epoch by one and nothing else, so it is
the cheapest bump there is: this module sends those, pipelined. A broker answers the requests of one
connection in the order they came, and Kafka reads the next one only once it has answered the one before,
so the request carrying epoch ``e + 1`` meets the state the one carrying ``e`` left. Where a broker works
otherwise, an answer that is not the one bump expected stops the sending; what is still in flight is
answered (each is either the expected bump, an idempotent retry or fenced: none changes the state) and the
sending resumes from the last epoch confirmed.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from .connection import Connection

# Kafka's threshold: an epoch at or above Short.MaxValue - 1 is exhausted (the coordinator rotates the id).
LAST_EPOCH = 32766
# Answers that mean "not now": the coordinator is loading, moving, or finishing a transaction.
RETRIABLE = {14, 15, 16, 51}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS
DEFAULT_WINDOW = 32  # requests in flight; beyond this the broker, not the client, is the limit


class FastForwardError(Exception):
    """The broker stopped bumping the epoch as asked; ``answer`` is what it said instead."""

    def __init__(self, message: str, answer: dict | None = None):
        super().__init__(message)
        self.answer = answer


@dataclass(frozen=True)
class FastForward:
    """Where a fast-forward ended and how fast it went."""

    producer_id: int
    producer_epoch: int
    bumps: int  # epochs the broker confirmed
    seconds: float

    @property
    def per_second(self) -> float:
        return self.bumps / self.seconds if self.seconds > 0 else 0.0

    def describe(self) -> str:
        return (f"{self.bumps} re-initialisations in {self.seconds:.1f} s ({self.per_second:,.0f}/s), "
                f"now producer id {self.producer_id} epoch {self.producer_epoch}")


def fast_forward(connection: Connection, transactional_id: str, producer_id: int, producer_epoch: int,
                 to_epoch: int, *, version: int, timeout_ms: int = 60_000, window: int = DEFAULT_WINDOW,
                 request_timeout: float = 10.0, retry_for: float = 20.0, step: str | None = None) -> FastForward:
    """Bumps ``(producer_id, producer_epoch)`` one InitProducerId (v3+) at a time until the epoch is
    ``to_epoch``; stops short of rotating the id (``to_epoch`` at most :data:`LAST_EPOCH`). Raises
    :class:`FastForwardError` when the broker answers anything but the bump (after ``retry_for`` seconds of
    retriable answers, or at once for any other)."""
    if version < 3:
        raise ValueError(f"InitProducerId v{version} carries no producer id and epoch: v3 or later bumps")
    if not producer_epoch <= to_epoch <= LAST_EPOCH:
        raise ValueError(f"cannot fast-forward from epoch {producer_epoch} to {to_epoch} "
                         f"(forward only, and at most {LAST_EPOCH}, where the id rotates)")

    def request(epoch: int):
        body = {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms,
                "producer_id": producer_id, "producer_epoch": epoch}
        return connection.send("InitProducerId", version, body, step=step)

    began = time.monotonic()
    confirmed, bumps, stalled_since = producer_epoch, 0, None
    while confirmed < to_epoch:
        in_flight: deque = deque()
        following, departure = confirmed, None
        while (in_flight or following < to_epoch) and departure is None:
            while departure is None and len(in_flight) < window and following < to_epoch:
                in_flight.append((following, request(following)))
                following += 1
            sent_at, sent = in_flight.popleft()
            answer = connection.receive(sent, request_timeout).answer
            if sent_at == confirmed and _bumped(answer, producer_id, confirmed):
                confirmed, bumps, stalled_since = confirmed + 1, bumps + 1, None
            else:
                departure = answer
        for _, sent in in_flight:  # answered in order; none of them can have changed the state
            connection.receive(sent, request_timeout)
        if departure is None:
            break
        if departure.get("error_code") in RETRIABLE:
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since < retry_for:
                time.sleep(0.05)
                continue
        raise FastForwardError(f"InitProducerId v{version} with producer id {producer_id} epoch {confirmed} "
                               f"did not bump the epoch to {confirmed + 1}: {departure}", departure)
    return FastForward(producer_id, confirmed, bumps, time.monotonic() - began)


def _bumped(answer: dict, producer_id: int, epoch: int) -> bool:
    return (answer.get("error_code") == 0 and answer.get("producer_id") == producer_id
            and answer.get("producer_epoch") == epoch + 1)
