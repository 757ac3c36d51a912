"""A code or a refusal no sentence demands is not a MUST.

A MUST that expects an exact error code of the step under test holds a broker to that code, so the KIP
sentence in ``cites`` must tie the code to the condition: the lint looks for the code's name in the citation,
in any of the spellings KIPs use (``INVALID_TXN_STATE``, ``InvalidTxnState``, ``InvalidTxnStateException``).
A MUST that expects a refusal (``refused: true``) must cite a sentence that demands one: the citation names an
error, or says the request is refused, rejected, fails or is invalid. Otherwise the refusal is SHOULD and
Kafka's code an IMPLEMENTATION twin (``<id>-kafka-answer``). It is a mechanical check of the citation, not a
reading of the KIP: a citation that names the code for another condition passes it, which a reviewer catches.

Checks against facts about the KIP texts (:mod:`kip_facts`, :mod:`quotes`) close the gaps the audits of independent brokers found:

- a MUST that quotes a KIP whose text the project has quotes it: what follows the source's colon is in that text
  (``add-partitions-unknown-topic`` quoted a sentence KIP-98 does not have; 52 MUSTs of fields, records and markers
  paraphrased KIP-98, among them its ListOffsets and last stable offset, which its text leaves to the design document);
- an exact code is tied by a sentence, not only listed among a response's codes: KIP-98 lists InvalidPidMapping
  and ties it to no condition, so a MUST of INVALID_PRODUCER_ID_MAPPING citing it is a refusal with Kafka's code
  in its twin; the ties a KIP's text does make are :data:`kip_facts.CONDITIONED`;

- an exact code (of ``error_code`` or of a response field ``...error_code``) must be one the cited KIP's text
  names at all: a citation of KIP-98 for UNKNOWN_TOPIC_OR_PARTITION, which KIP-98 never names, is refused;
- an error a KIP ties to one condition (KIP-98: InvalidTransactionTimeout for a timeout above the maximum) is
  cited for that condition only: a MUST refusal citing it must quote the condition;
- codes that differ by request version are a version rule, which a KIP older than those versions cannot hold:
  the citation must name the version (the KIP or spec that made the rule), or the MUST accepts the codes the
  cited text names at every version and Kafka's per-version code goes to ``kafka_code``;
- a MUST refusal by behaviour a broker setting turns off (KIP-890's partition verification) holds only where
  the broker reports the setting on: the case ``requires`` it.

Each is conservative: a citation of a KIP whose text the project lacks is not judged by the first two.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from ..protocol.errors import UnknownErrorName, error_code
from ..protocol.schema import VersionRange
from . import quotes
from .kip_facts import CONDITIONED, ERRORS_NAMED, SWITCHES
from .versioned import is_version_map
from .walk import walk
from .when import When

# Words with which a cited sentence demands a refusal: an error, a rejection, a fence, an authorization (what is
# not authorized is refused), an abort (what was aborted cannot be committed), a rule (must, only, need), a
# prevention (what is to be prevented from being written is refused).
REFUSAL_WORDS = re.compile(r"\b(refus|reject|fail|invalid|error|not allowed|must|cannot|exception|fenc|authori[sz]|"
                           r"abort|only|need|prevent)", re.IGNORECASE)


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


def names(cites: str, code: str, generic: bool = True) -> bool:
    """Whether the citation names the error code in one of its spellings: ``INVALID_TXN_STATE``,
    ``InvalidTxnState`` (with or without ``Exception``), or a name a KIP text uses for it (:data:`ALIASES`; with
    ``generic``, also a name that stands for several codes, ``AuthorizationException``)."""
    text = cites.lower()
    joined = re.sub(r"[^a-z0-9]", "", text)
    spelt = [code, *ALIASES.get(code, ()),
             *(AUTHORIZATION if generic and code.endswith("_AUTHORIZATION_FAILED") else ())]
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


def unquoted(case: dict, steps, api: str | None, where: list, kinds: Mapping) -> Iterator[tuple[list, str]]:
    """``(path, message)`` for each expectation of the step under test that a MUST holds without a citation
    that ties it to the condition."""
    cites = str(case.get("cites", ""))
    quoted_checked = False
    for path, step in _under_test_steps(steps, api, [*where, "steps"], kinds):
        expect = step.get("expect") or {}
        refusal = "refused" if expect.get("refused") is True else "error_code" if _any_error(expect.get("error_code")) else None
        if refusal and not REFUSAL_WORDS.search(cites):
            yield [*path, "expect", refusal], ("a MUST refusal needs a cited sentence that demands a refusal "
                                                 "(an error, refused, rejected, invalid): quote it in cites, or "
                                                 "make the case SHOULD")
        yield from _conditioned(cites, expect, path)
        yield from _split_by_version(cites, expect.get("error_code"), [*path, "expect", "error_code"])
        for at, value in _codes_of(expect):
            for choices in codes_expected(value):
                missing = _not_in_cited_text(cites, choices)
                if missing:
                    yield [*path, *at], missing
        for at, value in _codes_of(expect):
            for choices in codes_expected(value):
                if not _not_in_cited_text(cites, choices) and any(names(cites, code) for code in choices) \
                        and not any(_tied(cites, code) for code in choices):
                    yield [*path, *at], _untied_message(cites, choices)
        if not quoted_checked and (refusal or _demands_code(expect)):
            quoted_checked = True
            yield from _misquoted(cites, where)
        if "kafka_code" in expect and "error_code" not in expect:
            continue  # a refusal with Kafka's code in its generated IMPLEMENTATION twin (twins below)
        for choices in codes_expected(expect.get("error_code")):
            if not any(names(cites, code) for code in choices):
                yield [*path, "expect", "error_code"], (
                    f"a MUST that requires {' or '.join(choices)} must quote the KIP sentence tying it to this "
                    "condition in cites; where the KIP only demands a refusal, expect {refused: true, kafka_code: "
                    "<Kafka's code>} (the loader makes the IMPLEMENTATION twin <id>-kafka-answer from it) and, where "
                    "the request could change something, verify it did not")

    if not quoted_checked:  # a MUST of anything else quotes its KIP too: a paraphrase is no sentence of it
        yield from _misquoted(cites, where)


def sources(cites: str) -> Iterator[tuple[str | None, str]]:
    """``(KIP or None, quoted text)`` of each source of a citation (split by ``;``): ``KIP-98, EndTxnResponse:
    text`` is KIP-98's, its quote what follows the first colon; a source naming no KIP first is ``(None, all)``."""
    for part in cites.split(";"):
        part = part.strip()
        kip = re.match(r"(KIP-\d+)\b[^:]*:(.*)", part, re.DOTALL)
        if kip is not None:
            yield kip.group(1), kip.group(2).strip()
        elif part:
            yield None, part


def _tied(cites: str, code: str) -> bool:
    """Whether a source of the citation ties ``code`` to a condition: a KIP whose text the project has ties it
    only where a sentence of that text does (:data:`CONDITIONED`; a code its text only lists among a response's
    codes is not tied), a source whose text the project lacks (another KIP, a message spec, the protocol guide)
    is taken at its word when it names the code."""
    for kip, quote in sources(cites):
        if not names(quote, code):
            continue
        if kip is None or kip not in ERRORS_NAMED or (kip, code) in CONDITIONED:
            return True
    return False


def _untied_message(cites: str, choices: list[str]) -> str:
    kips = ", ".join(kip for kip in cited_kips(cites) if kip in ERRORS_NAMED)
    return (f"{kips} names {' or '.join(choices)} only among a response's codes: no sentence of its text ties the code "
            "to this condition, so the MUST is the refusal: expect {refused: true, kafka_code: <Kafka's code>} (the "
            "loader makes the IMPLEMENTATION twin), or quote the sentence that ties it (kip_facts.CONDITIONED)")


def _misquoted(cites: str, where: list) -> Iterator[tuple[list, str]]:
    """A MUST quotes its KIP: each quote of a KIP whose text the project has must be in it."""
    for kip, quote in sources(cites):
        if kip is None:
            continue
        absent = quotes.missing(kip, quote)
        if absent is not None:
            yield [*where, "cites"], (
                f"{absent!r} is not in the text of {kip}: a MUST quotes the sentence that "
                "demands it as the KIP has it (gaps as ..., case, quote marks and line breaks do not count); where "
                "no sentence of the KIP demands it, make the case SHOULD, or the MUST the refusal the text demands")


def _demands_code(expect: dict) -> bool:
    """Whether the expectation holds the broker to an error (an exact code, or any error) in ``error_code`` or a
    response field; one that also accepts NONE (``[NONE, INVALID_REQUEST]``) does not."""
    return any(codes_expected(value) or _any_error(value) for _, value in _codes_of(expect))


def _any_error(error_code) -> bool:
    """``{ne: NONE}``, alone or on some versions: a refusal with any code, as ``refused: true`` is."""
    values = error_code.values() if isinstance(error_code, dict) and not _matcher(error_code) else [error_code]
    return any(isinstance(value, dict) and value.get("ne") in ("NONE", ["NONE"]) for value in values)


def cited_kips(cites: str) -> list[str]:
    """The KIPs a citation names (``KIP-98``), in order, once each."""
    return list(dict.fromkeys(f"KIP-{number}" for number in re.findall(r"\bKIP-(\d+)\b", cites)))


def _codes_of(expect: dict) -> Iterator[tuple[list, object]]:
    """``(path within the step, value)`` of each error code an expectation holds a broker to: ``error_code``
    and response fields whose last name is an error code (``...partition_error_code``), also where the fields are
    given per request version (``{"2-7": {error_code: ...}, "8+": {"groups[0].error_code": ...}}``)."""
    yield ["expect", "error_code"], expect.get("error_code")
    fields = expect.get("fields")
    if isinstance(fields, dict):
        for name, value in fields.items():
            if isinstance(value, dict) and re.fullmatch(r"\d+(-\d*)?\+?", str(name)):  # fields by request version
                for inner, code in value.items():
                    if str(inner).rsplit(".", 1)[-1].endswith("error_code"):
                        yield ["expect", "fields", name, inner], code
            elif str(name).rsplit(".", 1)[-1].endswith("error_code"):
                yield ["expect", "fields", name], value


def _not_in_cited_text(cites: str, choices: list[str]) -> str | None:
    """Why a MUST of one of ``choices`` cites only texts that name none of them; None when one does.

    A citation is one or more sources split by ``;``. A source that starts with a KIP the project has the text
    of holds the code if that text names it; one of a KIP without a text here, or a citation with no KIP at all,
    is not judged; another source (Kafka's error table, the protocol guide) holds it if its quote names it."""
    sources = [part.strip() for part in cites.split(";") if part.strip()]
    if not cited_kips(cites):
        return None
    for source in sources:
        kip = re.match(r"KIP-(\d+)\b", source)
        if kip is None:
            if any(names(source, code) for code in choices):
                return None
        elif f"KIP-{kip.group(1)}" not in ERRORS_NAMED or set(choices) & ERRORS_NAMED[f"KIP-{kip.group(1)}"]:
            return None
    kips = ", ".join(cited_kips(cites))
    return (f"{' or '.join(choices)} is named nowhere in the text of {kips}, which this case cites: cite the text "
            "that ties the code to the condition (the KIP that names it, or Kafka's error table quoting the code's "
            "meaning), or, where no text demands the refusal, make it SHOULD with Kafka's code as an IMPLEMENTATION "
            "case")


def _conditioned(cites: str, expect: dict, path: list) -> Iterator[tuple[list, str]]:
    """A MUST refusal or code that cites an error its KIP ties to one condition, without quoting that condition.
    Of codes a MUST accepts as alternatives, one whose condition is quoted is enough; a generic name that stands
    for several codes (KIP-609's AuthorizationException) counts only for the codes the MUST demands."""
    alternatives = [choices for _, value in _codes_of(expect) for choices in codes_expected(value)]
    demanded = {code for choices in alternatives for code in choices}
    refuses = expect.get("refused") is True or bool(demanded)
    satisfied = {code for code in demanded for (kip, tied), condition in CONDITIONED.items()
                 if tied == code and kip in cited_kips(cites) and re.search(condition, cites, re.IGNORECASE)}
    for (kip, code), condition in CONDITIONED.items():
        if kip not in cited_kips(cites) or not refuses or re.search(condition, cites, re.IGNORECASE):
            continue
        if any(code in choices and set(choices) & satisfied for choices in alternatives):
            continue
        if code in demanded or (not demanded and names(cites, code, generic=False)):
            at = "refused" if expect.get("refused") is True else "error_code"
            yield [*path, "expect", at], (
                f"{kip} ties {code} to one condition ({condition.replace(chr(92), '')}) only: quote that condition in "
                "cites if it is this case's; otherwise no sentence demands the refusal, and the case is SHOULD (with "
                "Kafka's code as an IMPLEMENTATION case)")


VERSIONED = re.compile(r"\bv\d+|\bversions? \d+", re.IGNORECASE)  # a citation that names a request version


def _split_by_version(cites: str, error_code, at: list) -> Iterator[tuple[list, str]]:
    """Exact codes that differ from one request version to another: that is a rule about versions, held by the
    text that made it (a later KIP, a message spec), so the citation must name a version."""
    if not isinstance(error_code, dict) or _matcher(error_code) or len(error_code) < 2:
        return
    branches = [codes_expected(value) for value in error_code.values()]
    if not all(branches):
        return  # NONE or a matcher on some versions: not a choice between codes
    if len({frozenset(code for choices in branch for code in choices) for branch in branches}) > 1 \
            and not VERSIONED.search(cites):
        yield at, ("the codes this MUST requires differ between request versions, a rule the cited sentence does not "
                   "hold: cite the text that ties each code to its versions (name the version), or require at every "
                   "version the codes the cited text names and put Kafka's per-version code in kafka_code (its "
                   "IMPLEMENTATION twin)")


def switched_off(case: dict, steps, api: str | None, where: list, kinds: Mapping) -> Iterator[tuple[list, str]]:
    """``(path, message)`` where a MUST demands a refusal by behaviour a broker setting turns off (:data:`SWITCHES`)
    without requiring the broker to report that setting on. ``refused: or_no_effect`` counts too: a broker with the
    behaviour off writes what the behaviour would have refused (no-hanging-transaction-after-refusal)."""
    cites = str(case.get("cites", ""))
    requires = case.get("requires")
    config: dict = {}
    if isinstance(requires, dict):
        for key in ("config", "switch"):
            if isinstance(requires.get(key), dict):
                config.update(requires[key])
    for kip, words, apis, setting in SWITCHES:
        if kip not in cited_kips(cites) or not re.search(words, cites, re.IGNORECASE) or api not in apis \
                or setting in config:
            continue
        if any(_demands_refusal(step.get("expect") or {}) for _, step in _under_test_steps(steps, api, where, kinds)):
            yield [*where, "requires"], (
                f"a MUST refusal by {kip}'s behaviour that Apache Kafka's {setting} turns off holds only on a broker "
                f"that does not report it off: add requires: {{switch: {{{setting}: true}}}} (skipped where the target "
                "reports it off), or make the case SHOULD or IMPLEMENTATION")


def _demands_refusal(expect: dict) -> bool:
    if expect.get("refused") in (True, "or_no_effect"):  # no effect is what the switched-off behaviour gives up too
        return True
    code = expect.get("error_code")
    values = code.values() if isinstance(code, dict) and not _matcher(code) else [code]
    return any(value not in (None, "NONE", ["NONE"]) for value in values)


def _under_test_steps(steps, api: str | None, where: list, kinds: Mapping):
    """``(path, step)`` for each step, nested ones included, that sends ``api`` (any API, for None) at the version
    under test."""
    for visit in walk(steps, kinds):
        if any((api is None or request.api == api) and request.version is None for request in visit.requests):
            yield [*where, *visit.where], visit.step


TWIN_KEYS = ("kafka_code", "kafka_fields")  # what Kafka answers, beside what the cited text demands


def twin(steps) -> list | None:
    """The steps of the IMPLEMENTATION twin of a case whose steps expect ``{refused: true, kafka_code: X}``:
    the same steps expecting Kafka's code X; None when no step names one. Where the refusal is judged in a field
    of the answer (``fields: {PATH: {ne: NONE}}``, a partition's code), ``kafka_fields: {PATH: X}`` gives
    Kafka's value there (by request version too, as ``fields`` is), which the twin expects instead."""
    found = False

    def rewrite(value):
        nonlocal found
        if isinstance(value, When):  # conditions, parsed at load: nothing in them to rewrite
            return value
        if isinstance(value, dict):
            out = {key: rewrite(item) for key, item in value.items()}
            expect = out.get("expect")
            if isinstance(expect, dict) and any(key in expect for key in TWIN_KEYS):
                found = True
                kafka = {key: item for key, item in expect.items() if key not in (*TWIN_KEYS, "refused")}
                if "kafka_code" in expect:
                    kafka["error_code"] = expect["kafka_code"]
                if "kafka_fields" in expect:
                    kafka["fields"] = _with_kafka_fields(kafka.get("fields") or {}, expect["kafka_fields"])
                out["expect"] = kafka
            return out
        if isinstance(value, list):
            return [rewrite(item) for item in value]
        return value

    rewritten = rewrite(steps)
    return rewritten if found else None


def _with_kafka_fields(fields: dict, kafka: dict) -> dict:
    """``fields`` with Kafka's values in place of the matchers at the same paths, also where both are given by
    request version (``{"7": {...}, "8+": {...}}``)."""
    if is_version_map(fields) and is_version_map(kafka):
        return {**fields, **{versions: {**(fields.get(versions) or {}), **wanted} for versions, wanted in kafka.items()}}
    return {**fields, **kafka}


def twin_versions(steps, versions: VersionRange) -> VersionRange:
    """The versions of a case's Kafka-answer twin: the case's, narrowed to those its steps that carry Kafka's code
    run at, where every one of them runs only at some (``when: {versions: ...}``): at the others the twin would be
    the MUST again."""
    ranges = []
    for step in steps:
        expect = step.get("expect") if isinstance(step, Mapping) else None
        if not isinstance(expect, Mapping) or not any(key in expect for key in TWIN_KEYS):
            continue
        when = step.get("when")
        if not isinstance(when, When) or when.versions is None:
            return versions
        ranges.append(when.versions)
    if not ranges or versions.empty:
        return versions
    low = max(versions.low, min(found.low for found in ranges))
    highs = [found.high for found in ranges]
    high = None if None in highs else max(highs)  # type: ignore[type-var]
    if versions.high is not None:
        high = versions.high if high is None else min(high, versions.high)
    return VersionRange(low, high)
