"""What a level lacks that no companion run gave it, in words a vendor can act on.

Certify adds these to the reasons of every level it grades but those not claimed; ``certify verify`` adds them
again from what the certificate says of its companions, so the page it regenerates is the page certify wrote.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from .levels import NOT_CLAIMED

# What a level's suites need that one node of a provisioned target does not give, and what to say when a
# target cannot have it (HOST:PORT: the harness has no hand on the cluster's nodes unless --node-control gives one).
NEEDS = {"cluster.*": "needs a way to stop a node (--node-control FILE: the commands that stop and start the "
                      "nodes of a HOST:PORT cluster and move leadership; kafka,nodes=3 is a cluster the harness "
                      "provisions)",
         "faults.*": "needs the fault proxy in front of the target (proxy+SPEC)",
         "semantic.*": "needs the exactly-once tier's real clients (conformance semantic --target SPEC, with "
                       "--node-control FILE on HOST:PORT for its faults; then certify --results with both files)"}
# With --node-control the cluster's items ran: those still without a verdict say why themselves (a command the file
# lacks, too few nodes, a command that failed).
GIVEN = {"cluster.*": "ran with --node-control; the items without a verdict say why (a command the file lacks, "
                      "fewer nodes than a case needs, a command that failed)"}


@dataclass
class CompanionFacts:
    """A companion as ``certification.json`` describes it: what :func:`needs_of` reads of one."""

    name: str
    spec: str
    suites: tuple[str, ...]
    records: list
    problem: str

    @classmethod
    def of(cls, facts: dict) -> "CompanionFacts":
        return cls(str(facts.get("name", "")), str(facts.get("spec", "")), tuple(facts.get("suites") or ()),
                   [None] * int(facts.get("items") or 0), str(facts.get("problem") or ""))


def add_needs(grades, companions, *, node_control: bool = False) -> None:
    """Append to each graded level what it lacks (:func:`needs_of`): whatever its status, since a level missed on a
    departure may also count items skipped for want of node control, and those must say why too."""
    for grade in grades:
        if grade.status != NOT_CLAIMED:
            grade.reasons += needs_of(grade, companions, node_control=node_control)


def needs_of(grade, companions: list, *, node_control: bool = False) -> list[str]:
    """What a level lacks, in words a vendor can act on: the suites of :data:`NEEDS` among its items without a
    verdict or its suites not run, and each companion that should have given them but did not. ``node_control``:
    the run had the nodes' commands (--node-control), so the cluster's suites say :data:`GIVEN` instead."""
    suites = {str(record.suite) for record in grade.incomplete} | set(grade.not_run)
    if grade.counted == 0:  # nothing of the level ran: its own suite patterns say what it needs
        suites |= {pattern for pattern in grade.level.suites if pattern != "*"}
    found = []
    for pattern, need in NEEDS.items():
        lacking = [suite for suite in suites if fnmatch.fnmatchcase(suite, pattern)]
        if not lacking:
            continue
        if all(any(companion.records and not companion.problem
                   and any(fnmatch.fnmatchcase(suite, provided) for provided in companion.suites)
                   for companion in companions) for suite in lacking):
            continue  # a companion ran each of them: their items without a verdict say why themselves
        if node_control and pattern in GIVEN:
            found.append(f"{pattern[:-2]} suites: {GIVEN[pattern]}")
            continue
        failed = [companion for companion in companions if companion.problem
                  and any(fnmatch.fnmatchcase(provided, pattern) for provided in companion.suites)]
        found.append(f"{pattern[:-2]} suites: {need}" + "".join(
            f"; {companion.name} on {companion.spec} gave none: {companion.problem}" for companion in failed))
    return found
