"""A multi-node Apache Kafka: spec parsing, node faults, and the cluster suite passing on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.suite.loader import load_suites
from conformance.suite.model import Outcome
from conformance.suite.runner import Runner
from conformance.targets.kafka import kafka_target_kind
from conformance.targets.kafka_cluster import KafkaClusterTarget, kafka_cluster_target_kind, parse

ROOT = Path(__file__).resolve().parents[1]


def test_cluster_specs_parse_and_go_to_the_cluster_kind_only():
    assert parse("kafka,nodes=3") == ("kafka", {"nodes": 3})
    assert parse("kafka:3.9.1,nodes=3,min.insync.replicas=2") == ("kafka:3.9.1", {"nodes": 3, "min.insync.replicas": 2})
    for bad in ("kafka,nodes=x", "kafka,replicas=3", "kafka:4.4.0,nodes=0"):
        with pytest.raises(ValueError):
            parse(bad)
    assert kafka_cluster_target_kind().matches("kafka:4.4.0,nodes=3")
    assert not kafka_target_kind().matches("kafka:4.4.0,nodes=3") and kafka_target_kind().matches("kafka:4.4.0")


def test_nodes_share_a_cluster_id_and_replicate_the_internal_topics():
    # feature levels: on every node of a cluster; without nodes= the spec is one node's
    assert parse("kafka,nodes=3,transaction.version=1") == ("kafka", {"nodes": 3, "transaction.version": 1})
    assert KafkaClusterTarget("kafka,nodes=2,transaction.version=1").nodes[1].features == {"transaction.version": 1}
    assert not kafka_cluster_target_kind().matches("kafka,transaction.version=1")
    assert kafka_target_kind().matches("kafka,transaction.version=1")
    target = KafkaClusterTarget("kafka,nodes=3,min.insync.replicas=2")
    assert [node.node_id for node in target.nodes] == [1, 2, 3]
    assert len({node.cluster_id for node in target.nodes}) == 1
    assert {node.replicas for node in target.nodes} == {3}
    assert all(node.overrides["min.insync.replicas"] == "2" for node in target.nodes)


@pytest.mark.kafka
@pytest.mark.broker
def test_the_cluster_suite_passes_on_three_nodes_and_leaves_the_cluster_whole():
    suites, errors = load_suites([ROOT / "suites" / "cluster"])
    assert errors == []
    target = KafkaClusterTarget("kafka,nodes=3")
    target.start()
    runner = Runner(target, run_id="cluster-test")
    try:
        results = [runner.run(case, version) for suite in suites for case in suite.cases
                   for version in runner.case_versions(case)]
        bad = [f"{r.case_id} v{r.version}: {r.outcome.value}: {r.message}" for r in results
               if r.outcome not in (Outcome.PASSED, Outcome.UNSUPPORTED)]
        assert not bad, "\n".join(bad)
        assert sum(r.outcome is Outcome.PASSED for r in results) >= 45
        assert all(node.pid is not None for node in target.nodes)  # every fault was healed
    finally:
        runner.close()
        target.stop()
    assert all(node.pid is None for node in target.nodes)
