"""``conformance flaky``: the judgement over synthetic runs, the command on results files, shared
targets across runs, the Spark job and the plain-Python judge agreeing, and N real runs on the mock."""

from __future__ import annotations

import json

import pytest

from conformance.analysis import flakiness
from conformance.cli import main
from conformance.results.record import ResultRecord
from conformance.targets.base import Target
from conformance.targets.pool import TargetPool, kept_started
from conformance.targets.registry import TargetKind

RUNS = ["20261124T010000Z-aaaaaa-run1", "20261124T010000Z-aaaaaa-run2", "20261124T010000Z-aaaaaa-run3"]
# case -> (requirement, outcome in each of the three runs)
CASES = {
    "stable-pass": ("MUST", ["passed", "passed", "passed"]),
    "stable-fail": ("MUST", ["failed", "failed", "failed"]),
    "always-skipped": ("MUST", ["skipped", "skipped", "skipped"]),
    "always-unsupported": ("MAY", ["unsupported", "unsupported", "unsupported"]),
    "flips": ("MUST", ["passed", "failed", "passed"]),
    "skipped-once": ("SHOULD", ["passed", "skipped", "passed"]),
    "unsupported-once": ("MUST", ["unsupported", "unsupported", "passed"]),
    "kafka-internals": ("IMPLEMENTATION", ["passed", "differs", "differs"]),
}


def record(run: int, case: str, outcome: str, requirement: str, *, target: str = "kafka", version: int = 3) -> dict:
    return {"schema_version": 3, "run_id": RUNS[run], "target": target, "target_version": "4.4.0",
            "harness_version": "0.1.0+gabc", "suite": "kip98.demo", "case": case, "api": "EndTxn",
            "api_version": version, "outcome": outcome, "requirement": requirement,
            "message": "" if outcome == "passed" else f"{case}: expected NONE, got {outcome.upper()} in run {run + 1}",
            "nodeid": f"suites/kip98/demo.yaml::{case}[{target}-v{version}]",
            "recorded_at": f"2026-11-24T01:00:0{run * 2}Z"}


def synthetic_records() -> list[dict]:
    return [record(run, case, outcomes[run], requirement)
            for run in range(3) for case, (requirement, outcomes) in CASES.items()]


def read_back(lines: list[dict]) -> list[ResultRecord]:
    """The lines as the store reads them."""
    return [ResultRecord.from_line(line) for line in lines]


def write(path, records) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in records))
    return str(path)


# ------------------------------------------------------------------------------ the judgement
def test_stable_items_are_not_listed_and_every_item_that_changed_is_with_its_counts():
    found = flakiness.histories(read_back(synthetic_records()))
    changed = {history.key[3]: history for history in flakiness.changed(found)}
    assert set(changed) == {"kip98.demo::flips@v3", "kip98.demo::skipped-once@v3",
                            "kip98.demo::unsupported-once@v3", "kip98.demo::kafka-internals@v3"}
    flips = changed["kip98.demo::flips@v3"]
    assert flips.outcomes == ["passed", "failed", "passed"]
    assert (flips.runs, flips.flips, flips.flaky_rate, dict(flips.counts)) == (3, 2, 0.3333, {"passed": 2, "failed": 1})
    assert changed["kip98.demo::unsupported-once@v3"].flips == 1
    assert len(flakiness.judged(found)) == len(CASES)
    # The job's order: highest rate, then most flips, then by name.
    assert [history.key[3] for history in flakiness.changed(found)][0] == "kip98.demo::flips@v3"


def test_skipped_and_unsupported_are_outcomes_like_any_other():
    """The same in every run is stable whatever the outcome; a change to or from them is a change."""
    found = flakiness.histories(read_back(synthetic_records()))
    by_case = {key[3].split("::")[1].split("@")[0]: history for key, history in found.items()}
    assert not by_case["always-skipped"].changed and not by_case["always-unsupported"].changed
    assert by_case["skipped-once"].changed and by_case["unsupported-once"].changed


def test_runs_are_ordered_by_their_first_record_and_items_are_per_target_and_version():
    records = synthetic_records()[::-1]  # file order does not matter
    records += [record(run, "flips", "passed", "MUST", target="tansu") for run in range(3)]
    records += [record(0, "flips", "failed", "MUST", version=4), record(1, "flips", "passed", "MUST", version=4)]
    assert flakiness.run_order(read_back(records)) == RUNS
    found = flakiness.histories(read_back(records))
    assert found[("kafka", "4.4.0", "0.1.0+gabc", "kip98.demo::flips@v3")].outcomes == ["passed", "failed", "passed"]
    assert not found[("tansu", "4.4.0", "0.1.0+gabc", "kip98.demo::flips@v3")].changed
    assert found[("kafka", "4.4.0", "0.1.0+gabc", "kip98.demo::flips@v4")].changed
    # An item seen in one run only is not judged (the job's min_runs).
    records.append(record(0, "new-case", "failed", "MUST"))
    assert ("kafka", "4.4.0", "0.1.0+gabc", "kip98.demo::new-case@v3") not in {
        history.key for history in flakiness.judged(flakiness.histories(read_back(records)))}


# ------------------------------------------------------------------------------ the command on results files
def test_from_files_lists_what_changed_with_counts_message_and_reproduction_and_exits_1(tmp_path, capsys):
    path = write(tmp_path / "runs.jsonl", synthetic_records())
    assert main(["flaky", "--from", path, "--judge", "python", "--json", str(tmp_path / "flaky.json"),
                 "--report", str(tmp_path / "flaky.txt")]) == 1
    out = capsys.readouterr().out
    assert "3 runs, 8 items judged, by plain Python" in out
    assert "CHANGED: 4 of 8 items did not have the same outcome in every run" in out
    assert "kafka (4.4.0) kip98.demo::flips@v3 [MUST]" in out
    assert "outcomes: passed ×2, failed ×1 in 3 runs (run by run: passed, failed, passed)" in out
    assert "flaky rate 0.3333" in out and "2 flips" in out
    assert f"failed in run {RUNS[1]}: flips: expected NONE, got FAILED in run 2" in out
    assert "reproduce: conformance run --target kafka --item kip98.demo::flips@v3" in out
    assert "kip98.demo::kafka-internals@v3 [IMPLEMENTATION: Kafka's own behaviour, for information]" in out
    assert "stable-pass" not in out and "always-skipped" not in out
    facts = json.loads((tmp_path / "flaky.json").read_text())
    assert facts["stable"] is False and facts["runs"] == RUNS and facts["items_judged"] == 8
    flips = next(item for item in facts["changed"] if item["item"] == "kip98.demo::flips@v3")
    assert flips["outcomes"] == {"passed": 2, "failed": 1} and flips["flips"] == 2
    assert flips["run_by_run"] == [[RUNS[0], "passed"], [RUNS[1], "failed"], [RUNS[2], "passed"]]
    assert (tmp_path / "flaky.txt").read_text() in out


def test_from_files_where_nothing_changed_exits_0(tmp_path, capsys):
    stable = [row for row in synthetic_records() if row["case"].startswith(("stable", "always"))]
    assert main(["flaky", "--from", write(tmp_path / "a.jsonl", stable[:4]), write(tmp_path / "b.jsonl", stable[4:]),
                 "--judge", "python"]) == 0
    assert "STABLE: each of the 4 items had the same outcome in every run" in capsys.readouterr().out


def test_from_files_with_target_judges_only_that_target(tmp_path, capsys):
    records = synthetic_records() + [record(run, "flips", "passed", "MUST", target="tansu") for run in range(3)]
    path = write(tmp_path / "runs.jsonl", records)
    assert main(["flaky", "--from", path, "--target", "tansu", "--judge", "python"]) == 0
    assert "1 items judged" in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["flaky"], "give --runs N"),
    (["flaky", "--runs", "1"], "at least 2 runs"),
    (["flaky", "--from", "{missing}"], "no results file at"),
    (["flaky", "--from", "{one_run}"], "holds 1 run of the selection: nothing to compare"),
    (["flaky", "--from", "{one_run}", "--runs", "3"], "give no --runs"),
])
def test_usage_and_too_few_runs_exit_2(tmp_path, capsys, arguments, message):
    one_run = write(tmp_path / "one.jsonl", [row for row in synthetic_records() if row["run_id"] == RUNS[0]])
    given = [argument.format(missing=tmp_path / "missing.jsonl", one_run=one_run) for argument in arguments]
    assert main(given) == 2
    assert message in capsys.readouterr().err


def test_arguments_after_double_dash_go_to_every_run_and_runs_get_their_own_ids(monkeypatch, tmp_path, capsys):
    import pytest as pytest_module

    seen = []

    def fake_main(arguments):
        seen.append(arguments)
        run_id = arguments[arguments.index("--conformance-run-id") + 1]
        [results] = [argument.removeprefix("--results=") for argument in arguments if argument.startswith("--results=")]
        with open(results, "a") as file:
            file.write(json.dumps({**record(0, "flips", "passed", "MUST"), "run_id": run_id}) + "\n")
        return 0

    monkeypatch.setattr(pytest_module, "main", fake_main)
    results = tmp_path / "r.jsonl"
    assert main(["flaky", "--runs", "3", "--target", "rdkafka-mock", "-o", str(results), "--judge", "python",
                 "--alluredir", str(tmp_path / "allure"), "suites/kip98/coordinator.yaml", "--", "-k", "find"]) == 0
    assert len(seen) == 3
    run_ids = [arguments[arguments.index("--conformance-run-id") + 1] for arguments in seen]
    assert run_ids == sorted(run_ids) and len(set(run_ids)) == 3 and run_ids[0].endswith("-run1")
    for arguments in seen:
        assert arguments[-2:] == ["-k", "find"] and arguments[arguments.index("--target") + 1] == "rdkafka-mock"
        assert "--suite=suites/kip98/coordinator.yaml" in arguments
    # One Allure folder for all runs: emptied before the first only.
    assert ["--clean-alluredir" in arguments for arguments in seen] == [True, False, False]
    assert "STABLE: each of the 1 items" in capsys.readouterr().out


def test_a_run_that_cannot_run_its_items_makes_the_exit_code_2(monkeypatch, tmp_path, capsys):
    import pytest as pytest_module

    monkeypatch.setattr(pytest_module, "main", lambda arguments: 5)
    assert main(["flaky", "--runs", "2", "-o", str(tmp_path / "r.jsonl"), "--judge", "python"]) == 2
    assert "holds no items" in capsys.readouterr().err


# ------------------------------------------------------------------------------ targets kept across runs
class CountingTarget(Target):
    kind = "counting"
    starts = stops = 0

    def start(self) -> None:
        CountingTarget.starts += 1

    def stop(self) -> None:
        CountingTarget.stops += 1

    @property
    def bootstrap(self) -> str:
        return "127.0.0.1:1"


KINDS = [TargetKind("counting", "counts", lambda spec: spec.startswith("counting"), CountingTarget, lambda: None)]


def test_pools_inside_kept_started_share_their_targets_and_stop_them_at_the_end(monkeypatch):
    monkeypatch.setattr(CountingTarget, "starts", 0)
    monkeypatch.setattr(CountingTarget, "stops", 0)
    with kept_started():
        first = TargetPool(["counting"], KINDS)
        target = first.acquire("counting")
        assert first.stop_all() == [] and CountingTarget.stops == 0  # a session ended: kept for the next
        second = TargetPool(["counting"], KINDS)
        assert second.acquire("counting") is target and CountingTarget.starts == 1
        second.stop_all(down=["counting"])  # the session found it down: stopped, started afresh next time
        assert CountingTarget.stops == 1
        third = TargetPool(["counting"], KINDS)
        assert third.acquire("counting") is not target and CountingTarget.starts == 2
    assert CountingTarget.stops == 2  # the block's end stops what is still up
    outside = TargetPool(["counting"], KINDS)
    outside.acquire("counting")
    outside.stop_all()
    assert CountingTarget.stops == 3  # outside the block, a session's end stops its targets as before


def test_a_session_keeps_its_topics_only_on_a_provisioned_target_it_discards(monkeypatch):
    """Deleting them would be wasted on a broker stopped with its data; a kept one (the next session runs on
    it) or one the harness only attaches to has its topics deleted."""
    assert TargetPool(["counting"], KINDS).discards("counting") is False  # the harness only attaches to it
    monkeypatch.setattr(CountingTarget, "provisioned_brokers", lambda self: 1)
    assert TargetPool(["counting"], KINDS).discards("counting") is True
    with kept_started():
        assert TargetPool(["counting"], KINDS).discards("counting") is False


# ------------------------------------------------------------------------------ Spark and plain Python agree
@pytest.mark.broker  # starts Spark's JVM
@pytest.mark.spark
def test_the_spark_job_and_the_plain_python_judge_agree(tmp_path, capsys):
    pytest.importorskip("pyspark")
    from conformance.analysis.spark_session import spark_session
    from conformance.cli.flaky import spark_judgement

    session = spark_session("local[2]")  # active, so the command leaves it up: one JVM for the test
    records = synthetic_records() + [record(run, "flips", outcome, "MUST", target="tansu")
                                     for run, outcome in enumerate(["error", "passed", "blocked"])]
    records.append({**record(0, "no-version", "passed", "MUST"), "api_version": None, "target_version": None})
    records.append({**record(1, "no-version", "failed", "MUST"), "api_version": None, "target_version": None})
    path = write(tmp_path / "runs.jsonl", records)
    try:
        _, rows = spark_judgement([path])
        assert main(["flaky", "--from", path, "--judge", "spark"]) == 1
    finally:
        session.stop()
    python = flakiness.changed(flakiness.histories(read_back(records)))
    assert rows == [(history.key, history.flaky_rate, history.flips) for history in python]
    assert "by Spark" in capsys.readouterr().out


# ------------------------------------------------------------------------------ real runs
@pytest.mark.broker
def test_two_runs_on_the_mock_provision_it_once_and_judge_them(tmp_path, monkeypatch, capsys):
    from conformance.extension import Extensions
    from conformance.targets.rdkafka_mock import RdkafkaMockTarget

    reason = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches("rdkafka-mock")).availability()
    if reason:
        pytest.skip(f"rdkafka-mock: {reason}")
    starts = []
    original = RdkafkaMockTarget.start
    monkeypatch.setattr(RdkafkaMockTarget, "start", lambda self: starts.append(self) or original(self))
    results = tmp_path / "flaky.jsonl"
    code = main(["flaky", "--runs", "2", "--target", "rdkafka-mock", "suites/kip98/coordinator.yaml",
                 "-o", str(results), "--judge", "python", "--json", str(tmp_path / "flaky.json")])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    assert len(starts) == 1  # provisioned once for both runs
    facts = json.loads((tmp_path / "flaky.json").read_text())
    assert len(facts["runs"]) == 2 and facts["items_judged"] > 10
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert {row["run_id"] for row in rows} == set(facts["runs"])
    assert len(rows) == 2 * facts["items_judged"]
    assert ("STABLE" in out) == (code == 0) and ("CHANGED" in out) == (code == 1)
