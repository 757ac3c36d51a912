"""The default suites on a small broker that serves ApiVersions v0-v4, closes the connection on v5, and has neither
transactions nor CreateTopics (tests/support/small_broker.py). Such a broker once got no verdict in 2,052 items: the
harness stopped at the closed ApiVersions connection, blamed it on the first case that ran, called the broker down,
and its table said "1984 error" where pytest's last line said "1984 failed". Now every item gets an outcome of its
own, what the broker lacks is named, and both counts agree."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conformance.protocol.codec import default_codec
from conformance.results.record import OUTCOME_LABELS

from small_broker import SMALL_BROKER_APIS, small_broker

ROOT = Path(__file__).resolve().parents[2]
ON_UNSUPPORTED_VERSION = "robustness.malformed-frames::api-versions-unknown-version"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(the records, all the command printed) of one ``conformance run`` of the default suites on the broker."""
    results = tmp_path_factory.mktemp("small-broker") / "results.jsonl"
    broker = small_broker()
    try:
        done = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", broker.address,
                               "--results", str(results), "--alluredir", ""],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
    finally:
        broker.stop()
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert records, done.stdout + done.stderr
    return records, done.stdout + done.stderr


def test_every_item_gets_an_outcome_and_the_broker_is_not_called_down(run):
    records, printed = run
    assert not [(record["nodeid"], record["message"]) for record in records if record["outcome"] == "error"]
    assert "DOWN" not in printed and "does not answer like a Kafka broker" not in printed


def test_what_the_broker_lacks_is_named_where_it_costs_an_item(run):
    records, _ = run
    codec = default_codec()
    lacking = {record["api"] for record in records if record["api"] and record["api"] not in SMALL_BROKER_APIS}
    assert {"EndTxn", "AddPartitionsToTxn", "InitProducerId", "TxnOffsetCommit"} <= lacking
    for record in records:
        if record["api"] in lacking and record["outcome"] not in ("skipped",):  # skipped: needs a fault, a principal
            assert record["outcome"] == "unsupported", record
            assert f"advertises {record['api']} not at all" in record["message"], record
    no_topics = [record for record in records if "CreateTopics" in (record["message"] or "")]
    assert no_topics and all(record["outcome"] == "unsupported" for record in no_topics)
    assert codec.registry.api("CreateTopics").name not in SMALL_BROKER_APIS


def test_the_closed_api_versions_connection_is_one_finding_of_its_own_case(run):
    records, _ = run
    charged = [record for record in records if "ApiVersions v" in (record["message"] or "")
               or "ApiVersions v" in json.dumps(record.get("failure") or {})]
    assert [(f"{record['suite']}::{record['case']}", record["outcome"]) for record in charged] == \
        [(ON_UNSUPPORTED_VERSION, "failed")]
    # the framing cases go at a Metadata version the broker serves, and pass
    passed = {record["case"] for record in records if record["outcome"] == "passed"}
    assert {"truncated-frame-gets-no-answer", "negative-size-closes-connection", "api-versions-v0"} <= passed


def test_pytests_last_line_counts_what_the_table_counts(run):
    records, printed = run
    [last_line] = [line for line in printed.splitlines() if re.match(r"^=+ .* in [0-9.]+s", line)]
    said = {re.sub(r"s$", "", word) if word == "errors" else word: int(number)
            for number, word in re.findall(r"(\d+) ([a-z][A-Za-z ]*?[a-z])(?=,| in )", last_line)}
    counted = Counter(OUTCOME_LABELS[record["outcome"]] for record in records)
    assert said == dict(counted), last_line
    header, row = [line.split("\t") for line in printed.splitlines() if "\t" in line][:2]
    table = {label: int(count) for label, count in zip(header[1:-1], row[1:-1]) if int(count)}
    assert table == said
