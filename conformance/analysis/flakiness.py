"""Items whose outcome changed across runs, judged in plain Python over results records in memory.

This is the judgement of the Spark job :mod:`.jobs.flaky`, for ``conformance flaky`` where PySpark
is not installed, and the per-item history both judges' findings are described with. The
definitions are the job's (``tests/analysis/test_flaky.py`` holds the two to the same answers):

- an item is ``suite::case@vN`` (the item id) of one target, target version and harness version;
- runs are ordered by their first record's ``recorded_at``, then by run id;
- an item seen in at least ``min_runs`` runs *changed* when its records hold more than one
  outcome. Every outcome counts apart, ``skipped`` and ``unsupported`` included: an item skipped in
  one run and passed in another changed, one skipped in every run did not;
- ``flaky_rate`` is the share of its records that disagree with its most common outcome, and
  ``flips`` the number of changes from one run to the next.

No PySpark here: this module is imported without the ``analysis`` extra.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..results.record import ResultRecord

GROUP = ("target", "target_version", "harness_version")


def outcome(record: ResultRecord) -> str:
    """The outcome a record states, as the store reads it (a schema-2 IMPLEMENTATION departure is ``differs``),
    so files of both schemas judge alike."""
    return str(record.outcome)


def item_name(record: ResultRecord) -> str:
    """The item id, as the analysis tables' ``item`` column spells it too."""
    return record.item_id


def item_key(record: ResultRecord) -> tuple:
    """(target, target version, harness version, item): what the flaky job groups on."""
    return record.target, record.target_version, record.harness_version or "", item_name(record)


@dataclass
class History:
    """One item's records, oldest run first."""

    key: tuple
    records: list[ResultRecord] = field(default_factory=list)

    @property
    def outcomes(self) -> list[str]:
        return [outcome(record) for record in self.records]

    @property
    def runs(self) -> int:
        return len({record.run_id for record in self.records})

    @property
    def counts(self) -> Counter:
        return Counter(self.outcomes)

    @property
    def changed(self) -> bool:
        return len(self.counts) > 1

    @property
    def flips(self) -> int:
        outcomes = self.outcomes
        return sum(before != after for before, after in zip(outcomes, outcomes[1:]))

    @property
    def flaky_rate(self) -> float:
        return round(1 - max(self.counts.values()) / len(self.records), 4)

    @property
    def requirement(self) -> str:
        return str(self.records[-1].requirement or "")


def run_order(records: list[ResultRecord]) -> list[str]:
    """Run ids, oldest first: by the run's first ``recorded_at`` (text in UTC ISO form sorts as time), then id."""
    started: dict[str, str] = {}
    for record in records:
        run_id, at = str(record.run_id), record.recorded_at or ""
        if run_id not in started or (at and (not started[run_id] or at < started[run_id])):
            started[run_id] = at
    return sorted(started, key=lambda run_id: (started[run_id], run_id))


def histories(records: list[ResultRecord]) -> dict[tuple, History]:
    """Every item's history, its records in run order (file order within a run)."""
    position = {run_id: index for index, run_id in enumerate(run_order(records))}
    found: dict[tuple, History] = {}
    for record in sorted(records, key=lambda record: position[str(record.run_id)]):
        key = item_key(record)
        found.setdefault(key, History(key)).records.append(record)
    return found


def changed(found: dict[tuple, History], *, min_runs: int = 2) -> list[History]:
    """The items that changed, in the job's order: highest rate, most flips, then by name."""
    hits = [history for history in found.values() if history.runs >= min_runs and history.changed]
    return sorted(hits, key=lambda history: (-history.flaky_rate, -history.flips,
                                             tuple("" if part is None else str(part) for part in history.key)))


def judged(found: dict[tuple, History], *, min_runs: int = 2) -> list[History]:
    """The items seen in enough runs to be judged."""
    return [history for history in found.values() if history.runs >= min_runs]
