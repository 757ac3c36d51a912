"""What a history must satisfy, each guarantee a check, each departure an anomaly with its shortest history.

The guarantees are KIP-98's (atomic transactions, read_committed isolation, idempotent writes, the last
stable offset) and KIP-447's (offsets committed in the transaction that writes their outputs). A check
answers with anomalies, or passes having checked something, or says why the history holds no evidence
for it (nothing committed, the final read never ran): never a pass without evidence.

An anomaly's history is the few events that show it: the transaction's invoke and end, the reads that
saw (or the final read that missed) its records, and the faults that were under way meanwhile.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from .history import Event

SHOWN_ANOMALIES = 5  # per check in a result; the count says how many there were


@dataclass
class Txn:
    """One transaction of the history: whose (a producer's or a consume-transform-produce loop's), its start and its
    end."""
    id: str
    kind: str  # "txn" (a producer's) or "ctp" (consume-transform-produce)
    invoke: Event
    end: Event | None = None

    @property
    def outcome(self) -> str:
        """``committed``, ``aborted`` or ``unknown`` (no end recorded, or the client could not tell)."""
        return "unknown" if self.end is None else self.end.value.get("outcome", "unknown")

    @property
    def topic(self) -> str:
        """The topic the transaction wrote to."""
        return self.invoke.value["topic"]

    @property
    def records(self) -> list[tuple[str, int]]:
        """(value, partition) of every record the transaction writes."""
        return [(value, partition) for value, partition in self.invoke.value["records"]]

    def offset(self, value: str) -> int | None:
        """The offset the transaction's record ``value`` got, where the end event recorded it."""
        if self.end is None:
            return None
        found = (self.end.value.get("offsets") or {}).get(value)
        return None if found is None else int(found)


@dataclass
class Anomaly:
    """One departure from a guarantee, with the events of the history that show it."""
    summary: str
    events: list[Event]

    def to_json(self) -> dict:
        """The anomaly as its result's ``actual`` shows it: a summary and the history lines."""
        return {"summary": self.summary, "history": [event.line() for event in self.events]}


@dataclass
class CheckVerdict:
    """What one check found: the anomalies, what was looked at, or why the history shows nothing either way."""
    anomalies: list[Anomaly] = field(default_factory=list)
    checked: str = ""  # what was looked at, for the result's message
    no_evidence: str | None = None  # set when the history cannot show the guarantee either way


class Model:
    """A history indexed for the checks."""

    def __init__(self, events: list[Event]):
        self.events = events
        self.txns: dict[str, Txn] = {}
        self.writer: dict[str, Txn] = {}
        self.reads: list[Event] = []
        self.final: dict[str, list[Event]] = defaultdict(list)  # value -> reads of the final drain
        self.final_by_partition: dict[tuple[str, int], list[Event]] = defaultdict(list)
        self.drained: dict[tuple[str, int], Event] = {}
        self.lso: dict[tuple[str, int], list[Event]] = defaultdict(list)
        self.offsets: Event | None = None
        self.faults: list[Event] = []
        for event in events:
            self._add(event)

    def _add(self, event: Event) -> None:
        kind, value = event.kind, event.value
        if kind in ("txn", "ctp"):
            if event.phase == "invoke":
                txn = self.txns[value["txn"]] = Txn(value["txn"], kind, event)
                for record, _ in txn.records:
                    self.writer[record] = txn
            elif value["txn"] in self.txns:
                self.txns[value["txn"]].end = event
        elif kind == "read":
            self.reads.append(event)
            if event.process == "drain":
                self.final[value["value"]].append(event)
                self.final_by_partition[(value["topic"], value["partition"])].append(event)
        elif kind == "drained":
            self.drained[(value["topic"], value["partition"])] = event
        elif kind == "lso":
            self.lso[(value["topic"], value["partition"])].append(event)
        elif kind == "offsets":
            self.offsets = event
        elif kind == "fault":
            self.faults.append(event)

    def with_outcome(self, *outcomes: str, kind: str | None = None) -> list[Txn]:
        """The transactions that ended with one of ``outcomes`` (of one ``kind`` when given)."""
        return [txn for txn in self.txns.values() if txn.outcome in outcomes and kind in (None, txn.kind)]

    def outputs_by_source(self) -> dict[tuple[int, int], list[Event]]:
        """The final read's consume-transform-produce outputs by the input (partition, offset) they came from.
        Outputs of aborted transactions are left out: reading them at all is aborted-records-invisible's finding."""
        outputs: dict[tuple[int, int], list[Event]] = defaultdict(list)
        for value, reads in self.final.items():
            txn = self.writer.get(value)
            if txn is not None and txn.kind == "ctp" and txn.outcome != "aborted":
                outputs[tuple(txn.invoke.value["sources"][value])].append(reads[0])
        return outputs

    def verifiable(self, txn: Txn, value: str, partition: int) -> bool:
        """Whether the final read settles if ``value`` is there: its partition was read to the end, or at
        least past the offset the record was delivered at."""
        drained = self.drained.get((txn.topic, partition))
        if drained is None:
            return False
        if drained.value["complete"]:
            return True
        offset = txn.offset(value)
        return offset is not None and offset < drained.value["end"]

    def undrained(self) -> str | None:
        """Why the final read cannot judge anything, or None when it ran."""
        if not self.drained:
            return "the final read_committed read never ran"
        return None

    def witness(self, *events: Event | None) -> list[Event]:
        """The events, in the order they were recorded, with every fault event recorded between the first and last."""
        chosen = {event.index: event for event in events if event is not None}
        if chosen:
            first, last = min(chosen), max(chosen)
            for fault in self.faults:
                if first <= fault.index <= last:
                    chosen[fault.index] = fault
        return [chosen[index] for index in sorted(chosen)]


# --------------------------------------------------------------------------------- the checks
def committed_records_visible(model: Model) -> CheckVerdict:
    """Every record of a committed transaction is read by the final read_committed read."""
    if (why := model.undrained()) is not None:
        return CheckVerdict(no_evidence=why)
    committed = model.with_outcome("committed")
    anomalies, checked, unverifiable = [], 0, 0
    for txn in committed:
        for value, partition in txn.records:
            if value in model.final:
                checked += 1
            elif not model.verifiable(txn, value, partition):
                unverifiable += 1
            else:
                checked += 1
                anomalies.append(Anomaly(
                    f"{value!r} of committed transaction {txn.id} (offset {txn.offset(value)} of "
                    f"{txn.topic}-{partition}) is missing from the final read_committed read",
                    model.witness(txn.invoke, txn.end, model.drained.get((txn.topic, partition)))))
    if not checked:
        return CheckVerdict(no_evidence=f"no committed record could be looked for ({len(committed)} committed "
                                   f"transactions, {unverifiable} records behind a last stable offset that never advanced)")
    note = f", {unverifiable} behind a stuck last stable offset" if unverifiable else ""
    return CheckVerdict(anomalies, f"{checked} records of {len(committed)} committed transactions{note}")


def aborted_records_invisible(model: Model) -> CheckVerdict:
    """No record of an aborted transaction is ever read by a read_committed consumer."""
    aborted = model.with_outcome("aborted")
    if not aborted:
        return CheckVerdict(no_evidence="no transaction was aborted")
    if not model.reads:
        return CheckVerdict(no_evidence="no read_committed consumer read anything")
    seen: dict[str, list[Event]] = defaultdict(list)
    for read in model.reads:
        txn = model.writer.get(read.value["value"])
        if txn is not None and txn.outcome == "aborted":
            seen[txn.id].append(read)
    anomalies = [Anomaly(f"records of aborted transaction {txn_id} were returned by a read_committed consumer "
                         f"({', '.join(sorted({read.process for read in reads}))})",
                         model.witness(model.txns[txn_id].invoke, model.txns[txn_id].end, *reads))
                 for txn_id, reads in seen.items()]
    return CheckVerdict(anomalies, f"{len(model.reads)} read_committed reads against {len(aborted)} aborted transactions")


def transactions_atomic(model: Model) -> CheckVerdict:
    """Every committed or in-doubt transaction is visible whole or not at all."""
    if (why := model.undrained()) is not None:
        return CheckVerdict(no_evidence=why)
    anomalies, judged = [], 0
    for txn in model.txns.values():
        if txn.outcome == "aborted":  # any record of it read is aborted-records-invisible's finding
            continue
        verifiable = [(value, partition) for value, partition in txn.records if model.verifiable(txn, value, partition)
                      or value in model.final]
        present = [value for value, _ in verifiable if value in model.final]
        if not verifiable:
            continue
        judged += 1
        if 0 < len(present) < len(verifiable):
            missing = [(value, partition) for value, partition in verifiable if value not in model.final]
            anomalies.append(Anomaly(
                f"transaction {txn.id} ({txn.outcome}) is partly visible: {len(present)} of {len(verifiable)} "
                f"records read, missing {', '.join(value for value, _ in missing[:5])}",
                model.witness(txn.invoke, txn.end, *(model.final[value][0] for value in present[:3]),
                              *(model.drained.get((txn.topic, partition)) for _, partition in missing[:3]))))
    strangers = [read for read in model.reads if read.value["value"] not in model.writer]
    for read in strangers[:SHOWN_ANOMALIES]:
        anomalies.append(Anomaly(f"a read returned {read.value['value']!r}, which no client wrote", [read]))
    if not judged:
        return CheckVerdict(no_evidence="no transaction's records could be looked for in the final read")
    return CheckVerdict(anomalies, f"{judged} committed or in-doubt transactions")


def no_duplicates(model: Model) -> CheckVerdict:
    """The committed log holds each record once, and each input's output once."""
    if (why := model.undrained()) is not None:
        return CheckVerdict(no_evidence=why)
    if not model.final:
        return CheckVerdict(no_evidence="the final read returned no record")
    anomalies = []
    for value, reads in model.final.items():
        if len(reads) > 1:
            txn = model.writer.get(value)
            anomalies.append(Anomaly(
                f"{value!r} is in the committed log {len(reads)} times (offsets "
                f"{', '.join(str(read.value['offset']) for read in reads)})",
                model.witness(txn.invoke if txn else None, txn.end if txn else None, *reads[:2])))
    outputs = model.outputs_by_source()
    for (partition, offset), reads in outputs.items():
        if len(reads) > 1:
            writers = [model.writer[read.value["value"]] for read in reads]
            named = ", ".join(txn.id for txn in writers[:3]) + (", ..." if len(writers) > 3 else "")
            anomalies.append(Anomaly(  # two outputs are enough to show it
                f"input record at partition {partition} offset {offset} has {len(reads)} committed outputs "
                f"(transactions {named})",
                model.witness(*(txn.invoke for txn in writers[:2]), *(txn.end for txn in writers[:2]), *reads[:2])))
    return CheckVerdict(anomalies, f"{sum(len(reads) for reads in model.final.values())} committed records, "
                              f"{len(outputs)} processed inputs")


def offsets_with_outputs(model: Model) -> CheckVerdict:
    """A consume-transform-produce transaction's offsets are committed exactly when its output is: no input is
    processed twice or lost."""
    if (why := model.undrained()) is not None:
        return CheckVerdict(no_evidence=why)
    committed = model.with_outcome("committed", kind="ctp")
    if not committed or model.offsets is None:
        return CheckVerdict(no_evidence="no consume-transform-produce transaction committed" if not committed
                       else "the group's committed offsets were never read")
    input_topic = model.offsets.value["topic"]
    committed_offsets = {int(partition): offset for partition, offset in model.offsets.value["offsets"].items()}
    outputs = model.outputs_by_source()
    anomalies, judged = [], 0
    for (topic, partition), reads in model.final_by_partition.items():
        drained = model.drained.get((topic, partition))
        if topic != input_topic or drained is None or not drained.value["complete"]:
            continue
        position = committed_offsets.get(partition, 0)
        for read in reads:
            judged += 1
            produced = outputs.get((partition, read.value["offset"]), [])
            consumed = read.value["offset"] < position
            if consumed == bool(produced):
                continue
            writers = [model.writer[output.value["value"]] for output in produced]
            summary = (f"input {read.value['value']!r} at {topic}-{partition} offset {read.value['offset']} is "
                       + (f"below the committed offset {position} but has no committed output" if consumed else
                          f"at or past the committed offset {position} yet has a committed output"))
            anomalies.append(Anomaly(summary, model.witness(read, model.offsets, *produced,
                                                            *(txn.end for txn in writers))))
    if not judged:
        return CheckVerdict(no_evidence="no input partition was read to its end")
    return CheckVerdict(anomalies, f"{judged} input records against the group's offsets "
                              f"({len(committed)} committed consume-transform-produce transactions)")


def lso_monotonic(model: Model) -> CheckVerdict:
    """A partition's last stable offset never goes back."""
    anomalies, samples = [], 0
    for (topic, partition), events in model.lso.items():
        highest: Event | None = None
        for sample in events:
            samples += 1
            if highest is not None and sample.value["lso"] < highest.value["lso"]:
                anomalies.append(Anomaly(
                    f"the last stable offset of {topic}-{partition} went back from {highest.value['lso']} "
                    f"(node {highest.value.get('node')}) to {sample.value['lso']} (node {sample.value.get('node')})",
                    model.witness(highest, sample)))
            if highest is None or sample.value["lso"] >= highest.value["lso"]:
                highest = sample
    if samples < 2:
        return CheckVerdict(no_evidence="fewer than two last-stable-offset samples were taken")
    return CheckVerdict(anomalies, f"{samples} samples over {len(model.lso)} partitions")


def lso_reaches_end(model: Model) -> CheckVerdict:
    """With every client stopped, each partition's last stable offset reaches its high watermark: no transaction
    hangs."""
    if (why := model.undrained()) is not None:
        return CheckVerdict(no_evidence=why)
    anomalies = []
    for (topic, partition), drained in model.drained.items():
        if drained.value["complete"]:
            continue
        lso = drained.value["lso"]
        # the suspects: transactions with a record at or past the stuck offset, or of unknown outcome there
        open_writers = {txn.id: txn for txn in model.txns.values() if txn.topic == topic and any(
            part == partition and (txn.outcome == "unknown" or (txn.offset(value) or 0) >= lso)
            for value, part in txn.records)}
        anomalies.append(Anomaly(
            f"{topic}-{partition}: the last stable offset stays at {lso} below the high watermark "
            f"{drained.value['hw']} after every client stopped and the transaction timeout passed "
            "(a hanging transaction blocks read_committed readers)",
            model.witness(*(txn.invoke for txn in open_writers.values()), *(txn.end for txn in open_writers.values()),
                          drained)))
    return CheckVerdict(anomalies, f"{len(model.drained)} partitions after the clients stopped")


@dataclass(frozen=True)
class Check:
    """One exactly-once guarantee: its id, title and citation, and the function that judges a history against it."""
    id: str
    title: str
    cites: str
    judge: Callable[[Model], CheckVerdict]


CHECKS = (
    Check("committed-records-visible", "No record of a committed transaction is lost",
          "KIP-98: once a transaction is committed, all of its messages are visible to read_committed consumers",
          committed_records_visible),
    Check("aborted-records-invisible", "A read_committed consumer never returns a record of an aborted transaction",
          "KIP-98: consumers in read_committed mode only read messages of committed transactions",
          aborted_records_invisible),
    Check("transactions-atomic", "Every committed or in-doubt transaction is visible whole or not at all",
          "KIP-98: the messages of a transaction are committed or aborted atomically", transactions_atomic),
    Check("no-duplicates", "The committed log holds each record once, and each input's output once",
          "KIP-98: the idempotent producer writes each message exactly once; consume-transform-produce is exactly once",
          no_duplicates),
    Check("offsets-with-outputs", "Input offsets are committed exactly with the outputs made from them",
          "KIP-98 / KIP-447: offsets sent to a transaction are committed if and only if the transaction commits",
          offsets_with_outputs),
    Check("lso-monotonic", "The last stable offset of a partition never goes back",
          "KIP-98: the last stable offset only advances as transactions complete", lso_monotonic),
    Check("lso-reaches-end", "With every client stopped, the last stable offset reaches the high watermark",
          "KIP-98: an open transaction is completed or aborted by the coordinator (transaction timeout); "
          "KIP-890: no transaction hangs", lso_reaches_end),
)


def judge(events: list[Event]) -> list[tuple[Check, CheckVerdict]]:
    """Every check's verdict on the history ``events``."""
    model = Model(events)
    return [(check, check.judge(model)) for check in CHECKS]
