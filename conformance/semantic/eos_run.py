"""One exactly-once run on one started target: set up, run the clients under faults, drain, judge.

Each check becomes a result of the suites' own kind (suite ``semantic.exactly-once``, one case per
check), so the results file, findings, JUnit, the gate and the Spark jobs count them like any case:
``failed`` with the anomalies' shortest histories, ``error`` when the history holds no evidence or
the harness itself broke, ``blocked`` when setting up the topics failed, ``unsupported`` when the
target lacks the transaction APIs.
"""

from __future__ import annotations

import logging
import secrets
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient, NewTopic

from .. import ledger
from ..client.cluster import Cluster
from ..suite.model import CaseResult, StepFailure
from ..results.record import Outcome, Requirement
from ..targets.base import Target
from .checks import CHECKS, SHOWN_ANOMALIES, Check, CheckVerdict, judge
from .epoch_space import fast_forward_all, where_they_ended
from .history import History
from .nemesis import Nemesis, faults_for
from .workload import LsoMonitor, Plan, Processor, Reader, Worker, Writer, drain

SUITE = "semantic.exactly-once"
# The same checks with the consume-transform-produce group a KIP-848 consumer group (--group-protocol consumer):
# a suite id of its own, so that both runs of one target keep their results and a level can count both.
SUITE_BY_GROUP_PROTOCOL = {"classic": SUITE, "consumer": "semantic.exactly-once.consumer-group"}
TRANSACTION_APIS = ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit")
STOP_WAIT_S = 60.0

# Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms by default: how often the coordinator
# looks for transactions past their timeout.
TIMED_OUT_TRANSACTIONS_CHECK_S = 10


@dataclass
class Settings:
    """How a ``conformance semantic`` run goes: its length, faults, workers, client settings and seed."""
    duration_s: float = 120.0
    faults: bool = True
    group_protocol: str = "classic"  # the processors' group: classic (JoinGroup) or consumer (KIP-848)
    fault_interval_s: float = 8.0
    producers: int = 2
    processors: int = 1
    partitions: int = 3
    seed: int | None = None
    client_config: dict = field(default_factory=dict)
    start_epoch: int | None = None  # fast-forward the transactional ids here first (the end of the epoch space)


@dataclass
class SemanticRun:
    """One run of the exactly-once tier on one target: its history, verdicts, figures and what stopped it."""
    target: str
    target_version: str | None
    history: History
    verdicts: list[tuple[Check, CheckVerdict]] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    problem: tuple[Outcome, str] | None = None  # an outcome every check gets instead of a verdict
    duration_s: float = 0.0
    client_log: list[str] = field(default_factory=list)  # librdkafka's log lines (the first CLIENT_LOG_LINES)
    group_protocol: str = "classic"  # which suite its results belong to (SUITE_BY_GROUP_PROTOCOL)
    target_name: str | None = None  # the product the user named the target (Target.name)


CLIENT_LOG_LINES = 20000


class _Lines(logging.Handler):
    def __init__(self, lines: list[str]):
        super().__init__()
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < CLIENT_LOG_LINES:
            self.lines.append(f"{record.created:.3f} {record.levelname} {record.getMessage()}")


def _client_logger(run: SemanticRun, name: str) -> logging.Logger:
    logger = logging.getLogger(f"conformance.semantic.clients.{name}")
    logger.propagate = False
    logger.handlers[:] = [_Lines(run.client_log)]
    logger.setLevel(logging.INFO)
    return logger


def run_on(target: Target, settings: Settings) -> SemanticRun:
    """Run the workload (and the nemesis) on the started ``target`` with ``settings``, then judge the history."""
    began = time.monotonic()
    run = SemanticRun(target.spec, target.version, History(), target_name=target.name)
    name = secrets.token_hex(3)
    client_config = settings.client_config
    if not client_config:  # a secured target the harness provisioned has settings of its own
        client_config = {key: value for key, value in target.client_config().items() if key != "bootstrap.servers"}
    plan = Plan(target.bootstrap, run=name, logger=_client_logger(run, name), partitions=settings.partitions,
                producers=settings.producers, processors=settings.processors, client_config=client_config,
                security=target.security, seed=settings.seed if settings.seed is not None else secrets.randbits(32),
                group_protocol=settings.group_protocol)
    run.group_protocol = settings.group_protocol
    run.stats["seed"] = plan.seed
    run.history.record("harness", "run", target=target.spec, seed=plan.seed, topics=plan.topics, group=plan.group,
                       group_protocol=plan.group_protocol)
    try:
        missing = _missing_apis(plan)
    except Exception as error:  # noqa: BLE001 - a target that does not answer gets no verdict, said plainly
        run.problem = (Outcome.ERROR, f"the target does not answer ApiVersions: {type(error).__name__}: {error}")
        return run
    if missing:
        run.problem = (Outcome.UNSUPPORTED, f"the target does not advertise {', '.join(missing)}")
        return run
    try:
        create_topics(plan, target)
    except Exception as error:  # noqa: BLE001 - setting up is not what the checks judge
        run.problem = (Outcome.BLOCKED, f"setting up the topics failed: {type(error).__name__}: {error}")
        return run
    started = {}
    if settings.start_epoch is not None:
        processes = [f"writer-{number}" for number in range(settings.producers)]
        processes += [f"processor-{number}" for number in range(settings.processors)]
        try:
            started = fast_forward_all(plan, processes, settings.start_epoch, run.history)
        except Exception as error:  # noqa: BLE001 - setting up is not what the checks judge
            run.problem = (Outcome.BLOCKED, f"fast-forwarding the transactional ids failed: {type(error).__name__}: {error}")
            return run
    _exercise(target, plan, settings, run)
    if started:
        run.stats["epoch_space"] = where_they_ended(plan, started)
        for transactional_id, entry in run.stats["epoch_space"].items():  # in the history file, for the record
            run.history.record("harness", "epoch", transactional_id=transactional_id, **entry)
    run.duration_s = time.monotonic() - began
    if plan.crashes:
        run.problem = (Outcome.ERROR, "no verdict, the history is partial: " + plan.crashes[0])
    else:
        run.verdicts = judge(run.history.events)
    run.stats["known_issues"] = target.known_issues()  # evidence for a departure, read before the target stops
    return run


def _missing_apis(plan: Plan) -> list[str]:
    cluster = Cluster(plan.bootstrap, timeout=10.0, security=plan.security)
    try:
        cluster.api_versions()
        return [api for api in TRANSACTION_APIS if cluster.version_range(api) is None]
    finally:
        cluster.close()


def create_topics(plan: Plan, target: Target | None = None) -> None:
    """With CreateTopics (AdminClient), or through the target's own control API where it has none (the mock)."""
    cluster = Cluster(plan.bootstrap, timeout=10.0, security=plan.security)
    try:
        cluster.api_versions()
        if cluster.version_range("CreateTopics") is None and target is not None:
            for topic in plan.topics:
                target.fault("topic_create", topic=topic, partitions=plan.partitions, replication=1)
        else:
            admin = AdminClient(plan.config())
            replication = min(3, len(admin.list_topics(timeout=10).brokers))
            configs = {"min.insync.replicas": "2"} if replication >= 3 else {}
            created = admin.create_topics([NewTopic(topic, plan.partitions, replication, config=configs)
                                           for topic in plan.topics], operation_timeout=30, request_timeout=30)
            for future in created.values():
                future.result()
        for topic, partition in plan.partitions_of_all():
            cluster.leader(topic, partition, wait=30.0)
    finally:
        cluster.close()


def _exercise(target: Target, plan: Plan, settings: Settings, run: SemanticRun) -> None:
    history, stop, calm, sampled = run.history, threading.Event(), threading.Event(), threading.Event()
    clients: list[Worker] = [Reader("reader", plan, history, stop)]
    clients += [Writer(f"writer-{number}", plan, history, stop) for number in range(settings.producers)]
    clients += [Processor(f"processor-{number}", plan, history, stop) for number in range(settings.processors)]
    monitor = LsoMonitor("lso", plan, history, sampled)
    faults = faults_for(target, plan) if settings.faults else []
    nemesis = Nemesis(plan, history, calm, target, faults, settings.fault_interval_s) if faults else None
    started = time.monotonic()
    for thread in [monitor, *clients, *([nemesis] if nemesis else [])]:
        thread.start()
    deadline = started + settings.duration_s
    while time.monotonic() < deadline and not plan.crashes:
        time.sleep(0.2)
    if nemesis is not None:
        calm.set()
        _join(nemesis, plan, time.monotonic() + STOP_WAIT_S)
        nemesis.heal()
    stop.set()
    stopped_by = time.monotonic() + STOP_WAIT_S  # one deadline for all: stuck clients cost one wait, not one each
    for client in clients:
        _join(client, plan, stopped_by)
    workload_s = time.monotonic() - started
    # A transaction a fault left open holds the last stable offset until the coordinator aborts it: after its
    # timeout, at the coordinator's next look for timed-out transactions, then its markers. The drain ends as soon
    # as every partition has settled, so the margin costs nothing when nothing is stuck.
    drain(plan, history, settle_s=plan.transaction_timeout_ms / 1000 + TIMED_OUT_TRANSACTIONS_CHECK_S + 15)
    sampled.set()
    _join(monitor, plan, time.monotonic() + STOP_WAIT_S)
    events = history.events
    ends = [event for event in events if event.kind in ("txn", "ctp") and event.phase != "invoke"]
    run.stats.update({
        "workload_s": round(workload_s, 1),
        "transactions": {outcome: sum(1 for event in ends if event.value.get("outcome") == outcome)
                         for outcome in ("committed", "aborted", "unknown")},
        "transactions_per_s": round(len(ends) / workload_s, 2) if workload_s else 0.0,
        "reads": sum(1 for event in events if event.kind == "read"),
        "faults": {"planned": [fault.name for fault in faults], "applied": nemesis.applied if nemesis else 0,
                   "refused": [event.value for event in events if event.kind == "fault" and event.phase == "info"]},
    })
    if not faults:
        run.stats["faults"]["note"] = ("faults off (--no-faults)" if not settings.faults
                                       else f"target {target.spec!r} can take none of the tier's faults")


def _join(thread: threading.Thread, plan: Plan, deadline: float) -> None:
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        frame = sys._current_frames().get(thread.ident) if thread.ident is not None else None
        where = "".join(traceback.format_stack(frame)[-2:]).strip() if frame is not None else "unknown"
        plan.crashes.append(f"{thread.name} did not stop within {STOP_WAIT_S:.0f} s of being asked; it waits in:\n{where}")


# ------------------------------------------------------------------------------ results
def results(run: SemanticRun, *, run_id: str, history_file: str | None) -> list[CaseResult]:
    """One result per check, shaped like a suite case's."""
    made = []
    verdicts = dict(run.verdicts)
    for check in CHECKS:
        result = CaseResult(
            case_id=check.id, suite_id=SUITE_BY_GROUP_PROTOCOL[run.group_protocol], title=check.title, kip="KIP-98",
            api=None, version=None,
            target=run.target, target_version=run.target_version, target_name=run.target_name, outcome=Outcome.PASSED,
            requirement=Requirement.MUST, cites=check.cites, duration_s=run.duration_s,
            tags=["semantic"] + (["kip848"] if run.group_protocol == "consumer" else []),
            run_id=run_id, path="conformance/semantic/checks.py",
            artifacts={"history": history_file} if history_file else {})
        if run.problem is not None:
            result.outcome, result.message = run.problem
        else:
            _judged(result, check, verdicts[check], run.stats)
        if result.outcome is not Outcome.PASSED:
            issues = run.stats.get("known_issues", ())
            result.message += "".join(_known_issue(issue) for issue in issues)
            result.known_bug = next((bug.label() for issue in issues for bug in ledger.bugs()
                                     if bug.key == issue["issue"]), "")
        made.append(result)
    return made


def _known_issue(issue: dict) -> str:
    where = f" on node {issue['node']}" if "node" in issue else ""
    return (f"; the broker's log{where} shows a known bug, {issue['issue']} ({issue['link']}): {issue['title']} "
            f"({issue['lines']} lines; the first: {issue['first']})")


def _judged(result: CaseResult, check: Check, verdict: CheckVerdict, stats: dict) -> None:
    counts = stats.get("transactions", {})
    workload = (f"{sum(counts.values())} transactions ({counts.get('committed', 0)} committed, "
                f"{counts.get('aborted', 0)} aborted, {counts.get('unknown', 0)} of unknown outcome), "
                f"{stats.get('faults', {}).get('applied', 0)} faults")
    if stats.get("epoch_space"):  # --start-epoch: how many ids moved to a new producer id during the run
        ids = stats["epoch_space"].values()
        workload += (f", {sum(entry['crossed'] for entry in ids)} of {len(ids)} transactional ids crossed the end of "
                     f"the epoch space")
    if verdict.no_evidence is not None:
        result.outcome, result.message = Outcome.ERROR, f"no verdict: {verdict.no_evidence} ({workload})"
    elif verdict.anomalies:
        shown = verdict.anomalies[:SHOWN_ANOMALIES]
        result.outcome = Outcome.FAILED
        result.message = f"{len(verdict.anomalies)} anomalies, first: {shown[0].summary} ({workload})"
        actual = {"summary": f"{len(verdict.anomalies)} anomalies; first: {shown[0].summary}",
                  "anomalies": [anomaly.to_json() for anomaly in shown]}
        result.failure = StepFailure(step=0, step_label=check.id, expected=check.title, actual=actual,
                                     message=result.message)
        result.transcript_text = "\n\n".join(anomaly.summary + "\n" + "\n".join(f"  {event.line()}" for event in anomaly.events)
                                             for anomaly in shown)
    else:
        result.message = f"checked {verdict.checked} ({workload})"
