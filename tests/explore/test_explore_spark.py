"""The fan-out: the same seeds explored by worker processes here and as Spark tasks on a standalone cluster (a
master and a worker on loopback, from pyspark's own distribution) give the same departures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

import conformance  # noqa: E402
from conformance.cli import main  # noqa: E402
from conformance.results.store import read_lines as read_results  # noqa: E402
from conformance.targets.kafka.jars import cached_libs  # noqa: E402

pytestmark = pytest.mark.broker
# One seed whose first departure is found in its first histories, before any answer's timing can steer it: a
# second seed's histories went on past retriable answers that came in one run and not the other, and the two runs
# shrank different departures (a live broker's timing, not the fan-out). What is compared is what must agree.
EXPLORATION = ["--target", "kafka:3.5.2", "--budget", "30", "--seed", "7", "--workers", "1"]
# Its case. Shrinking it replays variants of the history on the live broker, and a variant with a burst (requests
# in flight at once) may depart from another rule in one run and not the other, as the broker served the burst
# (a full run here: the local run also found read.known-records and end-txn.accepted, the Spark run fenced.refused): so
# the departures beyond the first are each run's own, and only the first is compared.
FIRST = "explore.kafka-3-5-2.produce-partition-in-transaction.9b3b7adf.yaml"


def departures(results: Path) -> set[str]:
    """The cases written for the departures, by file name (rule and shrunk steps' digest)."""
    return {Path(row["artifacts"]["case"]).name for row in read_results(results) if row["outcome"] == "failed"}


def test_spark_tasks_on_a_standalone_cluster_find_what_local_workers_find(tmp_path, standalone_spark):
    if not cached_libs("3.5.2").is_dir():
        pytest.skip("Kafka 3.5.2 jars are not cached: python -m conformance.targets.kafka.jars 3.5.2")
    local = tmp_path / "local.jsonl"
    assert main(["explore", *EXPLORATION, "--cases", str(tmp_path / "local"), "--results", str(local)]) == 1
    # The command in a child process, as a user types it: one JVM holds one Spark context, and the executors
    # import this checkout of the package (the shared cluster's daemons were started with it on PYTHONPATH).
    root = str(Path(conformance.__file__).resolve().parents[1])
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    cluster = standalone_spark  # shared with the other tests that submit to one (tests/conftest.py)
    before = {app["id"] for app in cluster.state().get("completedapps", [])}
    completed = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "explore", *EXPLORATION, "--spark", cluster.url,
         "--cases", str(tmp_path / "spark"), "--results", str(tmp_path / "spark.jsonl")],
        capture_output=True, text=True, timeout=900, env=environment, cwd=root)
    applications = [app for app in cluster.state().get("completedapps", []) if app["id"] not in before]
    assert completed.returncode == 1, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert [(app["name"], app["state"]) for app in applications] == [("conformance-explore", "FINISHED")]
    on_spark = departures(tmp_path / "spark.jsonl")
    assert FIRST in departures(local) and FIRST in on_spark
    assert all((tmp_path / "spark" / name).is_file() for name in on_spark)  # merged and written, as locally
