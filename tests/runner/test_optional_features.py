"""An optional feature declined is not applicable.

KIP-227 lets a broker decline fetch sessions: it answers a full fetch with session id 0. The bundled
``protocol.produce-fetch::fetch-session-wrong-epoch`` opens a session in set-up; on such a broker it was
blocked, and is now skipped, naming the feature. A broker that opens sessions is judged as before.
"""

from __future__ import annotations

import pytest

from conformance.suite.model import Outcome

from fake_kafka import FakeKafka
from scripted_runs import bundled_case, run_on

INVALID_FETCH_SESSION_EPOCH = 71


def run(handler, version: int):
    return run_on(FakeKafka(handler), bundled_case("protocol/produce-fetch.yaml", "fetch-session-wrong-epoch"), version)


def sessions(open_them: bool):
    def handler(api, version, body):
        if api != "Fetch":
            return None
        if body["session_id"] == 0:  # a full fetch: a session opens, or the broker declines (id 0)
            return {"session_id": 9 if open_them else 0, "responses": []}
        return {"error_code": INVALID_FETCH_SESSION_EPOCH, "session_id": 0, "responses": []}
    return handler


@pytest.mark.parametrize("version", [7, 12, 15])
def test_a_broker_that_declines_fetch_sessions_skips_the_case(version):
    result = run(sessions(open_them=False), version)
    assert result.outcome is Outcome.SKIPPED, result.message
    assert "declines fetch sessions" in result.message


def test_a_broker_that_opens_sessions_is_judged():
    assert run(sessions(open_them=True), 12).outcome is Outcome.PASSED
