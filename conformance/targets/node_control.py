"""``--node-control FILE``: the user's commands that stop, start and move leadership on the nodes of a cluster the
harness attaches to (``HOST:PORT``), as Jepsen drives a cluster, so the failover cases run on a real deployment.

The file (YAML, checked against ``node_control.schema.json`` shipped beside this module) holds shell command
templates::

    node_control: 1
    commands:
      stop: "ssh {host} sudo systemctl stop kafka"
      start: "ssh {host} sudo systemctl start kafka"
      kill: "ssh {host} sudo systemctl kill --signal=KILL kafka"             # optional: kill_node
      move_leadership: "my-admin elect --topic {topic} --partition {partition} --leader {node}"  # optional
    environment: {ADMIN_TOKEN: "..."}  # optional: secrets the commands read as $ADMIN_TOKEN
    nodes:                             # optional: default, every broker the cluster's Metadata lists
      - {id: 1, host: kafka-1.internal}

Given it, the attached target gains the cluster's faults (:class:`~conformance.targets.nodes.NodeFaults`):
the harness finds the node a fault names by role through the cluster's own answers, runs the command, then waits
as it does on the nodes it provisions (a stopped node leaves Metadata; a started one is listed again and answers).
Without ``move_leadership`` the harness moves a leader itself, as Kafka's tools do (AlterPartitionReassignments,
then ElectLeaders PREFERRED). A failing command raises :class:`~conformance.targets.base.ControlFailed`: one line
naming the command and the node, its exit status and the tail of its error output with every ``environment``
value removed; the command's text is never shown (it may hold a secret).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import string
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


from .. import checked_yaml, resources
from ..client.cluster import Cluster
from ..client.security import Security
from .base import Capability, ControlFailed
from .nodes import FAULTS, NodeFaults

NODE_PLACEHOLDERS = ("node", "host", "port")
LEADERSHIP_PLACEHOLDERS = ("topic", "partition")
TAIL_CHARACTERS = 240
# The faults each optional command adds to those stop and start give.
NEEDS_COMMANDS = {"kill_node": ("kill",), "pause_node": ("pause", "resume"), "resume_node": ("pause", "resume")}
NOT_OFFERED = ("fail_log_dir",)  # the harness cannot reach an attached node's disks
# What a node-controlled cluster can do: its nodes one by one, and a restart of each in turn.
CAPABILITIES = frozenset({Capability.NODES, Capability.RESTART})


TEMPLATE = """\
# Commands the harness runs to control the nodes of your cluster (conformance run/certify --node-control FILE),
# so the failover cases (stop a node, kill one, move a coordinator) run on it. One node at a time; placeholders:
# {node} (its id), {host} and {port} (its address in the cluster's Metadata), any field of its entry under
# nodes, and for move_leadership {topic} and {partition} ({node}: the node to lead). Values are shell-quoted.
# Checked against node_control.schema.json; see docs/how-to/certify.md.
node_control: 1
commands:
  stop: "ssh {ssh} sudo systemctl stop kafka"        # a clean stop; returns once the process has ended
  start: "ssh {ssh} sudo systemctl start kafka"      # may return at once: the harness waits for the node
  # kill: "ssh {ssh} sudo systemctl kill --signal=KILL kafka"    # the cases that crash a node
  # pause: "ssh {ssh} sudo systemctl kill --signal=STOP kafka"   # with resume: a node that hangs
  # resume: "ssh {ssh} sudo systemctl kill --signal=CONT kafka"
  # restart: "ssh {ssh} sudo systemctl restart kafka"            # default: stop, then start
  # move_leadership: "your-admin-tool elect --topic {topic} --partition {partition} --leader {node}"
  #   default: the harness moves it as Kafka's tools do (AlterPartitionReassignments, ElectLeaders PREFERRED)
nodes:                 # default: every broker of the cluster's Metadata, with {node}, {host} and {port} only
  - {id: 1, ssh: admin@kafka-1.example}
  - {id: 2, ssh: admin@kafka-2.example}
  - {id: 3, ssh: admin@kafka-3.example}
# environment: {ADMIN_TOKEN: "..."}   # what the commands read as $ADMIN_TOKEN; never printed
timeout_s: 120         # per command, and for a started node to be ready
"""


class NodeControlError(ValueError):
    """A node-control file that cannot be used: the message names the file and the field."""


@dataclass
class NodeControl:
    """A checked node-control file: the command templates, the nodes' values, the commands' environment."""

    path: str
    commands: dict[str, str]
    nodes: list[dict] | None = None
    environment: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 120.0

    def __repr__(self) -> str:  # the environment holds secrets
        return f"NodeControl({self.path!r}, commands={sorted(self.commands)}, nodes={self.node_ids()})"

    def node_ids(self) -> list[int] | None:
        return None if self.nodes is None else [int(node["id"]) for node in self.nodes]

    def render(self, name: str, values: dict) -> str:
        """Command ``name`` with its placeholders filled from ``values``, each shell-quoted."""
        return self.commands[name].format_map({key: shlex.quote(str(value)) for key, value in values.items()})

    def run(self, name: str, values: dict) -> None:
        """Run command ``name`` for a node; :class:`ControlFailed` (one line, no secret) unless it exits 0."""
        what = f"node control {name!r} for node {values['node']}"
        process = subprocess.Popen(self.render(name, values), shell=True, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                   env={**os.environ, **self.environment}, start_new_session=True)
        try:
            out, err = process.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # its own session: the shell and whatever it started
            process.communicate()
            raise ControlFailed(f"{what} did not finish within {self.timeout_s:g} s ({self.path})") from None
        if process.returncode != 0:
            tail = self.tail(err) or self.tail(out)
            raise ControlFailed(f"{what} exited with status {process.returncode}"
                                f"{': ' + tail if tail else ''} ({self.path})")

    def tail(self, output: str) -> str:
        """The last lines of a command's output, on one line, with every environment value removed."""
        for secret in sorted(self.environment.values(), key=len, reverse=True):
            if secret:
                output = output.replace(secret, "***")
        text = " | ".join(line.strip() for line in output.strip().splitlines()[-3:] if line.strip())
        return text if len(text) <= TAIL_CHARACTERS else "..." + text[-TAIL_CHARACTERS:]


def load(path: str | Path) -> NodeControl:
    """Read and check a node-control file. Raises :class:`NodeControlError` naming the file and the field."""
    path = Path(path)
    schema = json.loads(resources.node_control_schema().read_text(encoding="utf-8"))
    try:  # the message never quotes an environment value: they are secrets
        raw = checked_yaml.load(path, schema, hide_values_under=("environment",))
    except checked_yaml.CheckedYamlError as error:
        raise NodeControlError(str(error)) from None
    nodes = raw.get("nodes")
    if nodes is not None:
        ids = [node["id"] for node in nodes]
        if len(set(ids)) != len(ids):
            raise NodeControlError(f"{path}: nodes: node ids repeat ({ids})")
    control = NodeControl(path=str(path), commands=dict(raw["commands"]), nodes=nodes,
                          environment=dict(raw.get("environment") or {}), timeout_s=float(raw.get("timeout_s", 120)))
    _check_placeholders(control)
    return control


def _check_placeholders(control: NodeControl) -> None:
    """Every placeholder of every command must have a value for every node (malformed braces too are named)."""
    shared = set(NODE_PLACEHOLDERS)
    if control.nodes is not None:  # a field every node has
        shared |= set.intersection(*(set(node) for node in control.nodes)) - {"id"}
    for name, template in control.commands.items():
        known = shared | (set(LEADERSHIP_PLACEHOLDERS) if name == "move_leadership" else set())
        try:
            used = {field_name for _, field_name, _, _ in string.Formatter().parse(template) if field_name is not None}
        except ValueError as error:
            raise NodeControlError(f"{control.path}: commands.{name}: {error} (a literal brace is written {{{{ or }}}})") \
                from None
        unknown = sorted(placeholder for placeholder in used if placeholder not in known)
        if unknown:
            raise NodeControlError(f"{control.path}: commands.{name}: unknown placeholder "
                                   + ", ".join("{" + placeholder + "}" for placeholder in unknown)
                                   + f" (known: {', '.join('{' + key + '}' for key in sorted(known))}; a field "
                                   "every node entry has is a placeholder too)")


def offers(control: NodeControl, name: str) -> bool:
    """Whether the cluster fault ``name`` can be carried out with these commands."""
    if name not in FAULTS or name in NOT_OFFERED:
        return False
    return all(command in control.commands for command in NEEDS_COMMANDS.get(name, ()))


def why_not(control: NodeControl | None, name: str) -> str:
    """What an attached target lacks for cluster fault ``name`` (``": needs ..."``), or "" for any other fault."""
    if name not in FAULTS:
        return ""
    if control is None:
        return ": needs a way to stop a node (--node-control FILE)"
    if name in NOT_OFFERED:
        return ": it needs the harness on the node's disks, which node control does not give"
    missing = [command for command in NEEDS_COMMANDS.get(name, ()) if command not in control.commands]
    return f": {control.path} gives no {' or '.join(repr(command) for command in missing)} command" if missing else ""


# ------------------------------------------------------------------------------ the attached cluster
class AttachedNode:
    """One node of an attached cluster, driven by the user's commands (the node interface
    :class:`~conformance.targets.nodes.Node`)."""

    data = disks = None  # its disks are out of the harness's reach

    def __init__(self, cluster: AttachedCluster, values: dict, address: str):
        """``values``: the command placeholders' values; ``address``: where it serves clients (its Metadata entry)."""
        self.cluster, self.values, self.address = cluster, values, address
        self.node_id = int(values["node"])
        self.running, self.paused = True, False

    def _run(self, name: str) -> None:
        self.cluster.control.run(name, self.values)

    def terminate(self) -> None:
        self._run("stop")
        self.running = self.paused = False

    def kill(self) -> None:
        self._run("kill")
        self.running = self.paused = False

    def pause(self, paused: bool) -> None:
        if paused != self.paused:
            self._run("pause" if paused else "resume")
            self.paused = paused

    def launch(self) -> None:
        self._run("start")
        self.running = True

    def restart(self) -> None:
        began = time.monotonic()
        if "restart" in self.cluster.control.commands:
            self._run("restart")
            self.running = True
        else:
            self.terminate()
            self.launch()
        self.wait_until_ready(began)

    def wait_until_restarted(self, began: float) -> None:
        """As :meth:`wait_until_ready`: what a crash left is the user's start command's to repair."""
        self.wait_until_ready(began)

    def wait_until_ready(self, began: float) -> None:
        """Until the cluster's Metadata lists the node again and it answers ApiVersions itself."""
        deadline = began + self.cluster.control.timeout_s
        while time.monotonic() < deadline:
            if self.cluster.lists(self.node_id) and self.cluster.answers(self.address):
                return
            time.sleep(0.25)
        raise ControlFailed(f"node control: node {self.node_id} was not ready {self.cluster.control.timeout_s:g} s "
                            f"after its start command returned (not in the cluster's Metadata, or not answering at "
                            f"{self.address}) ({self.cluster.control.path})")


class AttachedCluster(NodeFaults):
    """The nodes of the cluster behind a ``HOST:PORT`` target, under the user's commands (:class:`NodeControl`)."""

    nodes: list[AttachedNode]

    def __init__(self, spec: str, address: str, security: Security, control: NodeControl):
        self.spec, self.address, self.security, self.control = spec, address, security, control
        self.nodes = []
        self._blocked_topics: set[str] = set()
        self.unhealed: str | None = None  # why the last heal failed: retried before the next fault

    def discover(self) -> None:
        """Learn the nodes from the cluster's Metadata; the file's node list, if any, must name the same ones."""
        cluster = Cluster(self.address, timeout=10.0, security=self.security)
        try:
            cluster.api_versions()
            cluster.metadata([])
            brokers = dict(cluster.brokers)
        finally:
            cluster.close()
        listed = self.control.node_ids()
        if listed is not None and sorted(listed) != sorted(brokers):
            raise ControlFailed(f"node control: {self.control.path} lists nodes {sorted(listed)}, the cluster's "
                                f"Metadata at {self.address} lists {sorted(brokers)} (every node must be running "
                                "when the run starts)")
        entries = {int(node["id"]): node for node in self.control.nodes or []}
        self.nodes = []
        for node_id, (host, port) in sorted(brokers.items()):
            entry = entries.get(node_id, {})
            values = {"host": host, "port": port, **{key: value for key, value in entry.items() if key != "id"},
                      "node": node_id}
            self.nodes.append(AttachedNode(self, values, f"{host}:{port}"))

    @property
    def bootstrap(self) -> str:
        """The running nodes' addresses, then the user's: a client falls back along the list past a stopped node."""
        running = [node.address for node in self.nodes if node.running]
        return ",".join(dict.fromkeys([*running, self.address]))

    def lists(self, node_id: int) -> bool:
        cluster = self._admin(5.0)
        try:
            cluster.api_versions()
            cluster.metadata([])
            return node_id in cluster.brokers
        except Exception:  # noqa: BLE001 - a cluster in the middle of a change may refuse or drop us: ask again
            return False
        finally:
            cluster.close()

    def answers(self, address: str) -> bool:
        cluster = Cluster(address, timeout=5.0, security=self.security)
        try:
            cluster.api_versions()
            return True
        except Exception:  # noqa: BLE001 - not ready yet
            return False
        finally:
            cluster.close()

    def offers_fault(self, name: str) -> bool:
        return offers(self.control, name)

    def fault(self, name: str, **arguments) -> None:
        if self.unhealed is not None and self.offers_fault(name):
            self.heal()  # a case begins on the whole cluster, or is blocked naming why it cannot
        super().fault(name, **arguments)

    def heal(self) -> None:
        try:
            super().heal()
        except ControlFailed as failed:
            self.unhealed = str(failed)
            raise
        self.unhealed = None

    def restart(self) -> None:
        """Every node in turn, each ready before the next stops."""
        for node in self.nodes:
            node.restart()

    def _make_leader(self, cluster: Cluster, topic: str, partition: int, to: int, replicas: list[int],
                     deadline: float) -> None:
        if "move_leadership" not in self.control.commands:
            super()._make_leader(cluster, topic, partition, to, replicas, deadline)
            return
        node = next(node for node in self.nodes if node.node_id == to)
        self.control.run("move_leadership", {**node.values, "topic": topic, "partition": partition})
