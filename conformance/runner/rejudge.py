"""Every recorded exchange judged again from its bytes: a verdict must follow from what the target sent, not only
from the ``outcome`` a results line states.

Two checks, with the harness's own code (its codec, the runner's matchers, the shipped suites):

- **the bytes**: each response a transcript records is decoded again from its ``response_bytes``; the decoded
  message must be the ``response`` the transcript shows (an error code edited in the JSON is named, with the
  exchange and the value the bytes hold);
- **the verdict**: the step whose response decided the item is judged again against its case's expectation for that
  API version. A failed item's deciding answer must depart from it (and be the ``actual`` its line states); a passed
  item's answers to the requests under test must meet it.

What cannot be judged offline is counted, not guessed: an item without a transcript (its verdict rests on the
signature alone), a step whose expected error names values of the run (``${...}``; the fields it expects are not judged
again), a step of another kind than ``send``, a step the runner sent again at
another version. The summary says how many items each check covered.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from types import SimpleNamespace
from typing import cast

from .. import resources
from ..client.transcript import jsonable
from ..protocol import frames
from ..protocol.codec import default_codec
from ..protocol.errors import error_name
from ..results.record import Outcome, ResultRecord, StepRole
from .context import Context, Departure
from .dispatch import kind_of, label
from .expect import check_expect
from ..suite import matchers
from ..suite.step import Step

REDACTED = base64.b64encode(b"<redacted>").decode()  # a SASL answer's bytes, never kept


@dataclass
class Rejudged:
    problems: list[str] = field(default_factory=list)
    exchanges: int = 0  # responses decoded again from their bytes
    judged: int = 0  # items whose verdict was judged again from the bytes
    without_transcript: int = 0  # items that carry no exchange

    def summary(self) -> str:
        return (f"judged again from the bytes: {self.exchanges} recorded responses decoded, {self.judged} verdicts; "
                f"{self.without_transcript} items carry no exchange (their verdict rests on the signature alone)")


def rejudge(records: list[ResultRecord]) -> Rejudged:
    found = Rejudged()
    for record in records:
        transcript = record.transcript if isinstance(record.transcript, list) else []
        if not transcript:
            found.without_transcript += 1
            continue
        decoded = {}
        for index, exchange in enumerate(transcript):
            response = _decoded(record, index, exchange, found)
            if response is not None:
                decoded[index] = response
        problem = _verdict(record, transcript, decoded)
        if problem is not None:
            found.judged += 1
            if problem:
                found.problems.append(problem)
    return found


# ------------------------------------------------------------------------------ the bytes
def _decoded(record: ResultRecord, index: int, exchange: dict, found: Rejudged) -> dict | None:
    """The response decoded from the exchange's bytes; names an exchange whose shown response is not that."""
    if not isinstance(exchange, dict) or not exchange.get("response_bytes") or exchange.get("response") is None \
            or exchange.get("response_bytes") == REDACTED:
        return None
    api_key, version = exchange.get("api_key"), exchange.get("version")
    if not isinstance(api_key, int) or not isinstance(version, int):
        return None  # a transcript of an older harness: no key or version to decode with
    where = f"{record.item_id}: exchange {index + 1} ({exchange.get('api')} v{exchange.get('version')}"
    where += f", step {exchange['step']!r})" if exchange.get("step") else ")"
    try:
        raw = base64.b64decode(exchange["response_bytes"], validate=True)
        size, payload = frames.SIZE.unpack_from(raw, 0)[0], raw[frames.SIZE.size:]
    except Exception as error:  # noqa: BLE001 - any unreadable value is the finding
        found.problems.append(f"forged transcript: {where}: response_bytes unreadable ({error})")
        return None
    if size != len(payload):
        found.problems.append(f"forged transcript: {where}: its frame says {size} bytes, it holds {len(payload)}")
        return None
    shown = exchange["response"]
    first = None
    for read_as in _versions(api_key, version):
        try:
            _, message, _ = frames.decode_response_with_tail(default_codec(), api_key, read_as, payload)
        except Exception:  # noqa: BLE001 - bytes another version reads; none at all is the finding below
            continue
        again = jsonable(message)
        if again == shown:
            found.exchanges += 1
            return message
        first = again if first is None else first
    if first is None:
        found.problems.append(f"forged transcript: {where}: its response_bytes do not decode as a response")
    else:
        path, theirs, ours = _difference(shown, first)
        found.problems.append(f"forged transcript: {where}: the response shows {path} = {theirs!r}; its bytes "
                              f"say {ours!r}")
    return None


def _versions(api_key: int, version: int) -> Iterator[int]:
    """The exchange's version first; then the API's others (a step may read the answer as another version)."""
    yield version
    try:
        others = default_codec().versions(api_key)
    except Exception:  # noqa: BLE001 - an API the specs do not know: its own version was all there was
        return
    yield from (other for other in range(others.low, (others.high or others.low) + 1) if other != version)


def _difference(shown, decoded, path: str = "response"):
    """The first place two decoded messages differ: its path and both values."""
    if isinstance(shown, dict) and isinstance(decoded, dict):
        for key in list(shown) + [key for key in decoded if key not in shown]:
            if shown.get(key) != decoded.get(key):
                return _difference(shown.get(key), decoded.get(key), f"{path}.{key}")
    if isinstance(shown, list) and isinstance(decoded, list) and len(shown) == len(decoded):
        for index, (one, other) in enumerate(zip(shown, decoded)):
            if one != other:
                return _difference(one, other, f"{path}[{index}]")
    return path, shown, decoded


# ------------------------------------------------------------------------------ the verdict
@lru_cache(maxsize=256)
def _suite(suite_id: str) -> dict:
    """The cases of a shipped suite by id (the bundle's suites are checked to be the shipped ones); {} when the
    harness ships no such suite file (a plugin's, or one run by a harness module, not a file)."""
    from ..suite.loader import load_suites

    path = resources.suites() / (suite_id.replace(".", "/", 1) + ".yaml")
    if not path.is_file():
        return {}
    suites, _ = load_suites([path], components=_components())
    return {case.id: case for suite in suites if suite.id == suite_id for case in suite.cases}


def _verdict(record: ResultRecord, transcript: list, decoded: dict) -> str | None:
    """'' when the item's verdict follows from its bytes, the contradiction when it does not, None when nothing
    could be judged offline."""
    case = _suite(str(record.suite)).get(record.case)
    version = record.api_version
    if case is None or version is None:
        return None
    kinds = dict(_components().step_kinds)
    if record.outcome in (Outcome.FAILED, Outcome.DIFFERS) and record.step_role in (StepRole.UNDER_TEST, None) \
            and record.step:
        return _failed(record, version, case, kinds, transcript, decoded)
    if record.outcome == Outcome.PASSED:
        return _passed(record, version, case, kinds, transcript, decoded)
    return None


@lru_cache(maxsize=1)
def _components():
    from ..runner.steps import bundled

    return bundled()


def _expectation(case, number: int, kinds: dict, version: int) -> tuple[str, dict, bool] | None:
    """The top-level step ``number`` of the case, as the runner names it, its expectation as far as it can be judged
    offline (the error, and the fields when they name no value of the run), and whether that is all of it. None for
    a step that is not a ``send``, expects no error, names values of the run in its error, or is judged by its
    effect."""
    if not 0 < number <= len(case.steps):
        return None
    step = Step.of(case.steps[number - 1], kinds)
    if step.kind != "send" or kind_of(step, kinds) is None:
        return None
    written = step.get("expect") or {}
    if not isinstance(written, dict) or written.get("refused") == "or_no_effect":
        return None
    expect = {key: value for key, value in written.items() if key in ("error_code", "refused")}
    if "error_code" in expect and matchers.for_version(expect["error_code"], version) is matchers._MISSING:
        del expect["error_code"]
    if not expect or "${" in repr(expect):
        return None
    whole = not written.get("fields") or "${" not in repr(written["fields"])
    if whole and written.get("fields"):
        expect["fields"] = written["fields"]
    return label(step, str(number), kinds), expect, whole and not (set(written) - {"error_code", "refused", "fields"})


def _last(name: str, transcript: list, decoded: dict) -> tuple[int, dict | None] | None:
    """The last exchange the step made (its answer decides), unless the runner sent it again elsewhere."""
    again = (f"{name} (at v", f"{name} (the same request at v")
    if any(str(exchange.get("step") or "").startswith(again) for exchange in transcript):
        return None  # sent again at another version (observe.served_elsewhere, version_down): not judged here
    made = [index for index, exchange in enumerate(transcript) if exchange.get("step") == name]
    if not made:
        return None
    return made[-1], decoded.get(made[-1])


def _meets(response: dict, expect: dict, version: int) -> bool:
    try:
        # check_expect reads only the matchers of the run's context: the bundled ones here
        check_expect(cast(Context, SimpleNamespace(matchers=dict(_components().matchers))), "", response, expect, version)
    except Departure:
        return False
    return True


def _failed(record: ResultRecord, version: int, case, kinds: dict, transcript: list, decoded: dict) -> str | None:
    found = _expectation(case, int(record.step or 0), kinds, version)
    if found is None:
        return None
    name, expect, whole = found
    last = _last(name, transcript, decoded)
    if last is None or last[1] is None:
        return None
    response = last[1]
    said = error_name(matchers.primary_error(response))
    if "error_code" in expect and isinstance(record.actual, str) and record.actual != said:
        return (f"verdict does not follow from the bytes: {record.item_id} states it got {record.actual} at step "
                f"{name!r}; the response's bytes answer {said}")
    if _meets(response, expect, version):
        if not whole:
            return None  # it departed in what cannot be judged offline (fields naming values of the run)
        return (f"verdict does not follow from the bytes: {record.item_id} is failed at step {name!r}, but the "
                f"response's bytes answer {said}, which meets the case's expectation "
                f"({_shown(expect, version)})")
    return ""


def _passed(record: ResultRecord, version: int, case, kinds: dict, transcript: list, decoded: dict) -> str | None:
    judged = None
    for number in range(1, len(case.steps) + 1):
        found = _expectation(case, number, kinds, version)
        if found is None or case.api is None or Step.of(case.steps[number - 1], kinds).get("send") != case.api:
            continue
        name, expect, _ = found
        last = _last(name, transcript, decoded)
        if last is None or last[1] is None or transcript[last[0]].get("version") != version:
            continue  # not answered, or sent at a version the step names itself: not the version under test
        judged = ""
        if not _meets(last[1], expect, version):
            said = error_name(matchers.primary_error(last[1]))
            return (f"verdict does not follow from the bytes: {record.item_id} is passed, but the response's bytes "
                    f"at step {name!r} answer {said}, which departs from the case's expectation "
                    f"({_shown(expect, version)})")
    return judged


def _shown(expect: dict, version: int) -> str:
    if expect.get("refused"):
        return "refused"
    wanted = matchers.for_version(expect.get("error_code"), version)
    return f"error_code {wanted}"
