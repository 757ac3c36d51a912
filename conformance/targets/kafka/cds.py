"""Class data sharing for the Kafka JVMs the harness starts: each loads Kafka's classes from one archive.

Most of a broker's start on a small machine is the JVM reading, parsing and verifying Kafka's classes from
its jars. A dynamic AppCDS archive (JDK 13 and later, JEP 350) holds them ready to map: on 2 cores a
broker's start took 1.8 s of CPU instead of 2.6 s (1.6 s of wall time instead of 2.5 s), and the storage
format tool 0.4 s instead of 0.7 s. A run starts many JVMs: the broker, a twin for the serial items, one
per restart a case asks for, a format before each broker.

An archive fits one JVM build and one set of jars, so its name is a digest of both, in the harness's
cache. The first broker to stop on a machine writes it (``-XX:ArchiveClassesAtExit``, into a file of its
own, adopted in one rename once the JVM has exited by itself), and every JVM after it maps it. A JVM that
cannot use the archive says so in its log and loads its classes as before (``-Xshare:auto``): the archive
makes a start faster, never different. ``CONFORMANCE_CLASS_ARCHIVE=off`` starts every JVM without one.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path

from .jars import cache_root

# How a JVM ends after SIGTERM once its shutdown hooks ran (128 + 15), or by itself (0): the exits after
# which an archive it wrote at exit is complete. Killed (-9) mid-write, it is not.
WHOLE_EXITS = (0, 143)
_writers = itertools.count(1)  # several brokers of one process may each write one (a cluster's nodes)


def archive_path(java: str, libs: Path) -> Path:
    """Where the archive for this JVM build and these jars lives (it may not exist yet)."""
    java_home = Path(os.path.realpath(java)).parent.parent
    digest = hashlib.sha256()
    for path in (java_home / "lib" / "modules", Path(os.path.realpath(java))):
        stat = path.stat() if path.exists() else None
        digest.update(f"{path}:{stat and stat.st_size}:{stat and stat.st_mtime_ns}\n".encode())
    for jar in sorted(Path(libs).glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.resolve()}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return cache_root() / "cds" / f"kafka-{digest.hexdigest()[:16]}.jsa"


def enabled() -> bool:
    return os.environ.get("CONFORMANCE_CLASS_ARCHIVE", "on").lower() != "off"


def reading_flags(archive: Path) -> list[str]:
    """Flags for a JVM that maps the archive, where there is one."""
    return [f"-XX:SharedArchiveFile={archive}"] if enabled() and archive.is_file() else []


def writing_flags(archive: Path | None) -> tuple[list[str], Path | None]:
    """Flags for a broker: map the archive, or, where there is none yet, write one at exit into a file of its
    own (returned, for :func:`adopt`); no flags where the cache cannot be written (or no archive was named)."""
    if not enabled() or archive is None:
        return [], None
    if archive.is_file():
        return reading_flags(archive), None
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return [], None
    pending = archive.with_name(f"{archive.name}.{os.getpid()}-{next(_writers)}.tmp")
    return [f"-XX:ArchiveClassesAtExit={pending}"], pending


def adopt(pending: Path | None, archive: Path | None, returncode: int | None) -> None:
    """Make the archive a JVM wrote at exit the one every later JVM maps, if it ended whole; else drop it."""
    if pending is None or archive is None:
        return
    try:
        if returncode in WHOLE_EXITS and pending.is_file() and pending.stat().st_size > 0:
            os.replace(pending, archive)
        else:
            pending.unlink(missing_ok=True)
    except OSError:
        pass  # another run adopted its own at the same moment, or the cache went away: the next JVM writes one
