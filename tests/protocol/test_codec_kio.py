"""Differential tests: our codec and kio must write the same bytes for the same message.

Both directions are checked byte for byte, which needs no mapping of field names: our encoding of
a spec-generated message must survive kio's reader and writer unchanged, and kio's encoding of a
kio-generated entity must survive our decoder and encoder unchanged. kio follows an older Kafka
tag than our 4.4.0 specs, so only the versions both implement are compared.

kio's richer types cannot hold every wire value (see kio_oracle), so our messages are narrowed to
what kio can hold; beyond that, kio 0.6.5 and our 4.4.0 specs agree on every shared version, so
there is no list of known disagreements: any difference fails.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("kio", reason="kio (an independent Kafka protocol library) is not installed")

from kio_oracle import (
    kio_class,
    kio_encode,
    kio_entities,
    kio_header_class,
    kio_limits,
    kio_round_trip,
)
from message_strategies import message_strategy

from conformance.protocol.codec import default_codec
from conformance.protocol.schema import bundled_registry

REGISTRY = bundled_registry()
CODEC = default_codec()
QUICK = settings(max_examples=25, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _cases() -> dict[tuple[str, str], list[tuple[int, type]]]:
    cases = {}
    for api in REGISTRY.apis():
        for direction in ("request", "response"):
            spec = getattr(api, direction)
            shared = [(version, cls) for version in spec.versions()
                      if (cls := kio_class(api.api_key, version, direction)) is not None]
            if shared:
                cases[api.name, direction] = shared
    return cases


CASES = _cases()
IDS = [f"{api}-{direction}" for api, direction in CASES]
_strategies: dict[tuple[str, int], st.SearchStrategy] = {}


def limited_strategy(spec, version: int, cls) -> st.SearchStrategy[dict]:
    key = (spec.name, version)
    if key not in _strategies:
        limits, _ = kio_limits(spec, version, cls)
        _strategies[key] = message_strategy(spec, version, unknown_tagged=False, absent_fields=False,
                                            override=limits.get)
    return _strategies[key]


def spec_of(api: str, direction: str):
    return getattr(REGISTRY.api(api), direction)


@pytest.mark.parametrize("api, direction", list(CASES), ids=IDS)
def test_kio_has_the_same_fields_in_the_same_order(api, direction):
    spec = spec_of(api, direction)
    problems = [f"v{version}: {problem}" for version, cls in CASES[api, direction]
                for problem in kio_limits(spec, version, cls)[1]]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("api, direction", list(CASES), ids=IDS)
@QUICK
@given(data=st.data())
def test_kio_rewrites_our_bytes_unchanged(api, direction, data):
    spec = spec_of(api, direction)
    for version, cls in CASES[api, direction]:
        message = data.draw(limited_strategy(spec, version, cls), label=f"v{version}")
        ours = CODEC.encode(api, version, direction, message)
        theirs, read = kio_round_trip(cls, ours)
        assert read == len(ours), f"v{version}: kio read {read} of {len(ours)} bytes"
        assert theirs == ours, f"v{version}"


@pytest.mark.parametrize("api, direction", list(CASES), ids=IDS)
@QUICK
@given(data=st.data())
def test_we_rewrite_kio_bytes_unchanged(api, direction, data):
    for version, cls in CASES[api, direction]:
        theirs = kio_encode(cls, data.draw(kio_entities(cls), label=f"v{version}"))
        decoded, end = CODEC.decode(api, version, direction, theirs)
        assert end == len(theirs), f"v{version}: we read {end} of {len(theirs)} bytes"
        assert CODEC.encode(api, version, direction, decoded) == theirs, f"v{version}"


HEADERS = [(name, version) for name in ("RequestHeader", "ResponseHeader")
           for version in REGISTRY.message(name).versions() if kio_header_class(name, version)]


@pytest.mark.parametrize("name, version", HEADERS, ids=[f"{n}-v{v}" for n, v in HEADERS])
@QUICK
@given(data=st.data())
def test_headers_agree_with_kio_both_ways(name, version, data):
    spec, cls = REGISTRY.message(name), kio_header_class(name, version)
    message = data.draw(message_strategy(spec, version, unknown_tagged=False, absent_fields=False))
    ours = CODEC.encode_message(name, version, message)
    assert kio_round_trip(cls, ours) == (ours, len(ours))
    theirs = kio_encode(cls, data.draw(kio_entities(cls)))
    decoded, end = CODEC.decode_message(name, version, theirs)
    assert end == len(theirs)
    assert CODEC.encode_message(name, version, decoded) == theirs


def test_only_versions_newer_than_kio_are_left_out():
    # kio 0.6.5 was generated from a Kafka older than 4.4.0, which added these versions
    newer = {("ApiVersionsRequest", 5), ("ApiVersionsResponse", 5),
             ("TxnOffsetCommitRequest", 6), ("TxnOffsetCommitResponse", 6)}
    left_out = {(spec.name, version) for api in REGISTRY.apis() for spec in (api.request, api.response)
                for version in spec.versions() if kio_class(api.api_key, version, spec.type) is None}
    assert left_out == newer
