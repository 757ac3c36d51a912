"""A departing history written as a suite file in the bundled format, which ``conformance run`` reproduces.

The case sends the history's requests in order, on names of its own (the suite's topics, transactional ids and
groups), with the producer ids and epochs each InitProducerId saved; the departing request is the API under
test, at the version it was sent, expecting what the rule demands. Reads before it change nothing on the
broker and are left out. A departure the suite format cannot express as an expectation (a new generation that
must differ from the old one in either of two fields) is kept as a history only: :func:`case_for` returns None.
"""

from __future__ import annotations

import hashlib
import re

import yaml

from .driver import FAULT_DELAY_MS, PARTITIONS, TOPICS, TRANSACTIONAL_IDS, GROUPS, HistoryStep
from .model import ACCEPT, REFUSE
from .ops import WAIT_MS
from ..suite.kip_facts import SWITCHES

RETRY = {"on": ["COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
                "CONCURRENT_TRANSACTIONS", "NOT_ENOUGH_REPLICAS", "NOT_LEADER_OR_FOLLOWER", "NETWORK_EXCEPTION"],
         "for_ms": 8000}
READS = ("Fetch", "ListOffsets", "OffsetFetch", "DescribeTransactions", "ListTransactions")


def slug(text: str) -> str:
    """``text`` as a suite or case id may spell it."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class _Generations:
    """The variables each accepted InitProducerId saves, and the ones an operation speaks for."""

    def __init__(self):
        self.saved: dict[tuple, list[str]] = {}

    def new(self, who: tuple) -> str:
        """The variables' suffix of a new generation of ``who``."""
        names = self.saved.setdefault(who, [])
        names.append(f"{who[0]}{who[1]}_g{len(names) + 1}")
        return names[-1]

    def of(self, who: tuple, stale: bool) -> str:
        """The suffix of the generation an operation speaks for."""
        names = self.saved.get(who) or ["none"]
        return names[-2] if stale and len(names) > 1 else names[-1]


def case_for(history: list[HistoryStep], *, target: str, seed: int | None) -> dict | None:
    """The suite document reproducing ``history``, whose last step departed; None when the departure has no
    expectation in the suite format."""
    last = history[-1]
    departure = last.departures[0]
    if not departure.expect:
        return None
    generations = _Generations()
    steps = []
    for step in history[:-1]:
        if step.op.kind in READS or step.answer is None:
            continue
        steps.append(_step(step, generations, expect=_observed(step)))
    final = _step(last, generations, expect=departure.expect, under_test=True)
    for step, written in zip([*[s for s in history[:-1] if s.op.kind not in READS and s.answer is not None], last],
                             steps + [final]):
        if "fields" in written:
            written["fields"] = _fields_of(step.op.kind, step.op.version, written["fields"])
    final["label"] = f"under test: {departure.rule.summary}"
    steps.append(final)
    sent = [s for s in history[:-1] if s.op.kind not in READS and s.answer is not None] + [last]
    steps = [item for step, written in zip(sent, steps) for item in [*_fault(step), written]]
    rule = departure.rule
    digest = hashlib.sha1(yaml.safe_dump(steps, sort_keys=True).encode()).hexdigest()[:8]
    case = {"id": f"{slug(rule.id)}-{digest}",
            "title": f"Explored on {target}: {rule.summary}",
            "cites": rule.cites,
            "under_test": {"api": last.op.kind, "versions": str(last.op.version)},
            "tags": ["explored"],
            "steps": steps}
    # behaviour Apache Kafka can turn off is not held where the target reports it off (write-a-suite.md)
    switches = {setting: True for kip, words, apis, setting in SWITCHES
                if kip == rule.kip and last.op.kind in apis and re.search(words, rule.cites, re.IGNORECASE)}
    if switches:
        case["requires"] = {"switch": switches}
    return {"suite": f"explore.{slug(target)}.{slug(rule.id)}",
            "title": f"Explored departure of {rule.id} on {target}",
            "spec": rule.kip,
            "topics": {f"t{index}": {"partitions": PARTITIONS} for index in range(TOPICS)},
            "transactional_ids": [f"txn{index}" for index in range(TRANSACTIONAL_IDS)],
            "groups": [f"group{index}" for index in range(GROUPS)],
            "cases": [case]}


def render(document: dict, history: list[HistoryStep], *, target: str, seed: int | None) -> str:
    """The suite file's text: a comment with the explored history and its answers, then the suite."""
    lines = [f"# Found by `conformance explore --target {target}" + (f" --seed {seed}`" if seed is not None else "`"),
             "# and shrunk by hypothesis to this history (each request -> its answer):"]
    lines += [f"#   {step.line()}" for step in history]
    lines.append(f"# The last answer departs from {history[-1].departures[0].rule.id}: {history[-1].departures[0].message}")
    return "\n".join(lines) + "\n" + yaml.dump(document, Dumper=_Plain, sort_keys=False, allow_unicode=True, width=120)


class _Plain(yaml.SafeDumper):
    """Every step spelt out: no anchors and aliases for the retry every step shares."""

    def ignore_aliases(self, data) -> bool:
        """Never an alias."""
        return True


def _observed(step: HistoryStep) -> dict:
    """What an earlier step expects: the rule's answer where it demands one, any answer where it allows two."""
    if step.outcome == ACCEPT:
        return {"error_code": "NONE"}
    if step.outcome == REFUSE:
        return {"refused": True}
    return {"error_code": {"ge": -1}}  # either answer is allowed here: the step only leads to the one under test


def _step(step: HistoryStep, generations: _Generations, *, expect: dict, under_test: bool = False) -> dict:
    op, resolved = step.op, step.resolved
    who = ("txn", op.txn) if op.txn is not None else ("producer", op.producer)
    txn = f"${{txn_ids.txn{op.txn}}}" if op.txn is not None else None
    generation = generations.of(who, op.stale)
    pid, epoch = f"${{pid_{generation}}}", f"${{epoch_{generation}}}"
    version = {} if under_test else {"version": op.version}
    if op.kind == "Wait":  # outlasts a short transaction timeout: the subject of the history, not a catch-up
        return {"wait": WAIT_MS}
    if op.kind == "InitProducerId":
        out: dict = {"send": op.kind, **version,
               "fields": {"transactional_id": txn, "transaction_timeout_ms": op.timeout_ms,
                          "producer_id": -1, "producer_epoch": -1},
               "retry": RETRY, "expect": expect}
        if not (step.answer or {}).get("error"):
            saved = generations.new(who)
            out["save"] = {f"pid_{saved}": "producer_id", f"epoch_{saved}": "producer_epoch"}
        return out
    if op.kind == "Produce":
        produce: dict = {"topic": f"${{topics.t{op.topic}}}", "partition": op.partition, "producer_id": pid,
                   "producer_epoch": epoch, "base_sequence": resolved.base_sequence, "records": list(resolved.values),
                   "compression": op.compression}
        if txn is not None:
            produce["transactional_id"] = txn
        # a step-level version: an earlier write leads to the one under test, and is judged as such (a refusal it
        # met needs no sentence of its own)
        return {"produce": produce, **version, "retry": RETRY, "expect": expect}
    if op.kind == "AddPartitionsToTxn":
        added: dict[str, list[int]] = {}
        for topic, partition in op.partitions:
            added.setdefault(f"${{topics.t{topic}}}", []).append(partition)
        fields: dict = {"v3_and_below_transactional_id": txn, "v3_and_below_producer_id": pid,
                  "v3_and_below_producer_epoch": epoch,
                  "v3_and_below_topics": [{"name": name, "partitions": parts} for name, parts in added.items()]}
        return {"send": op.kind, **version, "fields": fields, "retry": RETRY, "expect": expect}
    if op.kind == "AddOffsetsToTxn":
        fields = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch,
                  "group_id": f"${{groups.group{op.group}}}"}
        return {"send": op.kind, **version, "fields": fields, "retry": RETRY, "expect": expect}
    if op.kind == "TxnOffsetCommit":
        fields = {"transactional_id": txn, "group_id": f"${{groups.group{op.group}}}", "producer_id": pid,
                  "producer_epoch": epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
                  "topics": [{"name": f"${{topics.t{op.topic}}}", "partitions": [
                      {"partition_index": op.partition, "committed_offset": op.offset, "committed_leader_epoch": -1,
                       "committed_metadata": ""}]}]}
        return {"send": op.kind, **version, "fields": fields, "to": {"coordinator": {"group": fields["group_id"]}},
                "retry": RETRY, "expect": expect}
    if op.kind == "EndTxn":
        fields = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": op.commit}
        out = {"send": op.kind, **version, "fields": fields, "retry": RETRY, "expect": expect}
        answer = step.answer or {}
        bumped = (answer.get("producer_id"), answer.get("producer_epoch"))
        valid = all(isinstance(value, int) and value >= 0 for value in bumped)
        if op.version >= 5 and not answer.get("error") and valid and bumped != (resolved.producer_id,
                                                                                resolved.producer_epoch):
            saved = generations.new(who)  # transaction version 2: the generation the producer continues with
            out["save"] = {f"pid_{saved}": "producer_id", f"epoch_{saved}": "producer_epoch"}
        return out
    if op.kind == "Fetch":
        fetch = {"topic": f"${{topics.t{op.topic}}}", "partition": op.partition,
                 "isolation": "read_committed" if op.isolation else "read_uncommitted"}
        return {"fetch": fetch, "retry": RETRY, "expect": expect}
    if op.kind == "ListOffsets":
        fields = {"replica_id": -1, "isolation_level": op.isolation, "timeout_ms": 5000,
                  "topics": [{"name": f"${{topics.t{op.topic}}}", "partitions": [
                      {"partition_index": op.partition, "current_leader_epoch": -1, "timestamp": -1}]}]}
        return {"send": op.kind, "fields": fields, "to": {"leader": {"topic": f"${{topics.t{op.topic}}}",
                                                                    "partition": op.partition}},
                "retry": RETRY, "expect": expect}
    if op.kind == "OffsetFetch":
        asked = [{"name": f"${{topics.t{t}}}", "partition_indexes": [p]} for t, p in _fetched(resolved)]
        group = f"${{groups.group{op.group}}}"
        fields = {"group_id": group, "topics": asked, "require_stable": op.require_stable,
                  "groups": [{"group_id": group, "topics": asked}]}
        return {"send": op.kind, "fields": fields, "to": {"coordinator": {"group": group}}, "retry": RETRY,
                "expect": expect}
    if op.kind == "DescribeTransactions":
        return {"send": op.kind, "fields": {"transactional_ids": [txn]},
                "to": {"coordinator": {"transaction": txn}}, "retry": RETRY, "expect": expect}
    raise ValueError(f"no suite step for {op.kind}")


def _fault(step: HistoryStep) -> list[dict]:
    """The proxy's fault the step met, as the suite step arming it (none where it met none)."""
    if not step.op.fault:
        return []
    # kept to the case's own requests (its client id), so the written case runs beside others
    arguments: dict = {"client": "${client_id}", "api": step.op.kind, "times": 1}
    if step.op.fault == "delay":
        arguments["ms"] = FAULT_DELAY_MS
    return [{"fault": {"name": f"proxy.{step.op.fault}", "args": arguments}}]


def _fields_of(api: str, version: int, values: dict, fields=None, spec=None) -> dict:
    """``values`` without the fields ``api`` lacks at ``version`` (the loader refuses them), nested structs too."""
    from ..protocol.codec import default_codec

    if spec is None:
        spec = default_codec().registry.api(api).request
        fields = spec.fields
    kept = {}
    for name, value in values.items():
        field = next((item for item in fields if item.attribute == name and version in item.versions), None)
        if field is None:
            continue
        if field.is_struct:
            children = field.fields if field.fields is not None else spec.struct(field.element_type, name).fields
            if isinstance(value, list):
                value = [_fields_of(api, version, item, children, spec) if isinstance(item, dict) else item
                         for item in value]
            elif isinstance(value, dict):
                value = _fields_of(api, version, value, children, spec)
        kept[name] = value
    return kept


def _fetched(resolved) -> list[tuple[int, int]]:
    return [(resolved.names[name], partition) for name, partition in resolved.partitions]


def write_case(history: list[HistoryStep], folder, *, target: str, seed: int | None):
    """Write the case of ``history`` into ``folder``; its path, or None when the departure has no suite form."""
    from pathlib import Path

    document = case_for(history, target=target, seed=seed)
    if document is None:
        return None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{document['suite']}.{document['cases'][0]['id'].rsplit('-', 1)[1]}.yaml"
    path.write_text(render(document, history, target=target, seed=seed))
    return path

