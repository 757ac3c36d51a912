"""A job on a real Spark standalone cluster: a master and a worker on loopback, started from
pyspark's own distribution, ``conformance analyze`` run against them.

The cluster is the tests' shared one (tests/conftest.py, ``standalone_spark``), which also checks that stopping it
leaves no daemon behind. The command runs in a child process with ``--master spark://...``: it is what a user types, and
its driver is not this process's local session (one JVM holds one SparkContext). Then the same
package through ``spark-submit``, as docs/how-to/analysis-on-spark.md documents it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from conformance import cli  # noqa: E402
from conformance.analysis.spark_cluster import spark_home  # noqa: E402

from analysis_captures import write_capture  # noqa: E402


@pytest.mark.broker
def test_job_runs_on_a_standalone_cluster(tmp_path, standalone_spark):
    captures = tmp_path / "captures" / "run-1"
    captures.mkdir(parents=True)
    pcap = captures / "case_t-v3_.pcapng"
    write_capture(pcap)
    record = {"schema_version": 2, "run_id": "run-1", "target": "t", "suite": "s", "case": "case", "kip": "KIP-98",
              "api": "EndTxn", "api_version": 3, "outcome": "failed", "requirement": "MUST",
              "recorded_at": "2026-11-24T08:00:00Z", "nodeid": "s::case[t-v3]", "artifacts": {"pcap": str(pcap)}}
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    out = tmp_path / "out"
    cluster = standalone_spark  # shared with the other tests that submit to one (tests/conftest.py)
    before = {app["id"] for app in cluster.state().get("completedapps", [])}  # the other tests' applications
    completed = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "analyze", "latency", str(tmp_path / "results.jsonl"),
         str(tmp_path / "captures"), "--master", cluster.url, "--out", str(out), "--no-html"],
        capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:] + cluster.logs()
    # The documented spark-submit line: the command's __main__ as the driver script.
    submitted = subprocess.run(
        [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url,
         str(Path(cli.__file__).with_name("__main__.py")), "analyze", "history", str(tmp_path / "results.jsonl"),
         "--out", str(tmp_path / "submitted"), "--no-html"],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, SPARK_HOME=str(spark_home()), PYSPARK_PYTHON=sys.executable))
    assert submitted.returncode == 0, submitted.stderr[-3000:]
    applications = [app for app in cluster.state().get("completedapps", []) if app["id"] not in before]
    assert f"on {cluster.url}" in completed.stderr
    # The application ran on the cluster's worker: the master lists it as finished.
    assert [(app["name"], app["state"]) for app in applications] == [("conformance-analysis", "FINISHED")] * 2
    assert "history: levels" in submitted.stdout and (tmp_path / "submitted" / "history" / "levels").is_dir()
    # The capture was decoded by the worker's executor, and matched to its results record.
    assert "EndTxn" in completed.stdout and "INVALID_TXN_STATE" in completed.stdout
    assert (out / "latency" / "error_codes").is_dir()
