"""The protocol implementations the codec benchmark compares, behind one small interface.

``prepare(message, data)`` returns ``(encode, decode)``: two argument-free callables doing one
encode of the implementation's own form of the message and one decode of ``data`` (our encoding).
Each implementation builds its own form by decoding ``data``, and must encode it back to exactly
``data``: otherwise the implementations would not be doing the same work, and ``prepare`` raises
:class:`NotComparable` saying so.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable

from ..protocol.codec import default_codec
from .messages import BenchMessage

Operation = Callable[[], object]


class NotComparable(Exception):
    """An implementation cannot encode or decode this message as the others do."""


class Ours:
    """The harness's codec, as the benchmark calls it."""
    name = "ours"

    def prepare(self, message: BenchMessage, data: bytes) -> tuple[Operation, Operation]:
        """``(encode, decode)`` of ``message``'s body with our codec, ready to be timed."""
        codec = default_codec()
        api, version, direction = message.api, message.version, message.direction
        body, _ = codec.decode(api, version, direction, data)
        return (lambda: codec.encode(api, version, direction, body),
                lambda: codec.decode(api, version, direction, data))


class Kio:
    """Aiven's kio: generated frozen dataclasses; its readers are native (Rust) code."""

    name = "kio"

    def __init__(self):
        self.index = importlib.import_module("kio.index")
        self.serial = importlib.import_module("kio.serial")

    def prepare(self, message: BenchMessage, data: bytes) -> tuple[Operation, Operation]:
        """``(encode, decode)`` of ``message`` with kio's entities and serializers, ready to be timed."""
        api_key = default_codec().registry.api(message.api).api_key
        load = self.index.load_request_schema if message.direction == "request" else self.index.load_response_schema
        try:
            cls = load(api_key, message.version)
        except self.index.KioIndexError as error:
            raise NotComparable(f"kio has no {message.api} v{message.version}: {error}") from None
        reader, writer = self.serial.entity_reader(cls), self.serial.entity_writer(cls)
        entity, _ = reader(data, 0)

        def encode() -> bytes:
            out = io.BytesIO()
            writer(out, entity)
            return out.getvalue()

        _same_bytes(self.name, encode(), data)
        return encode, lambda: reader(data, 0)


class KafkaPython:
    """kafka-python 3: message classes interpreted from Kafka's JSON specs, with compiled codecs."""

    name = "kafka-python"
    MODULES = ("kafka.protocol.producer", "kafka.protocol.consumer", "kafka.protocol.metadata",
               "kafka.protocol.admin")

    def __init__(self):
        for module in self.MODULES:
            importlib.import_module(module)
        self.base = importlib.import_module("kafka.protocol.api_message").ApiMessage

    def message_class(self, name: str):
        """kafka-python's class of the message named ``name`` (``ProduceRequest``), at any version."""
        pending = [self.base]
        while pending:
            cls = pending.pop()
            if cls.__name__ == name and getattr(cls, "_class_version", None) is None:
                return cls
            pending.extend(cls.__subclasses__())
        raise NotComparable(f"kafka-python has no {name}")

    def prepare(self, message: BenchMessage, data: bytes) -> tuple[Operation, Operation]:
        """``(encode, decode)`` of ``message`` with kafka-python's classes, ready to be timed."""
        cls = self.message_class(message.api + message.direction.capitalize())
        version = message.version
        decoded = cls.decode(data, version=version)  # remembers its version for encode()
        _same_bytes(self.name, decoded.encode(), data)
        return decoded.encode, lambda: cls.decode(data, version=version)


def _same_bytes(name: str, encoded: bytes, expected: bytes) -> None:
    if bytes(encoded) != expected:
        raise NotComparable(f"{name} re-encodes the message to different bytes "
                            f"({len(encoded)} bytes, ours {len(expected)})")


def available_implementations() -> tuple[list[Ours | Kio | KafkaPython], dict[str, str]]:
    """(implementations that import, {name: why not} for those that do not)."""
    found: list[Ours | Kio | KafkaPython] = [Ours()]
    missing: dict[str, str] = {}
    for factory in (Kio, KafkaPython):
        try:
            found.append(factory())
        except ImportError as error:
            missing[factory.name] = str(error)
    return found, missing
