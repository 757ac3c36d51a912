"""How reports name one result item and how a person reruns exactly that item.

Shared by the gate, the JUnit writer and the certification page so all three print the same
names and the same reproduction command. Every function takes a :class:`ResultRecord` as the store reads it
(:func:`conformance.results.store.read_records`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from .. import ledger, resources
from ..results.ids import case_id as _case_id
from ..results.record import ResultRecord
from ..suite.model import LONG_TAG

R = TypeVar("R", bound=ResultRecord)
# The exactly-once tier's checks (conformance semantic) carry this tag; those whose processors ran in a KIP-848
# consumer group have a suite id ending so (the tier's SUITE_BY_GROUP_PROTOCOL, which reports do not import).
SEMANTIC_TAG, SEMANTIC_CONSUMER_GROUP = "semantic", ".consumer-group"


def case_id(record: ResultRecord) -> str:
    """``suite::case``: the record's case at every version."""
    return _case_id(record.suite, record.case)


def label(record: ResultRecord) -> str:
    """The record's item id, ``suite::case@vN`` (:mod:`conformance.results.ids`)."""
    return record.item_id


def key(record: ResultRecord) -> tuple[str, str, str, int | None]:
    """One item of one target: what two runs are compared on."""
    return record.target, record.suite, record.case, record.api_version


def latest(records: Iterable[R]) -> dict[tuple[str, str, str, int | None], R]:
    """The last record of each item: files are appended in order, so a rerun replaces what it reran."""
    found: dict[tuple[str, str, str, int | None], R] = {}
    for record in records:
        found[key(record)] = record
    return found


def reproduce(record: ResultRecord) -> str:
    """One shell line that runs exactly this item again, in any folder: the item by its id (``--item``), read
    from the suites a run reads there (``suites/`` of the folder, else the bundled ones), so it needs neither the
    checkout the item ran from nor its paths.
    """
    target = shlex.quote(str(record.target))
    if record.suite == "explore":  # a departure exploration found: the case it wrote reproduces it
        artifacts = record.artifacts or {}
        if artifacts.get("case"):
            return f"conformance run --target {target} {shlex.quote(_relative(artifacts['case']))}"
        if artifacts.get("history"):
            return f"no suite form: the explored history is in {_relative(artifacts['history'])}"
    if SEMANTIC_TAG in (record.tags or ()):  # the exactly-once checks judge one run's history: run them all again
        consumer = str(record.suite).endswith(SEMANTIC_CONSUMER_GROUP)
        return f"conformance semantic --target {target}{' --group-protocol consumer' if consumer else ''}"
    options = (" --long" if LONG_TAG in (record.tags or ()) else "") + (" --drafts" if record.draft else "")
    suite = _unbundled(record.path)
    return (f"conformance run --target {target}{options} --item {shlex.quote(record.item_id)}"
            + (f" {shlex.quote(_relative(suite))}" if suite else ""))


def _unbundled(path: str | None) -> str:
    """The suite file of an item when the harness does not ship it (a vendor's own suite), "" when it does: a run
    reads the bundled suites by itself, wherever it is started, so their items need no path."""
    if not path:
        return ""
    parts = Path(path).parts
    if "suites" in parts:  # .../suites/kip98/transactions.yaml: is kip98/transactions.yaml among the bundled ones?
        inside = parts[len(parts) - parts[::-1].index("suites"):]
        if inside and (resources.suites().joinpath(*inside)).is_file():
            return ""
    return path


def rerun_argument(record: ResultRecord) -> str:
    """The node id made absolute, so reruns collect the item from any working directory."""
    nodeid, path = record.nodeid or "", record.path
    if "::" in nodeid and path:
        return f"{path}::{nodeid.split('::', 1)[1]}"
    return nodeid


def known_bug(record: ResultRecord) -> str | None:
    """The known-bugs ledger's Apache Kafka bug behind the record's departure (``KAFKA-14402, fixed in 3.6.0``). The
    ledger sits beside the results record, not above it (it cannot import it), so it reads the fields as a mapping."""
    return ledger.known_bug(vars(record))


def _relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path
