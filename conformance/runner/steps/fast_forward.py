"""The ``fast_forward`` step: bump a transactional id's producer epoch to a chosen value through the
protocol itself (KIP-360's InitProducerId with the current producer id and epoch, pipelined), so that a
case can start a few epochs before the end of the 16-bit epoch space.

The step starts from ``${pid}`` and ``${epoch}`` (what ``txn.init`` saved) unless it names others, and
saves where it ended as ``pid`` and ``epoch`` unless its ``save`` says otherwise. Its tens of thousands of
exchanges go to a transcript of their own that keeps the last few: the case's transcript gets those, their
step label carrying the count and the rate.
"""

from __future__ import annotations

from ...client.cluster import Cluster
from ...client.connection import ClientError
from ...client.epochs import DEFAULT_WINDOW, LAST_EPOCH, FastForwardError, fast_forward
from ...client.transcript import Transcript
from ...suite import expressions
from ...suite.kinds import Facts, StepKind
from ..context import Context, Departure
from ..expect import save
from ..policy import client_version, step_version
from ..walk_ahead import Walked, eligible

KEPT_EXCHANGES = 3  # of the fast-forward's own, copied into the case's transcript
DEFAULT_SAVE = {"pid": "producer_id", "epoch": "producer_epoch"}


class TailTranscript(Transcript):
    """A transcript that keeps only its last few exchanges (a fast-forward makes tens of thousands)."""

    def add(self, exchange) -> None:
        super().add(exchange)
        with self._lock:
            del self.exchanges[:-KEPT_EXCHANGES]


def fast_forward_step(context: Context, step: dict, index: str, name: str) -> None:
    spec = expressions.resolve(step["fast_forward"], context.variables)
    transactional_id = spec["transactional_id"]
    producer_id = int(spec.get("producer_id", context.variables.get("pid", -1)))
    epoch = int(spec.get("producer_epoch", context.variables.get("epoch", -1)))
    to_epoch = int(spec["to_epoch"])
    api = "InitProducerId"
    # the version under test is the case's business: the fast-forward is set-up, sent as a client would
    version = step_version(context, step, api) if "version" in step else client_version(context, api)
    walked = _walked_ahead(context, step, to_epoch, int(spec.get("transaction_timeout_ms", 60_000)), version)
    if walked is not None:
        context.variables["txn_ids"] = {**context.variables["txn_ids"], eligible(step): walked.transactional_id}
        label = (f"{name}: {walked.done.describe()}, walked ahead by the run beside the other items' walks; this item "
                 f"goes on with transactional id {walked.transactional_id} in place of {transactional_id}")
        for exchange in walked.exchanges:  # the walk's last exchanges are the evidence, as when the step walks
            exchange.step = label
            context.cluster.transcript.add(exchange)
        done = walked.done
        save(context, {"producer_id": done.producer_id, "producer_epoch": done.producer_epoch, "bumps": done.bumps,
                       "seconds": done.seconds, "per_second": done.per_second}, step.get("save") or DEFAULT_SAVE)
        return
    tail = TailTranscript()
    cluster = Cluster(context.cluster.bootstrap, context.cluster.codec, tail, client_id=context.cluster.client_id,
                      timeout=context.cluster.timeout, security=context.cluster.security)
    cluster.supported, cluster.brokers = context.cluster.supported, dict(context.cluster.brokers)
    label = name
    try:
        connection = cluster.connection(context.cluster.coordinator(transactional_id))
        done = fast_forward(connection, transactional_id, producer_id, epoch, to_epoch, version=version,
                            timeout_ms=int(spec.get("transaction_timeout_ms", 60_000)),
                            window=int(spec.get("window", DEFAULT_WINDOW)),
                            request_timeout=step.get("timeout_ms", 10_000) / 1000, step=name)
        label = f"{name}: {done.describe()}"
    except FastForwardError as error:
        raise _setup_deviation(f"{name}: {error}", f"epoch {to_epoch}", error.answer, api, version) from None
    except ClientError as error:
        raise _setup_deviation(f"{name}: {error}", f"epoch {to_epoch}", str(error), api, version) from None
    finally:
        cluster.close()
        for exchange in tail.exchanges:  # the last exchanges are the evidence, labelled with what the step did
            exchange.step = label
            context.cluster.transcript.add(exchange)
    save(context, {"producer_id": done.producer_id, "producer_epoch": done.producer_epoch, "bumps": done.bumps,
                   "seconds": done.seconds, "per_second": done.per_second}, step.get("save") or DEFAULT_SAVE)


def _walked_ahead(context: Context, step: dict, to_epoch: int, timeout_ms: int, version: int) -> Walked | None:
    """A transactional id the run walked to ``to_epoch`` ahead of this item, where the step can take one."""
    if context.walked_ahead is None or eligible(step) is None:
        return None
    return context.walked_ahead.take(context.case_id, to_epoch, timeout_ms, version)


def _setup_deviation(message: str, expected, actual, api: str, version: int) -> Departure:
    """A fast-forward that fails never proves or disproves the case: it blames set-up (or a check)."""
    return Departure(message, expected=expected, actual=actual, api=api, version=version, preparation=True)


def check_fast_forward(step: dict, report, where: list, facts: Facts) -> None:
    """A literal ``to_epoch`` stays within the epoch space (expressions are checked when they run)."""
    spec = step.get("fast_forward")
    if not isinstance(spec, dict):
        return
    target = spec.get("to_epoch")
    if isinstance(target, int) and not isinstance(target, bool) and not 0 <= target <= LAST_EPOCH:
        report([*where, "fast_forward", "to_epoch"],
               f"to_epoch {target} is outside 0-{LAST_EPOCH} (at {LAST_EPOCH} Kafka rotates the producer id; "
               "a fast-forward stops before that)")


KIND = StepKind("fast_forward", fast_forward_step,
                describe=lambda step: f"to epoch {step['fast_forward'].get('to_epoch')}"
                if isinstance(step.get("fast_forward"), dict) else "",
                check=check_fast_forward)
