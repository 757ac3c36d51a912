"""Hand-made results records for the report tests (gate, JUnit, certification): made here, not from a run.

Only the fields the reports read are filled; the shape follows results schema version 3.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance.results.record import ResultRecord


def record(case: str, version: int | None, outcome: str, *, target: str = "kafka", suite: str = "kip98.transactions",
           api: str | None = "EndTxn", requirement: str = "MUST", kip: str = "KIP-98", run_id: str = "run-a",
           **extra) -> dict:
    binding = requirement == "MUST" or extra.get("strict")
    verdict = {"passed": "passed", "unsupported": "skipped", "skipped": "skipped", "error": "error",
               "differs": "xfailed"}.get(outcome, "failed" if binding else "xfailed")
    suite_file = suite.replace(".", "/", 1) + ".yaml"
    row = {
        "schema_version": 3, "run_id": run_id, "target": target, "target_version": "4.4.0", "suite": suite,
        "case": case, "title": f"{case} (hand-made)", "kip": kip, "api": api, "api_version": version,
        "outcome": outcome, "requirement": requirement, "cites": f"{kip}: a hand-made citation for {case}",
        "draft": False, "tags": [], "duration_s": 0.01, "message": "", "step": None, "step_label": None,
        "step_role": None, "step_api": None, "expected": None, "actual": None,
        "path": f"/checkout/suites/{suite_file}", "artifacts": {}, "transcript": [],
        "nodeid": f"suites/{suite_file}::{case}[{target}-v{version}]" if version is not None
        else f"suites/{suite_file}::{case}[{target}]",
        "verdict": verdict, "strict": False, "worker": "main", "recorded_at": "2026-11-24T00:00:00Z",
    }
    if outcome in ("failed", "differs", "blocked"):
        departed = outcome != "blocked"  # the step under test departed
        row.update(step=2, step_label="send EndTxn", step_role="under_test" if departed else "setup",
                   step_api=api if departed else "AddPartitionsToTxn", expected="INVALID_TXN_STATE",
                   actual="NONE", message=f"2 send EndTxn: expected INVALID_TXN_STATE, got NONE ({case})")
    if outcome == "error":
        row["message"] = "connection refused by 127.0.0.1:9092"
    row.update(extra)
    return row


def result_record(case: str, version: int | None, outcome: str, **options) -> ResultRecord:
    """:func:`record` read back as the store reads a line (:func:`conformance.results.store.read_records`)."""
    return ResultRecord.from_line(record(case, version, outcome, **options))


def write_jsonl(path: Path, records: list[dict | ResultRecord]) -> Path:
    """The records as a results file: a :class:`ResultRecord` is written as the line it was read from."""
    path.write_text("".join(json.dumps(row.evidence() if isinstance(row, ResultRecord) else row) + "\n"
                            for row in records), encoding="utf-8")
    return path


def crashed_run_records(*, lost: int = 1436, skipped: int = 232) -> list[dict]:
    """A run whose target died after one item: every item after it has the same message and no verdict, and the
    failover items were skipped for want of a way to stop a node (the certification page folds each into a row)."""
    from conformance.results.record import STOPPED_ANSWERING

    idempotence = {"suite": "kip98.idempotence", "api": "Produce"}
    rows = [record("dup", version, "passed", **idempotence) for version in range(3, 12)]
    rows.append(record("commit", 3, "failed", message=f"{STOPPED_ANSWERING}: the process exited (SIGABRT)"))
    rows += [record("commit", version, "failed") for version in (4, 5)]  # one departure at three versions
    down = ("not run: target 'kafka' stopped answering after kip98.transactions::commit@v3\n"
            "the process exited (SIGABRT)")
    rows += [record(f"lost-{number // 14}", number % 14, "error", message=down) for number in range(lost)]
    no_node = "target 'kafka' has no fault 'stop-node'"  # one node the harness provisioned: the runner's words
    rows += [record(f"failover-{number}", 2, "skipped", suite="cluster.failover", message=no_node)
             for number in range(skipped)]
    rows.append(record("draft-only", 2, "skipped", message="checks a draft KIP text; run with --conformance-drafts"))
    return rows
