"""A broker's formatted storage: the storage tool's first format of a kind is kept, and a later broker of that kind
gets a copy with its own ids, as the tool would have written it (conformance/targets/kafka/storage.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.client.cluster import Cluster
from conformance.targets.kafka import storage
from conformance.targets.kafka.broker import KafkaTarget, kafka_target_kind

SETTINGS = "node.id={node}\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={folder}/data\nnum.partitions=1\n"


def kind(folder: Path, node: int = 1, port: int = 9092, extra: str = "", features=(), version: str = "4.4.0") -> str:
    text = SETTINGS.format(node=node, port=port, folder=folder) + extra
    return storage.kind_of(version, Path("/libs"), list(features), text, folder)


def test_a_kind_leaves_out_the_node_its_ports_and_its_folder_and_keeps_everything_else(tmp_path):
    first = kind(tmp_path / "a")
    assert first == kind(tmp_path / "b", node=2, port=9093)
    assert first != kind(tmp_path / "a", extra="unstable.feature.versions.enable=true\n")
    assert first != kind(tmp_path / "a", features=["transaction.version=1"])
    assert first != kind(tmp_path / "a", version="3.9.1")


def test_a_copy_has_the_nodes_and_clusters_ids_and_fresh_directory_ids(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "kept", lambda kind: tmp_path / "cache" / "formats" / kind)
    formatted = tmp_path / "formatted"
    for folder in ("dir-0", "dir-1"):
        (formatted / "data" / folder).mkdir(parents=True)
        (formatted / "data" / folder / "meta.properties").write_text(
            "#\n#a date\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\nversion=1\ncluster.id=BBBBBBBBBBBBBBBBBBBBBB\n")
    (formatted / "data" / "dir-0" / "bootstrap.checkpoint").write_bytes(b"\x00records")
    assert not storage.copy("k", tmp_path / "copy", "CCCCCCCCCCCCCCCCCCCCCC", 3)  # nothing kept yet
    storage.keep("k", formatted, formatted / "data")
    assert storage.copy("k", tmp_path / "copy", "CCCCCCCCCCCCCCCCCCCCCC", 3)
    assert (tmp_path / "copy" / "data" / "dir-0" / "bootstrap.checkpoint").read_bytes() == b"\x00records"
    metas = [dict(line.split("=", 1) for line in (tmp_path / "copy" / "data" / folder / "meta.properties")
                  .read_text().splitlines() if "=" in line) for folder in ("dir-0", "dir-1")]
    assert all(meta["node.id"] == "3" and meta["cluster.id"] == "CCCCCCCCCCCCCCCCCCCCCC" and meta["version"] == "1"
               for meta in metas)
    directories = {meta["directory.id"] for meta in metas}
    assert len(directories) == 2 and "AAAAAAAAAAAAAAAAAAAAAA" not in directories


def test_a_format_with_a_key_not_known_here_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "kept", lambda kind: tmp_path / "cache" / "formats" / kind)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.properties").write_text("node.id=1\nversion=2\ncluster.id=X\nsomething.new=1\n")
    storage.keep("k", tmp_path, tmp_path / "data")
    assert not storage.kept("k").exists()


@pytest.mark.kafka
@pytest.mark.parametrize("spec", ["kafka", "kafka:3.5.2"])
def test_a_copied_format_is_what_the_storage_tool_writes_and_the_broker_starts_on_it(spec, tmp_path, monkeypatch):
    """The first broker's storage from the tool, the second's a copy: the same files, the same bootstrap records
    (but for their timestamps and checksums), and Kafka starts on it."""
    reason = kafka_target_kind().availability()
    if reason:
        pytest.skip(reason)
    monkeypatch.setattr(storage, "kept", lambda kind: tmp_path / "cache" / "formats" / kind)
    tool, copied = KafkaTarget(spec), KafkaTarget(spec)
    try:
        tool.provision()
        assert len(list((tmp_path / "cache" / "formats").iterdir())) == 1
        copied.provision()
        files = [sorted(str(path.relative_to(target.data)) for path in target.data.rglob("*") if path.is_file())
                 for target in (tool, copied)]
        assert files[0] == files[1]
        for name in files[0]:
            written, laid = (tool.data / name).read_bytes(), (copied.data / name).read_bytes()
            if name.endswith("meta.properties"):
                keys = [{line.split("=")[0] for line in text.decode().splitlines() if "=" in line}
                        for text in (written, laid)]
                assert keys[0] == keys[1]
            else:
                assert len(written) == len(laid)
        copied.start()
        cluster = Cluster(copied.bootstrap)
        assert cluster.api_versions()
        cluster.close()
    finally:
        tool.stop()
        copied.stop()
