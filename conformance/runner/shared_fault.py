"""One fault for several versions of one case: the items of a ``serial`` case on a cluster, run together.

A case that stops, kills or moves something on a cluster runs alone, and each of its versions stopped and started
a node of its own: a JVM start each, the three-node companion's longest chain. Its versions do the same steps on
resources of their own, so where their faults come to the same action (the same node stopped, or each its own
leadership moved), one action serves all of them, as :mod:`.shared_restart` does for broker restarts:

- the versions run at once; an item's fault step waits until every other item of the group is at a fault step or
  has ended, so nothing is done to the cluster while one of them is between its own steps;
- then each waiting item's fault is resolved to what it could do now (which node ``coordinator: ID`` names, which
  partition a ``move_leader`` moves; which nodes ``follower:`` may mean and which followers a ``block_coordinator_log``
  may stop: any, so the round takes the one most items can). The items whose faults come
  to one action (a node fault on the same node; any leadership moves, each partition moved once: a move of another
  item's partition is not seen by this one; coordinators' logs blocked by stopping the same follower, each item then
  waiting until its own coordinator serves with the blocked log) go on after it is made once; the others leave the round (:class:`Regroup`) and run again from their first step
  in the next round, on fresh resources, with a whole cluster;
- the cluster is made whole once, after the round (the runner does not heal after each of its items).

Each item therefore meets exactly the fault its steps ask for, where they ask for it, as when alone. A fault that
cannot be resolved or made is that item's own error, raised in its step as when alone.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..suite.walk import walk
from ..targets.base import CapabilityMissing

if TYPE_CHECKING:
    from ..targets.kafka.faults import NodeFaults

# The faults a group can share: a node's (resolved to the node) and a leadership move (resolved to the partition).
NODE_FAULTS = ("stop_node", "kill_node", "pause_node", "resume_node", "start_node", "restart_node")
SHAREABLE = NODE_FAULTS + ("start_stopped_nodes", "move_leader", "block_coordinator_log")


class Regroup(BaseException):
    """Raised in an item's fault step: its fault is another action than the round's; it runs again in the next round.
    A BaseException, so that no step or runner handler takes it for the item's own error."""


def shares_faults(case) -> bool:
    """Whether the versions of ``case`` may share their faults: a serial case (not one sharing broker restarts)
    whose every fault step is a top-level one of :data:`SHAREABLE`."""
    if not case.serial or case.shares_restart:
        return False
    asking = [visit for visit in walk(case.steps) if visit.faults]
    return bool(asking) and all(visit.top for visit in asking) and all(
        fault.name in SHAREABLE for visit in asking for fault in visit.faults)


@dataclass(eq=False)
class _Waiting:
    name: str
    arguments: dict
    choices: tuple = ()  # what the fault may come to now, what it does alone first (see _choices)
    action: tuple = ()  # the one of them the round makes
    error: BaseException | None = None  # why it could not be resolved: the item's own
    go: bool = False
    regroup: bool = False


class SharedFault:
    """The rendezvous of ``members`` items of one case around the faults of ``target`` (see the module). Each item
    must :meth:`leave` once it has ended, however it ended; all of them must run at once."""

    def __init__(self, target, members: int):
        self.target = target
        self._changed = threading.Condition()
        self._members = members
        self._waiting: list[_Waiting] = []
        self.actions = 0  # faults made on the cluster for the group
        self.asked = 0  # fault steps the items went past (each would have been an action alone)

    def fault(self, name: str, arguments: dict) -> None:
        """An item's fault step: returns once its fault is made (by whichever item came last), raises
        :class:`Regroup` if it belongs to the next round, or what its own fault raised."""
        me = _Waiting(name, dict(arguments))
        with self._changed:
            self._waiting.append(me)
            if self._due():
                self._round()
            self._changed.wait_for(lambda: me.go or me.regroup)
        if me.regroup:
            raise Regroup(name)
        if me.error is not None:
            raise me.error

    def leave(self) -> None:
        """An item has ended: the others no longer wait for it."""
        with self._changed:
            self._members -= 1
            if self._due():
                self._round()

    def _due(self) -> bool:
        return 0 < len(self._waiting) >= self._members

    def _round(self) -> None:
        """Under the lock, every item not ended waiting: resolve, keep the largest class, make its action once."""
        waiting, self._waiting = self._waiting, []
        for item in waiting:
            try:
                item.choices = tuple(self._choices(item.name, item.arguments))
            except Exception as error:  # noqa: BLE001 - the item's own fault error, raised in its step
                item.error = error
        resolved = [item for item in waiting if item.error is None]
        # the action most items can take, the earliest item's own first where several tie
        preferred = [_kind(action) for item in resolved for action in item.choices]
        best = max(preferred, key=lambda kind: sum(any(_kind(action) == kind for action in item.choices)
                                                    for item in resolved), default=None)
        for item in resolved:
            item.action = next((action for action in item.choices if _kind(action) == best), item.choices[0])
        kept = [item for item in resolved if _kind(item.action) == best]
        if kept and kept[0].action[0] == "move":  # one move per partition: a second would move another item's again
            first: dict[str, tuple] = {}
            kept = [item for item in kept if first.setdefault(_moved(item.action), item.action) == item.action]
        try:
            made = set()
            for item in kept:  # a blocked log is each item's own wait for its coordinator, behind one stop
                if item.action not in made or item.action[0] == "block":
                    made.add(item.action)
                    self._make(item)
        except Exception as error:  # noqa: BLE001 - handed to every item that shared it, each reports it
            for item in kept:
                item.error = error
        self.actions += len({item.action for item in kept})
        self.asked += len(kept)
        for item in waiting:
            if any(item is one for one in kept) or item.error is not None:
                item.go = True
            else:
                item.regroup = True
        self._changed.notify_all()

    def _choices(self, name: str, arguments: dict) -> list[tuple]:
        if not self.target.offers_fault(name):  # the step skips the case, as when alone
            raise CapabilityMissing(f"target {self.target.spec!r} has no fault {name!r}")
        if name == "start_stopped_nodes":
            return [("heal",)]
        if name == "move_leader":
            return [("move", *sorted((key, repr(value)) for key, value in self._partition(arguments).items()))]
        if name == "block_coordinator_log":  # one follower stopped blocks every coordinator whose partition it follows
            named = {key: value for key, value in arguments.items() if key in ("coordinator", "group_coordinator")}
            topic, followers = self._nodes().blocking_followers(**named)
            return [("block", topic, follower) for follower in followers]
        named = {key: value for key, value in arguments.items() if key != "settle"}
        settle = bool(arguments.get("settle", True))
        return [("node", name, node, settle) for node in self._nodes().candidates(**named)]

    def _nodes(self) -> NodeFaults:
        """Who finds the nodes by role (the target's :meth:`~conformance.targets.base.Target.nodes_by_role`)."""
        nodes = self.target.nodes_by_role()
        if nodes is None:
            raise CapabilityMissing(f"target {self.target.spec!r} finds no nodes by role")
        return nodes

    def _partition(self, arguments: dict) -> dict:
        """A move's arguments with ``coordinator:``/``group_coordinator:`` replaced by the partition they name now
        (two items whose transactional ids one partition coordinates ask for one move)."""
        found = dict(arguments)
        for key, kind in (("coordinator", "transaction"), ("group_coordinator", "group")):
            if found.get(key) is not None:
                found["topic"], found["partition"] = self._nodes().coordinating_partition(str(found.pop(key)), kind)
        found.setdefault("partition", 0)
        return found

    def _make(self, item: _Waiting) -> None:
        if item.action[0] == "node":
            _, name, node, settle = item.action
            self.target.fault(name, node=node, settle=settle)
        elif item.action[0] == "block":
            self.target.fault(item.name, **item.arguments, follower=item.action[2])
        else:
            self.target.fault(item.name, **item.arguments)


def _kind(action: tuple) -> tuple:
    """What items must share to go on together: the action itself, or for leadership moves, moving at all."""
    return action[:1] if action[0] == "move" else action


def _moved(action: tuple) -> str:
    """The partition a move action moves: ``topic-partition``."""
    fields = dict(action[1:])
    return f"{fields.get('topic')}-{fields.get('partition')}"
