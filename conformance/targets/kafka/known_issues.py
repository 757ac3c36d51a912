"""Known Apache Kafka bugs that a provisioned broker's own log gives away.

When an exactly-once check departs on a Kafka the harness started, the run looks for these signatures in the
broker's log, so that the result says which known bug the broker hit, with its line as evidence. A signature
also shows up in runs that do not depart (the bug does harm only in some interleavings); it explains a
departure, it never makes one or excuses one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

FIRST_LINE_CHARACTERS = 400


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    link: str
    signature: re.Pattern[str]


ISSUES = (
    # Found by the exactly-once tier's restarts of a single 4.4.0 broker (1 run in 7 to 28 departed). During a
    # graceful shutdown the metadata image makes every partition leaderless before the transaction coordinator
    # resigns; a transaction whose end is acknowledged then has its markers skipped as if its partitions had been
    # deleted, yet its CompleteCommit or CompleteAbort is written. Kafka 3.9.1 queued the markers for a retry.
    KnownIssue(
        id="KAFKA-20734",
        title="the transaction coordinator skipped a transaction's markers while its partitions had no leader (a "
              "graceful shutdown) and completed the transaction anyway: its records stay undecided (the last stable "
              "offset stops) or the producer's next transaction on the partition decides them",
        link="https://github.com/apache/kafka/pull/22680",
        signature=re.compile(r"Couldn't find leader endpoint for partitions .* while trying to send transaction "
                             r"markers for \S+, these partitions are likely deleted already"),
    ),
)


def seen_in(lines: Iterable[str]) -> list[dict]:
    """The known issues whose signature is in ``lines``: id, title, link, how many lines, the first one."""
    found: dict[str, dict] = {}
    for line in lines:
        for issue in ISSUES:
            if issue.signature.search(line):
                entry = found.setdefault(issue.id, {"issue": issue.id, "title": issue.title, "link": issue.link,
                                                    "lines": 0, "first": line.strip()[:FIRST_LINE_CHARACTERS]})
                entry["lines"] += 1
    return list(found.values())
