"""The faults of an exactly-once run: those the target can take, one at a time, each healed before the next.

A multi-node Kafka loses the coordinator of a transactional id, the leader of an input partition and
the group coordinator in turn, and has an output partition's leader and a transaction coordinator moved
with nothing stopped; a single provisioned broker
is restarted; a target behind the fault proxy also gets connections cut around EndTxn and
TxnOffsetCommit, a lost Produce response, a duplicated Produce and slow AddPartitionsToTxn answers;
librdkafka's mock answers EndTxn, Produce, TxnOffsetCommit and AddPartitionsToTxn with retriable errors
and takes its brokers down; a HOST:PORT cluster given node control (``--node-control``) takes the multi-node
faults its commands allow. A target that can take no fault (Tansu, HOST:PORT without node control) runs the
workload without any: the run says so.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..targets.base import Capability, Target
from .workload import Plan, Worker


@dataclass(frozen=True)
class Fault:
    """A fault the nemesis injects: its name and arguments, how long it lasts and how it is undone."""
    name: str  # a target fault, or "restart"
    arguments: dict = field(default_factory=dict)
    lasts_s: float = 0.0  # how long it stays before the target is healed
    undo: tuple = ()  # (fault, arguments) pairs that end it, for targets whose heal() does not


def _mock_errors(api: str, *errors: str) -> Fault:
    return Fault("request_errors", {"api": api, "errors": list(errors)}, 3.0,
                 undo=(("clear_request_errors", {"api": api}),))


def faults_for(target: Target, plan: Plan) -> list[Fault]:
    """The faults the target can take during the workload, chosen by its capabilities and kind."""
    capabilities = target.capabilities
    faults: list[Fault] = []
    if Capability.NODES in capabilities:  # those it offers: an attached cluster's commands may not kill a node
        faults += [fault for fault in (
            Fault("kill_node", {"coordinator": f"semantic-writer-0-{plan.run}"}, 5.0),
            Fault("move_leader", {"topic": plan.output_topic, "partition": 0}),
            Fault("kill_node", {"leader": {"topic": plan.input_topic, "partition": 0}}, 5.0),
            Fault("move_leader", {"coordinator": f"semantic-writer-1-{plan.run}"}),
            Fault("stop_node", {"group_coordinator": plan.group}, 5.0)) if target.offers_fault(fault.name)]
    elif Capability.RESTART in capabilities:
        faults.append(Fault("restart"))
    if target.kind == "rdkafka-mock":  # librdkafka's mock answers chosen requests with errors, or goes down
        faults += [_mock_errors("EndTxn", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"),
                   _mock_errors("Produce", "NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT"),
                   _mock_errors("TxnOffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS"),
                   _mock_errors("AddPartitionsToTxn", "CONCURRENT_TRANSACTIONS", "CONCURRENT_TRANSACTIONS"),
                   Fault("broker_down", {"broker_id": -1}, 3.0, undo=(("broker_up", {"broker_id": -1}),))]
    if Capability.PROXY in capabilities:
        faults += [Fault("proxy.cut_after", {"api": "EndTxn"}, 3.0),
                   Fault("proxy.drop_response", {"api": "Produce"}, 6.0),
                   Fault("proxy.delay", {"api": "AddPartitionsToTxn", "ms": 1500, "times": 3}, 5.0),
                   Fault("proxy.cut_before", {"api": "TxnOffsetCommit"}, 3.0),
                   Fault("proxy.duplicate_request", {"api": "Produce"}, 3.0)]
    return faults


class Nemesis(Worker):
    """The worker that injects the faults one after another while the workload runs, recording each in the history."""
    def __init__(self, plan: Plan, history, stop, target: Target, faults: list[Fault], interval_s: float):
        super().__init__("nemesis", plan, history, stop)
        self.target, self.faults, self.interval_s = target, faults, interval_s
        self.applied = 0

    def work(self) -> None:
        """Apply the faults in turn, one every ``interval_s``, until the run stops."""
        for fault in itertools.cycle(self.faults):
            self.pause(self.interval_s)
            if self.stop_event.is_set():
                return
            self.apply(fault)
            self.pause(fault.lasts_s)
            for name, arguments in fault.undo:
                self.apply(Fault(name, arguments), counted=False)
            self.heal()

    def apply(self, fault: Fault, *, counted: bool = True) -> None:
        """Inject ``fault``, record it, let it last, then undo it; a fault that cannot be applied is recorded, not
        raised."""
        self.history.record(self.process, "fault", "invoke", fault=fault.name, arguments=fault.arguments)
        try:
            if fault.name == "restart":
                self.target.restart()
            else:
                self.target.fault(fault.name, **fault.arguments)
        except Exception as error:  # noqa: BLE001 - a fault the target refused is recorded, not a crash
            self.history.record(self.process, "fault", "info", fault=fault.name, error=f"{type(error).__name__}: {error}")
            return
        self.applied += counted
        self.history.record(self.process, "fault", "ok", fault=fault.name)

    def heal(self) -> None:
        """Undo what faults left behind on the target, and record it."""
        try:
            self.target.heal()
            self.history.record(self.process, "fault", "ok", fault="heal")
        except Exception as error:  # noqa: BLE001
            self.history.record(self.process, "fault", "info", fault="heal", error=f"{type(error).__name__}: {error}")
