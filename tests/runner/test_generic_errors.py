"""A version that refuses every request with a generic error is one finding, on that version (an audit of independent brokers).

Tansu answers every InitProducerId at v0-2 with UNKNOWN_SERVER_ERROR and serves the same requests at v3-5.
That gave 15 failed and 9 blocked items in 8 cases, with verdicts that disagreed for one fault: an item was
failed or blocked depending on whether its first InitProducerId only prepared a later one. Now a request
that departs with a generic error is sent once more at another version; where that version serves it, the
version is broken, not the request:
- a set-up or check step goes on at the version that serves it, leaving one note on the broken version;
- an item whose API and version under test is the broken one fails there, whichever step met it (a
  preparing step, or the positive control of a refusal), with the cause recorded as its root cause;
- where no other version serves the request either, it is an ordinary departure, judged as before.
"""

from __future__ import annotations

import itertools

from conformance.suite.model import Outcome

from fake_kafka import CODEC, FakeKafka
from scripted_runs import bundled_case, run_on, written_case

UNKNOWN_SERVER_ERROR, INVALID_TRANSACTION_TIMEOUT = -1, 50
ADVERTISED = {spec.name: (spec.versions()[0], spec.versions()[-1]) for spec in CODEC.registry.apis()
              if spec.versions()} | {"InitProducerId": (0, 5)}


class TansuLike:
    """Answers InitProducerId at the ``broken`` versions with UNKNOWN_SERVER_ERROR; serves it elsewhere (the same
    producer id with the epoch bumped for a transactional id it knows, a zero timeout refused)."""

    def __init__(self, broken=(0, 1, 2)):
        self.broken = broken
        self.ids = itertools.count(1000)
        self.producers: dict[str, tuple[int, int]] = {}

    def __call__(self, api, version, body):
        if api != "InitProducerId":
            return None
        if version in self.broken:
            return {"error_code": UNKNOWN_SERVER_ERROR, "producer_id": -1, "producer_epoch": -1}
        if body.get("transaction_timeout_ms") == 0:
            return {"error_code": INVALID_TRANSACTION_TIMEOUT, "producer_id": -1, "producer_epoch": -1}
        txn = body.get("transactional_id")
        pid, epoch = self.producers.get(txn, (next(self.ids), -1)) if txn else (next(self.ids), -1)
        if txn:
            self.producers[txn] = (pid, epoch + 1)
        return {"producer_id": pid, "producer_epoch": epoch + 1}


def test_a_preparing_step_at_the_broken_version_fails_the_item_once_with_the_cause(tmp_path):
    # before: blocked at the preparing InitProducerId (and init-producer-id-same-id-bumps-epoch failed at the same fault)
    case = bundled_case("kip360/producer-recovery.yaml", "reinit-aborts-open-transaction")
    broker = FakeKafka(TansuLike(), apis=ADVERTISED)
    result = run_on(broker, case, 1)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.root_cause == "InitProducerId v1 answers UNKNOWN_SERVER_ERROR to a request that v5 serves"
    assert result.failure.step == 1 and result.root_cause in result.message
    assert ("InitProducerId", 5) in broker.requests  # the probe at the version that serves it


def test_a_served_version_still_passes(tmp_path):
    broker = FakeKafka(TansuLike(), apis=ADVERTISED)
    result = run_on(broker, bundled_case("kip98/transactions.yaml", "init-producer-id-same-id-bumps-epoch"), 4)
    assert result.outcome is Outcome.PASSED, result.message
    assert not result.root_cause


def test_the_positive_control_of_a_refusal_names_the_broken_version(tmp_path):
    # a zero timeout "refused" with UNKNOWN_SERVER_ERROR proves nothing: the control shows v1 serves nothing
    case = bundled_case("kip98/transactions.yaml", "init-producer-id-timeout-zero")
    broker = FakeKafka(TansuLike(), apis=ADVERTISED)
    result = run_on(broker, case, 1)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.root_cause == "InitProducerId v1 answers UNKNOWN_SERVER_ERROR to a request that v5 serves"


SET_UP_AT_MAX = """\
suite: generic
title: Set-up at a version answered with a generic error
spec: KIP-98
topics: {out: {partitions: 1}}
cases:
  - id: metadata-after-init
    title: Metadata after a set-up InitProducerId
    cites: KIP-98
    under_test: {api: Metadata, versions: "9"}
    steps:
      - send: InitProducerId
        version: max
        fields: {transactional_id: null, transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}
        expect: {error_code: NONE}
        save: {pid: producer_id}
      - send: Metadata
        fields: {topics: [{name: "${topics.out}"}], allow_auto_topic_creation: false,
                 include_topic_authorized_operations: false}
        expect: {error_code: NONE}
"""


def test_set_up_goes_on_at_the_version_that_serves_it(tmp_path):
    # before: blocked at the set-up InitProducerId v5
    broker = FakeKafka(TansuLike(broken=(5,)), apis=ADVERTISED)
    result = run_on(broker, written_case(tmp_path, SET_UP_AT_MAX), 9)
    assert result.outcome is Outcome.PASSED, result.message
    assert "finding on InitProducerId v5" in result.message and "v4 serves" in result.message
    assert [request for request in broker.requests if request[0] == "InitProducerId"] == \
        [("InitProducerId", 5), ("InitProducerId", 4)]  # the probe's answer is the step's: no third request


def test_a_generic_error_at_every_version_is_an_ordinary_departure(tmp_path):
    broker = FakeKafka(TansuLike(broken=range(6)), apis=ADVERTISED)
    result = run_on(broker, bundled_case("kip98/transactions.yaml", "init-producer-id-same-id-bumps-epoch"), 1)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert not result.root_cause
