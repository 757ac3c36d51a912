"""Perturbations: one API at one version of a correct broker made to answer as other brokers were seen to.

The attribution check (``conformance attribution``) puts one of these in the proxy in front of Apache Kafka and
asks whether the harness blames what it should: the items whose step under test is that API and version, and
no other. Each perturbation is pure (an interceptor: no sockets, no clock) and says whether a broker doing it
still keeps the protocol (``legal``: every verdict must hold) or departs from it (the step under test must not
pass, and nothing else may be blamed).

Spec: ``NAME@API:VERSION`` (``close@EndTxn:3``, ``zero-topic-ids@Fetch:13``).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from ..protocol import frames
from ..protocol.codec import Codec
from ..protocol.schema import FieldSpec, MessageSpec
from . import interceptor as act
from .interceptor import Action, Call, PassThrough

UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION = -1, 35
ZERO_ID = uuid.UUID(int=0)


@dataclass(frozen=True)
class Kind:
    legal: bool       # a broker that does this still keeps the protocol: every verdict must hold
    what: str
    applies: Callable[[MessageSpec, int], bool]   # (response spec, version): would it change any answer?
    # a departing answer that no case may accept (every error code replaced, the connection closed); an answer whose
    # departure a case may not look at (a topic id in an answer the case expects to be an error) leaves a pass possible
    refutes: bool = False


def _fields(message: MessageSpec, version: int) -> list[tuple[str, str]]:
    """``(attribute, type)`` of every field the message has at ``version``, nested ones included."""
    found: list[tuple[str, str]] = []

    def walk(fields: list[FieldSpec]) -> None:
        for field in fields:
            if version not in field.versions:
                continue
            found.append((field.attribute, field.element_type))
            inner = field.fields or (message.common_structs[field.element_type].fields
                                     if field.element_type in message.common_structs else None)
            if inner:
                walk(inner)

    walk(message.fields)
    return found


def _differs_from_below(message: MessageSpec, version: int) -> bool:
    """Whether the version below encodes differently: other fields, or one flexible and the other not."""
    flexible = message.flexible_versions
    return (_fields(message, version) != _fields(message, version - 1)
            or (version in flexible) != (version - 1 in flexible))


def _has(attribute: str, kind: str) -> Callable[[MessageSpec, int], bool]:
    return lambda message, version: (attribute, kind) in _fields(message, version)


KINDS = {
    "close": Kind(False, "closes the connection instead of forwarding the request", lambda message, version: True,
                  refutes=True),
    "unsupported": Kind(False, "answers UNSUPPORTED_VERSION, in every error code of the answer, at an advertised "
                               "version", _has("error_code", "int16"), refutes=True),
    "generic-error": Kind(False, "every error code of the broker's answer becomes UNKNOWN_SERVER_ERROR (a refusal "
                                 "of every request of that version)", _has("error_code", "int16"), refutes=True),
    "older-body": Kind(False, "the answer's body encoded at the version below the request's", lambda message, version:
                       version > message.valid_versions.low and _differs_from_below(message, version)),
    "zero-topic-ids": Kind(False, "every topic id in the answer is the all-zero id (the broker's own \"no id\")",
                           _has("topic_id", "uuid")),
    "one-batch": Kind(True, "a Fetch answer carries only the first record batch of each partition",
                      lambda message, version: message.api_name == "Fetch"),
    "slow": Kind(True, "the answer is held back 1.5 s", lambda message, version: True),
}
SLOW_S = 1.5


@dataclass(frozen=True)
class Perturbation:
    kind: str
    api: str
    version: int

    @property
    def spec(self) -> str:
        return f"{self.kind}@{self.api}:{self.version}"

    @property
    def legal(self) -> bool:
        return KINDS[self.kind].legal

    @property
    def refutes(self) -> bool:
        """No case may pass on its answers: a pass of the step under test is one nothing proved."""
        return KINDS[self.kind].refutes

    def applies(self, codec: Codec) -> bool:
        """Whether it can change any answer of this API at this version (no topic id field: nothing to zero)."""
        return KINDS[self.kind].applies(codec.message_spec(self.api, "response"), self.version)


def parse(text: str, codec: Codec) -> Perturbation:
    """``NAME@API:VERSION`` as a :class:`Perturbation`; ValueError naming what is wrong."""
    kind, at, rest = text.partition("@")
    api, colon, version = rest.partition(":")
    if not (at and colon and version.isdigit()):
        raise ValueError(f"{text!r}: a perturbation is NAME@API:VERSION (close@EndTxn:3)")
    if kind not in KINDS:
        raise ValueError(f"{text!r}: no perturbation {kind!r} (known: {', '.join(KINDS)})")
    try:
        name = codec.registry.api_name(api)
    except Exception as error:  # noqa: BLE001 - the registry's own words name the API it does not know
        raise ValueError(f"{text!r}: {error}") from None
    if int(version) not in codec.versions(name):
        raise ValueError(f"{text!r}: {name} has no version {version} in the specs")
    return Perturbation(kind, name, int(version))


def _rewrite(value: Any, change: Callable[[str, Any], Any]) -> Any:
    if isinstance(value, dict):
        return {key: change(key, _rewrite(inner, change)) for key, inner in value.items()}
    if isinstance(value, list):
        return [_rewrite(inner, change) for inner in value]
    return value


def _first_batch(records: bytes | None) -> bytes | None:
    if not records or len(records) < 12:
        return records
    length = struct.unpack_from(">i", records, 8)[0]   # baseOffset int64, batchLength int32
    return records[:12 + length]


class Perturber(PassThrough):
    """The interceptor of one :class:`Perturbation`: every request of its API and version, on every connection."""

    def __init__(self, perturbation: Perturbation, codec: Codec):
        self.perturbation, self.codec = perturbation, codec
        self.api_key = codec.registry.api(perturbation.api).api_key

    def _mine(self, call: Call) -> bool:
        return call.api_key == self.api_key and call.api_version == self.perturbation.version

    def on_request(self, call: Call) -> Action | None:
        if self._mine(call) and self.perturbation.kind == "close":
            return act.cut()
        return None

    def on_response(self, call: Call, payload: bytes) -> Action | None:
        if not self._mine(call):
            return None
        kind, version = self.perturbation.kind, self.perturbation.version
        if kind == "slow":
            return act.deliver(delay_s=SLOW_S)
        _, body = call.response(payload)
        if kind in ("unsupported", "generic-error"):
            code = UNSUPPORTED_VERSION if kind == "unsupported" else UNKNOWN_SERVER_ERROR
            body = _rewrite(body, lambda key, value: code if key == "error_code" else value)
        elif kind == "zero-topic-ids":
            body = _rewrite(body, lambda key, value: ZERO_ID if key == "topic_id" else value)
        elif kind == "one-batch":
            body = _rewrite(body, lambda key, value: _first_batch(value) if key == "records" else value)
        elif kind == "older-body":  # the header as this version frames it, the body as the version below encodes it
            header = self.codec.encode_message(
                "ResponseHeader", frames.response_header_version(self.codec, self.api_key, version),
                {"correlation_id": call.correlation_id})
            return act.deliver(header + self.codec.encode(self.api_key, version - 1, "response", body))
        return act.deliver(call.encode_response(body))
