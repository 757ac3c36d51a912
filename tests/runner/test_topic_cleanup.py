"""The topics items create are deleted when the runner closes, not while other items run.

A deletion in the middle of a run disturbs the items beside it on some brokers: Kafka 3.9's group
coordinator forgets every group whose only member is one it just asked to rejoin (MEMBER_ID_REQUIRED)
whenever any partition is deleted, so a concurrent run blocked items a serial run passed. Deleting at the
end keeps each item's outcome its own; a provisioned target discarded with its data skips the deletion. The
one other deletion is before the serial items run alone on the target, with nothing beside them.
"""

from __future__ import annotations

from contextlib import contextmanager

from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.results.record import Outcome
from conformance.targets.hostport import HostPortTarget

from fake_kafka import FakeKafka

SUITE = """\
suite: local.cleanup
title: two cases with a topic each
spec: KIP-98
topics:
  log: {partitions: 1}
cases:
  - id: uses-a-topic
    title: a case with a topic
    cites: "a test of the harness"
    under_test: {api: Metadata, versions: "12"}
    steps:
      - send: Metadata
        fields: {topics: [{name: "${topics.log}"}]}
        expect: {error_code: NONE}
"""


@contextmanager
def runner_on_a_fake(tmp_path, answer):
    """A runner on a fake broker that hands every request to ``answer`` first, and the suite's one case."""
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    broker = FakeKafka(answer)
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="cleanup", timeout=5.0)
    try:
        yield runner, suite.cases[0]
    finally:
        runner.close(keep_topics=True)  # its connections, where the test has not closed it
        broker.stop()


def run_twice(tmp_path, keep_topics: bool):
    deleted: list[list[str]] = []

    def answer(api, version, body):
        if api == "DeleteTopics":
            deleted.append([topic["name"] for topic in body["topics"]])
        return None

    with runner_on_a_fake(tmp_path, answer) as (runner, case):
        results = [runner.run(case, 12) for _ in range(2)]
        during = list(deleted)
        runner.close(keep_topics=keep_topics)
        return results, during, deleted


def test_the_topics_are_deleted_together_when_the_runner_closes(tmp_path):
    results, during, deleted = run_twice(tmp_path, keep_topics=False)
    assert [result.outcome for result in results] == [Outcome.PASSED, Outcome.PASSED]
    assert during == []
    [names] = deleted  # one request for both items' topics
    assert len(names) == 2 and all(name.startswith("local.cleanup.uses-a-topic.log.") for name in names)


def test_a_target_discarded_with_its_data_keeps_them(tmp_path):
    _, _, deleted = run_twice(tmp_path, keep_topics=True)
    assert deleted == []


def test_before_serial_items_the_topics_go_and_the_runner_waits_until_the_broker_has_applied_it(tmp_path):
    """RunAhead deletes the finished items' topics before the serial ones run alone (a broker they restart then
    reloads none of them); it waits until Metadata no longer names them, so the deletion's effects are over."""
    deleted: set[str] = set()
    asked_after: list[list[str]] = []  # the names each Metadata request asked for once the deletion was sent
    polls_until_applied = 3

    def answer(api, version, body):
        if api == "DeleteTopics":
            deleted.update(topic["name"] for topic in body["topics"])
            return {"responses": [{"name": topic["name"], "error_code": 0} for topic in body["topics"]]}
        if api == "Metadata" and deleted and body.get("topics"):
            names = [topic["name"] for topic in body["topics"]]
            asked_after.append(names)
            if len(asked_after) >= polls_until_applied:
                return {"brokers": [], "topics": [{"name": name, "error_code": 3, "partitions": []} for name in names]}
        return None

    with runner_on_a_fake(tmp_path, answer) as (runner, case):
        runner.run(case, 12)
        runner.delete_finished_topics(until_gone=True)
        assert len(deleted) == 1 and len(asked_after) == polls_until_applied
        assert all(names == sorted(deleted) for names in asked_after)
        runner.close()  # nothing left to delete
        assert len(asked_after) == polls_until_applied


def test_topics_the_broker_refuses_to_delete_are_not_waited_for(tmp_path):
    """A user without the right to delete (an attached broker's ACLs) keeps them: the serial items start at once."""
    asked: list[str] = []

    def answer(api, version, body):
        asked.append(api)
        if api == "DeleteTopics":
            return {"responses": [{"name": topic["name"], "error_code": 29} for topic in body["topics"]]}
        return None

    with runner_on_a_fake(tmp_path, answer) as (runner, case):
        runner.run(case, 12)
        del asked[:]
        runner.delete_finished_topics(until_gone=True)
        assert "DeleteTopics" in asked and "Metadata" not in asked
