"""certify on a broker without transactions (tests/support/small_broker.py): a capabilities file that says so
(``transaction_versions: []``) leaves the transaction levels *not claimed*, and Robust protocol handling, which the
protocol does not tie to transactions, is graded on its own items. The claim is checked against the broker's own
ApiVersions, and a departure is never excused by it: the small broker that closes the connection on ApiVersions v5
misses Robust with the same claims."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from conformance.report.certify.claims import HOLDS
from conformance.resources import suites as bundled_suites

from small_broker import SMALL_BROKER_APIS, small_broker, small_broker_without_transactions

ROOT = Path(__file__).resolve().parents[2]
ROBUST_SUITES = ("kip98/error-paths", "kip98/request-validation", "kip98/edge-cases", "kip98/coordinator-queries",
                 "robustness/malformed-frames", "protocol/produce-fetch")  # the suites Robust protocol handling selects
NO_TRANSACTIONS = {"capabilities": 1, "product": "Small broker", "version": "1.0",
                   "source": "its documentation: no transactions, no CreateTopics",
                   "transaction_versions": [],
                   "apis": {api: f"{low}-{high}" for api, (low, high) in SMALL_BROKER_APIS.items()}}


def certify(broker, tmp_path: Path) -> tuple[dict, str]:
    """certify the Robust suites on ``broker`` with the claims of no transactions: (certification.json, output)."""
    claims = tmp_path / "capabilities.yaml"
    claims.write_text(yaml.safe_dump(NO_TRANSACTIONS), encoding="utf-8")
    out = tmp_path / "cert"
    try:
        done = subprocess.run([sys.executable, "-m", "conformance", "certify", "--target", broker.address,
                               "--claims", str(claims), "-o", str(out),
                               *(str(bundled_suites() / f"{suite}.yaml") for suite in ROBUST_SUITES)],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
    finally:
        broker.stop()
    printed = done.stdout + done.stderr
    found = list(out.glob("*/certification.json"))
    assert found, printed[-3000:]
    return json.loads(found[0].read_text()), printed


def levels_of(facts: dict) -> dict[str, dict]:
    return {level["id"]: level for level in facts["levels"]}


def test_a_broker_without_transactions_reaches_robust_with_claims_that_say_so(tmp_path):
    facts, printed = certify(small_broker_without_transactions(), tmp_path)
    levels = levels_of(facts)
    robust = levels["robust"]
    assert robust["status"] == "reached", (robust, printed[-3000:])
    assert robust["passed"] == robust["counted"] >= 10  # graded on items that passed, not on nothing
    for level in ("idempotent-producer", "transactions", "exactly-once", "transactions-v2",
                  "exactly-once-consumer-groups", "exactly-once-under-faults"):
        assert levels[level]["status"] == "not claimed", levels[level]
    assert any("claims none (transaction_versions: [])" in reason for reason in levels["transactions"]["reasons"])
    # the claim of no transactions is checked against what the broker advertises, and holds
    [claim] = [row for row in facts["claims"]["checks"] if row["claim"] == "transaction_versions: []"]
    assert claim["status"] == HOLDS and claim["detail"] == "advertises no transaction API, as claimed"


def test_the_same_claims_do_not_excuse_a_departure(tmp_path):
    """The small broker closes the connection on ApiVersions v5 where KIP-511 asks for UNSUPPORTED_VERSION in a v0
    body: with the same claims, Robust is missed on that item."""
    facts, printed = certify(small_broker(), tmp_path)
    robust = levels_of(facts)["robust"]
    assert robust["status"] == "missed", (robust, printed[-3000:])
    departures = {item["item"] for item in facts["departures"]}
    assert "robustness.malformed-frames::api-versions-unknown-version" in departures, facts["departures"]
