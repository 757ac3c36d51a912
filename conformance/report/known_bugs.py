"""The known-bugs ledger as a Markdown table, with the evidence of runs: per entry, the release its cases
failed on and the release they passed on (docs/generated/known-bugs.md).

The evidence is the results of ``conformance releases --known-bugs`` cut down to the ledger's cases
(:func:`evidence_lines`; kept in ``fixtures/known-bugs/evidence.jsonl`` by ``tools/pin_known_bugs.py``), so
the page is rebuilt from the committed ledger and evidence alone and a test can tell when it is stale.
"""

from __future__ import annotations

from collections import Counter

from .. import ledger
from ..results import case_id

EVIDENCE_FIELDS = ("run_id", "target", "target_version", "suite", "case", "api_version", "outcome", "known_bug",
                   "harness_version")
DEPARTED = ledger.DEPARTURES  # the outcomes an entry explains: its cases departed there


def evidence_lines(records: list[dict], entries: tuple[ledger.Bug, ...] | None = None) -> list[dict]:
    """The records of the ledger's cases on the releases each entry names (``verify``), slimmed to
    :data:`EVIDENCE_FIELDS`, the latest run of each case on each target only (a run of one entry's cases
    leaves another's evidence on the same target alone), in a stable order."""
    entries = ledger.bugs() if entries is None else entries
    wanted = {(case, bug.verify_target(role)) for bug in entries for case in bug.cases for role in bug.verify_roles()}
    latest: dict[tuple[str, str], str] = {}
    chosen = []
    for record in records:
        key = (case_id(record.get("suite"), record.get("case")), str(record.get("target")))
        if key in wanted:
            latest[key] = max(latest.get(key, ""), record.get("run_id") or "")
            chosen.append((key, record))
    kept = [{name: record.get(name) for name in EVIDENCE_FIELDS} for key, record in chosen
            if (record.get("run_id") or "") == latest[key]]
    return sorted(kept, key=lambda line: (ledger.release_key(line["target_version"]), line["target"], line["suite"],
                                          line["case"],
                                          -1 if line["api_version"] is None else line["api_version"]))


def verdicts(bug: ledger.Bug, evidence: list[dict]) -> dict[str, dict]:
    """``{"affected": {...}, "fixed": {...}}``: per verify release, the items of the entry's cases by outcome
    and whether every case departed (affected) or none did (fixed); empty where no run is in the evidence."""
    found: dict[str, dict] = {}
    if not bug.verify:
        return found
    for role in bug.verify_roles():
        release, target = bug.verify[role], bug.verify_target(role)
        rows = [line for line in evidence if line["target"] == target
                and case_id(line["suite"], line["case"]) in bug.cases]
        if not rows:
            continue
        outcomes = Counter(line["outcome"] for line in rows)
        departed_cases = {case_id(line["suite"], line["case"]) for line in rows if line["outcome"] in DEPARTED}
        ran_cases = {case_id(line["suite"], line["case"]) for line in rows}
        holds = departed_cases == ran_cases if role == "affected" else not departed_cases
        found[role] = {"release": release, "target": target, "outcomes": outcomes, "holds": holds,
                       "runs": sorted({line["run_id"] for line in rows})}
    return found


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _result(found: dict | None, role: str, bug: ledger.Bug | None = None) -> str:
    if role == "fixed" and bug is not None and not bug.fixed_in:  # nothing can pass: say how far it was checked
        newest = max((span.last for span in bug.affected), key=ledger.release_key)
        return f"not fixed as of {newest}"
    if not found:
        return "not run"
    counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(found["outcomes"].items()))
    verdict = ("fails" if found["holds"] else "DOES NOT FAIL") if role == "affected" else \
        ("passes" if found["holds"] else "DOES NOT PASS")
    behind = "" if found["target"] == f"kafka:{found['release']}" else f" as {found['target']}"
    return f"**{found['release']}**{behind} {verdict} ({counts})"


def _sources(sources: ledger.Sources) -> list[str]:
    """An entry's facts by how they are known: shown, inferred, not established."""
    shown = [("Established", sources.established), ("Inferred", sources.inferred),
             ("Not established", sources.unknown)]
    return [f"- **{name}:** " + " ".join(f"({number}) {_cell(fact)}" for number, fact in enumerate(facts, 1))
            for name, facts in shown if facts]


def known_bugs_markdown(evidence: list[dict], entries: tuple[ledger.Bug, ...] | None = None,
                        kept: tuple[ledger.KeptOut, ...] | None = None) -> str:
    """The page: how to read it, the ledger table, each entry's detail and sources, and the bugs kept out (the
    bundled ones when ``entries`` is the bundled ledger; given ``entries``, only those ``kept`` names)."""
    if entries is None:
        entries, kept = ledger.bugs(), ledger.kept_out() if kept is None else kept
    kept = kept or ()
    runs = sorted({line["run_id"] for line in evidence})
    harness = sorted({line.get("harness_version") or "?" for line in evidence})
    lines = ["# Known Apache Kafka bugs", "",
             "Generated by `python tools/build_docs.py` from the known-bugs ledger "
             "(`conformance/ledger/kafka-bugs.yaml`) and the evidence of `conformance releases --known-bugs` "
             f"(`fixtures/known-bugs/evidence.jsonl`: runs {', '.join(runs) or 'none'}; harness {', '.join(harness)}).",
             "",
             "One row per wire-visible transaction-protocol bug of an Apache Kafka release since 3.3. A departure on "
             "an affected release of a case named here is reported with the bug's key and the release that fixed it "
             "(results field `known_bug`, the console, findings, the certification page and the gate). *Failed on* "
             "and *passed on* are the entry's cases run on its last affected release and on the fixed one "
             "(every case departs on the first, none on the second); a bug no release has fixed passes nowhere.", "",
             "Each entry below says how its facts are known: *established* from Kafka's history (GIT: the fix "
             "commit and the tags that contain it, in a snapshot of apache/kafka that ends 2024-10-25), from a pull "
             "request's page (PR: title, author, opening date, merged or open; no merge date) or by a run of its "
             "cases here (RUN); *inferred* (a release from branch-cut dates, a cause from reading the code); or "
             "*not established*.", "",
             "| Bug | What went wrong | KIP | Affected releases | Fixed in | Cases | Failed on | Passed on |",
             "|---|---|---|---|---|---|---|---|"]
    counts: Counter[str] = Counter()
    for bug in entries:
        found = verdicts(bug, evidence)
        cases = ", ".join(f"`{case}`" for case in bug.cases) or "none: see below"
        lines.append(f"| [{bug.key}]({bug.link}) | {_cell(bug.title)} | {bug.kip or ''} | {bug.affected_text()} | "
                     f"{bug.fixed_in or 'not fixed'} | {cases} | "
                     f"{_result(found.get('affected'), 'affected') if bug.verify else '-'} | "
                     f"{_result(found.get('fixed'), 'fixed', bug) if bug.verify else '-'} |")
        counts["with cases" if bug.cases else "without"] += 1
        failing = bool(found.get("affected", {}).get("holds"))
        counts["verified"] += failing and bool(found.get("fixed", {}).get("holds"))
        counts["open"] += failing and not bug.fixed_in
    lines += ["", f"{len(entries)} entries: {counts['with cases']} with bundled cases, {counts['verified']} of them "
                  f"shown failing on an affected release and passing on the fixed one"
                  + (f", {counts['open']} shown failing on the newest affected release and fixed in none"
                     if counts["open"] else "") + f"; {counts['without']} without.",
              "", "## On the wire, and why some have no case", ""]
    for bug in entries:
        lines += [f"### {bug.key}", "", f"- **Affected:** {bug.affected_text()}; **fixed in:** "
                  f"{bug.fixed_in or 'no release yet'}", f"- **On the wire:** {_cell(bug.wire)}"]
        if bug.undetectable:
            lines.append(f"- **{'Why the cases do not show it' if bug.cases else 'Why no case'}:** "
                         f"{_cell(bug.undetectable)}")
        if bug.note:
            lines.append(f"- **Note:** {_cell(bug.note)}")
        if bug.links:
            lines.append("- **Fix:** " + ", ".join(f"<{link}>" for link in bug.links))
        lines += _sources(bug.sources) + [""]
    if kept:
        lines += ["## Checked and kept out", "",
                  "Bugs named by earlier versions of this ledger, by the bundled suites or by the fact check, that are "
                  "not entries, each with the reason.", ""]
        for left in kept:
            lines += [f"### [{left.key}]({left.link})", "", f"- **What:** {_cell(left.title)}",
                      f"- **Why kept out:** {_cell(left.reason)}", *_sources(left.sources), ""]
    return "\n".join(lines).rstrip() + "\n"

