"""The exploration's budget, and the merge of several seeds' explorations (no broker)."""

from __future__ import annotations

import pytest

from conformance.explore.driver import Collector, HistoryStep
from conformance.explore.fanout import merge, seeds_from
from conformance.explore.model import Model, Names, table_rows
from conformance.explore.ops import Op
from conformance.explore.reference import Judgement
from conformance.explore.exploration import Budget, Exploration, Found, progress_line, reached_line, results


def test_a_budget_is_a_time_or_a_number_of_histories():
    assert Budget.parse("60s") == Budget(seconds=60)
    assert Budget.parse("5m") == Budget(seconds=300)
    assert Budget.parse("200") == Budget(examples=200)
    for wrong in ("", "0", "-3s", "soon"):
        with pytest.raises(ValueError, match="give a time"):
            Budget.parse(wrong)


def hanging(pid: int) -> Found:
    """The two-request history of the hanging-transaction class, as one seed found it."""
    model, names, history = Model(), Names(f"s{pid}"), []
    for op, answer in ((Op("InitProducerId", 0, txn=0), {"error": 0, "producer_id": pid, "producer_epoch": 0}),
                       (Op("Produce", 3, txn=0), {"error": 0, "base_offset": 0})):
        resolved = model.resolve(op, names)
        step = HistoryStep(op, resolved, answer=answer, outcome=model.expect(op, resolved).outcome)
        step.departures = model.step(op, resolved, answer)
        history.append(step)
    return Found("produce.partition-in-transaction", "accepted", history, None)


def exploration(seed: int, *found: Found, requests: int = 10) -> Exploration:
    collector = Collector()
    collector.examples, collector.requests = 2, requests
    return Exploration("kafka:3.5.2", seed, collector, elapsed_s=1.0, found=list(found))


def test_the_same_shrunk_case_found_by_two_seeds_is_one_departure():
    # producer ids differ between the two runs; the case's steps (saved variables) do not
    merged = merge([exploration(1, hanging(10)), exploration(2, hanging(77), requests=5)], target="kafka:3.5.2", seed=1)
    assert len(merged.found) == 1
    assert (merged.collector.examples, merged.collector.requests) == (4, 15)
    assert seeds_from(7, 3) == [7, 8, 9]


def test_a_departure_kept_after_the_reference_is_a_failed_result_with_its_history(tmp_path):
    found = hanging(10)
    found.judgement = Judgement(True, "its case passes on the reference", "KAFKA-14402, fixed in 3.6.0", "passed")
    [result] = results(exploration(1, found), run_id="r", target_version="3.5.2", histories=tmp_path)
    assert (result.suite_id, result.case_id, result.outcome.value) == ("explore", "produce.partition-in-transaction",
                                                                      "failed")
    assert result.known_bug == "KAFKA-14402, fixed in 3.6.0"
    assert "1. InitProducerId v0 txn0 -> NONE; 2. Produce v3 txn0" in result.message
    assert result.cites.startswith("KIP-890: ") and result.api == "Produce" and result.version == 3
    assert (tmp_path / "r-produce.partition-in-transaction.json").is_file()
    [quiet] = results(exploration(1), run_id="r", target_version="3.5.2", histories=tmp_path)
    assert quiet.outcome.value == "passed" and "no departure in 2 histories, 10 requests" in quiet.message


def test_a_departure_held_back_or_never_checked_on_the_reference_is_no_failure(tmp_path):
    [unchecked] = results(exploration(1, hanging(10)), run_id="r", target_version="3.5.2", histories=tmp_path)
    assert unchecked.outcome.value == "blocked" and "held-back" in unchecked.tags
    assert unchecked.message.startswith("held back, to judge by hand (not checked on the reference)")
    found = hanging(10)
    found.judgement = Judgement(False, "its case fails on the reference kafka:4.4.0 too", reference="failed")
    [held] = results(exploration(1, found), run_id="r", target_version="3.5.2", histories=tmp_path)
    assert held.outcome.value == "blocked" and "fails on the reference kafka:4.4.0 too" in held.message
    assert not held.known_bug


def test_the_progress_line_says_which_departure_is_being_shrunk_and_how_short_it_is_so_far():
    found = hanging(10)
    shrinking = exploration(1)
    shrinking.collector.departed(found.history, found.history[-1].departures[0])
    assert progress_line(shrinking).endswith("; shrinking produce.partition-in-transaction: 2 requests so far")
    shrinking.collector.settled = {"produce.partition-in-transaction"}  # shrunk in an earlier round: done
    assert "shrinking" not in progress_line(shrinking)


def test_the_model_rows_a_budget_reached_and_those_it_never_did_are_named():
    found = hanging(10)
    explored = exploration(1, found)
    explored.collector.reached.update({("InitProducerId", "always"): 1, ("Produce", "outside_transaction"): 1})
    line = reached_line(explored)
    assert line.startswith(f"model rows reached: 2 of {len(table_rows())}; never: ")
    assert "Produce/outside_transaction" not in line.split("fewest")[0] and "Produce/tv2_just_bumped" in line
    assert line.endswith("; fewest: InitProducerId/always 1, Produce/outside_transaction 1")


def test_a_history_with_an_offset_fetch_is_written_as_json(tmp_path):
    found = hanging(10)
    read = Op("OffsetFetch", 8, group=0)
    found.history.insert(1, HistoryStep(read, found.history[0].resolved, answer={"error": 0, "partitions": {(0, 0): (0, -1)}}))
    results(exploration(1, found), run_id="r", target_version=None, histories=tmp_path)
    assert '"t0-0"' in (tmp_path / "r-produce.partition-in-transaction.json").read_text()
