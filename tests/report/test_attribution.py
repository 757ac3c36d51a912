"""The attribution check's judge: each relation's rules, on records made by hand; then the whole command on Apache
Kafka with a suite of two cases, one whose refusal nothing proves (the check must catch it) and one with its
positive control (the check must hold). The uncontrolled one asks for any error code but NONE, which the lint's
refusal-control rule (it reads ``refused: true``) does not see: the run-time check finds what the lint misses."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from report_records import record

from conformance.report.attribution import UNDER_TEST, UNTOUCHED, USES, judge, relation
from conformance.results.record import ResultRecord


def rec(case: str, outcome: str, *, api: str = "EndTxn", version: int = 3, sends=(), **extra) -> ResultRecord:
    transcript = [{"api": sent_api, "version": sent_version} for sent_api, sent_version in sends]
    return ResultRecord.from_line(record(case, version, outcome, api=api, transcript=transcript, **extra))


def broken(baseline, perturbed, *, legal=False, api="EndTxn", version=3) -> dict[str, str]:
    verdict = judge("p", legal, api, version, baseline, perturbed)
    return {item.split("::")[1]: why for item, _, why in verdict.broken}


def test_relations_come_from_what_the_item_sent():
    assert relation(rec("a", "passed", sends=[("EndTxn", 3)]), "EndTxn", 3) == UNDER_TEST
    assert relation(rec("b", "passed", api="Produce", sends=[("EndTxn", 3)]), "EndTxn", 3) == USES
    assert relation(rec("c", "passed", api="Produce", sends=[("EndTxn", 4)]), "EndTxn", 3) == UNTOUCHED


def test_an_illegal_perturbation_must_not_leave_its_step_under_test_passing():
    before = [rec("refusal", "passed"), rec("controlled", "passed")]
    after = [rec("refusal", "passed"), rec("controlled", "failed", step_api="EndTxn")]
    assert broken(before, after) == {"refusal@v3": "passed though its API under test departed (a pass nothing proved)"}


def test_where_a_case_may_not_look_at_the_departure_a_pass_is_no_finding():
    # a topic id zeroed in an answer the case expects to be an error: the case has nothing to see
    verdict = judge("zero-topic-ids@Fetch:13", False, "Fetch", 13, [rec("x", "passed", api="Fetch", version=13)],
                    [rec("x", "passed", api="Fetch", version=13)], refutes=False)
    assert verdict.held


def test_the_step_under_test_departing_on_another_api_is_misattribution():
    why = broken([rec("x", "passed")], [rec("x", "failed", step_api="Produce")])
    assert why == {"x@v3": "failed on Produce, not on the perturbed EndTxn"}


def test_an_item_that_only_uses_the_api_is_blocked_never_failed():
    before = [rec("blocked", "passed", api="Produce", sends=[("EndTxn", 3)]),
              rec("blamed", "passed", api="Produce", sends=[("EndTxn", 3)])]
    after = [rec("blocked", "blocked", api="Produce"), rec("blamed", "failed", api="Produce")]
    assert list(broken(before, after)) == ["blamed@v3"]


def test_untouched_items_and_legal_perturbations_keep_every_verdict():
    before = [rec("same", "passed", api="Produce"), rec("moved", "passed", api="Produce"), rec("legal", "passed")]
    after = [rec("same", "passed", api="Produce"), rec("moved", "unsupported", api="Produce"),
             rec("legal", "failed", step_api="EndTxn")]
    assert list(broken(before[:2], after[:2])) == ["moved@v3"]
    assert list(broken(before[2:], after[2:], legal=True)) == ["legal@v3"]


def test_an_untouched_item_may_be_blocked_naming_the_api_it_shared_the_answer_of():
    # the run reads the broker's settings once: only the first item that needs them sends DescribeConfigs
    before = [rec(case, "passed", api="EndTxn") for case in ("shared", "other-api", "failed", "legal")]
    after = [rec("shared", "blocked", api="EndTxn", step_api="DescribeConfigs"),
             rec("other-api", "blocked", api="EndTxn", step_api="Metadata"),
             rec("failed", "failed", api="EndTxn", step_api="DescribeConfigs")]
    assert list(broken(before[:3], after, api="DescribeConfigs", version=4)) == ["other-api@v3", "failed@v3"]
    legal = [rec("legal", "blocked", api="EndTxn", step_api="DescribeConfigs")]
    assert list(broken(before[3:], legal, legal=True, api="DescribeConfigs", version=4)) == ["legal@v3"]


def test_nothing_turns_into_a_pass():
    assert list(broken([rec("x", "failed", api="Produce")], [rec("x", "passed", api="Produce")])) == ["x@v3"]


SUITE = textwrap.dedent("""\
    suite: attribution.probe
    title: two refusals of one InitProducerId version, one proven by a control
    spec: KIP-98
    transactional_ids: [main]
    cases:
      - id: refusal-alone
        title: a transaction timeout of -1 is refused
        cites: "KIP-98, InitPidRequest errors: InvalidTransactionTimeout"
        requirement: SHOULD
        under_test: {api: InitProducerId, versions: "4"}
        steps:
          - send: InitProducerId
            fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: -1, producer_id: -1, producer_epoch: -1}
            retry: {on: [COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR], for_ms: 20000}
            expect: {error_code: {ne: NONE}}
      - id: refusal-with-control
        title: a transaction timeout of -1 is refused where 60 s is accepted
        cites: "KIP-98, InitPidRequest errors: InvalidTransactionTimeout"
        requirement: SHOULD
        under_test: {api: InitProducerId, versions: "4"}
        steps:
          - label: the positive control
            send: InitProducerId
            fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}
            retry: {on: [COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR], for_ms: 20000}
            expect: {error_code: NONE}
          - send: InitProducerId
            fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: -1, producer_id: -1, producer_epoch: -1}
            expect: {refused: true}
    """)


@pytest.mark.broker
@pytest.mark.kafka
def test_the_command_catches_a_refusal_nothing_proves_and_holds_where_a_control_proves_it(tmp_path):
    suite = tmp_path / "probe.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "attribution"
    command = [sys.executable, "-m", "conformance", "attribution", "--target", "kafka", "--out", str(out),
               "--perturbation", "generic-error@InitProducerId:4", "--perturbation", "slow@InitProducerId:4", str(suite)]
    checked = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    found = {entry["perturbation"]: entry for entry in json.loads((out / "attribution.json").read_text())["perturbations"]}
    error = found["generic-error@InitProducerId:4"]
    assert error["counts"] == {"under test": 2}
    assert [row[0] for row in error["broken"]] == ["attribution.probe::refusal-alone@v4"]   # the control caught it
    assert found["slow@InitProducerId:4"]["held"]   # a legal perturbation: both verdicts hold
    assert "1 of 2 perturbations held" in checked.stdout
