"""A code or a refusal no sentence demands is not a MUST: the loader's check of citations, the
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
        control: {fields: {producer_id: 1}}  # a refusal needs its positive control (conformance/suite/controls.py)
        expect: EXPECT
"""


# Sentences of the KIP-98 text (the lint checks quotes of it against it): one that demands no refusal, one that does
NO_REFUSAL = '"KIP-98, EndTxnRequest: EndTxnRequest => TransactionalId PID Epoch Command"'
REFUSAL = '"KIP-98: Any other transactional messages will report an error if initialization was not performed"'
TIMEOUT = ('"KIP-98, transaction.timeout.ms: If this value is larger than the max.transaction.timeout.ms setting in '
           'the broker, the request will fail with a `InvalidTransactionTimeout` error."')


def load(tmp_path, cites: str, expect: str):
    path = tmp_path / "cited.yaml"
    path.write_text(textwrap.dedent(CASE).replace("CITES", cites).replace("EXPECT", expect))
    return load_suite_file(path, components=bundled())


def test_a_must_of_an_exact_code_needs_a_citation_that_names_it(tmp_path):
    _, errors = load(tmp_path, NO_REFUSAL, "{error_code: INVALID_PRODUCER_ID_MAPPING}")
    assert [error.key for error in errors] == ["cases[0].steps[0].expect.error_code"], errors
    assert "kafka_code" in errors[0].message
    assert load(tmp_path, '"INVALID_PRODUCER_ID_MAPPING when unmapped"', "{error_code: INVALID_PRODUCER_ID_MAPPING}")[1] == []


def test_a_code_the_kip_only_lists_is_not_tied_to_the_condition(tmp_path):
    """An audit of independent brokers: end-txn-never-initialised and three more demanded INVALID_PRODUCER_ID_MAPPING citing
    KIP-98, whose text names InvalidPidMapping only in the lists of the responses' codes; a broker refusing with
    UNKNOWN_PRODUCER_ID failed. Listed is not tied: the MUST is the refusal, Kafka's code its twin."""
    listed = '"KIP-98, EndTxnResponse error codes: InvalidPidMapping"'
    _, errors = load(tmp_path, listed, "{error_code: INVALID_PRODUCER_ID_MAPPING}")
    assert [error.key for error in errors] == ["cases[0].steps[0].expect.error_code"], errors
    assert "only among a response's codes" in errors[0].message and "refused: true" in errors[0].message
    assert load(tmp_path, listed, "{refused: true, kafka_code: INVALID_PRODUCER_ID_MAPPING}")[1] == []
    # a sentence of the text that ties a code to its condition (kip_facts.CONDITIONED) keeps the exact code a MUST
    assert load(tmp_path, TIMEOUT, "{error_code: INVALID_TRANSACTION_TIMEOUT}")[1] == []


def test_a_quote_must_be_in_the_cited_kips_text(tmp_path):
    """An audit of independent brokers: add-partitions-unknown-topic quoted "the request fails if any partition is unknown", which
    KIP-98 does not say. A MUST of a code or a refusal quoting a KIP the project has the text of is checked against
    it, whitespace, quote marks and case aside; a KIP without a text here is not judged."""
    _, errors = load(tmp_path, '"KIP-98, AddPartitionsToTxnRequest: the request fails if any partition is unknown"',
                     "{refused: true}")
    assert [error.key for error in errors] == ["cases[0].cites"], errors
    assert "'the request fails if any partition is unknown' is not in the text of KIP-98" in errors[0].message
    assert errors[0].line == 8
    real = ('"KIP-98: Any other transactional messages will report an  error\\nif \\u201cinitialization\\u201d '
            'was not performed"')
    assert load(tmp_path, real, "{refused: true}")[1] == []
    assert load(tmp_path, '"KIP-98: Any other transactional messages will report an error ... was not performed"',
                "{refused: true}")[1] == []
    assert load(tmp_path, '"KIP-890: the request fails if any partition is unknown"', "{refused: true}")[1] == []
    # a MUST that demands no refusal is held to it too (test_a_must_of_anything_quotes_its_kip); a SHOULD is not
    assert [error.key for error in load(tmp_path, '"KIP-98: the request fails if any partition is unknown"',
                                        "{error_code: NONE}")[1]] == ["cases[0].cites"]


def test_a_quote_of_kip_447_must_be_in_its_draft_or_fetch_offset_revision(tmp_path):
    """The third audit of independent brokers: 16 of 19 KIP-447 quotes in the suites were paraphrases of the adopted design
    ("a zombie producer ... gets ILLEGAL_GENERATION"), which neither KIP-447 text here has. Both texts are
    fingerprinted now: a paraphrase is refused, a sentence of the draft or of the revision passes."""
    paraphrase = '"KIP-447: a zombie producer whose consumer has been fenced by a rebalance is refused"'
    _, errors = load(tmp_path, paraphrase, "{refused: true}")
    assert [error.key for error in errors] == ["cases[0].cites"], errors
    assert "is not in the text of KIP-447" in errors[0].message
    draft = ('"KIP-447 (draft): Once the coordinator observes a generation bump for a group, it will refuse to handle '
             'requests from the previous generation"')
    assert load(tmp_path, draft, "{refused: true}")[1] == []
    revision = ('"KIP-447 revision: The proposed solution is to reject FetchOffset request by sending out '
                'PendingTransactionException to new client when there is pending transactional offset commits"')
    assert load(tmp_path, revision, "{refused: true}")[1] == []
    # a code the KIP-447 texts never name is no MUST of an exact code citing them
    _, errors = load(tmp_path, draft, "{error_code: ILLEGAL_GENERATION}")
    assert "ILLEGAL_GENERATION is named nowhere in the text of KIP-447" in errors[0].message
    # the revision ties COORDINATOR_LOAD_IN_PROGRESS to old consumers: quoting that condition keeps the code a MUST
    old = ('"KIP-447 revision: Since it would be an unknown exception for old consumers, we will choose to send a '
           'COORDINATOR_LOAD_IN_PROGRESS exception to let it retry"')
    assert load(tmp_path, old, "{error_code: COORDINATOR_LOAD_IN_PROGRESS}")[1] == []


def test_codes_in_response_fields_by_request_version_are_held_to_the_same_rules(tmp_path):
    """The third audit of independent brokers: OffsetFetch MUSTs wrote their codes per version ({"2-7": {error_code: ...},
    "8+": {"groups[0].error_code": ...}}), which the lint did not look into, so their paraphrased KIP-447 quotes
    went unjudged."""
    by_version = '{fields: {"3": {"error_code": UNKNOWN_TOPIC_OR_PARTITION}}}'  # a code KIP-98 never names
    _, errors = load(tmp_path, NO_REFUSAL, by_version)
    assert "cases[0].steps[0].expect.fields.3.error_code" in [error.key for error in errors], errors
    _, errors = load(tmp_path, '"KIP-447: OffsetFetch returns the offsets to principals allowed"', by_version)
    assert "cases[0].cites" in [error.key for error in errors], errors


def test_a_must_refusal_needs_a_sentence_that_demands_one(tmp_path):
    _, errors = load(tmp_path, NO_REFUSAL, "{refused: true}")
    assert [error.key for error in errors] == ["cases[0].steps[0].expect.refused"], errors
    assert load(tmp_path, REFUSAL, "{refused: true}")[1] == []


def test_kafka_code_beside_a_refusal_makes_the_implementation_twin(tmp_path):
    suite, errors = load(tmp_path, REFUSAL,
                         "{refused: true, kafka_code: INVALID_PRODUCER_ID_MAPPING}")
    assert not errors, errors
    must, twin = suite.cases
    assert (must.requirement, must.steps[0]["expect"]["refused"]) == (Requirement.MUST, True)
    assert twin.id == "end-txn-unknown-kafka-answer" and twin.requirement is Requirement.IMPLEMENTATION
    assert twin.steps[0]["expect"] == {"error_code": "INVALID_PRODUCER_ID_MAPPING"}


def test_kafka_fields_beside_a_refusal_in_a_field_makes_the_twin_expect_kafkas_value_there(tmp_path):
    """A refusal judged in a field (a partition's code) has its Kafka-answer twin written the same way as one judged in
    the error code: on the MUST's step, the loader making the twin (no hand-written `-kafka-answer` case beside it)."""
    by_version = ('{fields: {"3": {"error_code": {ne: NONE}}}, '
                  'kafka_fields: {"3": {"error_code": INVALID_PRODUCER_ID_MAPPING, "throttle_time_ms": 0}}}')
    suite, errors = load(tmp_path, REFUSAL, by_version)
    assert not errors, errors
    must, twin = suite.cases
    assert "kafka_fields" in must.steps[0]["expect"]  # the MUST itself judges only its own fields (the runner reads no kafka_*)
    assert twin.id == "end-txn-unknown-kafka-answer" and twin.requirement is Requirement.IMPLEMENTATION
    assert twin.steps[0]["expect"] == {"fields": {"3": {"error_code": "INVALID_PRODUCER_ID_MAPPING", "throttle_time_ms": 0}}}
    _, errors = load(tmp_path, REFUSAL, '{fields: {"3": {"error_code": {ne: NONE}}}, kafka_fields: {"error_code": INVALID_REQUEST}}')
    assert [error.key for error in errors] == ["cases[0].steps[0].expect.kafka_fields"], errors
    assert "by request version where fields is" in errors[0].message
    _, errors = load(tmp_path, REFUSAL, '{fields: {"error_code": {ne: NONE}}, kafka_fields: {"error_code": NO_SUCH_CODE}}')
    assert any("NO_SUCH_CODE" in error.message for error in errors), errors


def test_the_twin_runs_only_at_the_versions_its_steps_with_kafkas_code_run_at():
    """A case whose refusal holds at some versions (when: {versions: "0-4"}) and another step at the others: its twin
    at the other versions would be the MUST again, so it has only the refusal's versions."""
    from conformance.protocol.schema import VersionRange
    from conformance.suite.citations import twin_versions
    from conformance.suite.when import parse

    refusal = {"send": "TxnOffsetCommit", "when": parse({"versions": "0-4"}), "expect": {"refused": True, "kafka_code": "X"}}
    later = {"send": "TxnOffsetCommit", "when": parse({"versions": "5+"}), "expect": {"error_code": "NONE"}}
    assert twin_versions([refusal, later], VersionRange.parse("0+")) == VersionRange.parse("0-4")
    assert twin_versions([refusal, later], VersionRange.parse("2-3")) == VersionRange.parse("2-3")
    everywhere = {**refusal, "when": None}
    assert twin_versions([everywhere, later], VersionRange.parse("0+")) == VersionRange.parse("0+")


# The one twin still written by hand: its MUST names no API under test (one item, at the version a client picks),
# while Kafka's code is measured at each Fetch version that carries an isolation level (4+).
HAND_WRITTEN_TWINS_LEFT = ["robustness/malformed-frames.yaml::invalid-isolation-level-kafka-answer"]


def test_no_bundled_suite_writes_a_kafka_answer_twin_by_hand():
    """One way to write a twin: kafka_code or kafka_fields beside the MUST's expectation, which tools/twin_codes.py
    checks against what Kafka sends; a hand-written `<id>-kafka-answer` case is the loader's own id."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2] / "suites"
    written = [f"{path.relative_to(root)}::{case['id']}" for path in sorted(root.rglob("*.yaml"))
               for case in (yaml.safe_load(path.read_text()) or {}).get("cases") or []
               if str(case.get("id", "")).endswith("-kafka-answer")]
    assert written == HAND_WRITTEN_TWINS_LEFT, written


def test_a_refusal_with_another_code_passes_and_only_differs_from_kafka():
    """Before the audits of independent brokers the bundled case was a MUST of FETCH_SESSION_ID_NOT_FOUND, which no sentence ties to an
    unknown session: a broker refusing with another code failed it."""
    def run(case_id):
        # it refuses the unknown session only: a full fetch outside any session (the positive control) is served
        broker = FakeKafka(lambda api, version, body: {"error_code": 71 if body.get("session_id") else 0, "responses": []}
                           if api == "Fetch" else None)
        return run_on(broker, bundled_case("kip98/error-paths.yaml", case_id), 12)

    assert run("fetch-unknown-session").outcome is Outcome.PASSED  # INVALID_FETCH_SESSION_EPOCH: a refusal
    assert run("fetch-unknown-session-kafka-answer").outcome is Outcome.DIFFERS


# ------------------------------------------------------------------ the citation against the cited KIP's text

PARTITION_CASE = """\
suite: cited
title: Citations
spec: KIP-98
topics: {out: {partitions: 1}}
transactional_ids: [main]
cases:
  - id: add-partition-out-of-range
    title: Adding a partition the topic does not have is refused
    cites: CITES
    under_test: {api: AddPartitionsToTxn, versions: "0-3"}
    steps:
      - send: AddPartitionsToTxn
        fields: {v3_and_below_transactional_id: "${txn_ids.main}", v3_and_below_producer_id: 1,
                 v3_and_below_producer_epoch: 0, v3_and_below_topics: [{name: "${topics.out}", partitions: [99]}]}
        expect: {fields: {"results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code": CODE}}
"""


def load_partition_case(tmp_path, cites: str, code: str = "UNKNOWN_TOPIC_OR_PARTITION"):
    path = tmp_path / "cited.yaml"
    path.write_text(PARTITION_CASE.replace("CITES", cites).replace("CODE", code))
    return load_suite_file(path, components=bundled())


def test_a_code_the_cited_kip_never_names_is_refused_even_in_a_response_field(tmp_path):
    """An audit of independent brokers: add-partition-out-of-range demanded UNKNOWN_TOPIC_OR_PARTITION citing KIP-98's
    AddPartitionsToTxn errors, which do not include it: the old lint read only ``cites`` and let it through."""
    _, errors = load_partition_case(tmp_path, '"KIP-98, AddPartitionsToTxnRequest errors: UnknownTopicOrPartition"')
    assert [error.key for error in errors] == [
        "cases[0].steps[0].expect.fields.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code"]
    assert "named nowhere in the text of KIP-98" in errors[0].message and errors[0].line == 15
    # a code KIP-98 names only in a list is not tied (the next rule); another source quoting the code passes, and
    # so does a KIP the project has no text of
    _, errors = load_partition_case(tmp_path, '"KIP-98, AddPartitionsToTxnResponse errors: InvalidTxnState"',
                                    "INVALID_TXN_STATE")
    assert len(errors) == 1 and "only among a response's codes" in errors[0].message
    assert load_partition_case(tmp_path, '"KIP-98, AddPartitionsToTxnRequest; Kafka protocol guide, '
                               'UNKNOWN_TOPIC_OR_PARTITION: this server does not host this topic-partition"')[1] == []
    assert load_partition_case(tmp_path, '"KIP-890: UNKNOWN_TOPIC_OR_PARTITION for a partition not in the topic"')[1] == []
    # a refusal without a code is not a code the text must name
    assert load_partition_case(tmp_path, REFUSAL, "{ne: NONE}")[1] == []


def test_an_error_the_kip_ties_to_one_condition_is_no_must_for_another(tmp_path):
    """KIP-98 ties InvalidTransactionTimeout to a timeout above the maximum only: a MUST refusal of a zero
    timeout citing it (init-producer-id-timeout-zero before the audits of independent brokers) is refused; quoting the condition passes."""
    expect = "{refused: true}"
    _, errors = load(tmp_path, '"KIP-98, InitPidResponse error codes: InvalidTransactionTimeout"', expect)
    assert [error.key for error in errors] == ["cases[0].steps[0].expect.refused"], errors
    assert "ties INVALID_TRANSACTION_TIMEOUT to one condition" in errors[0].message and "SHOULD" in errors[0].message
    _, errors = load(tmp_path, '"KIP-98: InvalidTransactionTimeout"', "{error_code: INVALID_TRANSACTION_TIMEOUT}")
    assert [error.key for error in errors] == ["cases[0].steps[0].expect.error_code"], errors
    assert load(tmp_path, TIMEOUT, expect)[1] == []


def test_codes_that_differ_by_version_need_the_text_of_the_version_rule(tmp_path):
    """txn-offset-commit-fenced demanded INVALID_PRODUCER_EPOCH at v0-1 and either code from v2 citing KIP-98,
    which predates those versions: the split is KIP-588's rule. A MUST of the same codes at every version with
    Kafka's split in kafka_code passes, and so does a citation naming the version rule."""
    split = '{error_code: {"0-1": INVALID_PRODUCER_EPOCH, "2+": [INVALID_PRODUCER_EPOCH, PRODUCER_FENCED]}}'
    _, errors = load(tmp_path, '"KIP-98, EndTxnRequest errors: ProducerFenced"', split)
    assert {error.key for error in errors} == {"cases[0].steps[0].expect.error_code"}, errors
    assert any("differ between request versions" in error.message for error in errors)  # and KIP-98 only lists them
    assert load(tmp_path, '"KIP-98, EndTxnRequest errors: ProducerFenced; Kafka\'s message spec, EndTxnResponse: '
                          'Version 2 adds the support for new error code PRODUCER_FENCED"', split)[1] == []
    fenced = '"KIP-609, beginTransaction: @throws ProducerFencedException if another producer with the same transactional.id is active"'
    suite, errors = load(tmp_path, fenced,
                         '{error_code: [INVALID_PRODUCER_EPOCH, PRODUCER_FENCED], kafka_code: {"0-1": '
                         'INVALID_PRODUCER_EPOCH, "2+": PRODUCER_FENCED}}')
    assert not errors, errors
    must, twin = suite.cases
    assert must.steps[0]["expect"]["error_code"] == ["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"]
    assert twin.requirement is Requirement.IMPLEMENTATION
    assert twin.steps[0]["expect"] == {"error_code": {"0-1": "INVALID_PRODUCER_EPOCH", "2+": "PRODUCER_FENCED"}}


SWITCH_CASE = """\
suite: switched
title: Switchable behaviour
spec: KIP-890
topics: {out: {partitions: 1}}
transactional_ids: [main]
cases:
  - id: produce-to-partition-not-added
    title: A transactional Produce to a partition that was not added is refused
    cites: "KIP-890: prevent these records from being written: the partition leader verifies the partition is in the transaction"
    REQUIREMENT
    under_test: {api: Produce, versions: "3-11"}
    steps:
      - use: txn.init
        with: {txn: "${txn_ids.main}"}
      - produce: {topic: "${topics.out}", partition: 0, records: 1}  # the positive control a refusal needs
      - produce: {topic: "${topics.out}", partition: 0, transactional_id: "${txn_ids.main}", producer_id: "${pid}",
                  producer_epoch: "${epoch}", records: 1}
        expect: {refused: REFUSED}
"""


def load_switch_case(tmp_path, requirement: str = "", refused: str = "true"):
    path = tmp_path / "switched.yaml"
    path.write_text(SWITCH_CASE.replace("REQUIREMENT", requirement or "tags: [kip890]").replace("REFUSED", refused))
    return load_suite_file(path, components=bundled())


def test_a_must_refusal_by_behaviour_kafka_can_switch_off_requires_the_setting(tmp_path):
    """KIP-890's verification is turned off by transaction.partition.verification.enable: the MUST holds except on
    a broker that reports it off (requires: switch), which the loader insists on; SHOULD, IMPLEMENTATION and a
    refusal judged by its effect are not held to it."""
    _, errors = load_switch_case(tmp_path)
    assert [error.key for error in errors] == ["cases[0].requires"], errors
    assert "transaction.partition.verification.enable" in errors[0].message
    suite, errors = load_switch_case(tmp_path, "requires: {switch: {transaction.partition.verification.enable: true}}")
    assert not errors and suite.cases[0].requires_switch == {"transaction.partition.verification.enable": True}
    assert load_switch_case(tmp_path, "requirement: IMPLEMENTATION")[1] == []
    assert load_switch_case(tmp_path, "requirement: SHOULD")[1] == []


def test_refused_or_no_effect_by_behaviour_kafka_can_switch_off_requires_the_setting_too(tmp_path):
    """no-hanging-transaction-after-refusal (refused or no effect) lacked the switch its siblings have: with
    verification off, Kafka appends the write, which is the effect the case fails on."""
    path = tmp_path / "switched.yaml"
    text = SWITCH_CASE.replace("REQUIREMENT", "tags: [kip890]").replace("REFUSED", "or_no_effect") + (
        "      - fetch: {topic: \"${topics.out}\", partition: 0, offset: 0}\n"
        "        expect: {records: 0}\n"
        "        verifies: true\n")
    path.write_text(text)
    errors = load_suite_file(path, components=bundled())[1]
    assert [error.key for error in errors] == ["cases[0].requires"], errors
    path.write_text(text.replace("tags: [kip890]", "requires: {switch: {transaction.partition.verification.enable: true}}"))
    assert load_suite_file(path, components=bundled())[1] == []
    assert bundled_case("kip890/transaction-v2.yaml", "no-hanging-transaction-after-refusal").requires_switch == {
        "transaction.partition.verification.enable": True}


def test_every_bundled_must_refusal_by_kip890_verification_requires_the_setting():
    """The bundled suites keep the rule (the loader refuses them otherwise): the Produce v3-11 case is skipped,
    naming the setting, on a broker that reports it off."""
    case = bundled_case("kip890/transaction-v2.yaml", "produce-to-partition-not-added")
    assert case.requires_switch == {"transaction.partition.verification.enable": True}
    assert 3 in case.versions and 11 in case.versions and 12 not in case.versions
    later = bundled_case("kip890/transaction-v2.yaml", "produce-v12-adds-the-partition")
    assert not later.requires_switch and 12 in later.versions and 11 not in later.versions


def test_any_error_is_a_refusal_that_needs_a_sentence_too(tmp_path):
    """``error_code: {ne: NONE}`` demands a refusal as ``refused: true`` does, on every version or some."""
    for expect in ("{error_code: {ne: NONE}}", '{error_code: {"0-2": NONE, "3+": {ne: NONE}}}'):
        _, errors = load(tmp_path, NO_REFUSAL, expect)
        assert [error.key for error in errors] == ["cases[0].steps[0].expect.error_code"], errors
        assert load(tmp_path, REFUSAL, expect)[1] == []


def test_a_boolean_setting_reported_as_text_meets_a_requirement_written_as_yaml_true():
    """DescribeConfigs reports every value as text; the case writes ``true``: Kafka's 'true' must meet it (before,
    the Produce v3-11 verification case was skipped on Kafka itself: "expected True, got 'true'")."""
    from conformance.runner import broker_config

    setting = "transaction.partition.verification.enable"
    assert broker_config.check({setting: True}, {setting: "true"}, "kafka") == {setting.replace(".", "_"): True}
    try:
        broker_config.check({setting: True}, {setting: "false"}, "a broker")
    except broker_config.ConfigUnmet as unmet:
        assert "has False" in str(unmet)
    else:
        raise AssertionError("a broker reporting verification off meets a requirement of it on")


def test_a_step_under_test_inside_parallel_branches_is_held_to_the_same_rules(tmp_path):
    """The KIP-890 fault-proxy cases sent their step under test in a parallel branch, which the lint never
    looked into: three MUSTs of Kafka's exact codes that no sentence names passed it."""
    path = tmp_path / "parallel.yaml"
    path.write_text(textwrap.dedent(CASE).replace("CITES", NO_REFUSAL).replace(
        """    steps:
      - send: EndTxn""", """    steps:
      - parallel:
        - - wait: 10
        - - send: EndTxn""").replace("        fields: {transactional_id", "            fields: {transactional_id").replace(
        "        control: {fields:", "            control: {fields:").replace(
        "        expect: EXPECT", "            expect: {error_code: INVALID_PRODUCER_ID_MAPPING}"))
    _, errors = load_suite_file(path, components=bundled())
    assert [error.key for error in errors] == ["cases[0].steps[0].parallel[1][0].expect.error_code"], errors


VERIFICATION = "transaction.partition.verification.enable"


def verification_broker(value: str | None) -> FakeKafka:
    """A broker that accepts every transactional write (it does not verify partitions) and reports the
    verification setting as ``value`` (None: does not report it)."""
    def handler(api, version, body):
        if api == "DescribeConfigs":
            configs = [] if value is None else [{"name": VERIFICATION, "value": value, "read_only": False,
                                                 "is_default": False, "config_source": 5, "is_sensitive": False,
                                                 "synonyms": [], "config_type": 1, "documentation": None}]
            return {"throttle_time_ms": 0, "results": [{"error_code": 0, "error_message": None, "resource_type": 4,
                                                        "resource_name": "0", "configs": configs}]}
        if api == "Produce":
            return {"responses": [{"name": topic["name"], "partition_responses": [
                {"index": part["index"], "error_code": 0, "base_offset": 0} for part in topic["partition_data"]]}
                for topic in body["topic_data"]]}
        return None
    return FakeKafka(handler)


def test_switchable_verification_is_judged_except_on_a_broker_that_reports_it_off():
    """Before the audits of independent brokers, produce-to-partition-not-added failed every broker that accepts the write, though Kafka
    itself accepts it with verification turned off. Now a broker that reports the setting off is skipped, naming
    it; one that reports it on, or has no such setting (no way to turn the behaviour off), and accepts the write
    fails."""
    case = bundled_case("kip890/transaction-v2.yaml", "produce-to-partition-not-added")
    off = run_on(verification_broker("false"), case, 3)
    assert off.outcome is Outcome.SKIPPED and f"{VERIFICATION}=false" in off.message
    unreported = run_on(verification_broker(None), case, 3)
    assert unreported.outcome is Outcome.FAILED and "ne NONE" in unreported.message
    on = run_on(verification_broker("true"), case, 3)
    assert on.outcome is Outcome.FAILED and "ne NONE" in on.message


def test_a_must_of_anything_quotes_its_kip(tmp_path):
    """52 MUSTs of fields, records and markers paraphrased KIP-98 ("the LSO is the high watermark when no transaction
    is open", which its text never says), and only MUSTs of a code or a refusal had their quotes checked."""
    path = tmp_path / "fields.yaml"
    text = textwrap.dedent(CASE).replace("        control: {fields: {producer_id: 1}}  # a refusal needs its positive control (conformance/suite/controls.py)\n", "")
    path.write_text(text.replace("CITES", '"KIP-98: the LSO is the high watermark when no transaction is open"').replace(
        "EXPECT", "{fields: {producer_id: 99}}"))
    _, errors = load_suite_file(path, components=bundled())
    assert [error.key for error in errors] == ["cases[0].cites"], errors
    assert "is not in the text of KIP-98" in errors[0].message
    path.write_text(text.replace("CITES", NO_REFUSAL).replace("EXPECT", "{fields: {producer_id: 99}}"))
    assert load_suite_file(path, components=bundled())[1] == []
