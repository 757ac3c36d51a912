"""Targets that run on any machine (the librdkafka mock, Tansu, HOST:PORT), and how specs pick a kind.

Docker-based targets are exercised only where an engine answers; elsewhere the test checks that
they decline quickly with a reason.
"""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conformance.targets import CapabilityMissing, TargetUnavailable, resolve
from conformance.targets.ports import free_port
from conformance.targets.container import ContainerTarget, container_target_kind
from conformance.targets.hostport import HostPortTarget
from conformance.targets.fault_arguments import api_key, error_code
from conformance.targets.rdkafka_mock import RdkafkaMockTarget
from conformance.targets.tansu import TansuTarget, tansu_target_kind


def produce_one(config: dict, topic: str = "conformance-test", timeout: float = 10.0) -> KafkaError | None:
    """Produce one message and return its delivery error (None when delivered)."""
    producer = Producer(config)
    reports = []
    producer.produce(topic, b"payload", on_delivery=lambda error, message: reports.append(error))
    producer.flush(timeout)
    assert reports, "no delivery report within the flush timeout"
    return reports[0]


@pytest.fixture
def mock():
    target = RdkafkaMockTarget("rdkafka-mock")
    target.start()
    yield target
    target.stop()


# rdkafka-mock ------------------------------------------------------------------------------


@pytest.mark.broker
def test_mock_listens_on_loopback_and_accepts_a_message(mock):
    assert re.fullmatch(r"127\.0\.0\.1:\d+", mock.bootstrap)
    assert mock.version.startswith("librdkafka 2.")
    assert produce_one({"bootstrap.servers": mock.bootstrap}) is None


@pytest.mark.broker
def test_mock_with_three_brokers():
    with RdkafkaMockTarget("rdkafka-mock:3") as target:
        assert len(target.bootstrap.split(",")) == 3
        metadata = AdminClient({"bootstrap.servers": target.bootstrap}).list_topics(timeout=5)
        assert sorted(metadata.brokers) == [1, 2, 3]


@pytest.mark.broker
def test_injected_produce_error_reaches_the_producer(mock):
    mock.fault("request_errors", api="Produce", errors=["TOPIC_AUTHORIZATION_FAILED"])
    error = produce_one({"bootstrap.servers": mock.bootstrap})
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.broker
def test_idempotent_producer_retries_through_injected_produce_errors(mock):
    mock.start_request_tracking()
    mock.fault("request_errors", api=0, errors=["NOT_LEADER_OR_FOLLOWER", 6, "REQUEST_TIMED_OUT"])
    assert produce_one({"bootstrap.servers": mock.bootstrap, "enable.idempotence": True}) is None
    produce_requests = [api for _broker, api in mock.tracked_requests() if api == 0]
    assert len(produce_requests) == 4  # three answered with the injected errors, then the one that succeeded


@pytest.mark.broker
def test_broker_down_times_produce_out_until_broker_up(mock):
    config = {"bootstrap.servers": mock.bootstrap, "message.timeout.ms": 1000, "retry.backoff.ms": 50}
    assert produce_one(config) is None
    mock.fault("broker_down", broker_id=1)
    error = produce_one(config)
    assert error is not None and error.code() in (KafkaError._MSG_TIMED_OUT, KafkaError._TRANSPORT)
    mock.fault("broker_up", broker_id=1)
    assert produce_one(config) is None


@pytest.mark.broker
def test_mock_topic_and_cluster_faults(mock):
    mock.fault("topic_create", topic="four-partitions", partitions=4, replication=1)
    metadata = AdminClient({"bootstrap.servers": mock.bootstrap}).list_topics(timeout=5)
    assert len(metadata.topics["four-partitions"].partitions) == 4
    mock.fault("coordinator", key_type="txn", key="tx-1", broker_id=1)
    mock.fault("coordinator", key_type="group", key="g-1", broker_id=1)
    mock.fault("rtt", broker_id=1, ms=5)
    mock.fault("set_apiversion", api="EndTxn", min=0, max=3)
    with pytest.raises(ValueError, match="broker_down"):
        mock.fault("broker_down", broker_id=42)
    with pytest.raises(ValueError, match="unknown Kafka error"):
        mock.fault("request_errors", api="Produce", errors=["NO_SUCH_ERROR"])
    with pytest.raises(CapabilityMissing, match="request_errors"):
        mock.fault("unplug_the_network")


def test_fault_arguments_take_names_or_numbers():
    assert api_key("EndTxn") == api_key("endtxn") == api_key(26) == api_key("26") == 26
    assert error_code("NOT_LEADER_OR_FOLLOWER") == error_code("NOT_LEADER_FOR_PARTITION") == error_code(6) == 6
    assert error_code("_TRANSPORT") == error_code("disconnect") == KafkaError._TRANSPORT
    assert error_code("-1") == error_code("UNKNOWN_SERVER_ERROR") == -1
    with pytest.raises(ValueError, match="unknown Kafka API"):
        api_key("NoSuchApi")


# tansu -------------------------------------------------------------------------------------


@pytest.mark.broker
def test_tansu_creates_a_topic_and_accepts_a_message():
    reason = tansu_target_kind().availability()
    if reason:
        pytest.skip(reason)
    target = TansuTarget()
    began = time.monotonic()
    target.start()
    try:
        assert time.monotonic() - began < 10
        assert re.fullmatch(r"127\.0\.0\.1:\d+", target.bootstrap)
        admin = AdminClient({"bootstrap.servers": target.bootstrap})
        admin.create_topics([NewTopic("tansu-topic", 1, 1)])["tansu-topic"].result(10)
        assert produce_one({"bootstrap.servers": target.bootstrap}, topic="tansu-topic") is None
        assert "listening on" in target.logs()
        assert "restart" not in target.capabilities
    finally:
        target.stop()
    assert "listening on" in target.logs()  # kept for the report after the process is gone


# container ---------------------------------------------------------------------------------


@pytest.mark.broker
def test_container_target_runs_kafka_or_declines_with_a_docker_reason():
    began = time.monotonic()
    reason = container_target_kind().availability()
    assert time.monotonic() - began < 10, "checking for Docker must not hang"
    target = ContainerTarget("container:apache/kafka:4.1.1")
    if reason:
        assert "Docker" in reason
        with pytest.raises(TargetUnavailable, match="Docker"):
            target.start()
        return
    with target:
        metadata = AdminClient({"bootstrap.servers": target.bootstrap}).list_topics(timeout=30)
        assert metadata.brokers


def test_container_spec_gives_image_version_and_capabilities():
    kafka = ContainerTarget("container:apache/kafka:4.1.1")
    assert (kafka.image, kafka.version) == ("apache/kafka:4.1.1", "4.1.1")
    assert "restart" in kafka.capabilities  # fixed host port: a restarted broker keeps its address
    redpanda = ContainerTarget("container:redpandadata/redpanda:v24.2.4")
    assert redpanda.is_redpanda and "restart" not in redpanda.capabilities
    assert "revive" in redpanda.capabilities  # a new container after a crash: every target it starts comes back
    assert ContainerTarget("container:localhost:5000/kafka").version is None


@pytest.mark.parametrize("spec, image, broker", [
    ("container:redpandadata/redpanda:v24.2.4", "redpandadata/redpanda:v24.2.4", "redpanda"),
    ("container:docker.redpanda.com/redpandadata/redpanda@sha256:ab", "docker.redpanda.com/redpandadata/redpanda@sha256:ab",
     "redpanda"),
    # a name that merely contains the word is no longer taken for Redpanda; the option says it
    ("container:acme/kafka-vs-redpanda:1", "acme/kafka-vs-redpanda:1", "kafka"),
    ("container:mirror.local/rp:24.2,broker=redpanda", "mirror.local/rp:24.2", "redpanda"),
    ("container:redpandadata/redpanda:v24.2.4,broker=kafka", "redpandadata/redpanda:v24.2.4", "kafka"),
])
def test_container_broker_kind_is_an_option_defaulting_to_the_image_name(spec, image, broker):
    target = ContainerTarget(spec)
    assert (target.image, target.broker, target.is_redpanda) == (image, broker, broker == "redpanda")


def test_container_spec_with_an_unknown_option_is_refused():
    with pytest.raises(ValueError, match="broker=kafka or broker=redpanda, not 'flavour=x'"):
        ContainerTarget("container:apache/kafka:4.1.1,flavour=x")


def test_container_ended_says_how_the_container_ended():
    class Wrapped:
        status, attrs = "running", {"State": {"ExitCode": 0, "OOMKilled": False}}

        def reload(self):
            pass

    class Container:
        wrapped = Wrapped()

        def get_wrapped_container(self):
            return self.wrapped

    target = ContainerTarget("container:apache/kafka:4.1.1")
    assert target.ended() is None  # not started
    target._container = Container()  # noqa: SLF001
    assert target.ended() is None
    Container.wrapped.status, Container.wrapped.attrs = "exited", {"State": {"ExitCode": 137, "OOMKilled": True}}
    assert target.ended() == "its container exited with status 137 (killed for want of memory)"


# HOST:PORT ---------------------------------------------------------------------------------


@pytest.mark.broker
def test_hostport_attaches_to_a_running_broker_and_leaves_it_running(mock):
    port = mock.bootstrap.rsplit(":", 1)[1]
    target = HostPortTarget(f"127.0.0.1:{port}")
    target.start()
    assert target.bootstrap == f"127.0.0.1:{port}"
    target.stop()
    assert produce_one({"bootstrap.servers": target.bootstrap}) is None


def test_hostport_without_a_listener_is_unavailable():
    target = HostPortTarget(f"127.0.0.1:{free_port()}", connect_timeout=0.3)
    with pytest.raises(TargetUnavailable, match="nothing accepts TCP"):
        target.start()


def test_hostport_keeps_secrets_out_of_info_and_repr():
    security = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "s3cret-pa55",
        "ssl.ca.location": "/etc/ca.pem",
    }
    target = HostPortTarget("broker.example:9093", security=security)
    shown = repr(target) + repr(target.info())
    assert "SASL_SSL" in shown and "PLAIN" in shown
    assert "s3cret-pa55" not in shown and "alice" not in shown
    assert target.client_config()["sasl.password"] == "s3cret-pa55"


# resolve -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled_kinds():
    from conformance.extension import Extensions

    return Extensions.for_run(load_entry_points=False).target_kinds()  # the built-in plugin's, composed


@pytest.mark.parametrize(
    "spec, module",
    [
        ("kafka", "kafka.broker"),
        ("kafka:3.9.1", "kafka.broker"),
        ("tansu", "tansu"),
        ("rdkafka-mock", "rdkafka_mock"),
        ("rdkafka-mock:3", "rdkafka_mock"),
        ("container:apache/kafka:4.1.1", "container"),
        ("container:redpandadata/redpanda:v24.2.4", "container"),
        ("127.0.0.1:9092", "hostport"),
        ("[::1]:9092", "hostport"),
    ],
)
def test_resolve_picks_the_kind(bundled_kinds, spec, module):
    target = resolve(spec, bundled_kinds)
    assert type(target).__module__ == f"conformance.targets.{module}"
    assert target.spec == spec


def test_resolve_tries_the_catch_all_last_whatever_the_order(bundled_kinds):
    assert type(resolve("rdkafka-mock:2", reversed(bundled_kinds))) is RdkafkaMockTarget


def test_resolve_names_the_known_kinds_when_nothing_matches(bundled_kinds):
    with pytest.raises(ValueError) as raised:
        resolve("nonsense", bundled_kinds)
    message = str(raised.value)
    assert "'nonsense'" in message
    for name in ("kafka", "tansu", "rdkafka-mock", "container", "host:port"):
        assert name in message
