"""Verdicts land on the right step and never pass vacuously, against scripted brokers (tests/support/fake_kafka.py)."""

from __future__ import annotations

import textwrap

import pytest

from conformance.runner.steps import parallel as parallel_kind
from conformance.suite.loader import load_suite_file
from conformance.results.record import Outcome
from conformance.runner.policy import COORDINATOR_RETRY, with_coordinator_retry
from conformance.runner.runner import Runner
from conformance.targets.hostport import HostPortTarget
from conformance.runner.steps import bundled

from fake_kafka import DIE, SILENT, FakeKafka

HEADER = """\
suite: verdicts
title: Verdict classes
spec: KIP-98
topics: {out: {partitions: 1}}
transactional_ids: [main]
groups: [g]
cases:
"""


def run_case(tmp_path, broker: FakeKafka, case_yaml: str, version: int):
    path = tmp_path / "verdicts.yaml"
    path.write_text(HEADER + textwrap.indent(textwrap.dedent(case_yaml), "  "))
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="verdicts", timeout=2.0)
    try:
        return runner.run(suite.cases[0], version)
    finally:
        runner.close()


def answering(errors: dict[str, int]):
    """A handler that answers these APIs with these top-level error codes, everything else by default."""
    def handler(api, version, body):
        return {"error_code": errors[api]} if api in errors else None
    return handler


INIT_THEN_END = """\
- id: end-after-init
  title: EndTxn after InitProducerId
  cites: KIP-98
  under_test: {api: EndTxn, versions: "3"}
  steps:
    - send: InitProducerId
      fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}
      expect: {error_code: NONE}
      save: {pid: producer_id, epoch: producer_epoch}
    - send: EndTxn
      fields: {transactional_id: "${txn_ids.main}", producer_id: "${pid}", producer_epoch: "${epoch}", committed: true}
      expect: {error_code: NONE}
"""


def test_a_setup_step_on_another_api_that_departs_blocks_the_item_instead_of_failing_it(tmp_path):
    broker = FakeKafka(answering({"InitProducerId": 53}))  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    result = run_case(tmp_path, broker, INIT_THEN_END, 3)
    assert result.outcome is Outcome.BLOCKED
    assert (result.failure.role, result.failure.api, result.failure.step) == ("setup", "InitProducerId", 1)
    assert "no verdict on EndTxn v3" in result.message and "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in result.message
    assert ("EndTxn", 3) not in broker.requests


def test_the_step_under_test_that_departs_fails_the_item(tmp_path):
    broker = FakeKafka(answering({"EndTxn": 48}))  # INVALID_TXN_STATE
    result = run_case(tmp_path, broker, INIT_THEN_END, 3)
    assert result.outcome is Outcome.FAILED
    assert (result.failure.role, result.failure.api) == ("under_test", "EndTxn")


def implementation(case_yaml: str) -> str:
    """The same case at the IMPLEMENTATION level: what Apache Kafka does where the KIPs leave it open."""
    return case_yaml.replace("  cites: KIP-98\n", "  cites: KIP-98\n  requirement: IMPLEMENTATION\n", 1)


def test_an_implementation_case_whose_step_under_test_departs_differs_from_kafka_and_never_fails(tmp_path):
    broker = FakeKafka(answering({"EndTxn": 48}))  # INVALID_TXN_STATE
    result = run_case(tmp_path, broker, implementation(INIT_THEN_END), 3)
    assert result.outcome is Outcome.DIFFERS
    assert (result.failure.role, result.failure.api) == ("under_test", "EndTxn")
    assert result.to_json()["outcome"] == "differs" and result.to_json()["schema_version"] >= 3


def test_an_implementation_case_whose_set_up_departs_stays_blocked(tmp_path):
    broker = FakeKafka(answering({"InitProducerId": 53}))  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    result = run_case(tmp_path, broker, implementation(INIT_THEN_END), 3)
    assert result.outcome is Outcome.BLOCKED


def test_the_step_under_test_that_holds_passes(tmp_path):
    result = run_case(tmp_path, FakeKafka(), INIT_THEN_END, 3)
    assert result.outcome is Outcome.PASSED, result.message


COMMIT_THEN_CHECK = """\
- id: commit-then-check
  title: TxnOffsetCommit, checked with OffsetFetch
  cites: KIP-98
  under_test: {api: TxnOffsetCommit, versions: "3"}
  steps:
    - send: TxnOffsetCommit
      fields: {transactional_id: "${txn_ids.main}", group_id: "${groups.g}", producer_id: 1, producer_epoch: 0}
      expect: {error_code: NONE}
    - send: OffsetFetch
      version: 7
      fields: {group_id: "${groups.g}", topics: null}
      expect: {error_code: NONE}
      VERIFIES
"""


@pytest.mark.parametrize("verifies, outcome, role", [(False, Outcome.BLOCKED, "check"),
                                                      (True, Outcome.FAILED, "under_test")])
def test_a_check_on_another_api_blocks_unless_it_verifies_the_step_under_test(tmp_path, verifies, outcome, role):
    case = COMMIT_THEN_CHECK.replace("VERIFIES", "verifies: true" if verifies else "")
    result = run_case(tmp_path, FakeKafka(answering({"OffsetFetch": 30})), case, 3)  # GROUP_AUTHORIZATION_FAILED
    assert result.outcome is outcome
    assert result.failure.role == role and result.failure.api == "OffsetFetch"


def test_a_when_that_drops_the_step_under_test_is_an_error_not_a_pass(tmp_path):
    case = INIT_THEN_END.rstrip("\n") + "\n      when: {versions: \"4+\"}\n"
    result = run_case(tmp_path, FakeKafka(), case, 3)
    assert result.outcome is Outcome.ERROR
    assert "the step under test never ran" in result.message and "left out by when" in result.message


def test_a_case_whose_step_under_test_checks_nothing_is_an_error(tmp_path):
    case = INIT_THEN_END.replace("committed: true}\n      expect: {error_code: NONE}", "committed: true}")
    result = run_case(tmp_path, FakeKafka(), case, 3)
    assert result.outcome is Outcome.ERROR and "never ran" in result.message


PARALLEL = """\
- id: parallel-branches
  title: Two branches, one never answered
  cites: KIP-98
  under_test: {api: EndTxn, versions: "3"}
  steps:
    - parallel:
        - - send: EndTxn
            fields: {transactional_id: a, producer_id: 1, producer_epoch: 0, committed: true}
            expect: {error_code: NONE}
        - - send: AddOffsetsToTxn
            fields: {transactional_id: b, producer_id: 1, producer_epoch: 0, group_id: g}
            timeout_ms: 30000
            expect: {error_code: NONE}
"""


def test_a_parallel_branch_still_running_at_its_deadline_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel_kind, "PARALLEL_DEADLINE_S", 1.0)
    broker = FakeKafka(lambda api, version, body: SILENT if api == "AddOffsetsToTxn" else None)
    result = run_case(tmp_path, broker, PARALLEL, 3)
    assert result.outcome is Outcome.ERROR
    assert "branch 2 still running" in result.message


def test_a_missing_element_names_the_responses_own_error_first(tmp_path):
    case = """\
    - id: missing-element
      title: A path into an empty answer
      cites: KIP-98
      under_test: {api: ListTransactions, versions: "0"}
      steps:
        - send: ListTransactions
          fields: {state_filters: [], producer_id_filters: []}
          expect: {fields: {"transaction_states[0].producer_id": 7}}
    """
    broker = FakeKafka(answering({"ListTransactions": 15}))
    result = run_case(tmp_path, broker, textwrap.dedent(case), 0)
    assert result.outcome is Outcome.FAILED
    assert "the response says COORDINATOR_NOT_AVAILABLE" in result.message
    assert result.message.index("COORDINATOR_NOT_AVAILABLE") < result.message.index("no element")


# ------------------------------------------------------------------------------ targets that die or hang
ROUGH = """\
- id: rough
  title: A request the broker answers by closing
  cites: KIP-98
  steps:
    - send: DescribeProducers
      fields: {topics: []}
      expect: {disconnect: true}
"""


RUNNERS: list[Runner] = []  # the runners of the running test, closed after it with their connections


@pytest.fixture(autouse=True)
def close_runners():
    yield
    while RUNNERS:
        RUNNERS.pop().close()


def runner_for(broker: FakeKafka, timeout: float = 1.0) -> Runner:
    target = HostPortTarget(broker.address)
    target.start()
    RUNNERS.append(Runner(target, run_id="liveness", timeout=timeout))
    return RUNNERS[-1]


def load_cases(tmp_path, *cases: str):
    path = tmp_path / "liveness.yaml"
    path.write_text(HEADER + "".join(textwrap.indent(textwrap.dedent(case), "  ") for case in cases))
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    return suite.cases


def test_the_case_after_which_the_target_stops_answering_fails_and_later_items_end_at_once(tmp_path):
    rough, plain = load_cases(tmp_path, ROUGH, INIT_THEN_END)
    # The request the rough case sends crashes the broker: it closes the connection and stops listening.
    broker = FakeKafka(lambda api, version, body: DIE if api == "DescribeProducers" else None)
    runner = runner_for(broker)
    assert runner.run(plain, 3).outcome is Outcome.PASSED  # it answered before
    killed = runner.run(rough, None)
    assert killed.outcome is Outcome.FAILED  # a crash is never a pass, though the case saw the disconnect it wanted
    assert killed.message.startswith("the target stopped answering after this case")
    later = [runner.run(plain, 3) for _ in range(5)]
    assert {result.outcome for result in later} == {Outcome.ERROR}
    assert all(result.message.startswith(f"not run: target {broker.address} stopped answering after verdicts::rough")
               for result in later)
    assert all(result.duration_s < 0.1 for result in later)  # no connection attempted


def test_an_implementation_case_after_which_the_target_stops_answering_fails_like_any_crash(tmp_path):
    rough, plain = load_cases(tmp_path, implementation(ROUGH), INIT_THEN_END)
    broker = FakeKafka(lambda api, version, body: DIE if api == "DescribeProducers" else None)
    runner = runner_for(broker)
    assert runner.run(plain, 3).outcome is Outcome.PASSED
    killed = runner.run(rough, None)
    assert killed.requirement.value == "IMPLEMENTATION"
    assert killed.outcome is Outcome.FAILED
    assert killed.message.startswith("the target stopped answering after this case")


@pytest.mark.parametrize("mode, says", [("hang", "no response within"), ("http", "an http server listens on this port"),
                                        ("truncate", "closed the connection")])
def test_a_target_that_does_not_speak_kafka_ends_the_run_after_one_item(tmp_path, mode, says):
    [case] = load_cases(tmp_path, INIT_THEN_END)
    broker = FakeKafka(mode=mode)
    runner = runner_for(broker, timeout=1.0)
    first = runner.run(case, 3)
    assert first.outcome is Outcome.ERROR
    assert first.message.startswith(f"target {broker.address} does not answer like a Kafka broker")
    assert says in first.message.lower()
    rest = [runner.run(case, 3) for _ in range(50)]
    assert {result.outcome for result in rest} == {Outcome.ERROR}
    assert all("not run: " in result.message and result.duration_s < 0.1 for result in rest)


# ------------------------------------------------------------------------------ settings a case relies on
NEEDS_SETTINGS = """\
- id: needs-settings
  title: A case that relies on the broker's transaction timeout limit
  cites: KIP-98
  under_test: {api: InitProducerId, versions: "4"}
  requires: {config: {transaction.max.timeout.ms: {le: 900000}}}
  steps:
    - send: InitProducerId
      fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: "${config.transaction_max_timeout_ms}",
               producer_id: -1, producer_epoch: -1}
      expect: {error_code: NONE}
"""


def broker_settings(settings: dict[str, str], seen: list):
    def handler(api, version, body):
        if api == "DescribeConfigs":
            return {"results": [{"resource_type": 4, "resource_name": "1", "configs": [
                {"name": name, "value": value} for name, value in settings.items()]}]}
        if api == "InitProducerId":
            seen.append(body["transactional_id"] and body["transaction_timeout_ms"])
        return None
    return handler


def test_a_case_reads_the_settings_it_relies_on_from_the_target_and_uses_them(tmp_path):
    seen: list = []
    broker = FakeKafka(broker_settings({"transaction.max.timeout.ms": "600000"}, seen))
    result = run_case(tmp_path, broker, NEEDS_SETTINGS, 4)
    assert result.outcome is Outcome.PASSED, result.message
    assert seen == [600000]


@pytest.mark.parametrize("settings, why", [
    ({"transaction.max.timeout.ms": "3600000"}, "needs transaction.max.timeout.ms le 900000; "),
    ({}, "needs broker setting transaction.max.timeout.ms, which"),
])
def test_a_target_configured_otherwise_skips_the_case_with_the_value_it_has(tmp_path, settings, why):
    seen: list = []
    result = run_case(tmp_path, FakeKafka(broker_settings(settings, seen)), NEEDS_SETTINGS, 4)
    assert result.outcome is Outcome.SKIPPED and result.message.startswith(why)
    assert seen == []  # skipped before its first step


def test_a_failure_on_the_terminal_shows_the_departing_exchange_not_every_negotiation(tmp_path):
    from conformance.report.console.text import render

    result = run_case(tmp_path, FakeKafka(answering({"EndTxn": 48})), INIT_THEN_END, 3)
    brief, full = render(result, brief=True), render(result)
    assert "api_keys" in full and "api_keys" not in brief  # ApiVersions bodies stay in the results file
    assert "ApiVersions exchanges not shown" in brief
    assert '"error_code":48' in brief.replace(" ", "")  # the departing answer, in full
    assert len(brief) < len(full) / 3


def test_verifies_on_an_enclosing_until_blames_the_step_under_test(tmp_path):
    case = """\
    - id: commit-then-wait
      title: TxnOffsetCommit, then waiting for OffsetFetch to show it
      cites: KIP-98
      under_test: {api: TxnOffsetCommit, versions: "3"}
      steps:
        - send: TxnOffsetCommit
          fields: {transactional_id: "${txn_ids.main}", group_id: "${groups.g}", producer_id: 1, producer_epoch: 0}
          expect: {error_code: NONE}
        - until:
            step:
              send: OffsetFetch
              version: 7
              fields: {group_id: "${groups.g}", topics: null}
              expect: {error_code: NONE}
            for_ms: 300
          verifies: true
    """
    result = run_case(tmp_path, FakeKafka(answering({"OffsetFetch": 30})), textwrap.dedent(case), 3)
    assert result.outcome is Outcome.FAILED and result.failure.role == "under_test"


def test_a_coordinator_not_ready_yet_is_asked_again_before_the_step_under_test_is_judged(tmp_path):
    """A retriable coordinator answer (loading, not available, moved) is a legal way to the answer the case
    checks: the step asks again, as a client would, and the verdict is on the answer that follows."""
    answers, given = iter([14, 15, 16, 0]), []  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR, NONE

    def handler(api, version, body):
        if api != "EndTxn":
            return None
        given.append(next(answers))
        return {"error_code": given[-1]}
    broker = FakeKafka(handler)
    try:
        assert run_case(tmp_path, broker, INIT_THEN_END, 3).outcome is Outcome.PASSED
    finally:
        broker.stop()
    assert given == [14, 15, 16, 0]


def test_the_coordinator_retry_is_left_out_where_the_step_expects_those_codes_or_names_its_own():
    step = {"send": "EndTxn", "expect": {"error_code": "NONE"}}
    assert with_coordinator_retry("EndTxn", step)["retry"] == COORDINATOR_RETRY
    assert "retry" not in with_coordinator_retry("Produce", step)  # not a coordinator's API
    assert "retry" not in with_coordinator_retry("EndTxn", {**step, "expect": {"error_code": "NOT_COORDINATOR"}})
    expecting = {"send": "TxnOffsetCommit", "expect": {"fields": {"topics[0].partitions[0].error_code": "COORDINATOR_NOT_AVAILABLE"}}}
    assert "retry" not in with_coordinator_retry("TxnOffsetCommit", expecting)
    own = {**step, "retry": {"on": ["CONCURRENT_TRANSACTIONS"]}}
    assert with_coordinator_retry("EndTxn", own) is own
