"""A broker that crashes on a request with an unknown API key, run through the plugin as ``conformance run``
runs it (items in parallel) and with ``--jobs 1``: the outcomes are the same item by item, and the crash is
the failure of the case that sent that request. The real runner against a scripted broker
(tests/support/fake_kafka.py); the time this costs is the benchmark's to report (conformance.bench.crash)."""

from __future__ import annotations

import json

import pytest

from conformance.results import STOPPED_ANSWERING

from plugin_runs import plugin_arguments
from supervised_broker import Supervised

pytest_plugins = ["pytester"]

SUITE = """\
suite: crash
title: A broker that crashes on an unknown API key, among cases it answers
spec: KIP-98
transactional_ids: [main]
cases:
  - id: end-after-init
    title: EndTxn after InitProducerId
    cites: KIP-98
    under_test: {api: EndTxn, versions: "0-5"}
    steps:
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}
        expect: {error_code: NONE}
        save: {pid: producer_id, epoch: producer_epoch}
      - send: EndTxn
        fields: {transactional_id: "${txn_ids.main}", producer_id: "${pid}", producer_epoch: "${epoch}", committed: true}
        expect: {error_code: NONE}
  - id: unknown-api-key-closes-connection
    title: A request with an API key the broker does not know is answered by closing the connection
    cites: "Kafka protocol guide: a request the server cannot parse closes the connection"
    steps:
      - send: Metadata
        version: 12
        fields: {topics: [], allow_auto_topic_creation: false}
        malform: {header: {api_key: 999}}
        timeout_ms: 5000
        expect: {disconnect: true}
  - id: negative-size-closes-connection
    title: A frame with a negative size is refused by closing the connection
    cites: "Kafka protocol guide: the size is an int32 length of the request that follows"
    steps:
      - send: Metadata
        version: 12
        fields: {topics: [], allow_auto_topic_creation: false}
        malform: {size_delta: -1000000}
        timeout_ms: 5000
        expect: {disconnect: true}
  - id: init-after-the-rough-ones
    title: InitProducerId, written after the cases a broker may not survive
    cites: KIP-98
    under_test: {api: InitProducerId, versions: "0-5"}
    steps:
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}
        expect: {error_code: NONE}
"""
CRASH = "crash.yaml::unknown-api-key-closes-connection"


@pytest.fixture
def broker():
    supervised = Supervised()
    yield supervised
    supervised.stop()


def outcomes(pytester, broker: Supervised, jobs: int, *options: str) -> dict[str, tuple[str, str]]:
    """node id -> (outcome, message) of one run of the suite against the broker."""
    (pytester.path / "crash.yaml").write_text(SUITE)
    results = pytester.path / f"results-{jobs}.jsonl"
    pytester.runpytest(*plugin_arguments(), "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                       "--target", broker.fake.address, "--suite", "crash.yaml", "--results", str(results),
                       "--conformance-jobs", str(jobs), *options)
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    return {line["nodeid"]: (line["outcome"], line["message"]) for line in lines}


def crash_item(found: dict) -> tuple[str, str]:
    [(outcome, message)] = [value for nodeid, value in found.items() if nodeid.startswith(CRASH)]
    return outcome, message


@pytest.mark.parametrize("restart", [False, True], ids=["attached", "with-restart-command"])
def test_the_default_run_gives_each_item_the_outcome_of_a_serial_run_and_blames_the_crash_on_its_case(
        pytester, broker, restart):
    options = ("--conformance-restart-command", broker.restart_command) if restart else ()
    serial = outcomes(pytester, broker, 1, *options)
    broker.fake = broker.fake.revived() if not restart else broker.fake  # a new broker for the second run
    parallel = outcomes(pytester, broker, 4, *options)
    assert len(parallel) == len(serial) == 14
    assert {nodeid: outcome for nodeid, (outcome, _) in parallel.items()} == \
        {nodeid: outcome for nodeid, (outcome, _) in serial.items()}
    for found in (serial, parallel):
        outcome, message = crash_item(found)
        assert outcome == "failed"
        assert message.startswith(f"{STOPPED_ANSWERING}: it took the target down")
        assert "the request that did it: Metadata v12" in message
        others = {nodeid: value for nodeid, value in found.items() if not nodeid.startswith(CRASH)}
        # Every case the broker answers keeps its verdict, the one after the crash in the file too.
        assert all(outcome == "passed" for nodeid, (outcome, _) in others.items() if "negative-size" not in nodeid)
        [(negative, why)] = [value for nodeid, value in others.items() if "negative-size" in nodeid]
        if restart:  # brought back, the broker judges the last case too
            assert (negative, "the harness restarted it" in message) == ("passed", True)
        else:  # a hazardous case after the crash: not run, as in a serial run
            assert negative == "error" and why.startswith("not run: target 127.0.0.1:")
    assert broker.restarts == (2 if restart else 0)
