"""Comparing a response with a step's ``expect``, and keeping what a step ``save``s.

Every departure is a :class:`~conformance.runner.context.Departure` whose message begins with the
step's label, and names the response's own error first where the response carries one.
"""

from __future__ import annotations

from ..protocol.errors import error_name
from ..suite import matchers
from .context import Context, Departure

# `expect: {refused: true}`: what a KIP demands where it lists errors without tying one to the condition.
REFUSED = "refused: any error code (a closed connection is no refusal a client sees)"
# `refused: or_no_effect`: the KIP demands a refusal or no effect; a NONE answer is judged by the effect,
# which the case's `verifies` steps after it check (the loader insists there is one).
REFUSED_OR_NO_EFFECT = "refused, or answered NONE with no effect (the verifying steps judge the effect)"
# Answers that defer a request instead of refusing it (the coordinator is completing a transaction, or not ready):
# Kafka classes them retriable and a client sends the request again, so a step that expects a refusal retries them
# (exchange.retrying) and one still deferred at the end is no refusal a client sees.
DEFERRING = ("CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE")


def deferred(response, error_of=None) -> str | None:
    """The deferring error ``response`` answers with, if any."""
    name = error_name((error_of or matchers.primary_error)(response)) if isinstance(response, dict) else None
    return name if name in DEFERRING else None


def describe_expect(expect: dict, version: int):
    if expect.get("refused") == "or_no_effect":
        return REFUSED_OR_NO_EFFECT
    if expect.get("refused"):
        return REFUSED
    if "error_code" in expect:
        wanted = matchers.for_version(expect["error_code"], version)
        return {"error_code": wanted}
    return expect or "a response"


def check_expect(context: Context, name: str, response: dict, expect: dict, version: int, error_of=None) -> None:
    """Compare a response with a step's ``expect`` (error code and field matchers)."""
    if expect.get("refused") is True and (error_of or matchers.primary_error)(response) == 0:
        raise Departure(f"{name}: expected the request to be refused, it was answered with NONE",
                        expected=REFUSED, actual="NONE")
    if expect.get("refused") is True and deferred(response, error_of):
        raise Departure(f"{name}: expected the request to be refused, it was answered {deferred(response, error_of)} "
                        "until its retries ran out: a retriable error defers the request, it is no refusal a client "
                        "sees", expected=REFUSED, actual=deferred(response, error_of))
    if "error_code" in expect:
        wanted = matchers.for_version(expect["error_code"], version)
        if wanted is not matchers._MISSING:
            actual = (error_of or matchers.primary_error)(response)
            problem = matchers.match_value(actual, wanted, True, context.matchers)  # a name, a list, or {ne: NONE}
            if problem:
                message = response.get("error_message") if isinstance(response, dict) else None
                raise Departure(f"{name}: {problem}" + (f" ({message})" if message else ""),
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
            raise Departure(f"{name}: {problem}", expected={path: wanted}, actual={path: actual})


def element(response: dict, path: str, name: str, expect, version: int):
    """The part of a response a step reads; its absence is a departure that names the response's own error first."""
    try:
        return matchers.lookup(response, path)
    except matchers.PathError as error:
        raise Departure(f"{name}: {top_level_error(response)}{error}", expected=expect or "a response with " + path,
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
