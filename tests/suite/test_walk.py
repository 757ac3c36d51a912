"""One walk over a case's steps, through each step's kind: a kind that declares what its steps send, nest and do is
seen by every reader of steps (the runner's preparing-step roles, the coverage document, the citation checks, the
scheduling), with no reader knowing its keyword."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from conformance.protocol.codec import default_codec
from conformance.report.documents import case_expectations
from conformance.runner import policy
from conformance.runner.steps import BUILTIN_STEP_KINDS
from conformance.suite import citations
from conformance.suite.components import Components
from conformance.suite.kinds import Fault, Request, StepKind
from conformance.suite.loader import load_suite_file
from conformance.suite.walk import walk


def _nothing(context, step, index, label):
    return None


# A plugin's kinds: ``ask: API`` sends a request of API and judges it; ``twice: [steps]`` nests steps;
# ``poke: NAME`` asks the target for a fault, roughly.
ASK = StepKind("ask", _nothing, requests=lambda step: (Request(step["ask"], step.get("version"), step.get("expect") or {}),),
               hazard=lambda step: step.get("label") == "garbled", rough=lambda step: step.get("label") == "garbled")
TWICE = StepKind("twice", _nothing, nested=lambda step: [(("twice",), step["twice"])],
                 with_nested=lambda step, expanded: {**step, "twice": expanded[0]})
@dataclass(frozen=True)
class Poke:
    """``poke: NAME``, parsed at load."""

    name: str

    @classmethod
    def parse(cls, step):
        if " " in str(step["poke"]):
            raise ValueError(f"a fault name has no spaces: {step['poke']!r}")
        return cls(str(step["poke"]))


POKE = StepKind("poke", _nothing, parse=Poke.parse, faults=lambda step: (Fault(POKE.parsed(step).name),),
                rough=lambda step: True)
KINDS = {**BUILTIN_STEP_KINDS, "ask": ASK, "twice": TWICE, "poke": POKE}

SUITE = """\
suite: walked
title: walked
spec: KIP-98
cases:
  - id: nested-claim
    title: A claim nested in a plugin's kind
    cites: "KIP-98: the broker must return an INVALID_TXN_STATE error"
    requirement: REQUIREMENT
    under_test: {api: EndTxn, versions: "3"}
    steps:
      - ask: EndTxn
        expect: {error_code: NONE}
      - poke: restart
      - twice:
          - ask: EndTxn
            label: garbled
            expect: {error_code: INVALID_TXN_STATE}
          - ask: EndTxn
            version: 2
          - poke: drop
            when: {versions: "3"}
"""


def load(tmp_path, requirement: str = "SHOULD"):
    path = tmp_path / "walked.yaml"
    path.write_text(textwrap.dedent(SUITE).replace("REQUIREMENT", requirement))
    return load_suite_file(path, components=Components(default_codec(), KINDS))


def loaded(tmp_path):
    suite, errors = load(tmp_path)
    assert not errors, errors
    return suite.cases[0]


def test_the_walk_meets_nested_steps_in_order_with_their_places_and_conditions(tmp_path):
    case = loaded(tmp_path)
    visits = list(walk(case.steps))
    assert [visit.where for visit in visits] == [(0,), (1,), (2,), (2, "twice", 0), (2, "twice", 1), (2, "twice", 2)]
    assert [visit.kind.keyword for visit in visits] == ["ask", "poke", "twice", "ask", "ask", "poke"]
    assert [visit.conditional for visit in visits] == [False] * 5 + [True]
    # steps as written (a suite being checked) need the kinds; built ones carry theirs
    assert [visit.where for visit in walk([{"twice": [{"ask": "EndTxn"}]}], KINDS)] == [(0,), (0, "twice", 0)]


def test_a_new_kind_is_seen_by_every_reader_of_steps(tmp_path):
    case = loaded(tmp_path)
    twice = case.steps[2]
    # the runner's roles: the nested claim makes the first ask a preparing step's candidate
    assert policy.sends(twice, "EndTxn", KINDS) and policy.claims_more(twice, KINDS)
    assert policy.only_success(case.steps[0], "EndTxn", KINDS) and not policy.only_success(twice, "EndTxn", KINDS)
    # the coverage document: NONE from the first, INVALID_TXN_STATE from the nested one; the v2 one is another version's
    assert case_expectations(case, 3, default_codec().registry) == [{"NONE"}, {"INVALID_TXN_STATE"}]
    # the citation checks: the steps under test, nested ones included (a MUST's quote is checked at the nested one)
    _, errors = load(tmp_path, "MUST")
    assert "cases[0].steps[2].twice[0].expect.error_code" in [str(error).split(": ")[1] for error in errors]
    assert [path for path, _ in citations._under_test_steps(case.steps, "EndTxn", [], KINDS)] == [
        [0], [2, "twice", 0]]
    # scheduling: rough and hazardous by the nested garbled ask, the unconditional fault only
    assert case.rough and case.hazardous and case.faults == ["restart"]


def test_a_kind_that_declares_nothing_is_neither_rough_nor_sending(tmp_path):
    quiet = {"wait": 10}
    assert not any(visit.rough or visit.hazard or visit.requests or visit.faults for visit in walk([quiet], KINDS))


def test_a_kinds_arguments_are_parsed_once_at_load_and_what_they_refuse_is_a_load_error(tmp_path):
    case = loaded(tmp_path)
    assert case.steps[1].parsed == Poke("restart")  # kept by the built step, read by its kind's declarations
    (tmp_path / "walked.yaml").write_text(textwrap.dedent(SUITE).replace("poke: restart", "poke: re start")
                                          .replace("REQUIREMENT", "SHOULD"))
    _, errors = load_suite_file(tmp_path / "walked.yaml", components=Components(default_codec(), KINDS))
    assert [str(error).split(": ", 1)[1] for error in errors] == [
        "cases[0].steps[1].poke: a fault name has no spaces: 're start'"]
