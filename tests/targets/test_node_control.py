"""--node-control: the user's commands that stop and start the nodes of an attached (HOST:PORT) cluster.

The broker test provisions three Kafka nodes, then attaches to them as HOST:PORT with a node-control file whose
commands are a small script asking the test (over a Unix socket, with a key the file's environment holds) to stop,
kill, start or move leadership on a real node: the failover cases pass through the attached path as they do on the
provisioned cluster, and a command that fails blocks its item, naming it.
"""

from __future__ import annotations

import json
import re
import os
import shlex
import subprocess
import sys
import threading
from multiprocessing.connection import Listener
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.cli import certify_complete
from conformance.results.record import Outcome
from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suites
from conformance.targets.base import Capability, CapabilityMissing, ControlFailed
from conformance.targets.hostport import HostPortTarget
from conformance.targets.kafka.cluster_target import KafkaClusterTarget
from conformance.targets.node_control import NodeControl, NodeControlError, load, offers

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret-key-not-to-be-shown"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "node-control.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ the file
def test_a_node_control_file_is_read_and_its_placeholders_checked(tmp_path):
    control = load(write(tmp_path, f"""
node_control: 1
commands:
  stop: "ssh {{ssh}} systemctl stop kafka@{{node}}"
  start: "ssh {{ssh}} systemctl start kafka@{{node}}"
  move_leadership: "admin elect {{topic}} {{partition}} {{node}} --on {{host}}:{{port}}"
nodes: [{{id: 1, ssh: "root@kafka one"}}, {{id: 2, ssh: root@kafka-2}}]
environment: {{TOKEN: {SECRET}}}
timeout_s: 30
"""))
    assert control.node_ids() == [1, 2] and control.timeout_s == 30
    # every value is shell-quoted: a space in a value stays one argument
    assert control.render("stop", {"node": 1, "ssh": "root@kafka one"}) == "ssh 'root@kafka one' systemctl stop kafka@1"
    assert SECRET not in repr(control)


def test_the_template_certify_writes_is_a_valid_node_control_file(tmp_path, capsys):
    from conformance.cli import build_parser

    path = tmp_path / "nc.yaml"
    arguments = build_parser().parse_args(["certify", "--init-node-control", str(path)])
    assert arguments.handler(arguments) == 0 and "--node-control" in capsys.readouterr().out
    control = load(path)
    assert sorted(control.commands) == ["start", "stop"] and control.node_ids() == [1, 2, 3]
    assert control.render("stop", {"node": 1, "ssh": "admin@kafka-1.example"}) == \
        "ssh admin@kafka-1.example sudo systemctl stop kafka"
    assert arguments.handler(arguments) == 2  # never overwritten


@pytest.mark.parametrize("body, message", [
    ("commands: {stop: a}", "commands: 'start' is a required property"),
    ("commands: {stop: a, start: b, reboot: c}", "commands: Additional properties are not allowed ('reboot'"),
    ("commands: {stop: 'stop {unit}', start: b}", "commands.stop: unknown placeholder {unit} (known: {host}, {node}, {port}"),
    ("commands: {stop: 'stop {node}', start: 'start {topic}'}", "commands.start: unknown placeholder {topic}"),
    ("commands: {stop: 'awk {print}', start: b}", "commands.stop: unknown placeholder {print}"),
    ("commands: {stop: 'x {', start: b}", "commands.stop: Single '{' encountered"),
    ("commands: {stop: a, start: b}\nnodes: [{id: 1}, {id: 1}]", "nodes: node ids repeat"),
    ("commands: {stop: 'x {unit}', start: b}\nnodes: [{id: 1, unit: a}, {id: 2}]", "commands.stop: unknown placeholder {unit}"),
    (f"commands: {{stop: a, start: b}}\nenvironment: {{TOKEN: [{SECRET}]}}", "environment.TOKEN: not a string"),
])
def test_a_malformed_node_control_file_is_named_by_file_and_field_without_secrets(tmp_path, body, message):
    path = write(tmp_path, "node_control: 1\n" + body)
    with pytest.raises(NodeControlError) as raised:
        load(path)
    assert str(raised.value).startswith(f"{path}:") and message in str(raised.value)
    assert SECRET not in str(raised.value)


def test_a_failing_command_is_one_line_naming_it_with_its_status_and_no_secret(tmp_path):
    control = NodeControl(path="nc.yaml", commands={"stop": f"echo 'token {SECRET} refused' >&2; exit 3",
                                                    "start": "echo ok; sleep 5"},
                          environment={"TOKEN": SECRET}, timeout_s=0.5)
    with pytest.raises(ControlFailed) as raised:
        control.run("stop", {"node": 2})
    assert str(raised.value) == "node control 'stop' for node 2 exited with status 3: token *** refused (nc.yaml)"
    with pytest.raises(ControlFailed, match=r"^node control 'start' for node 1 did not finish within 0.5 s \(nc.yaml\)$"):
        control.run("start", {"node": 1})
    control.commands["stop"] = 'test "$TOKEN" = ' + shlex.quote(SECRET)  # the environment reaches the command
    control.run("stop", {"node": 2})


def test_the_faults_offered_follow_the_commands_given():
    control = NodeControl(path="nc.yaml", commands={"stop": "a", "start": "b"})
    assert all(offers(control, name) for name in ("stop_node", "start_node", "restart_node", "start_stopped_nodes",
                                                  "move_leader", "block_coordinator_log"))
    assert not any(offers(control, name) for name in ("kill_node", "pause_node", "fail_log_dir", "proxy.delay"))
    control.commands.update(kill="c", pause="d", resume="e")
    assert offers(control, "kill_node") and offers(control, "pause_node") and offers(control, "resume_node")


def test_an_attached_target_has_the_cluster_faults_only_with_node_control():
    target = HostPortTarget("127.0.0.1:9")
    assert Capability.NODES not in target.capabilities and not target.offers_fault("stop_node")
    with pytest.raises(CapabilityMissing, match="--node-control FILE"):
        target.fault("stop_node", node=1)
    assert target.why_no_fault("stop_node") == ("target '127.0.0.1:9' has no fault 'stop_node': needs a way to stop "
                                                 "a node (--node-control FILE)")
    assert target.why_no_fault("proxy.delay") == "target '127.0.0.1:9' has no fault 'proxy.delay'"
    target.configure(node_control=NodeControl(path="nc.yaml", commands={"stop": "a", "start": "b"}))
    assert {Capability.NODES, Capability.RESTART, Capability.CONFIGURE} <= target.capabilities
    assert target.offers_fault("stop_node") and not target.offers_fault("kill_node")
    assert target.why_no_fault("pause_node").endswith("has no fault 'pause_node': nc.yaml gives no 'pause' or "
                                                      "'resume' command")
    assert target.why_no_fault("fail_log_dir").endswith("on the node's disks, which node control does not give")
    assert target.info().extra["node_control"] == {"file": "nc.yaml", "commands": ["start", "stop"], "nodes": None}
    assert Capability.NODES not in HostPortTarget("127.0.0.1:9").capabilities  # the class keeps its own


def test_a_node_that_could_not_be_started_again_blocks_the_next_fault_until_it_starts():
    from conformance.client.security import Security
    from conformance.targets.node_control import AttachedCluster, AttachedNode

    control = NodeControl(path="nc.yaml", commands={"stop": "true", "start": "echo 'unit failed' >&2; exit 1"})
    cluster = AttachedCluster("127.0.0.1:9", "127.0.0.1:9", Security(), control)
    cluster.nodes = [AttachedNode(cluster, {"node": number, "host": "127.0.0.1", "port": 9}, "127.0.0.1:9")
                     for number in (1, 2, 3)]
    cluster.nodes[1].running = False  # a case stopped it
    message = "node control 'start' for node 2 exited with status 1: unit failed (nc.yaml)"
    with pytest.raises(ControlFailed, match=re.escape(message)):
        cluster.heal()
    assert cluster.unhealed == message
    with pytest.raises(ControlFailed, match=re.escape(message)):  # tried again before the next fault, which does not run
        cluster.fault("stop_node", node=3)
    assert cluster.nodes[2].running


def test_certify_says_which_flag_gives_a_level_its_failover_cases():
    class Grade:
        incomplete, not_run, counted = [SimpleNamespace(suite="cluster.leadership-moves")], [], 3  # records: .suite
    [need] = certify_complete.needs_of(Grade(), [])
    assert need.startswith("cluster suites: needs a way to stop a node (--node-control FILE")
    [given] = certify_complete.needs_of(Grade(), [], node_control=True)
    assert "ran with --node-control" in given


def test_run_and_certify_take_the_node_control_file(tmp_path):
    from conformance.cli import build_parser
    from conformance.cli.run_options import pytest_options

    arguments = build_parser().parse_args(["run", "--target", "127.0.0.1:9092", "--node-control", "nc.yaml",
                                           str(ROOT / "suites" / "cluster")])
    options = pytest_options(arguments, "run-1")
    assert "--node-control=nc.yaml" in options
    bad = write(tmp_path, "node_control: 1\ncommands: {stop: a}\n")
    code = build_parser().parse_args(["certify", "--target", "127.0.0.1:9", "--node-control", str(bad)])
    assert code.handler(code) == 2


# ------------------------------------------------------------------------------ a real cluster, attached
HELPER = """
import os, sys
from multiprocessing.connection import Client
with Client(sys.argv[1], family="AF_UNIX", authkey=os.environ["CONTROL_KEY"].encode()) as connection:
    connection.send(sys.argv[2:])
    reply = connection.recv()
if reply != "ok":
    print(reply, file=sys.stderr)
    sys.exit(1)
"""


class NodeController:
    """What the node-control commands reach: stops, kills and starts the provisioned nodes' real processes, and
    moves leadership, at the helper script's request; keeps every call and the process ids it ended."""

    def __init__(self, cluster: KafkaClusterTarget, folder: Path):
        self.cluster, self.calls, self.ended = cluster, [], []
        self.address = str(folder / "control.sock")
        self.listener = Listener(self.address, family="AF_UNIX", authkey=SECRET.encode())
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            with connection:
                action, *arguments = connection.recv()
                try:
                    self._do(action, *arguments)
                    connection.send("ok")
                except Exception as error:  # noqa: BLE001 - told to the command, which exits 1 with it
                    connection.send(f"{type(error).__name__}: {error}")

    def _do(self, action: str, *arguments: str) -> None:
        if action == "move":
            topic, partition, node = arguments
            self.cluster.move_leader(topic=topic, partition=int(partition), to=int(node), settle=False)
        else:
            node = self.cluster.node(node=int(arguments[0]))
            if action in ("stop", "kill"):
                self.ended.append(node.pid)
                node.terminate() if action == "stop" else node.kill()
            else:
                node.launch()  # returns at once: the harness waits until the node is ready
        self.calls.append((action, *arguments))

    def file(self, folder: Path, **overrides: str) -> Path:
        helper = folder / "control.py"
        helper.write_text(HELPER, encoding="utf-8")
        base = f"{shlex.quote(sys.executable)} {shlex.quote(str(helper))} {shlex.quote(self.address)}"
        commands = {"stop": f"{base} stop {{node}}", "kill": f"{base} kill {{node}}",
                    "start": f"{base} start {{node}}", "move_leadership": f"{base} move {{topic}} {{partition}} {{node}}",
                    **overrides}
        path = folder / f"node-control-{len(list(folder.glob('node-control-*')))}.yaml"
        path.write_text("node_control: 1\ncommands:\n" + "".join(f"  {name}: {command!r}\n" for name, command
                                                                   in commands.items())
                        + f"environment: {{CONTROL_KEY: {SECRET}}}\ntimeout_s: 180\n", encoding="utf-8")
        return path

    def close(self) -> None:
        self.listener.close()
        self.thread.join(5)


FAILOVER_CASES = ("cluster.coordinators-and-leaders::commit-survives-coordinator-failover",  # kill_node, start
                  "cluster.commit-in-progress::add-offsets-while-commit-in-progress",  # stop_node a follower
                  "cluster.leadership-moves::commit-by-a-moved-coordinator")  # move_leader


@pytest.mark.kafka
@pytest.mark.broker
def test_failover_cases_pass_on_an_attached_cluster_through_node_control_as_on_the_provisioned_one(tmp_path):
    suites, errors = load_suites([ROOT / "suites" / "cluster"], components=bundled())
    assert errors == []
    cases = {case.full_id: case for suite in suites for case in suite.cases}
    chosen = [cases[name] for name in FAILOVER_CASES]
    cluster = KafkaClusterTarget("kafka,nodes=3")
    cluster.start()
    controller = NodeController(cluster, tmp_path)
    attached = HostPortTarget(cluster.nodes[0].bootstrap)
    attached.configure(node_control=load(controller.file(tmp_path)))
    try:
        attached.start()
        assert [node.node_id for node in attached.cluster.nodes] == [1, 2, 3]  # learnt from the cluster's Metadata
        outcomes = {}
        for target in (cluster, attached):
            runner = Runner(target, run_id="node-control-test")
            try:
                results = [runner.run(case, max(runner.case_versions(case), key=lambda v: -1 if v is None else v))
                           for case in chosen]
            finally:
                runner.close()
            outcomes[target.kind] = [(result.case_id, result.outcome, result.message) for result in results]
            assert all(node.running for node in cluster.nodes)  # healed after every case
        assert [outcome for _, outcome, _ in outcomes["host:port"]] == [Outcome.PASSED] * 3, outcomes["host:port"]
        assert [row[:2] for row in outcomes["host:port"]] == [row[:2] for row in outcomes["kafka-cluster"]]
        # the commands really ended broker processes and started them again, and moved a coordinator
        actions = [call[0] for call in controller.calls]
        assert {"kill", "stop", "start", "move"} <= set(actions), controller.calls
        for pid in controller.ended:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)

        # the exactly-once tier's real clients under the faults the commands carry out (a coordinator killed, a leader
        # moved): every check holds, as on the provisioned cluster (tests/semantic/test_semantic_live.py)
        calls = len(controller.calls)
        semantic = tmp_path / "semantic.jsonl"
        done = subprocess.run([sys.executable, "-m", "conformance", "semantic", "--target", cluster.nodes[0].bootstrap,
                               "--node-control", str(controller.file(tmp_path)), "--duration", "12",
                               "--fault-interval", "3", "--seed", "7", "--results", str(semantic),
                               "--histories", str(tmp_path / "histories")],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        rows = [json.loads(line) for line in semantic.read_text(encoding="utf-8").splitlines()]
        assert rows and all(row["outcome"] == "passed" for row in rows), done.stdout[-3000:]
        assert "kill" in [call[0] for call in controller.calls[calls:]], controller.calls[calls:]  # through the commands
        assert all(node.running for node in cluster.nodes)

        # through the command line: a command that fails blocks the items that needed it, naming it, no secret shown
        failing = controller.file(tmp_path, stop=f"echo 'no such unit (key {SECRET})' >&2; exit 5")
        results = tmp_path / "results.jsonl"
        done = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", cluster.nodes[0].bootstrap,
                               "--node-control", str(failing), "--results", str(results), "--alluredir", "",
                               str(ROOT / "suites" / "cluster" / "commit-in-progress.yaml"),
                               "--", "-k", "add-offsets-while-commit-in-progress"],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
        assert records and {record["outcome"] for record in records} == {"blocked"}, done.stdout[-2000:]
        assert all("node control 'stop' for node" in record["message"] and
                   "exited with status 5: no such unit (key ***)" in record["message"] for record in records)
        assert SECRET not in results.read_text(encoding="utf-8") + done.stdout + done.stderr
        assert all(node.running for node in cluster.nodes)
    finally:
        controller.close()
        cluster.stop()
