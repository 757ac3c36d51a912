"""A reproduction of a certification bundle: the bundle's items run again on a broker the reader runs, compared item
by item with what the bundle says.

``conformance certify reproduce BUNDLE --target SPEC`` (:mod:`conformance.cli.certify_reproduce`) runs the items;
this module holds what needs no broker: which items a bundle holds, the comparison, the levels graded again on the
reproduction, and the record a register reads. Each item of the bundle

- **agrees**: every run of the reproduction gave the bundle's outcome;
- **contradicts**: the runs agree with one another, not with the bundle;
- is **flaky**: the runs of the reproduction, all on one target, gave different verdicts. A level counting a flaky
  item is *unstable* (:data:`.levels.UNSTABLE`): not reached, whatever one run says;
- is **not reproduced**: its suite is not among this harness's, or a companion run made it (the fault proxy, the
  three-node cluster, the exactly-once tier: ``ran_on`` names it), which the reproduction does not start; or no
  run reached a verdict on it.

A run that reached no verdict on an item (blocked, error: it could not observe) is no evidence either way: beside
runs with a verdict it is left out of the comparison (its message kept as the row's ``why``); an item the bundle
itself has as blocked or error agrees only with runs that say so too.

The record is a folder: ``reproduction.json`` (the bundle it reproduces, by its manifest's sha256; the target; each
item compared; the levels), ``runs.jsonl`` (every run's results), ``manifest.json`` (the sha256 of both) and, with a
key, ``signature.json`` (:mod:`.signing`). :func:`verify` checks the signature and the files, and, given the bundle,
derives the comparison again from ``runs.jsonl``: a count edited and resealed does not pass.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ...results.record import INCOMPLETE_OUTCOMES, ResultRecord
from ..itemref import latest
from . import bundle, signing
from .certificate import harness

RECORD = "reproduction.json"
RUNS = "runs.jsonl"
AGREES, CONTRADICTS, FLAKY, NOT_REPRODUCED = "agrees", "contradicts", "flaky", "not reproduced"
STATUSES = (AGREES, CONTRADICTS, FLAKY, NOT_REPRODUCED)


def bundle_records(folder: Path) -> list[ResultRecord]:
    """The items the bundle graded (the last record of each), as its ``results.jsonl`` says: what it claims, edited
    or not (verifying says whether it was)."""
    lines = (Path(folder) / bundle.RESULTS).read_text(encoding="utf-8").splitlines()
    return list(latest(ResultRecord.from_line(json.loads(line)) for line in lines if line.strip()).values())


def companion_of(record: ResultRecord) -> str | None:
    """The spec of the companion run that made this item (the bundle's line keeps it as ``ran_on``), else None."""
    return record.evidence().get("ran_on")


def compare(claimed: list[ResultRecord], runs: list[list[ResultRecord]], skipped: dict[str, str]) -> list[dict]:
    """One row per item of the bundle: its outcome there, its outcome in each run (None: not in that run), and
    what they make of it. ``skipped``: why items were not run (items no run has)."""
    outcomes = [{record.item_id: record for record in latest(run).values()} for run in runs]
    rows = []
    for record in claimed:
        item = record.item_id
        ran = [run.get(item) for run in outcomes]
        seen = [found.outcome for found in ran if found is not None]
        row = {"item": item, "requirement": record.requirement, "bundle": record.outcome,
               "runs": [None if found is None else found.outcome for found in ran], "status": "", "why": ""}
        # a run without a verdict (blocked, error) could not observe: it neither agrees nor makes the item flaky
        verdicts = set(seen) - set(INCOMPLETE_OUTCOMES) if set(seen) - {record.outcome} else set(seen)
        if not seen:  # a reason given for an item some run has is no reason: the runs decide
            row.update(status=NOT_REPRODUCED, why=skipped.get(item, "no run of the reproduction collected it"))
        elif len(verdicts) > 1:
            row.update(status=FLAKY, why=_message(ran))
        elif not verdicts:
            row.update(status=NOT_REPRODUCED, why="no run reached a verdict: " + _message(ran))
        elif verdicts == {record.outcome}:
            row.update(status=AGREES, why=_message(ran) if len(set(seen)) > 1 else "")
        else:
            row.update(status=CONTRADICTS, why=_message(ran))
        rows.append(row)
    return rows


def _message(ran: list[ResultRecord | None]) -> str:
    """The first line of the first message of a run that did not pass: what the reader looks at first."""
    for found in ran:
        if found is not None and found.outcome != "passed" and found.message:
            return str(found.message).strip().splitlines()[0][:300]
    return ""


def counts(rows: list[dict]) -> dict[str, int]:
    found = Counter(row["status"] for row in rows)
    return {status: found.get(status, 0) for status in STATUSES}


def flaky_items(rows: list[dict]) -> list[str]:
    return [row["item"] for row in rows if row["status"] == FLAKY]


def reproduced_records(runs: list[list[ResultRecord]]) -> list[ResultRecord]:
    """The items as the reproduction found them: each item's record of the last run that reached a verdict on it,
    else of the last run that has it (a flaky one's outcome does not count: its levels are unstable)."""
    found: dict[str, ResultRecord] = {}
    for run in runs:
        for record in latest(run).values():
            kept = found.get(record.item_id)
            if kept is None or record.outcome not in INCOMPLETE_OUTCOMES or kept.outcome in INCOMPLETE_OUTCOMES:
                found[record.item_id] = record
    return list(found.values())


def levels(grades: list, certificate: dict) -> list[dict]:
    """Each level as the bundle states it and as the reproduction grades it."""
    stated = {level["id"]: level for level in certificate.get("levels", [])}
    return [{"id": grade.level.id, "name": grade.level.name, "bundle": stated.get(grade.level.id, {}).get("label"),
             "reproduced": grade.label, "reasons": list(grade.reasons)} for grade in grades]


# ------------------------------------------------------------------------------ the record
def facts(folder: Path, verification: bundle.Verification, target: str, identity: dict, run_ids: list[str],
          rows: list[dict], level_rows: list[dict], key=None) -> dict:
    """What ``reproduction.json`` says."""
    certificate = json.loads((Path(folder) / "certification.json").read_text(encoding="utf-8"))
    made = {
        "format": 1,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "harness": harness(),
        "bundle": {"folder": Path(folder).name, "manifest_sha256": bundle.manifest_digest(folder),
                   "target": certificate.get("target"), "identity": certificate.get("identity") or {},
                   "signer": verification.signer, "verified": not verification.problems,
                   "problems": list(verification.problems)},
        "target": target, "identity": identity, "run_ids": run_ids, "runs": len(run_ids),
        "counts": counts(rows), "compared": sum(1 for row in rows if row["status"] != NOT_REPRODUCED),
        "items": rows, "levels": level_rows,
        "unstable": [row["name"] for row in level_rows if row["reproduced"] == "unstable"],
    }
    if key is not None:
        made["signer"] = signing.signer_of(key)
    return made


def write(out: Path, made: dict, key=None) -> Path:
    """The record's folder ``out``: reproduction.json beside runs.jsonl (the runs' results file, written by them;
    empty when nothing ran), the manifest, and the signature with ``key``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / RECORD).write_text(json.dumps(made, indent=1, default=str) + "\n", encoding="utf-8")
    (out / RUNS).touch()
    manifest = {"format": 1, "harness": harness(), "files": {name: bundle.sha256(out / name) for name in (RECORD, RUNS)}}
    path = out / bundle.MANIFEST
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if key is not None:
        signing.sign(out, path, key)
    return out / RECORD


def read_runs(folder: Path) -> list[list[ResultRecord]]:
    """``runs.jsonl`` split into its runs, in the order the record names them."""
    made = json.loads((Path(folder) / RECORD).read_text(encoding="utf-8"))
    records = [ResultRecord.from_line(json.loads(line))
               for line in (Path(folder) / RUNS).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [[record for record in records if record.run_id == run_id] for run_id in made.get("run_ids", [])]


@dataclass
class Checked:
    """What verifying a reproduction record found, as :class:`.bundle.Verification` says it of a bundle."""

    folder: Path
    facts: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    signer: str | None = None
    trusted: bool = False


def verify(folder: Path, trusted: Iterable[str] = (), of_bundle: Path | None = None) -> Checked:
    """The signature and files of a reproduction record; with ``of_bundle`` (the bundle it names), its comparison
    derived again from its runs: every item's row must follow."""
    folder = Path(folder)
    found = Checked(folder)
    if not (folder / bundle.MANIFEST).is_file() or not (folder / RECORD).is_file():
        found.problems.append(f"{folder}: no {RECORD} with a {bundle.MANIFEST}: not a reproduction record")
        return found
    signature = signing.check(folder, bundle.MANIFEST)
    if signature.problem:
        found.problems.append(signature.problem)
    found.signer, found.trusted = signature.fingerprint, signature.fingerprint in set(trusted)
    try:
        manifest = json.loads((folder / bundle.MANIFEST).read_text(encoding="utf-8"))
        found.facts = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        found.problems.append(f"{folder}: cannot read the record: {error}")
        return found
    found.problems += bundle.file_problems(folder, manifest)
    named = (found.facts.get("signer") or {}).get("fingerprint")
    if found.signer is not None and named != found.signer:
        found.problems.append(f"signer relabelled: {RECORD} names {named}, the signature is by {found.signer}")
    if of_bundle is not None and not found.problems:
        found.problems += comparison_problems(folder, found.facts, Path(of_bundle))
    return found


def comparison_problems(folder: Path, made: dict, of_bundle: Path) -> list[str]:
    """Where the record's comparison does not follow from its runs and the bundle it names."""
    if bundle.manifest_digest(of_bundle) != made.get("bundle", {}).get("manifest_sha256"):
        return [f"reproduces another bundle: {RECORD} names manifest {made.get('bundle', {}).get('manifest_sha256')}, "
                f"{of_bundle.name}'s is {bundle.manifest_digest(of_bundle)}"]
    try:
        runs = read_runs(folder)
        claimed = bundle_records(of_bundle)
    except (OSError, ValueError) as error:
        return [f"cannot compare again: {error}"]
    skipped = {row["item"]: row["why"] for row in made.get("items", []) if row.get("status") == NOT_REPRODUCED}
    again = {row["item"]: row for row in compare(claimed, runs, skipped)}
    problems = [f"comparison does not follow: {row['item']} is {row.get('status')!r} in {RECORD}, the runs make it "
                f"{again[row['item']]['status']!r}" for row in made.get("items", [])
                if row["item"] in again and again[row["item"]]["status"] != row.get("status")]
    problems += [f"comparison does not follow: {item} of the bundle is not in {RECORD}"
                 for item in sorted(set(again) - {row["item"] for row in made.get("items", [])})]
    if not problems and made.get("counts") != counts(list(again.values())):
        problems.append(f"comparison does not follow: the counts in {RECORD} are not those of its items")
    return problems
