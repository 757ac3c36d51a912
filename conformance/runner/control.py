"""Controls: a refusal or a malformation is only evidence once the same request without the fault is shown
to be served, at the same version.

A broker that answers UNKNOWN_SERVER_ERROR to every InitProducerId "refuses" a zero timeout too; a broker
whose Metadata returns every topic for an empty list departs with trailing bytes and without them. So before
a step under test that expects a refusal (``control: {fields: {...}}``: the fields that remove the fault)
or sends a malformed frame (``malform``: the control is the same request well formed), the harness sends
the control at the same version:

- the control must be served (no error), or, for a malformation the step expects answered, meet the step's
  own expectation; otherwise the item is blocked: the control departed, there is nothing to compare with;
- except that a malformation whose control departed is still judged on the difference: answered the way the
  well-formed request was, the malformation changed nothing (blocked, saying so); answered otherwise, it
  fails on what differs.
"""

from __future__ import annotations

from ..suite import expressions, matchers
from . import observe
from .context import Context, Departure
from .exchange import exchange, retrying
from .expect import check_expect

REFUSING = ("refused", "disconnect", "no_response")


# A header that names another API or version is not a malformation of this request: its fault is the key or
# version itself, and the harness's own ApiVersions exchange already showed the target serves requests.
HEADER_FAULTS = ("api_key", "api_version", "request_api_key", "request_api_version")


def needs_control(context: Context, step: dict, api: str, version: int) -> bool:
    """A step under test that names a control, or sends a malformed frame of its own API and version."""
    if not context.under_test(api, version):
        return False
    if step.get("control"):
        return True
    malform = step.get("malform") or {}
    return bool(malform) and not any(key in (malform.get("header") or {}) for key in HEADER_FAULTS)


def expects_refusal(expect: dict, version: int) -> bool:
    if any(expect.get(key) for key in REFUSING):
        return True
    wanted = matchers.for_version(expect.get("error_code", "NONE"), version)
    return wanted not in ("NONE", ["NONE"], matchers._MISSING)


def control_expect(step: dict, expect: dict, version: int) -> dict:
    """What the control must meet: its own ``expect``, else the step's for a malformation the step expects
    answered, else to be served (error code NONE)."""
    own = (step.get("control") or {}).get("expect")
    if own:
        return own
    if step.get("malform") and not expects_refusal(expect, version):
        return expect
    return {"error_code": "NONE"}


def run_control(context: Context, step: dict, name: str, api: str, version: int, fields: dict) -> dict | None:
    """Sends the control; returns None when it met its expectation, else the control's answer, having raised
    for a refusal whose control departed (the item is blocked). The caller judges a malformation's difference."""
    overrides = expressions.resolve((step.get("control") or {}).get("fields") or {},
                                    {**context.variables, "version": version})
    control_fields = {**fields, **overrides}
    control_step = {key: value for key, value in step.items()
                    if key not in ("malform", "expect", "connection", "control", "save", "response_version")}
    label = f"{name} (control: the same request {'well formed' if step.get('malform') else 'without the fault'})"
    expect = expressions.resolve(step.get("expect") or {}, context.variables)
    wanted = control_expect(step, expect, version)
    control_step["expect"] = wanted
    response = None
    try:
        response = retrying(context, control_step, lambda: exchange(context, control_step, label, api, version,
                                                                   control_fields))
        try:
            check_expect(context, label, response or {}, wanted, version)
        except Departure as deviation:  # served by another version: this one is broken (the root cause is named)
            observe.served_elsewhere(context, control_step, label, api, version, control_fields, response, wanted,
                                     deviation)
        return None
    except Departure as deviation:
        if step.get("malform") and not expects_refusal(expect, version) and deviation.actual != "connection closed":
            return {"deviation": deviation, "response": response}
        raise blocked(deviation, api, version) from None


def blocked(deviation: Departure, api: str, version: int) -> Departure:
    deviation.args = (f"{deviation.args[0]}: the control departed, so the fault's answer shows nothing about "
                      f"{api} v{version}",)
    deviation.control = True  # the control goes before the step under test: its departure blocks, as set-up's does
    return deviation


def judge_difference(context: Context, name: str, api: str, version: int, expect: dict, control: dict,
                     response: dict | None) -> None:
    """A malformation whose well-formed control already departed: judged only on what it changed."""
    departure, served = control["deviation"], control["response"] or {}
    fields = matchers.for_version(expect.get("fields") or {}, version)
    paths = [] if fields is matchers._MISSING else list(fields)
    differ = []
    for path in paths:
        values = []
        for answer in (served, response or {}):
            try:
                values.append(matchers.lookup(answer, path))
            except matchers.PathError:
                values.append("(absent)")
        if values[0] != values[1]:
            differ.append(f"{path}: {values[0]!r} well formed, {values[1]!r} malformed")
    if response is None or differ:
        raise Departure(f"{name}: the malformation changed the answer ({'; '.join(differ) or 'no answer'}), "
                        f"where the well-formed request was answered: {departure}",
                        expected={path: "as the well-formed request" for path in paths}, actual=differ or "no answer")
    raise blocked(Departure(f"{name}: the well-formed request already departs ({departure}); the malformed one "
                            "was answered the same, so the malformation changed nothing",
                            expected=departure.expected, actual=departure.actual), api, version)
