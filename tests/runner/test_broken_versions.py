"""Set-up must not die on one broken version.

librdkafka's mock advertises JoinGroup v0-6 and closes the connection at v6 (v5 works); set-up at
``version: max`` blocked three KIP-848 cases there. A set-up or check request whose top version breaks
(connection closed, an answer that does not decode, UNSUPPORTED_VERSION) is one note on that API and
version, and the step goes on at the next version down; the step under test is never moved.
"""

from __future__ import annotations

import pytest

from conformance.suite.model import Outcome

from fake_kafka import CLOSE, CODEC, DIE, FakeKafka
from scripted_runs import run_on, written_case

CASE = """\
suite: broken
title: A set-up request broken at its top version
spec: KIP-848
groups: [g]
cases:
  - id: heartbeat-after-join
    title: A member heartbeats after it joined
    cites: KIP-848
    under_test: {api: Heartbeat, versions: "VERSIONS"}
    steps:
      - send: JoinGroup
        version: max
        fields: {group_id: "${groups.g}", session_timeout_ms: 6000, rebalance_timeout_ms: 6000, member_id: "",
                 group_instance_id: null, protocol_type: consumer, protocols: [{name: range, metadata: {hex: ""}}],
                 reason: null}
        expect: {error_code: NONE}
        save: {member: member_id, generation: generation_id}
      - send: Heartbeat
        fields: {group_id: "${groups.g}", generation_id: "${generation}", member_id: "${member}", group_instance_id: null}
        expect: {error_code: NONE}
"""
UNSUPPORTED_VERSION = 35
ADVERTISED = {spec.name: (spec.versions()[0], spec.versions()[-1]) for spec in CODEC.registry.apis()
              if spec.versions()} | {"JoinGroup": (0, 6), "Heartbeat": (0, 4)}


def mock_like(answer_at_v6):
    def handler(api, version, body):
        if api == "JoinGroup":
            if version == 6:
                return answer_at_v6
            return {"generation_id": 1, "protocol_name": "range", "leader": "m-1", "member_id": "m-1", "members": []}
        if api == "Heartbeat" and version == 4:
            return CLOSE  # the version under test itself breaks: that is the item's own finding
        return None
    return handler


def run(tmp_path, broker: FakeKafka, versions: str, version: int):
    return run_on(broker, written_case(tmp_path, CASE.replace("VERSIONS", versions)), version)


@pytest.mark.parametrize("at_v6", [CLOSE, {"error_code": UNSUPPORTED_VERSION}], ids=["closes", "unsupported"])
def test_set_up_broken_at_its_top_version_goes_on_at_the_next_one_down(tmp_path, at_v6):
    broker = FakeKafka(mock_like(at_v6), apis=ADVERTISED)
    result = run(tmp_path, broker, "3", 3)
    assert result.outcome is Outcome.PASSED, result.message
    assert broker.requests.index(("JoinGroup", 6)) < broker.requests.index(("JoinGroup", 5))
    assert "finding on JoinGroup v6" in result.message


def test_the_step_under_test_is_never_moved_down(tmp_path):
    broker = FakeKafka(mock_like(CLOSE), apis=ADVERTISED)
    result = run(tmp_path, broker, "4", 4)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.api == "Heartbeat" and ("Heartbeat", 3) not in broker.requests


def test_a_target_that_went_down_is_not_a_broken_version(tmp_path):
    broker = FakeKafka(lambda api, version, body: DIE if api == "JoinGroup" else None, apis=ADVERTISED)
    result = run(tmp_path, broker, "3", 3)
    assert result.outcome is not Outcome.PASSED
    assert "finding on JoinGroup" not in result.message  # no version fallback noted: the target itself went down
    assert result.outcome is Outcome.BLOCKED and "the crash is JoinGroup's finding" in result.message
    assert [request for request in broker.requests if request[0] == "JoinGroup"] == [("JoinGroup", 6)]


def test_a_version_found_broken_is_not_sent_again_by_later_items(tmp_path):
    """The run remembers: a later item's set-up goes one version down at once, noted as the first item's was
    (on librdkafka's mock, each JoinGroup v6 sent left a member behind that the group then waited out)."""
    from conformance.runner.runner import Runner
    from conformance.targets.hostport import HostPortTarget

    broker = FakeKafka(mock_like(CLOSE), apis=ADVERTISED)
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="broken", timeout=2.0)
    case = written_case(tmp_path, CASE.replace("VERSIONS", "3"))
    try:
        first, second = runner.run(case, 3), runner.run(case, 3)
    finally:
        runner.close()
        broker.stop()
    assert first.outcome is second.outcome is Outcome.PASSED, (first.message, second.message)
    assert broker.requests.count(("JoinGroup", 6)) == 1  # the first item's only
    assert "finding on JoinGroup v6 (not this item's verdict): connection closed" in second.message


def test_a_version_that_broke_as_the_target_crashed_is_not_remembered():
    """What broke on an earlier life of the target (a crash closes every connection) is not kept."""
    from conformance.runner.learned import ItemView, Learned

    learned = Learned()
    early = ItemView(learned, beside_others=False, life=learned.life)
    learned.new_life()
    early.broke("JoinGroup", 6, "connection closed")
    assert learned.broken("JoinGroup", 6) is None
    ItemView(learned, beside_others=False, life=learned.life).broke("JoinGroup", 6, "connection closed")
    assert learned.broken("JoinGroup", 6) == "connection closed"
