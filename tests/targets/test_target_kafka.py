"""The ``kafka`` target: Apache Kafka as a local KRaft process, started from Maven Central jars.

Tests marked ``kafka`` start real brokers (about 5 s each once the jars are cached; the first run
downloads them). They skip with the reason when this machine has no java or no way to get the jars.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conformance.targets.kafka.broker import (
    DEFAULT_KAFKA_VERSION,
    BrokerStartFailed,
    KafkaTarget,
    kafka_target_kind,
    random_cluster_id,
    version_in_spec,
)
from conformance.targets.kafka.config import DEFAULT_PROFILE, read_properties


def skip_unless_kafka_can_run() -> None:
    reason = kafka_target_kind().availability()
    if reason:
        pytest.skip(reason)


def create_topic(target: KafkaTarget, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(timeout=30)


def partition_counts(target: KafkaTarget) -> dict[str, int]:
    metadata = AdminClient({"bootstrap.servers": target.bootstrap}).list_topics(timeout=10)
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()}


def high_watermark(target: KafkaTarget, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "conformance-watermark"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def broker():
    skip_unless_kafka_can_run()
    target = KafkaTarget("kafka")
    target.start()
    yield target
    target.stop()


# ---- spec strings and the pieces start-up is made of (no broker) --------------------------------


@pytest.mark.parametrize(
    "spec, version",
    [("kafka", None), ("kafka:3.9.1", "3.9.1"), ("kafka:4.4.0", "4.4.0"), ("kafka:4.1.0-rc2", "4.1.0-rc2")],
)
def test_spec_names_an_optional_version(spec, version):
    assert version_in_spec(spec) == version
    assert kafka_target_kind().matches(spec)


@pytest.mark.parametrize("spec", ["kafka:", "kafka:latest", "kafka:4", "kafka-4.4.0"])
def test_malformed_specs_are_refused(spec):
    with pytest.raises(ValueError, match="kafka target spec"):
        version_in_spec(spec)


@pytest.mark.parametrize("spec, features", [
    ("kafka,transaction.version=1", {"transaction.version": 1}),
    ("kafka:3.9.1,transaction.version=0", {"transaction.version": 0}),
    ("kafka:4.4.0,transaction.version=2,group.version=1", {"transaction.version": 2, "group.version": 1}),
])
def test_feature_options_make_one_node_formatted_at_that_level(spec, features):
    assert kafka_target_kind().matches(spec)
    target = KafkaTarget(spec)
    assert target.features == features
    assert target.version == (version_in_spec(spec.split(",")[0]) or DEFAULT_KAFKA_VERSION)


@pytest.mark.parametrize("spec", ["kafka,transaction.version=two", "kafka,transaction.version", "kafka,nodes=1"])
def test_options_one_node_does_not_take_are_refused(spec):
    with pytest.raises(ValueError):
        KafkaTarget(spec)


def test_the_default_version_is_pinned(monkeypatch):
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    assert KafkaTarget("kafka").version == DEFAULT_KAFKA_VERSION == "4.4.0"
    assert KafkaTarget("kafka:3.9.1").version == "3.9.1"


def test_cluster_ids_are_22_characters_of_base64url_the_storage_tool_accepts():
    for _ in range(200):
        cluster_id = random_cluster_id()
        assert len(cluster_id) == 22 and not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_fast_timeouts_profile_shortens_transaction_housekeeping():
    profile = read_properties(DEFAULT_PROFILE)
    assert int(profile["transaction.abort.timed.out.transaction.cleanup.interval.ms"]) <= 1000
    assert int(profile["transactional.id.expiration.ms"]) <= 10_000
    assert profile["transaction.max.timeout.ms"] == "900000"


def test_read_properties_skips_comments_and_splits_on_the_first_separator(tmp_path):
    path = tmp_path / "profile.properties"
    path.write_text("# comment\n! also a comment\n\nlisteners = PLAINTEXT://127.0.0.1:9092\nkey: value=x\n")
    assert read_properties(path) == {"listeners": "PLAINTEXT://127.0.0.1:9092", "key": "value=x"}


# ---- a real broker, default version ------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.broker
def test_broker_accepts_tcp_connections(broker):
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5):
        pass
    assert broker.version == DEFAULT_KAFKA_VERSION


@pytest.mark.kafka
@pytest.mark.broker
def test_admin_client_creates_and_lists_a_topic_with_three_partitions(broker):
    create_topic(broker, "three-partitions", partitions=3)
    assert partition_counts(broker)["three-partitions"] == 3


@pytest.mark.kafka
@pytest.mark.broker
def test_broker_knows_every_setting_of_the_profile(broker):
    # Kafka prints its known settings with their values at start-up; an unknown name never appears.
    logs = broker.logs()
    for name, value in read_properties(DEFAULT_PROFILE).items():
        assert f"\t{name} = {value}" in logs


@pytest.mark.kafka
@pytest.mark.broker
def test_topics_and_records_survive_a_restart_on_the_same_port(broker):
    topic = f"survives-restart-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic, partitions=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, b"kept", partition=0)
    assert producer.flush(10) == 0
    bootstrap, old_pid = broker.bootstrap, broker.pid

    broker.restart()

    assert broker.bootstrap == bootstrap and broker.pid != old_pid
    assert not process_exists(old_pid)
    assert partition_counts(broker)[topic] == 3
    assert high_watermark(broker, topic) == 1
    assert broker.logs().count("Kafka Server started") == 2


# ---- the last release before KIP-890's protocol changes ----------------------------------------


@pytest.mark.kafka
@pytest.mark.broker
def test_kafka_3_9_starts_creates_a_topic_and_stops_without_leftovers():
    skip_unless_kafka_can_run()
    target = KafkaTarget("kafka:3.9.1")
    target.start()
    try:
        create_topic(target, "three-partitions", partitions=3)
        assert partition_counts(target)["three-partitions"] == 3
        pid, directory = target.pid, Path(target.info().extra["directory"])
    finally:
        target.stop()
    assert not process_exists(pid)
    assert not directory.exists() or os.environ.get("CONFORMANCE_KEEP_BROKER_DIR")
    assert "Kafka version: 3.9.1" in target.logs()


@pytest.mark.kafka
@pytest.mark.broker
def test_a_broker_that_cannot_start_says_why_and_leaves_nothing_behind(tmp_path, monkeypatch):
    skip_unless_kafka_can_run()
    monkeypatch.setenv("CONFORMANCE_BROKER_DIR", str(tmp_path))
    target = KafkaTarget("kafka", overrides={"num.network.threads": "none"})
    with pytest.raises(BrokerStartFailed, match="Invalid value none for configuration num.network.threads"):
        target.start()
    assert target.pid is None and list(tmp_path.iterdir()) == []


def test_brokers_keep_their_folders_in_memory_where_there_is_room(monkeypatch, tmp_path):
    from conformance.targets.kafka import broker as kafka

    monkeypatch.setenv("CONFORMANCE_BROKER_DIR", str(tmp_path))
    assert kafka.brokers_folder() == str(tmp_path)  # the user's choice first
    monkeypatch.delenv("CONFORMANCE_BROKER_DIR")
    roomy_tmpfs = Path("/proc/mounts").exists() and any(
        line.split()[1:3] == ["/dev/shm", "tmpfs"] for line in Path("/proc/mounts").read_text().splitlines())
    if roomy_tmpfs and shutil.disk_usage("/dev/shm").free >= kafka.MEMORY_FOLDER_MIN_FREE:
        assert kafka.brokers_folder() == "/dev/shm"
    monkeypatch.setattr(kafka, "MEMORY_FOLDER_MIN_FREE", 1 << 60)  # a container's small /dev/shm
    assert kafka.brokers_folder() is None  # the temporary folder
    monkeypatch.setattr(kafka, "MEMORY_FOLDER", str(tmp_path))  # not a tmpfs mount
    monkeypatch.setattr(kafka, "MEMORY_FOLDER_MIN_FREE", 0)
    assert kafka.brokers_folder() is None


@pytest.mark.parametrize("keep", [False, True])
def test_stop_ends_a_broker_at_once_unless_its_folder_is_kept(tmp_path, monkeypatch, keep):
    """Its data goes with it, so nothing waits for a clean shutdown; a kept folder gets one (SIGTERM)."""
    import signal
    import subprocess
    import sys

    monkeypatch.setattr("conformance.targets.kafka.broker.STOP_GRACE_SECONDS", 30.0)
    if keep:
        monkeypatch.setenv("CONFORMANCE_KEEP_BROKER_DIR", "1")
    else:
        monkeypatch.delenv("CONFORMANCE_KEEP_BROKER_DIR", raising=False)
    # a stand-in broker that ends on SIGTERM with status 3, and says when it is ready to hear it
    script = "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: sys.exit(3)); print(1, flush=True); time.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert process.stdout.readline().strip() == b"1"
    target = KafkaTarget("kafka")
    target._process, target._directory = process, tmp_path / "broker"
    target._directory.mkdir()
    target.stop()
    assert process.returncode == (3 if keep else -signal.SIGKILL)
    assert target._directory is None and (tmp_path / "broker").exists() == keep
    process.stdout.close()


def test_known_issues_are_read_from_the_whole_broker_log_not_its_tail(tmp_path):
    target = KafkaTarget("kafka")
    assert target.known_issues() == []  # not started: no log
    target._directory = tmp_path
    line = ("[2026-11-27 08:50:39,123] INFO [Transaction Marker Channel Manager 1]: Couldn't find leader endpoint for "
            "partitions Set(t-0) while trying to send transaction markers for id, these partitions are likely deleted "
            "already and hence can be skipped (kafka.coordinator.transaction.TransactionMarkerChannelManager)\n")
    (tmp_path / "broker.log").write_text(line + "INFO filler\n" * 200_000)  # far more than the tail logs() keeps
    assert [issue["issue"] for issue in target.known_issues()] == ["KAFKA-20734"]
    assert "Couldn't find leader endpoint" not in (target.logs() or "")


def test_how_the_process_ended_is_waited_for_a_moment_when_asked():
    """A crashed broker's connections close a moment before its process can be reaped: the runner asks
    with a wait so that the message says how it ended."""
    import subprocess

    target = KafkaTarget("kafka")
    target._process = subprocess.Popen(["sh", "-c", "sleep 0.5; kill -ABRT $$"])  # noqa: SLF001
    try:
        assert target.ended() is None  # still running, and not waited for
        assert target.ended(wait=10) == "Kafka's process ended on SIGABRT"
    finally:
        target._process.kill()  # noqa: SLF001
        target._process.wait()  # noqa: SLF001


@pytest.mark.parametrize("was_ready_once, folder_kept", [(False, False), (True, True)])
def test_a_broker_that_does_not_come_back_keeps_its_data_a_first_start_does_not(tmp_path, was_ready_once, folder_kept):
    """A cluster node restarted under load that misses its deadline keeps its folder, so heal() can launch it
    again before the next case (a removed folder lost every later cluster item's verdict); a broker that never
    started leaves nothing behind."""
    target = KafkaTarget("kafka")
    target._directory = tmp_path / "node"
    (target._directory / "data").mkdir(parents=True)
    (target._directory / "broker.log").write_text("starting\n")
    target.startup_seconds = 4.2 if was_ready_once else None
    with pytest.raises(BrokerStartFailed, match="was not ready; last lines of its log:\nstarting"):
        target._fail("was not ready")
    assert (tmp_path / "node" / "data").is_dir() is folder_kept
    assert (target._directory is not None) is folder_kept
    target.stop()


def test_a_broker_that_dies_starting_names_this_launchs_first_error_before_its_shutdown_lines(tmp_path):
    """A broker that dies logs dozens of shutdown lines after the cause (a CI run showed only "... 18 more" and
    the shutdown), so the reason leads with the first ERROR of this launch and the exception under it."""
    target = KafkaTarget("kafka")
    target._directory = tmp_path / "node"
    target._directory.mkdir()
    (target._directory / "broker.log").write_text(
        "--- conformance: starting Kafka 4.4.0 at Sun Nov 29 06:00:00 2026 ---\n"
        "[2026-11-29 06:00:01,000] ERROR an earlier launch's trouble (kafka.Old)\n"
        "--- conformance: starting Kafka 4.4.0 at Sun Nov 29 06:01:00 2026 ---\n"
        "[2026-11-29 06:01:01,000] INFO starting (kafka.server.KafkaRaftServer)\n"
        "[2026-11-29 06:01:02,000] ERROR Unable to start acceptor for CONTROLLER (kafka.network.DataPlaneAcceptor)\n"
        "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:42339: Address already in use.\n"
        "\tat kafka.network.Acceptor.openServerSocket(SocketServer.scala:1)\n"
        "[2026-11-29 06:01:02,100] ERROR Encountered fatal fault: caught exception (org.apache.kafka.Fault)\n"
        + "".join(f"[2026-11-29 06:01:03,000] INFO shutting down part {n} (kafka.server.ControllerServer)\n"
                  for n in range(80))
    )
    with pytest.raises(BrokerStartFailed) as failure:
        target._fail("Kafka 4.4.0 exited with status 1 while starting")
    first_line = str(failure.value).splitlines()[0]
    assert first_line == ("Kafka 4.4.0 exited with status 1 while starting: Unable to start acceptor for CONTROLLER "
                          "(kafka.network.DataPlaneAcceptor): org.apache.kafka.common.KafkaException: Socket server "
                          "failed to bind to 127.0.0.1:42339: Address already in use.; last lines of its log:")
    assert "earlier launch" not in str(failure.value)
