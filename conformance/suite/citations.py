"""A code or a refusal no sentence demands is not a MUST (issue 35).

A MUST that expects an exact error code of the step under test holds a broker to that code, so the KIP
sentence in ``cites`` must tie the code to the condition: the lint looks for the code's name in the citation,
in any of the spellings KIPs use (``INVALID_TXN_STATE``, ``InvalidTxnState``, ``InvalidTxnStateException``).
A MUST that expects a refusal (``refused: true``) must cite a sentence that demands one: the citation names an
error, or says the request is refused, rejected, fails or is invalid. Otherwise the refusal is SHOULD and
Kafka's code an IMPLEMENTATION twin (``<id>-kafka-answer``). It is a mechanical check of the citation, not a
reading of the KIP: a citation that names the code for another condition passes it, which a reviewer catches.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..protocol.errors import UnknownErrorName, error_code
from .when import When

# Words with which a cited sentence demands a refusal: an error, a rejection, a fence, an authorization (what is
# not authorized is refused), an abort (what was aborted cannot be committed), a rule (must, only, need).
REFUSAL_WORDS = re.compile(r"\b(refus|reject|fail|invalid|error|not allowed|must|cannot|exception|fence|authori[sz]|"
                           r"abort|only|need)", re.IGNORECASE)


# How KIP texts name codes that Kafka's error table names otherwise (KIP-98 wrote PID for producer id and
# ProducerFenced for the code later versions call INVALID_PRODUCER_EPOCH; KIP-609 names Java exceptions).
ALIASES = {
    "INVALID_PRODUCER_ID_MAPPING": ("InvalidPidMapping",),
    "INVALID_PRODUCER_EPOCH": ("ProducerFenced",),
    "OUT_OF_ORDER_SEQUENCE_NUMBER": ("out-of-sequence", "OutOfOrderSequence"),
    "DUPLICATE_SEQUENCE_NUMBER": ("duplicate error", "DuplicateSequence"),
    "NOT_LEADER_OR_FOLLOWER": ("NotLeaderForPartition",),
}
AUTHORIZATION = ("AuthorizationException", "not authorized")


def names(cites: str, code: str) -> bool:
    """Whether the citation names the error code in one of its spellings: ``INVALID_TXN_STATE``,
    ``InvalidTxnState`` (with or without ``Exception``), or a name a KIP text uses for it (:data:`ALIASES`)."""
    text = cites.lower()
    joined = re.sub(r"[^a-z0-9]", "", text)
    spelt = [code, *ALIASES.get(code, ()), *(AUTHORIZATION if code.endswith("_AUTHORIZATION_FAILED") else ())]
    return any(name.lower() in text or re.sub(r"[^a-z0-9]", "", name.lower()) in joined for name in spelt)


def codes_expected(error_code) -> list[list[str]]:
    """The alternatives each expectation accepts: a name, a list (any of), a version map of either."""
    values = error_code.values() if isinstance(error_code, dict) and not _matcher(error_code) else [error_code]
    found = []
    for value in values:
        choices = value if isinstance(value, list) else [value]
        named = [choice for choice in choices if isinstance(choice, str) and choice != "NONE" and known(choice)]
        if named and len(named) == len(choices):
            found.append(named)
    return found


def known(name: str) -> bool:
    """An error name Kafka's table has (a misspelt one is reported by the error-name check instead)."""
    try:
        error_code(name)
        return True
    except UnknownErrorName:
        return False


def _matcher(value: dict) -> bool:
    return any(key in value for key in ("ne", "any_of", "eq"))


def unquoted(case: dict, steps, api: str | None, where: list) -> Iterator[tuple[list, str]]:
    """``(path, message)`` for each expectation of the step under test that a MUST holds without a citation
    that ties it to the condition."""
    cites = str(case.get("cites", ""))
    for path, step in _under_test_steps(steps, api, [*where, "steps"]):
        expect = step.get("expect") or {}
        if expect.get("refused") is True and not REFUSAL_WORDS.search(cites):
            yield [*path, "expect", "refused"], ("a MUST refusal needs a cited sentence that demands a refusal "
                                                 "(an error, refused, rejected, invalid): quote it in cites, or "
                                                 "make the case SHOULD")
        if "kafka_code" in expect:
            continue  # a refusal with Kafka's code in its generated IMPLEMENTATION twin (twins below)
        for choices in codes_expected(expect.get("error_code")):
            if not any(names(cites, code) for code in choices):
                yield [*path, "expect", "error_code"], (
                    f"a MUST that requires {' or '.join(choices)} must quote the KIP sentence tying it to this "
                    "condition in cites; where the KIP only demands a refusal, expect {refused: true, kafka_code: "
                    "<Kafka's code>} (the loader makes the IMPLEMENTATION twin <id>-kafka-answer from it) and, where "
                    "the request could change something, verify it did not")


def _under_test_steps(steps, api: str | None, where: list):
    for index, step in enumerate(steps or []):
        if not isinstance(step, dict):
            continue
        sent = step.get("send") or ("Produce" if "produce" in step else "Fetch" if "fetch" in step else None)
        if sent is not None and (api is None or sent == api) and "version" not in step:
            yield [*where, index], step
        for key in ("until",):
            nested = step.get(key)
            if isinstance(nested, dict) and isinstance(nested.get("step"), dict):
                yield from _under_test_steps([nested["step"]], api, [*where, index, key, "step"])


def twin(steps) -> list | None:
    """The steps of the IMPLEMENTATION twin of a case whose steps expect ``{refused: true, kafka_code: X}``:
    the same steps expecting Kafka's code X; None when no step names one."""
    found = False

    def rewrite(value):
        nonlocal found
        if isinstance(value, When):  # conditions, parsed at load: nothing in them to rewrite
            return value
        if isinstance(value, dict):
            out = {key: rewrite(item) for key, item in value.items()}
            expect = out.get("expect")
            if isinstance(expect, dict) and "kafka_code" in expect:
                found = True
                out["expect"] = {**{key: item for key, item in expect.items() if key not in ("kafka_code", "refused")},
                                 "error_code": expect["kafka_code"]}
            return out
        if isinstance(value, list):
            return [rewrite(item) for item in value]
        return value

    rewritten = rewrite(steps)
    return rewritten if found else None
