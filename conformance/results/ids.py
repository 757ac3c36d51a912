"""The one spelling of an item's id: ``suite::case@vN`` (``suite::case`` for a case without an API version).

Every report names an item this way: the gate, JUnit test names, the certification page and
certification.json, ``conformance show``, ``conformance flaky``, the findings and deviations documents,
wire diffs, the Spark tables (their ``item`` column) and the known-deviation pins in
fixtures/known-deviations/. The target is not part of the id, so the same item on two targets
compares by it; reports give the target beside it, in a field or column of its own.

The pytest node id (``FILE::case[TARGET-vN]``) is pytest's address of an item, kept in the record's
``nodeid``: it is what reruns one item, not a name reports use.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

SEPARATOR = "::"
VERSION_MARK = "@v"


def case_id(suite: object, case: object) -> str:
    """``suite::case``: a case at every version."""
    return f"{suite}{SEPARATOR}{case}"


def item_id(suite: object, case: object, version: int | None) -> str:
    """``suite::case@vN``, ``suite::case`` when the case has no API version."""
    return case_id(suite, case) + ("" if version is None else f"{VERSION_MARK}{version}")


def item_id_of(line: Mapping[str, Any]) -> str:
    """The id of the item a results line (or any mapping with its keys) records."""
    return item_id(line.get("suite"), line.get("case"), line.get("api_version"))


def named_target(target: str, version: str | None, name: str | None) -> str | None:
    """How reports show a broker the user named (``acme-streams:2.1@127.0.0.1:19092``, the record's ``target_name``):
    ``acme-streams 2.1 (127.0.0.1:19092)``, the product first and the address beside it as evidence (with the
    wrappers of the spec, ``proxy+`` say); None for a target nobody named, which reports show by its spec."""
    if not name:
        return None
    address = re.sub(r"[^+@]*@", "", target)  # proxy+acme:2.1@HOST:PORT -> proxy+HOST:PORT
    return f"{name}{f' {version}' if version else ''} ({address})"
