"""The codec benchmark compares like with like: every implementation handles the same bytes."""

from __future__ import annotations

import pytest

from conformance.bench.codec import Result, ratio, render
from conformance.bench.implementations import available_implementations
from conformance.bench.messages import bench_messages
from conformance.protocol.codec import default_codec


@pytest.mark.parametrize("message", bench_messages(), ids=lambda message: message.label)
def test_every_implementation_encodes_and_decodes_the_same_bytes(message):
    implementations, missing = available_implementations()
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    data = default_codec().encode(message.api, message.version, message.direction, message.body)
    for implementation in implementations:
        encode, decode = implementation.prepare(message, data)  # raises if it re-encodes differently
        assert bytes(encode()) == data, implementation.name
        decoded = decode()  # what the benchmark times: each implementation's own decoded form, whole
        if implementation.name == "ours":
            assert default_codec().encode(message.api, message.version, message.direction, decoded[0]) == data
        elif implementation.name == "kio":
            assert decoded[1] == len(data)  # (entity, the offset its reader stopped at)
        else:
            assert bytes(decoded.encode()) == data, implementation.name


def test_ratios_are_geometric_means_of_ours_over_theirs():
    results = [Result("a", "encode", {"ours": 200.0, "kio": 100.0}, []),
               Result("b", "encode", {"ours": 50.0, "kio": 100.0}, []),
               Result("c", "decode", {"ours": 300.0, "kio": 100.0}, [])]
    assert ratio(results, "kio", "encode") == pytest.approx(1.0)
    assert ratio(results, "kio", "decode") == pytest.approx(3.0)
    assert ratio(results, "kafka-python") is None
    table = render(results, ["ours", "kio"], {"kafka-python": "No module named 'kafka'"})
    assert "2.00" in table and "0.50" in table and "kafka-python not installed" in table
