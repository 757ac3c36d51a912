"""A broker's formatted KRaft storage: from Kafka's storage tool, or a copy of what the tool wrote before.

The tool is a JVM of its own (about 1 s of CPU and 0.5-0.7 s before every provisioned broker, a few dozen of them
in a test run). What it writes depends on the release, the feature levels and the settings, never on the node:
the bootstrap records (``bootstrap.checkpoint``, or the ``0-0`` checkpoint of ``__cluster_metadata-0`` from
Kafka 3.9 on) are the same bytes but for their timestamps and checksums; only ``meta.properties`` names the
cluster, the node and (from 3.7 on) each directory. So the first format of a kind is kept, in the harness's
cache, under a digest of the release, the arguments and the settings less the ports, the node and the folder; a
later broker of that kind gets a copy, with ``meta.properties`` written anew with its own ids, as the tool would.

A secured listener's format writes SCRAM credentials: it always runs the tool and nothing of it is kept.
``CONFORMANCE_FORMAT_CACHE=off`` runs the tool every time.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
import uuid
from pathlib import Path

from ...defaults import cache_root

META = "meta.properties"
# Settings the tool's output does not depend on: the node's identity, its ports and its folder (normalized away).
NOT_WRITTEN = ("node.id", "listeners", "advertised.listeners", "controller.quorum.voters")


def enabled() -> bool:
    """Whether formats are kept and copied: unless ``CONFORMANCE_FORMAT_CACHE=off`` (as the class archive's switch)."""
    return os.environ.get("CONFORMANCE_FORMAT_CACHE", "on").lower() != "off"


def kind_of(version: str, libs: Path, arguments: list[str], settings_text: str, directory: Path) -> str:
    """The digest naming what a format writes: release, jars, tool arguments (the cluster id left out) and
    settings, with this broker's folder, node and ports left out."""
    digest = hashlib.sha256(f"{version}\n{Path(libs).resolve()}\n".encode())
    for argument in arguments:
        digest.update(f"{argument}\n".encode())
    for line in sorted(settings_text.replace(str(directory), "{folder}").splitlines()):
        if line and not line.startswith("#") and line.split("=", 1)[0] not in NOT_WRITTEN:
            digest.update(f"{line}\n".encode())
    return digest.hexdigest()[:32]


def kept(kind: str) -> Path:
    return cache_root() / "formats" / kind


def keep(kind: str, directory: Path, data: Path) -> None:
    """Keeps what the tool wrote under ``data``, each ``meta.properties`` as a template whose ids each copy writes
    anew. Never fails the broker: a cache that cannot be written is only not written."""
    target = kept(kind)
    if target.exists():
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=target.parent))
        for path in sorted(data.rglob("*")):
            if not path.is_file():
                continue
            relative = path.relative_to(directory)
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            if path.name == META:
                template = _template(path.read_text())
                if template is None:  # a key this module does not know how to write: the tool every time
                    shutil.rmtree(staging, ignore_errors=True)
                    return
                (staging / relative).write_text(template)
            else:
                shutil.copyfile(path, staging / relative)
        try:
            staging.rename(target)
        except OSError:  # another process kept the same kind first
            shutil.rmtree(staging, ignore_errors=True)
    except OSError:
        pass


def copy(kind: str, directory: Path, cluster_id: str, node_id: int) -> bool:
    """Lays down a kept format of ``kind`` in ``directory`` for this cluster and node; False where none is kept."""
    source = kept(kind)
    if not source.is_dir():
        return False
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
        destination = directory / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        if path.name == META:
            own = {"node.id": str(node_id), "cluster.id": cluster_id}
            lines = [line if "=" in line else f"{line}={own.get(line) or random_id()}"
                     for line in path.read_text().splitlines()]
            destination.write_text("#\n" + "\n".join(lines) + "\n")
        else:
            shutil.copyfile(path, destination)
    return True


def _template(meta: str) -> str | None:
    """``meta.properties`` with the node's, the cluster's and the directory's ids as bare keys (written anew for
    each copy), the rest as the tool wrote it; None if it holds a key not known here."""
    lines = []
    for line in meta.splitlines():
        if not line or line.startswith("#"):
            continue
        key = line.split("=", 1)[0]
        if key in ("node.id", "cluster.id", "directory.id"):
            lines.append(key)
        elif key == "version":
            lines.append(line)
        else:
            return None
    return "\n".join(lines) + "\n"


def random_id() -> str:
    """A random UUID as Kafka writes one (a cluster's or a directory's): 22 characters of unpadded base64url,
    never starting with a dash (the storage tool would read it as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
