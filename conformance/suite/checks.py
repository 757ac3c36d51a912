"""What a JSON Schema cannot check in a suite's (expanded) steps: API, field, error and matcher names,
version ranges, ``${...}`` expressions, and each step kind's own check (:attr:`StepKind.check`).

Every problem goes to ``report(where, message)``; nothing here stops at the first one. A step that came
from a template says so in its messages, unless the key at fault is one the suite's ``use:`` step gave.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from functools import lru_cache

from .. import resources
from ..protocol.errors import error_by_name
from ..protocol.exceptions import SpecError
from ..protocol.schema import FieldSpec, MessageSpec, VersionRange
from ..proxy.rules import CONTROL
from . import expressions, retries
from .components import Components
from .kinds import Facts
from .versioned import is_version_map
from .walk import walk
from .when import WhenError, parse as parse_when

SCHEMA_PATH = resources.suite_schema()
SEND_EXPECT_KEYS = ("error_code", "fields", "disconnect", "no_response", "refused", "kafka_code",
                    "kafka_fields")  # fetch steps may also check their summary


@lru_cache(maxsize=1)
def schema_validator():
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


@lru_cache(maxsize=1)
def step_validator():
    """The schema of one step, for the steps templates add (template files are not checked by the schema)."""
    import jsonschema

    schema = schema_validator().schema
    return jsonschema.Draft202012Validator({"$schema": schema["$schema"], "$defs": schema["$defs"],
                                            "$ref": "#/$defs/step"})


def report_schema_errors(validator, instance, report, base: list) -> None:
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        where = [*base, *error.absolute_path]
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            for key in error.instance:
                if key not in allowed:
                    report([*where, key], f"unknown key (allowed: {', '.join(sorted(allowed))})")
            continue
        report(where, error.message)


def check_versions(value, report, where) -> VersionRange | None:
    try:
        return VersionRange.parse(value, where="")
    except SpecError:
        report(where, f"bad version range {value!r} (use N, N+, N-M or none)")
        return None


def _check_error_names(value, report, where) -> None:
    if is_version_map(value):
        for key, item in value.items():
            _check_error_names(item, report, [*where, key])
        return
    if isinstance(value, dict):  # matchers: {ne: NONE}, {any_of: [...]}
        for operator, argument in value.items():
            _check_error_names(argument, report, [*where, operator])
        return
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, int) or (isinstance(item, str) and item.startswith("${")):
            continue
        try:
            error_by_name(str(item))
        except KeyError as error:
            report(where, str(error.args[0] if error.args else error))


def known_matchers(components: Components) -> set[str]:
    from .matchers import BUILTIN_MATCHERS

    return {*BUILTIN_MATCHERS, *components.matchers}


def _did_you_mean(name, choices) -> str:
    close = difflib.get_close_matches(str(name), sorted(map(str, choices)), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def check_matchers(expected, known: set[str], report, where) -> None:
    """``{matcher: argument}`` values (or per-version maps of them) name known matchers only."""
    if not isinstance(expected, dict):
        return
    if is_version_map(expected):
        for key, item in expected.items():
            check_matchers(item, known, report, [*where, key])
        return
    for name in expected:
        if name not in known:
            report([*where, name], f"unknown matcher {name!r}{_did_you_mean(name, known)} "
                                   f"(known: {', '.join(sorted(known))})")


def _check_expect_fields(fields, known: set[str], report, where) -> None:
    if is_version_map(fields):  # {"0-3": {path: matcher}, "4+": {...}}
        for key, item in fields.items():
            if isinstance(item, dict):
                _check_expect_fields(item, known, report, [*where, key])
        return
    for path, expected in fields.items():
        check_matchers(expected, known, report, [*where, path])


def _span(versions: list[int]) -> str:
    return f"v{versions[0]}" if len(versions) == 1 else f"v{versions[0]}-v{versions[-1]}"


def check_request_fields(values: dict, fields: list[FieldSpec], spec: MessageSpec, versions: list[int],
                          report, where) -> None:
    """Every name in ``values`` is a field of ``spec`` in at least one of ``versions``, nested structs too.

    The codec ignores names it does not know, so a misspelt field would be sent with its default."""
    for name, value in values.items():
        at = [*where, name]
        named = [field for field in fields if field.attribute == name]
        present = [field for field in named if any(version in field.versions for version in versions)]
        if not present:
            if named:
                report(at, f"{spec.name} has {name} only in versions "
                           f"{', '.join(str(field.versions) for field in named)}, not in {_span(versions)} "
                           "that this step sends")
            else:
                report(at, f"unknown field of {spec.name}{_did_you_mean(name, {f.attribute for f in fields})}")
            continue
        field = present[0]
        if not field.is_struct:
            continue
        children = field.fields if field.fields is not None else spec.struct(field.element_type, name).fields
        inner_versions = [version for version in versions if version in field.versions]
        items = enumerate(value) if field.is_array and isinstance(value, list) else [(None, value)]
        for item_index, item in items:
            # {hex: ...} and {raw_hex: ...} stand for the encoded value itself, not for a struct
            if isinstance(item, dict) and set(item) not in ({"hex"}, {"raw_hex"}):
                check_request_fields(item, children, spec, inner_versions, report,
                                      at if item_index is None else [*at, item_index])


def refuse_fetch_only_expect(step: dict, report, where: list) -> None:
    """A request's ``expect`` (send, produce) names what a response has: what only a fetch's summary has is
    refused here, since the schema knows one ``expect`` for all steps."""
    expect = step.get("expect") or {}
    if not isinstance(expect, dict):
        return
    fetch_only = set(schema_validator().schema["$defs"]["expect"]["properties"]) - set(SEND_EXPECT_KEYS)
    for key in expect:
        if key in fetch_only:
            report([*where, "expect", key], f"unknown key for a send or produce step (its expect takes: "
                                            f"{', '.join(SEND_EXPECT_KEYS)}; {key} is for fetch steps)")


def check_shares_restart(steps: list, report, where: list, kinds: Mapping) -> None:
    """``serial: restart`` lets the case's restarts serve other cases' too: it must restart the broker,
    and do nothing else to the target that would reach the cases beside it (other faults)."""
    faults = {fault.name for visit in walk(steps, kinds) for fault in visit.faults}
    others = sorted(str(name) for name in faults - {"restart", "disconnect"})
    if "restart" not in faults:
        report(where, "serial: restart is for a case with a restart step (fault: restart); this one has none")
    elif others:
        report(where, f"serial: restart runs the case beside others, which its fault {others[0]!r} would reach: "
                      "use serial: true")


def check_proxy_faults_kept_to_the_case(steps: list, report, where: list, kinds: Mapping) -> None:
    """A case that runs beside others (not ``serial``) must keep each proxy fault it adds to its own requests
    (``client: "${client_id}"``, or ``fields`` naming its own ids): a rule kept to nobody picks whichever case's
    request comes next."""
    for fault in (fault for visit in walk(steps, kinds) for fault in visit.faults):
        if not str(fault.name).startswith("proxy.") or str(fault.name)[len("proxy."):] in CONTROL:
            continue
        if not fault.args.get("client") and not fault.args.get("fields"):
            report(where, f"{fault.name} would pick other cases' requests: keep it to this case's "
                          "(args: {client: \"${client_id}\"}) or make the case serial: true")
            return


def check_steps(steps, report, path, api_names: dict[str, list[int]] | None,
                requests: dict[str, MessageSpec] | None = None, under_test: tuple | None = None,
                in_template_step: bool = False, components: Components | None = None) -> None:
    """What the schema cannot check in (expanded) steps. ``requests`` holds the request spec of each API
    for checking field names; ``under_test`` is the case's (API, VersionRange). ``in_template_step``: the
    steps are inside a template's until or parallel step, whose schema check covered them."""
    suite_report = report
    if components is None:
        raise TypeError("check steps with components: the run's step kinds and matchers, or the bundled ones")
    facts = Facts(api_names, requests, under_test)
    for index, step in enumerate(steps):
        where = getattr(step, "origin", None) or [*path, index]
        template = getattr(step, "template", None)
        given: frozenset = getattr(step, "given", frozenset())

        def report(at, message, template=template, given=given, where=where):  # noqa: E306
            # Keys the template wrote are not on the suite's line: say which template they come from.
            inner = at[len(where):]
            if template is not None and not (inner and inner[0] in given):
                message = f"{message} (in template {template!r})"
            suite_report(at, message)

        if not isinstance(step, dict):
            report(where, "a step must be a mapping")
            continue
        kinds = components.step_kinds
        known = set(schema_validator().schema["$defs"]["step"]["properties"]) | set(kinds)
        for key in step:
            if key not in known:
                report([*where, key], f"unknown key (a step takes: {', '.join(sorted(known))})")
        if template is not None and not in_template_step:  # the suite's own steps went through the schema
            report_schema_errors(step_validator(), {k: v for k, v in step.items() if k not in given and k in known},
                                  report, where)
        actions = [key for key in step if key in kinds]
        if len(actions) != 1:
            report(where, f"a step needs exactly one action of {', '.join(kinds)} "
                          f"(or use:); found {', '.join(actions) or 'none'}")
        for key in actions:  # each kind checks what only it knows (send: the API and its field names)
            kinds[key].check(step, report, where, facts)
            parse = kinds[key].parse
            if parse is not None:  # and parses its arguments as the loader will build the step
                try:
                    parse(step)
                except ValueError as error:
                    report([*where, key], str(error))
        expect = step.get("expect") or {}
        if isinstance(expect, dict) and isinstance(expect.get("fields"), dict):
            _check_expect_fields(expect["fields"], known_matchers(components), report, [*where, "expect", "fields"])
        if isinstance(expect, dict) and "error_code" in expect:
            _check_error_names(expect["error_code"], report, [*where, "expect", "error_code"])
        if isinstance(expect, dict) and "kafka_code" in expect:
            _check_error_names(expect["kafka_code"], report, [*where, "expect", "kafka_code"])
        if isinstance(expect, dict) and "kafka_fields" in expect:
            _check_kafka_fields(expect, known_matchers(components), report, [*where, "expect", "kafka_fields"])
        for name in ("fields", "kafka_fields"):
            judged = expect.get(name) if isinstance(expect, dict) else None
            if not isinstance(judged, dict):
                continue
            for key, matcher in judged.items():
                if str(key).endswith("error_code") and not isinstance(matcher, dict) or is_version_map(matcher):
                    if str(key).endswith("error_code"):
                        _check_error_names(matcher, report, [*where, "expect", name, key])
        if isinstance(step.get("retry"), str):  # a named retry: replaced here, once, by the retry it stands for
            expanded = retries.named(step["retry"])
            if expanded is None:
                report([*where, "retry"], f"unknown named retry {step['retry']!r}; known: {', '.join(retries.NAMED)} "
                                          "(or write it out: {on: [CODE, ...], for_ms: N})")
            else:
                step["retry"] = expanded
        if isinstance(step.get("retry"), dict):
            _check_error_names(step["retry"].get("on", []), report, [*where, "retry", "on"])
        if step.get("when") is not None:  # parsed here, once: the runner reads the parsed conditions
            try:
                step["when"] = parse_when(step["when"])
            except WhenError as error:
                report([*where, "when", *error.field], str(error))
        for problem in expressions.check(step):
            report(where, problem)
        nested = (api_names, requests, under_test, in_template_step or template is not None, components)
        for key in actions:
            for inner, body in kinds[key].nested(step):
                check_steps(body, suite_report, [*where, *inner], *nested)


def _check_kafka_fields(expect: dict, matchers: set, report, where: list) -> None:
    """``kafka_fields`` replaces matchers of ``fields`` in the Kafka-answer twin (and may add paths the twin judges
    too), written the same way (both by request version, or neither)."""
    kafka, fields = expect["kafka_fields"], expect.get("fields")
    if not isinstance(kafka, dict) or not isinstance(fields, dict):
        report(where, "kafka_fields gives Kafka's value of fields the step's expect.fields judges (PATH: VALUE)")
        return
    if is_version_map(kafka) != is_version_map(fields):
        report(where, "kafka_fields is given by request version where fields is, and only there")
        return
    _check_expect_fields(kafka, matchers, report, where)


def check_no_effect_verified(steps: list, report, where: list) -> None:
    """``refused: or_no_effect`` accepts a NONE answer, so the effect must be judged: a step after it says
    ``verifies: true``; otherwise a broker that accepted and acted would pass."""
    for index, step in enumerate(steps):
        expect = step.get("expect") if isinstance(step, dict) else None
        if isinstance(expect, dict) and expect.get("refused") == "or_no_effect":
            if not any(isinstance(later, dict) and later.get("verifies") for later in steps[index + 1:]):
                report([*where, index, "expect", "refused"],
                       "refused: or_no_effect needs a later step with verifies: true that checks the effect")
