"""A certification folder as a bundle anyone can verify offline: the evidence, what it was graded against, digests.

Beside ``index.html``, ``certification.json`` and the badges, the folder holds

- ``results.jsonl``: the graded items (the last record of each), each transcript moved to
  ``transcripts/<n>.json`` and named by the item's ``transcript_file``;
- ``levels.yaml``: the levels file it was graded against; ``capabilities.yaml`` and ``known-failures-<n>.yaml``
  when the certification had them;
- ``grading.json``: the other inputs of the grade (the suite ids that existed, which optional files were given);
- ``manifest.json``: the sha256 of every file above and of each item (its id, outcome and digest), with the
  harness version that made the bundle. The manifest's own digest is what a register publishes.

The suites themselves are not copied: ``certification.json`` carries the digest of every suite file, and the
harness version that ships them. :func:`verify` re-grades the bundle with this harness and names every
difference: a file edited or missing, an item edited or removed, another harness version, suites or levels that
are not the ones that version ships, a level that does not follow from the results.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from ... import resources
from ...results.record import ResultRecord
from .. import known_failures
from ..itemref import label, latest
from . import claims as claims_module
from . import levels as levels_module
from .certificate import harness, results_digest

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
LEVELS = "levels.yaml"
CAPABILITIES = "capabilities.yaml"
GRADING = "grading.json"
VERIFIED = "verified"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _line(record: dict) -> str:
    return json.dumps(record, sort_keys=True, default=str)


def write(folder: Path, records: list[ResultRecord], *, levels_path: str | Path | None, claims_path: str | Path | None,
          known_failure_paths: Sequence[str] = (), known_suites: Sequence[str] = ()) -> Path:
    """Add the evidence, the grading inputs and the manifest to a certification folder; returns the manifest."""
    folder = Path(folder)
    items = list(latest(records).values())
    transcripts = folder / "transcripts"
    lines = []
    for index, item in enumerate(items):
        record = dict(item.evidence())  # the line as read, every key kept: the bundle verifies byte for byte
        transcript = record.get("transcript")
        if transcript:  # an empty one stays in the line, so the results digest is the certificate's
            del record["transcript"]
            transcripts.mkdir(exist_ok=True)
            name = f"transcripts/{index}.json"
            (folder / name).write_text(json.dumps(transcript, indent=1, default=str) + "\n", encoding="utf-8")
            record["transcript_file"] = name
        lines.append(_line(record))
    (folder / RESULTS).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    shutil.copyfile(Path(levels_path) if levels_path else levels_module.default_levels_path(), folder / LEVELS)
    if claims_path:
        shutil.copyfile(claims_path, folder / CAPABILITIES)
    waivers = []
    for index, given in enumerate(known_failure_paths):
        name = f"known-failures-{index}.yaml"
        shutil.copyfile(given, folder / name)
        waivers.append(name)
    (folder / GRADING).write_text(json.dumps({
        "levels": LEVELS, "levels_bundled": levels_path is None,
        "capabilities": CAPABILITIES if claims_path else None, "known_failures": waivers,
        "known_suites": sorted(known_suites)}, indent=1) + "\n", encoding="utf-8")
    files = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*")
                   if path.is_file() and path.name != MANIFEST)
    manifest = {
        "format": 1,
        "harness": harness(),
        "files": {name: sha256(folder / name) for name in files},
        "items": {label(item): {"outcome": item.outcome, "sha256": hashlib.sha256(line.encode()).hexdigest()}
                  for item, line in zip(items, lines)},
    }
    path = folder / MANIFEST
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def manifest_digest(folder: Path) -> str:
    """The digest a register publishes: it pins every file of the bundle through the manifest."""
    return sha256(Path(folder) / MANIFEST)


# ------------------------------------------------------------------------------ verifying
def verify(folder: Path) -> list[str]:
    """Every difference between the bundle and what it claims; an empty list means verified."""
    folder = Path(folder)
    if not (folder / MANIFEST).is_file():
        return [f"{folder}: no {MANIFEST}: not a certification bundle (made before bundles, or not one at all)"]
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        certificate = json.loads((folder / "certification.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return [f"{folder}: cannot read the bundle: {error}"]
    problems = _files(folder, manifest)
    records, item_problems = _items(folder, manifest)
    problems += item_problems
    made, here = certificate.get("harness", {}), harness()
    if made.get("version") != here["version"] or manifest.get("harness", {}).get("version") != made.get("version"):
        problems.append(f"another harness version: the bundle was graded by {made.get('name')} {made.get('version')} "
                        f"(manifest: {manifest.get('harness', {}).get('version')}); this is {here['name']} "
                        f"{here['version']}: verify it with that version")
        return problems  # another version grades by its own rules: nothing more to compare here
    problems += _grading_inputs(folder, certificate)
    if records is not None:
        problems += _regrade(folder, certificate, records)
    return problems


def _files(folder: Path, manifest: dict) -> list[str]:
    problems = []
    listed = manifest.get("files", {})
    for name, digest in sorted(listed.items()):
        path = folder / name
        if name == RESULTS and path.is_file():
            continue  # compared item by item (_items), which names the item that differs
        if not path.is_file():
            if not name.startswith("transcripts/"):  # a missing transcript is named with its item (_items)
                problems.append(f"missing file: {name} (listed in the manifest)")
        elif sha256(path) != digest:
            problems.append(f"edited file: {name} (sha256 {sha256(path)[:16]}…, the manifest says {digest[:16]}…)")
    present = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}
    for name in sorted(present - set(listed) - {MANIFEST}):
        problems.append(f"unlisted file: {name} (not in the manifest)")
    return problems


def _items(folder: Path, manifest: dict) -> tuple[list[ResultRecord] | None, list[str]]:
    """The results with their transcripts back in place, and every item that differs from the manifest."""
    try:
        lines = (folder / RESULTS).read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
    except (OSError, ValueError) as error:
        return None, [f"{RESULTS}: unreadable ({error})"]
    problems, expected, seen = [], manifest.get("items", {}), set()
    for line, record in zip([line for line in lines if line.strip()], records):
        item = ResultRecord.from_line(dict(record)).item_id
        seen.add(item)
        entry = expected.get(item)
        if entry is None:
            problems.append(f"added item: {item} (not in the manifest)")
        elif hashlib.sha256(line.encode()).hexdigest() != entry["sha256"]:
            if record.get("outcome") != entry["outcome"]:
                problems.append(f"edited outcome: {item} is {record.get('outcome')!r} in {RESULTS}, "
                                f"{entry['outcome']!r} in the manifest")
            else:
                problems.append(f"edited item: {item} (its line differs from the manifest's digest)")
        name = record.get("transcript_file")
        if name:
            path = folder / name
            if path.is_file():
                record["transcript"] = json.loads(path.read_text(encoding="utf-8"))
                del record["transcript_file"]
            else:
                problems.append(f"missing transcript: {name} of {item}")
    for item in sorted(set(expected) - seen):
        problems.append(f"removed item: {item} ({expected[item]['outcome']} in the manifest, absent from {RESULTS})")
    return [ResultRecord.from_line(record) for record in records], problems


def _grading_inputs(folder: Path, certificate: dict) -> list[str]:
    """The levels and the suites the bundle was graded against are the ones this harness ships."""
    problems = []
    grading = _grading(folder)
    if grading.get("levels_bundled") and (folder / LEVELS).is_file() \
            and sha256(folder / LEVELS) != sha256(levels_module.default_levels_path()):
        problems.append(f"changed levels file: {LEVELS} is not the levels file harness {harness()['version']} ships")
    shipped = resources.suites()
    for name, digest in sorted(certificate.get("suites", {}).get("files", {}).items()):
        if not name.startswith("suites/"):
            continue  # a harness module standing for a suite (the exactly-once tier's checks): the version covers it
        path = shipped / name.split("/", 1)[1]
        if not path.is_file():
            problems.append(f"suite not shipped: {name} is not among this harness's suites")
        elif sha256(path) != digest:
            problems.append(f"changed suite: {name} differs from the one this harness ships")
    return problems


def _grading(folder: Path) -> dict:
    try:
        return json.loads((folder / GRADING).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _regrade(folder: Path, certificate: dict, records: list[ResultRecord]) -> list[str]:
    """Grade the results again with the bundle's inputs; every level must come out as the certificate says."""
    grading = _grading(folder)
    problems = []
    try:
        level_list = levels_module.load_levels(folder / LEVELS)
        claims = claims_module.load(folder / CAPABILITIES) if grading.get("capabilities") else None
        waivers = known_failures.load([folder / name for name in grading.get("known_failures", [])])
    except (OSError, ValueError) as error:
        return [f"cannot re-grade: {error}"]
    waivers += list(claims.deviations if claims else ())
    found = certificate.get("fingerprint")
    features = None if found is None else found.get("finalized_features", {})
    grades = levels_module.grade(level_list, records, features, waivers,
                                 known_suites=grading.get("known_suites", []), claims=claims)
    stated = {level["id"]: level for level in certificate.get("levels", [])}
    for grade in grades:
        said = stated.pop(grade.level.id, None)
        if said is None:
            problems.append(f"level does not follow: {grade.level.name} is graded {grade.label!r} "
                            "but the certificate does not list it")
            continue
        for field, value in (("status", grade.status), ("label", grade.label), ("counted", grade.counted),
                             ("passed", grade.passed)):
            if said.get(field) != value:
                problems.append(f"level does not follow: {grade.level.name} {field} is {said.get(field)!r} in "
                                f"certification.json; the results give {value!r}")
    for level_id in stated:
        problems.append(f"level does not follow: {level_id} is in the certificate but not in {LEVELS}")
    if claims is not None:
        said = {(row["claim"], row["status"]) for row in (certificate.get("claims") or {}).get("checks", [])}
        found_now = {(row["claim"], row["status"]) for row in claims_module.check(claims, records, found)}
        for claim, status in sorted(said - found_now):
            problems.append(f"claim check does not follow: {claim} is {status!r} in certification.json, "
                            "not what the results give")
        for claim, status in sorted(found_now - said):
            problems.append(f"claim check does not follow: the results make {claim} {status!r}, "
                            "which certification.json does not say")
    if not problems and certificate.get("results", {}).get("digest") != results_digest(records):
        problems.append("results digest: certification.json's digest is not that of the bundled results")
    return problems
