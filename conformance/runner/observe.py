"""A set-up or check request must be able to observe before it may judge.

A Fetch or Produce that is not the step under test is only the harness's way of building or seeing an
effect. From the version at which those APIs address topics by id (KIP-516), a topic the target gave the
all-zero id ("this topic has no id") cannot be addressed at all; and an id-addressed request the target
answers with "no such topic" is the target's departure on that API and version, not evidence about the step
under test. Such a step goes on at the newest version of its API that names topics, says so in its label,
and leaves the departure as one note, on its own API and version; where no such version exists the item
is blocked, naming the check.
"""

from __future__ import annotations

import uuid

from ..protocol.errors import error_name
from ..suite.kinds import Request
from .context import Context, Departure
from .exchange import exchange, retrying
from .expect import check_expect
from .policy import client_version
from .under_way import LIVENESS_PROBE

# The first version of each API that addresses topics by id instead of by name.
BY_ID_FROM = {"Fetch": 13, "Produce": 13}
ZERO_ID = uuid.UUID(int=0)
# What a broker answers when the id it was given names no topic it knows.
NO_SUCH_TOPIC = ("UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION", "INCONSISTENT_TOPIC_ID")


class Unaddressed(Exception):
    """An id-addressed set-up or check request was answered as if the topic did not exist, or about another topic."""

    def __init__(self, error: str, why: str | None = None):
        super().__init__(error)
        self.error = error
        self.why = why or f"answered {error} for a topic it has"


def answered_elsewhere(api: str, version: int, asked: dict, response: dict) -> str | None:
    """Why the answer's (first) topic is not the one asked, by id where the version addresses topics by id and by
    name before; None when it is, or when the answer names no topic (an error for the whole request)."""
    answered = (response.get("responses") or [None])[0]
    if not answered:
        return None
    key = "topic_id" if by_id(api, version) else "topic"
    if answered.get(key) in (None, asked.get(key)):
        return None
    return f"answered about {key} {answered.get(key)}, not the {key} asked ({asked.get(key)})"


def by_id(api: str, version: int) -> bool:
    """Whether ``api`` at ``version`` addresses topics by id."""
    return api in BY_ID_FROM and version >= BY_ID_FROM[api]


def has_no_id(topic_id) -> bool:
    """The all-zero id is how Kafka's protocol says a topic has none (or an id the harness never learnt)."""
    return topic_id is None or topic_id == ZERO_ID


def observer(context: Context, api: str, version: int) -> bool:
    """A request of ``api`` at ``version`` that is set-up or a check, not the step under test."""
    return not context.under_test(api, version)


def by_name_version(context: Context, api: str, check: str, why: str) -> int:
    """The newest advertised version of ``api`` that names topics; a Departure that blocks the item, naming
    the check, where the target advertises none."""
    found = context.cluster.version_range(api)
    newest = BY_ID_FROM[api] - 1
    if found is None or found[0] > newest:
        raise Departure(f"{check}: cannot observe: {why}, and {context.target.spec} advertises no {api} version "
                        f"that names topics (v{newest} or older), so this check has no evidence either way",
                        expected=f"a {api} version that can address the topic", actual=why, api=api, blind=True)
    return min(found[1], newest)


def fallback(context: Context, api: str, version: int, why: str, name: str) -> tuple[int, str]:
    """The version a set-up or check step goes on at after ``api`` v``version`` could not address its topic,
    the step's new label, and the one note the departure leaves on its own API and version."""
    lower = by_name_version(context, api, name, why)
    note(context, f"{api} v{version} (not this item's verdict): {why}; the step went on at {api} v{lower}, "
                  f"which names topics")
    return lower, f"{name} (at {api} v{lower}: v{version} {why})"


def note(context: Context, text: str) -> None:
    """Keeps a departure of another API and version than the one under test, once, for the item's record."""
    with context.lock:
        if text not in context.notes:
            context.notes.append(text)


def no_id_reason(topic: str) -> str:
    return f"the target gives topic {topic} the all-zero topic id, so no id-addressed request can name it"


def exists_without_id(context: Context, topic: str) -> bool:
    """Whether Metadata lists ``topic`` without error and with the all-zero id (a topic that does not exist has no
    id either, and a case may address one on purpose)."""
    listed = [entry for entry in context.cluster.metadata([topic])["topics"] if entry.get("name") == topic]
    return bool(listed) and not listed[0].get("error_code") and has_no_id(listed[0].get("topic_id"))


def ids_given(context: Context, request: Request, version: int) -> None:
    """Before ``request`` goes out at ``version``: where it names a topic by the id the harness learnt (its kind
    declares which, :attr:`Request.topic_ids`), the version carries topic ids, and Metadata lists that topic with
    the all-zero id, no answer can be about the topic. That is Metadata's root cause, whatever the step's role;
    the request is not sent."""
    if not request.topic_ids or not carries_topic_ids(context, request.api, version):
        return
    names, learnt = context.variables.get("topics") or {}, context.variables.get("topic_ids") or {}
    for short in request.topic_ids:
        topic = names.get(short)
        if topic is not None and has_no_id(learnt.get(short)) and exists_without_id(context, topic):
            raise no_id_root_cause(context, no_id_reason(topic))


def carries_topic_ids(context: Context, api: str, version: int) -> bool:
    """Whether ``api``'s request at ``version`` has a topic id field anywhere (TxnOffsetCommit from v6 only)."""
    spec = context.cluster.codec.registry.api(api).request

    def among(fields) -> bool:
        for field in fields:
            if version not in field.versions:
                continue
            if field.attribute == "topic_id":
                return True
            if field.is_struct and among(field.fields if field.fields is not None
                                         else spec.struct(field.element_type, field.name).fields):
                return True
        return False

    return among(spec.fields)


def no_id_root_cause(context: Context, why: str) -> Departure:
    """The departure of Metadata that gave a topic the all-zero id: a root cause on Metadata, so that every item
    whose id-addressed step under test it leaves without a topic is blocked by it, and it is reported once."""
    version = context.cluster.best_version("Metadata")
    return Departure(f"Metadata v{version}: {why}", expected="the topic's id (KIP-516: every topic has one)",
                     actual="the all-zero topic id", api="Metadata", version=version,
                     root_cause=f"Metadata v{version} gives topics the all-zero topic id, so no id-addressed request "
                                f"can name them")


def unaddressed_error(api: str, response: dict) -> str | None:
    """The 'no such topic' error of an id-addressed answer, top-level or for the (one) partition asked."""
    codes = [response.get("error_code") or 0]
    for topic in response.get("responses") or []:
        codes += [partition.get("error_code") or 0 for partition in topic.get("partitions") or
                  topic.get("partition_responses") or []]
    names = [error_name(code) for code in codes if code]
    return next((name for name in names if name in NO_SUCH_TOPIC), None)


# ------------------------------------------------------------------------------ a version broken, not the API
# What a request that a version of its API cannot serve ends in: the connection closed, an answer that does not
# decode, or UNSUPPORTED_VERSION for a version the target advertised (librdkafka's mock advertises JoinGroup
# v0-6 and closes the connection at v6).
BROKEN = ("connection closed", "garbage")


def served(api: str, version: int, response: dict, expect: dict) -> None:
    """Raises a Departure marked as a broken version where the answer is UNSUPPORTED_VERSION and the step
    does not expect it."""
    if isinstance(response, dict) and error_name(response.get("error_code") or 0) == "UNSUPPORTED_VERSION" \
            and "UNSUPPORTED_VERSION" not in repr(expect):
        raise Departure(f"{api} v{version} is advertised but answered UNSUPPORTED_VERSION",
                        expected=expect or "a response", actual="UNSUPPORTED_VERSION", broken_version=True,
                        root_cause=f"{api} v{version} is advertised but answered UNSUPPORTED_VERSION")


def broken(deviation: Departure) -> str:
    if deviation.broken_version:
        return "answered UNSUPPORTED_VERSION"
    if deviation.root_cause:  # the answer does not decode: say where
        return f"garbage: {deviation.root_cause.split(' response ', 1)[-1]}"
    return str(deviation.actual)


def movable(context: Context, step, api: str, version: int) -> bool:
    """Whether a step may go on at another version of ``api`` than ``version``: a set-up or check step whose
    version the case leaves open, and never the version under test (not even to prepare it)."""
    return observer(context, api, version) and step.get("version") in (None, "max") \
        and (api, version) != (context.api, context.version)


def version_down(context: Context, step: dict, api: str, version: int, deviation: Departure) -> int | None:
    """The next version down a set-up or check step goes on at after ``api`` v``version`` broke (the
    departure is noted once on that API and version), or None: the step under test, a version the case
    names, an ordinary departure, or no version left below."""
    if not movable(context, step, api, version):
        return None
    if deviation.actual not in BROKEN and not deviation.broken_version:
        return None
    if deviation.actual in BROKEN and not still_answers(context):
        return None  # the target went down, not one version of its API: that is the liveness check's finding
    how = broken(deviation)
    lower = step_down(context, api, version, how)
    if lower is not None and context.learned is not None:
        context.learned.broke(api, version, how)
    return lower


def known_broken(context: Context, step: dict, api: str, version: int) -> tuple[int, str] | None:
    """Where an earlier item of the run found ``api`` v``version`` broken and this step may move: the version
    it goes on at at once (the departure noted as if met here) and how that version broke; else None."""
    how = context.learned.broken(api, version) if context.learned is not None else None
    if how is None or not movable(context, step, api, version):
        return None
    lower = step_down(context, api, version, how)
    return None if lower is None else (lower, how)


def step_down(context: Context, api: str, version: int, how: str) -> int | None:
    """The next version of ``api`` below ``version`` the target advertises (None where there is none), with the
    departure of ``version`` (``how`` it broke) noted once."""
    found = context.cluster.version_range(api)
    known = context.cluster.codec.registry.api(api).versions()
    lower = [candidate for candidate in known if candidate < version and (found is None or candidate >= found[0])]
    if not lower:
        return None
    note(context, f"{api} v{version} (not this item's verdict): {how}; the step went on at {api} v{lower[-1]}")
    return lower[-1]


def still_answers(context: Context) -> bool:
    """Whether the target answers ApiVersions on a fresh connection: a closed connection is one version's
    departure only while the target itself is up."""
    try:
        probe = context.cluster.connection("bootstrap", fresh=True)
        try:
            exchanged = probe.request("ApiVersions", 0, {}, step=LIVENESS_PROBE, timeout=5)
        finally:
            probe.close()
        return exchanged.response is not None
    except Exception:  # noqa: BLE001 - any failure to answer means it is not up
        return False


# ------------------------------------------------------------------------------ a version that serves nothing
# Errors that say nothing about the request: a version answering one of them where another version serves the
# very same request is broken, not refusing (Tansu answers every InitProducerId at v0-2 UNKNOWN_SERVER_ERROR).
GENERIC = ("UNKNOWN_SERVER_ERROR",)


def generic_error(response) -> str | None:
    """The first generic error code anywhere in ``response`` (top level or per topic or partition)."""
    if isinstance(response, dict):
        for key, value in response.items():
            if key == "error_code" and isinstance(value, int) and error_name(value) in GENERIC:
                return error_name(value)
            found = generic_error(value) if isinstance(value, (dict, list)) else None
            if found:
                return found
    elif isinstance(response, list):
        return next((found for found in map(generic_error, response) if found), None)
    return None


def probe_version(context: Context, api: str, version: int) -> int | None:
    """Another version to send the same request at: the one a client picks, else the next one down."""
    found = context.cluster.version_range(api)
    if found is None:
        return None
    chosen = client_version(context, api)
    if chosen != version:
        return chosen
    return version - 1 if version - 1 >= found[0] else None


def served_elsewhere(context: Context, step: dict, name: str, api: str, version: int, fields: dict, response,
                     expect: dict, deviation: Departure) -> tuple[dict, int]:
    """After ``deviation`` of a request answered with a generic error: the same request, sent at another
    version, meets the step's expectation there, so ``api`` v``version`` is broken. A set-up or check step
    whose version the case leaves open goes on with that answer (one note on the broken version; returns
    the answer and the version that served it); otherwise the departure is re-raised carrying the root cause,
    which fails the items whose API and version under test it is and blocks the others. A request no other
    version serves either is re-raised as it was: an ordinary departure."""
    error = generic_error(response)
    other = probe_version(context, api, version) if error and error not in repr(expect) else None
    if other is None:
        raise deviation
    label = f"{name} (the same request at v{other}: is v{version} broken?)"
    try:
        answer = retrying(context, step, lambda: exchange(context, step, label, api, other, fields))
        check_expect(context, label, answer or {}, expect, other)
    except Departure:
        raise deviation from None  # not served there either: the request departs, not one version
    cause = f"{api} v{version} answers {error} to a request that v{other} serves"
    if movable(context, step, api, version):
        note(context, f"{api} v{version} (not this item's verdict): answers {error} where v{other} serves the "
                      f"same request; the step went on at {api} v{other}")
        return answer, other
    deviation.root_cause = cause
    deviation.args = (f"{deviation.args[0]} (one finding: {cause})",)
    raise deviation
