"""The fault proxy's sans-IO core (rules, pipe, address rewriting) with fake frames, and its socket layer
in front of a scripted fake broker on loopback (no broker process: these run in the fast loop)."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from conformance.client.cluster import Cluster
from conformance.client.connection import ResponseTimeout
from conformance.protocol import frames
from conformance.protocol.codec import default_codec
from conformance.proxy import interceptor as act
from conformance.proxy.addresses import Rewriter, rewrite
from conformance.proxy.pipe import CLIENT, CLOSE, DEFER, SEND, UPSTREAM, Pipe
from conformance.proxy.rules import FaultRules, make_rule, parse_versions
from conformance.proxy.server import ProxyServer

from fake_kafka import FakeKafka

CODEC = default_codec()
LOCAL = ("127.0.0.1", 40000)


def request(api: str, version: int, correlation: int, body: dict | None = None) -> bytes:
    return frames.encode_request(CODEC, api, version, correlation, body or {})


def response(api: str, version: int, correlation: int, body: dict | None = None) -> bytes:
    return frames.encode_response(CODEC, api, version, correlation, body or {})


def correlations(effects, to=CLIENT) -> list[int]:
    at = 8 if to == UPSTREAM else 4   # after the size: a request's api key and version, then its correlation id
    return [int.from_bytes(effect.data[at:at + 4], "big", signed=True) for effect in effects
            if effect.kind == SEND and effect.to == to]


def make_pipe(*extra, rules: FaultRules | None = None) -> tuple[Pipe, FaultRules]:
    rules = rules or FaultRules(CODEC)
    return Pipe(1, ("10.0.0.1", 9092), CODEC, [rules, *extra], lambda host, port: LOCAL), rules


END_TXN = {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "committed": True}


# ------------------------------------------------------------------------------------------------ rules
def test_versions_are_parsed_as_suites_write_them():
    assert parse_versions(None) == (0, 1 << 15)
    assert parse_versions(3) == (3, 3)
    assert parse_versions("2-4") == (2, 4)
    assert parse_versions("3+") == (3, 1 << 15)


def test_a_rule_picks_the_nth_matching_request_and_then_leaves():
    pipe, rules = make_pipe()
    rules.add("drop_request", api="EndTxn", version="3+", nth=2)
    assert correlations(pipe.from_client(request("EndTxn", 2, 1, END_TXN)), UPSTREAM) == [1]   # version 2: not counted
    assert correlations(pipe.from_client(request("Metadata", 9, 2)), UPSTREAM) == [2]          # another API
    assert correlations(pipe.from_client(request("EndTxn", 3, 3, END_TXN)), UPSTREAM) == [3]   # first match
    assert pipe.from_client(request("EndTxn", 3, 4, END_TXN)) == []                            # second: dropped
    assert rules.rules == []                                                                    # done, removed
    assert correlations(pipe.from_client(request("EndTxn", 3, 5, END_TXN)), UPSTREAM) == [5]


def test_times_zero_picks_every_match_and_fields_filter_on_the_request_body():
    pipe, rules = make_pipe()
    rules.add("drop_request", api="EndTxn", times=0, fields={"transactional_id": "mine"})
    assert pipe.from_client(request("EndTxn", 3, 1, {**END_TXN, "transactional_id": "mine"})) == []
    assert correlations(pipe.from_client(request("EndTxn", 3, 2, END_TXN)), UPSTREAM) == [2]
    assert pipe.from_client(request("EndTxn", 3, 3, {**END_TXN, "transactional_id": "mine"})) == []
    assert len(rules.rules) == 1


def test_a_rule_kept_to_a_client_picks_only_that_clients_requests_and_counts_only_them():
    pipe, rules = make_pipe()
    rules.add("drop_request", api="EndTxn", nth=2, client="case-1")
    other = frames.encode_request(CODEC, "EndTxn", 3, 1, END_TXN, "case-2")
    assert correlations(pipe.from_client(other), UPSTREAM) == [1]                       # another case's: not counted
    mine = [frames.encode_request(CODEC, "EndTxn", 3, number, END_TXN, "case-1") for number in (2, 3)]
    assert correlations(pipe.from_client(mine[0]), UPSTREAM) == [2]                     # its first
    assert pipe.from_client(mine[1]) == []                                              # its second: dropped
    assert rules.rules == []


def test_a_rule_kept_to_a_client_stays_through_another_case_ending_and_clear_of_its_client_removes_it():
    rules = FaultRules(CODEC)
    rules.add("drop_response", api="Produce", client="case-1")
    rules.add("hold", api="EndTxn", where="request", key="late-1", client="case-1")
    rules.add("drop_response", api="EndTxn")                                            # kept to no client
    rules.clear_shared()                                                                # what heal removes
    assert [(rule.fault, rule.client) for rule in rules.rules] == [("drop_response", "case-1"), ("hold", "case-1")]
    assert rules.own_keys == {"late-1"}
    rules.clear("case-2")
    assert len(rules.rules) == 2
    rules.clear("case-1")
    assert rules.rules == []


def test_release_of_all_keeps_what_is_held_under_a_kept_key():
    pipe, rules = make_pipe()
    rules.add("hold", api="EndTxn", key="late-1")
    pipe.from_client(request("EndTxn", 3, 1, END_TXN))
    assert pipe.from_upstream(response("EndTxn", 3, 1)) == []
    assert pipe.release(None, frozenset({"late-1"})) == []                              # a case's own hold stays
    assert correlations(pipe.release(None, frozenset({"late-2"}))) == [1]


def test_unknown_faults_and_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown proxy fault"):
        make_rule(CODEC, "explode")
    with pytest.raises(ValueError, match="where"):
        make_rule(CODEC, "delay", where="sideways")
    with pytest.raises(TypeError):
        make_rule(CODEC, "delay", colour="red")


# ------------------------------------------------------------------------------------------------ pipe
def test_frames_pass_through_unchanged_and_split_across_reads():
    pipe, _ = make_pipe()
    frame = request("EndTxn", 3, 7, END_TXN)
    assert pipe.from_client(frame[:5]) == []
    [effect] = pipe.from_client(frame[5:])
    assert (effect.kind, effect.to, effect.data) == (SEND, UPSTREAM, frame)
    answer = response("EndTxn", 3, 7)
    [effect] = pipe.from_upstream(answer)
    assert (effect.to, effect.data) == (CLIENT, answer)


def test_drop_response_keeps_the_connection_and_later_responses_flow():
    pipe, rules = make_pipe()
    rules.add("drop_response", api="EndTxn")
    pipe.from_client(request("EndTxn", 3, 1, END_TXN) + request("EndTxn", 3, 2, END_TXN))
    assert pipe.from_upstream(response("EndTxn", 3, 1)) == []
    assert correlations(pipe.from_upstream(response("EndTxn", 3, 2))) == [2]


def test_duplicate_request_sends_a_copy_whose_answer_is_swallowed():
    pipe, rules = make_pipe()
    rules.add("duplicate_request", api="EndTxn")
    sent = pipe.from_client(request("EndTxn", 3, 1, END_TXN))
    first, copy = correlations(sent, UPSTREAM)
    assert first == 1 and copy != 1
    assert sent[0].data[12:] == sent[1].data[12:]                 # same header tail and body
    assert correlations(pipe.from_upstream(response("EndTxn", 3, 1))) == [1]
    assert pipe.from_upstream(response("EndTxn", 3, copy)) == []


def test_duplicate_response_delivers_it_twice():
    pipe, rules = make_pipe()
    rules.add("duplicate_response", api="EndTxn")
    pipe.from_client(request("EndTxn", 3, 1, END_TXN))
    assert correlations(pipe.from_upstream(response("EndTxn", 3, 1))) == [1, 1]


def test_reorder_swaps_two_responses():
    pipe, rules = make_pipe()
    rules.add("reorder", api="EndTxn")
    pipe.from_client(request("EndTxn", 3, 1, END_TXN) + request("Metadata", 9, 2))
    assert pipe.from_upstream(response("EndTxn", 3, 1)) == []
    assert correlations(pipe.from_upstream(response("Metadata", 9, 2, {"brokers": []}))) == [2, 1]


def test_cut_before_closes_without_forwarding_and_cut_after_once_the_broker_answered():
    pipe, rules = make_pipe()
    rules.add("cut_before", api="EndTxn")
    assert [effect.kind for effect in pipe.from_client(request("EndTxn", 3, 1, END_TXN))] == [CLOSE]
    assert pipe.closed
    pipe, rules = make_pipe()
    rules.add("cut_after", api="EndTxn")
    assert correlations(pipe.from_client(request("EndTxn", 3, 1, END_TXN)), UPSTREAM) == [1]
    assert [effect.kind for effect in pipe.from_upstream(response("EndTxn", 3, 1))] == [CLOSE]


def test_hold_keeps_the_response_and_those_behind_it_until_released():
    pipe, rules = make_pipe()
    rules.add("hold", api="EndTxn", key="k")
    pipe.from_client(request("EndTxn", 3, 1, END_TXN) + request("Metadata", 9, 2))
    assert pipe.from_upstream(response("EndTxn", 3, 1)) == []
    assert pipe.from_upstream(response("Metadata", 9, 2, {"brokers": []})) == []
    assert pipe.holding == 1
    assert pipe.release("other") == []
    assert correlations(pipe.release("k")) == [1, 2]


def test_hold_where_request_keeps_the_request_and_those_behind_it_from_the_broker_until_released():
    pipe, rules = make_pipe()
    rules.add("hold", api="EndTxn", where="request", key="late")
    assert pipe.from_client(request("EndTxn", 3, 1, END_TXN)) == []
    assert pipe.from_client(request("Metadata", 9, 2)) == []          # TCP order: it waits behind the held one
    assert pipe.holding == 1
    assert pipe.release("other") == []
    assert correlations(pipe.release("late"), UPSTREAM) == [1, 2]
    assert pipe.holding == 0
    assert correlations(pipe.from_upstream(response("EndTxn", 3, 1))) == [1]


def test_delay_applies_to_the_request_or_the_response():
    pipe, rules = make_pipe()
    rules.add("delay", api="EndTxn", where="request", ms=250)
    rules.add("delay", api="EndTxn", nth=2, ms=500)
    [sent] = pipe.from_client(request("EndTxn", 3, 1, END_TXN))
    assert sent.delay_s == 0.25
    [answered] = pipe.from_upstream(response("EndTxn", 3, 1))
    assert answered.delay_s == 0
    pipe.from_client(request("EndTxn", 3, 2, END_TXN))
    [answered] = pipe.from_upstream(response("EndTxn", 3, 2))
    assert answered.delay_s == 0.5


class AnswersMetadata(act.PassThrough):
    def on_request(self, call):
        if call.api == "Metadata":
            return act.answer(call.encode_response({"brokers": [], "cluster_id": "emulated"}))
        return None


def test_an_interceptor_answer_waits_behind_earlier_responses():
    pipe, _ = make_pipe(AnswersMetadata())
    assert correlations(pipe.from_client(request("EndTxn", 3, 1, END_TXN)), UPSTREAM) == [1]
    assert pipe.from_client(request("Metadata", 9, 2)) == []          # answered, but EndTxn's answer is owed first
    assert correlations(pipe.from_upstream(response("EndTxn", 3, 1))) == [1, 2]


class RewritesEndTxn(act.PassThrough):
    """Turns every commit into an abort and reports the broker's error code as NONE."""

    def on_request(self, call):
        if call.api == "EndTxn":
            body = call.request()[1]
            return act.forward(call.encode_request({**body, "committed": False}))
        return None

    def on_response(self, call, payload):
        if call.api == "EndTxn":
            return act.deliver(call.encode_response({**call.response(payload)[1], "error_code": 0}))
        return None


def test_an_interceptor_rewrites_a_request_and_its_response():
    pipe, _ = make_pipe(RewritesEndTxn())
    [sent] = pipe.from_client(request("EndTxn", 3, 1, END_TXN))
    assert frames.decode_request(CODEC, sent.data[4:])[1]["committed"] is False
    [answered] = pipe.from_upstream(response("EndTxn", 3, 1, {"error_code": 48}))
    assert frames.decode_response(CODEC, "EndTxn", 3, answered.data[4:])[1]["error_code"] == 0


def test_deferred_work_holds_later_requests_behind_it():
    pipe, _ = make_pipe(type("Slow", (act.PassThrough,), {
        "on_request": lambda self, call: act.defer(lambda: act.forward()) if call.index == 1 else None})())
    [deferred] = pipe.from_client(request("EndTxn", 3, 1, END_TXN))
    assert deferred.kind == DEFER
    assert pipe.from_client(request("EndTxn", 3, 2, END_TXN)) == []
    assert correlations(pipe.deferred_done(deferred.call, deferred.work()), UPSTREAM) == [1, 2]


def test_a_request_the_broker_never_answers_does_not_block_later_responses():
    pipe, _ = make_pipe()
    pipe.from_client(request("Produce", 9, 1, {"acks": 0, "timeout_ms": 1000, "topic_data": []}))
    pipe.from_client(request("EndTxn", 3, 2, END_TXN))
    assert correlations(pipe.from_upstream(response("EndTxn", 3, 2))) == [2]


# ------------------------------------------------------------------------------------------------ addresses
@pytest.mark.parametrize("api,version,body,paths", [
    ("Metadata", 12, {"brokers": [{"node_id": 1, "host": "b1", "port": 9092}, {"node_id": 2, "host": "b2", "port": 9093}]},
     lambda body: [(broker["host"], broker["port"]) for broker in body["brokers"]]),
    ("FindCoordinator", 3, {"node_id": 1, "host": "b1", "port": 9092},
     lambda body: [(body["host"], body["port"])]),
    ("FindCoordinator", 5, {"coordinators": [{"key": "t", "node_id": 1, "host": "b1", "port": 9092}]},
     lambda body: [(entry["host"], entry["port"]) for entry in body["coordinators"]]),
])
def test_advertised_addresses_are_rewritten(api, version, body, paths):
    seen = []

    def local(host, port):
        seen.append((host, port))
        return ("127.0.0.1", 40000 + len(seen))

    payload = response(api, version, 5, body)[4:]
    rewritten = frames.decode_response(CODEC, api, version, rewrite(CODEC, CODEC.registry.api(api).api_key,
                                                                   version, payload, local))[1]
    assert paths(rewritten) == [("127.0.0.1", 40001 + index) for index in range(len(seen))]
    assert seen[0] == ("b1", 9092)


def test_a_repeated_response_is_rewritten_from_memory_with_its_own_correlation_id():
    calls = []
    rewriter = Rewriter(CODEC, lambda host, port: calls.append((host, port)) or LOCAL)
    body = {"brokers": [{"node_id": 1, "host": "b1", "port": 9092}]}
    first = rewriter(3, 12, response("Metadata", 12, 5, body)[4:])
    second = rewriter(3, 12, response("Metadata", 12, 6, body)[4:])
    assert len(calls) == 1
    assert frames.peek_correlation_id(first) == 5 and frames.peek_correlation_id(second) == 6
    assert first[4:] == second[4:]
    assert frames.decode_response(CODEC, "Metadata", 12, second)[1]["brokers"][0]["port"] == LOCAL[1]


def test_bytes_after_the_body_survive_the_rewrite():
    payload = response("Metadata", 12, 5, {"brokers": [{"node_id": 1, "host": "b1", "port": 9092}]})[4:] + b"\x00"
    rewritten = rewrite(CODEC, 3, 12, payload, lambda host, port: LOCAL)
    assert rewritten.endswith(b"\x00")
    header, body, tail = frames.decode_response_with_tail(CODEC, "Metadata", 12, rewritten)
    assert (body["brokers"][0]["port"], tail) == (LOCAL[1], 1)


def test_a_coordinator_error_without_an_address_is_left_alone():
    payload = response("FindCoordinator", 5, 5, {"coordinators": [
        {"key": "t", "node_id": -1, "host": "", "port": -1, "error_code": 15}]})[4:]
    assert rewrite(CODEC, 10, 5, payload, lambda host, port: pytest.fail("nothing to map")) == payload


# ------------------------------------------------------------------------------------------------ sockets
@pytest.fixture
def fake_broker():
    broker = FakeKafka()
    yield broker
    broker.stop()


def proxy_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith(("kafka-proxy", "proxy-defer"))]


def test_the_proxy_in_front_of_a_fake_broker_rewrites_addresses_and_applies_faults(fake_broker):
    with ProxyServer(fake_broker.address) as proxy:
        cluster = Cluster(proxy.bootstrap, timeout=2)
        try:
            broker = cluster.metadata([])["brokers"][0]
            assert (broker["host"], broker["port"]) == proxy.listeners()[("127.0.0.1", fake_broker.port)]
            proxy.fault("drop_response", api="Metadata")
            connection = cluster.connection()
            sent = connection.send("Metadata", 12, {"topics": [], "allow_auto_topic_creation": False})
            with pytest.raises(ResponseTimeout):
                connection.receive(sent, 0.5)
            assert cluster.metadata([])["brokers"]            # the next one gets through
            proxy.fault("delay", api="Metadata", ms=300)
            started = time.monotonic()
            cluster.metadata([])
            assert time.monotonic() - started >= 0.3
        finally:
            cluster.close()
    assert proxy_threads() == []


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_stopping_the_proxy_closes_its_listeners_and_connections(fake_broker):
    descriptors = open_descriptors()
    proxy = ProxyServer(fake_broker.address).start()
    host, port = proxy.bootstrap.split(":")
    client = socket.create_connection((host, int(port)))
    deadline = time.monotonic() + 2
    while proxy.connection_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proxy.connection_count() == 1
    proxy.stop()
    client.settimeout(2)
    assert client.recv(10) == b""                              # the proxy closed its side
    client.close()
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=1).close()
    assert proxy_threads() == []
    deadline = time.monotonic() + 2   # the fake broker (same process) closes its end of the connection on its own thread
    while open_descriptors() > descriptors and time.monotonic() < deadline:
        time.sleep(0.01)
    assert open_descriptors() == descriptors


# ------------------------------------------------------------------------------------------------ target
def test_the_proxy_target_wraps_host_port_routes_faults_and_heals(fake_broker):
    from conformance.extension import Extensions
    from conformance.targets.base import CapabilityMissing
    from conformance.targets.registry import resolve

    target = resolve(f"proxy+{fake_broker.address}", Extensions.for_run().target_kinds())
    assert target.inner.kind == "host:port" and "configure" in target.capabilities
    assert "proxy" in target.capabilities
    target.start()
    try:
        assert target.bootstrap != fake_broker.address
        assert target.info().kind == "proxy+host:port"
        assert target.info().extra["upstream"] == fake_broker.address
        target.fault("proxy.hold", api="EndTxn")
        assert len(target.server.faults.rules) == 1
        with pytest.raises(ValueError, match="unknown proxy fault"):
            target.fault("proxy.explode")
        with pytest.raises(CapabilityMissing):
            target.fault("broker_down")                   # not a proxy fault: the inner target's, which has none
        target.fault("proxy.drop_response", api="Produce", client="case-1")       # one case's own
        target.heal()
        assert [rule.client for rule in target.server.faults.rules] == ["case-1"]  # the shared one is gone
        target.fault("proxy.clear")
        assert target.server.faults.rules == []
    finally:
        target.stop()
    assert proxy_threads() == []


def test_a_latency_holds_back_every_response_in_order(fake_broker):
    from conformance.targets.hostport import HostPortTarget
    from conformance.targets.proxied import ProxiedTarget

    target = ProxiedTarget(f"proxy:latency_ms=200+{fake_broker.address}", HostPortTarget(fake_broker.address),
                           latency_ms=200)
    target.start()
    cluster = Cluster(target.bootstrap, timeout=5)
    try:
        cluster.api_versions()
        connection = cluster.connection()
        started = time.monotonic()
        first = connection.send("Metadata", 12, {"topics": [], "allow_auto_topic_creation": False})
        second = connection.send("ApiVersions", 0, {})
        connection.receive(second)
        assert first.response is not None  # read on the way: the order held
        assert time.monotonic() - started >= 0.2
    finally:
        cluster.close()
        target.stop()


def test_await_held_returns_once_a_request_of_its_key_is_held_and_times_out_otherwise(fake_broker):
    """A case goes on once its held request is really held, however slow getting it there was: a fixed wait raced
    the network (the late-write cases failed when a Metadata answer took 1.5 s)."""
    with ProxyServer(fake_broker.address) as proxy:
        cluster = Cluster(proxy.bootstrap, timeout=5)
        try:
            cluster.api_versions()
            with pytest.raises(TimeoutError, match="held nothing under key 'late'"):
                proxy.fault("await_held", key="late", ms=200)
            proxy.fault("hold", api="Metadata", where="request", key="late")
            connection = cluster.connection()
            sent = threading.Timer(0.3, lambda: connection.send("Metadata", 12, {"topics": [],
                                                                               "allow_auto_topic_creation": False}))
            started = time.monotonic()
            sent.start()
            proxy.fault("await_held", key="late", ms=5000)
            assert time.monotonic() - started >= 0.3  # it waited for the request, not a fixed time
            proxy.fault("release", key="late")
        finally:
            cluster.close()


def test_proxy_options_are_parsed_and_a_wrong_one_is_named():
    from conformance.targets.proxied import parse

    assert parse("proxy+kafka") == ({}, "kafka")
    assert parse("proxy:latency_ms=20+kafka,nodes=3") == ({"latency_ms": 20}, "kafka,nodes=3")
    assert parse("kafka") is None and parse("proxy+") is None
    with pytest.raises(ValueError, match="the proxy has no option 'jitter_ms'"):
        parse("proxy:jitter_ms=5+kafka")
    with pytest.raises(ValueError, match="latency_ms takes a whole number of at least 0, not '-5'"):
        parse("proxy:latency_ms=-5+kafka")


# ------------------------------------------------------------------------------------ frames it cannot read
def test_a_frame_with_a_negative_size_goes_through_unread_and_the_connection_relays_from_then_on():
    """The proxy never judges a frame it cannot read: the bytes reach the broker as sent, and whatever
    the broker sends back (here, part of an answer and then more) reaches the client as it came."""
    pipe, _ = make_pipe()
    first = frames.encode_request(CODEC, "EndTxn", 3, 7, END_TXN)
    negative = frames.SIZE.pack(-5) + b"junk"
    effects = pipe.from_client(first[:10])
    assert effects == []  # half a frame: nothing yet
    effects = pipe.from_client(first[10:] + negative)
    assert [(effect.kind, effect.to, effect.data) for effect in effects] == [(SEND, UPSTREAM, first + negative)]
    assert pipe.relaying
    assert [(e.kind, e.to, e.data) for e in pipe.from_client(b"more")] == [(SEND, UPSTREAM, b"more")]
    assert [(e.kind, e.to, e.data) for e in pipe.from_upstream(b"\x00\x00")] == [(SEND, CLIENT, b"\x00\x00")]


def test_the_proxy_stays_up_for_other_connections_when_a_client_sends_a_negative_size(fake_broker):
    with ProxyServer(fake_broker.address) as proxy:
        host, port = proxy.bootstrap.split(":")
        bad = socket.create_connection((host, int(port)))
        bad.sendall(frames.SIZE.pack(-1))
        cluster = Cluster(proxy.bootstrap, timeout=5)
        try:
            assert cluster.api_versions()  # a fresh connection is still served
        finally:
            cluster.close()
            bad.close()
