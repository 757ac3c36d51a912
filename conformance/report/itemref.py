"""How reports name one result item and how a person reruns exactly that item.

Shared by the gate, the JUnit writer and the certification page so all three print the same
names and the same reproduction command.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ..results.ids import case_id as _case_id
from ..results.ids import item_id_of
from ..suite.model import LONG_TAG


def case_id(record: dict) -> str:
    """``suite::case``: the record's case at every version."""
    return _case_id(record.get("suite"), record.get("case"))


def label(record: dict) -> str:
    """The record's item id, ``suite::case@vN`` (:mod:`conformance.results.ids`)."""
    return item_id_of(record)


def key(record: dict) -> tuple:
    """One item of one target: what two runs are compared on."""
    return record.get("target"), record.get("suite"), record.get("case"), record.get("api_version")


def latest(records: list[dict]) -> dict[tuple, dict]:
    """The last record of each item: files are appended in order, so a rerun replaces what it reran."""
    found: dict[tuple, dict] = {}
    for record in records:
        found[key(record)] = record
    return found


def reproduce(record: dict) -> str:
    """One shell line that collects exactly this item, run from the checkout holding the suites.

    The pytest node id selects one item; ``conformance run ... -- -k`` would also need the
    version, and ``-k`` matches substrings (``v1`` selects ``v10`` too), so the node id is used.
    """
    if record.get("suite") == "explore":  # a departure exploration found: the case it wrote reproduces it
        case = (record.get("artifacts") or {}).get("case")
        if case:
            return f"conformance run --target {shlex.quote(str(record.get('target')))} {shlex.quote(_relative(case))}"
        history = (record.get("artifacts") or {}).get("history")
        if history:
            return f"no suite form: the explored history is in {_relative(history)}"
    nodeid = record.get("nodeid")
    long = LONG_TAG in (record.get("tags") or [])  # a case tagged long runs only when asked for
    if not nodeid:  # a record without a node id (not written by the plugin): the case at every version
        return (f"conformance run --target {shlex.quote(str(record.get('target')))}{' --long' if long else ''} "
                f"{shlex.quote(_relative(record.get('path') or 'suites'))} -- -k {shlex.quote(str(record.get('case')))}")
    return (f"python -m pytest --target {shlex.quote(str(record.get('target')))}"
            f"{' --conformance-long' if long else ''} {shlex.quote(nodeid)}")


def rerun_argument(record: dict) -> str:
    """The node id made absolute, so reruns collect the item from any working directory."""
    nodeid, path = record.get("nodeid") or "", record.get("path")
    if "::" in nodeid and path:
        return f"{path}::{nodeid.split('::', 1)[1]}"
    return nodeid


def _relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path
