"""The harness's policy where a suite leaves it open: the version a request goes out at, the broker it
goes to, and which steps only prepare the step under test.

A step without a ``version`` is sent as a well-behaved client would (the highest version both sides
support, within client limits and the finalized transaction version); a step without ``to`` goes to the
coordinator or leader its API needs. Whom a departure blames is decided in :mod:`.verdict`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..client.cluster import Cluster
from ..suite import expressions
from ..suite.retries import COORDINATOR_NOT_READY
from ..suite.step import Step
from ..suite.walk import kind_of, walk
from .context import Context, Skip

TRANSACTION_APIS = {"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "DescribeTransactions"}
GROUP_APIS = {"TxnOffsetCommit", "OffsetCommit", "OffsetFetch", "JoinGroup", "SyncGroup", "Heartbeat",
              "LeaveGroup", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe"}
# Versions a client may send: AddPartitionsToTxn v4+ is for brokers only (KIP-890).
CLIENT_MAX = {"AddPartitionsToTxn": 3}
# Transaction-version-2 semantics (KIP-890 part 2) start at these versions; like Kafka's own client,
# use them only when the cluster finalized transaction.version >= 2.
TV2_FROM = {"EndTxn": 5, "Produce": 12, "TxnOffsetCommit": 5}


# A coordinator that is not ready yet is a protocol-legal first answer on the way to the one a case checks
# (suite.retries): a step that does not expect one of these asks again, as a client would, unless it names its
# own retry.
COORDINATOR_RETRY = {"on": list(COORDINATOR_NOT_READY), "for_ms": 10_000}


def with_coordinator_retry(api: str, step: dict) -> dict:
    """``step``, with :data:`COORDINATOR_RETRY` where it goes to a coordinator and names neither a retry nor,
    anywhere in its ``expect``, one of the codes it retries."""
    if "retry" in step or api not in TRANSACTION_APIS | GROUP_APIS:
        return step
    if any(name in repr(step.get("expect") or {}) for name in COORDINATOR_NOT_READY):
        return step
    return {**step, "retry": COORDINATOR_RETRY}


def step_version(context: Context, step: dict, api: str) -> int:
    wanted = step.get("version")
    if wanted is None:
        if context.api == api and context.version is not None:
            return context.version
        return client_version(context, api)
    if isinstance(wanted, str):
        wanted = expressions.resolve(wanted, {**context.variables, "version": context.version})
        if wanted in ("max", "min"):
            found = context.cluster.version_range(api)
            if found is None:
                raise Skip(f"the target does not support {api}")
            return found[1] if wanted == "max" else found[0]
    return int(wanted)


def client_version(context: Context, api: str) -> int:
    """The version a well-behaved client picks: the highest both sides support, within client limits."""
    return client_version_of(context.cluster, api)


def client_version_of(cluster: Cluster, api: str) -> int:
    """:func:`client_version` on ``cluster`` (which has read ApiVersions)."""
    found = cluster.version_range(api)
    if found is None:
        raise Skip(f"the target does not support {api}")
    high = min(found[1], CLIENT_MAX.get(api, found[1]))
    if api in TV2_FROM and cluster.finalized_features.get("transaction.version", 0) < 2:
        high = min(high, TV2_FROM[api] - 1)
    return max(high, found[0])


def transaction_of(fields: dict) -> str | None:
    """The transactional id a request is about, whatever its version calls the field."""
    if fields.get("transactional_id"):
        return fields["transactional_id"]
    if fields.get("v3_and_below_transactional_id"):  # AddPartitionsToTxn v0-3
        return fields["v3_and_below_transactional_id"]
    batch = fields.get("transactions")  # AddPartitionsToTxn v4+: a batch, routed by its first transaction
    if isinstance(batch, list) and batch and isinstance(batch[0], dict):
        return batch[0].get("transactional_id")
    return None


def destination(context: Context, api: str, fields: dict, to) -> str | int:
    """Where a request goes: given by the step, else the coordinator or leader the API needs."""
    if to is None:
        transactional_id = transaction_of(fields)
        if api in TRANSACTION_APIS and transactional_id:
            to = {"coordinator": {"transaction": transactional_id}}
        elif api in GROUP_APIS and fields.get("group_id"):
            to = {"coordinator": {"group": fields["group_id"]}}
        else:
            return "bootstrap"
    if isinstance(to, (str, int)):
        return to
    if "coordinator" in to:
        ((kind, key),) = to["coordinator"].items()
        return context.cluster.coordinator(key, kind)
    if "leader" in to:
        return context.cluster.leader(to["leader"]["topic"], int(to["leader"].get("partition", 0)))
    if "not_coordinator" in to or "not_leader" in to:  # a broker that is not the one the request belongs to
        if "not_coordinator" in to:
            ((kind, key),) = to["not_coordinator"].items()
            owner = context.cluster.coordinator(key, kind)
        else:
            owner = context.cluster.leader(to["not_leader"]["topic"], int(to["not_leader"].get("partition", 0)))
        context.cluster.metadata([])  # every broker, not only those routing has met
        others = sorted(node for node in context.cluster.brokers if node != owner)
        if not others:
            raise Skip(f"needs a broker other than node {owner}: {context.target.spec} has one")
        return others[0]
    if "node" in to:
        return int(to["node"])
    raise ValueError(f"unknown destination {to!r}")


# What an expectation that demands only success looks like (a step that prepares, rather than claims).
SUCCESS_ONLY: tuple[dict[str, str], ...] = ({}, {"error_code": "NONE"})


def sends(step: Mapping, api: str, kinds: Mapping) -> bool:
    """Whether ``step`` (or a step nested in it) sends a request of ``api`` that can go out at the version
    under test (a step that names a fixed version is another version's)."""
    return any(request.api == api and not isinstance(request.version, int)
               for visit in walk([step], kinds) for request in visit.requests)


def only_success(step: Mapping, api: str, kinds: Mapping) -> bool:
    """Whether ``step`` itself sends ``api`` (not in a step nested in it) and demands nothing of the answer but
    success."""
    kind = kind_of(step, kinds)
    own = [request for request in kind.requests(step) if request.api == api] if kind is not None else []
    return bool(own) and all(request.expect in SUCCESS_ONLY for request in own)


def preparing_steps(context: Context, steps: Sequence[Step], applies) -> set[int]:
    """The indexes of the top-level steps that only prepare the condition a later step of the API under
    test is judged on (Tansu's older-epoch-rejected failed at its produce at epoch+1, which only
    sets the epoch the older one is compared with, and the older-epoch request was never sent).

    A step prepares when it sends the API under test itself, demands nothing of the answer but success (no
    ``expect``, ``{}`` or ``error_code: NONE``), and a later step that ``applies`` here sends that API
    again and claims more than success (a code, a refusal, a field). Its departure blocks the item, naming it;
    the later step judges the API under test. Where every step of that API only demands success (in-order
    sequences accepted, a first batch of any sequence accepted), each of them is the claim."""
    api = context.api
    if api is None:
        return set()
    kinds = context.step_kinds
    sending = [index for index, step in enumerate(steps) if applies(context, step.when) and sends(step, api, kinds)]
    claiming = [index for index in sending if claims_more(steps[index], kinds)]
    if not claiming:
        return set()
    preparing = set()
    for index in sending:
        step = steps[index]
        if index < claiming[-1] and only_success(step, api, kinds) and not step.verifies:
            preparing.add(index)
    return preparing


def claims_more(step: Mapping, kinds: Mapping) -> bool:
    """Whether ``step`` (or a step nested in it) expects more of an answer than success."""
    return any(request.expect not in SUCCESS_ONLY for visit in walk([step], kinds) for request in visit.requests)
