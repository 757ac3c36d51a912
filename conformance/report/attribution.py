"""The attribution check's judge: did the harness blame the perturbed API and version, and nothing else?

A run on ``perturb:P+SPEC`` is compared item by item with a run of the same suites on ``proxy+SPEC`` (the
baseline, its transcripts kept). Each item stands in one relation to the perturbation, read from what the
baseline item sent, not from the suite:

- **under test**: the item's API under test is the perturbed API at the perturbed version. Where the
  perturbation departs from the protocol, any departure it reports is that API's, and where no answer it leaves
  could meet a case (every error code replaced, the connection closed) it must not pass either (a pass is a refusal
  nothing proved); where the perturbation is legal, it keeps its verdict.
- **uses**: the item sent the perturbed API and version in a step that is not under test. It keeps its verdict,
  or is blocked or unsupported (the step it needed departed): it is never failed for another API's departure.
- **untouched**: it never sent that API and version, and keeps its verdict, or is blocked naming that API (an answer
  the run asks for once and shares between items, the broker's settings, is in one item's transcript only).

And whatever the relation, no perturbation turns into a pass what did not pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..results.ids import item_id
from ..results.record import Outcome, ResultRecord

UNDER_TEST, USES, UNTOUCHED = "under test", "uses", "untouched"
DEPARTED = {Outcome.FAILED.value, Outcome.DIFFERS.value}
NO_VERDICT_NAMING = {Outcome.BLOCKED.value, Outcome.UNSUPPORTED.value, Outcome.SKIPPED.value}


def sent(record: ResultRecord) -> set[tuple[str, int]]:
    """``(api, version)`` of every request the item's transcript holds."""
    return {(exchange["api"], exchange["version"]) for exchange in record.transcript or ()
            if exchange.get("api") is not None and exchange.get("version") is not None}


def candidates(records: Iterable[ResultRecord], codec) -> list[str]:
    """Every perturbation that can change an answer some item received: each (API, version) sent × each kind."""
    from ..proxy.perturb import KINDS, Perturbation

    pairs = sorted({pair for record in records for pair in sent(record)})
    return [Perturbation(kind, api, version).spec for api, version in pairs for kind in KINDS
            if Perturbation(kind, api, version).applies(codec)]


def relation(record: ResultRecord, api: str, version: int) -> str:
    """How a baseline item stands to a perturbation of ``api`` at ``version``."""
    if record.api == api and record.api_version == version:
        return UNDER_TEST
    return USES if (api, version) in sent(record) else UNTOUCHED


@dataclass
class PerturbationVerdict:
    """One perturbation's comparison: how many items held, and each that did not, with why."""

    perturbation: str
    legal: bool
    refutes: bool = True  # no case may pass on its answers
    counts: dict[str, int] = field(default_factory=dict)     # relation -> items compared
    broken: list[tuple[str, str, str]] = field(default_factory=list)   # (item, relation, why)

    @property
    def held(self) -> bool:
        return not self.broken


def _why(relation_: str, legal: bool, refutes: bool, before: ResultRecord, after: ResultRecord,
         api: str) -> str | None:
    """Why ``after`` breaks the rules for its relation, or None when it holds."""
    was, now = before.outcome, after.outcome
    if now == Outcome.PASSED.value and was != Outcome.PASSED.value:
        return f"turned {was} into passed"
    if now == Outcome.ERROR.value and was != Outcome.ERROR.value:
        return f"ended in error: {after.message[:160]}"
    if relation_ == UNDER_TEST and not legal:
        if now == Outcome.PASSED.value and refutes:
            return "passed though its API under test departed (a pass nothing proved)"
        if now in DEPARTED | {Outcome.BLOCKED.value} and after.step_api not in (None, api):
            return f"{now} on {after.step_api}, not on the perturbed {api}"
        return None
    if relation_ == USES and not legal and now in NO_VERDICT_NAMING:
        return None
    if relation_ == UNTOUCHED and not legal and now == Outcome.BLOCKED.value and after.step_api == api:
        # it needs an answer the run asks for once and shares (the broker's settings), so the baseline item's own
        # transcript does not hold it: blocked naming the perturbed API is what a user of that API gets
        return None
    if now != was:
        return f"{was} became {now}" + (f" ({after.message[:160]})" if after.message else "")
    return None


def judge(perturbation: str, legal: bool, api: str, version: int, baseline: Iterable[ResultRecord],
          perturbed: Iterable[ResultRecord], refutes: bool = True) -> PerturbationVerdict:
    """Compare the perturbed run with the baseline, item by item (items missing from either are not compared)."""
    before = {item_id(record.suite, record.case, record.api_version): record for record in baseline}
    verdict = PerturbationVerdict(perturbation, legal, refutes)
    for after in perturbed:
        key = item_id(after.suite, after.case, after.api_version)
        if key not in before:
            continue
        relation_ = relation(before[key], api, version)
        verdict.counts[relation_] = verdict.counts.get(relation_, 0) + 1
        why = _why(relation_, legal, refutes, before[key], after, api)
        if why:
            verdict.broken.append((key, relation_, why))
    return verdict
