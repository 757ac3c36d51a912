"""Steps and the runner talk in types: a departure carries the step that departed (a StepRef) and whom it blames
(a StepRole), set where the step ran, never parsed back out of its message; the dispatcher asks a step's kind
what it sends instead of knowing the ``send`` kind."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.results import StepRole
from conformance.runner.context import Context, Departure
from conformance.runner.dispatch import run_steps
from conformance.suite.kinds import Request, StepKind, StepRef
from conformance.suite.when import parse


def depart(context, step, index, name):
    # a message that does not start with the step's label: the label travels beside it
    deviation = Departure("the broker said no: twice", api=step["depart"], expected="yes", actual="no")
    deviation.version = 3  # the version under test
    raise deviation


def nest(context, step, index, name):
    run_steps(context, step["nest"], f"{index}(nest).")


def asks(context, step, index, name):
    context.progress.tested = True


KINDS = {"depart": StepKind("depart", depart, describe=lambda step: step["depart"]),
         "nest": StepKind("nest", nest),
         "asks": StepKind("asks", asks, requests=lambda step: (Request(step["asks"]),))}


def context(api: str | None = "EndTxn", version: int | None = 3) -> Context:
    return Context(SimpleNamespace(finalized_features={}), SimpleNamespace(spec="kafka"), version, api, {}, {},
                   step_kinds=KINDS)


def test_the_innermost_departing_step_is_named_structurally():
    with pytest.raises(Departure) as raised:
        run_steps(context(), [{"asks": "EndTxn"}, {"nest": [{"asks": "Produce"}, {"depart": "Produce"}]}])
    assert raised.value.step == StepRef("2(nest).2", "2(nest).2 depart Produce")
    assert raised.value.step.number == 2
    assert raised.value.role is StepRole.CHECK  # after the step under test, on another API


@pytest.mark.parametrize("steps, role", [
    ([{"depart": "Produce"}], StepRole.SETUP),
    ([{"depart": "EndTxn"}], StepRole.UNDER_TEST),
    ([{"asks": "EndTxn"}, {"depart": "Produce", "verifies": True}], StepRole.UNDER_TEST),
])
def test_whom_a_departure_blames_is_a_role(steps, role):
    with pytest.raises(Departure) as raised:
        run_steps(context(), steps)
    assert raised.value.role is role and raised.value.role == role.value  # the results line's word


def test_a_step_under_test_left_out_by_when_is_named_through_its_kind():
    ran = context()
    run_steps(ran, [{"asks": "EndTxn", "when": parse({"versions": "4+"})}, {"asks": "Produce", "when": {"versions": "4+"}}])
    assert ran.progress.left_out == ["step 1 asks left out by when: {'versions': '4+'}"]


def test_a_ref_without_a_number_is_step_zero():
    assert StepRef("", "").number == 0 and StepRef("12.1.3", "x").number == 12
