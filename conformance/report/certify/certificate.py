"""The facts of one certification (certification.json) and the folder that holds them with the page and badges."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

from ...results.provenance import DISTRIBUTION, provenance
from ...results.record import INCOMPLETE_OUTCOMES, Outcome, ResultRecord
from ..itemref import label, latest, reproduce
from ..root_causes import root_causes
from . import claims as claim_checks
from . import page, svg
from .levels import Grade


def harness() -> dict:
    """The harness that made the certification: its version and, in a git checkout, the full commit."""
    made = provenance()
    found = {"name": DISTRIBUTION, "version": made.release}
    if made.commit:
        found["commit"] = made.commit
    return found


def suites_digest(records: list[ResultRecord]) -> dict:
    """sha256 of every suite file the results name, and of the templates beside them (they shape the cases too)."""
    files: dict[str, Path] = {}
    for record in records:
        path = Path(record.path or "")
        if path.is_file():
            files[_suite_name(path)] = path
            root = next((parent for parent in path.parents if parent.name == "suites"), None)
            for template in sorted((root / "templates").glob("*.yaml")) if root else []:
                files[_suite_name(template)] = template
    digests = {name: hashlib.sha256(files[name].read_bytes()).hexdigest() for name in sorted(files)}
    overall = hashlib.sha256("".join(f"{name} {digest}\n" for name, digest in digests.items()).encode())
    return {"digest": overall.hexdigest(), "files": digests,
            "note": "" if digests else "suite files not found here: the digest covers nothing"}


def _suite_name(path: Path) -> str:
    parts = path.resolve().parts
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("suites"):]) if "suites" in parts else path.name


def results_digest(records: list[ResultRecord]) -> str:
    """sha256 of the items' lines as they were read (:meth:`ResultRecord.evidence`), keys sorted: what a bundle's
    results file holds, so ``certify verify`` recomputes it."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(json.dumps(record.evidence(), sort_keys=True, default=str).encode() + b"\n")
    return digest.hexdigest()


def _item(record: ResultRecord) -> dict:
    fields = ("suite", "case", "title", "kip", "cites", "requirement", "api", "api_version", "outcome", "step",
              "step_label", "step_role", "step_api", "expected", "actual", "message", "nodeid", "root_cause")
    return {"item": label(record), **{name: getattr(record, name) for name in fields}, "reproduce": reproduce(record)}


def build(target: str, records: list[ResultRecord], grades: list[Grade], *, fingerprint: dict | None, identity: dict,
          sources: list[str], levels_file: str, claims=None) -> dict:
    """The facts of one certification; with ``claims`` (:class:`.claims.Claims`), what lies outside them is
    listed apart (never a departure) and every claim is checked."""
    items = list(latest(records).values())
    outside = set() if claims is None else {label(record) for record in items if claims.unclaimed(record)}
    facts = {
        "format": 1,
        "target": target,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "identity": identity,
        "fingerprint": fingerprint,
        "harness": harness(),
        "suites": suites_digest(items),
        "results": {"digest": results_digest(items), "items": len(items), "sources": sources},
        "run_ids": sorted({str(record.run_id) for record in items}),
        "levels_file": levels_file,
        "levels": [{"id": grade.level.id, "name": grade.level.name, "status": grade.status, "label": grade.label,
                    "counted": grade.counted, "passed": grade.passed, "ungraded_unsupported": grade.ungraded,
                    "reasons": grade.reasons, "departures": [label(row) for row in grade.departures],
                    "not_advertised": [label(row) for row in grade.unadvertised],
                    "without_verdict": [label(row) for row in grade.incomplete],
                    "waived": [{"item": label(row), "reason": entry.reason, "link": entry.link}
                               for row, entry in grade.waived],
                    "stale_waivers": [entry.describe() for entry in grade.stale]} for grade in grades],
        "counts": page.outcome_counts(items),
        # One fault of one API version each, with the items it decided (failed there, or blocked by it).
        "root_causes": [{"cause": cause.cause, "title": cause.title, "items": [label(row) for row in cause.records]}
                        for cause in root_causes(items)],
        "departures": [_item(record) for record in items
                       if record.outcome == Outcome.FAILED and label(record) not in outside],
        "without_verdict": [_item(record) for record in items if record.outcome in INCOMPLETE_OUTCOMES],
        # IMPLEMENTATION items where the target does not do what Apache Kafka does: never graded.
        "differs_from_kafka": [_item(record) for record in items if record.outcome == Outcome.DIFFERS],
    }
    if claims is not None:
        checks = claim_checks.check(claims, items, fingerprint)
        facts["claims"] = {
            "file": Path(claims.path).name, "declared": claims.raw, "checks": checks,
            "false_claims": sum(1 for row in checks if row["status"] in claim_checks.FALSE_CLAIMS),
            "not_claimed": claim_checks.not_claimed_summary(claims, items),
            "not_claimed_items": sorted(outside),
            # Departures in what is not claimed: evidence kept, never graded.
            "departures_not_claimed": [_item(record) for record in items
                                       if record.outcome == Outcome.FAILED and label(record) in outside],
        }
    return facts


def write(certificate: dict, grades: list[Grade], records: list[ResultRecord], output_root: Path) -> Path:
    """``<root>/<target>-<timestamp>/``: index.html, certification.json and badges/<level>.svg."""
    stamp = certificate["generated_at"].replace("-", "").replace(":", "")
    folder = Path(output_root) / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', certificate['target'])}-{stamp}"
    (folder / "badges").mkdir(parents=True, exist_ok=True)
    items = list(latest(records).values())
    (folder / "index.html").write_text(page.render(certificate, grades, items), encoding="utf-8")
    (folder / "certification.json").write_text(json.dumps(certificate, indent=1, default=str) + "\n",
                                               encoding="utf-8")
    for grade in grades:
        (folder / "badges" / f"{grade.level.id}.svg").write_text(svg.badge(grade.level.name, grade.label) + "\n",
                                                                 encoding="utf-8")
    return folder
