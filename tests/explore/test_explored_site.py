"""The interop site shows an explored departure beside the suites' ones, its rerun command naming the case
exploration wrote."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

pytest.importorskip("pyspark")

from conformance.cli import main  # noqa: E402

pytestmark = [pytest.mark.broker, pytest.mark.spark]  # starts Spark's JVM

RUN = "20261128T101433Z-4c393a"
COMMON = {"schema_version": 4, "run_id": RUN, "target": "rdkafka-mock", "target_version": "librdkafka 2.16.0",
          "target_name": None, "kip": "KIP-98", "api": "Produce", "api_version": 9, "requirement": "MUST",
          "draft": False, "duration_s": 1.0, "transcript": [], "strict": False, "harness_version": "0.1.0",
          "worker": "main", "recorded_at": "2026-11-28T10:15:14Z"}


def test_an_explored_departure_in_the_site_is_reproduced_by_its_case(tmp_path):
    case = tmp_path / "explore.rdkafka-mock.produce-sequence.14ba5a5b.yaml"
    explored = {**COMMON, "suite": "explore", "case": "produce.sequence", "title": "a gap is refused",
                "outcome": "failed", "verdict": "failed", "cites": "KIP-98: The broker will reject a produce request",
                "tags": ["explored"], "message": "Produce v9 producer1 t1-1 seq=gap was accepted", "step": 9,
                "step_label": "Produce v9 producer1 t1-1 seq=gap x2 snappy", "step_role": "under_test",
                "step_api": "Produce", "expected": {"error_code": {"ne": "NONE"}}, "actual": {"error": 0},
                "path": "conformance/explore/model.py", "nodeid": "explore::produce.sequence[rdkafka-mock]",
                "artifacts": {"case": str(case), "history": str(tmp_path / "history.json")}}
    suites = {**COMMON, "suite": "kip98.idempotence", "case": "gap", "title": "a gap", "outcome": "failed",
              "verdict": "failed", "cites": "KIP-98", "tags": [], "message": "accepted", "step": 2,
              "step_label": "2 produce", "step_role": "under_test", "step_api": "Produce", "expected": {},
              "actual": {}, "path": "suites/kip98/idempotence.yaml",
              "nodeid": "suites/kip98/idempotence.yaml::gap[rdkafka-mock-v9]",
              "artifacts": {}}
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(row) + "\n" for row in (suites, explored)))
    out = tmp_path / "site"
    assert main(["analyze", "site", str(results), "--out", str(out)]) == 0
    data = json.loads(unescape(re.search(r"data-site='([^']*)'", (out / "matrix.html").read_text()).group(1)))
    commands = sorted(entry["reproduce"] for entry in data["evidence"].values())
    # a bundled suite's item by its id alone (a run finds the bundled suites by itself); the explored case by its file
    assert commands == sorted([f"conformance run --target rdkafka-mock {case}",
                               "conformance run --target rdkafka-mock --item kip98.idempotence::gap@v9"])
