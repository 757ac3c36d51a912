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


def test_the_rerun_command_reports_print_runs_that_item_in_a_folder_without_a_checkout(tmp_path):
    """Reports print one command per item; it must work where a customer runs it: no checkout, no suites/ folder."""
    import os
    import shlex

    from report_records import result_record

    from conformance.report.itemref import reproduce

    broker = small_broker()
    try:
        shown = reproduce(result_record("api-versions-v0", None, "failed", target=broker.address,
                                        suite="robustness.malformed-frames", api=None,
                                        path="/vendor/checkout/suites/robustness/malformed-frames.yaml"))
        assert "suites/" not in shown and "/vendor" not in shown
        command = shlex.split(shown)
        assert command[:2] == ["conformance", "run"]
        done = subprocess.run([sys.executable, "-m", *command, "--jobs", "1", "--alluredir", ""], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                              timeout=120)
    finally:
        broker.stop()
    records = [json.loads(line) for line in (tmp_path / "reports" / "results.jsonl").read_text().splitlines()]
    assert [(record["suite"], record["case"]) for record in records] == [
        ("robustness.malformed-frames", "api-versions-v0")], done.stdout + done.stderr


def test_the_rerun_command_of_an_item_the_suites_do_not_hold_is_the_command_that_made_it():
    from report_records import result_record

    from conformance.report.itemref import reproduce

    def semantic(suite: str):
        return result_record("read-committed-sees-no-aborted", None, "failed", suite=suite, api=None,
                             tags=["semantic"], path="conformance/semantic/checks.py")

    # the exactly-once tier's checks judge one run's history: no --item of conformance run collects them
    assert reproduce(semantic("semantic.exactly-once")) == "conformance semantic --target kafka"
    assert reproduce(semantic("semantic.exactly-once.consumer-group")) == (
        "conformance semantic --target kafka --group-protocol consumer")
    vendor = result_record("ours", 3, "failed", path="/vendor/suites/acme/ours.yaml")  # a suite the harness lacks
    assert reproduce(vendor) == "conformance run --target kafka --item kip98.transactions::ours@v3 " \
                                "/vendor/suites/acme/ours.yaml"
