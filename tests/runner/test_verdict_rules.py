"""The verdict's rules read from records alone (runner/verdict.py): whom a departure blames, from the steps it
left and the facts its raiser stated, with no broker and no context."""

from __future__ import annotations

import pytest

from conformance.results.record import Outcome, StepRole
from conformance.runner import verdict
from conformance.runner.context import Departure
from conformance.runner.verdict import Passage
from conformance.suite.kinds import StepRef

from scripted_runs import bundled_case

INNER, OUTER = StepRef("2(until)", "2(until) send Fetch"), StepRef("2", "2 until")


def departed(*passages: Passage, api: str = "Fetch", version: int = 4, **facts) -> Departure:
    deviation = Departure("a departure", expected="NONE", actual="UNKNOWN_SERVER_ERROR", api=api, version=version,
                          **facts)
    for passage in passages:
        deviation.left(passage)
    return deviation


@pytest.mark.parametrize("passages, facts, blamed", [
    ((Passage(INNER, under_test=True),), {}, StepRole.UNDER_TEST),
    ((Passage(INNER),), {}, StepRole.SETUP),  # another request, before the step under test ran
    ((Passage(INNER, tested=True),), {}, StepRole.CHECK),  # after it
    ((Passage(INNER, tested=True), Passage(OUTER, verifies=True)), {}, StepRole.UNDER_TEST),  # a step around verifies
    ((Passage(INNER, tested=True), Passage(OUTER, verifies=True)), {"blind": True}, StepRole.CHECK),  # no evidence
    ((Passage(INNER, under_test=True),), {"preparation": True}, StepRole.SETUP),  # a fast-forward only prepares
    ((Passage(INNER, tested=True, verifies=True),), {"control": True}, StepRole.SETUP),  # a malformation's control
    ((), {}, StepRole.UNDER_TEST),  # raised outside any step: the step's own
])
def test_whom_a_departure_blames_is_read_from_the_steps_it_left(passages, facts, blamed):
    assert verdict.role(departed(*passages, **facts)) is blamed


def test_an_observers_control_blocks_as_set_up_or_a_check_never_the_step_under_test():
    for tested, blamed in ((False, StepRole.SETUP), (True, StepRole.CHECK)):
        deviation = departed(Passage(INNER, under_test=True, tested=tested), Passage(OUTER, verifies=True))
        deviation.observer = "the LSO"
        assert verdict.role(deviation) is blamed


def test_the_step_named_is_the_innermost_and_the_record_is_read_not_set():
    deviation = departed(Passage(INNER, tested=True), Passage(OUTER, verifies=True))
    assert deviation.step == INNER and deviation.role is StepRole.UNDER_TEST
    with pytest.raises(AttributeError):
        deviation.role = StepRole.SETUP  # type: ignore[misc]


def test_a_root_cause_of_the_version_under_test_met_while_preparing_fails_that_version():
    case = bundled_case("kip98/transactions.yaml", "commit-after-abort")
    cause = departed(Passage(INNER), api="EndTxn", version=3, root_cause="EndTxn v3 response does not decode at x")
    assert verdict.judge(case, 3, cause).outcome is Outcome.FAILED
    assert verdict.judge(case, 4, cause).outcome is Outcome.BLOCKED  # another version's fault blocks this one
