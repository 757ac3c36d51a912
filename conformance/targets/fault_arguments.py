"""Fault arguments written as words: API names and error names to the numbers librdkafka takes."""

from __future__ import annotations

from functools import lru_cache

from conformance.protocol.errors import UnknownErrorName
from conformance.protocol.errors import error_code as kafka_error_code
from conformance.protocol.exceptions import SpecError

# librdkafka-local code that makes the mock broker drop the connection instead of answering.
_DISCONNECT = -195  # RD_KAFKA_RESP_ERR__TRANSPORT


@lru_cache(maxsize=1)
def _specs():
    from conformance.protocol.schema import bundled_registry

    return bundled_registry()


def api_key(api: str | int) -> int:
    """The numeric key of an API given as a key or a name (``EndTxn``, case-insensitive)."""
    if isinstance(api, int):
        return api
    if api.isdigit():
        return int(api)
    try:
        return _specs().api(api).api_key
    except SpecError as exc:
        raise ValueError(f"unknown Kafka API {api!r}: {exc}; give its numeric key instead") from None


def error_code(error: str | int) -> int:
    """The numeric code of an error given as a code, Kafka's name, librdkafka's name or DISCONNECT."""
    if isinstance(error, int):
        return error
    if error.upper() == "DISCONNECT":
        return _DISCONNECT
    try:
        return kafka_error_code(error)
    except UnknownErrorName as unknown:
        from confluent_kafka import KafkaError

        code = getattr(KafkaError, error.upper(), None)
        if not isinstance(code, int):
            raise ValueError(str(unknown)) from None
        return code
