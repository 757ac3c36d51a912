"""``conformance run`` from the harness's checkout, on a suite and a results file outside it and with no Allure
folder (``--alluredir ''``): pytest must not take an option's path for a test path. It did, found no ini file, and
loaded the checkout's tests/conftest.py without its import path ("No module named 'worker_groups'")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from small_broker import small_broker

ROOT = Path(__file__).resolve().parents[2]

SUITE = """\
suite: selftest.outside
title: A suite outside the checkout
spec: KIP-511
cases:
  - id: api-versions-answered
    title: ApiVersions v0 is answered
    cites: "ApiVersionsResponse, ApiKeys: The APIs supported by the broker."
    steps:
      - send: ApiVersions
        version: 0
        expect: {error_code: NONE}
"""


def test_a_run_from_the_checkout_of_a_suite_outside_it_without_allure_runs_the_suite(tmp_path):
    (tmp_path / "outside.yaml").write_text(SUITE)
    results = tmp_path / "results.jsonl"
    results.write_text("")  # an existing file, as a results file appended to run after run is
    broker = small_broker()
    try:
        done = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", broker.address, "--jobs", "1",
                               "--results", str(results), "--alluredir", "", str(tmp_path / "outside.yaml")],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        broker.stop()
    assert "worker_groups" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    [record] = [json.loads(line) for line in results.read_text().splitlines()]
    assert (record["case"], record["outcome"]) == ("api-versions-answered", "passed")
