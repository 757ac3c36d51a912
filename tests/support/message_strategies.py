"""Hypothesis strategies for message dicts, derived from the message specs, and their expected decodings.

``message_strategy(spec, version)`` draws a dict the codec must accept: every field present at
that version with a value inside its type's range (None only where the field is nullable at that
version), tagged fields sometimes left out and sometimes set to their default, sometimes unknown
tagged fields, and sometimes fields that do not exist at that version (the encoder must ignore
them). ``normalize`` says what decoding the encoding must give back. Both read the spec directly
and share nothing with the codec, so a codec bug cannot hide in its own oracle.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st

from conformance.protocol.schema import FieldSpec, MessageSpec

UNKNOWN_TAGGED = "_unknown_tagged"
ZERO_UUID = uuid.UUID(int=0)
INTEGER_BOUNDS = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1), "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
}
MAXIMUM_ARRAY = 2  # messages nest arrays three or four deep; small arrays keep examples fast
MISSING = object()

_scalar_strategies = {
    "bool": st.booleans(),
    "float64": st.floats(allow_nan=False),  # NaN != NaN would make equality meaningless
    "string": st.text(max_size=10),
    "bytes": st.binary(max_size=12),
    "records": st.binary(max_size=24),  # the codec treats records as opaque bytes
    "uuid": st.one_of(st.just(ZERO_UUID), st.uuids()),
    **{kind: st.integers(low, high) for kind, (low, high) in INTEGER_BOUNDS.items()},
}


def child_fields(message: MessageSpec, field: FieldSpec) -> list[FieldSpec]:
    return field.fields if field.fields is not None else message.struct(field.element_type, field.name).fields


def present_fields(message: MessageSpec, version: int, fields: list[FieldSpec]):
    """(field, is_tagged) for the fields a struct has at ``version``; tagged ones only when flexible."""
    flexible = version in message.flexible_versions
    for field in fields:
        if version not in field.versions:
            continue
        tagged = version in field.tagged_versions
        if tagged and not flexible:
            continue
        yield field, tagged


def spec_default(message: MessageSpec, version: int, field: FieldSpec):
    """The decoded value of a field left out: its spec default, else its type's zero value."""
    text = field.default
    if field.is_array:
        return None if text == "null" else []
    if field.is_struct:
        return None if text == "null" else normalize_struct(message, version, child_fields(message, field), {})
    if text == "null":
        return None
    kind = field.type
    if kind in INTEGER_BOUNDS:
        return int(str(text), 0) if text not in (None, "") else 0
    if kind == "bool":
        return str(text) == "true"
    if kind == "float64":
        return float(text) if text not in (None, "") else 0.0
    if kind == "string":
        return text or ""
    if kind == "uuid":
        return ZERO_UUID
    if kind == "records" and version in field.nullable_versions:
        return None
    return b""


# ------------------------------------------------------------------------------ strategies
def message_strategy(message: MessageSpec, version: int, *, unknown_tagged: bool = True,
                     absent_fields: bool = True,
                     override: Callable[[tuple], st.SearchStrategy | None] = lambda path: None,
                     ) -> st.SearchStrategy[dict]:
    """``override(path)`` may replace the strategy of the scalar (or array item) at a field path."""
    options = _Options(unknown_tagged, absent_fields, override)
    return _struct_strategy(message, version, message.fields, options, ())


@dataclass(frozen=True)
class _Options:
    unknown_tagged: bool
    absent_fields: bool
    override: Callable[[tuple], st.SearchStrategy | None]


def _struct_strategy(message, version, fields, options, path):
    required, optional = {}, {}
    known_tags = set()
    for field, tagged in present_fields(message, version, fields):
        value = _field_strategy(message, version, field, options, path + (field.attribute,))
        if tagged:
            known_tags.add(field.tag)
            optional[field.attribute] = st.one_of(st.just(spec_default(message, version, field)), value)
        else:
            required[field.attribute] = value
    if options.absent_fields:
        present = set(required) | set(optional)
        for field in fields:
            if field.attribute not in present:
                optional[field.attribute] = st.just("not at this version")
    if options.unknown_tagged and version in message.flexible_versions:
        tags = st.integers(0, 1 << 20).filter(lambda tag: tag not in known_tags)
        optional[UNKNOWN_TAGGED] = st.dictionaries(tags, st.binary(max_size=6), min_size=1, max_size=2)
    return st.fixed_dictionaries(required, optional=optional)


def _field_strategy(message, version, field, options, path):
    if field.is_struct:
        item = _struct_strategy(message, version, child_fields(message, field), options, path)
    else:
        item = options.override(path)
        if item is None:
            item = _scalar_strategies[field.element_type]
    value = st.lists(item, max_size=MAXIMUM_ARRAY) if field.is_array else item
    if version in field.nullable_versions:
        return st.one_of(st.none(), value)
    return value


# ------------------------------------------------------------------------------ expectations
def normalize(message: MessageSpec, version: int, value: dict) -> dict:
    """What decoding the encoding of ``value`` gives: absent fields dropped, defaults filled in."""
    return normalize_struct(message, version, message.fields, value)


def normalize_struct(message, version, fields, value: dict) -> dict:
    result = {}
    for field, _ in present_fields(message, version, fields):
        given = value.get(field.attribute, MISSING)
        if given is MISSING:
            result[field.attribute] = spec_default(message, version, field)
        else:
            result[field.attribute] = _normalize_value(message, version, field, given)
    unknown = value.get(UNKNOWN_TAGGED) if version in message.flexible_versions else None
    if unknown:
        result[UNKNOWN_TAGGED] = {int(tag): bytes(data) for tag, data in unknown.items()}
    return result


def _normalize_value(message, version, field, value):
    if value is None:
        return None
    if field.is_array:
        return [_normalize_item(message, version, field, item) for item in value]
    return _normalize_item(message, version, field, value)


def _normalize_item(message, version, field, value):
    if field.is_struct:
        return normalize_struct(message, version, child_fields(message, field), value)
    if field.element_type == "uuid" and not isinstance(value, uuid.UUID):
        return uuid.UUID(bytes=bytes(value)) if isinstance(value, (bytes, bytearray)) else uuid.UUID(value)
    return value
