"""Sending one request as a step says: where to, on which connection, malformed or not, retried or not;
and what the target did instead of answering (closed, stayed silent, sent garbage) as the step expects it.

:func:`exchange` is three public stages that a kind sending several requests composes (``pipeline``): the
connection a step's request goes out on (:func:`connection_for`), sending it without waiting (:func:`transmit`),
and its answer as the step expects it (:func:`answer`); :func:`judge` is the fourth, checking the answer and
recording that an expectation was checked, without which an item proves nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ..client.connection import ClientError, Connection, Disconnected, ResponseTimeout
from ..client.transcript import Exchange
from ..protocol import frames
from ..protocol.errors import error_code
from ..protocol.primitives import Raw
from ..suite import expressions, matchers
from .context import Context, Departure, attributed
from .expect import DEFERRING, check_expect, describe_expect
from .pacing import pause
from .policy import destination


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
    connection = connection_for(context, step, api, fields)
    sent = transmit(context, connection, step, name, api, version, fields)
    return answer(context, connection, sent, step, name, api, version, wait_s(step, api, fields))


def connection_for(context: Context, step: Mapping, api: str, fields: dict, *, fresh: bool = False) -> Connection:
    """The connection a step's request goes out on: to its ``to`` (else where its API belongs), as its ``as``, on
    its ``connection`` (a named one of its own) or the cluster's; ``fresh``: a new one, which the caller closes."""
    # The harness finds the destination even for a principal: the lookups would need the very rights a
    # case withholds from it. Node ids are the same on every listener.
    target = destination(context, api, fields, expressions.resolve(step.get("to"), context.variables))
    cluster = context.cluster_as(step.get("as"))
    if fresh:
        return cluster.connection(target, fresh=True)
    if step.get("connection"):
        return cluster.named_connection(str(step["connection"]), target)
    return cluster.connection(target)


def transmit(context: Context, connection: Connection, step: Mapping, name: str, api: str, version: int,
             fields: dict) -> Exchange:
    """Send the step's request without waiting for its answer (malformed, or with raw bytes, as the step says)."""
    body = raw_values(fields)
    if context.learned is not None:  # beside others, a request that took the target down is not sent again
        context.learned.before_sending(api, version)
    return connection.send(api, version, body, step=name, malformation=malformation(step.get("malform")),
                           malleable=_has_raw(body), response_version=step.get("response_version"))


def answer(context: Context, connection: Connection, sent: Exchange, step: Mapping, name: str, api: str, version: int,
           timeout: float):
    """The response to ``sent``, or None where the step expected none (a disconnect, silence, a refusal by
    closing); a departure where the target did otherwise (closed, stayed silent, sent garbage or trailing bytes)."""
    expect = step.get("expect") or {}
    try:
        # a malformed frame may leave the broker reading on: a request after it would be read as its rest
        if expect.get("no_response") and not expect.get("disconnect") and not step.get("malform"):
            _await_later_answer(connection, name, timeout)
            if sent.response is None and sent.problem is None:
                return None  # a later request was answered first: this one gets no answer
        connection.receive(sent, timeout)  # its answer (or what broke), already read
    except Disconnected as error:
        # Closing is the answer a step expects only where its text says the broker closes the connection
        # (`disconnect`). A client retries a closed connection as a network fault, so it never sees a refusal there:
        # `refused: true` wants an error code (Tansu passed four EndTxn refusals by closing). Where the KIP asks for
        # a refusal or no effect, the verifying steps judge the effect, whatever the connection did.
        if expect.get("disconnect") or expect.get("refused") == "or_no_effect":
            return None
        raise Departure(f"{name}: {error}", expected=describe_expect(expect, version), actual="connection closed") from None
    except ResponseTimeout as error:
        if expect.get("no_response") or expect.get("disconnect"):
            if expect.get("disconnect"):
                raise Departure(f"{name}: expected the broker to close the connection, it kept it open "
                                f"without answering for {timeout}s", expected="disconnect", actual="no response") from None
            return None
        raise Departure(f"{name}: {error}", expected=describe_expect(expect, version), actual="no response",
                        final=f"the target did not answer within {timeout:g} s; asking again would wait as long",
                        hangs=True) from None
    except ClientError as error:
        exchanged = getattr(error, "exchange", None)
        # where the answer does not decode, the fault is the response layout of this API version, wherever it is
        # sent: one root cause; and an answer that cannot be read shows nothing about another step's effect
        layout = f"{api} v{version} response does not decode at {exchanged.decode_path}" \
            if exchanged is not None and exchanged.decode_path else None
        raise Departure(f"{name}: {error}", expected=describe_expect(expect, version), actual="garbage",
                        root_cause=layout, blind=True) from None
    if sent.trailing_bytes and api == context.api:
        raise Departure(f"{name}: the {api} v{version} response has {sent.trailing_bytes} bytes after its body",
                        expected="a response body that ends where the frame ends",
                        actual=f"{sent.trailing_bytes} trailing bytes")
    if expect.get("disconnect") or expect.get("no_response"):
        what = "close the connection" if expect.get("disconnect") else "not answer"
        raise Departure(f"{name}: expected the broker to {what}, it answered",
                        expected="disconnect" if expect.get("disconnect") else "no response", actual=sent.response)
    return sent.response


# Request fields that let a broker hold its answer that long (a JoinGroup until the rebalance ends, a Fetch
# until data comes, a Produce until replicas acknowledge): the step waits at least that, and a margin, so
# a broker that uses the time its request allows is never taken for one that does not answer.
HOLDING_FIELDS = ("timeout_ms", "max_wait_ms")
HOLDING_FIELDS_OF = {"JoinGroup": ("rebalance_timeout_ms", "session_timeout_ms")}
HOLD_MARGIN_MS = 5_000
DEFAULT_WAIT_MS = 10_000


def judge(context: Context, name: str, api: str, version: int, response, expect: dict) -> None:
    """The answer (None where the step expected none, and got none) checked against ``expect``, and the check
    recorded (``context.checked``): an item whose step under test records none ends ERROR, proving nothing."""
    with attributed(api, version):
        if response is not None:
            check_expect(context, name, response, expect, version)
        context.checked(api, version, expect)


def held_ms(api: str, fields: dict) -> int:
    """How long ``fields`` let the broker hold the answer (0 when they do not say)."""
    names = HOLDING_FIELDS + HOLDING_FIELDS_OF.get(api, ())
    values = [fields.get(name) for name in names if isinstance(fields, dict)]
    return max([value for value in values if isinstance(value, int) and not isinstance(value, bool)], default=0)


def wait_s(step: dict, api: str, fields: dict) -> float:
    """How long a step waits for its answer: its ``timeout_ms`` (10 s by default), and never less than what
    its own request lets the broker hold it, plus a margin."""
    held = held_ms(api, fields)
    return max(step.get("timeout_ms", DEFAULT_WAIT_MS), held + HOLD_MARGIN_MS if held > 0 else 0) / 1000


def _await_later_answer(connection, name: str, timeout: float) -> None:
    """Waits only as long as it takes to know the request just sent gets no answer. A broker answers the
    requests of one connection in the order they came (the protocol guide says so), so once a request sent
    after it is answered, none will come for it: an ApiVersions v0 (every broker knows it) follows at once,
    and its answer ends the wait, with the first request's answer read on the way if there was one. If
    neither comes, the step's timeout ends it, as before."""
    probe = connection.send("ApiVersions", 0, {}, step=f"{name} (sent after it: answered in order)")
    connection.receive(probe, timeout)


def _has_raw(value) -> bool:
    from ..protocol.codec import has_raw

    return has_raw(value)


# How long a step retries without a ``retry`` of its own (a refusal step's deferring answers), as steps that name one do.
DEFERRED_FOR_MS = 10_000


def retrying(context: Context, step: dict, attempt):
    """Run ``attempt()`` again while the response's error is one the step names as retriable, or one that defers
    the request where the step expects a refusal (as a client retries it: only a final answer is judged)."""
    retry = step.get("retry") or {}
    names = set(retry.get("on") or ())
    if (step.get("expect") or {}).get("refused") in (True, "or_no_effect"):
        names |= set(DEFERRING)
    if not names:
        return attempt()
    retriable = {error_code(name) for name in names}
    deadline = time.monotonic() + retry.get("for_ms", DEFERRED_FOR_MS) / 1000
    while True:
        response = attempt()
        if response is None or matchers.primary_error(response) not in retriable or time.monotonic() > deadline:
            return response
        pause(retry.get("interval_ms", 100) / 1000)


def topic_id(context: Context, topic: str):
    metadata = context.cluster.metadata([topic])
    for entry in metadata["topics"]:
        if entry.get("topic_id") is not None:
            context.topic_ids[entry["name"]] = entry["topic_id"]
    return context.topic_ids.get(topic)
