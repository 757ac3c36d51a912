"""What a case needs of a broker's settings: read them from the target, never assume the provisioned profile.

A case declares ``requires: {config: {transactional.id.expiration.ms: {le: 20000}}}``. The runner
reads the broker's settings once per target (DescribeConfigs on a broker resource) and either
hands the values to the case (``${config.transactional_id_expiration_ms}``) or skips it with the
value it found, so a broker configured otherwise is never failed for its configuration.
"""

from __future__ import annotations

from ..client.cluster import Cluster
from ..protocol.errors import error_name
from ..suite import matchers

BROKER_RESOURCE = 4


class ConfigUnmet(Exception):
    """The target's settings do not allow the case (or cannot be read): a reason to skip it."""


def read_broker_config(cluster: Cluster) -> dict[str, str | None]:
    """Every setting of the bootstrap broker, by name (raises ConfigUnmet when it cannot be read)."""
    found = cluster.version_range("DescribeConfigs")
    if found is None:
        raise ConfigUnmet("the target does not support DescribeConfigs, so its settings cannot be read")
    metadata = cluster.metadata([])
    node = str(metadata["brokers"][0]["node_id"]) if metadata.get("brokers") else "0"
    body = {"resources": [{"resource_type": BROKER_RESOURCE, "resource_name": node, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}
    response = cluster.connection().request("DescribeConfigs", found[1], body, step="read broker settings").answer
    result = (response.get("results") or [{}])[0]
    if result.get("error_code"):
        raise ConfigUnmet(f"DescribeConfigs of broker {node} answered {error_name(result['error_code'])}")
    return {entry["name"]: entry.get("value") for entry in result.get("configs") or []}


def check(required: dict, settings: dict[str, str | None], spec: str) -> dict[str, object]:
    """The required settings' values as ``${config.*}`` variables; ConfigUnmet names the first one that is off."""
    variables: dict[str, object] = {}
    for name, wanted in required.items():
        reported = settings.get(name)
        if reported is None:
            raise ConfigUnmet(f"needs broker setting {name}, which {spec} does not report")
        value = _typed(reported)
        problem = matchers.match_value(value, wanted, is_error=False)
        if problem:
            raise ConfigUnmet(f"needs {name} {_show(wanted)}; {spec} has {value} ({problem})")
        variables[name.replace(".", "_")] = value
    return variables


def switched_off(switches: dict, settings: dict[str, str | None], spec: str) -> str | None:
    """Why the case does not apply, where the target reports a switch of the behaviour at another value than the
    case's; None where every switch is on or not reported (a broker without the switch cannot turn it off)."""
    for name, wanted in switches.items():
        value = settings.get(name)
        if value is not None and _typed(value) != wanted:
            return f"{spec} reports {name}={value}: the behaviour this case checks is switched off there"
    return None


def _typed(value: str):
    """A setting's text as the value a suite writes: 20000 and true, not "20000" and "true"."""
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    try:
        return int(value)
    except ValueError:
        return value


def _show(wanted) -> str:
    if isinstance(wanted, dict):
        return " and ".join(f"{operator} {argument}" for operator, argument in wanted.items())
    return f"= {wanted}"
