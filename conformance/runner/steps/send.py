"""The ``send`` step: one request of any API, its fields as the suite writes them, checked against ``expect``.

ACL requests name the target's principals as ``User:guest``; they are mapped to the principal the target
knows, and the bindings a case creates are removed after it (see :func:`acls_created`).
"""

from __future__ import annotations

from ...protocol.errors import error_name
from ...protocol.schema import MessageSpec
from ...suite import expressions, matchers
from ...suite.checks import check_request_fields, refuse_fetch_only_expect
from ...suite.kinds import Facts, Request, StepKind, detail_from
from ..context import Context, Departure, Skip, attributed
from .. import control, observe
from . import requesting
from ..exchange import exchange, retrying
from ..expect import check_expect, deferred, save
from ..policy import step_version, with_coordinator_retry


def send_step(context: Context, step: dict, index: str, name: str) -> None:
    api = context.cluster.codec.registry.api_name(step["send"])
    version = step_version(context, step, api)
    step = with_coordinator_retry(api, step)
    while (known := observe.known_broken(context, step, api, version)) is not None:
        name = f"{name} (at v{known[0]}: v{version} {known[1]}, met earlier in this run)"
        version = known[0]
    while True:
        try:
            response = _send_at(context, step, name, api, version)
            break
        except Departure as deviation:  # set-up or a check broken at one version goes on at the next one down
            lower = observe.version_down(context, step, api, version, deviation)
            if lower is None:
                raise
            name = f"{name} (at v{lower}: v{version} {observe.broken(deviation)})"
            version = lower
    if response is not None:
        save(context, response, step.get("save"))


def _send_at(context: Context, step: dict, name: str, api: str, version: int):
    observe.ids_given(context, requests(step)[0], version)  # a zero id Metadata gave is Metadata's, not this step's
    fields = expressions.resolve(step.get("fields") or {}, {**context.variables, "version": version})
    if api in ACL_PRINCIPAL_FIELDS:
        fields = acl_principals(context, api, fields)
    with attributed(api, version):
        expect = expressions.resolve(step.get("expect") or {}, context.variables)
        controlled = control.needs_control(context, step, api, version)
        departed = control.run_control(context, step, name, api, version, fields) if controlled else None
        response = retrying(context, step, lambda: exchange(context, step, name, api, version, fields))
        if departed is not None:  # a malformation whose well-formed request already departs: only the difference
            control.judge_difference(context, name, api, version, expect, departed, response)
        if response is None:  # the expected disconnect or silence happened
            context.checked(api, version, expect)
            refused_outright(context, api, version, expect, None)
            return None
        not_served(context, api, response)
        declined(context, step, response, version)
        if api == "CreateAcls":
            acls_created(context, step, fields, response)
        observe.served(api, version, response, expect)
        try:
            check_expect(context, name, response, expect, version)
        except Departure as deviation:  # a generic error that another version does not give: a broken version
            response, version = observe.served_elsewhere(context, step, name, api, version, fields, response,
                                                         expect, deviation)
        context.checked(api, version, expect)
        refused_outright(context, api, version, expect, response)
    return response


def refused_outright(context: Context, api: str, version: int, expect: dict, response) -> None:
    """Notes that the step under test met ``refused: or_no_effect`` by a refusal (an error, or no answer): the
    KIP's demand is met without the effect, so a check of the effect its observer could not make is not needed."""
    if expect.get("refused") == "or_no_effect" and context.under_test(api, version) \
            and (response is None or matchers.primary_error(response) != 0) and not deferred(response):
        context.progress.refused = True


# ------------------------------------------------------------------------------ what the target does not serve
# Answers to a set-up request that mean the target does not serve what the case builds on: the case skips,
# saying why, unless that API is the one under test. Kafka 3.x advertises ConsumerGroupHeartbeat but answers
# UNSUPPORTED_VERSION while KIP-848's consumer protocol is off (its default there).
NOT_SERVED = {
    ("ConsumerGroupHeartbeat", "UNSUPPORTED_VERSION"):
        "it advertises ConsumerGroupHeartbeat but does not serve KIP-848's consumer group protocol (on Kafka 3.x, "
        "group.coordinator.rebalance.protocols does not list consumer)",
}


def not_served(context: Context, api: str, response: dict) -> None:
    if context.api == api or not isinstance(response, dict):
        return
    error = error_name(response.get("error_code") or 0)
    if (api, error) in NOT_SERVED:
        raise Skip(f"{context.target.spec}: {NOT_SERVED[(api, error)]} ({api}: {error})")


def declined(context: Context, step: dict, response: dict, version: int) -> None:
    """``optional_feature: {name, declined: {path: value}}``: a feature the protocol lets a broker decline
    (KIP-227's fetch sessions: session id 0). An answer that declines it makes the case not applicable here
    (skipped, naming the feature), not blocked and not failed."""
    optional = step.get("optional_feature")
    if not isinstance(optional, dict) or not isinstance(response, dict):
        return
    wanted = expressions.resolve(optional.get("declined") or {}, context.variables)
    if wanted and all(matchers.match_field(response, path, value, version, context.matchers) is None
                      for path, value in wanted.items()):
        shown = ", ".join(f"{path} = {value!r}" for path, value in wanted.items())
        raise Skip(f"{context.target.spec} declines {optional.get('name', 'an optional feature')} ({shown}), "
                   "which the protocol allows: the case does not apply")


# ------------------------------------------------------------------------------ ACLs
# Where ACL requests name a principal; suites name the target's principals as `User:guest`, `User:nobody`.
ACL_PRINCIPAL_FIELDS = {"CreateAcls": ("creations", "principal"), "DeleteAcls": ("filters", "principal_filter")}

# CreateAcls errors that mean the harness cannot grant rights here: the case skips, saying why.
CANNOT_GRANT = {
    "CLUSTER_AUTHORIZATION_FAILED": "the harness's own principal may not create ACLs (it needs ALTER on the "
                                    "CLUSTER resource)",
    "SECURITY_DISABLED": "the broker has no authorizer, so there are no rights to grant",
}


def acl_principals(context: Context, api: str, fields: dict) -> dict:
    """``User:guest`` in an ACL request becomes the Kafka principal the target knows ``guest`` by
    (``--principal guest=FILE`` with ``principal=User:alice``); other principals stay as written."""
    entries, key = ACL_PRINCIPAL_FIELDS[api]
    if not isinstance(fields.get(entries), list):
        return fields
    rewritten = []
    for entry in fields[entries]:
        value = entry.get(key) if isinstance(entry, dict) else None
        if isinstance(value, str) and value.startswith("User:"):
            mapped = context.target.kafka_principal(value[len("User:"):])
            if mapped is not None:
                entry = {**entry, key: mapped}
        rewritten.append(entry)
    return {**fields, entries: rewritten}


def acls_created(context: Context, step: dict, fields: dict, response: dict) -> None:
    """Remembers the bindings a CreateAcls made (the runner removes them after the case); where the harness
    may not grant rights at all, the case skips rather than departs, unless CreateAcls is what it tests."""
    creations = fields.get("creations") or []
    results = response.get("results") or []
    for creation, result in zip(creations, results):
        if isinstance(result, dict) and result.get("error_code") == 0:
            with context.lock:
                context.acls.append(dict(creation))
    if context.api == "CreateAcls" or step.get("as"):
        return
    for creation, result in zip(creations, results):
        name = error_name(result.get("error_code", 0)) if isinstance(result, dict) else None
        if name in CANNOT_GRANT:
            whom = creation.get("principal") if isinstance(creation, dict) else None
            raise Skip(f"{context.target.spec}: cannot grant {whom or 'a principal'} the rights this case needs: "
                       f"{CANNOT_GRANT[name]} (CreateAcls: {name})")


# ------------------------------------------------------------------------------ the loader's check
def check_send(step: dict, report, where: list, facts: Facts) -> None:
    """The API is one the codec knows, the fields are its request's (in a version the step can go out at),
    and the ``expect`` is a response's."""
    if facts.api_names is not None and step["send"] not in facts.api_names:
        report([*where, "send"], f"unknown API {step['send']!r}")
    elif facts.requests is not None and step["send"] in facts.requests and isinstance(step.get("fields"), dict):
        spec = facts.requests[step["send"]]
        versions = sent_versions(step, step["send"], spec, facts.under_test)
        if versions:  # none: the case's versions are beyond the loaded specs, reported with the case
            check_request_fields(step["fields"], spec.fields, spec, versions, report, [*where, "fields"])
            control_fields = (step.get("control") or {}).get("fields") if isinstance(step.get("control"), dict) else None
            if isinstance(control_fields, dict):
                check_request_fields(control_fields, spec.fields, spec, versions, report, [*where, "control", "fields"])
    refuse_fetch_only_expect(step, report, where)


def sent_versions(step: dict, api: str, spec: MessageSpec, under_test) -> list[int]:
    """The versions of ``api`` this send step can go out at."""
    versions = spec.versions()
    wanted = step.get("version")
    if isinstance(wanted, int) and not isinstance(wanted, bool):
        return [wanted] if wanted in versions else []  # a version beyond the specs is reported elsewhere
    if wanted is None and under_test is not None and under_test[0] == api:
        return [version for version in versions if version in under_test[1]]
    return versions  # the client's choice, or min/max/an expression


def requests(step) -> tuple[Request, ...]:
    """The one request a send step sends: its API at the version it pins (``version:``), else the case's, with the
    topics its fields name by the id the harness learnt."""
    return (Request(step["send"], step.get("version"), step.get("expect") or {},
                    topic_ids=expressions.named(step.get("fields") or {}, "topic_ids")),)


KIND = StepKind("send", send_step, describe=detail_from("send"), check=check_send, requests=requests,
                rough=requesting.rough, hazard=requesting.hazard)
