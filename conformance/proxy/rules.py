"""Faults as data: which requests a fault picks (API, version, position) and what it does to them.

This is the proxy's built-in interceptor, pure and synchronous (no sockets, no clock), so every rule
is unit-tested with fake frames. Positions count the requests that match a rule's API and version,
across all connections of the proxy, from the moment the rule was added: ``nth: 1`` is the first
such request after the fault step ran, which is what a suite author means by "the next EndTxn".

A rule can be kept to one case's own requests, so that cases with faults need not run alone: ``client`` (the
request header's client id: the harness gives each case its own, ``${client_id}``) or ``fields`` (top-level
request fields, such as the case's ``transactional_id``). A rule with neither picks any client's requests.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..protocol.codec import Codec
from . import interceptor as act
from .interceptor import Action, Call

# name -> (phase, what it does); the phase says whether the request or its response is affected
FAULTS = {
    "delay": ("either", "hold the request (where: request) or its response (default) back for ms milliseconds"),
    "drop_request": ("request", "never send the request to the broker; the client gets no answer"),
    "drop_response": ("response", "the broker handles the request; its response never reaches the client"),
    "duplicate_request": ("request", "send the request to the broker twice (the second answer is swallowed)"),
    "duplicate_response": ("response", "deliver the response twice"),
    "reorder": ("response", "deliver the response after the next response on its connection"),
    "cut_before": ("request", "close the connection instead of sending the request"),
    "cut_after": ("request", "send the request, close the connection when the broker has answered it"),
    "hold": ("either", "keep the response (default; and those behind it) or, with where: request, the request itself "
                       "(and those behind it on its connection) from the broker until release"),
}
CONTROL = {"release": "let held requests and responses go (all, or those of one key)", "clear": "remove every fault",
           "await_held": "wait until a request or response of one key is held (up to ms milliseconds, default 20000), "
                         "so what a case does next happens while it is held however slow the network"}


@dataclass
class Rule:
    fault: str
    api_key: int | None = None
    versions: tuple[int, int] = (0, 1 << 15)
    nth: int = 1
    times: int = 1                    # matches affected from nth on; 0: every one
    ms: int = 0
    where: str = "response"
    key: str | None = None
    fields: dict = field(default_factory=dict)   # top-level request fields that must be equal (transactional_id)
    client: str | None = None                    # the client id of the requests it picks; None: any client's
    seen: int = field(default=0, compare=False)

    def picks(self, call: Call) -> bool:
        """Counts the call if it matches the API and version; True when its position is picked."""
        if self.api_key is not None and call.api_key != self.api_key:
            return False
        if not self.versions[0] <= call.api_version <= self.versions[1]:
            return False
        if self.client is not None and self._client_id(call) != self.client:
            return False
        if self.fields and not self._fields_match(call):
            return False
        self.seen += 1
        return self.seen >= self.nth and (self.times == 0 or self.seen < self.nth + self.times)

    @staticmethod
    def _client_id(call: Call) -> str | None:
        try:
            return call.client_id()
        except Exception:  # noqa: BLE001 - a request whose header the codec cannot read is no client's
            return None

    def _fields_match(self, call: Call) -> bool:
        try:
            body = call.request()[1]
        except Exception:  # noqa: BLE001 - a request the codec cannot read matches no field filter
            return False
        return all(body.get(name) == value for name, value in self.fields.items())

    @property
    def exhausted(self) -> bool:
        return self.times != 0 and self.seen >= self.nth + self.times - 1

    @property
    def phase(self) -> str:
        phase = FAULTS[self.fault][0]
        return self.where if phase == "either" else phase


def parse_versions(value) -> tuple[int, int]:
    """``3``, ``"3"``, ``"2-4"``, ``"3+"`` or None (every version)."""
    if value is None:
        return (0, 1 << 15)
    text = str(value).strip()
    if text.endswith("+"):
        return (int(text[:-1]), 1 << 15)
    low, _, high = text.partition("-")
    return (int(low), int(high or low))


def make_rule(codec: Codec, fault: str, *, api=None, version=None, nth: int = 1, times: int = 1,
              ms: int = 0, where: str = "response", key: str | None = None, fields: dict | None = None,
              client: str | None = None) -> Rule:
    """A rule from a fault step's words; unknown faults and arguments raise ValueError."""
    if fault not in FAULTS:
        raise ValueError(f"unknown proxy fault {fault!r}; known: {sorted(FAULTS) + sorted(CONTROL)}")
    if where not in ("request", "response"):
        raise ValueError(f"where must be request or response, not {where!r}")
    if int(nth) < 1 or int(times) < 0:
        raise ValueError("nth counts from 1 and times must be >= 0")
    api_key = None
    if api is not None:
        api_key = int(api) if str(api).isdigit() else codec.registry.api(str(api)).api_key
    return Rule(fault, api_key, parse_versions(version), int(nth), int(times), int(ms), where, key, dict(fields or {}),
                None if client is None else str(client))


class FaultRules(act.PassThrough):
    """The fault interceptor: rules are added and cleared from any thread, consulted on the loop."""

    STATE = "proxy.faults"

    def __init__(self, codec: Codec):
        self.codec = codec
        self._rules: list[Rule] = []
        self._lock = threading.Lock()
        self._own_keys: set[str | None] = set()  # the keys of holds kept to one client: that case releases them

    def add(self, fault: str, **arguments) -> Rule:
        rule = make_rule(self.codec, fault, **arguments)
        with self._lock:
            self._rules.append(rule)
            if rule.client is not None and rule.fault == "hold":
                self._own_keys.add(rule.key)
        return rule

    def clear(self, client: str | None = None) -> None:
        """Remove every rule, or those kept to ``client``."""
        with self._lock:
            self._rules = [] if client is None else [rule for rule in self._rules if rule.client != client]

    def clear_shared(self) -> None:
        """Remove the rules kept to no client: those that could pick the next case's requests."""
        with self._lock:
            self._rules = [rule for rule in self._rules if rule.client is not None]

    @property
    def own_keys(self) -> frozenset[str | None]:
        """The keys under which holds kept to one client keep requests and responses."""
        with self._lock:
            return frozenset(self._own_keys)

    @property
    def rules(self) -> list[Rule]:
        with self._lock:
            return list(self._rules)

    def on_request(self, call: Call) -> Action | None:
        if not self._rules:   # the common case: no fault, no lock taken
            return None
        with self._lock:
            picked = [rule for rule in self._rules if rule.picks(call)]
            # a rule that did all it was asked to leaves, so it cannot hit a later case
            self._rules = [rule for rule in self._rules if not rule.exhausted]
        call.state[self.STATE] = [rule for rule in picked if rule.phase == "response"]
        for rule in picked:
            if rule.phase != "request":
                continue
            if rule.fault == "delay":
                return act.forward(delay_s=rule.ms / 1000)
            if rule.fault == "drop_request":
                return act.drop()
            if rule.fault == "duplicate_request":
                return act.forward(copies=2)
            if rule.fault == "cut_before":
                return act.cut()
            if rule.fault == "cut_after":
                return act.cut(after_broker=True)
            if rule.fault == "hold":
                return act.hold(rule.key)
        return None

    def on_response(self, call: Call, payload: bytes) -> Action | None:
        for rule in call.state.get(self.STATE, ()):
            if rule.fault == "delay":
                return act.deliver(delay_s=rule.ms / 1000)
            if rule.fault == "drop_response":
                return act.drop()
            if rule.fault == "duplicate_response":
                return act.deliver(copies=2)
            if rule.fault == "reorder":
                return act.reorder()
            if rule.fault == "hold":
                return act.hold(rule.key)
        return None
