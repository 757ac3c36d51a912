"""One proxied connection as a sans-IO state machine: bytes in from either side, effects out.

The I/O layer feeds :meth:`Pipe.from_client` and :meth:`Pipe.from_upstream` with whatever the sockets
read and carries out the returned :class:`Effect` s (send, close, run deferred work). The pipe splits
frames, asks the interceptors about each request and response, rewrites advertised addresses and keeps
responses in request order, as a broker does on one connection: an answer the proxy makes itself, or a
delayed one, never overtakes an earlier response unless a fault says so (reorder).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..protocol import frames
from ..protocol.codec import Codec
from ..protocol.exceptions import DecodeError
from . import addresses
from . import interceptor as act
from .interceptor import Action, Call, Interceptor

SEND, CLOSE, DEFER = "send", "close", "defer"
UPSTREAM, CLIENT = "upstream", "client"
# Correlation ids of the proxy's own duplicate requests: far from the small counters clients use.
_OWN_IDS = itertools.count(0x7E000000)


@dataclass
class Effect:
    kind: str                          # SEND, CLOSE or DEFER
    to: str = CLIENT                   # SEND: UPSTREAM or CLIENT
    data: bytes = b""                  # SEND: a whole frame, size prefix included
    delay_s: float = 0.0
    call: Call | None = None           # DEFER: the call whose work runs off the loop
    work: Callable[[], Action] | None = None


@dataclass
class _Pending:
    """A response the client is owed, in request order."""

    call: Call
    via_broker: bool
    state: str = "waiting"             # waiting, ready, held, dropped
    frames: list = field(default_factory=list)
    delay_s: float = 0.0
    reorder: bool = False
    key: str | None = None


def _framed(payload: bytes) -> bytes:
    return frames.SIZE.pack(len(payload)) + payload


class Pipe:
    def __init__(self, connection: int, upstream: tuple[str, int], codec: Codec,
                 interceptors: Iterable[Interceptor], local_address: Callable[[str, int], tuple[str, int]],
                 events: Callable[[str, Call], None] | None = None, rewriter: addresses.Rewriter | None = None):
        self.connection = connection
        self.upstream = upstream
        self.codec = codec
        self.interceptors = list(interceptors)
        self.local_address = local_address
        self.events = events or (lambda what, call: None)
        self._rewrite = rewriter or addresses.Rewriter(codec, local_address)   # shared by the server's pipes
        self._from_client = bytearray()
        self._from_upstream = bytearray()
        self._index = 0
        self._order: deque[_Pending] = deque()
        self._at_broker: dict[int, _Pending] = {}     # correlation id -> pending, forwarded and unanswered
        self._own: set[int] = set()                   # duplicates' correlation ids: answers are swallowed
        self._cut_on_answer: set[int] = set()
        self._deferred: Call | None = None
        self._waiting: deque[bytes] = deque()         # requests behind a deferred or held one
        self._held_request: tuple[Call, str | None] | None = None   # a request kept from the broker, and its key
        self.closed = False
        self.relaying = False  # a frame could not be read: bytes pass through unread (see _relay)

    # ------------------------------------------------------------------------------ input
    def from_client(self, data: bytes) -> list[Effect]:
        if self.relaying:
            return [Effect(SEND, UPSTREAM, bytes(data))]
        self._from_client += data
        try:
            found, used = frames.split_frames(self._from_client)
        except DecodeError:  # a size prefix no frame can have (negative): the broker is the one to judge it
            return self._relay()
        del self._from_client[:used]
        effects: list[Effect] = []
        for payload in found:
            effects += self._request(payload)
        return effects

    def from_upstream(self, data: bytes) -> list[Effect]:
        if self.relaying:
            return [Effect(SEND, CLIENT, bytes(data))]
        self._from_upstream += data
        try:
            found, used = frames.split_frames(self._from_upstream)
        except DecodeError:
            return self._relay()
        del self._from_upstream[:used]
        effects: list[Effect] = []
        for payload in found:
            effects += self._response(payload)
        return effects

    def _relay(self) -> list[Effect]:
        """From here on, this connection's bytes go through as they come, both ways, with no frames read:
        a proxy that cannot read a frame must neither stop nor make up the broker's answer to it."""
        self.relaying = True
        effects = [Effect(SEND, UPSTREAM, bytes(self._from_client))] if self._from_client else []
        effects += [Effect(SEND, CLIENT, bytes(self._from_upstream))] if self._from_upstream else []
        self._from_client.clear()
        self._from_upstream.clear()
        return effects

    def deferred_done(self, call: Call, action: Action | None) -> list[Effect]:
        """The result of a DEFER effect's work (None: forward unchanged); then the requests behind it."""
        self._deferred = None
        effects = self._apply_request(call, action or act.forward())
        while self._waiting and self._deferred is None and not self.closed:
            effects += self._request(self._waiting.popleft())
        return effects

    def release(self, key: str | None = None, keep: frozenset = frozenset()) -> list[Effect]:
        """Held responses go to the client and a held request goes to the broker (those of ``key``, or all but
        those held under a key in ``keep``)."""
        def chosen(held_key: str | None) -> bool:
            return held_key == key if key is not None else held_key not in keep

        for pending in self._order:
            if pending.state == "held" and chosen(pending.key):
                pending.state = "ready"
        effects = self._flush()
        if self._held_request is not None and chosen(self._held_request[1]) and not self.closed:
            call, _ = self._held_request
            self._held_request = None
            effects += self.deferred_done(call, act.forward())   # then the requests that queued behind it
        return effects

    def holds(self, key: str) -> bool:
        """Whether a request or response held under ``key`` is here."""
        return any(pending.state == "held" and pending.key == key for pending in self._order) or \
            (self._held_request is not None and self._held_request[1] == key)

    @property
    def holding(self) -> int:
        """Responses and requests held."""
        return sum(pending.state == "held" for pending in self._order) + (self._held_request is not None)

    # ------------------------------------------------------------------------------ requests
    def _request(self, payload: bytes) -> list[Effect]:
        if self.closed:
            return []
        if self._deferred is not None:
            self._waiting.append(payload)
            return []
        try:
            api_key, version, correlation_id = frames.peek_request_header(payload)
        except DecodeError:
            return [Effect(SEND, UPSTREAM, _framed(payload))]   # not a Kafka request header: relay it
        self._index += 1
        call = Call(self.connection, self._index, api_key, version, correlation_id, payload, self.upstream,
                    self.codec, self.local_address)
        action = None
        for interceptor in self.interceptors:
            action = interceptor.on_request(call)
            if action is not None:
                break
        return self._apply_request(call, action or act.forward())

    def _apply_request(self, call: Call, action: Action) -> list[Effect]:
        self.events(action.kind, call)
        if action.kind == act.DEFER:
            self._deferred = call
            return [Effect(DEFER, call=call, work=action.work)]
        if action.kind == act.DROP:
            return []
        if action.kind == act.HOLD:
            # Kept from the broker until release; requests behind it on this connection wait too, as on TCP.
            self._deferred = call
            self._held_request = (call, action.key)
            return []
        if action.kind == act.CUT and not action.forward_first:
            return self._close()
        if action.kind == act.ANSWER:
            pending = _Pending(call, via_broker=False, state="ready", frames=[action.payload], delay_s=action.delay_s)
            self._order.append(pending)
            return self._flush()
        if action.kind not in (act.FORWARD, act.CUT):
            raise ValueError(f"{action.kind!r} is not an action for a request")
        if action.expect is not None:
            call.sent_api_key, call.sent_api_version = action.expect
        pending = _Pending(call, via_broker=True)
        self._order.append(pending)
        self._at_broker[call.correlation_id] = pending
        if action.kind == act.CUT:
            self._cut_on_answer.add(call.correlation_id)
        payload = action.payload if action.payload is not None else call.payload
        effects = [Effect(SEND, UPSTREAM, _framed(payload), action.delay_s)]
        for _ in range(action.copies - 1):
            own = next(_OWN_IDS)
            self._own.add(own)
            copy = payload[:4] + own.to_bytes(4, "big", signed=True) + payload[8:]
            effects.append(Effect(SEND, UPSTREAM, _framed(copy), action.delay_s))
        return effects

    # ------------------------------------------------------------------------------ responses
    def _response(self, payload: bytes) -> list[Effect]:
        if self.closed:
            return []
        try:
            correlation_id = frames.peek_correlation_id(payload)
        except DecodeError:
            return [Effect(SEND, CLIENT, _framed(payload))]
        if correlation_id in self._own:
            self._own.discard(correlation_id)
            return []
        pending = self._at_broker.pop(correlation_id, None)
        if pending is None:
            return [Effect(SEND, CLIENT, _framed(payload))]   # nothing asked for it (e.g. raw SASL tokens)
        self._skip_unanswered_before(pending)
        if correlation_id in self._cut_on_answer:
            self._cut_on_answer.discard(correlation_id)
            self.events("cut_after", pending.call)
            return self._close()
        call = pending.call
        sent_key = call.sent_api_key if call.sent_api_key is not None else call.api_key
        if sent_key in self._rewrite.api_keys:
            sent_version = call.sent_api_version if call.sent_api_version is not None else call.api_version
            payload = self._rewrite(sent_key, sent_version, payload)
        action = None
        for interceptor in self.interceptors:
            action = interceptor.on_response(call, payload)
            if action is not None:
                break
        action = action or act.deliver()
        self.events(f"response:{action.kind}", call)
        if action.kind == act.CUT:
            return self._close()
        self._settle(pending, action, payload)
        return self._flush()

    def _skip_unanswered_before(self, answered: _Pending) -> None:
        # A broker answers in order; a forwarded request before this one still unanswered gets no answer
        # at all (Produce with acks=0), so it must not block the responses behind it.
        for pending in self._order:
            if pending is answered:
                break
            if pending.via_broker and pending.state == "waiting":
                pending.state = "dropped"
                self._at_broker.pop(pending.call.correlation_id, None)

    @staticmethod
    def _settle(pending: _Pending, action: Action, payload: bytes) -> None:
        body = action.payload if action.payload is not None else payload
        pending.frames = [body] * action.copies
        pending.delay_s = action.delay_s
        if action.kind == act.DROP:
            pending.state = "dropped"
        elif action.kind == act.HOLD:
            pending.state, pending.key = "held", action.key
        elif action.kind == act.REORDER:
            pending.state, pending.reorder = "ready", True
        elif action.kind in (act.DELIVER, act.ANSWER):
            pending.state = "ready"
        else:
            raise ValueError(f"{action.kind!r} is not an action for a response")

    def _flush(self) -> list[Effect]:
        effects: list[Effect] = []
        while self._order:
            head = self._order[0]
            if head.state == "dropped":
                self._order.popleft()
                continue
            if head.state != "ready":
                break
            if head.reorder:
                following = next((p for p in list(self._order)[1:] if p.state != "dropped"), None)
                if following is None or following.state != "ready":
                    break   # waits for the response it is to follow
                self._order.remove(following)
                effects += self._emit(following)
                head.reorder = False
            self._order.popleft()
            effects += self._emit(head)
        return effects

    def _emit(self, pending: _Pending) -> list[Effect]:
        return [Effect(SEND, CLIENT, _framed(payload), pending.delay_s) for payload in pending.frames]

    def _close(self) -> list[Effect]:
        self.closed = True
        self._order.clear()
        self._at_broker.clear()
        self._waiting.clear()
        self._held_request = None
        return [Effect(CLOSE)]
