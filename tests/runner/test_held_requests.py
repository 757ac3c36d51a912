"""A step waits at least as long as its own request lets the broker hold it.

Tansu holds a JoinGroup for up to half the session timeout, within the rebalance timeout the case itself
sends; the harness gave up at its own 10 s and blocked the case. The scripted broker below holds the
JoinGroup 1.5 s, within the 2 s rebalance timeout the request allows, while the step's own wait is 1 s.
"""

from __future__ import annotations

import time

from conformance.runner.exchange import wait_s
from conformance.suite.model import Outcome

from fake_kafka import FakeKafka
from scripted_runs import run_on, written_case

CASE = """\
suite: held
title: A broker that uses the time a request allows
spec: KIP-98
groups: [g]
cases:
  - id: join-held
    title: A JoinGroup answered within its rebalance timeout
    cites: KIP-98
    under_test: {api: JoinGroup, versions: "5"}
    steps:
      - send: JoinGroup
        timeout_ms: 1000
        fields: {group_id: "${groups.g}", session_timeout_ms: 2000, rebalance_timeout_ms: 2000, member_id: "",
                 group_instance_id: null, protocol_type: consumer, protocols: [{name: range, metadata: {hex: ""}}]}
        expect: {error_code: NONE}
"""


def holds_join(api, version, body):
    if api == "JoinGroup":
        time.sleep(1.5)  # within the request's 2 s rebalance timeout
        return {"generation_id": 1, "protocol_name": "range", "leader": "m", "member_id": "m", "members": []}
    return None


def test_a_join_held_within_its_rebalance_timeout_is_waited_for(tmp_path):
    result = run_on(FakeKafka(holds_join), written_case(tmp_path, CASE), 5)
    assert result.outcome is Outcome.PASSED, result.message


def test_the_wait_is_the_longest_of_the_steps_own_and_what_the_request_allows():
    assert wait_s({}, "Metadata", {"topics": []}) == 10.0
    assert wait_s({"timeout_ms": 1000}, "Fetch", {"max_wait_ms": 500}) == 5.5
    assert wait_s({}, "JoinGroup", {"session_timeout_ms": 45000, "rebalance_timeout_ms": 30000}) == 50.0
    assert wait_s({}, "InitProducerId", {"transaction_timeout_ms": 60000}) == 10.0  # not a time to hold the answer
