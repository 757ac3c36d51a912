"""What the results claim about who ran them, and on what, against what else the bundle holds.

A relabelled bundle is one whose lines say another harness version or another target than the rest of it: the
certificate's harness and target, the target each item's pytest node id names, the ApiVersions answer the
fingerprint was taken from. Each contradiction is named with the values on both sides.
"""

from __future__ import annotations

from collections import Counter

from ...results.record import ResultRecord
from . import fingerprint as fingerprint_module

RECORDED = "recorded in the results"  # the words of a fingerprint taken from the results (fingerprint.from_records)


def check(certificate: dict, records: list[ResultRecord]) -> list[str]:
    return _harness(certificate, records) + _target(certificate, records) + _fingerprint(certificate, records)


def _harness(certificate: dict, records: list[ResultRecord]) -> list[str]:
    """Each line's ``harness_version`` (``VERSION`` or ``VERSION+gCOMMIT``, :mod:`conformance.results.provenance`)
    is the certificate's version, and its commit's abbreviation where the certificate names the commit."""
    made = certificate.get("harness") or {}
    graded_by, commit = made.get("version"), made.get("commit")
    said = f"{graded_by}" + (f" (commit {commit})" if commit else "")

    def agrees(line: str) -> bool:
        release, _, short = line.partition("+g")
        return release == graded_by and (not short or bool(commit) and str(commit).startswith(short))

    ran = Counter(record.harness_version for record in records if record.harness_version)
    return [f"harness relabelled: {count} result line{'s' if count != 1 else ''} say harness {version} ran "
            f"{'them' if count != 1 else 'it'}; certification.json and the manifest say {said}"
            for version, count in sorted(ran.items()) if not agrees(version)]


def _target(certificate: dict, records: list[ResultRecord]) -> list[str]:
    problems = []
    target = certificate.get("target")
    named = Counter(record.target for record in records if record.target != target)
    problems += [f"target relabelled: {count} result line{'s' if count != 1 else ''} name target {name!r}; "
                 f"certification.json says {target!r}" for name, count in sorted(named.items())]
    said_version = (certificate.get("identity") or {}).get("target_version")
    versions = Counter(record.target_version for record in records
                       if record.target_version and said_version and record.target_version != said_version)
    problems += [f"target version relabelled: {count} result line{'s' if count != 1 else ''} say version "
                 f"{version!r}; certification.json says {said_version!r}" for version, count in sorted(versions.items())]
    for record in records:
        ran_on = record.evidence().get("ran_on") or record.target  # a companion's item names the spec it ran on
        node = record.nodeid.rsplit("[", 1)
        if len(node) == 2 and node[1] not in (f"{ran_on}]", f"{ran_on}-v{record.api_version}]"):
            problems.append(f"target relabelled: {record.item_id} ran as {record.nodeid!r} (its node id), but its "
                            f"line says it ran on {ran_on!r}")
    return problems


def _fingerprint(certificate: dict, records: list[ResultRecord]) -> list[str]:
    """A fingerprint taken from the results must be the one their ApiVersions answers give."""
    said = certificate.get("fingerprint")
    if not said or RECORDED not in str(said.get("source", "")):
        return []  # asked of the running target: nothing offline to compare it with
    again = fingerprint_module.from_records(records)
    if again is None:
        return ["fingerprint does not follow: certification.json's fingerprint says it was recorded in the results, "
                "which hold no ApiVersions answer"]
    return [f"fingerprint does not follow: certification.json's {name} is not what the results' ApiVersions answer "
            f"says" for name in ("apis", "finalized_features", "supported_features", "source")
            if said.get(name) != again.get(name)]
