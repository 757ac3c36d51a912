"""A set-up waits for what the protocol says, not for a broker that assigns at once (an audit of independent brokers).

``kip848.txn-offset-commit::older-epoch-of-a-kept-partition-accepted`` judges a TxnOffsetCommit sent with the
member's previous epoch for a partition it has held since that epoch (KIP-1251: assignment epoch <= epoch <=
member epoch). Kafka computes assignments in the background: under load the first member was given its
partition only at epoch 3, after the epoch the case then called "older", and the item differed on Kafka
4.4.0. The case now heartbeats until the member holds its partition, and judges the epoch it holds it at.
This broker assigns the partition only at the member's third epoch, as Kafka did then.
"""

from __future__ import annotations

import uuid

from conformance.suite.model import Outcome

from fake_kafka import FakeKafka
from scripted_runs import bundled_case, run_on

ILLEGAL_GENERATION, STALE_MEMBER_EPOCH = 22, 113


class LateAssignor:
    """A consumer group of KIP-848 whose coordinator gives the first member its partition only at epoch 3,
    and checks a TxnOffsetCommit's member epoch as Kafka 4.3+ does (assignment epoch <= epoch <= member's)."""

    def __init__(self):
        self.members: dict[str, dict] = {}  # member id -> {"epoch": n, "partitions": [...], "since": epoch}
        self.group_epoch = 0

    def __call__(self, api, version, body):
        handler = getattr(self, api, None)
        return handler(body) if handler else None

    def ConsumerGroupHeartbeat(self, body):
        member_id = body["member_id"]
        if body["member_epoch"] == 0:  # a member joins: the group moves on, its assignment comes later
            self.group_epoch = max([member["epoch"] for member in self.members.values()] + [0]) + 1
            self.members[member_id] = {"epoch": self.group_epoch, "partitions": [], "since": None}
        member = self.members[member_id]
        changed = False
        if body["member_epoch"] != 0:
            if not member["partitions"] and member["epoch"] < 3:
                member["epoch"] += 1  # the background assignor has not reached it yet
                if member["epoch"] == 3:
                    member["partitions"], member["since"], changed = [0], 3, True
            elif member["epoch"] < self.group_epoch:
                member["epoch"] = self.group_epoch  # it keeps its partition at the new epoch
        assignment = {"topic_partitions": [{"topic_id": uuid.UUID(int=1), "partitions": member["partitions"]}]}
        return {"member_id": member_id, "member_epoch": member["epoch"], "heartbeat_interval_ms": 5000,
                "assignment": assignment if changed or body["member_epoch"] == 0 else None}

    def ConsumerGroupDescribe(self, body):
        return {"groups": [{"group_id": body["group_ids"][0], "group_state": "Stable", "group_epoch": self.group_epoch,
                            "assignor_name": "uniform", "members": [
                                {"member_id": member_id, "member_epoch": member["epoch"], "client_id": "c",
                                 "client_host": "/127.0.0.1", "subscribed_topic_names": [],
                                 "assignment": {"topic_partitions": [{"topic_id": uuid.UUID(int=1), "topic_name": "t",
                                                                      "partitions": member["partitions"]}]},
                                 "target_assignment": {"topic_partitions": []}}
                                for member_id, member in self.members.items()]}]}

    def TxnOffsetCommit(self, body):
        member = self.members.get(body["member_id"])
        epoch = body["generation_id_or_member_epoch"]
        fenced = member is None or member["since"] is None or not member["since"] <= epoch <= member["epoch"]
        return {"topics": [{"name": topic["name"], "partitions": [
            {"partition_index": partition["partition_index"], "error_code": STALE_MEMBER_EPOCH if fenced else 0}
            for partition in topic["partitions"]]} for topic in body["topics"]]}


def test_the_older_epoch_is_one_at_which_the_member_already_held_its_partition():
    case = bundled_case("kip848/txn-offset-commit.yaml", "older-epoch-of-a-kept-partition-accepted")
    script = LateAssignor()
    result = run_on(FakeKafka(script), case, 3)
    assert result.outcome is Outcome.PASSED, result.message  # before: differs, the epoch-1 commit fenced
    first = script.members["6f1d2c3b-0a4e-4f5d-9c8b-7a6e5d4c3b2a"]
    assert first["since"] == 3 and first["epoch"] > 3
