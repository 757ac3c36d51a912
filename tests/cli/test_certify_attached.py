"""certify on an attached broker (``PRODUCT:VERSION@HOST:PORT``): the companions the harness can give it without a
hand on its nodes, end to end on a provisioned Kafka node the test attaches to: the wire faults through the fault
proxy in front of it, and the exactly-once tier's real clients through that proxy, its faults the proxy's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import certify_complete

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.kafka
@pytest.mark.broker
def test_certify_on_an_attached_broker_runs_the_fault_proxy_and_the_exactly_once_tier_beside_it(tmp_path):
    from conformance.targets.kafka.broker import KafkaTarget, kafka_target_kind

    reason = kafka_target_kind().availability()
    if reason:
        pytest.skip(reason)
    broker = KafkaTarget("kafka")
    broker.start()
    try:
        spec = f"acme:1.0@{broker.bootstrap}"
        out = tmp_path / "cert"
        done = subprocess.run([sys.executable, "-m", "conformance", "certify", "--target", spec, "-o", str(out),
                               str(ROOT / "suites" / "faults" / "proxy-kip98.yaml")],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert f"certify: starting proxy on proxy+{spec}" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
        graded = [json.loads(line) for line in next(out.glob("*/results.jsonl")).read_text().splitlines()]
        proxied = [row for row in graded if row["suite"] == "faults.proxy-kip98"]
        # the wire-fault cases ran through the proxy in front of the attached broker, graded as the broker's own
        assert proxied and all(row["target"] == spec and row["ran_on"] == f"proxy+{spec}" for row in proxied)
        assert {row["outcome"] for row in proxied} <= {"passed", "unsupported"}, \
            [(row["case"], row["api_version"], row["outcome"], row["message"][:200]) for row in proxied]
        facts = json.loads(next(out.glob("*/certification.json")).read_text())
        assert [companion["name"] for companion in facts["companions"]] == ["proxy"]

        # the exactly-once tier as certify plans it for the attached broker (no --node-control): through the proxy
        [tier] = [companion for companion in certify_complete.plan(spec, tmp_path, "run-t", semantic_seconds=6)
                  if companion.name == "exactly-once (classic group)"]
        assert tier.spec == f"proxy+{spec}"
        command = [*tier.command, "--fault-interval", "1.5", "--seed", "11"]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
        rows = [json.loads(line) for line in tier.results.read_text().splitlines()]
        assert rows and all(row["outcome"] == "passed" for row in rows), done.stdout[-3000:]
        assert all(row["suite"] == "semantic.exactly-once" and row["target"] == f"proxy+{spec}" for row in rows)
        applied = done.stdout.split("faults ", 1)[1].split(" applied", 1)[0]
        assert int(applied) >= 1, done.stdout[-2000:]  # the proxy's faults, not a run without any
    finally:
        broker.stop()
