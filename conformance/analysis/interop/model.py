"""The facts as the pages hold them: compact, plain JSON values the pages' script reads and draws.

Columns are a target at one version (its newest run of each item). A matrix row is a case; its cell in a
column lists the case's API versions as ``[version, outcome index, evidence key or null]``, so a page of
1,300 items on twelve columns weighs tens of kilobytes, not the items table's megabytes.
"""

from __future__ import annotations

from collections import Counter

from ...results.ids import named_target
from ..layout import CONFORMANCE_LEVELS, NO_VERDICT, OUTCOMES

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
    for key in sorted(cases):
        case = cases.pop(key)
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
            "changes": {kind: by_run.get((row.target, row.run_id), {}).get(kind, 0) for kind in CHANGE_KINDS}})
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
