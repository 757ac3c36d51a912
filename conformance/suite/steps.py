"""How each kind of suite step runs: send, produce, fetch, wait, until, parallel, fault.

A step that finds the broker departing from its expectation raises :class:`Deviation`; a step that
cannot run because the target lacks something raises :class:`Skip`. Anything else that goes wrong
is a harness or infrastructure error.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..client.cluster import Cluster
from ..client.connection import ClientError, Disconnected, ResponseTimeout
from ..protocol import frames, records
from ..protocol.errors import error_code, error_name
from ..protocol.primitives import Raw
from ..protocol.schema import VersionRange
from ..targets.base import CapabilityMissing, Target
from . import expressions, matchers
from .kinds import StepKind

TRANSACTION_APIS = {"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "DescribeTransactions"}
GROUP_APIS = {"TxnOffsetCommit", "OffsetCommit", "OffsetFetch", "JoinGroup", "SyncGroup", "Heartbeat",
              "LeaveGroup"}
DEFAULT_WAIT_MS = 200
# `expect: {refused: true}`: what a KIP demands where it lists errors without tying one to the condition.
REFUSED = "refused: any error code, or the connection closed"
PARALLEL_DEADLINE_S = 120.0
# Versions a client may send: AddPartitionsToTxn v4+ is for brokers only (KIP-890).
CLIENT_MAX = {"AddPartitionsToTxn": 3}
# Transaction-version-2 semantics (KIP-890 part 2) start at these versions; like Kafka's own client,
# use them only when the cluster finalized transaction.version >= 2.
TV2_FROM = {"EndTxn": 5, "Produce": 12, "TxnOffsetCommit": 5}


class Deviation(Exception):
    """The broker did not do what the step expects.

    ``role`` says whom to blame: ``under_test`` (the API and version under test, or a check marked
    ``verifies``) makes the item FAILED; ``setup`` and ``check`` (another API, before or after the
    step under test) make it BLOCKED. Set where the step ran, by :func:`run_step`.
    """

    def __init__(self, message: str, expected=None, actual=None, api: str | None = None):
        super().__init__(message)
        self.expected, self.actual, self.api = expected, actual, api
        self.version: int | None = None
        self.role: str | None = None
        self.final: str | None = None  # why waiting cannot change what was observed (an until stops at once)


class Skip(Exception):
    """The step needs something this target or version does not have."""


class Incomplete(Exception):
    """The case could not be run to its end (a branch still running at its deadline): never a pass."""


@dataclass
class Progress:
    """What a case has proven so far, shared by its parallel branches."""

    tested: bool = False  # the step under test ran at the version under test and its expectation was checked
    checked: int = 0  # expectations checked in all
    left_out: list[str] = field(default_factory=list)  # steps under test that a `when` dropped, for the diagnosis


@dataclass
class Context:
    """Everything the steps of one case × version share."""

    cluster: Cluster
    target: Target
    version: int | None  # the version under test
    api: str | None  # the API under test
    variables: dict
    topic_ids: dict
    step_kinds: dict = field(default_factory=dict)
    matchers: dict = field(default_factory=dict)
    sequences: dict = field(default_factory=dict)  # (producer id, epoch, topic, partition) -> next sequence
    lock: threading.RLock = field(default_factory=threading.RLock)
    principals: dict = field(default_factory=dict)  # name -> Cluster connected as that principal
    progress: Progress = field(default_factory=Progress)
    acls: list = field(default_factory=list)  # the ACL bindings the case created, removed after it

    def under_test(self, api: str | None, version: int | None) -> bool:
        """Whether a request of ``api`` at ``version`` is the step under test (every step, in a case
        about no one API)."""
        return self.api is None or (api == self.api and version == self.version)

    def checked(self, api: str | None, version: int | None, expect: dict) -> None:
        """An expectation held; it proves the item when it was the step under test's own."""
        if expect:
            with self.lock:
                self.progress.checked += 1
                if self.under_test(api, version):
                    self.progress.tested = True

    def cluster_as(self, principal: str | None) -> Cluster:
        """The harness's own connections, or connections authenticated as one of the target's principals."""
        if principal is None:
            return self.cluster
        with self.lock:
            if principal not in self.principals:
                try:
                    bootstrap, security = self.target.principal(principal)
                except CapabilityMissing as missing:
                    raise Skip(str(missing)) from None
                cluster = Cluster(bootstrap, self.cluster.codec, self.cluster.transcript,
                                  client_id=self.cluster.client_id, timeout=self.cluster.timeout, security=security)
                cluster.api_versions()
                cluster.metadata([])  # the brokers' addresses on the principal's listener
                self.principals[principal] = cluster
            return self.principals[principal]

    def close(self) -> None:
        """Closes the principals' connections; the harness's own belong to whoever made the context."""
        for cluster in self.principals.values():
            cluster.close()
        self.principals.clear()

    def branch(self) -> "Context":
        """A context for a parallel branch: its own connections, the same transcript and variables."""
        cluster = Cluster(self.cluster.bootstrap, self.cluster.codec, self.cluster.transcript,
                          client_id=self.cluster.client_id, timeout=self.cluster.timeout,
                          security=self.cluster.security)
        cluster.supported, cluster.brokers = self.cluster.supported, dict(self.cluster.brokers)
        cluster.finalized_features = self.cluster.finalized_features
        return Context(cluster, self.target, self.version, self.api, self.variables, self.topic_ids,
                       self.step_kinds, self.matchers, self.sequences, self.lock, progress=self.progress,
                       acls=self.acls)


def kind_of(step: dict, kinds: dict) -> StepKind | None:
    return next((kinds[key] for key in step if key in kinds), None)


def label(step: dict, index: str, kinds: dict) -> str:
    if "label" in step:
        return f"{index} {step['label']}"
    kind = kind_of(step, kinds)
    if kind is None:
        return f"{index} {next(iter(step), '?')}"
    return f"{index} {kind.keyword} {kind.describe(step)}".rstrip()


# ------------------------------------------------------------------------------ dispatch
def run_steps(context: Context, steps: list[dict], prefix: str = "") -> None:
    for index, step in enumerate(steps, 1):
        run_step(context, step, f"{prefix}{index}")


def run_step(context: Context, step: dict, index: str) -> None:
    if not applies(context, step.get("when")):
        if step.get("send") == context.api and "version" not in step:
            context.progress.left_out.append(f"step {label(step, index, context.step_kinds)} left out by when: "
                                             f"{dict(step['when'])}")
        return
    name = label(step, index, context.step_kinds)
    kind = kind_of(step, context.step_kinds)
    if kind is None:
        raise ValueError(f"step {name}: no step kind handles {sorted(step)}")
    try:
        kind.run(context, step, index, name)
    except Deviation as deviation:
        if deviation.role is None:  # the innermost step that departed decides ...
            deviation.role = blame(context, step, deviation)
        elif deviation.role == "check" and step.get("verifies"):  # ... unless an enclosing step verifies
            deviation.role = "under_test"
        raise


def blame(context: Context, step: dict, deviation: Deviation) -> str:
    if context.under_test(deviation.api, deviation.version):
        return "under_test"
    if context.progress.tested:
        return "under_test" if step.get("verifies") else "check"
    return "setup"


def applies(context: Context, when: dict | None) -> bool:
    if not when:
        return True
    if "versions" in when and (context.version is None or context.version not in VersionRange.parse(str(when["versions"]))):
        return False
    for feature, condition in (when.get("feature") or {}).items():
        level = context.cluster.finalized_features.get(feature, 0)
        text = str(condition).strip()
        for symbol, compare in ((">=", int.__ge__), ("<=", int.__le__), ("==", int.__eq__), ("<", int.__lt__), (">", int.__gt__)):
            if text.startswith(symbol):
                if not compare(level, int(text[len(symbol):])):
                    return False
                break
        else:
            if level != int(text):
                return False
    if "target" in when and not context.target.spec.startswith(when["target"]):
        return False
    return True


# ------------------------------------------------------------------------------ send
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
    found = context.cluster.version_range(api)
    if found is None:
        raise Skip(f"the target does not support {api}")
    high = min(found[1], CLIENT_MAX.get(api, found[1]))
    if api in TV2_FROM and context.cluster.finalized_features.get("transaction.version", 0) < 2:
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


def raw_values(value):
    """``{hex: "..."}`` is a bytes value; ``{raw_hex: "..."}`` is written verbatim in place of the
    field's whole encoding, length prefix included (a deliberate malformation)."""
    if isinstance(value, dict):
        if set(value) == {"raw_hex"}:
            return Raw(bytes.fromhex(str(value["raw_hex"])))
        if set(value) == {"hex"}:
            return bytes.fromhex(str(value["hex"]))
        return {key: raw_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [raw_values(item) for item in value]
    return value


def malformation(spec: dict | None) -> frames.Malformation | None:
    if not spec:
        return None
    return frames.Malformation(header=dict(spec.get("header") or {}), size_delta=int(spec.get("size_delta", 0)),
                               truncate=spec.get("truncate"), trailing=bytes.fromhex(str(spec.get("trailing_hex", ""))))


def exchange(context: Context, step: dict, name: str, api: str, version: int, fields: dict):
    """Send one request as the step says; returns the response, or None when none was expected."""
    expect = step.get("expect") or {}
    # The harness finds the destination even for a principal: the lookups would need the very rights a
    # case withholds from it. Node ids are the same on every listener.
    target = destination(context, api, fields, expressions.resolve(step.get("to"), context.variables))
    cluster = context.cluster_as(step.get("as"))
    connection_name = step.get("connection")
    if connection_name:
        key = f"{connection_name}@{target}"
        connection = cluster._connections.get(key)
        if connection is None or not connection.connected:
            connection = cluster.connection(target, fresh=True)
            cluster._connections[key] = connection
    else:
        connection = cluster.connection(target)
    timeout = step.get("timeout_ms", 10_000) / 1000
    body = raw_values(fields)
    sent = connection.send(api, version, body, step=name, malformation=malformation(step.get("malform")),
                           malleable=_has_raw(body), response_version=step.get("response_version"))
    try:
        # a malformed frame may leave the broker reading on: a request after it would be read as its rest
        if expect.get("no_response") and not expect.get("disconnect") and not step.get("malform"):
            _await_later_answer(connection, sent, name, timeout)
            if sent.response is None and sent.problem is None:
                return None  # a later request was answered first: this one gets no answer
        connection.receive(sent, timeout)  # its answer (or what broke), already read
    except Disconnected as error:
        if expect.get("disconnect") or expect.get("refused"):  # closing the connection is one way to refuse
            return None
        raise Deviation(f"{name}: {error}", expected=_describe_expect(expect, version), actual="connection closed") from None
    except ResponseTimeout as error:
        if expect.get("no_response") or expect.get("disconnect"):
            if expect.get("disconnect"):
                raise Deviation(f"{name}: expected the broker to close the connection, it kept it open "
                                f"without answering for {timeout}s", expected="disconnect", actual="no response") from None
            return None
        raise Deviation(f"{name}: {error}", expected=_describe_expect(expect, version), actual="no response") from None
    except ClientError as error:
        raise Deviation(f"{name}: {error}", expected=_describe_expect(expect, version), actual="garbage") from None
    if sent.trailing_bytes and api == context.api:
        raise Deviation(f"{name}: the {api} v{version} response has {sent.trailing_bytes} bytes after its body",
                        expected="a response body that ends where the frame ends",
                        actual=f"{sent.trailing_bytes} trailing bytes")
    if expect.get("disconnect") or expect.get("no_response"):
        what = "close the connection" if expect.get("disconnect") else "not answer"
        raise Deviation(f"{name}: expected the broker to {what}, it answered",
                        expected="disconnect" if expect.get("disconnect") else "no response", actual=sent.response)
    return sent.response


def _await_later_answer(connection, sent, name: str, timeout: float) -> None:
    """Waits as long as it takes to know ``sent`` gets no answer. A broker answers the requests of one
    connection in the order they came (the protocol guide says so), so the answer to a request sent after
    ``sent`` proves that none will come for it: an ApiVersions v0 (every broker knows it) follows at once.
    The first answer of the two ends the wait; if neither comes, the step's timeout does, as before."""
    probe = connection.send("ApiVersions", 0, {}, step=f"{name} (sent after it: answered in order)")
    connection.receive(probe, timeout)  # reads the answer to ``sent`` on the way, if there is one


def _has_raw(value) -> bool:
    from ..protocol.codec import has_raw

    return has_raw(value)


def _describe_expect(expect: dict, version: int):
    if expect.get("refused"):
        return REFUSED
    if "error_code" in expect:
        wanted = matchers.for_version(expect["error_code"], version)
        return {"error_code": wanted}
    return expect or "a response"


def check_expect(context: Context, name: str, response: dict, expect: dict, version: int, error_of=None) -> None:
    """Compare a response with a step's ``expect`` (error code and field matchers)."""
    if expect.get("refused") and (error_of or matchers.primary_error)(response) == 0:
        raise Deviation(f"{name}: expected the request to be refused, it was answered with NONE",
                        expected=REFUSED, actual="NONE")
    if "error_code" in expect:
        wanted = matchers.for_version(expect["error_code"], version)
        if wanted is not matchers._MISSING:
            actual = (error_of or matchers.primary_error)(response)
            problem = matchers.match_value(actual, wanted, True, context.matchers)  # a name, a list, or {ne: NONE}
            if problem:
                message = response.get("error_message") if isinstance(response, dict) else None
                raise Deviation(f"{name}: {problem}" + (f" ({message})" if message else ""),
                                expected=wanted, actual=error_name(actual))
    fields = matchers.for_version(expect.get("fields") or {}, version)  # may be a per-version map
    for path, wanted in ({} if fields is matchers._MISSING else fields).items():
        problem = matchers.match_field(response, path, wanted, version, context.matchers)
        if problem:
            try:
                actual = matchers.lookup(response, path)
            except matchers.PathError:
                actual = "(absent)"
                problem = top_level_error(response) + problem
            raise Deviation(f"{name}: {problem}", expected={path: wanted}, actual={path: actual})


def element(response: dict, path: str, name: str, expect, version: int):
    """The part of a response a step reads; its absence is a departure that names the response's own error first."""
    try:
        return matchers.lookup(response, path)
    except matchers.PathError as error:
        raise Deviation(f"{name}: {top_level_error(response)}{error}", expected=expect or "a response with " + path,
                        actual=summarise(response)) from None


def top_level_error(response) -> str:
    """``the response says COORDINATOR_NOT_AVAILABLE ("...")``, when a response carries an error of its own."""
    if not isinstance(response, dict) or not response.get("error_code"):
        return ""
    message = response.get("error_message")
    return f"the response says {error_name(response['error_code'])}" + (f" ({message})" if message else "") + "; "


def summarise(response) -> object:
    """A response without its byte payloads, for a failure's ``actual``."""
    if isinstance(response, dict):
        return {key: summarise(value) for key, value in response.items()}
    if isinstance(response, list):
        return [summarise(item) for item in response]
    if isinstance(response, (bytes, bytearray)):
        return f"<{len(response)} bytes>"
    return response


def save(context: Context, response: dict, wanted: dict | None) -> None:
    """``{variable: path}``; a path ending in ``?`` is optional (kept unchanged when absent). A list of
    paths takes the first the response has (a field that moved between versions)."""
    for variable, paths in (wanted or {}).items():
        choices = paths if isinstance(paths, list) else [paths]
        for position, path in enumerate(choices):
            optional = path.endswith("?")
            path = path.rstrip("?")
            try:
                value = response if path in (".", "") else matchers.lookup(response, path)
            except matchers.PathError:
                if optional or position < len(choices) - 1:
                    continue
                raise
            with context.lock:
                context.variables[variable] = value
            break


def retrying(context: Context, step: dict, attempt):
    """Run ``attempt()`` again while the response's error is one the step names as retriable."""
    retry = step.get("retry")
    if not retry:
        return attempt()
    retriable = {error_code(name) for name in retry["on"]}
    deadline = time.monotonic() + retry.get("for_ms", 10_000) / 1000
    while True:
        response = attempt()
        if response is None or matchers.primary_error(response) not in retriable or time.monotonic() > deadline:
            return response
        time.sleep(retry.get("interval_ms", 100) / 1000)


def send_step(context: Context, step: dict, index: str, name: str) -> None:
    api = context.cluster.codec.registry.api_name(step["send"])
    version = step_version(context, step, api)
    fields = expressions.resolve(step.get("fields") or {}, {**context.variables, "version": version})
    if api in ACL_PRINCIPAL_FIELDS:
        fields = acl_principals(context, api, fields)
    with attributed(api, version):
        response = retrying(context, step, lambda: exchange(context, step, name, api, version, fields))
        expect = expressions.resolve(step.get("expect") or {}, context.variables)
        if response is None:  # the expected disconnect or silence happened
            context.checked(api, version, expect)
            return
        if api == "CreateAcls":
            acls_created(context, step, fields, response)
        check_expect(context, name, response, expect, version)
        context.checked(api, version, expect)
    save(context, response, step.get("save"))


# ------------------------------------------------------------------------------ ACLs
# Where ACL requests name a principal; suites name the target's principals as `User:guest`, `User:nobody`.
ACL_PRINCIPAL_FIELDS = {"CreateAcls": ("creations", "principal"), "DeleteAcls": ("filters", "principal_filter")}
# CreateAcls errors that mean the harness cannot grant rights here: the case skips, saying why.
CANNOT_GRANT = {
    "CLUSTER_AUTHORIZATION_FAILED": "the harness's own principal may not create ACLs (it needs ALTER on the "
                                    "CLUSTER resource)",
    "SECURITY_DISABLED": "the broker has no authorizer, so there are no rights to grant",
}


def acl_principals(context: Context, api: str, fields: dict) -> dict:
    """``User:guest`` in an ACL request becomes the Kafka principal the target knows ``guest`` by
    (``--principal guest=FILE`` with ``principal=User:alice``); other principals stay as written."""
    entries, key = ACL_PRINCIPAL_FIELDS[api]
    if not isinstance(fields.get(entries), list):
        return fields
    rewritten = []
    for entry in fields[entries]:
        value = entry.get(key) if isinstance(entry, dict) else None
        if isinstance(value, str) and value.startswith("User:"):
            mapped = context.target.kafka_principal(value[len("User:"):])
            if mapped is not None:
                entry = {**entry, key: mapped}
        rewritten.append(entry)
    return {**fields, entries: rewritten}


def acls_created(context: Context, step: dict, fields: dict, response: dict) -> None:
    """Remembers the bindings a CreateAcls made (the runner removes them after the case); where the harness
    may not grant rights at all, the case skips rather than departs, unless CreateAcls is what it tests."""
    creations = fields.get("creations") or []
    results = response.get("results") or []
    for creation, result in zip(creations, results):
        if isinstance(result, dict) and result.get("error_code") == 0:
            with context.lock:
                context.acls.append(dict(creation))
    if context.api == "CreateAcls" or step.get("as"):
        return
    for creation, result in zip(creations, results):
        name = error_name(result.get("error_code", 0)) if isinstance(result, dict) else None
        if name in CANNOT_GRANT:
            whom = creation.get("principal") if isinstance(creation, dict) else None
            raise Skip(f"{context.target.spec}: cannot grant {whom or 'a principal'} the rights this case needs: "
                       f"{CANNOT_GRANT[name]} (CreateAcls: {name})")


class attributed:
    """Stamps a Deviation raised inside with the API and version of the request that departed."""

    def __init__(self, api: str, version: int):
        self.api, self.version = api, version

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if isinstance(error, Deviation) and error.api is None:
            error.api, error.version = self.api, self.version
        return False


# ------------------------------------------------------------------------------ produce
def _as_bytes(value) -> bytes | None:
    return None if value is None else (value.encode() if isinstance(value, str) else bytes(value))


def _records(spec) -> list[records.Record]:
    if isinstance(spec, int):
        spec = [f"value-{index}" for index in range(spec)]
    built = []
    for index, item in enumerate(spec):
        if not isinstance(item, dict):
            item = {"value": item}
        headers = [(str(key), _as_bytes(value)) for key, value in (item.get("headers") or {}).items()]
        built.append(records.Record(offset_delta=index, timestamp_delta=0, key=_as_bytes(item.get("key")),
                                    value=_as_bytes(item.get("value")), headers=headers))
    return built


def produce_step(context: Context, step: dict, index: str, name: str) -> None:
    """Build a RecordBatch v2 and send it in a Produce request; expectations are per partition."""
    spec = expressions.resolve(step["produce"], context.variables)
    topic, partition = spec["topic"], int(spec.get("partition", 0))
    producer_id, epoch = int(spec.get("producer_id", -1)), int(spec.get("producer_epoch", -1))
    transactional_id = spec.get("transactional_id")
    batch_records = _records(spec.get("records", 1))
    key = (producer_id, epoch, topic, partition)
    sequence = spec.get("base_sequence", "auto")
    with context.lock:
        if sequence == "auto":
            sequence = context.sequences.get(key, 0) if producer_id >= 0 else -1
        context.sequences[key] = int(sequence) + len(batch_records) if producer_id >= 0 else -1
    transactional = bool(spec.get("transactional_flag", transactional_id is not None))
    batch = records.RecordBatch(
        attributes=records.TRANSACTIONAL_FLAG if transactional else 0,
        base_timestamp=int(time.time() * 1000), producer_id=producer_id, producer_epoch=epoch,
        base_sequence=int(sequence), records=batch_records)
    data = records.encode_batch(batch, compression=_compression(spec.get("compression", "none")))
    api = "Produce"
    version = step_version(context, {**step, "version": spec.get("version", step.get("version"))}, api)
    fields = {
        "transactional_id": transactional_id, "acks": int(spec.get("acks", -1)),
        "timeout_ms": int(spec.get("timeout_ms", 30_000)),
        "topic_data": [{"name": topic, "topic_id": context.topic_ids.get(topic) or _topic_id(context, topic),
                        "partition_data": [{"index": partition, "records": data}]}],
    }
    if "to" not in step:
        step = {**step, "to": {"leader": {"topic": topic, "partition": partition}}}
    with attributed(api, version):
        response = retrying(context, step, lambda: exchange(context, step, name, api, version, fields))
        expect = expressions.resolve(step.get("expect") or {"error_code": "NONE"}, context.variables)
        if response is None:
            context.checked(api, version, expect)
            return
        partition_response = element(response, "responses[0].partition_responses[0]", name, expect, version)
        check_expect(context, name, partition_response, expect, version)
        context.checked(api, version, expect)
    save(context, partition_response, step.get("save"))


def _compression(name) -> int:
    codes = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    return codes[str(name).lower()] if not isinstance(name, int) else name


def _topic_id(context: Context, topic: str):
    metadata = context.cluster.metadata([topic])
    for entry in metadata["topics"]:
        if entry.get("topic_id") is not None:
            context.topic_ids[entry["name"]] = entry["topic_id"]
    return context.topic_ids.get(topic)


# ------------------------------------------------------------------------------ fetch
def visible_records(batches: list, aborted: list[dict], isolation: int) -> list[records.Record]:
    """Data records a consumer at ``isolation`` delivers, filtering aborted transactions as KIP-98 says."""
    if isolation == 0:
        return [record for batch in batches if isinstance(batch, records.RecordBatch) and not batch.is_control
                for record in batch.records]
    pending = sorted(aborted or [], key=lambda entry: entry["first_offset"])
    aborted_producers: set[int] = set()
    visible = []
    for batch in batches:
        if not isinstance(batch, records.RecordBatch):
            continue
        while pending and pending[0]["first_offset"] <= batch.base_offset + (batch.last_offset_delta or 0):
            aborted_producers.add(pending.pop(0)["producer_id"])
        if batch.is_control:
            marker = records.ControlRecord.from_record(batch.records[0]) if batch.records else None
            if marker is not None and marker.type == records.ControlType.ABORT:
                aborted_producers.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborted_producers:
            continue
        visible.extend(batch.records)
    return visible


def fetch_step(context: Context, step: dict, index: str, name: str) -> None:
    version = step_version(context, {**step, "version": step["fetch"].get("version", step.get("version"))}, "Fetch")
    with attributed("Fetch", version):
        _fetch(context, step, name, version)


def _fetch(context: Context, step: dict, name: str, version: int) -> None:
    spec = expressions.resolve(step["fetch"], context.variables)
    topic, partition = spec["topic"], int(spec.get("partition", 0))
    isolation = {"read_uncommitted": 0, "read_committed": 1}[spec.get("isolation", "read_committed")]
    max_bytes = int(spec.get("max_bytes", 1 << 20))
    fields = {
        "replica_id": -1, "max_wait_ms": int(spec.get("max_wait_ms", DEFAULT_WAIT_MS)), "min_bytes": 1,
        "max_bytes": max_bytes, "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "topic_id": context.topic_ids.get(topic) or _topic_id(context, topic),
                    "partitions": [{"partition": partition, "current_leader_epoch": int(spec.get("current_leader_epoch", -1)),
                                    "fetch_offset": int(spec.get("offset", 0)), "last_fetched_epoch": -1,
                                    "log_start_offset": -1, "partition_max_bytes": max_bytes}]}],
        "forgotten_topics_data": [], "rack_id": "",
    }
    if "to" not in step:
        step = {**step, "to": {"leader": {"topic": topic, "partition": partition}}}
    response = retrying(context, step, lambda: exchange(context, step, name, "Fetch", version, fields))
    if response is None:
        context.checked("Fetch", version, step.get("expect") or {})
        return
    if response.get("error_code"):
        expect = expressions.resolve(step.get("expect") or {"error_code": "NONE"}, context.variables)
        check_expect(context, name, response, expect, version)
        context.checked("Fetch", version, expect)
        return
    data = element(response, "responses[0].partitions[0]", name, step.get("expect"), version)
    batches = records.decode_batches(data.get("records") or b"")
    visible = visible_records(batches, data.get("aborted_transactions") or [], isolation)
    summary = {
        **{key: value for key, value in data.items() if key != "records"},
        "records": len(visible),
        "values": [None if record.value is None else record.value.decode("utf-8", "replace") for record in visible],
        "control": [records.ControlType(records.ControlRecord.from_record(batch.records[0]).type).name
                    for batch in batches if isinstance(batch, records.RecordBatch) and batch.is_control and batch.records],
        "batches": [{"base_offset": batch.base_offset, "producer_id": batch.producer_id,
                     "producer_epoch": batch.producer_epoch, "base_sequence": batch.base_sequence,
                     "transactional": batch.is_transactional, "control": batch.is_control,
                     "crc_valid": batch.crc_valid, "records": len(batch.records)}
                    for batch in batches if isinstance(batch, records.RecordBatch)],
        "crc_valid": all(batch.crc_valid for batch in batches if isinstance(batch, records.RecordBatch)),
    }
    expect = dict(expressions.resolve(step.get("expect") or {}, context.variables))
    expect.setdefault("error_code", "NONE")
    fields_expected = dict(expect.pop("fields", None) or {})
    for key in ("records", "values", "control", "aborted_transactions", "crc_valid"):
        if key in expect:
            wanted = expect.pop(key)
            if key == "aborted_transactions" and isinstance(wanted, int):
                fields_expected["aborted_transactions"] = {"len": wanted}
            else:
                fields_expected[key] = wanted
    expect["fields"] = fields_expected
    try:
        check_expect(context, name, summary, expect, version)
    except Deviation as deviation:
        deviation.final = beyond_reach(summary, {key: matchers.for_version(value, version)
                                                 for key, value in fields_expected.items()})
        raise
    context.checked("Fetch", version, expect)
    save(context, summary, step.get("save"))


def beyond_reach(summary: dict, wanted: dict) -> str | None:
    """Why no later fetch from the same offset can show what ``wanted`` asks for, or None if one may.

    A log only grows: a record a fetch delivered (committed, or read uncommitted) is delivered again by
    every later fetch from that offset, and a transaction marker, once written, stays where it is. So
    more visible records than an exact count, or markers that do not begin the exact list wanted, are
    final, and an ``until`` need not wait out its time to fail. Only plain counts and lists are judged;
    a matcher (``{gte: 2}``, ...) is left to the timeout."""
    count = wanted.get("records")
    if isinstance(count, int) and not isinstance(count, bool) and summary["records"] > count:
        return f"{summary['records']} records are visible, more than the {count} expected, and records stay"
    markers = wanted.get("control")
    if isinstance(markers, list) and summary["control"] != markers[:len(summary["control"])]:
        return f"the markers {summary['control']} are written, and {markers} cannot follow them"
    return None


# ------------------------------------------------------------------------------ control flow
def wait_step(context: Context, step: dict, index: str, name: str) -> None:
    wait = step["wait"]
    time.sleep((wait if isinstance(wait, int) else int(wait.get("ms", 0))) / 1000)


def until_step(context: Context, step: dict, index: str, name: str) -> None:
    """Repeat a step until its expectations hold, or fail with its last deviation."""
    until = step["until"]
    # a broker's timer is waited for as the target has it set: ``for_ms`` may be an expression over ${config.*}
    deadline = time.monotonic() + int(expressions.resolve(until.get("for_ms", 5_000), context.variables)) / 1000
    while True:
        try:
            if "steps" in until:  # a whole sequence, repeated from its start
                run_steps(context, until["steps"], f"{index}(until).")
            else:
                run_step(context, until["step"], f"{index}(until)")
            return
        except Deviation as deviation:
            # one step repeated asks the same question each time; a sequence may ask another (a new offset)
            if deviation.final and "step" in until:
                deviation.args = (f"{deviation.args[0]} (no use waiting: {deviation.final})",)
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(until.get("interval_ms", 200) / 1000)


def parallel_step(context: Context, step: dict, index: str, name: str) -> None:
    branches = step["parallel"]
    failures: list[BaseException] = []
    contexts = [context.branch() for _ in branches]

    def run(branch_index: int, steps: list[dict]) -> None:
        try:
            run_steps(contexts[branch_index], steps, f"{index}.{branch_index + 1}.")
        except BaseException as error:  # noqa: BLE001 - collected and re-raised in the caller's thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(number, steps), daemon=True) for number, steps in enumerate(branches)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + PARALLEL_DEADLINE_S
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    running = [number + 1 for number, thread in enumerate(threads) if thread.is_alive()]
    finished_failures = list(failures)  # closing the connections below makes a running branch fail too
    for branch in contexts:
        branch.close()
        branch.cluster.close()
    if finished_failures:
        raise finished_failures[0]
    if running:
        raise Incomplete(f"step {index} parallel: branch {', '.join(map(str, running))} still running after "
                         f"{PARALLEL_DEADLINE_S:.0f}s; its steps were not all checked")


def fault_step(context: Context, step: dict, index: str, name: str) -> None:
    fault = expressions.resolve(step["fault"], context.variables)
    name, arguments = (fault, {}) if isinstance(fault, str) else (fault["name"], dict(fault.get("args") or {}))
    try:
        if name == "restart":
            context.target.restart()
        elif name != "disconnect":
            context.target.fault(name, **arguments)
        context.cluster.close()  # connections to a node a fault took down are dead: reopen on demand
    except CapabilityMissing as error:
        raise Skip(str(error)) from None


# ------------------------------------------------------------------------------ the built-in kinds
def _until_nested(step: dict):
    until = step["until"] if isinstance(step.get("until"), dict) else {}
    if isinstance(until.get("step"), dict):
        return [(("until", "step"), [until["step"]])]
    if isinstance(until.get("steps"), list):
        return [(("until", "steps"), until["steps"])]
    return []


def _until_with(step: dict, expanded: list[list]) -> dict:
    until = {key: value for key, value in step["until"].items() if key not in ("step", "steps")}
    [body] = expanded
    # a template that expands to several steps is repeated as a whole sequence
    until.update({"step": body[0]} if "step" in step["until"] and len(body) == 1 else {"steps": body})
    return {**step, "until": until}


def _parallel_nested(step: dict):
    branches = step["parallel"] if isinstance(step.get("parallel"), list) else []
    return [(("parallel", number), branch) for number, branch in enumerate(branches) if isinstance(branch, list)]


def _named(key: str):
    return lambda step: step[key] if isinstance(step.get(key), str) else ""


BUILTIN_STEP_KINDS = {kind.keyword: kind for kind in [
    StepKind("send", send_step, describe=_named("send")),
    StepKind("produce", produce_step),
    StepKind("fetch", fetch_step),
    StepKind("wait", wait_step),
    StepKind("until", until_step, nested=_until_nested, with_nested=_until_with),
    StepKind("parallel", parallel_step, nested=_parallel_nested,
             with_nested=lambda step, expanded: {**step, "parallel": expanded}),
    StepKind("fault", fault_step, describe=_named("fault")),
]}
