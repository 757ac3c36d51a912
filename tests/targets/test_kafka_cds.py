"""The class archive of the Kafka JVMs (conformance.targets.kafka.cds): one per JVM build and set of jars,
adopted only from a JVM that ended whole, mapped by every JVM after it."""

from __future__ import annotations

import os

import pytest

from conformance.targets.kafka import cds as kafka_cds


@pytest.fixture
def setting(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_CACHE", str(tmp_path / "cache"))
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    (tmp_path / "jdk" / "lib").mkdir()
    (tmp_path / "jdk" / "lib" / "modules").write_bytes(b"modules")
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka.jar").write_bytes(b"classes")
    return str(java), libs


def test_the_archive_is_named_for_the_jvm_build_and_the_jars(setting, tmp_path):
    java, libs = setting
    first = kafka_cds.archive_path(java, libs)
    assert first.parent == tmp_path / "cache" / "cds" and first == kafka_cds.archive_path(java, libs)
    (libs / "kafka.jar").write_bytes(b"other classes")
    assert kafka_cds.archive_path(java, libs) != first  # another Kafka build
    (tmp_path / "jdk" / "lib" / "modules").write_bytes(b"another jdk")
    assert len({first, kafka_cds.archive_path(java, libs)}) == 2


def test_a_broker_writes_the_archive_until_one_exists_then_maps_it(setting):
    archive = kafka_cds.archive_path(*setting)
    flags, pending = kafka_cds.writing_flags(archive)
    assert flags == [f"-XX:ArchiveClassesAtExit={pending}"] and pending.parent == archive.parent
    assert kafka_cds.reading_flags(archive) == []  # nothing to map yet: the format tool loads from jars
    pending.write_bytes(b"archive")
    kafka_cds.adopt(pending, archive, 143)  # stopped by SIGTERM after its shutdown hooks
    assert archive.read_bytes() == b"archive" and not pending.exists()
    assert kafka_cds.writing_flags(archive) == ([f"-XX:SharedArchiveFile={archive}"], None)
    assert kafka_cds.reading_flags(archive) == [f"-XX:SharedArchiveFile={archive}"]


@pytest.mark.parametrize("returncode", [-9, 1, None])
def test_an_archive_from_a_jvm_that_did_not_end_whole_is_dropped(setting, returncode):
    archive = kafka_cds.archive_path(*setting)
    _, pending = kafka_cds.writing_flags(archive)
    pending.write_bytes(b"half an archive")
    kafka_cds.adopt(pending, archive, returncode)
    assert not archive.exists() and not pending.exists()


def test_two_brokers_of_one_process_write_files_of_their_own(setting):
    archive = kafka_cds.archive_path(*setting)
    (_, first), (_, second) = kafka_cds.writing_flags(archive), kafka_cds.writing_flags(archive)
    assert first != second and str(os.getpid()) in first.name


def test_an_unwritable_cache_means_no_archive_rather_than_an_error(setting, tmp_path, monkeypatch):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("CONFORMANCE_CACHE", str(blocker))
    archive = kafka_cds.archive_path(*setting)
    assert kafka_cds.writing_flags(archive) == ([], None)
