"""A code or a refusal no sentence demands is not a MUST (issue 35): the loader's check of citations, the
IMPLEMENTATION twin it makes from ``kafka_code``, and a scripted broker that refuses with another code."""

from __future__ import annotations

import textwrap

from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.suite.model import Outcome, Requirement

from fake_kafka import FakeKafka
from scripted_runs import bundled_case, run_on

CASE = """\
suite: cited
title: Citations
spec: KIP-98
transactional_ids: [main]
cases:
  - id: end-txn-unknown
    title: EndTxn naming no producer id is refused
    cites: CITES
    under_test: {api: EndTxn, versions: "3"}
    steps:
      - send: EndTxn
        fields: {transactional_id: "${txn_ids.main}", producer_id: 99, producer_epoch: 0, committed: true}
        expect: EXPECT
"""


def load(tmp_path, cites: str, expect: str):
    path = tmp_path / "cited.yaml"
    path.write_text(textwrap.dedent(CASE).replace("CITES", cites).replace("EXPECT", expect))
    return load_suite_file(path, components=bundled())


def test_a_must_of_an_exact_code_needs_a_citation_that_names_it(tmp_path):
    _, errors = load(tmp_path, '"KIP-98, EndTxnRequest: ends the transaction"', "{error_code: INVALID_PRODUCER_ID_MAPPING}")
    assert [error.key for error in errors] == ["cases[0].steps[0].expect.error_code"], errors
    assert "kafka_code" in errors[0].message
    for cites in ('"KIP-98, EndTxnRequest errors: InvalidPidMapping"', '"INVALID_PRODUCER_ID_MAPPING when unmapped"'):
        assert load(tmp_path, cites, "{error_code: INVALID_PRODUCER_ID_MAPPING}")[1] == []


def test_a_must_refusal_needs_a_sentence_that_demands_one(tmp_path):
    _, errors = load(tmp_path, '"KIP-98, EndTxnRequest: ends the transaction"', "{refused: true}")
    assert [error.key for error in errors] == ["cases[0].steps[0].expect.refused"], errors
    assert load(tmp_path, '"KIP-98: an unknown producer id is an error"', "{refused: true}")[1] == []


def test_kafka_code_beside_a_refusal_makes_the_implementation_twin(tmp_path):
    suite, errors = load(tmp_path, '"KIP-98: an unknown producer id is an error"',
                         "{refused: true, kafka_code: INVALID_PRODUCER_ID_MAPPING}")
    assert not errors, errors
    must, twin = suite.cases
    assert (must.requirement, must.steps[0]["expect"]["refused"]) == (Requirement.MUST, True)
    assert twin.id == "end-txn-unknown-kafka-answer" and twin.requirement is Requirement.IMPLEMENTATION
    assert twin.steps[0]["expect"] == {"error_code": "INVALID_PRODUCER_ID_MAPPING"}


def test_a_refusal_with_another_code_passes_and_only_differs_from_kafka():
    """Before issue 35 the bundled case was a MUST of FETCH_SESSION_ID_NOT_FOUND, which no sentence ties to an
    unknown session: a broker refusing with another code failed it."""
    def run(case_id):
        broker = FakeKafka(lambda api, version, body: {"error_code": 71, "responses": []} if api == "Fetch" else None)
        return run_on(broker, bundled_case("kip98/error-paths.yaml", case_id), 12)

    assert run("fetch-unknown-session").outcome is Outcome.PASSED  # INVALID_FETCH_SESSION_EPOCH: a refusal
    assert run("fetch-unknown-session-kafka-answer").outcome is Outcome.DIFFERS
