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

from .citations import _under_test_steps

SENT_BY = {"produce": "Produce", "fetch": "Fetch"}  # step kinds that send an API without naming it

MESSAGE = ("a refusal needs a positive control in its case: the same request without the fault accepted at the same "
           "version, so a broker that refuses every {api} does not pass. Give the step control: {{fields: {{...}}}} "
           "(the fields that remove the fault), or send the request accepted first (a {api} step without version, "
           "expecting error_code: NONE)")


def sent(step: Mapping) -> str | None:
    """The API a step itself sends."""
    return step.get("send") or next((api for key, api in SENT_BY.items() if key in step), None)


def accepted(step, api: str) -> bool:
    """Whether a top-level step sends ``api`` at the version under test and expects it served."""
    if not isinstance(step, Mapping) or sent(step) != api or "version" in step:
        return False
    expect = step.get("expect") or {}
    served = "NONE" if "send" not in step else None  # produce and fetch steps expect NONE unless told otherwise
    return expect.get("error_code", served) in ("NONE", ["NONE"]) and not expect.get("refused")


def uncontrolled(steps: list, api: str | None, where: list) -> Iterator[tuple[list, str]]:
    """``(path, message)`` for each step under test expecting ``refused: true`` without a positive control."""
    for path, step in _under_test_steps(steps, api, [*where, "steps"]):
        if (step.get("expect") or {}).get("refused") is not True or step.get("malform"):
            continue
        if step.get("control") and "send" in step:
            continue
        top = path[len(where) + 1]  # the top-level step that holds it
        refused_api = sent(step)
        if refused_api and any(accepted(other, refused_api) for index, other in enumerate(steps) if index != top):
            continue
        yield [*path, "expect", "refused"], MESSAGE.format(api=refused_api or "request")
