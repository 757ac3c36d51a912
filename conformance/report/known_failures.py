"""Known failures and known flaky items: the YAML file a CI gate honours.

```yaml
target: tansu                 # the entries' target unless an entry names its own (absent: any target)
known_failures:
  - case: kip98.coordinator::find-coordinator-invalid-key-type
    versions: "1-6"           # "N", "N+", "N-M" or a list; absent: every version
    reason: Tansu answers NONE to an unknown coordinator key type
    link: https://example.org/tracker/123
flaky:
  - case: kip98.transactions::commit-two-partitions
    reason: the second partition's marker is sometimes late
```
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..protocol.exceptions import SpecError
from ..protocol.schema import VersionRange
from ..results.record import ResultRecord
from .itemref import case_id

KINDS = ("known_failures", "flaky")


class KnownFailuresError(ValueError):
    """The file is not in the format above; the message names the file and entry."""


@dataclass(frozen=True)
class Entry:
    kind: str  # "known_failures" or "flaky"
    case: str  # suite::case
    versions: tuple[VersionRange, ...]  # empty: every version
    reason: str
    link: str | None
    target: str | None
    source: str  # file:entry, for messages

    def matches(self, record: ResultRecord) -> bool:
        """Whether the entry names this record's item (its case, at one of its versions, on its target)."""
        if self.target is not None and record.target != self.target:
            return False
        if case_id(record) != self.case:
            return False
        version = record.api_version
        return not self.versions or (version is not None and any(version in span for span in self.versions))

    def describe(self) -> str:
        shown = ", ".join(map(str, self.versions)) or "all versions"
        text = f"{self.case} ({shown}{', ' + self.target if self.target else ''}): {self.reason}"
        return text + (f" <{self.link}>" if self.link else "")


def load(paths: list[str | Path]) -> list[Entry]:
    entries: list[Entry] = []
    for path in paths:
        entries += _load_one(Path(path))
    return entries


def _load_one(path: Path) -> list[Entry]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise KnownFailuresError(f"{path}: {error}") from None
    if not isinstance(data, dict):
        raise KnownFailuresError(f"{path}: expected a mapping with known_failures and/or flaky")
    unknown = set(data) - {"target", *KINDS}
    if unknown:
        raise KnownFailuresError(f"{path}: unknown keys {sorted(unknown)}")
    entries = []
    for kind in KINDS:
        for index, raw in enumerate(data.get(kind) or []):
            where = f"{path}:{kind}[{index}]"
            if not isinstance(raw, dict) or not raw.get("case") or not raw.get("reason"):
                raise KnownFailuresError(f"{where}: every entry needs a case (suite::case) and a reason")
            if "::" not in str(raw["case"]):
                raise KnownFailuresError(f"{where}: case {raw['case']!r} is not suite::case")
            entries.append(Entry(kind=kind, case=str(raw["case"]), versions=_versions(raw.get("versions"), where),
                                 reason=str(raw["reason"]), link=raw.get("link"),
                                 target=raw.get("target", data.get("target")), source=where))
    return entries


def _versions(value, where: str) -> tuple[VersionRange, ...]:
    if value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    try:
        return tuple(VersionRange.parse(item, where=where) for item in values)
    except SpecError as error:
        raise KnownFailuresError(str(error)) from None


def first_match(entries: list[Entry], record: ResultRecord, kind: str | None = None) -> Entry | None:
    """The first entry (of ``kind`` when given) that names the record's item."""
    for entry in entries:
        if (kind is None or entry.kind == kind) and entry.matches(record):
            return entry
    return None
