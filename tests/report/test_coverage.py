"""The error catalogue, its agreement with the bundled suites, and the coverage document built on both."""

from __future__ import annotations

import pytest

from conformance.cli import main
from conformance.report.invocation import default_suites_path
from conformance.protocol.codec import default_codec
from conformance.protocol.error_catalogue import (
    CatalogueError,
    bundled_catalogue,
    codes,
    load_catalogue,
    parse_catalogue,
)
from conformance.report.documents import case_expectations, coverage, coverage_markdown, covered_codes
from conformance.suite.loader import load_suites
from conformance.runner.steps import bundled

COVERAGE_SUITE = """\
suite: demo.coverage
title: Cases for the coverage document
spec: KIP-98
cases:
  - id: end-txn-fenced
    title: A stale epoch is fenced
    cites: "KIP-98: EndTxn from a stale epoch is answered ProducerFenced (InvalidProducerEpoch before version 2)"
    requirement: SHOULD  # the KIP-98 text ties neither code to a stale epoch: not a MUST (the citation lint)
    under_test: {api: EndTxn, versions: "0-3"}
    steps:
      - send: EndTxn
        fields: {transactional_id: "t", producer_id: 1, producer_epoch: 0, committed: true}
        expect: {error_code: {"0-1": INVALID_PRODUCER_EPOCH, "2+": PRODUCER_FENCED}}
  - id: end-txn-odd
    title: A code the catalogue does not know
    cites: "KIP-98: EndTxn answered UNKNOWN_SERVER_ERROR"
    requirement: SHOULD  # no KIP text names the code: not a MUST (the citation lint)
    under_test: {api: EndTxn, versions: "5"}
    steps:
      - send: EndTxn
        fields: {transactional_id: "t", producer_id: 1, producer_epoch: 0, committed: true}
        expect: {error_code: UNKNOWN_SERVER_ERROR}
  - id: end-txn-draft
    title: A draft's expectation covers nothing
    cites: "KIP-98: EndTxn answered InvalidTxnState"
    requirement: SHOULD  # no sentence ties the code (the citation lint)
    draft: true
    under_test: {api: EndTxn}
    steps:
      - send: EndTxn
        fields: {transactional_id: "t", producer_id: 1, producer_epoch: 0, committed: true}
        expect: {error_code: INVALID_TXN_STATE}
"""

COVERAGE_CATALOGUE = """\
EndTxn:
  INVALID_PRODUCER_EPOCH: {versions: "0-1", when: the epoch is stale (old spelling)}
  PRODUCER_FENCED: {versions: "2+", when: the epoch is stale}
  INVALID_TXN_STATE: {when: the state forbids the outcome}
  NOT_COORDINATOR: {when: another broker coordinates the id, local: needs a second broker}
"""


@pytest.fixture(scope="module")
def bundled_suites():
    suites, errors = load_suites([default_suites_path()], components=bundled())
    assert errors == []
    return suites


# ------------------------------------------------------------------------------ the catalogue
def test_bundled_catalogue_covers_every_api_under_test_at_every_version(bundled_suites):
    tested = {case.api for suite in bundled_suites for case in suite.cases if case.api}
    assert tested <= set(bundled_catalogue().apis())
    registry = default_codec().registry
    for api in bundled_catalogue().apis():
        assert all("NONE" in codes(api, version) for version in registry.api(api).versions()), api


@pytest.mark.parametrize(("api", "version", "present", "absent"), [
    ("InitProducerId", 3, "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"),
    ("InitProducerId", 4, "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"),
    ("EndTxn", 1, "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"),
    ("EndTxn", 2, "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"),
    ("Produce", 11, "TRANSACTION_ABORTABLE", "UNSUPPORTED_COMPRESSION_TYPE"),
    ("Produce", 6, "UNSUPPORTED_COMPRESSION_TYPE", "TRANSACTION_ABORTABLE"),
    ("TxnOffsetCommit", 3, "INVALID_TXN_STATE", "TRANSACTION_ABORTABLE"),
    ("TxnOffsetCommit", 1, "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
])
def test_catalogue_follows_the_brokers_version_translations(api, version, present, absent):
    listed = codes(api, version)
    assert present in listed and absent not in listed


def test_catalogue_entries_say_why_the_local_broker_cannot_answer():
    reason = codes("EndTxn", 5)["COORDINATOR_LOAD_IN_PROGRESS"].local
    assert reason.startswith("only while a coordinator loads")
    assert "cluster" in reason and "proxy" in reason  # why neither the cluster's faults nor the proxy reach it
    assert codes("EndTxn", 5)["NOT_COORDINATOR"].triggerable_locally  # on the provisioned cluster (kafka,nodes=3)
    assert codes("EndTxn", 5)["INVALID_TXN_STATE"].triggerable_locally


@pytest.mark.parametrize(("text", "fragments"), [
    ('EndTxn:\n  PRODUCER_FENCED: {versions: "2x", when: stale epoch}', ["EndTxn", "PRODUCER_FENCED", "'2x'"]),
    ('EndTxn:\n  PRODUCER_FENCED: {versions: "9+", when: stale epoch}', ["EndTxn", "PRODUCER_FENCED", "select none"]),
    ("EndTxn:\n  PRODUCER_FENCD: {when: stale epoch}", ["EndTxn", "PRODUCER_FENCD", "did you mean PRODUCER_FENCED"]),
    ("EndTxn:\n  producer_fenced: {when: stale epoch}", ["EndTxn", "producer_fenced", "write the error as PRODUCER_FENCED"]),
    ("EndTxns:\n  NONE: {when: done}", ["EndTxns", "unknown API"]),
    ("EndTxn:\n  NONE: {when: done, lokal: nope}", ["EndTxn", "NONE", "unknown keys lokal"]),
    ("EndTxn:\n  NONE: {local: nope}", ["EndTxn", "NONE", "'when'"]),
])
def test_broken_catalogue_names_the_api_and_the_code(text, fragments):
    with pytest.raises(CatalogueError) as raised:
        parse_catalogue(text)
    assert all(fragment in str(raised.value) for fragment in fragments), str(raised.value)


def test_broken_catalogue_file_names_the_file(tmp_path):
    path = tmp_path / "catalogue.yaml"
    path.write_text('Produce:\n  TRANSACTION_ABORTABLE: {versions: "eleven", when: not added}\n')
    with pytest.raises(CatalogueError, match=r"catalogue\.yaml: Produce TRANSACTION_ABORTABLE: bad version range"):
        load_catalogue(path)


# ------------------------------------------------------------------------------ the catalogue against the suites
def test_every_code_a_case_expects_is_catalogued_for_its_api_and_version(bundled_suites):
    """Cases pass on Kafka, so the codes they expect are codes Kafka answers: each expectation must name
    at least one code the catalogue lists (a list of alternatives may also tolerate other brokers)."""
    registry = default_codec().registry
    missing = []
    for suite in bundled_suites:
        for case in suite.cases:
            if case.api is None or case.draft:  # drafts expect what a KIP proposed, not what Kafka does
                continue
            for version in registry.api(case.api).versions():
                if version not in case.versions:
                    continue
                listed = codes(case.api, version)
                missing += [f"{case.full_id}: {case.api} v{version} expects {'/'.join(sorted(accepted))}"
                            for accepted in case_expectations(case, version, registry) if not accepted & listed.keys()]
    assert missing == []


def test_codes_the_cases_trigger_are_not_marked_out_of_local_reach(bundled_suites):
    contradictions = [f"{api} v{version} {name}"
                      for api, versions in coverage(bundled_suites).items()
                      for version, entry in versions.items() for name in entry["errors"]
                      if name in codes(api, version) and not codes(api, version)[name].triggerable_locally]
    assert contradictions == []


def test_alternatives_cover_the_codes_the_local_broker_can_answer():
    listed = codes("Produce", 5)
    assert covered_codes({"NONE", "DUPLICATE_SEQUENCE_NUMBER"}, listed) == {"NONE"}
    assert covered_codes({"INVALID_TXN_STATE", "REQUEST_TIMED_OUT"}, listed) == {"INVALID_TXN_STATE"}
    assert covered_codes({"DUPLICATE_SEQUENCE_NUMBER"}, listed) == {"DUPLICATE_SEQUENCE_NUMBER"}  # a gap shows


# ------------------------------------------------------------------------------ the document
@pytest.fixture()
def coverage_document(tmp_path):
    (tmp_path / "coverage.yaml").write_text(COVERAGE_SUITE)
    suites, errors = load_suites([tmp_path], components=bundled())
    assert errors == []
    return coverage_markdown(suites, catalogue=parse_catalogue(COVERAGE_CATALOGUE))


def test_coverage_document_summarises_the_combinations(coverage_document):
    # EndTxn v0-5: INVALID_PRODUCER_EPOCH 2, PRODUCER_FENCED 4, INVALID_TXN_STATE 6, NOT_COORDINATOR 6, one extra
    assert ("**19 API × version × error code combinations: 5 covered by a case, 6 cannot be triggered on the "
            "local brokers, 8 not covered yet.** 1 of the covered are missing from the catalogue") in coverage_document


def test_coverage_document_rows_merge_versions_and_give_reasons(coverage_document):
    rows = {line for line in coverage_document.splitlines() if line.startswith("| v")}
    assert rows == {
        "| v0-1 | INVALID_PRODUCER_EPOCH (47) | 1: demo.coverage::end-txn-fenced | covered |",
        "| v2-3 | PRODUCER_FENCED (90) | 1: demo.coverage::end-txn-fenced | covered |",
        "| v4-5 | PRODUCER_FENCED (90) | - | not covered |",
        "| v0-5 | INVALID_TXN_STATE (48) | - | not covered |",  # only the draft case expects it
        "| v0-5 | NOT_COORDINATOR (16) | - | cannot be triggered locally: needs a second broker |",
        "| v5 | UNKNOWN_SERVER_ERROR (-1) | 1: demo.coverage::end-txn-odd | "
        "covered, but **not in the catalogue**: the catalogue is incomplete |",
    }
    assert "Cases with EndTxn under test, per version: v0-3: 2, v4: 1, v5: 2." in coverage_document
    assert "## API versions no case covers" in coverage_document


def test_coverage_command_writes_the_document(tmp_path, capsys):
    (tmp_path / "coverage.yaml").write_text(COVERAGE_SUITE)
    output = tmp_path / "docs" / "coverage.md"
    assert main(["coverage", str(tmp_path / "coverage.yaml"), "-o", str(output)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {output}"
    document = output.read_text()
    assert "API × version × error code combinations" in document
    assert "| v0-1 | INVALID_PRODUCER_EPOCH (47) | 1: demo.coverage::end-txn-fenced | covered |" in document
