"""Capabilities files: what is not claimed is neither failed nor missed, and every claim is checked."""

from __future__ import annotations

import json

import pytest
import yaml
from report_records import result_record as record, write_jsonl

from conformance.cli import main
from conformance.report.certify import claims as claims_module
from conformance.report.certify.claims import (DEPARTING, DOCUMENTED, HOLDS, NOT_ADVERTISED,
                                               NOT_CLAIMED_BUT_ADVERTISED, STALE, UNCHECKED, ClaimsError)
from conformance.report.certify.levels import MISSED, NOT_CLAIMED, REACHED, Level, grade, load_levels
from conformance.protocol.schema import VersionRange

TXN = Level(id="txn", name="Transactions", summary="", suites=("kip98.transactions",), demands={"EndTxn": None})
TV2 = Level(id="tv2", name="Transactions v2", summary="", suites=("kip890.transaction-v2",), includes=("txn",),
            demands={"EndTxn": VersionRange(5, 5)}, features={"transaction.version": 2})
STRICT = Level(id="strict", name="Strict", summary="", requirements=("MUST", "SHOULD", "MAY"), includes=("txn", "tv2"))


def write_claims(tmp_path, **fields):
    data = {"capabilities": 1, "product": "Example", "version": "1.0", "transaction_versions": [0, 1],
            "apis": {"EndTxn": "0-4", "Produce": "3-11"}, **fields}
    path = tmp_path / "capabilities.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return claims_module.load(path)


def fingerprint(apis, transaction_version=None):
    found = {"apis": [{"api_key": index, "name": name, "min": low, "max": high}
                      for index, (name, (low, high)) in enumerate(apis.items())],
             "finalized_features": {}, "supported_features": {}}
    if transaction_version is not None:
        found["supported_features"]["transaction.version"] = [0, transaction_version]
        found["finalized_features"]["transaction.version"] = transaction_version
    return found


def test_items_outside_the_claims_are_not_claimed_neither_failed_nor_missed(tmp_path):
    claims = write_claims(tmp_path)
    rows = [record("commit", 3, "passed"), record("commit", 5, "failed"),  # EndTxn v5: outside EndTxn 0-4
            record("bump", 5, "failed", suite="kip890.transaction-v2")]  # transaction.version 2 not claimed
    grades = grade([TXN, TV2, STRICT], rows, {"transaction.version": 1}, claims=claims)
    status = {one.level.id: one.status for one in grades}
    assert status == {"txn": REACHED, "tv2": NOT_CLAIMED, "strict": REACHED}
    assert grades[0].not_claimed == 1 and grades[0].departures == []
    assert "needs transaction.version ≥ 2; claims [0, 1]" in grades[1].reasons
    assert "includes Transactions v2: not claimed" in grades[2].reasons
    # Without the claims the same results miss both levels: the claims are what changes the grade.
    assert {one.level.id: one.status for one in grade([TXN, TV2], rows, {"transaction.version": 1})} == {
        "txn": MISSED, "tv2": MISSED}


def test_a_claimed_item_that_departs_still_misses_the_level(tmp_path):
    claims = write_claims(tmp_path)
    grades = grade([TXN], [record("commit", 3, "failed")], {}, claims=claims)
    assert grades[0].status == MISSED


def test_each_kind_of_false_claim_is_found(tmp_path):
    claims = write_claims(tmp_path, transaction_versions=[0, 1, 2], kip848_consumer_groups=False,
                          apis={"EndTxn": "0-5", "Produce": "3-11"})
    rows = [record("commit", 3, "failed"), record("commit", 4, "passed"),
            record("dup", 3, "passed", suite="kip98.idempotence", api="Produce")]
    found = fingerprint({"EndTxn": (0, 4), "Produce": (3, 12), "ConsumerGroupHeartbeat": (0, 1)},
                        transaction_version=1)
    checks = {(row["claim"], row["status"]): row for row in claims_module.check(claims, rows, found)}
    assert ("transaction_versions: [0, 1, 2]", NOT_ADVERTISED) in checks  # claims TV2, advertises up to 1
    assert ("apis.EndTxn: 0-5", NOT_ADVERTISED) in checks  # claims v5, advertises v0-4
    assert ("apis.Produce: 3-11", NOT_CLAIMED_BUT_ADVERTISED) in checks  # advertises v12 it does not claim
    assert ("kip848_consumer_groups: false", NOT_CLAIMED_BUT_ADVERTISED) in checks
    departing = checks[("apis.EndTxn: 0-5", DEPARTING)]
    assert departing["items"] == ["kip98.transactions::commit@v3"]


def test_claims_that_hold_and_documented_deviations(tmp_path):
    claims = write_claims(tmp_path, compression=["none", "gzip"], deviations=[
        {"case": "kip98.transactions::commit", "versions": "3", "reason": "answers NONE by design"},
        {"case": "kip98.transactions::never-ran", "reason": "an old note"}])
    rows = [record("commit", 3, "failed"), record("commit", 4, "passed"),
            record("produce-gzip", 3, "passed", suite="protocol.produce-fetch", api="Produce")]
    checks = claims_module.check(claims, rows, fingerprint({"EndTxn": (0, 4), "Produce": (3, 11)}))
    statuses = {(row["claim"], row["status"]) for row in checks}
    assert ("apis.EndTxn: 0-4", HOLDS) in statuses and ("apis.Produce: 3-11", HOLDS) in statuses
    assert ("compression: gzip", HOLDS) in statuses
    assert ("deviation kip98.transactions::commit", DOCUMENTED) in statuses
    assert ("deviation kip98.transactions::never-ran", STALE) in statuses
    # A documented deviation is a waiver where the level allows waivers.
    waiving = Level(id="txn", name="T", summary="", suites=("kip98.transactions",), allow_known_failures=True)
    result = grade([waiving], rows, {}, list(claims.deviations), claims=claims)[0]
    assert result.status == REACHED and result.label == "reached with 1 waived"


# What a broker without transactions advertises (tests/support/small_broker.py), and one that has them.
WITHOUT_TRANSACTIONS = {"ApiVersions": (0, 4), "Produce": (0, 7), "Fetch": (0, 11), "Metadata": (0, 8)}
WITH_TRANSACTIONS = {**WITHOUT_TRANSACTIONS, "InitProducerId": (0, 5), "AddPartitionsToTxn": (0, 3), "EndTxn": (0, 4)}


def claim_rows(claims, rows, advertised) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for row in claims_module.check(claims, rows, fingerprint(advertised)):
        found.setdefault(row["claim"], []).append((row["status"], row["detail"]))
    return found


def test_a_claim_of_no_transactions_is_checked_against_the_brokers_api_versions(tmp_path):
    claims = write_claims(tmp_path, transaction_versions=[], apis={"Produce": "0-7", "Fetch": "0-11"})
    assert not claims.transactions
    unsupported = [record("commit", 3, "unsupported")]
    assert claim_rows(claims, unsupported, WITHOUT_TRANSACTIONS)["transaction_versions: []"] == [
        (HOLDS, "advertises no transaction API, as claimed")]
    # a broker that advertises EndTxn does have transactions: the claim of none is false
    [(status, detail)] = claim_rows(claims, unsupported, WITH_TRANSACTIONS)["transaction_versions: []"]
    assert status == NOT_CLAIMED_BUT_ADVERTISED and detail == ("claims no transactions, but advertises "
                                                              "AddPartitionsToTxn v0-3, EndTxn v0-4")


def test_a_forced_claim_never_holds_on_a_run_with_no_verdict_for_it(tmp_path):
    """A vendor who could not claim no transactions claimed [0]; its broker has none, and every item of them went
    unanswered: the claim is false against the ApiVersions, and nothing says it holds."""
    claims = write_claims(tmp_path, transaction_versions=[0], apis={"EndTxn": "0-4", "Produce": "0-7"})
    no_verdicts = [record("commit", 3, "unsupported"), record("abort", 3, "skipped")]
    found = claim_rows(claims, no_verdicts, WITHOUT_TRANSACTIONS)
    assert found["transaction_versions: [0]"] == [
        (NOT_ADVERTISED, "claims transactions, but advertises no AddPartitionsToTxn and no EndTxn")]
    assert found["apis.EndTxn: 0-4"] == [(NOT_ADVERTISED, "not advertised at all")]
    # advertised as claimed, yet no item got a verdict: not checked, not "holds"
    found = claim_rows(claims, no_verdicts, WITH_TRANSACTIONS)
    assert [status for status, _ in found["transaction_versions: [0]"]] == [UNCHECKED]
    assert found["apis.EndTxn: 0-4"] == [(UNCHECKED, "advertises v0-4 as claimed; no item at a claimed version "
                                                     "passed")]
    # one item passing is a verdict: the claims hold
    found = claim_rows(claims, [*no_verdicts, record("commit", 4, "passed")], WITH_TRANSACTIONS)
    assert [status for status, _ in found["transaction_versions: [0]"]] == [HOLDS]
    assert [status for status, _ in found["apis.EndTxn: 0-4"]] == [HOLDS]


def test_without_transactions_their_levels_are_not_claimed_and_robust_stands_on_its_own(tmp_path):
    claims = write_claims(tmp_path, transaction_versions=[], apis={"Produce": "0-7", "Fetch": "0-11"})
    rows = [record("commit", 3, "unsupported"),  # EndTxn, not advertised
            record("fetch-bad-offset", 4, "passed", suite="kip98.error-paths", api="Fetch"),
            record("end-txn-unknown-id", 3, "unsupported", suite="kip98.error-paths"),
            record("truncated-frame", None, "passed", suite="robustness.malformed-frames", api=None)]
    grades = {one.level.id: one for one in grade(load_levels(), rows, {}, claims=claims)}
    for level in ("idempotent-producer", "transactions", "exactly-once", "transactions-v2",
                  "exactly-once-consumer-groups", "exactly-once-under-faults"):
        assert grades[level].status == NOT_CLAIMED, (level, grades[level].reasons)
    assert "needs transactions (AddOffsetsToTxn, AddPartitionsToTxn, EndTxn, TxnOffsetCommit); claims none " \
           "(transaction_versions: [])" in grades["transactions"].reasons
    robust = grades["robust"]
    # graded on the items it counts (the EndTxn one is outside the claims), not on the Transactions level
    assert (robust.status, robust.passed, robust.counted, robust.not_claimed) == (REACHED, 2, 2, 1), robust.reasons
    # the wire faults' idempotence cases stay claimed, their transactional ones do not
    faults = dict(suite="faults.proxy-kip98", api="Produce")
    assert claims.unclaimed(record("duplicate-batch-after-lost-produce-response", 3, "passed", **faults)) is None
    assert claims.unclaimed(record("transactional-batch-retried-after-lost-response", 3, "passed", **faults)) \
        == "transactions (KIP-98) not claimed"
    # Without claims the transaction levels are missed, and Robust still is not: the protocol does not tie them.
    unclaimed = {one.level.id: one.status for one in grade(load_levels(), rows, {})}
    assert unclaimed["transactions"] == MISSED and unclaimed["robust"] == REACHED


def test_a_level_whose_suites_all_belong_to_a_feature_not_claimed_is_not_claimed_even_unrun(tmp_path):
    """No KIP-848 groups claimed, and the kip848 suites not run: the level of them is not claimed, not "not run"."""
    claims = write_claims(tmp_path, kip848_consumer_groups=False, apis={"TxnOffsetCommit": "0-5", "OffsetFetch": "0-9"})
    level = Level(id="eos-848", name="EOS in KIP-848 groups", summary="", suites=("kip848.*",))
    [result] = grade([level], [record("commit", 3, "passed")], {}, known_suites=["kip848.txn-offset-commit"],
                     claims=claims)
    assert result.status == NOT_CLAIMED and result.reasons == ["its suites (kip848.*) belong to features not claimed"]
    assert grade([level], [record("commit", 3, "passed")], {}, known_suites=["kip848.txn-offset-commit"])[0].status \
        == "not run"


def test_no_transactions_with_transaction_apis_claimed_is_refused(tmp_path):
    with pytest.raises(ClaimsError, match=r"capabilities.yaml: transaction_versions: \[\] claims no transactions, "
                                          r"but apis names EndTxn: remove them"):
        write_claims(tmp_path, transaction_versions=[], apis={"EndTxn": "0-4", "Produce": "0-7"})


def test_a_malformed_capabilities_file_names_the_file_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("capabilities: 1\nproduct: X\ntransaction_versions: [0, 7]\napis: {}\n")
    with pytest.raises(ClaimsError, match=r"bad.yaml:3: transaction_versions\[1\]: 7 is greater than the maximum"):
        claims_module.load(path)
    path.write_text("capabilities: 1\nproduct: X\ntransaction_versions: [0]\napis: {EndTxn: 'v5'}\n")
    with pytest.raises(ClaimsError, match=r"bad.yaml:4: apis.EndTxn: 'v5' does not match"):
        claims_module.load(path)


def test_init_writes_a_template_that_loads_and_refuses_to_overwrite(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    assert main(["certify", "--init", str(path)]) == 0
    loaded = claims_module.load(path)
    assert loaded.apis["InitProducerId"] == VersionRange(0, 5) and not loaded.two_phase_commit
    assert main(["certify", "--init", str(path)]) == 2
    assert "exists; not overwritten" in capsys.readouterr().err


def test_the_shipped_capability_files_load():
    from conformance.resources import source_tree

    for name in ("tansu", "rdkafka-mock"):
        loaded = claims_module.load(source_tree() / "fixtures" / "capabilities" / f"{name}.yaml")
        assert loaded.product and loaded.source


API_VERSIONS = {"api": "ApiVersions", "version": 4, "step": "negotiate", "response": {
    "error_code": 0, "api_keys": [{"api_key": 26, "min_version": 0, "max_version": 4}],
    "supported_features": [{"name": "transaction.version", "min_version": 0, "max_version": 2}],
    "finalized_features": [{"name": "transaction.version", "min_version_level": 2, "max_version_level": 2}]}}


def test_certify_with_claims_shows_them_on_the_page_and_in_the_json(tmp_path):
    rows = [record("commit", 3, "passed", transcript=[API_VERSIONS]), record("commit", 4, "passed"),
            record("bump", 5, "failed", suite="kip890.transaction-v2")]
    results = write_jsonl(tmp_path / "r.jsonl", rows)
    capabilities = tmp_path / "c.yaml"
    capabilities.write_text(yaml.safe_dump({"capabilities": 1, "product": "Example", "transaction_versions": [0, 1],
                                            "apis": {"EndTxn": "0-4"}}))
    out = tmp_path / "cert"
    assert main(["certify", "--results", str(results), "--claims", str(capabilities), "-o", str(out)]) == 0
    facts = json.loads((next(out.glob("kafka-*")) / "certification.json").read_text())
    assert facts["departures"] == []  # the only departure lies outside the claims
    assert facts["claims"]["not_claimed_items"] == ["kip890.transaction-v2::bump@v5"]
    assert facts["claims"]["departures_not_claimed"][0]["item"] == "kip890.transaction-v2::bump@v5"
    by_id = {level["id"]: level["status"] for level in facts["levels"]}
    assert by_id["transactions-v2"] == NOT_CLAIMED
    # the fingerprint advertises transaction.version 0-2: TV2 is advertised but not claimed
    assert any(row["status"] == NOT_CLAIMED_BUT_ADVERTISED and row["claim"].startswith("transaction_versions")
               for row in facts["claims"]["checks"])
    html = (next(out.glob("kafka-*")) / "index.html").read_text()
    assert "<h2 id='claims'>Claims (" in html and "transaction.version 2 (KIP-890) not claimed" in html
