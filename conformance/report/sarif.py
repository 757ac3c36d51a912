"""SARIF 2.1.0 from results records, for code scanning (GitHub's ``upload-sarif``): ``--sarif FILE``.

Rules:

- One rule per case (``suite/case``): its title, the sentence it cites, its requirement and KIP; the rule's
  default level follows the requirement (MUST an error, SHOULD and MAY a warning, IMPLEMENTATION a note).
- One result per departure, at the case's line in its suite file: a binding departure (what
  :func:`conformance.report.ci.ci_result` calls a failure) is an ``error``, a departure that does not bind a
  ``warning``, an IMPLEMENTATION case that differs from Kafka a ``note``. Items that passed, were skipped or
  unsupported have no result.
- A harness error or a binding blocked item is no departure of the step under test: it is a notification of the
  run's invocation, which is then not successful, so a gate does not take it for a clean run.
- A result's fingerprint is its item id and target, so an alert stays one alert from run to run; the category
  (``automationDetails``) names the targets, the run id follows it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..results.record import Requirement, ResultRecord
from ..suite.source import line_of, read_yaml
from .ci import CiState, ci_result
from .itemref import label, reproduce
from .sinks import FileOutput, OutputOption

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL = "kafka-conformance"
RULE_LEVELS = {Requirement.MUST.value: "error", Requirement.SHOULD.value: "warning",
               Requirement.MAY.value: "warning", Requirement.IMPLEMENTATION.value: "note"}
SOURCE_ROOT = "SRCROOT"


def sarif_log(records: list[ResultRecord], *, root: Path | None = None) -> dict[str, Any]:
    """The SARIF log of ``records`` (one run): suite paths under ``root`` (default: the working folder) are
    written relative to it."""
    root = (root or Path.cwd()).resolve()
    lines = CaseLines()
    rules: dict[str, dict[str, Any]] = {}
    indexes: dict[str, int] = {}
    results, notifications = [], []
    for record in records:
        ci = ci_result(record)
        if ci.state is CiState.ERROR:
            notifications.append({"level": "error", "message": {"text": f"{label(record)} on {record.target}: "
                                                                        f"{ci.type}: {ci.message}"}})
            continue
        if not ci.departed:
            continue
        rule_id = f"{record.suite}/{record.case}"
        if rule_id not in rules:
            rules[rule_id] = _rule(rule_id, record)
            indexes[rule_id] = len(indexes)
        results.append(_result(record, ci.state, indexes[rule_id], _location(record, lines, root)))
    targets = sorted({record.target for record in records})
    run: dict[str, Any] = {
        "tool": {"driver": {"name": TOOL, "version": records[0].harness_version if records else "",
                            "rules": list(rules.values())}},
        "automationDetails": {"id": f"{TOOL}/{'+'.join(targets) or 'none'}/{records[0].run_id if records else ''}"},
        "originalUriBaseIds": {SOURCE_ROOT: {"uri": root.as_uri() + "/"}},
        "invocations": [{"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}],
        "results": results,
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _rule(rule_id: str, record: ResultRecord) -> dict[str, Any]:
    return {"id": rule_id, "name": record.case, "shortDescription": {"text": record.title or record.case},
            "fullDescription": {"text": f"{record.requirement} ({record.kip or 'no KIP'}): {record.cites or '-'}"},
            "defaultConfiguration": {"level": RULE_LEVELS.get(record.requirement, "warning")},
            "properties": {"requirement": record.requirement, "kip": record.kip, "tags": list(record.tags or ())}}


def _result(record: ResultRecord, state: CiState, rule_index: int, location: dict | None) -> dict[str, Any]:
    level = "error" if state is CiState.FAILURE else "note" if record.outcome == "differs" else "warning"
    text = (f"{label(record)} on {record.target} {record.target_version or ''}".rstrip()
            + f": {record.outcome}: {ci_result(record).message}\nreproduce: {reproduce(record)}")
    result: dict[str, Any] = {
        "ruleId": f"{record.suite}/{record.case}", "ruleIndex": rule_index, "level": level, "message": {"text": text},
        "partialFingerprints": {"conformanceItem/v1": f"{label(record)}|{record.target}"},
        "properties": {name: getattr(record, name) for name in (
            "target", "target_version", "api", "api_version", "requirement", "outcome", "verdict", "known_bug")
            if getattr(record, name) not in (None, "")},
    }
    if location is not None:
        result["locations"] = [location]
    return result


def _location(record: ResultRecord, lines: CaseLines, root: Path) -> dict[str, Any] | None:
    if not record.path:
        return None  # the exactly-once tier's and exploration's checks have no suite file
    path = Path(record.path).resolve()
    try:
        artifact = {"uri": path.relative_to(root).as_posix(), "uriBaseId": SOURCE_ROOT}
    except ValueError:  # a suite outside the working folder (the bundled suites of an installed package)
        artifact = {"uri": path.as_uri()}
    location: dict[str, Any] = {"physicalLocation": {"artifactLocation": artifact}}
    line = lines.of(path, record.case)
    if line:
        location["physicalLocation"]["region"] = {"startLine": line}
    return location


class CaseLines:
    """The line of each case in its suite file, read once per file (the loader keeps lines, the record does not)."""

    def __init__(self) -> None:
        self._files: dict[Path, dict[str, int]] = {}

    def of(self, path: Path, case: str) -> int:
        """The line where ``case`` starts in the suite at ``path``; 0 when the file or the case is not there."""
        if path not in self._files:
            document, _ = read_yaml(path)
            cases = document.get("cases") if isinstance(document, dict) else None
            self._files[path] = {raw["id"]: line_of(document, ["cases", index]) for index, raw in
                                 enumerate(cases if isinstance(cases, list) else [])
                                 if isinstance(raw, dict) and isinstance(raw.get("id"), str)}
        return self._files[path].get(case, 0)


def write_sarif(records: list[ResultRecord], path: str | Path) -> int:
    """The SARIF log of ``records`` at ``path``; how many results (departures) it holds."""
    log = sarif_log(records)
    Path(path).write_text(json.dumps(log, indent=1, default=str) + "\n", encoding="utf-8")
    return len(log["runs"][0]["results"])


class SarifOutput(FileOutput):
    """``--sarif FILE``: the run's departures as SARIF 2.1.0, written when it ends."""

    name = "sarif"
    description = "SARIF 2.1.0 for code scanning: one result per departure, at its case's line"
    options = (OutputOption("--sarif", "also write SARIF 2.1.0 for code scanning (one result per departure, at "
                                       "its case's line in the suite)"),)
    write = staticmethod(write_sarif)
