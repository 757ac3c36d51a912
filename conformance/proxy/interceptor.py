"""The interception interface: what an interceptor sees of one exchange and what it may decide.

An :class:`Interceptor` is asked about every request that crosses the proxy, in order, and about
the response to every request it forwarded. It returns an :class:`Action` or ``None`` (no opinion:
the next interceptor is asked; the last word is "forward unchanged"). Faults are one interceptor
(:class:`conformance.proxy.rules.FaultRules`); an emulation of a draft KIP is another one that
answers requests itself (:func:`answer`), rewrites them (:func:`forward` with a new payload and an
``expect`` saying which API and version the broker will answer) or computes its answer off the
proxy's loop (:func:`defer`, for calls that block or talk to the broker themselves).

Everything here is sans-IO: payloads are Kafka frames without their size prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from ..protocol import frames
from ..protocol.codec import Codec


@dataclass
class Call:
    """One request on one client connection, and what the proxy knows about it."""

    connection: int                  # the proxy's id of the client connection
    index: int                       # 1-based position of this request on its connection
    api_key: int
    api_version: int
    correlation_id: int
    payload: bytes                   # the request as the client sent it
    upstream: tuple[str, int]        # the broker address this connection is proxied to
    codec: Codec
    local_address: Callable[[str, int], tuple[str, int]] = field(repr=False, default=None)  # type: ignore[assignment]
    # What the broker is asked and answers; an interceptor that rewrites the request to another API or
    # version sets these (forward(expect=...)) so the proxy can still read the response.
    sent_api_key: int | None = None
    sent_api_version: int | None = None
    state: dict = field(default_factory=dict)   # interceptors' own notes about this call

    @property
    def api(self) -> str:
        try:
            return self.codec.registry.api(self.api_key).name
        except Exception:  # noqa: BLE001 - an API the codec does not know keeps its number
            return str(self.api_key)

    def client_id(self) -> str | None:
        """The client id in the request's header (the header alone is decoded, not the body)."""
        return frames.decode_request_header(self.codec, self.payload)[0].get("client_id")

    def request(self) -> tuple[dict, dict]:
        """``(header, body)`` of the client's request (decoded on demand: most calls never need it)."""
        return frames.decode_request(self.codec, self.payload)

    def encode_request(self, body: dict, api: str | int | None = None, version: int | None = None) -> bytes:
        """A request payload with this call's correlation id and client id (to forward a rewritten request)."""
        header, _ = self.request()
        frame = frames.encode_request(self.codec, api if api is not None else self.api_key,
                                      self.api_version if version is None else version,
                                      self.correlation_id, body, header.get("client_id"))
        return frame[4:]

    def response(self, payload: bytes) -> tuple[dict, dict]:
        """``(header, body)`` of a response the broker gave to what was forwarded."""
        return frames.decode_response(self.codec, self.sent_api_key if self.sent_api_key is not None else self.api_key,
                                      self.sent_api_version if self.sent_api_version is not None else self.api_version,
                                      payload)

    def encode_response(self, body: dict) -> bytes:
        """A response payload answering this call as the client asked it (its API, version, correlation id)."""
        return frames.encode_response(self.codec, self.api_key, self.api_version, self.correlation_id, body)[4:]


# ---------------------------------------------------------------------------------------------- actions
FORWARD, ANSWER, DROP, CUT, DEFER = "forward", "answer", "drop", "cut", "defer"      # request side (+ HOLD)
DELIVER, HOLD, REORDER = "deliver", "hold", "reorder"                               # response side (+ DROP, CUT)


@dataclass(frozen=True)
class Action:
    """What happens to one request or one response. Build it with the functions below."""

    kind: str
    payload: bytes | None = None     # replaces the frame (None: unchanged)
    delay_s: float = 0.0             # before it goes on (order on the connection is kept, as TCP would)
    copies: int = 1                  # >1 sends duplicates (requests: the broker answers each; the extra answers are swallowed)
    expect: tuple[int, int] | None = None   # (api key, version) the broker answers a rewritten request with
    work: Callable[[], "Action"] | None = None   # DEFER: run on a worker thread, its Action then applies
    key: str | None = None           # HOLD: released by this key (None: any release)
    forward_first: bool = False      # CUT: send the request and cut when its response comes (the broker handled it)


def forward(payload: bytes | None = None, *, delay_s: float = 0.0, copies: int = 1,
            expect: tuple[int, int] | None = None) -> Action:
    """Send the request to the broker (rewritten when ``payload`` is given)."""
    return Action(FORWARD, payload, delay_s, copies, expect)


def answer(payload: bytes, *, delay_s: float = 0.0) -> Action:
    """Answer the client without asking the broker (``payload`` from :meth:`Call.encode_response`)."""
    return Action(ANSWER, payload, delay_s)


def drop() -> Action:
    """Requests: never reaches the broker. Responses: never reaches the client. The connection stays open."""
    return Action(DROP)


def cut(*, after_broker: bool = False) -> Action:
    """Close the client's connection (and the one to the broker) instead of passing the request on;
    ``after_broker``: forward it first and cut when the broker's response arrives (which is discarded)."""
    return Action(CUT, forward_first=after_broker)


def defer(work: Callable[[], Action]) -> Action:
    """Decide off the proxy's loop: ``work()`` runs on a worker thread and returns the request's Action.
    Later requests on the same connection wait behind it, so answers stay in order."""
    return Action(DEFER, work=work)


def deliver(payload: bytes | None = None, *, delay_s: float = 0.0, copies: int = 1) -> Action:
    """Pass the response on (rewritten when ``payload`` is given; ``copies`` > 1 repeats it)."""
    return Action(DELIVER, payload, delay_s, copies)


def hold(key: str | None = None) -> Action:
    """Responses: keep it, and those behind it on its connection, until :meth:`ProxyServer.release`.
    Requests: keep it from the broker (later requests on its connection wait behind it) until released."""
    return Action(HOLD, key=key)


def reorder() -> Action:
    """Deliver this response right after the next one on its connection (two responses swap places)."""
    return Action(REORDER)


class Interceptor(Protocol):
    """Extension point of the proxy (see the module docstring). Both methods run on the proxy's loop
    thread: they must not block (use :func:`defer`)."""

    def on_request(self, call: Call) -> Action | None: ...

    def on_response(self, call: Call, payload: bytes) -> Action | None: ...


class PassThrough:
    """Base class with both methods answering "no opinion"; subclass and override one."""

    def on_request(self, call: Call) -> Action | None:
        return None

    def on_response(self, call: Call, payload: bytes) -> Action | None:
        return None
