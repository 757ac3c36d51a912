"""The example CI workflow: its shape, and its `run:` steps executed locally in order for one target."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "conformance.yml"
LOCAL_STEPS = ("run", "gate", "allure", "certify")  # "install" is what this test environment already did


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def steps(job: str = "conformance") -> dict[str, dict]:
    return {step["id"]: step for step in workflow()["jobs"][job]["steps"] if "id" in step}


def triggers() -> dict:
    document = workflow()
    return document.get("on", document.get(True))  # YAML 1.1 reads a bare `on` key as true


def test_workflow_runs_a_matrix_gates_and_keeps_the_reports():
    job = workflow()["jobs"]["conformance"]
    targets = job["strategy"]["matrix"]["target"]
    assert {"kafka", "tansu", "rdkafka-mock"} <= set(targets)
    for target in targets:  # every target in the matrix has a committed baseline
        assert (ROOT / "fixtures" / "baselines" / f"{target.replace(':', '-')}.jsonl").is_file(), target
    assert "conformance gate --baseline" in steps()["gate"]["run"]
    assert steps()["allure"]["if"] == "always()" and steps()["certify"]["if"] == "always()"
    upload = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/upload-artifact"))
    for kept in ("reports/junit.xml", "reports/conformance.sarif", "reports/allure-report", "reports/certification"):
        assert kept in upload["with"]["path"]
    scanning = next(step for step in job["steps"] if step.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert "--sarif reports/conformance.sarif" in steps()["run"]["run"]
    assert scanning["with"]["sarif_file"] == "reports/conformance.sarif" and job["permissions"]["security-events"] == "write"


def test_a_scheduled_job_runs_the_suites_several_times_and_keeps_the_flakiness_report():
    assert "cron" in triggers()["schedule"][0] and "workflow_dispatch" in triggers()
    jobs = workflow()["jobs"]
    assert "schedule" in jobs["flaky"]["if"] and "workflow_dispatch" in jobs["flaky"]["if"]
    assert jobs["conformance"]["if"] == "github.event_name != 'schedule'"  # the nightly run is the flaky job
    command = steps("flaky")["flaky"]["run"]
    assert "conformance flaky --runs" in command and jobs["flaky"]["env"]["TARGET"] == "kafka"
    assert int(jobs["flaky"]["env"]["RUNS"]) >= 2
    upload = next(step for step in jobs["flaky"]["steps"] if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and "reports/flaky/" in upload["with"]["path"]
    for written in ("reports/flaky/results.jsonl", "reports/flaky/flaky.txt", "reports/flaky/flaky.json"):
        assert written in command


def run_step(name: str, cwd: Path, env: dict, job: str = "conformance") -> subprocess.CompletedProcess:
    """A step's shell as the runner would run it (bash -e), with the job's env."""
    return subprocess.run(["bash", "-e", "-c", steps(job)[name]["run"]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


@pytest.mark.broker
def test_the_flaky_step_runs_locally(tmp_path):
    """rdkafka-mock (in-process), one small suite, two runs: the step writes the results and both reports."""
    from conformance.extension import Extensions

    reason = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches("rdkafka-mock")).availability()
    if reason:
        pytest.skip(f"rdkafka-mock: {reason}")
    env = {**os.environ, **{name: str(value) for name, value in workflow()["jobs"]["flaky"]["env"].items()},
           "TARGET": "rdkafka-mock", "SUITES": str(ROOT / "suites" / "kip98" / "coordinator.yaml"), "RUNS": "2",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = run_step("flaky", tmp_path, env, job="flaky")
    assert done.returncode in (0, 1), f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    facts = json.loads((tmp_path / "reports" / "flaky" / "flaky.json").read_text())
    assert len(facts["runs"]) == 2 and facts["stable"] is (done.returncode == 0)
    assert (tmp_path / "reports" / "flaky" / "flaky.txt").read_text() in done.stdout


@pytest.mark.broker
def test_steps_run_locally_and_the_gate_catches_an_injected_regression(tmp_path):
    """rdkafka-mock (in-process) on one suite: the gate passes on an unchanged run, fails on a regression."""
    from conformance.extension import Extensions

    reason = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches("rdkafka-mock")).availability()
    if reason:
        pytest.skip(f"rdkafka-mock: {reason}")
    if shutil.which("java") is None or not (ROOT / "node_modules" / ".bin" / "allure").exists():
        pytest.skip("the Allure step needs java and `npm ci` in the checkout")
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    (tmp_path / "suites").symlink_to(ROOT / "suites")
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules")
    env = {**os.environ, **{name: str(value) for name, value in workflow()["jobs"]["conformance"]["env"].items()
                            if "${{" not in str(value)},
           "TARGET": "rdkafka-mock", "SUITES": str(ROOT / "suites" / "kip98" / "transactions.yaml"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    for name in LOCAL_STEPS:
        done = run_step(name, tmp_path, env)
        assert done.returncode == 0, f"step {name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        if name == "gate":
            assert "gate PASS" in done.stdout
    reports = tmp_path / "reports"
    assert (reports / "junit.xml").read_text().count("<testcase") > 50
    assert json.loads((reports / "conformance.sarif").read_text())["version"] == "2.1.0"
    assert json.loads((reports / "gate.json").read_text())["passed"] is True
    assert (reports / "allure-report" / "index.html").is_file()
    page = next((reports / "certification").glob("rdkafka-mock-*/index.html"))
    assert "Departures (" in page.read_text()
    facts = json.loads((page.parent / "certification.json").read_text())
    assert "asked of 127.0.0.1:" in facts["fingerprint"]["source"]  # --ask-target started the mock to ask it

    # Inject a regression: the baseline says an item the mock really fails used to pass.
    baseline = tmp_path / "fixtures" / "baselines" / "rdkafka-mock.jsonl"
    rows = [json.loads(line) for line in baseline.read_text().splitlines()]
    current = {(row["suite"], row["case"], row["api_version"]): row["outcome"]
               for row in map(json.loads, (reports / "results.jsonl").read_text().splitlines())}
    victim = next(row for row in rows if row["requirement"] == "MUST"
                  and current.get((row["suite"], row["case"], row["api_version"])) == "failed")
    victim["outcome"] = "passed"
    baseline.write_text("".join(json.dumps(row) + "\n" for row in rows))
    known = tmp_path / "fixtures" / "known-failures" / "rdkafka-mock.yaml"
    if known.exists():
        known.unlink()  # the entry for this very item would tolerate it
    done = run_step("gate", tmp_path, env)
    assert done.returncode == 1, done.stdout[-3000:]
    assert f"REGRESSION: rdkafka-mock {victim['suite']}::{victim['case']}@v{victim['api_version']}" in done.stdout
    assert "failed all 2 reruns" in done.stdout
