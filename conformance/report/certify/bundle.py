"""A certification folder as a bundle anyone can verify offline: the evidence, what it was graded against, digests.

Beside ``index.html``, ``certification.json`` and the badges, the folder holds

- ``results.jsonl``: the graded items (the last record of each), each transcript moved to
  ``transcripts/<n>.json`` and named by the item's ``transcript_file``;
- ``levels.yaml``: the levels file it was graded against; ``capabilities.yaml`` and ``known-failures-<n>.yaml``
  when the certification had them;
- ``grading.json``: the other inputs of the grade (the suite ids that existed, which optional files were given);
- ``manifest.json``: the sha256 of every file above and of each item (its id, outcome and digest), with the
  harness version that made the bundle. The manifest's own digest is what a register publishes;
- ``signature.json``: the signer's Ed25519 signature of the manifest (:mod:`.signing`), so of every file.

The suites themselves are not copied: ``certification.json`` carries the digest of every suite file, and the
harness version that ships them. :func:`verify` checks the signature, re-grades the bundle with this harness and
names every difference: a file edited or missing, an item edited or removed, another harness version, suites or
levels that are not the ones that version ships, a level that does not follow from the results. Nothing derived is
taken on trust: the page, the badges and every derived part of ``certification.json`` are made again from the
results and compared byte for byte, and every recorded exchange is judged again from its bytes (:mod:`.rejudge`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import resources
from ...results.record import ResultRecord
from .. import known_failures
from ..itemref import label, latest
from . import claims as claims_module
from . import levels as levels_module
from . import consistency, page, signing, svg
from .certificate import build, harness, results_digest
from .needs import CompanionFacts, add_needs

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
LEVELS = "levels.yaml"
CAPABILITIES = "capabilities.yaml"
GRADING = "grading.json"
VERIFIED = "verified"
UNLISTED = {MANIFEST, signing.SIGNATURE}  # the manifest cannot list itself, nor the signature of itself


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _line(record: dict) -> str:
    return json.dumps(record, sort_keys=True, default=str)


def write(folder: Path, records: list[ResultRecord], *, levels_path: str | Path | None, claims_path: str | Path | None,
          known_failure_paths: Sequence[str] = (), known_suites: Sequence[str] = (), node_control: bool = False,
          key=None) -> Path:
    """Add the evidence, the grading inputs and the manifest to a certification folder, and sign the manifest with
    ``key`` (an Ed25519 private key) when given; returns the manifest."""
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
        "known_suites": sorted(known_suites), "node_control": node_control}, indent=1) + "\n", encoding="utf-8")
    files = sorted(name for name in _present(folder) if name not in UNLISTED)
    manifest = {
        "format": 1,
        "harness": harness(),
        "files": {name: sha256(folder / name) for name in files},
        "items": {label(item): {"outcome": item.outcome, "sha256": hashlib.sha256(line.encode()).hexdigest()}
                  for item, line in zip(items, lines)},
    }
    path = folder / MANIFEST
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if key is not None:
        signing.sign(folder, path, key)
    return path


def _present(folder: Path) -> set[str]:
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}


def with_transcripts(path: str | Path, records: list[ResultRecord]) -> list[ResultRecord]:
    """Records read from ``path``, a bundle's results file among them: each ``transcript_file`` put back in place
    (a file beside it), so the bundle's results certify again as the results they were."""
    restored = []
    for record in records:
        line = record.evidence()
        name = line.get("transcript_file")
        transcript = Path(path).parent / str(name)
        if name and transcript.is_file():
            line = {key: value for key, value in line.items() if key != "transcript_file"}
            line["transcript"] = json.loads(transcript.read_text(encoding="utf-8"))
            record = ResultRecord.from_line(line)
        restored.append(record)
    return restored


def manifest_digest(folder: Path) -> str:
    """The digest a register publishes: it pins every file of the bundle through the manifest."""
    return sha256(Path(folder) / MANIFEST)


# ------------------------------------------------------------------------------ verifying
@dataclass
class Verification:
    """What verifying one bundle found: every difference, and who signed it (when the signature holds)."""

    folder: Path
    problems: list[str] = field(default_factory=list)
    signer: str | None = None  # the fingerprint of the key whose signature of the manifest holds
    trusted: bool = False  # that key is one the reader trusts
    notes: list[str] = field(default_factory=list)  # what was checked, for the reader (never a difference)

    @property
    def verified(self) -> bool:
        """No difference, and signed by a trusted key."""
        return not self.problems and self.signer is not None and self.trusted

    @property
    def signed_by(self) -> str:
        if self.signer is None:
            return "not signed"
        return f"signed by {self.signer}" + ("" if self.trusted else ", not a trusted key")


def verify(folder: Path, trusted: Iterable[str] = (), rejudge: Callable[[list], Any] | None = None) -> Verification:
    """Every difference between the bundle and what it claims, and who signed it; ``trusted``: the fingerprints of
    the keys the reader trusts (:func:`.signing.trusted_fingerprint`); ``rejudge``: the runner's judge of recorded
    exchanges (:func:`conformance.runner.rejudge.rejudge`, handed in by the command: reports do not import the
    runner), whose problems and summary join the verification."""
    folder = Path(folder)
    found = Verification(folder)
    if not (folder / MANIFEST).is_file():
        found.problems.append(f"{folder}: no {MANIFEST}: not a certification bundle (made before bundles, or not "
                              "one at all)")
        return found
    signature = signing.check(folder, MANIFEST)
    if signature.problem:
        found.problems.append(signature.problem)
    found.signer, found.trusted = signature.fingerprint, signature.fingerprint in set(trusted)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        certificate = json.loads((folder / "certification.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        found.problems.append(f"{folder}: cannot read the bundle: {error}")
        return found
    named = (certificate.get("signer") or {}).get("fingerprint")
    if found.signer is not None and named != found.signer:
        found.problems.append(f"signer relabelled: certification.json (and so the page) names {named}, the "
                              f"signature is by {found.signer}")
    found.problems += file_problems(folder, manifest)
    records, item_problems = _items(folder, manifest)
    found.problems += item_problems
    made, here = certificate.get("harness", {}), harness()
    if made.get("version") != here["version"] or manifest.get("harness", {}).get("version") != made.get("version"):
        found.problems.append(f"another harness version: the bundle was graded by {made.get('name')} "
                              f"{made.get('version')} (manifest: {manifest.get('harness', {}).get('version')}); "
                              f"this is {here['name']} {here['version']}: verify it with that version")
        return found  # another version grades by its own rules: nothing more to compare here
    found.problems += _grading_inputs(folder, certificate)
    if records is not None:
        found.problems += consistency.check(certificate, records)
        found.problems += _regrade(folder, certificate, records)
        if rejudge is None:
            found.notes.append("verdicts not judged again from the bytes (no judge was given)")
        else:
            judged = rejudge(records)
            found.problems += judged.problems
            found.notes.append(judged.summary())
    if found.problems and made.get("commit") and here.get("commit") and made["commit"] != here["commit"]:
        # a changed grader makes other pages and grades: said first, the differences it may explain after it
        found.problems.insert(0, f"another harness commit: the bundle was graded by {made.get('name')} "
                                 f"{made['version']} at commit {made['commit']}; this checkout is at {here['commit']}: "
                                 "verify it there before reading the differences below as edits")
    return found


def file_problems(folder: Path, manifest: dict) -> list[str]:
    """Every file that differs from the manifest's digest, is missing from the folder or is not listed."""
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
    for name in sorted(_present(folder) - set(listed) - UNLISTED):
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


def grade_again(folder: Path, certificate: dict, records: list[ResultRecord], *, fingerprint: dict | None = None,
                flaky: Sequence[str] = ()) -> tuple[list, Any]:
    """The levels graded on ``records`` with the bundle's inputs (levels file, claims, waivers, suites, companions),
    and its claims; ``fingerprint``: the target's (default: the bundle's); ``flaky``: items whose outcome changed
    between runs (their levels are unstable). OSError or ValueError when an input cannot be read."""
    grading = _grading(folder)
    level_list = levels_module.load_levels(folder / LEVELS)
    claims = claims_module.load(folder / CAPABILITIES) if grading.get("capabilities") else None
    waivers = known_failures.load([folder / name for name in grading.get("known_failures", [])])
    waivers += list(claims.deviations if claims else ())
    found = certificate.get("fingerprint") if fingerprint is None else fingerprint
    features = None if found is None else found.get("finalized_features", {})
    grades = levels_module.grade(level_list, records, features, waivers,
                                 known_suites=grading.get("known_suites", []), claims=claims, flaky=flaky)
    add_needs(grades, [CompanionFacts.of(facts) for facts in certificate.get("companions") or ()],
              node_control=bool(grading.get("node_control")))
    return grades, claims


def _regrade(folder: Path, certificate: dict, records: list[ResultRecord]) -> list[str]:
    """Grade the results again with the bundle's inputs; every level must come out as the certificate says."""
    problems = []
    try:
        grades, claims = grade_again(folder, certificate, records)
    except (OSError, ValueError) as error:
        return [f"cannot re-grade: {error}"]
    found = certificate.get("fingerprint")
    stated = {level["id"]: level for level in certificate.get("levels", [])}
    for grade in grades:
        said = stated.pop(grade.level.id, None)
        if said is None:
            problems.append(f"level does not follow: {grade.level.name} is graded {grade.label!r} "
                            "but the certificate does not list it")
            continue
        for name, value in (("status", grade.status), ("label", grade.label), ("counted", grade.counted),
                             ("passed", grade.passed)):
            if said.get(name) != value:
                problems.append(f"level does not follow: {grade.level.name} {name} is {said.get(name)!r} in "
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
    if not problems:  # the rest is derived from the same grades: named once, where they first differ
        problems += _derived(folder, certificate, grades, records, claims)
    return problems


# What certification.json holds that is not derived from the results: the facts of the run, checked elsewhere
# (the harness and the suites against this harness, the signer against the signature) or the run's own.
NOT_DERIVED = ("generated_at", "harness", "suites", "companions", "main_run", "signer")


def _derived(folder: Path, certificate: dict, grades, records: list[ResultRecord], claims) -> list[str]:
    """certification.json's derived parts, the page and the badges, made again from the results: byte for byte."""
    problems = []
    try:
        again = build(certificate["target"], records, grades, fingerprint=certificate.get("fingerprint"),
                      identity=certificate.get("identity") or {}, sources=certificate["results"].get("sources", []),
                      levels_file=certificate.get("levels_file", ""), claims=claims)
    except (KeyError, TypeError, ValueError) as error:
        return [f"cannot make certification.json again: {type(error).__name__}: {error}"]
    if claims is not None:
        again["claims"]["file"] = (certificate.get("claims") or {}).get("file")  # the name the vendor gave it
    again = json.loads(json.dumps(again, default=str))
    for key in sorted(set(again) | set(certificate)):
        if key not in NOT_DERIVED and again.get(key) != certificate.get(key):
            problems.append(f"derived field does not follow: certification.json's {key!r} is not what the results "
                            "give")
    items = list(latest(records).values())
    if _text(folder / "index.html") != page.render(certificate, grades, items):
        problems.append("edited page: index.html is not the page made from certification.json and the results")
    for grade in grades:
        name = f"badges/{grade.level.id}.svg"
        if _text(folder / name) != svg.badge(grade.level.name, grade.label) + "\n":
            problems.append(f"edited badge: {name} is not the badge of {grade.level.name} {grade.label!r}")
    drawn = {f"badges/{grade.level.id}.svg" for grade in grades}
    for name in sorted(name for name in _present(folder) if name.startswith("badges/") and name not in drawn):
        problems.append(f"edited badge: {name} is the badge of no level")
    return problems


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
