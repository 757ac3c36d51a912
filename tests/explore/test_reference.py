"""Which departures the explorer keeps as findings once their cases ran on the reference, and which it holds back."""

from __future__ import annotations

import yaml

from conformance import ledger
from conformance.explore.reference import SAME_DEMAND, judge, reference_for
from conformance.resources import suites


def test_the_bundled_cases_a_rule_is_matched_with_exist():
    bundled = set()
    for path in suites().rglob("*.yaml"):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(document, dict):
            bundled |= {f"{document['suite']}::{case['id']}" for case in document.get("cases", [])}
    named = {case for cases in SAME_DEMAND.values() for case in cases}
    assert named <= bundled
    assert named & {case for bug in ledger.bugs() for case in bug.cases}  # the ledger names its bugs by them


def test_a_departure_that_passes_on_the_reference_is_kept_where_the_ledger_names_its_bug():
    kept = judge("produce.partition-in-transaction", "Produce", release="3.5.2", target="kafka:3.5.2",
                 on_reference="passed")
    assert kept.kept and kept.known_bug.startswith("KAFKA-14402")


def test_a_departure_on_a_kafka_release_where_the_ledger_names_no_bug_is_held_back():
    held = judge("produce.partition-in-transaction", "Produce", release="4.0.0", target="kafka:4.0.0",
                 on_reference="passed")
    assert not held.kept and "names no bug of 4.0.0" in held.reason
    held = judge("fenced.refused", "TxnOffsetCommit", release="4.2.0", target="kafka:4.2.0", on_reference="passed")
    assert not held.kept  # KAFKA-15449's class, but the ledger has it fixed in 3.7.0


def test_a_case_that_fails_on_the_reference_too_is_held_back():
    held = judge("refused.not-written", "Fetch", release="4.0.0", target="kafka:4.0.0", on_reference="failed")
    assert not held.kept and "fails on the reference" in held.reason
    held = judge("produce.sequence", "Produce", release=None, target="rdkafka-mock", on_reference="failed")
    assert not held.kept


def test_another_implementation_is_judged_by_the_reference_alone_and_no_case_run_is_no_finding():
    assert judge("produce.sequence", "Produce", release=None, target="rdkafka-mock", on_reference="passed").kept
    for outcome in (None, "error", "blocked", "skipped"):
        assert not judge("produce.partition-in-transaction", "Produce", release="3.5.2", target="kafka:3.5.2",
                         on_reference=outcome).kept


def test_the_reference_has_the_proxy_and_the_nodes_the_explored_target_has():
    assert reference_for("kafka:3.5.2") == "kafka:4.4.0"
    assert reference_for("proxy+kafka:3.9.1,nodes=3") == "proxy+kafka:4.4.0,nodes=3"
    assert reference_for("kafka:4.0.0,nodes=3,transaction.version=1") == "kafka:4.4.0,nodes=3,transaction.version=1"
    assert reference_for("tansu") == "kafka:4.4.0"
