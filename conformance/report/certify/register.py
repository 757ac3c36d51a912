"""The register: one static page of certification bundles, each verified before it is listed.

``conformance certify register BUNDLE... --trust KEY --out DIR`` verifies every bundle (:func:`.bundle.verify`),
copies those that pass into ``DIR/<bundle>/`` (so each entry's page and evidence travel with the register) and
writes ``DIR/index.html`` from ``register.html.j2``: product, version, the level badges (the grades its page
shows: verify made that page again from the same JSON), who signed it and whether the register trusts that key, the
date, the harness version, the manifest's sha256 and a link to each certification page. A bundle that does not
verify is not listed. A row shows each reproduction of its bundle (``certify reproduce``, given with
``--reproduction``): who reproduced it (the record's signer), on what, how many items agree, contradict it or are
flaky, and the levels it grades otherwise (unstable ones among them). Bundles of one product version are listed newest first; those whose grades differ are
flagged on each row, naming the other bundle and the levels they disagree on, as are two bundles of one run.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from ... import pages
from . import bundle, reproduction, svg

# What a register calls a target the harness provisions when no capabilities file names the product.
PRODUCTS = {"kafka": "Apache Kafka", "kafka-cluster": "Apache Kafka", "tansu": "Tansu",
            "rdkafka-mock": "librdkafka mock cluster"}


def entry(folder: Path, found: bundle.Verification | None = None) -> dict:
    """What the register shows of one verified bundle (``found``: what verifying it said of its signer)."""
    facts = json.loads((folder / "certification.json").read_text(encoding="utf-8"))
    identity, declared = facts.get("identity") or {}, (facts.get("claims") or {}).get("declared") or {}
    levels = facts.get("levels", [])
    kind = identity.get("kind") or ""
    return {
        "folder": folder.name,
        "product": declared.get("product") or PRODUCTS.get(kind) or kind or identity.get("target") or facts["target"],
        "version": declared.get("version") or identity.get("target_version") or "",
        "target": facts["target"],
        "date": facts.get("generated_at", ""),
        "harness": f"{facts['harness'].get('name')} {facts['harness'].get('version')}",
        "manifest": bundle.manifest_digest(folder),
        "reached": [level["name"] for level in levels if level["status"] == "reached"],
        "grades": {level["name"]: level["label"] for level in levels},
        "run_ids": list(facts.get("run_ids") or ()),
        "badges": [svg.badge_shape(level["name"], level["label"]) for level in levels],
        "signer": None if found is None else found.signer,
        "trusted": bool(found and found.trusted),
        "reproductions": [],
        "claims": None if "claims" not in facts else {"file": facts["claims"]["file"],
                                                       "false_claims": facts["claims"]["false_claims"]},
    }


def build(folders: list[Path], out: Path, trusted=(), rejudge=None,
          reproductions: Sequence[Path] = ()) -> tuple[Path, list[tuple[Path, list[str]]]]:
    """Verify each bundle, copy those that pass into ``out``, write ``out/index.html``; ``trusted``: the
    fingerprints of the keys the register trusts (a bundle signed by another key is listed, marked as such);
    ``reproductions``: records of ``certify reproduce``, each verified against the listed bundle it names and shown
    on its row. Returns the page and the bundles and records refused, each with its differences."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    entries, refused, listed, taken = [], [], {}, set[str]()
    for folder in map(Path, folders):
        found = bundle.verify(folder, trusted, rejudge)
        if found.problems:
            refused.append((folder, found.problems))
            continue
        # two bundles of one target certified in one second have one name: the second must not replace the first
        name = folder.name if folder.name not in taken else f"{folder.name}-{bundle.manifest_digest(folder)[:12]}"
        taken.add(name)
        copy = _copy(folder, out / name)
        entries.append(entry(copy, found))
        listed[bundle.manifest_digest(copy)] = (copy, entries[-1])
    for folder in map(Path, reproductions):
        checked = reproduction.verify(folder, trusted)
        named = str((checked.facts.get("bundle") or {}).get("manifest_sha256"))
        if not checked.problems and named not in listed:
            checked.problems.append(f"reproduces no bundle listed here (manifest sha256 {named})")
        if not checked.problems:
            checked.problems += reproduction.comparison_problems(folder, checked.facts, listed[named][0])
        if checked.problems:
            refused.append((folder, checked.problems))
            continue
        copy = _copy(folder, out / "reproductions" / folder.name)
        listed[named][1]["reproductions"].append(reproduced(checked, copy.relative_to(out).as_posix()))
    page = out / "index.html"
    page.write_text(render(entries), encoding="utf-8")
    return page, refused


def _copy(folder: Path, copy: Path) -> Path:
    """``folder`` copied to ``copy`` (replacing an older copy), so the register's evidence travels with it."""
    if copy.resolve() != folder.resolve():
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(folder, copy)
    return copy


def reproduced(checked: reproduction.Checked, link: str) -> dict:
    """What a row shows of one verified reproduction of its bundle."""
    made = checked.facts
    found = made.get("counts", {})
    who = made.get("identity") or {}
    return {"folder": link, "signer": checked.signer, "trusted": checked.trusted, "date": made.get("generated_at", ""),
            "target": made.get("target", ""), "version": who.get("target_version") or "",
            "compared": made.get("compared", 0), "agrees": found.get(reproduction.AGREES, 0),
            "contradicts": found.get(reproduction.CONTRADICTS, 0), "flaky": found.get(reproduction.FLAKY, 0),
            "not_reproduced": found.get(reproduction.NOT_REPRODUCED, 0), "runs": made.get("runs", 0),
            "unstable": list(made.get("unstable", [])),
            "levels": [f"{level['name']}: {level['reproduced']} (the bundle: {level['bundle']})"
                       for level in made.get("levels", []) if level.get("reproduced") != level.get("bundle")]}


def ordered(entries: list[dict]) -> list[dict]:
    """By product and version, the newest bundle of each first; each entry says whether it is the newest of its
    product version and which others of that version it contradicts (other grades) or repeats (the same run)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for found in entries:
        groups.setdefault((found["product"].lower(), found["version"]), []).append(found)
    listed = []
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda found: (found["date"], found["folder"]), reverse=True)
        for index, found in enumerate(group):
            found["newest"] = index == 0
            found["older_than"] = "" if index == 0 else group[0]["folder"]
            found["contradicts"] = [_contradiction(found, other) for other in group
                                    if other is not found and _differing(found, other)]
            found["same_run"] = [other["folder"] for other in group if other is not found
                                 and set(found["run_ids"]) & set(other["run_ids"])]
        listed += group
    return listed


def _differing(found: dict, other: dict) -> list[str]:
    return [name for name in found["grades"] if name in other["grades"]
            and found["grades"][name] != other["grades"][name]]


def _contradiction(found: dict, other: dict) -> str:
    return f"{other['folder']}: " + "; ".join(f"{name} {found['grades'][name]} here, {other['grades'][name]} there"
                                              for name in _differing(found, other))


def render(entries: list[dict]) -> str:
    """The register page of these entries (none: the page says how to add one)."""
    return pages.render("register.html.j2", entries=ordered(entries),
                        generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
