"""Normalisation rules: what a diff between two runs must not count as a difference.

Two runs of one case differ in ways that say nothing about conformance: producer ids, ports,
timestamps, topic ids, the run-specific suffix of every topic and transactional id. The rules
name fields (``fnmatch`` patterns over a field's name or its dotted path) and say how each is
compared:

- ``mask``: not compared; shown as ``<masked>`` (still reported when present on one side only);
- ``ordinal``: replaced by its order of first appearance in the run (``<name#2>``; ``<name~2>``
  for values first seen in a response), so
  ``kip98.x.main.run1-3`` and ``kip98.x.main.run2-7`` compare equal when used the same way
  (values both runs have, such as feature names, stay as they are);
- ``presence``: only null against non-null is compared (free text such as error messages).

``records`` fields (record batches) are compared by what the batches are, never by offsets or
timestamps: magic, compression, timestamp type, transactional and control flags, producer
epoch, base sequence, record count and control marker types.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..protocol.records import ControlRecord, LegacyMessageSet, decode_batches
from .wire import WireExchange

MASKED = "<masked>"
PRESENT = "<present>"

DEFAULT_MASK = [
    "*producer_id", "producer_id_*", "node_id", "leader_id", "controller_id", "replica_nodes", "isr_nodes",
    "offline_replicas", "leader", "host", "port", "throttle_time_ms", "*_time_ms", "*timestamp*", "topic_id",
    "cluster_id", "*leader_epoch*", "session_id", "correlation_id", "client_id", "client_software_*",
    "finalized_features_epoch",
]
DEFAULT_ORDINAL = [
    "name", "topic", "topic_name", "topic_names", "transactional_id", "*_transactional_id", "transactional_ids",
    "group_id", "groups", "member_id", "group_instance_id", "key", "coordinator_keys",
]
DEFAULT_PRESENCE = ["error_message", "*_error_message", "message"]
# Lists whose order carries no meaning, and the field each is sorted by before comparing: brokers
# list their ApiVersions entries and features in whatever order their registry keeps.
DEFAULT_UNORDERED = {"api_keys": "api_key", "supported_features": "name", "finalized_features": "name"}
# Kafka's broker sends itself WriteTxnMarkers and AddPartitionsToTxn over the client listener:
# broker-internal traffic that other implementations need not reproduce on the wire.
DEFAULT_IGNORE_CLIENT_IDS = ["broker-*-txn-marker-sender", "AddPartitionsManager-*"]


@dataclass
class Rules:
    mask: list[str] = field(default_factory=lambda: list(DEFAULT_MASK))
    ordinal: list[str] = field(default_factory=lambda: list(DEFAULT_ORDINAL))
    presence: list[str] = field(default_factory=lambda: list(DEFAULT_PRESENCE))
    ignore_apis: list[str] = field(default_factory=list)
    ignore_steps: list[str] = field(default_factory=list)  # patterns over step labels ("* negotiate")
    ignore_client_ids: list[str] = field(default_factory=lambda: list(DEFAULT_IGNORE_CLIENT_IDS))
    compare_problems: bool = True
    unordered: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_UNORDERED))

    @classmethod
    def load(cls, path: str | Path) -> Rules:
        """A JSON or YAML file: any of the fields above; ``extend_<field>`` adds to the defaults
        instead of replacing them (``{"extend_mask": ["base_offset"]}``)."""
        text = Path(path).read_text()
        if str(path).endswith((".yaml", ".yml")):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
        names = {item.name for item in fields(cls)}
        unknown = set(data) - names - {f"extend_{name}" for name in names}
        if unknown:
            raise ValueError(f"{path}: unknown rule keys {sorted(unknown)}; known: {sorted(names)}")
        rules = cls(**{key: value for key, value in data.items() if key in names})
        for key, value in data.items():
            if key.startswith("extend_"):
                getattr(rules, key[len("extend_"):]).extend(value)
        return rules

    def ignores(self, exchange: WireExchange) -> bool:
        client_id = (exchange.request_header or {}).get("client_id") or ""
        return (_matches(exchange.api, self.ignore_apis) or _matches(exchange.step or "", self.ignore_steps)
                or _matches(client_id, self.ignore_client_ids))


def _matches(text: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(text, pattern) for pattern in patterns)


class Normaliser:
    """Normalises one run's exchanges; ordinals count across all of them, in order.

    ``keep``: values of ordinal fields left as they are, because the other run has them too
    (feature names, fixed topic names): only run-specific values take ordinals, so a value one
    run has and the other lacks cannot shift the numbering of the rest.
    """

    def __init__(self, rules: Rules, keep: set | None = None):
        self.rules = rules
        self.keep = keep or set()
        # Values first seen in requests (the harness's own, alike on every target) are numbered
        # apart from values first seen in responses, which one target may have more of.
        self.ordinals: dict[str, dict[object, int]] = {"request": {}, "response": {}}
        self._counting = "request"
        self._modes: dict[tuple[str, str], str | None] = {}

    def ordinal_values(self, exchange: WireExchange) -> set:
        """The values of ordinal fields in one exchange (to find those both runs share)."""
        found: set = set()
        stack: list[tuple[object, str]] = [(exchange.request, "request"), (exchange.response, "response")]
        while stack:
            value, path = stack.pop()
            if isinstance(value, dict):
                for name, item in value.items():
                    if name == "_unknown_tagged":
                        continue
                    if self._mode(name, f"{path}.{name}") == "ordinal":
                        found.update(plain(entry) for entry in (item if isinstance(item, list) else [item])
                                     if isinstance(entry, (str, int, bytes)))
                    elif isinstance(item, (dict, list)):
                        stack.append((item, f"{path}.{name}"))
            elif isinstance(value, list):
                stack.extend((item, f"{path}[]") for item in value if isinstance(item, (dict, list)))
        return found

    def exchange(self, exchange: WireExchange) -> dict:
        view = {"api": exchange.api, "version": exchange.version}
        self._counting = "request"
        view["request"] = self.value(exchange.request, "request", "request")
        self._counting = "response"
        view["response"] = self.value(exchange.response, "response", "response")
        if exchange.request is None and exchange.request_bytes:
            view["request"] = {"undecoded_bytes": len(exchange.request_bytes)}
        if exchange.response is None and exchange.response_bytes:
            view["response"] = {"undecoded_bytes": len(exchange.response_bytes)}
        if self.rules.compare_problems:
            view["problems"] = sorted({problem_kind(problem) for problem in exchange.problems})
        return view

    def value(self, value, name: str, path: str):
        if isinstance(value, dict):
            return {key: self.field(key, item, f"{path}.{key}") for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, name, f"{path}[]") for item in value]
        return plain(value)

    def field(self, name: str, value, path: str):
        if name == "_unknown_tagged" and isinstance(value, dict):
            return {str(tag): plain(raw) for tag, raw in sorted(value.items())}
        mode = self._mode(name, path)
        if mode == "mask":
            return None if value is None else MASKED
        if mode == "presence":
            return None if value in (None, "") else PRESENT  # an empty message says nothing either
        if mode == "ordinal":
            return self._ordinal(name, value)
        if name == "records" and isinstance(value, (bytes, bytearray)):
            return summarise_records(bytes(value))
        key = self.rules.unordered.get(name)
        if key and isinstance(value, list) and all(isinstance(item, dict) and key in item for item in value):
            value = sorted(value, key=lambda item: str(item[key]))
        return self.value(value, name, path)

    def _mode(self, name: str, path: str) -> str | None:
        key = (name, path)
        if key not in self._modes:
            dotted = path.replace("[]", "")
            mode = None
            for candidate, patterns in (("mask", self.rules.mask), ("presence", self.rules.presence),
                                        ("ordinal", self.rules.ordinal)):
                if _matches(name, patterns) or _matches(dotted, patterns):
                    mode = candidate
                    break
            self._modes[key] = mode
        return self._modes[key]

    def _ordinal(self, name: str, value):
        if value is None or isinstance(value, (dict, bool)):
            return plain(value)
        if isinstance(value, list):
            return [self._ordinal(name, item) for item in value]
        value = plain(value)
        if value in self.keep:
            return value
        for part, mark in (("request", "#"), ("response", "~")):
            if value in self.ordinals[part]:
                return f"<{name}{mark}{self.ordinals[part][value]}>"
        seen = self.ordinals[self._counting]
        seen[value] = len(seen) + 1
        return f"<{name}{'#' if self._counting == 'request' else '~'}{seen[value]}>"


def plain(value):
    """A JSON-able, comparable form of a decoded scalar."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        if len(value) <= 64:
            return {"hex": value.hex()}
        return {"length": len(value), "sha256": hashlib.sha256(value).hexdigest()[:16]}
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def summarise_records(data: bytes) -> dict:
    """What a records field holds, without offsets and timestamps."""
    try:
        batches = decode_batches(data)
    except Exception as error:  # noqa: BLE001 - undecodable batches are a finding of their own
        return {"undecodable": str(error), "bytes": len(data)}
    summary: list[dict[str, object]] = []
    for batch in batches:
        if isinstance(batch, LegacyMessageSet):
            summary.append({"magic": batch.magic})
            continue
        entry: dict[str, object] = {"magic": batch.magic, "compression": batch.compression, "timestamp_type": int(batch.timestamp_type),
                 "transactional": batch.is_transactional, "control": batch.is_control,
                 "producer_epoch": batch.producer_epoch, "base_sequence": batch.base_sequence,
                 "records": len(batch.records), "crc_valid": batch.crc_valid}
        if batch.is_control:
            entry["control_types"] = [_control_type(record) for record in batch.records]
        summary.append(entry)
    result: dict = {"batches": summary}
    if batches.truncated_tail:
        result["truncated_tail"] = True
    return result


def _control_type(record) -> str:
    try:
        control = ControlRecord.from_record(record)
    except Exception as error:  # noqa: BLE001
        return f"undecodable: {error}"
    return {0: "ABORT", 1: "COMMIT"}.get(control.type, f"type {control.type}")


PROBLEM_KINDS = [
    ("no response: the server closed", "no response: closed by the server"),
    ("no response: the client closed", "no response: closed by the client"),
    ("no response", "no response"),
    ("timeout", "no response"),
    ("disconnected", "no response: closed by the server"),
    ("request does not decode", "request does not decode"),
    ("response does not decode", "response does not decode"),
    ("garbage", "response does not decode"),
    ("left over after the response", "bytes after the response body"),
    ("left over after the request", "bytes after the request body"),
    ("matches no request", "response matches no request"),
    ("ApiVersions v0 body", "answered with an ApiVersions v0 body"),
    ("cannot decode", "API or version unknown to the codec"),
]


def problem_kind(problem: str) -> str:
    """The comparable gist of a problem text (texts from a capture and a transcript differ)."""
    for needle, kind in PROBLEM_KINDS:
        if needle in problem:
            return kind
    return problem
