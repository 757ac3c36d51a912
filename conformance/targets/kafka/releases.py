"""Apache Kafka's releases since KRaft carried transactions (3.3.0), and the release matrix a maintainer runs.

``kafka:VERSION`` provisions any of :data:`RELEASES` (jars from Maven Central, :mod:`.kafka_jars`). The
*matrix* (``conformance releases``) is the latest patch of every minor line, plus the releases the
known-bugs ledger (:mod:`conformance.ledger`) checks its entries on: the last affected one and the fixed
one of each entry with cases. Each release runs on its own broker, one after another, so the matrix
needs one broker's memory and CPU at a time.

What differs between releases is handled where the broker's settings are written
(:mod:`.kafka_config`): the share-coordinator topic settings are written from 4.0 on only, and a profile
setting a release does not know (KIP-854's producer-id expiry before 3.4) is one Kafka warns about at
start-up and ignores. A case that needs a topic or broker setting a release lacks is the runner's to skip.
"""

from __future__ import annotations

from ... import ledger
from ...results.record import Outcome, ResultRecord
from ..base import TargetUnavailable
from .jars import ensure_kafka_jars

# Every Apache Kafka release on Maven Central from 3.3.0 to 4.4.0 (org.apache.kafka:kafka_2.13's versions).
RELEASES = (
    "3.3.0", "3.3.1", "3.3.2", "3.4.0", "3.4.1", "3.5.0", "3.5.1", "3.5.2", "3.6.0", "3.6.1", "3.6.2",
    "3.7.0", "3.7.1", "3.7.2", "3.8.0", "3.8.1", "3.9.0", "3.9.1", "3.9.2", "4.0.0", "4.0.1", "4.0.2",
    "4.1.0", "4.1.1", "4.1.2", "4.2.0", "4.2.1", "4.2.2", "4.3.0", "4.3.1", "4.4.0",
)  # fmt: skip
FIRST_RELEASE = "3.3.0"  # KRaft production-ready, transactions included


def latest_patches(releases=RELEASES) -> list[str]:
    """The newest release of each minor line (3.3.2, 3.4.1, ...), oldest line first."""
    newest: dict[tuple[int, ...], str] = {}
    for release in sorted(releases, key=ledger.release_key):
        newest[ledger.release_key(release)[:2]] = release
    return list(newest.values())


def matrix(entries=None) -> dict[str, list[str]]:
    """Release → why it is in the matrix: ``latest 3.5`` and/or ``KAFKA-14402 affected``/``fixed``."""
    reasons: dict[str, list[str]] = {}
    for release in latest_patches():
        reasons.setdefault(release, []).append(f"latest {'.'.join(release.split('.')[:2])}")
    for bug in ledger.bugs() if entries is None else entries:
        verify = bug.verify or {}
        kind = verify.get("target", "kafka")
        behind = {"kafka": "", "proxy+kafka": " (behind the fault proxy)"}.get(kind, f" (as {kind})")
        for role in bug.verify_roles():
            reasons.setdefault(verify[role], []).append(f"{bug.key} {role}{behind}")
    return dict(sorted(reasons.items(), key=lambda item: ledger.release_key(item[0])))


def parse_releases(text: str) -> list[str]:
    """``3.5.2,4.0.0`` or ``matrix`` → releases; ValueError names one that is not a release this knows."""
    if text.strip() == "matrix":
        return list(matrix())
    releases = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [release for release in releases if release not in RELEASES]
    if unknown:
        raise ValueError(f"not an Apache Kafka release from {FIRST_RELEASE} to {RELEASES[-1]}: {', '.join(unknown)}")
    return releases


def fetch(release: str) -> str | None:
    """Fetch the release's jars (once; cached); None when they are there, else why not, in one line."""
    try:
        ensure_kafka_jars(release)
    except TargetUnavailable as problem:
        return str(problem).splitlines()[0]
    return None


def start_failure(message: str) -> str:
    """One line from a target's start diagnosis (:func:`conformance.targets.pool.diagnosis`): the error,
    and the broker log's last ERROR or exception line where the log is part of it."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    if not lines:
        return "no reason given"
    first = lines[0].removesuffix("; last lines of its log:").removesuffix(":")
    telling = [line for line in lines[1:] if " ERROR " in line or " FATAL " in line or "Exception" in line]
    return f"{first} ({telling[-1][:300]})" if telling else first


def not_started(records: list[ResultRecord], release: str) -> str | None:
    """Why ``kafka:RELEASE`` did not run, in one line, when its records say its broker never started:
    every item an error (or skipped) with the target's start failure as its message; else None."""
    target = f"kafka:{release}"
    mine = [record for record in records if record.target == target]
    errors = [record for record in mine if record.outcome == Outcome.ERROR]
    if not errors or any(record.outcome not in (Outcome.ERROR, Outcome.SKIPPED) for record in mine):
        return None
    message = str(errors[0].message or "")
    if f"target {target!r}" not in message.splitlines()[0]:
        return None
    return start_failure(message)
