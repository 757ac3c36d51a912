"""SharedFault: the versions of one serial case on a cluster share a fault where their faults come to one action;
the others run again in a next round, and nothing is done to the cluster while an item is between its steps."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from conformance.runner.shared_fault import Regroup, SharedFault, shares_faults
from conformance.targets.base import Capability


class Cluster:
    """A cluster that resolves ``follower: {topic}`` through ``followers`` (a node, or the nodes that follow it, the
    first what a fault alone takes) and notes each fault made."""

    spec = "kafka,nodes=3"
    capabilities = frozenset({Capability.NODES})

    def __init__(self, followers: dict[str, int | list[int]], partitions: dict[str, int] | None = None):
        self.followers = {key: [value] if isinstance(value, int) else value for key, value in followers.items()}
        self.partitions = partitions or {}
        self.made: list[tuple] = []
        self.heals = 0

    def offers_fault(self, name: str) -> bool:
        return name != "fail_log_dir"

    def nodes_by_role(self) -> Cluster:
        return self

    def candidates(self, *, follower: dict | None = None, node: int | None = None, **_) -> list[int]:
        return [node] if node is not None else self.followers[follower["topic"]]

    def blocking_followers(self, *, coordinator: str) -> tuple[str, list[int]]:
        return "__transaction_state", self.followers[coordinator]

    def coordinating_partition(self, key: str, kind: str = "transaction") -> tuple[str, int]:
        return "__transaction_state", self.partitions[key]

    def fault(self, name: str, **arguments) -> None:
        if name == "fail_log_dir":
            raise AssertionError("never made: the cluster does not offer it")
        time.sleep(0.02)
        self.made.append((name, dict(arguments)))

    def heal(self) -> None:
        self.heals += 1


def member(shared: SharedFault, faults: list[tuple[str, dict]], log: list, name: str,
           before: float = 0.0) -> threading.Thread:
    def run():
        try:
            time.sleep(before)
            for fault, arguments in faults:
                shared.fault(fault, arguments)
                log.append((name, fault))
            log.append((name, "ended"))
        except Regroup:
            log.append((name, "regroup"))
        except Exception as error:  # noqa: BLE001 - noted for the test
            log.append((name, f"raised {type(error).__name__}"))
        finally:
            shared.leave()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def run_all(shared: SharedFault, plans: dict[str, list], delays: dict[str, float] | None = None) -> list:
    log: list = []
    threads = [member(shared, faults, log, name, (delays or {}).get(name, 0.0)) for name, faults in plans.items()]
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    return log


def stop(topic: str) -> tuple[str, dict]:
    return "stop_node", {"follower": {"topic": topic, "partition": 0}}


def test_versions_whose_faults_stop_one_node_share_one_stop_and_the_others_run_again():
    cluster = Cluster({"t1": 2, "t2": 2, "t3": 3})
    shared = SharedFault(cluster, 3)
    log = run_all(shared, {name: [stop(topic), ("start_stopped_nodes", {})] for name, topic in
                           (("v1", "t1"), ("v2", "t2"), ("v3", "t3"))}, delays={"v1": 0.1})
    # node 2 stopped once for v1 and v2 (v1 came late: nobody went on before it arrived), then one heal
    assert cluster.made == [("stop_node", {"node": 2, "settle": True}), ("start_stopped_nodes", {})]
    assert ("v3", "regroup") in log and ("v1", "ended") in log and ("v2", "ended") in log
    assert (shared.asked, shared.actions) == (4, 2)


def test_behind_the_fault_proxy_the_cluster_finds_the_nodes_and_makes_the_fault():
    """The proxy forwards the cluster's node finding (it had none of its own: every shared node fault on a proxied
    cluster was the items' error)."""
    from conformance.targets.proxied import ProxiedTarget

    cluster = Cluster({"t1": 2, "t2": 2})
    proxied = ProxiedTarget("proxy+kafka,nodes=3", cluster)  # type: ignore[arg-type] - a stand-in cluster
    assert Capability.NODES in proxied.capabilities
    log = run_all(SharedFault(proxied, 2), {name: [stop(topic)] for name, topic in (("v1", "t1"), ("v2", "t2"))})
    assert cluster.made == [("stop_node", {"node": 2, "settle": True})]
    assert sorted(log) == [("v1", "ended"), ("v1", "stop_node"), ("v2", "ended"), ("v2", "stop_node")]


def test_a_follower_most_items_can_stop_is_stopped_for_all_of_them_though_alone_each_would_stop_another():
    # alone, v1 stops node 2 and v2 node 3; both partitions are followed by node 3 too
    cluster = Cluster({"t1": [2, 3], "t2": [3, 1], "t3": [1, 3]})
    shared = SharedFault(cluster, 3)
    log = run_all(shared, {name: [stop(topic), ("start_stopped_nodes", {})] for name, topic in
                           (("v1", "t1"), ("v2", "t2"), ("v3", "t3"))})
    assert cluster.made == [("stop_node", {"node": 3, "settle": True}), ("start_stopped_nodes", {})]
    assert sorted(entry for entry in log if entry[1] == "ended") == [("v1", "ended"), ("v2", "ended"), ("v3", "ended")]
    # where no follower is common to all, the one most can stop: ties go to the first item's own
    cluster = Cluster({"t1": [2, 3], "t2": [1, 2], "t3": [1, 3]})
    shared = SharedFault(cluster, 3)
    log = run_all(shared, {name: [stop(topic)] for name, topic in (("v1", "t1"), ("v2", "t2"), ("v3", "t3"))},
                  delays={"v2": 0.05, "v3": 0.1})
    assert cluster.made == [("stop_node", {"node": 2, "settle": True})] and ("v3", "regroup") in log


def test_coordinator_logs_blocked_by_any_in_sync_follower_share_the_one_most_can_stop():
    cluster = Cluster({"a": [1, 3], "b": [3, 2]})
    shared = SharedFault(cluster, 2)
    run_all(shared, {name: [("block_coordinator_log", {"coordinator": name})] for name in ("a", "b")})
    assert sorted(cluster.made, key=str) == [("block_coordinator_log", {"coordinator": "a", "follower": 3}),
                                            ("block_coordinator_log", {"coordinator": "b", "follower": 3})]


def test_leadership_moves_of_other_partitions_are_each_made_once_and_a_partition_is_moved_once():
    cluster = Cluster({}, partitions={"a": 0, "b": 0, "c": 1})
    shared = SharedFault(cluster, 3)
    log = run_all(shared, {name: [("move_leader", {"coordinator": name})] for name in ("a", "b", "c")})
    moved = sorted(arguments["coordinator"] for name, arguments in cluster.made)
    assert len(moved) == 2 and "c" in moved  # a and b are coordinated by one partition: one move serves both
    assert sorted(entry for entry in log if entry[1] == "ended") == [("a", "ended"), ("b", "ended"), ("c", "ended")]


def test_coordinator_logs_blocked_by_one_follower_share_its_stop_each_waiting_for_its_own_coordinator():
    cluster = Cluster({"a": 3, "b": 3, "c": 1})
    shared = SharedFault(cluster, 3)
    log = run_all(shared, {name: [("block_coordinator_log", {"coordinator": name})] for name in ("a", "b", "c")})
    assert sorted(cluster.made, key=str) == [("block_coordinator_log", {"coordinator": "a", "follower": 3}),
                                            ("block_coordinator_log", {"coordinator": "b", "follower": 3})]
    assert ("c", "regroup") in log and (shared.asked, shared.actions) == (2, 1)


def test_a_fault_the_target_does_not_offer_is_that_items_own_error():
    cluster = Cluster({"t1": 2, "t2": 2})
    shared = SharedFault(cluster, 3)
    log = run_all(shared, {"v1": [stop("t1")], "v2": [stop("t2")], "v3": [("fail_log_dir", {"topic": "t1"})]})
    assert ("v3", "raised CapabilityMissing") in log and ("v1", "ended") in log and ("v2", "ended") in log
    assert cluster.made == [("stop_node", {"node": 2, "settle": True})]


def test_nothing_is_done_while_an_item_is_between_its_steps():
    cluster = Cluster({"t1": 2, "t2": 2})
    shared = SharedFault(cluster, 2)
    log = run_all(shared, {"v1": [stop("t1")], "v2": [stop("t2")]}, delays={"v2": 0.2})
    assert [entry for entry in log if entry[1] == "stop_node"] and len(cluster.made) == 1


def bundled_cases(folder: str, name: str) -> list:
    from conformance.runner.steps import bundled
    from conformance.suite.loader import load_suites

    suites, errors = load_suites([Path(__file__).resolve().parents[2] / "suites" / folder / name],
                                 components=bundled())
    assert errors == []
    return suites[0].cases


def test_which_cases_share_their_faults():
    cases = {case.id: case for case in bundled_cases("cluster", "coordinators-and-leaders.yaml")}
    assert shares_faults(cases["produce-not-enough-replicas"])  # stop a follower, then start it again
    assert shares_faults(cases["commit-survives-coordinator-failover"])
    assert not shares_faults(cases["init-producer-id-not-coordinator"])  # not serial: runs beside the others
    blocked = bundled_cases("cluster", "coordinator-log-blocked.yaml")
    assert all(map(shares_faults, blocked))  # one follower stopped blocks every coordinator whose partition it follows
    disks = bundled_cases("cluster", "failed-disk.yaml")
    assert not any(map(shares_faults, disks))  # a failed disk is made alone
    restarts = [case for case in bundled_cases("kip98", "faults.yaml") if case.shares_restart]
    assert restarts and not any(map(shares_faults, restarts))  # those share broker restarts instead


@pytest.mark.kafka
@pytest.mark.broker
def test_on_a_kafka_cluster_the_versions_of_a_case_share_their_faults_with_the_verdicts_of_alone():
    """produce-not-enough-replicas at every Produce version Kafka 4.4.0 has: each stops a follower of its topic and
    is refused NOT_ENOUGH_REPLICAS, as when alone, with fewer node stops than items."""
    from conformance.results.record import Outcome
    from conformance.runner.parallel import RunAhead, items_of
    from conformance.runner.runner import Runner
    from conformance.targets.kafka.broker import kafka_target_kind
    from conformance.targets.kafka.cluster_target import KafkaClusterTarget

    reason = kafka_target_kind().availability()
    if reason:
        pytest.skip(reason)
    cases = [case for case in bundled_cases("cluster", "coordinators-and-leaders.yaml")
             if case.id == "produce-not-enough-replicas"]
    target = KafkaClusterTarget("kafka,nodes=3")
    target.start()
    stops = []
    original = target.fault

    def noted(name, **arguments):
        if name == "stop_node":
            stops.append(arguments)
        return original(name, **arguments)

    target.fault = noted
    try:
        runner = Runner(target, run_id="shared-fault")
        items = items_of(runner, cases)
        ahead = RunAhead(runner, items, 4)
        try:
            results = [ahead.result(case, version) for case, version in items]
        finally:
            ahead.close()
            runner.close(keep_topics=True)
    finally:
        target.stop()
    assert len(results) >= 8
    assert {result.outcome for result in results} <= {Outcome.PASSED, Outcome.UNSUPPORTED}, \
        [(result.version, result.outcome, result.message[:300]) for result in results]
    passed = sum(result.outcome is Outcome.PASSED for result in results)
    assert len(stops) < passed  # alone, each passed item stopped a node of its own
