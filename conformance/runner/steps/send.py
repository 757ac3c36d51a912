"""The ``send`` step: one request of any API, its fields as the suite writes them, checked against ``expect``.

ACL requests name the target's principals as ``User:guest``; they are mapped to the principal the target
knows, and the bindings a case creates are removed after it (see :func:`acls_created`).
"""

from __future__ import annotations

from ...protocol.errors import error_name
from ...suite import expressions
from ...suite.kinds import StepKind, detail_from
from ..context import Context, Skip, attributed
from ..exchange import exchange, retrying
from ..expect import check_expect, save
from ..policy import step_version


def send_step(context: Context, step: dict, index: str, name: str) -> None:
    api = context.cluster.codec.registry.api_name(step["send"])
    version = step_version(context, step, api)
    fields = expressions.resolve(step.get("fields") or {}, {**context.variables, "version": version})
    if api in ACL_PRINCIPAL_FIELDS:
        fields = acl_principals(context, api, fields)
    with attributed(api, version):
        response = retrying(context, step, lambda: exchange(context, step, name, api, version, fields))
        expect = expressions.resolve(step.get("expect") or {}, context.variables)
        if response is None:  # the expected disconnect or silence happened
            context.checked(api, version, expect)
            return
        if api == "CreateAcls":
            acls_created(context, step, fields, response)
        check_expect(context, name, response, expect, version)
        context.checked(api, version, expect)
    save(context, response, step.get("save"))


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


KIND = StepKind("send", send_step, describe=detail_from("send"))
