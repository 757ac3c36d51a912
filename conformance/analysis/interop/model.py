"""The facts as the pages hold them: compact, plain JSON values the pages' script reads and draws.

Columns are a target at one version (its newest run of each item). A matrix row is a case; its cell in a
column lists the case's API versions as ``[version, outcome index, evidence key or null]``, so a page of
1,300 items on twelve columns weighs tens of kilobytes, not the items table's megabytes.
"""

from __future__ import annotations

from collections import Counter

from ... import ledger
from ...results.ids import named_target
from ..outcomes import CONFORMANCE_LEVELS, NO_VERDICT, OUTCOMES

COLOURS = {"passed": "#2e7d32", "failed": "#c62828", "differs": "#1565c0", "blocked": "#ef6c00", "error": "#6a1b9a",
           "unsupported": "#9e9e9e", "skipped": "#cfd8dc"}
CHANGE_KINDS = ["regression", "improvement", "changed", "new", "missing"]


def _when(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else ""


def columns(cells: list) -> list[dict]:
    """One column per target and version, each target's versions oldest first."""
    found: dict[tuple, dict] = {}
    for cell in cells:
        column = found.setdefault((cell.target, cell.target_version), {
            "target": cell.target, "version": cell.target_version, "harness": set(), "runs": set(), "started": None,
            "name": cell.target_name})
        column["harness"].add(cell.harness_version or "")
        column["runs"].add(cell.run_id)
        if cell.run_started is not None and (column["started"] is None or cell.run_started > column["started"]):
            column["started"] = cell.run_started
    ordered = sorted(found.values(), key=lambda column: (column["target"], column["started"] or 0, column["version"]))
    return [{"target": column["target"], "version": column["version"],
             "label": named_target(column["target"], column["version"], column["name"])
             or column["target"] + (f" {column['version']}" if column["version"] else ""),
             "harness": ", ".join(sorted(name or "unknown" for name in column["harness"])),
             "runs": sorted(column["runs"]), "newest": _when(column["started"])} for column in ordered]


def matrix(cells: list, column_list: list[dict], evidence: dict) -> dict:
    index = {(column["target"], column["version"]): position for position, column in enumerate(column_list)}
    cases: dict[tuple, dict] = {}
    for cell in cells:
        case = cases.setdefault((cell.kip or "", cell.suite, cell.case), {
            "kip": cell.kip or "", "suite": cell.suite, "case": cell.case, "api": cell.api or "",
            "title": cell.title or "", "requirements": Counter(), "cells": [None] * len(column_list)})
        case["requirements"][cell.requirement or ""] += 1
        slot = index[(cell.target, cell.target_version)]
        key = f"{cell.run_id}|{cell.target}|{cell.item}"
        entry = [cell.api_version, OUTCOMES.index(cell.outcome) if cell.outcome in OUTCOMES else len(OUTCOMES),
                 key if key in evidence else None]
        if cell.pcap:  # the side-by-side page offers the wire diff where both sides captured the item
            entry.append(cell.pcap)
        case["cells"][slot] = [*(case["cells"][slot] or []), entry]
    rows = []
    for case_key in sorted(cases):
        case = cases.pop(case_key)
        case["requirement"] = case.pop("requirements").most_common(1)[0][0]
        for slot in case["cells"]:
            if slot:
                slot.sort(key=lambda entry: -1 if entry[0] is None else entry[0])
        rows.append(case)
    # Departures share few messages (a target that cannot start says so for every item): each is shipped once.
    messages: dict[str, int] = {}
    shared = {key: {**found, "message": messages.setdefault(found["message"], len(messages))}
              for key, found in evidence.items()}
    return {"outcomes": OUTCOMES + ["other"], "colours": [COLOURS.get(name, "#000000") for name in OUTCOMES]
            + ["#000000"], "columns": column_list, "cases": rows, "evidence": shared, "messages": list(messages)}


def scores(cells: list, column_list: list[dict], grades: dict) -> list[dict]:
    """Per column: the share of MUST items passed per KIP (unsupported and skipped items did not test the
    target, draft cases never count), and the certification levels as graded."""
    per_column: dict[tuple, dict[str, Counter]] = {}
    for cell in cells:
        if cell.draft or cell.requirement not in CONFORMANCE_LEVELS or cell.outcome in NO_VERDICT:
            continue
        counts = per_column.setdefault((cell.target, cell.target_version), {}).setdefault(cell.kip or "", Counter())
        counts[f"{cell.requirement}_judged"] += 1
        counts[f"{cell.requirement}_passed"] += cell.outcome == "passed"
    found = []
    for column in column_list:
        kips = per_column.get((column["target"], column["version"]), {})
        found.append({"column": column["label"], "harness": column["harness"],
                      "levels": grades.get((column["target"], column["version"]), []),
                      "kips": [{"kip": kip, "judged": counts["MUST_judged"], "passed": counts["MUST_passed"],
                                "share": round(counts["MUST_passed"] / counts["MUST_judged"], 4)
                                if counts["MUST_judged"] else None} for kip, counts in sorted(kips.items())]})
    return found


def history(runs: list, changes: list, changed_items: list, flaky: list) -> list[dict]:
    """Per target: every run's counts and changes, marking where the broker's version or the harness's
    changed from the run before; the newest transitions' items; the flaky list."""
    by_run: dict[tuple, Counter] = {}
    for row in changes:
        by_run.setdefault((row.target, row.run_id), Counter())[row.change] = row["count"]
    targets: dict[str, dict] = {}
    for row in runs:
        target = targets.setdefault(row.target, {"target": row.target, "runs": [], "transitions": [], "flaky": []})
        previous = target["runs"][-1] if target["runs"] else None
        target["runs"].append({
            "run": row.run_id, "started": _when(row.run_started), "version": row.target_version or "",
            "harness": row.harness_version or "", "counts": [row[name] for name in OUTCOMES], "total": row.total,
            "broker_changed": bool(previous and previous["version"] != (row.target_version or "")),
            "harness_changed": bool(previous and previous["harness"] != (row.harness_version or "")),
            "changes": {kind: by_run.get((row.target, row.run_id), Counter())[kind] for kind in CHANGE_KINDS}})
    transitions: dict[tuple, dict] = {}
    for row in changed_items:
        transition = transitions.setdefault((row.target, row.run_id), {
            "from": row.previous_run, "to": row.run_id, "items": []})
        transition["items"].append([row.item, row.previous_outcome, row.outcome, row.change])
    for (target, _), transition in sorted(transitions.items(), key=lambda pair: pair[0][1], reverse=True):
        if target in targets:
            targets[target]["transitions"].append(transition)
    for row in flaky:
        if row.target in targets:
            targets[row.target]["flaky"].append({
                "item": row.item, "version": row.target_version or "", "harness": row.harness_version or "",
                "runs": row.runs, "flips": row.flips, "flip_rate": round(row.flips / max(row.runs - 1, 1), 4),
                "flaky_rate": row.flaky_rate})
    return [targets[name] for name in sorted(targets)]


# Outcomes a release's row lists case by case: departures of the step under test, differences from Kafka
# (IMPLEMENTATION) and errors; a known Kafka bug of the ledger may be behind any of them.
RELEASE_DEPARTURES = ledger.DEPARTURES


def releases(cells: list, column_list: list[dict], evidence: dict) -> dict:
    """Apache Kafka releases × KIP, and × known-bugs ledger entry (:mod:`conformance.ledger`).

    A column is a provisioned Kafka release (``kafka:3.5.2``, ``kafka``: its version); per KIP a cell counts
    the items passed and lists each departing case with its versions, its evidence key (the matrix page
    opens it) and the ledger's bug behind it. Per ledger entry with cases, a cell says whether the release
    showed the bug (a departure of one of its cases), passed its cases, or did not run them."""
    kafka = [column for column in column_list if ledger.is_apache_kafka(column["target"])
             and ledger.RELEASE.fullmatch(column["version"] or "")]
    kafka.sort(key=lambda column: (ledger.release_key(column["version"]), column["target"]))
    index = {(column["target"], column["version"]): position for position, column in enumerate(kafka)}
    per_kip: dict[str, list[dict]] = {}
    ran: dict[tuple[str, int], set] = {}  # (suite::case, column) -> outcomes
    for cell in cells:
        slot = index.get((cell.target, cell.target_version))
        if slot is None:
            continue
        row = per_kip.setdefault(cell.kip or "", [{"passed": 0, "judged": 0, "departures": {}} for _ in kafka])
        found = row[slot]
        case = f"{cell.suite}::{cell.case}"
        ran.setdefault((case, slot), set()).add(cell.outcome)
        if cell.outcome not in ("unsupported", "skipped"):
            found["judged"] += 1
            found["passed"] += cell.outcome == "passed"
        if cell.outcome in RELEASE_DEPARTURES:
            key = f"{cell.run_id}|{cell.target}|{cell.item}"
            bug = ledger.known_bug({"outcome": cell.outcome, "suite": cell.suite, "case": cell.case,
                                    "target": cell.target, "target_version": cell.target_version})
            departure = found["departures"].setdefault(case, {"case": case, "outcome": cell.outcome, "versions": [],
                                                              "evidence": None, "bug": bug or "",
                                                              "jira": ledger.jira_link(bug) or ""})
            departure["versions"].append(cell.api_version)
            if departure["evidence"] is None and key in evidence:
                departure["evidence"] = key
    rows = []
    for kip in sorted(per_kip):
        cells_of_kip = []
        for found in per_kip[kip]:
            departures = sorted(found.pop("departures").values(), key=lambda item: item["case"])
            for departure in departures:
                departure["versions"] = ", ".join(f"v{version}" for version in sorted(
                    version for version in departure["versions"] if version is not None))
            cells_of_kip.append({**found, "departures": departures})
        rows.append({"kip": kip, "cells": cells_of_kip})
    bugs = []
    for entry in ledger.bugs():
        if not entry.cases:
            continue
        states = []
        for slot, column in enumerate(kafka):
            outcomes = set().union(*(ran.get((case, slot), set()) for case in entry.cases))
            if outcomes & set(RELEASE_DEPARTURES) and entry.affects(column["version"]):
                states.append("found")
            elif outcomes & set(RELEASE_DEPARTURES):
                states.append("departs")
            elif "passed" in outcomes:
                states.append("passes")
            else:
                states.append("not run")
        bugs.append({"key": entry.key, "jira": entry.link, "title": entry.title, "fixed_in": entry.fixed_in or "not fixed",
                     "affected": entry.affected_text(), "states": states})
    return {"columns": [{"label": column["label"], "release": column["version"]} for column in kafka],
            "rows": rows, "bugs": bugs}
