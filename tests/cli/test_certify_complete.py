"""certify complete in one command: the companions planned for a Kafka node, their results graded as the target's,
and what a level lacks said in words a vendor can act on (no broker: companions are small Python processes)."""

from __future__ import annotations

import json
import sys

from report_records import record, result_record, write_jsonl

from conformance.cli import certify_complete, main
from conformance.cli.certify_complete import Companion


def test_single_kafka_nodes_get_companions_and_nothing_else_does():
    assert all(map(certify_complete.is_single_kafka, ["kafka", "kafka:3.9.1", "kafka,transaction.version=1"]))
    assert not any(map(certify_complete.is_single_kafka,
                       ["kafka,nodes=3", "proxy+kafka", "tansu", "rdkafka-mock", "broker.example:9092"]))
    assert all(map(certify_complete.is_attached, ["broker.example:9092", "acme:1.0@127.0.0.1:9092"]))
    assert not any(map(certify_complete.is_attached, ["kafka", "proxy+127.0.0.1:9092", "kafka,nodes=3"]))
    from conformance.extension import Extensions

    assert not certify_complete.is_attached("rdkafka-mock:3", Extensions.for_run().target_kinds())


def test_the_plan_keeps_the_version_and_feature_options(tmp_path):
    planned = {companion.name: companion for companion in
               certify_complete.plan("kafka:3.9.1,transaction.version=1", tmp_path, "run-1", semantic_seconds=5)}
    assert planned["cluster"].spec == "kafka:3.9.1,nodes=3,transaction.version=1"
    assert planned["proxy"].spec == "proxy+kafka:3.9.1,transaction.version=1"
    assert "cluster.leadership-moves" in planned["cluster"].suites and "--long" in planned["cluster"].command
    # the cases that fast-forward to the last epoch run on a cluster of their own, in the other lane
    epoch = planned["cluster (epoch space)"]
    assert epoch.suites == ("cluster.epoch-rotation-failover",) and epoch.spec == planned["cluster"].spec
    assert "cluster.epoch-rotation-failover" not in planned["cluster"].suites
    assert planned["cluster"].lane == 0 and {c.lane for name, c in planned.items() if name != "cluster"} == {1}
    assert planned["proxy"].suites == ("faults.proxy-kip890", "faults.proxy-kip98")
    assert len({str(c.results) for c in planned.values()}) == len(planned)  # a results file each
    classic, consumer = planned["exactly-once (classic group)"], planned["exactly-once (consumer group)"]
    assert classic.suites == ("semantic.exactly-once",) and consumer.suites == ("semantic.exactly-once.consumer-group",)
    assert consumer.command[consumer.command.index("--group-protocol") + 1] == "consumer"
    assert consumer.command[consumer.command.index("--duration") + 1] == "5"


def test_an_attached_broker_gets_the_proxy_and_the_tier_and_says_what_it_lacks(tmp_path):
    spec = "acme:1.0@127.0.0.1:19092"
    planned = {companion.name: companion for companion in
               certify_complete.plan(spec, tmp_path, "run-1", semantic_seconds=5, client_config="client.properties")}
    assert set(planned) == {"proxy", "exactly-once (classic group)", "exactly-once (consumer group)"}
    assert planned["proxy"].spec == f"proxy+{spec}" and "--client-config" in planned["proxy"].command
    # without a way to stop its nodes, the tier takes the fault proxy's faults
    assert planned["exactly-once (classic group)"].spec == f"proxy+{spec}"
    given = {companion.name: companion for companion in
             certify_complete.plan(spec, tmp_path, "run-1", semantic_seconds=5, node_control="nodes.yaml")}
    tier = given["exactly-once (consumer group)"]
    assert tier.spec == spec and tier.command[tier.command.index("--node-control") + 1] == "nodes.yaml"
    # suite paths: only the companions of the suites among them, and no tier
    [proxy] = certify_complete.plan(spec, tmp_path, "run-1", semantic_seconds=5,
                                    paths=[str(certify_complete.bundled_suites() / "faults" / "proxy-kip98.yaml")])
    assert proxy.suites == ("faults.proxy-kip98",)


def companions_of(spec: str, tmp_path, **options) -> dict[str, str]:
    """companion name -> the spec it runs on."""
    return {companion.name: companion.spec
            for companion in certify_complete.plan(spec, tmp_path, "run-1", semantic_seconds=5, **options)}


def test_a_target_gets_what_its_kind_allows_provisioned_or_attached(tmp_path):
    """Tansu gets the fault proxy and the exactly-once tier through it whether the harness starts it or attaches to
    it; librdkafka's mock runs the tier on itself (its own errors and downed brokers are the faults); a target
    behind the proxy already gets no second one; only a single Kafka node gets the three-node cluster."""
    attached = "tansu:0.6.0@127.0.0.1:19092"
    tier = ("exactly-once (classic group)", "exactly-once (consumer group)")
    assert companions_of("tansu", tmp_path) == {"proxy": "proxy+tansu", **dict.fromkeys(tier, "proxy+tansu")}
    assert companions_of(attached, tmp_path) == {"proxy": f"proxy+{attached}",
                                                 **dict.fromkeys(tier, f"proxy+{attached}")}
    assert companions_of("rdkafka-mock", tmp_path) == {"proxy": "proxy+rdkafka-mock",
                                                       **dict.fromkeys(tier, "rdkafka-mock")}
    assert companions_of("rdkafka-mock:3", tmp_path)["proxy"] == "proxy+rdkafka-mock:3"
    assert companions_of("proxy+tansu", tmp_path) == dict.fromkeys(tier, "proxy+tansu")
    assert companions_of("kafka,nodes=3", tmp_path) == {"proxy": "proxy+kafka,nodes=3",
                                                        **dict.fromkeys(tier, "kafka,nodes=3")}
    assert set(companions_of("kafka", tmp_path)) == {"cluster", "cluster (epoch space)", "proxy", *tier}
    assert companions_of("no-such-kind", tmp_path) == {}
    # an attached broker's --restart-command goes to the fault proxy's run, on the same broker
    [proxy] = certify_complete.plan(attached, tmp_path, "run-1", semantic_seconds=5, restart_command="svc restart",
                                    paths=[str(certify_complete.bundled_suites() / "faults" / "proxy-kip98.yaml")])
    assert proxy.command[proxy.command.index("--restart-command") + 1] == "svc restart"


def companion(tmp_path, name: str, suite: str, rows: list[dict] | None, spec: str = "kafka,nodes=3") -> Companion:
    results = tmp_path / f"{name}.jsonl"
    script = (f"import json; open({str(results)!r}, 'w').write(''.join(json.dumps(row) + '\\n' for row in {rows!r}))"
              if rows is not None else "import sys; print('could not start the cluster'); sys.exit(3)")
    return Companion(name, "why", spec, (suite,), [sys.executable, "-c", script], results)


def test_companion_results_replace_the_main_runs_and_keep_where_they_ran(tmp_path):
    main_rows = [result_record("commit", 3, "passed"),
                 result_record("failover", 3, "skipped", suite="cluster.leadership-moves", message="needs nodes=3")]
    cluster_rows = [record("failover", 3, "passed", suite="cluster.leadership-moves", target="kafka,nodes=3")]
    companions = [companion(tmp_path, "cluster", "cluster.*", cluster_rows),
                  companion(tmp_path, "proxy", "faults.*", None, spec="proxy+kafka")]
    extra = certify_complete.finish(companions, "kafka", certify_complete.start(companions))
    combined = certify_complete.combine(main_rows, companions, extra)
    assert [(row.suite, row.outcome, row.target, row.evidence().get("ran_on")) for row in combined] == [
        ("kip98.transactions", "passed", "kafka", None),
        ("cluster.leadership-moves", "passed", "kafka", "kafka,nodes=3")]
    assert companions[0].facts()["items"] == 1 and companions[0].problem == ""
    assert companions[1].problem.startswith("no results (exit 3): could not start the cluster")
    # A level with items of both without a verdict: the proxy's suites lack what its companion did not give;
    # the cluster's companion ran, so its items' own messages say why.
    from conformance.report.certify.levels import Grade, Level

    grade = Grade(Level(id="strict", name="Strict", summary=""), "incomplete",
                  incomplete=[result_record("failover", 3, "error", suite="cluster.leadership-moves"),
                              result_record("drop", 3, "skipped", suite="faults.proxy-kip98")])
    [need] = certify_complete.needs_of(grade, companions)
    assert need.startswith("faults suites: needs the fault proxy") and "proxy on proxy+kafka gave none" in need


def test_a_level_needing_node_control_says_so_on_a_target_that_gives_none(tmp_path, capsys):
    rows = [record("commit", 3, "passed", target="broker.example:9092"),
            record("failover", 3, "skipped", suite="cluster.leadership-moves", target="broker.example:9092",
                   message="needs the capability nodes")]
    results = write_jsonl(tmp_path / "r.jsonl", rows)
    assert main(["certify", "--results", str(results), "-o", str(tmp_path / "cert")]) == 0
    facts = json.loads(next((tmp_path / "cert").glob("*/certification.json")).read_text())
    strict = next(level for level in facts["levels"] if level["id"] == "strict")
    assert strict["status"] == "incomplete"
    assert any("cluster suites: needs a way to stop a node (--node-control FILE" in reason
               for reason in strict["reasons"])
    faults = next(level for level in facts["levels"] if level["id"] == "exactly-once-under-faults")
    assert any("semantic suites: needs the exactly-once tier's real clients" in reason for reason in faults["reasons"])
