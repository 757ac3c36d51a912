"""A target's fingerprint: what it says it is, the API version ranges it advertises, its finalized features.

Two honest sources: asking the running target (ApiVersions through the harness's own client), or
the ApiVersions exchange that results carry in their transcripts. Which one was used is recorded,
and nothing is filled in from what the harness expects a target to be.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ...protocol.codec import default_codec
from ...results.record import ResultRecord
from ..itemref import case_id


def _api_name(api_key: int) -> str:
    try:
        return default_codec().registry.api(api_key).name
    except Exception:  # noqa: BLE001 - an API the bundled specs do not know is still shown, by key
        return f"api_key {api_key}"


def _from_response(response: dict) -> dict:
    apis = {entry["api_key"]: (entry["min_version"], entry["max_version"]) for entry in response.get("api_keys") or []}
    return {
        "apis": [{"api_key": api_key, "name": _api_name(api_key), "min": low, "max": high}
                 for api_key, (low, high) in sorted(apis.items())],
        "finalized_features": {feature["name"]: feature["max_version_level"]
                               for feature in response.get("finalized_features") or []},
        "supported_features": {feature["name"]: [feature["min_version"], feature["max_version"]]
                               for feature in response.get("supported_features") or []},
    }


def probe(bootstrap: str, *, security=None, identity: dict | None = None, timeout: float = 10.0) -> dict:
    """Ask a running target. Raises the client's errors when it cannot be reached."""
    from ...client.cluster import Cluster

    cluster = Cluster(bootstrap, timeout=timeout, security=security, client_id="kafka-conformance-certify")
    try:
        cluster.api_versions()
        answers = [exchange for exchange in cluster.transcript.exchanges
                   if exchange.api == "ApiVersions" and exchange.response and not exchange.response.get("error_code")]
        fingerprint = _from_response(answers[-1].answer)
        fingerprint["finalized_features"] = dict(cluster.finalized_features)
    finally:
        cluster.close()
    fingerprint.update(identity or {})
    fingerprint["source"] = f"ApiVersions v{answers[-1].version} asked of {bootstrap} at " + time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return fingerprint


def from_records(records: Sequence[ResultRecord]) -> dict | None:
    """The last successful ApiVersions answer any record's transcript holds, or None."""
    for record in reversed(records):
        transcript = record.transcript
        if not isinstance(transcript, list):
            continue
        for exchange in transcript:
            response = exchange.get("response") if isinstance(exchange, dict) else None
            if exchange.get("api") == "ApiVersions" and isinstance(response, dict) and response.get("api_keys") \
                    and not response.get("error_code"):
                fingerprint = _from_response(response)
                fingerprint["source"] = (f"ApiVersions v{exchange.get('version')} recorded in the results "
                                         f"({case_id(record)}, {record.recorded_at})")
                return fingerprint
    return None


def identity(records: Sequence[ResultRecord], target=None) -> dict:
    """What the target says it is: its spec, kind and version (from the running target, else the results)."""
    rows = list(records)
    found: dict[str, Any] = {"target": rows[0].target if rows else None,
                             "target_version": next((row.target_version for row in rows if row.target_version), None)}
    if target is not None:
        info = target.info()
        found.update(target=info.spec, kind=info.kind, target_version=info.version or found["target_version"],
                     bootstrap=info.bootstrap, details={key: str(value) for key, value in info.extra.items()})
    return found

