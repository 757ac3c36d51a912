"""Perturbations of one API and version, as pure interceptors on frames made by the codec."""

from __future__ import annotations

import struct
import uuid

import pytest

from conformance.protocol import frames
from conformance.protocol.codec import default_codec
from conformance.proxy import interceptor as act
from conformance.proxy.interceptor import Call
from conformance.proxy.perturb import KINDS, SLOW_S, Perturbation, Perturber, parse

CODEC = default_codec()
TOPIC_ID = uuid.UUID(int=7)


def call(api: str, version: int, correlation: int = 5) -> Call:
    payload = frames.encode_request(CODEC, api, version, correlation, {})[4:]
    return Call(connection=1, index=1, api_key=CODEC.registry.api(api).api_key, api_version=version,
                correlation_id=correlation, payload=payload, upstream=("127.0.0.1", 9092), codec=CODEC)


def answer(api: str, version: int, body: dict, correlation: int = 5) -> bytes:
    return frames.encode_response(CODEC, api, version, correlation, body)[4:]


def delivered(action, the_call: Call) -> dict:
    assert action.kind == act.DELIVER and action.payload is not None
    return the_call.response(action.payload)[1]


def batch(base_offset: int, values: int) -> bytes:
    """A record batch's frame as the log holds it: base offset, length, then that many bytes."""
    return struct.pack(">qi", base_offset, values) + bytes(values)


FETCH_13 = {"responses": [{"topic_id": TOPIC_ID, "partitions": [
    {"partition_index": 0, "error_code": 0, "high_watermark": 2, "records": batch(0, 60) + batch(1, 60)}]}]}


def test_other_apis_and_versions_pass_untouched():
    perturber = Perturber(parse("generic-error@EndTxn:3", CODEC), CODEC)
    for other in (call("EndTxn", 2), call("InitProducerId", 3)):
        assert perturber.on_request(other) is None
        assert perturber.on_response(other, answer(other.api, other.api_version, {})) is None


def test_close_cuts_the_connection_instead_of_forwarding():
    assert Perturber(parse("close@EndTxn:3", CODEC), CODEC).on_request(call("EndTxn", 3)).kind == act.CUT


@pytest.mark.parametrize("kind, code", [("generic-error", -1), ("unsupported", 35)])
def test_every_error_code_of_the_answer_is_replaced(kind, code):
    the_call = call("Fetch", 13)
    body = delivered(Perturber(parse(f"{kind}@Fetch:13", CODEC), CODEC).on_response(
        the_call, answer("Fetch", 13, FETCH_13)), the_call)
    assert body["error_code"] == code and body["responses"][0]["partitions"][0]["error_code"] == code


def test_topic_ids_become_the_zero_id_and_only_they():
    the_call = call("Fetch", 13)
    body = delivered(Perturber(parse("zero-topic-ids@Fetch:13", CODEC), CODEC).on_response(
        the_call, answer("Fetch", 13, FETCH_13)), the_call)
    assert body["responses"][0]["topic_id"] == uuid.UUID(int=0)
    assert body["responses"][0]["partitions"][0]["high_watermark"] == 2


def test_one_batch_keeps_the_first_batch_whole():
    the_call = call("Fetch", 13)
    body = delivered(Perturber(parse("one-batch@Fetch:13", CODEC), CODEC).on_response(
        the_call, answer("Fetch", 13, FETCH_13)), the_call)
    assert body["responses"][0]["partitions"][0]["records"] == batch(0, 60)


def test_an_older_body_is_framed_as_the_request_version_asked():
    the_call = call("InitProducerId", 2)   # v2 is the first flexible version: v1's body has no tagged fields
    body = {"error_code": 0, "producer_id": 42, "producer_epoch": 1}
    action = Perturber(parse("older-body@InitProducerId:2", CODEC), CODEC).on_response(
        the_call, answer("InitProducerId", 2, body))
    assert action.payload != answer("InitProducerId", 2, body)
    older = frames.encode_response(CODEC, "InitProducerId", 1, 5, body)[4:]
    assert action.payload.endswith(older[4:])   # v2's header (tagged fields) before v1's body


def test_slow_holds_the_answer_back():
    the_call = call("EndTxn", 3)
    action = Perturber(parse("slow@EndTxn:3", CODEC), CODEC).on_response(the_call, answer("EndTxn", 3, {}))
    assert action.kind == act.DELIVER and action.payload is None and action.delay_s == SLOW_S


def test_a_perturbation_applies_only_where_it_can_change_an_answer():
    assert Perturbation("zero-topic-ids", "Fetch", 13).applies(CODEC)
    assert not Perturbation("zero-topic-ids", "Fetch", 12).applies(CODEC)   # names, not ids, before v13
    assert not Perturbation("older-body", "EndTxn", 0).applies(CODEC)
    assert not Perturbation("older-body", "InitProducerId", 3).applies(CODEC)   # v2 and v3 encode alike
    assert not Perturbation("one-batch", "EndTxn", 3).applies(CODEC)
    assert all(Perturbation(kind, "Produce", 9).applies(CODEC) for kind in KINDS if kind not in
               ("one-batch", "zero-topic-ids"))


@pytest.mark.parametrize("text, words", [("close", "NAME@API:VERSION"), ("melt@EndTxn:3", "no perturbation"),
                                         ("close@NoSuchApi:1", "NoSuchApi"), ("close@EndTxn:99", "no version 99")])
def test_a_wrong_spec_says_what_is_wrong(text, words):
    with pytest.raises(ValueError, match=words):
        parse(text, CODEC)
