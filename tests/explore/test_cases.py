"""A departing history becomes a suite file the loader accepts, with the departing request under test."""

from __future__ import annotations

import yaml

from conformance.explore.cases import case_for, write_case
from conformance.explore.driver import HistoryStep
from conformance.explore.model import Model, Names
from conformance.explore.ops import READ_COMMITTED, Op
from conformance.runner.steps import bundled
from conformance.suite.loader import lint

NONE, FENCED, INVALID_TXN_STATE = 0, 90, 48


def history_of(*exchanges) -> list[HistoryStep]:
    """Steps judged by a fresh model from (operation, answer) pairs, as the driver records them."""
    model, names, steps = Model(), Names("test"), []
    for op, answer in exchanges:
        resolved = model.resolve(op, names)
        step = HistoryStep(op, resolved, answer=answer, outcome=model.expect(op, resolved).outcome)
        step.departures = model.step(op, resolved, answer)
        steps.append(step)
    return steps


def test_the_hanging_transaction_history_becomes_a_case_the_loader_accepts(tmp_path):
    history = history_of(
        (Op("InitProducerId", 0, txn=0), {"error": NONE, "producer_id": 5, "producer_epoch": 0}),
        (Op("Fetch", 4, isolation=READ_COMMITTED), {"error": NONE, "high_watermark": 0, "last_stable_offset": 0,
                                                   "values": [], "offsets": {}}),
        (Op("Produce", 3, txn=0), {"error": NONE, "base_offset": 0}))
    assert [departure.rule.id for departure in history[-1].departures] == ["produce.partition-in-transaction"]
    path = write_case(history, tmp_path, target="kafka:3.5.2", seed=4)
    assert lint([path], bundled()) == []
    document = yaml.safe_load(path.read_text())
    [case] = document["cases"]
    assert case["under_test"] == {"api": "Produce", "versions": "3"}
    assert case["cites"].startswith("KIP-890: ")
    first, last = case["steps"]  # the read changes nothing on the broker: left out
    assert "producer_id" not in first["fields"]  # InitProducerId v0 has none
    assert first["save"] == {"pid_txn0_g1": "producer_id", "epoch_txn0_g1": "producer_epoch"}
    assert last["produce"]["producer_id"] == "${pid_txn0_g1}" and "version" not in last["produce"]
    assert last["expect"] == {"error_code": {"ne": "NONE"}}
    assert "InitProducerId v0 txn0 -> NONE" in path.read_text()  # the history, as a comment


def test_an_older_generation_speaks_with_the_older_saved_ids(tmp_path):
    history = history_of(
        (Op("InitProducerId", 3, txn=1), {"error": NONE, "producer_id": 5, "producer_epoch": 0}),
        (Op("InitProducerId", 3, txn=1), {"error": NONE, "producer_id": 5, "producer_epoch": 1}),
        (Op("AddPartitionsToTxn", 2, txn=1, stale=True, partitions=((1, 1),)), {"error": FENCED}),
        (Op("EndTxn", 2, txn=1, stale=True), {"error": NONE}))
    assert [departure.rule.id for departure in history[-1].departures] == ["fenced.refused"]
    document = case_for(history, target="kafka", seed=None)
    steps = document["cases"][0]["steps"]
    assert steps[2]["expect"] == {"refused": True}
    assert steps[3]["fields"]["producer_epoch"] == "${epoch_txn1_g1}"  # the first generation, not the second
    path = write_case(history, tmp_path, target="kafka", seed=None)
    assert lint([path], bundled()) == []


def test_a_departure_without_a_suite_form_is_a_history_only():
    history = history_of(
        (Op("InitProducerId", 3, txn=0), {"error": NONE, "producer_id": 5, "producer_epoch": 3}),
        (Op("InitProducerId", 3, txn=0), {"error": NONE, "producer_id": 5, "producer_epoch": 3}))
    assert [departure.rule.id for departure in history[-1].departures] == ["init.fences-older-generation"]
    assert case_for(history, target="kafka", seed=None) is None


def test_the_proxys_fault_and_a_wait_are_written_as_steps_the_loader_accepts(tmp_path):
    history = history_of(
        (Op("InitProducerId", 4, txn=0, short_timeout=True), {"error": NONE, "producer_id": 5, "producer_epoch": 0}),
        (Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),), fault="drop_response"), {"error": NONE}),
        (Op("Produce", 9, txn=0, fault="duplicate_request"), {"error": NONE, "base_offset": 0}),
        (Op("Produce", 9, txn=0, partition=1, fault="delay"), {"error": NONE, "base_offset": 0}))
    assert [departure.rule.id for departure in history[-1].departures] == ["produce.partition-in-transaction"]
    history.insert(2, HistoryStep(Op("Wait", 0), history[0].resolved, answer={"error": NONE}, outcome="either"))
    document = case_for(history, target="proxy+kafka", seed=1)
    path = write_case(history, tmp_path, target="proxy+kafka", seed=1)
    assert lint([path], bundled()) == []
    steps = document["cases"][0]["steps"]
    assert [next(iter(step)) for step in steps] == ["send", "fault", "send", "wait", "fault", "produce", "fault",
                                                    "produce"]
    assert steps[0]["fields"]["transaction_timeout_ms"] == 1000
    assert steps[1] == {"fault": {"name": "proxy.drop_response", "args": {"client": "${client_id}",
                                                                          "api": "AddPartitionsToTxn", "times": 1}}}
    assert steps[6]["fault"]["args"] == {"client": "${client_id}", "api": "Produce", "times": 1, "ms": 300}


def test_an_earlier_refused_write_of_the_api_under_test_leads_to_it_and_the_loader_accepts_the_case(tmp_path):
    """Found on Kafka 4.0.0: the refused stale write before the write under test needs no sentence of its own."""
    model, names, history = Model(tv2=True), Names("test"), []
    for op, answer in ((Op("InitProducerId", 0, txn=0), {"error": NONE, "producer_id": 5, "producer_epoch": 0}),
                       (Op("EndTxn", 5, txn=0, commit=False), {"error": NONE, "producer_id": 5, "producer_epoch": 1}),
                       (Op("Produce", 12, txn=0), {"error": NONE, "base_offset": 0}),
                       (Op("Produce", 12, txn=0, stale=True), {"error": 47, "base_offset": -1}),
                       (Op("Produce", 12, txn=0), {"error": 45, "base_offset": -1})):
        resolved = model.resolve(op, names)
        step = HistoryStep(op, resolved, answer=answer, outcome=model.expect(op, resolved).outcome)
        step.departures = model.step(op, resolved, answer)
        history.append(step)
    assert [departure.rule.id for departure in history[-1].departures] == ["produce.added-implicitly"]
    path = write_case(history, tmp_path, target="kafka:4.0.0", seed=7)
    assert lint([path], bundled()) == []
    steps = yaml.safe_load(path.read_text())["cases"][0]["steps"]
    assert [step.get("version") for step in steps if "produce" in step] == [12, 12, None]  # the last is under test
