"""A small history of results made by hand for the interop site's tests: every figure its pages show can be
worked out from here.

Target alpha runs three times (version 1.0 twice, then 2.0 with a new harness), beta once. Item c1@v0 of
alpha passes, fails (the departure, with its transcript: the step before it and the departing step), then
passes again; c2@v0 fails on 2.0 only; beta does not advertise c1@v1.
"""

from __future__ import annotations

from pathlib import Path

from report_records import record, write_jsonl

RUN_1, RUN_2, RUN_3, RUN_BETA = ("20261120T010000Z-aaaaaa", "20261121T010000Z-bbbbbb", "20261122T010000Z-cccccc",
                                 "20261122T020000Z-dddddd")


def exchange(step: str, api: str, error_code: int) -> dict:
    return {"connection": "node-1", "api": api, "api_key": 26, "version": 3, "correlation_id": 7, "step": step,
            "sent_at": 1795400000.0, "received_at": 1795400000.01, "elapsed_ms": 10.0, "request": {"marker": step},
            "response": {"error_code": error_code}, "request_bytes": "AAAA", "response_bytes": "AAAA", "problem": None}


def run(run_id: str, target: str, version: str, harness: str, day: str, outcomes: dict) -> list[dict]:
    rows = []
    for position, ((case, api_version), outcome) in enumerate(sorted(outcomes.items())):
        extra = {}
        if outcome == "failed" and case == "c1":
            extra = {"step_label": "2 send EndTxn", "expected": {"error_code": "INVALID_TXN_STATE"},
                     "actual": {"error_code": 0}, "cites": "KIP-98: the coordinator MUST refuse it",
                     "transcript": [exchange("1 InitProducerId", "InitProducerId", 0),
                                    exchange("2 send EndTxn", "EndTxn", 0)]}
        rows.append(record(case, api_version, outcome, target=target, run_id=run_id, target_version=version,
                           harness_version=harness, recorded_at=f"{day}T01:00:{position:02d}Z",
                           requirement="SHOULD" if case == "c3" else "MUST", **extra))
    return rows


def write_history(folder: Path) -> Path:
    passing = {("c1", 0): "passed", ("c1", 1): "passed", ("c2", 0): "passed", ("c3", 0): "passed"}
    rows = run(RUN_1, "alpha", "1.0", "h1", "2026-11-20", passing)
    rows += run(RUN_2, "alpha", "1.0", "h1", "2026-11-21", {**passing, ("c1", 0): "failed"})
    rows += run(RUN_3, "alpha", "2.0", "h2", "2026-11-22", {**passing, ("c2", 0): "failed"})
    rows += run(RUN_BETA, "beta", "1.0", "h2", "2026-11-22", {**passing, ("c1", 1): "unsupported"})
    return write_jsonl(folder / "results.jsonl", rows)
