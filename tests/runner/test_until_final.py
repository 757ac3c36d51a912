"""An ``until`` stops as soon as what it observes can no longer become what it waits for, and only then.

A log only grows, so a fetch that already shows more records than an exact count, or markers that do not
begin the exact list wanted, will never match: waiting out the timeout would only delay the verdict. Fewer
records, no marker yet, or a matcher the harness does not reason about keep the wait going, so a slow
broker still passes."""

from __future__ import annotations

import pytest

from conformance.runner.context import Departure
from conformance.runner.steps import until as until_kind
from conformance.runner.steps.fetch import beyond_reach
from conformance.runner.steps import bundled


def summary(records: int, control: list[str]) -> dict:
    return {"records": records, "control": control}


@pytest.mark.parametrize("observed, wanted, final", [
    (summary(3, []), {"records": 2}, "3 records are visible, more than the 2 expected"),
    (summary(1, ["ABORT"]), {"records": 1, "control": ["COMMIT"]}, "the markers ['ABORT'] are written"),
    (summary(0, ["COMMIT", "ABORT"]), {"control": ["COMMIT"]}, "cannot follow them"),
    # a slow broker: not there yet, but it may get there
    (summary(1, []), {"records": 2}, None),
    (summary(0, []), {"records": 0, "control": ["COMMIT"]}, None),
    (summary(2, ["COMMIT"]), {"control": ["COMMIT", "ABORT"]}, None),
    # matchers are left to the timeout
    (summary(5, []), {"records": {"lte": 2}}, None),
    (summary(0, ["ABORT"]), {"control": {"contains": "COMMIT"}}, None),
])
def test_what_is_final_and_what_is_not(observed, wanted, final):
    reason = beyond_reach(observed, wanted)
    assert (reason is None) == (final is None)
    if final is not None:
        assert final in reason


class Context:
    variables = {"config": {"transactional_id_expiration_ms": 300}}


def run_until(monkeypatch, outcomes: list, body: dict) -> tuple[int, BaseException | None]:
    """``until_step`` over a step whose tries end as ``outcomes`` say (a Departure, or None: it held)."""
    tries = []

    def step(context, step, index):
        tries.append(index)
        outcome = outcomes[min(len(tries), len(outcomes)) - 1]
        if outcome is not None:
            raise outcome

    monkeypatch.setattr(until_kind, "run_step", step)
    monkeypatch.setattr(until_kind, "run_steps", lambda context, sequence, prefix: step(context, sequence, prefix))
    try:
        until_kind.until_step(Context(), {"until": {"for_ms": 2000, "interval_ms": 1, **body}}, "1", "fetch")
    except Departure as error:
        return len(tries), error
    return len(tries), None


def final_deviation() -> Departure:
    deviation = Departure("fetch: 3 records, 2 expected")
    deviation.final = "3 records are visible, more than the 2 expected, and records stay"
    return deviation


def test_a_final_observation_ends_the_wait_at_once_and_says_why(monkeypatch):
    tries, error = run_until(monkeypatch, [final_deviation()], {"step": {"fetch": {}}})
    assert tries == 1
    assert "no use waiting: 3 records are visible" in str(error)


def test_a_slow_broker_still_gets_there(monkeypatch):
    tries, error = run_until(monkeypatch, [Departure("1 record"), Departure("1 record"), None], {"step": {"fetch": {}}})
    assert (tries, error) == (3, None)


def test_a_repeated_sequence_may_ask_another_question_each_time_so_it_waits(monkeypatch):
    tries, error = run_until(monkeypatch, [final_deviation(), final_deviation(), None], {"steps": [{"fetch": {}}]})
    assert (tries, error) == (3, None)


def test_a_request_left_unanswered_ends_even_a_repeated_sequence_at_once(monkeypatch):
    """A target that kept a request unanswered for the step's whole time would keep the next try as long: the
    wait ends with that departure (tansu left JoinGroup v9 unanswered twice, 20 s an item, before this)."""
    hang = Departure("JoinGroup v9: no response within 10.0s")
    hang.final, hang.hangs = "the target did not answer within 10 s; asking again would wait as long", True
    tries, error = run_until(monkeypatch, [hang, None], {"steps": [{"send": "JoinGroup"}]})
    assert tries == 1 and "no use waiting: the target did not answer" in str(error)


def test_a_broker_timer_is_waited_for_as_the_target_sets_it(monkeypatch):
    """``for_ms`` read from the target's settings: a step that never holds is tried until that time is up."""
    clock = iter(range(0, 10_000, 50))  # each look at the clock is 50 ms later
    monkeypatch.setattr(until_kind.time, "monotonic", lambda: next(clock) / 1000)
    monkeypatch.setattr(until_kind.time, "sleep", lambda seconds: None)
    tries, error = run_until(monkeypatch, [Departure("still there")],
                             {"step": {"send": "DescribeTransactions"},
                              "for_ms": "${config.transactional_id_expiration_ms + 200}"})
    assert error is not None and 9 <= tries <= 11  # 500 ms of 50 ms steps


def test_a_wait_that_is_neither_a_number_nor_an_expression_is_refused_where_it_is_written(tmp_path):
    from conformance.suite.loader import load_suites

    path = tmp_path / "suite.yaml"
    path.write_text("suite: local.bad\ntitle: t\nspec: KIP-98\ncases:\n  - id: c\n    title: t\n    cites: x\n"
                    "    under_test: {api: DescribeTransactions}\n    steps:\n      - until:\n          step:\n"
                    "            send: DescribeTransactions\n            fields: {transactional_ids: [a]}\n"
                    "            expect: {error_code: NONE}\n          for_ms: ten seconds\n")
    _, errors = load_suites([path], components=bundled())
    assert [str(error) for error in errors] == [
        f"{path}:15: cases[0].steps[0].until.for_ms: 'ten seconds' is not valid under any of the given schemas"]
