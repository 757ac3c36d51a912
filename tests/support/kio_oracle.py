"""kio (Aiven's Kafka protocol library) as an independent oracle for the codec.

kio generates one frozen dataclass per message version from Kafka's JSON specs, with richer types
than ours: error codes as an enum of the codes it knows, durations as timedeltas and timestamps as
aware datetimes. Those types cannot hold every value the wire can, so before comparing bytes we
narrow our generated values to what kio's field can hold. Our fields pair with kio's by position
(both follow the spec's field order), and each pair's names must agree up to a suffix: kio drops
``_ms`` from the fields it types as durations or times, and keeps ``generation_id`` where Kafka
4.4.0 says ``generation_id_or_member_epoch``.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import types
import typing

from hypothesis import strategies as st
from message_strategies import MAXIMUM_ARRAY, child_fields, present_fields

kio_index = None
try:  # the differential tests skip without kio; this module stays importable
    from kio import index as kio_index
    from kio.schema.errors import ErrorCode
    from kio.serial import entity_reader, entity_writer
    from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field
    from kio.static.constants import EntityType
    from kio.static.primitive import (
        Records,
        i32_timedelta_max,
        i32_timedelta_min,
        i64_timedelta_max,
        i64_timedelta_min,
    )
except ImportError:
    pass
else:
    # kio 0.6.5 gives no strategy for its records type; any bytes do (both sides treat them as opaque)
    st.register_type_strategy(Records, st.binary(max_size=24).map(Records))

MILLISECOND = datetime.timedelta(milliseconds=1)
LATEST_DATETIME_MS = int(datetime.datetime.max.replace(tzinfo=datetime.UTC).timestamp()) * 1000 - 1


def kio_class(api_key: int, version: int, direction: str):
    """kio's dataclass for a message, or None when kio does not implement that version."""
    loader = kio_index.load_request_schema if direction == "request" else kio_index.load_response_schema
    try:
        return loader(api_key, version)
    except kio_index.KioIndexError:
        return None


def kio_header_class(name: str, version: int):
    module = "request_header" if name == "RequestHeader" else "response_header"
    try:
        return kio_index.load_entity_schema(module, version, EntityType.header)
    except kio_index.KioIndexError:
        return None


def kio_round_trip(cls, data: bytes) -> tuple[bytes, int]:
    """kio reads ``data`` as ``cls`` and writes the entity back: (its bytes, how many it read)."""
    entity, size = entity_reader(cls)(data, 0)
    out = io.BytesIO()
    entity_writer(cls)(out, entity)
    return out.getvalue(), size


def kio_encode(cls, entity) -> bytes:
    out = io.BytesIO()
    entity_writer(cls)(out, entity)
    return out.getvalue()


# ------------------------------------------------------------------------------ kio's own messages
_entities: dict[type, st.SearchStrategy] = {}


def kio_entities(cls) -> st.SearchStrategy:
    """Like ``st.from_type(cls)``, but with small arrays (from_type's grow without bound)."""
    if cls not in _entities:
        _entities[cls] = st.builds(cls, **{field.name: _kio_field(field) for field in dataclasses.fields(cls)})
    return _entities[cls]


def _kio_field(field) -> st.SearchStrategy:
    kind = classify_field(field)
    if isinstance(kind, EntityField):
        value = kio_entities(kind.type_)
    elif isinstance(kind, EntityTupleField):
        value = st.lists(kio_entities(kind.type_), max_size=MAXIMUM_ARRAY).map(tuple)
    elif isinstance(kind, PrimitiveTupleField):
        value = st.lists(st.from_type(kind.type_), max_size=MAXIMUM_ARRAY).map(tuple)
    else:
        value = st.from_type(kind.type_)
    nullable = typing.get_origin(field.type) in (types.UnionType, typing.Union) \
        and types.NoneType in typing.get_args(field.type)
    return st.one_of(st.none(), value) if nullable else value


# ------------------------------------------------------------------------------ value limits
def _milliseconds(low: datetime.timedelta, high: datetime.timedelta, bits: int) -> st.SearchStrategy[int]:
    # kio writes a timedelta back through float seconds, exact only up to 2**53 microseconds
    bound = min(1 << (bits - 1), (1 << 53) // 1000)
    return st.integers(max(-bound, low // MILLISECOND), min(bound - 1, high // MILLISECOND))


def _limits() -> dict[str, st.SearchStrategy[int]]:
    timestamps = st.integers(0, LATEST_DATETIME_MS)
    return {
        "error_code": st.sampled_from(sorted(code.value for code in ErrorCode)),
        "timedelta_i32": _milliseconds(i32_timedelta_min, i32_timedelta_max, 32),
        "timedelta_i64": _milliseconds(i64_timedelta_min, i64_timedelta_max, 64),
        "datetime_i64": timestamps,
    }


def kio_limits(message, version: int, cls) -> tuple[dict[tuple, st.SearchStrategy], list[str]]:
    """({field path: strategy} narrowing values to kio's types, [structural mismatches])."""
    limits: dict[tuple, st.SearchStrategy] = {}
    mismatches: list[str] = []
    _walk(message, version, message.fields, cls, (), limits, mismatches, _limits())
    return limits, mismatches


def _walk(message, version, fields, cls, path, limits, mismatches, kinds):
    ours = list(present_fields(message, version, fields))
    theirs = dataclasses.fields(cls)
    if len(ours) != len(theirs):
        mismatches.append(f"{'.'.join(path) or message.name}: our fields "
                          f"{[f.attribute for f, _ in ours]}, kio's {[f.name for f in theirs]}")
        return
    for (field, _), kio_field in zip(ours, theirs):
        here = path + (field.attribute,)
        if not field.attribute.startswith(kio_field.name):
            mismatches.append(f"{'.'.join(here)}: kio has {kio_field.name!r} in its place")
        kind = kio_field.metadata.get("kafka_type")
        if kind in kinds:
            nullable = "None" in str(kio_field.type)
            limits[here] = st.one_of(st.just(-1), kinds[kind]) if nullable else kinds[kind]
        field_class = classify_field(kio_field)
        if isinstance(field_class, (EntityField, EntityTupleField)):
            if not field.is_struct:
                mismatches.append(f"{'.'.join(here)}: a struct in kio, {field.type} in ours")
                continue
            _walk(message, version, child_fields(message, field), field_class.type_, here, limits,
                  mismatches, kinds)

