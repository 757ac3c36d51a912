"""The known-bugs ledger: Apache Kafka's wire-visible transaction-protocol bugs since 3.3, and where each lives.

The ledger is package data (``kafka-bugs.yaml`` beside this module, checked against ``schema.json`` when
read): one entry per bug, with the releases it affects, the release that fixed it, how it shows on the
wire, and the bundled cases that detect it (or why none can). Reports ask :func:`known_bug` whether a
departure on an Apache Kafka release is one of these bugs, so that a finding names it ("KAFKA-14402,
fixed in 3.6.0"); the release matrix (:mod:`conformance.targets.kafka.releases`) runs the releases the
entries name.

A match explains a departure; it never makes one, nor excuses one: the item keeps its outcome.

Rules: nothing of the harness is imported here but :mod:`conformance.resources` and
:mod:`conformance.checked_yaml` (every layer that
writes or reads results may ask the ledger); a release is ``X.Y.Z`` and ranges are inclusive.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path


from .. import checked_yaml, resources

# The outcomes a ledger entry can explain: a departure of the step under test, or an error a crash became.
DEPARTURES = ("failed", "differs", "error")
RELEASE = re.compile(r"\d+\.\d+\.\d+")


class LedgerError(ValueError):
    """The ledger file is malformed; the message names the file and the entry."""


def release_key(release: str) -> tuple[int, ...]:
    """``"3.10.1"`` → ``(3, 10, 1)``: releases compare as numbers, not as text."""
    if not RELEASE.fullmatch(release):
        raise ValueError(f"not a Kafka release: {release!r} (expected X.Y.Z)")
    return tuple(int(part) for part in release.split("."))


@dataclass(frozen=True)
class ReleaseRange:
    """Releases ``first`` to ``last``, both included (``"3.3.0..3.5.2"``; one release: ``"4.0.0"``)."""

    first: str
    last: str

    @classmethod
    def parse(cls, text: str) -> "ReleaseRange":
        first, _, last = str(text).partition("..")
        last = last or first
        release_key(first), release_key(last)  # noqa: B018 - ValueError names a malformed release
        if release_key(first) > release_key(last):
            raise ValueError(f"release range {text!r} ends before it begins")
        return cls(first, last)

    def __contains__(self, release: str) -> bool:
        return release_key(self.first) <= release_key(release) <= release_key(self.last)

    def __str__(self) -> str:
        return self.first if self.first == self.last else f"{self.first} to {self.last}"


@dataclass(frozen=True)
class Sources:
    """Where an entry's facts come from: those shown (from Kafka's history or a run), those inferred, those not known."""

    established: tuple[str, ...]
    inferred: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()

    @classmethod
    def of(cls, raw: dict) -> "Sources":
        return cls(*(tuple(raw.get(name) or ()) for name in ("established", "inferred", "unknown")))


@dataclass(frozen=True)
class KeptOut:
    """A bug checked and left out of the ledger, with the reason (no affected release, no citable key)."""

    key: str
    title: str
    reason: str
    sources: Sources

    @property
    def link(self) -> str:
        return f"https://issues.apache.org/jira/browse/{self.key}"


@dataclass(frozen=True)
class Bug:
    """One ledger entry."""

    key: str  # KAFKA-NNNNN
    title: str
    kip: str | None
    affected: tuple[ReleaseRange, ...]
    fixed_in: str | None  # None: not fixed in any release up to the newest the ledger knows
    wire: str  # how it shows on the wire
    cases: tuple[str, ...]  # suite::case ids that detect it
    undetectable: str | None  # why no case can show it on the wire (when cases is empty)
    verify: dict | None  # {"affected": X.Y.Z, "fixed": X.Y.Z, "target": KIND, "long": bool}: the releases its test runs
    links: tuple[str, ...]
    note: str | None
    sources: Sources

    @property
    def link(self) -> str:
        return f"https://issues.apache.org/jira/browse/{self.key}"

    def affects(self, release: str | None) -> bool:
        if not release or not RELEASE.fullmatch(release):
            return False
        return any(release in span for span in self.affected)

    def label(self) -> str:
        """``KAFKA-14402, fixed in 3.6.0``; for an open bug ``KAFKA-20310, unfixed as of 4.4.0`` (the newest
        release the ledger records it on: no release up to that one fixed it)."""
        if self.fixed_in:
            return f"{self.key}, fixed in {self.fixed_in}"
        newest = max((span.last for span in self.affected), key=release_key, default=None)
        return f"{self.key}, unfixed as of {newest}" if newest else f"{self.key}, not fixed yet"

    def verify_target(self, role: str) -> str | None:
        """The target spec the entry's cases run on for ``role`` (``affected`` or ``fixed``): ``kafka:3.5.2``,
        ``proxy+kafka:3.9.2``, ``kafka:4.4.0,nodes=3``; None without ``verify`` or without that role (no fixed
        release for a bug not fixed yet)."""
        if not self.verify or not self.verify.get(role):
            return None
        return release_target(self.verify.get("target", "kafka"), self.verify[role])

    def verify_roles(self) -> tuple[str, ...]:
        """``("affected", "fixed")``, or ``("affected",)`` for a bug no release has fixed."""
        return tuple(role for role in ("affected", "fixed") if self.verify and self.verify.get(role))

    def affected_text(self) -> str:
        return ", ".join(map(str, self.affected))


def release_target(kind: str, release: str) -> str:
    """A verify target kind at a release: ``kafka`` → ``kafka:3.5.2``, ``kafka,nodes=3`` → ``kafka:4.4.0,nodes=3``."""
    base, comma, options = kind.partition(",")
    return f"{base}:{release}{comma}{options}"


def ledger_file() -> Path:
    return resources.known_bugs()


def schema() -> dict:
    return json.loads(resources.known_bugs_schema().read_text(encoding="utf-8"))


@functools.cache
def bugs() -> tuple[Bug, ...]:
    """The bundled ledger, read and checked once."""
    return load(ledger_file())


@functools.cache
def kept_out() -> tuple[KeptOut, ...]:
    """The bugs the bundled ledger checked and left out, each with its reason."""
    return load_kept_out(ledger_file())


def _read(path: Path) -> dict:
    try:
        return checked_yaml.load(path, schema())
    except checked_yaml.CheckedYamlError as error:
        raise LedgerError(str(error)) from None


def load_kept_out(path: Path) -> tuple[KeptOut, ...]:
    """The ``kept_out`` list of a ledger file; a key both kept out and an entry is refused."""
    data = _read(path)
    entries = {raw["key"] for raw in data["bugs"]}
    kept = []
    for index, raw in enumerate(data.get("kept_out") or ()):
        if raw["key"] in entries:
            raise LedgerError(f"{path}: kept_out[{index}] ({raw['key']}): the key is an entry too")
        kept.append(KeptOut(key=raw["key"], title=raw["title"], reason=raw["reason"], sources=Sources.of(raw["sources"])))
    return tuple(kept)


def load(path: Path) -> tuple[Bug, ...]:
    """Read a ledger file: its JSON Schema first, then what a schema cannot say (ranges, unique keys,
    a reason for every entry without a case, a fixed release after every affected one)."""
    data = _read(path)
    entries, seen = [], set()
    for index, raw in enumerate(data["bugs"]):
        where = f"{path}: bugs[{index}] ({raw['key']})"
        if raw["key"] in seen:
            raise LedgerError(f"{where}: the key is listed twice")
        seen.add(raw["key"])
        try:
            affected = tuple(ReleaseRange.parse(text) for text in raw["affected"])
        except ValueError as error:
            raise LedgerError(f"{where}: {error}") from None
        fixed = raw.get("fixed_in")
        if fixed is not None and any(release_key(span.last) >= release_key(fixed) for span in affected):
            raise LedgerError(f"{where}: fixed_in {fixed} is not after every affected release")
        cases = tuple(raw.get("cases") or ())
        if not cases and not raw.get("undetectable"):
            raise LedgerError(f"{where}: an entry without cases says why (undetectable)")
        verify = raw.get("verify")
        if verify is not None:
            bug_ranges = affected
            if not any(verify["affected"] in span for span in bug_ranges):
                raise LedgerError(f"{where}: verify.affected {verify['affected']} is not an affected release")
            if verify.get("fixed") and any(verify["fixed"] in span for span in bug_ranges):
                raise LedgerError(f"{where}: verify.fixed {verify['fixed']} is an affected release")
            if bool(verify.get("fixed")) != bool(fixed):
                raise LedgerError(f"{where}: verify.fixed names the fixed release exactly when fixed_in does")
        entries.append(Bug(key=raw["key"], title=raw["title"], kip=raw.get("kip"), affected=affected, fixed_in=fixed,
                           wire=raw["wire"], cases=cases, undetectable=raw.get("undetectable"), verify=verify,
                           links=tuple(raw.get("links") or ()), note=raw.get("note"),
                           sources=Sources.of(raw["sources"])))
    return tuple(entries)


def is_apache_kafka(target: str | None) -> bool:
    """A target the harness provisioned from Apache Kafka's jars (``kafka``, ``kafka:3.5.2,...``, ``proxy+kafka``)."""
    spec = str(target or "").rsplit("+", 1)[-1]
    return spec == "kafka" or spec.startswith(("kafka:", "kafka,"))


def match(case: str, release: str | None, target: str | None = None,
          entries: tuple[Bug, ...] | None = None) -> Bug | None:
    """The entry whose cases include ``case`` (``suite::case``) and whose affected releases include ``release``."""
    if target is not None and not is_apache_kafka(target):
        return None
    for bug in bugs() if entries is None else entries:
        if case in bug.cases and bug.affects(release):
            return bug
    return None


def known_bug(record: dict) -> str | None:
    """``KAFKA-14402, fixed in 3.6.0`` for a results line whose departure is a ledger entry: the line's own
    ``known_bug`` when it has one (written by the run), else a match of its case, target and release
    (a results file written before the ledger existed)."""
    if record.get("known_bug"):
        return str(record["known_bug"])
    if record.get("outcome") not in DEPARTURES:
        return None
    bug = match(f"{record.get('suite')}::{record.get('case')}", record.get("target_version"), record.get("target"))
    return bug.label() if bug else None


def jira_link(label: str | None) -> str | None:
    """The JIRA address of the key a :func:`known_bug` label begins with."""
    if not label:
        return None
    key = str(label).split(",")[0].strip()
    return f"https://issues.apache.org/jira/browse/{key}" if re.fullmatch(r"KAFKA-\d+", key) else None
