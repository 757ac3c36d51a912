"""Encode and decode any message of any version, compiled from its spec.

Walking the spec for every message would be slow, so each (message, version) is compiled once into
Python functions specialised for it, twice over: fast code (:mod:`fast_codegen`, one straight-line
function per direction) that runs first, and careful code (:mod:`careful_codegen`) that runs only
when the fast code fails, to take a lenient input (fields left out take their defaults) or to say
exactly which field at which offset is wrong. There is one code path for every API: specs loaded
at run time (overlays, draft KIPs) compile the same way.

Messages are plain dicts keyed by snake_case field names. Decoded messages hold every field the
version defines; unknown tagged fields are kept under ``_unknown_tagged`` ({tag: bytes}) and
written back on encode. A :class:`~.primitives.Raw` value in place of any field is written verbatim
when encoding with ``malleable=True`` (for deliberate malformations).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Iterable

from . import primitives
from .careful_codegen import CarefulGenerator
from .codegen_common import UNKNOWN_TAGGED, default_value
from .exceptions import DecodeError, EncodeError, SpecError
from .fast_codegen import FastGenerator
from .schema import MessageSpec, SpecRegistry, VersionRange, bundled_registry

__all__ = ["REQUEST", "RESPONSE", "UNKNOWN_TAGGED", "Codec", "default_codec", "default_value", "has_raw"]

REQUEST, RESPONSE = "request", "response"


@dataclass
class _Compiled:
    """One message version's functions. ``encode``/``decode`` are the fast ones, which fall back to
    the careful ones by themselves (pass ``fallback=False`` to run the fast code alone)."""

    encode: Callable[..., bytes]
    decode: Callable[..., tuple[dict[str, Any], int]]
    careful_encode: Callable[[dict[str, Any]], bytes]
    careful_decode: Callable[[bytes, int], tuple[dict[str, Any], int]]


class Codec:
    """Encodes and decodes messages of the APIs a :class:`SpecRegistry` knows.

    ``direction`` is ``"request"`` or ``"response"``; ``api`` a name (``InitProducerId``) or key.
    """

    def __init__(self, registry: SpecRegistry | None = None):
        self.registry = registry if registry is not None else bundled_registry()
        self._compiled: dict[tuple[str, int, bool], _Compiled] = {}
        # (api as the caller spelt it, version, direction) -> function: one lookup per call
        self._encoders: dict[tuple[str | int, int, str], Callable[..., bytes]] = {}
        self._decoders: dict[tuple[str | int, int, str], Callable[..., tuple[dict[str, Any], int]]] = {}
        # (direction, api, version) -> (generation, (api key, header version)), kept by frames
        self.frame_plans: dict[tuple[str, str | int, int], tuple[int, tuple[int, int]]] = {}
        self._generation = self.registry.generation

    def message_spec(self, api: str | int, direction: str) -> MessageSpec:
        specs = self.registry.api(api)
        if direction == REQUEST:
            return specs.request
        if direction == RESPONSE:
            return specs.response
        raise ValueError(f"direction must be 'request' or 'response', not {direction!r}")

    def compiled(self, message: MessageSpec, version: int, malleable: bool = False) -> _Compiled:
        if self._generation != self.registry.generation:  # specs added or replaced: recompile
            self._compiled.clear()
            self._encoders.clear()
            self._decoders.clear()
            self._generation = self.registry.generation
        key = (message.name, version, malleable)
        found = self._compiled.get(key)
        if found is None:
            if version not in message.valid_versions:
                raise EncodeError(f"{message.name} has no version {version} "
                                  f"(valid: {message.valid_versions})")
            found = self._compiled[key] = _compile(message, version, malleable)
        return found

    def warm(self, versions: Iterable[tuple[str | int, int]]) -> None:
        """Compile the request and response codecs of ``(api, version)`` pairs now, ahead of their first use
        (while a target starts, say); a pair the specs do not know is left to fail where it is used."""
        for api, version in versions:
            for direction in (REQUEST, RESPONSE):
                try:
                    self.compiled(self.message_spec(api, direction), version)
                except Exception:  # noqa: BLE001 - warming never fails anything: the real use reports it
                    pass

    def encode(self, api: str | int, version: int, direction: str, message: dict[str, Any],
               malleable: bool = False) -> bytes:
        """The body only; see :mod:`frames` for headers and size prefixes."""
        encoder = self._encoders.get((api, version, direction))
        if encoder is not None and not malleable and self._generation == self.registry.generation:
            return encoder(message)
        compiled = self.compiled(self.message_spec(api, direction), version, malleable)
        if not malleable:
            self._encoders[api, version, direction] = compiled.encode
        return compiled.encode(message)

    def decode(self, api: str | int, version: int, direction: str, data: bytes,
               offset: int = 0) -> tuple[dict[str, Any], int]:
        """Decode a body starting at ``offset``; returns the message and the offset after it."""
        decoder = self._decoders.get((api, version, direction))
        if decoder is not None and self._generation == self.registry.generation:
            return decoder(data, offset)
        try:
            spec = self.message_spec(api, direction)
        except SpecError as error:  # an API key read from the bytes that no spec defines
            raise DecodeError(str(error), offset, f"{direction} of API {api}") from None
        try:
            compiled = self.compiled(spec, version)
        except EncodeError as error:
            raise DecodeError(error.reason, offset, spec.name) from None
        self._decoders[api, version, direction] = compiled.decode
        return compiled.decode(data, offset)

    def encode_message(self, name: str, version: int, message: dict[str, Any], malleable: bool = False) -> bytes:
        """Encode a message that is not an API body (RequestHeader, ResponseHeader, data specs)."""
        spec = self.registry.message(name)
        return self.compiled(spec, version, malleable).encode(message)

    def decode_message(self, name: str, version: int, data: bytes, offset: int = 0) -> tuple[dict[str, Any], int]:
        spec = self.registry.message(name)
        try:
            compiled = self.compiled(spec, version)
        except EncodeError as error:
            raise DecodeError(error.reason, offset, spec.name) from None
        return compiled.decode(data, offset)

    def is_flexible(self, api: str | int, version: int, direction: str = REQUEST) -> bool:
        return version in self.message_spec(api, direction).flexible_versions

    def versions(self, api: str | int) -> VersionRange:
        return self.registry.api(api).request.valid_versions


def _compile(message: MessageSpec, version: int, malleable: bool) -> _Compiled:
    careful_encode, careful_decode = CarefulGenerator(message, version, malleable).compile()
    if malleable:  # Raw values anywhere: only the careful encoder writes them
        return _Compiled(careful_encode, careful_decode, careful_encode, careful_decode)
    encode, decode = FastGenerator(message, version, careful_encode, careful_decode).compile()
    return _Compiled(encode, decode, careful_encode, careful_decode)


def has_raw(message: object) -> bool:
    """Whether any value anywhere in a message is a Raw override (then the malleable encoder runs)."""
    stack = [message]
    while stack:
        value = stack.pop()
        if value.__class__ is primitives.Raw:
            return True
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(item for item in value if isinstance(item, (dict, list, primitives.Raw)))
    return False


_default: Codec | None = None


def default_codec() -> Codec:
    """A process-wide codec over the bundled specs (compiled functions are shared)."""
    global _default
    if _default is None:
        _default = Codec()
    return _default
