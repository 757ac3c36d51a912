"""The exactly-once tier end to end: real clients under real faults, on Apache Kafka and on implementations
whose departures it must find."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.results.store import read_lines
from conformance.semantic.checks import CHECKS

# A known Kafka bug (below) is a warning shown in the summary, not an error as other warnings are (pyproject.toml).
pytestmark = [pytest.mark.broker,
              pytest.mark.filterwarnings("default:.*a known Kafka bug made checks depart")]

CHECK_IDS = {check.id for check in CHECKS}


def semantic(tmp_path, target: str, seconds: int, *extra: str) -> tuple[int, dict[str, dict]]:
    results = tmp_path / "results.jsonl"
    status = main(["semantic", "--target", target, "--duration", str(seconds), "--fault-interval", "4",
                   "--results", str(results), "--histories", str(tmp_path / "histories"), "--seed", "7", *extra])
    return status, {row["case"]: row for row in read_lines(results)}


@pytest.mark.parametrize("target, fault", [
    ("kafka", "restart"), ("kafka,nodes=3", "kill_node"),
    # the clients reach the only listener the target hands out, SASL_SSL, with the properties it wrote
    ("kafka,security=SASL_SSL,sasl.mechanism=SCRAM-SHA-512", "restart")])
def test_apache_kafka_keeps_every_exactly_once_guarantee_under_faults(tmp_path, target, fault):
    status, rows = semantic(tmp_path, target, 25, "--junit", str(tmp_path / "junit.xml"))
    assert set(rows) == CHECK_IDS
    departing, explained = departures_of_kafka(target, rows)
    assert status == (1 if explained else 0)
    message = rows["committed-records-visible"]["message"]
    assert not re.search(r"\b0 (faults|committed)", message), message  # the run did something, under faults
    history = [json.loads(line) for line in Path(rows["no-duplicates"]["artifacts"]["history"]).read_text().splitlines()]
    applied = [event["value"]["fault"] for event in history if event["kind"] == "fault" and event["phase"] == "ok"]
    assert fault in applied
    assert all(row["suite"] == "semantic.exactly-once" and (row["verdict"] == "passed" or case in departing)
               for case, row in rows.items())
    assert (tmp_path / "junit.xml").read_text().count("<testcase") == len(CHECK_IDS)


def departures_of_kafka(target: str, rows: dict[str, dict]) -> tuple[dict[str, dict], str]:
    """The checks that departed, and their messages where a known Kafka bug explains them all (then shown
    as a warning); fails the test on a departure it does not explain."""
    departing = {case: row for case, row in rows.items() if row["outcome"] != "passed"}
    explained = known_kafka_bug(departing)
    assert not departing or explained, "\n".join(  # a string: pytest prints it whole
        f"{case}: {row['outcome']}: {row['message']}" for case, row in departing.items())
    if explained:  # Kafka's bug, not the harness's: shown in the summary with its evidence
        warnings.warn(f"{target}: a known Kafka bug made checks depart: {explained}", stacklevel=2)
    return departing, explained


def known_kafka_bug(departing: dict[str, dict]) -> str:
    """KAFKA-20734 (apache/kafka#22680, open): during a graceful shutdown Kafka 4.4.0's transaction coordinator may
    skip a transaction's markers and complete it anyway, so its records stay undecided (the last stable offset
    stops) or the producer's next transaction decides them (a commit acknowledged, its records aborted). It made
    about one restart run in seven to twenty-eight depart here (conformance/targets/kafka/known_issues.py). Every
    departing check must name it, which the run does only when the broker's log shows its signature; then the
    departures are reported as a warning. Returns their messages, or "" when any departure is not so explained."""
    if not departing or not all("KAFKA-20734" in row["message"] for row in departing.values()):
        return ""
    return "; ".join(f"{case}: {row['message']}" for case, row in departing.items())


@pytest.mark.parametrize("target", [
    "proxy+kafka",
    # the proxy terminates the clients' TLS with its own certificate and opens its own TLS to Kafka
    "proxy+kafka,security=SASL_SSL,sasl.mechanism=SCRAM-SHA-512"])
def test_the_fault_proxy_faults_reach_the_clients_and_kafka_still_holds(tmp_path, target):
    """The nemesis restarts Kafka behind the proxy too, so the known bug of its restarts may show here."""
    status, rows = semantic(tmp_path, target, 25)
    _, explained = departures_of_kafka(target, rows)
    assert status == (1 if explained else 0)
    history = [json.loads(line) for line in Path(rows["no-duplicates"]["artifacts"]["history"]).read_text().splitlines()]
    faults = [event for event in history if event["kind"] == "fault" and event["value"]["fault"] != "heal"]
    assert not [event for event in faults if event["phase"] == "info"]  # no fault was refused
    applied = [event["value"]["fault"] for event in faults if event["phase"] == "ok"]
    # How many fit in the run depends on how long the restart before them took (a loaded machine: two, once);
    # those that did came in the nemesis's order, the connection cut around EndTxn first.
    proxy = [fault for fault in applied if fault.startswith("proxy.")]
    assert proxy and proxy[0] == "proxy.cut_after", applied


def test_librdkafkas_mock_is_caught_returning_aborted_records_to_read_committed(tmp_path):
    """The mock's Fetch does not filter aborted transactions (a known limitation): the tier must say so,
    with the aborted transaction and the reads that returned it."""
    status, rows = semantic(tmp_path, "rdkafka-mock", 15)
    assert status == 1
    aborted = rows["aborted-records-invisible"]
    assert aborted["outcome"] == "failed", aborted["message"]
    anomaly = aborted["actual"]["anomalies"][0]
    assert "aborted transaction" in anomaly["summary"]
    assert any(" invoke: " in line for line in anomaly["history"])  # the aborted transaction began
    assert any(" read ok: " in line for line in anomaly["history"])
