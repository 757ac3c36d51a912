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

from .. import ledger
from ..results.ids import case_id as _case_id
from ..results.record import ResultRecord
from ..suite.model import LONG_TAG

R = TypeVar("R", bound=ResultRecord)


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
    """One shell line that collects exactly this item, run from the checkout holding the suites.

    The pytest node id selects one item; ``conformance run ... -- -k`` would also need the
    version, and ``-k`` matches substrings (``v1`` selects ``v10`` too), so the node id is used.
    """
    target = shlex.quote(str(record.target))
    if record.suite == "explore":  # a departure exploration found: the case it wrote reproduces it
        artifacts = record.artifacts or {}
        if artifacts.get("case"):
            return f"conformance run --target {target} {shlex.quote(_relative(artifacts['case']))}"
        if artifacts.get("history"):
            return f"no suite form: the explored history is in {_relative(artifacts['history'])}"
    long = LONG_TAG in (record.tags or ())  # a case tagged long runs only when asked for
    if not record.nodeid:  # a record without a node id (not written by the plugin): the case at every version
        return (f"conformance run --target {target}{' --long' if long else ''} "
                f"{shlex.quote(_relative(record.path or 'suites'))} -- -k {shlex.quote(str(record.case))}")
    return f"python -m pytest --target {target}{' --conformance-long' if long else ''} {shlex.quote(record.nodeid)}"


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
