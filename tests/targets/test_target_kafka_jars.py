"""Where the kafka target's jars come from: KAFKA_HOME, the cache, or one locked Maven download.

Maven itself is not run here (tests marked ``kafka`` do that); its step is replaced by fakes.
"""

from __future__ import annotations

import threading
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from conformance.targets.kafka import jars as kafka_jars
from conformance.targets.base import TargetUnavailable
from conformance.targets.kafka.broker import KafkaTarget
from conformance.targets.kafka.jars import cached_libs, ensure_kafka_jars


def fake_libs(folder: Path, *jars: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for jar in jars:
        (folder / jar).write_bytes(b"")
    return folder


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("CONFORMANCE_CACHE", str(tmp_path / "cache"))


def test_kafka_home_libs_are_used_as_they_are(tmp_path, monkeypatch):
    libs = fake_libs(tmp_path / "kafka_2.13-3.9.1" / "libs", "kafka_2.13-3.9.1.jar", "kafka-clients-3.9.1.jar")
    monkeypatch.setenv("KAFKA_HOME", str(libs.parent))
    assert ensure_kafka_jars("3.9.1") == libs
    assert KafkaTarget("kafka").version == "3.9.1"  # an unpinned spec takes the distribution's version


def test_kafka_home_of_another_version_is_refused(tmp_path, monkeypatch):
    libs = fake_libs(tmp_path / "dist" / "libs", "kafka_2.13-3.9.1.jar")
    monkeypatch.setenv("KAFKA_HOME", str(libs.parent))
    with pytest.raises(TargetUnavailable, match="holds Kafka 3.9.1, not the requested 4.4.0"):
        ensure_kafka_jars("4.4.0")


def test_kafka_home_without_a_kafka_jar_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path))
    with pytest.raises(TargetUnavailable, match="no kafka_2.x jar"):
        ensure_kafka_jars("4.4.0")


def test_cached_jars_are_used_without_maven(monkeypatch):
    libs = fake_libs(cached_libs("4.4.0"), "kafka_2.13-4.4.0.jar")
    monkeypatch.setattr(kafka_jars, "_download", lambda *_: pytest.fail("downloaded although cached"))
    assert ensure_kafka_jars("4.4.0") == libs


def test_without_cache_or_maven_the_reason_says_what_to_do(monkeypatch):
    monkeypatch.setattr(kafka_jars.shutil, "which", lambda name: None)
    with pytest.raises(TargetUnavailable, match="mvn is not on PATH"):
        ensure_kafka_jars("4.4.0")


def test_concurrent_callers_download_once(monkeypatch):
    downloads = []

    def slow_copy(workdir, artifacts, output):
        downloads.append(artifacts[0][1])
        time.sleep(0.2)
        fake_libs(output, "kafka_2.13-4.4.0.jar", "log4j-core-2.25.5.jar", "slf4j-api-1.7.36.jar")

    monkeypatch.setattr(kafka_jars.shutil, "which", lambda name: "/usr/bin/mvn")
    monkeypatch.setattr(kafka_jars, "_copy_dependencies", slow_copy)
    results = []
    callers = [threading.Thread(target=lambda: results.append(ensure_kafka_jars("4.4.0"))) for _ in range(3)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert downloads == ["kafka_2.13", "log4j-slf4j-impl"]  # one broker pass, one logging pass
    assert results == [cached_libs("4.4.0")] * 3


def test_a_failed_download_leaves_no_libs_folder(monkeypatch):
    def failing_copy(workdir, artifacts, output):
        fake_libs(output, "kafka_2.13-4.4.0.jar")
        raise TargetUnavailable("network down")

    monkeypatch.setattr(kafka_jars.shutil, "which", lambda name: "/usr/bin/mvn")
    monkeypatch.setattr(kafka_jars, "_copy_dependencies", failing_copy)
    with pytest.raises(TargetUnavailable, match="network down"):
        ensure_kafka_jars("4.4.0")
    assert not cached_libs("4.4.0").exists()
    assert [path.name for path in cached_libs("4.4.0").parent.iterdir()] == []


@pytest.mark.parametrize(
    "resolved, binding",
    [
        (["log4j-core-2.25.5.jar", "slf4j-api-1.7.36.jar"], ["log4j-slf4j-impl:2.25.5"]),
        (["log4j-core-2.25.5.jar", "slf4j-api-2.0.17.jar"], ["log4j-slf4j2-impl:2.25.5"]),
        (["slf4j-api-1.7.36.jar"], ["reload4j:1.2.25", "slf4j-reload4j:1.7.36"]),
    ],
)
def test_the_logging_binding_fits_what_kafka_brought(tmp_path, resolved, binding):
    chosen = kafka_jars._logging_binding(fake_libs(tmp_path, *resolved))
    assert [f"{artifact}:{version}" for _, artifact, version, _ in chosen] == binding


def test_throwaway_pom_lists_the_artifacts_and_cuts_transitives_where_asked():
    pom = kafka_jars._throwaway_pom(
        [("org.apache.kafka", "kafka_2.13", "4.4.0", False), ("ch.qos.reload4j", "reload4j", "1.2.25", True)]
    )
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    dependencies = ElementTree.fromstring(pom).findall("m:dependencies/m:dependency", namespace)
    assert [d.findtext("m:artifactId", namespaces=namespace) for d in dependencies] == ["kafka_2.13", "reload4j"]
    assert [d.find("m:exclusions", namespace) is not None for d in dependencies] == [False, True]
    odd = kafka_jars._throwaway_pom([("org.apache.kafka", "kafka_2.13", "4.4.0</version><x>&", False)])
    assert ElementTree.fromstring(odd).findtext("m:dependencies/m:dependency/m:version", namespaces=namespace) == (
        "4.4.0</version><x>&")  # a version given on the command line is text in the pom, whatever it holds


def test_maven_compiles_with_c1_alone_and_a_users_options_come_after_to_win(monkeypatch):
    monkeypatch.delenv("MAVEN_OPTS", raising=False)
    assert kafka_jars.maven_environment()["MAVEN_OPTS"] == "-XX:TieredStopAtLevel=1"
    monkeypatch.setenv("MAVEN_OPTS", "-XX:TieredStopAtLevel=4 -Xmx1g")
    assert kafka_jars.maven_environment()["MAVEN_OPTS"] == "-XX:TieredStopAtLevel=1 -XX:TieredStopAtLevel=4 -Xmx1g"
