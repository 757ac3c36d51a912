"""Every refusal has a positive control in its case: the lint's check.

A broker that answers UNKNOWN_SERVER_ERROR to every InitProducerId v3-5 "refuses" a wrong producer id too (Tansu
passed ``reinit-with-wrong-producer-id`` so, the right id refused as well). A step under test that expects
``refused: true`` is evidence only where the same request without the fault is shown accepted at the same version,
in the same case. The case shows it in one of three ways, each of which blocks the item where the broker departs:

- ``control: {fields: {...}}`` on the step: the harness sends the request with those fields first;
- ``malform`` on the step: its well-formed request is the control, without asking;
- another top-level step of the same API, sent at the version under test (no ``version``), that expects it
  served (``error_code: NONE``; a ``produce`` or ``fetch`` step expects that unless told otherwise): before the
  refusal it prepares the condition the refusal is judged on, and its departure blocks the item
  (``runner.policy.preparing_steps``): an EndTxn that commits before the abort it makes impossible; after it, it
  shows the same request served once the fault is removed (the guest granted the ACL it lacked).

Only ``send`` steps run a ``control`` (a ``produce`` or ``fetch`` step shows its control by another step).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .kinds import StepKind
from .walk import Visit, walk

MESSAGE = ("a refusal needs a positive control in its case: the same request without the fault accepted at the same "
           "version, so a broker that refuses every {api} does not pass. Give the step control: {{fields: {{...}}}} "
           "(the fields that remove the fault), or send the request accepted first (a {api} step without version, "
           "expecting error_code: NONE)")


def accepted(visit: Visit, api: str) -> bool:
    """Whether a step sends ``api`` at the version under test and expects it served (its kind's defaults count)."""
    return any(request.api == api and request.version is None and not request.expect.get("refused")
               and request.expect.get("error_code") in ("NONE", ["NONE"]) for request in visit.requests)


def runs_a_control(visit: Visit) -> bool:
    """A ``control:`` on a ``send`` step: the one kind that sends the request without the fault first (a ``produce``
    or ``fetch`` step shows its control by another step)."""
    return bool(visit.step.get("control")) and visit.kind is not None and visit.kind.keyword == "send"


def uncontrolled(steps: list, api: str | None, where: list,
                 kinds: Mapping[str, StepKind]) -> Iterator[tuple[list, str]]:
    """``(path, message)`` for each step under test expecting ``refused: true`` without a positive control."""
    visits = list(walk(steps, kinds))
    for visit in visits:
        for request in visit.requests:
            if request.version is not None or (api is not None and request.api != api):
                continue  # not the version under test, or not the API under test
            if request.expect.get("refused") is not True or visit.step.get("malform") or runs_a_control(visit):
                continue
            if any(accepted(other, request.api) for other in visits if other.top and other.where[0] != visit.where[0]):
                continue
            yield [*where, "steps", *visit.where, "expect", "refused"], MESSAGE.format(api=request.api)
