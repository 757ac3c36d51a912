"""The authorization cases on a secured Kafka reached as ``HOST:PORT``, as a vendor's cluster would be: the
harness's admin from ``--client-config``, ``guest`` and ``nobody`` from ``--principal`` (the
``client-guest.properties`` and ``client-nobody.properties`` the provisioned target writes; ``nobody`` through
a YAML mapping file). No item skips for a missing principal, none fails, and every ACL a case created is
deleted after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.client.cluster import Cluster
from conformance.report.results import read_results
from conformance.targets.kafka import KafkaTarget

ROOT = Path(__file__).resolve().parents[1]
AUTHORIZATION = ROOT / "suites" / "kip98" / "authorization.yaml"
SECRET = "s3cr3t-GU3ST"

pytestmark = [pytest.mark.kafka, pytest.mark.broker]


def test_the_authorization_suite_runs_as_host_port_with_named_principals(tmp_path):
    target = KafkaTarget("kafka,security=SASL_SSL,sasl.mechanism=SCRAM-SHA-512")
    target.secured.passwords["guest"] = SECRET
    target.start()
    try:
        info = target.info()
        configs = info.extra["principal_configs"]
        assert sorted(configs) == ["guest", "nobody"] and SECRET in Path(configs["guest"]).read_text()
        (tmp_path / "principals.yaml").write_text(f"nobody: {configs['nobody']}\n")
        results = tmp_path / "results.jsonl"
        command = [sys.executable, "-m", "conformance.cli", "run", "--target", target.bootstrap, str(AUTHORIZATION),
                   "--client-config", info.extra["client_config"], "--principal", f"guest={configs['guest']}",
                   "--principal", str(tmp_path / "principals.yaml"), "--results", str(results), "--alluredir", "",
                   "--transcripts", "all"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=240,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
        printed = done.stdout + done.stderr
        assert done.returncode == 0, printed[-3000:]
        records = read_results(results)
        by_outcome: dict[str, list[str]] = {}
        for record in records:
            by_outcome.setdefault(record["outcome"], []).append(f"{record['case']} v{record.get('api_version')}: "
                                                                 f"{record.get('message') or ''}")
        assert set(by_outcome) <= {"passed", "unsupported", "skipped"}, {
            outcome: found[:5] for outcome, found in by_outcome.items()}
        assert not any("principal" in line for line in by_outcome.get("skipped", []))
        assert len(by_outcome["passed"]) > 20
        assert any(exchange["api"] == "CreateAcls" for record in records for exchange in record["transcript"])
        # every grant was deleted after its case: a filter matching any ACL of the guest's matches none
        cluster = Cluster(target.bootstrap, security=target.security)
        any_acl = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                   "principal_filter": "User:guest", "host_filter": None, "operation": 1, "permission_type": 1}
        response = cluster.connection().request("DeleteAcls", cluster.best_version("DeleteAcls"),
                                                {"filters": [any_acl]}).response
        cluster.close()
        assert response["filter_results"][0]["error_code"] == 0
        assert response["filter_results"][0]["matching_acls"] == []
        assert SECRET not in printed + results.read_text()
    finally:
        target.stop()
