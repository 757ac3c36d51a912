"""A failed data directory on a node of a local Kafka cluster (the ``fail_log_dir`` fault), and its repair.

The cluster's nodes keep their data in two directories (JBOD, KIP-858) and their metadata log in a third, so
one data directory can fail while the node stays up, as a disk does in production. The fault makes the
directory that holds a partition unusable the way a dead disk is: the directory is moved aside and a plain
file takes its name, so Kafka's next write there (the recovery-point checkpoint, every second on these nodes,
or an append that rolls a segment) fails with an I/O error, and the node takes the directory offline and tells
the controller. Requests for the partitions it held are then answered from a failed directory. Repair stops the
node, puts the directory back and starts it again: Kafka brings a failed directory back only at start-up.
"""

from __future__ import annotations

from pathlib import Path

FAILED_SUFFIX = ".failed"


def data_directories(data: Path) -> list[Path]:
    """A node's data directories (``dir-N`` under its ``data``; see ``base_settings(log_dirs=)``)."""
    return sorted(data.glob("dir-[0-9]*"))


def directory_holding(data: Path, topic: str, partition: int) -> Path:
    """The data directory that holds ``topic-partition`` on this node; ValueError when none does."""
    for directory in data_directories(data):
        if (directory / f"{topic}-{partition}").is_dir():
            return directory
    raise ValueError(f"fail_log_dir: no data directory under {data} holds {topic}-{partition} "
                     f"(is the node a replica of it, with more than one data directory?)")


def fail(directory: Path) -> None:
    """The directory is moved aside and a file takes its place: every later write under it fails."""
    directory.rename(directory.with_name(directory.name + FAILED_SUFFIX))
    directory.write_text("a failed disk (kafka-conformance fail_log_dir); the node is repaired after the case\n")


def failed(data: Path) -> list[Path]:
    return sorted(data.glob(f"dir-*{FAILED_SUFFIX}"))


def repair(data: Path) -> None:
    """Puts every failed directory back (the node must be stopped: Kafka reads them again only when it starts)."""
    for moved in failed(data):
        original = moved.with_name(moved.name[: -len(FAILED_SUFFIX)])
        if original.is_file():
            original.unlink()
        moved.rename(original)


class NodeDisks:
    """The data directories of one node, as the disk faults (:class:`conformance.targets.nodes.Disks`) use them."""

    def __init__(self, data: Path):
        self.data = data

    def fail(self, topic: str, partition: int) -> None:
        """Fail the directory holding ``topic-partition`` as a dead disk does."""
        fail(directory_holding(self.data, topic, partition))

    def failed(self) -> bool:
        return bool(failed(self.data))

    def repair(self) -> None:
        repair(self.data)
