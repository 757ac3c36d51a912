"""The ``conformance`` command's offline subcommands: targets, lint, list, and the run summary."""

from __future__ import annotations

import pytest

from conformance.cli import main
from conformance.cli.run import summary_rows
from conformance.results.record import ResultRecord

GOOD_SUITE = """\
suite: demo.good
title: A good suite
spec: KIP-98
cases:
  - id: end-txn-commits
    title: EndTxn commits
    cites: "KIP-98: EndTxn"
    under_test: {api: EndTxn, versions: "1+"}
    steps:
      - send: EndTxn
        fields: {transactional_id: "t", producer_id: 1, producer_epoch: 0, committed: true}
  - id: waits
    title: A case about no single API
    requirement: MAY
    cites: "KIP-98: anything"
    steps:
      - wait: 1
"""

BAD_SUITE = GOOD_SUITE.replace("requirement: MAY", "requirement: OUGHT").replace("demo.good", "demo.bad")


def test_lint_counts_suites_and_cases_when_all_is_well(tmp_path, capsys):
    (tmp_path / "good.yaml").write_text(GOOD_SUITE)
    assert main(["lint", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "1 suites, 2 cases OK"


def test_lint_prints_file_line_key_and_message_and_fails(tmp_path, capsys):
    (tmp_path / "good.yaml").write_text(GOOD_SUITE)
    (tmp_path / "bad.yaml").write_text(BAD_SUITE)
    assert main(["lint", str(tmp_path)]) == 1
    [line] = capsys.readouterr().out.strip().splitlines()
    assert line.startswith(f"{tmp_path / 'bad.yaml'}:14: cases[1].requirement: ")


@pytest.mark.parametrize("suite, code, printed", [(GOOD_SUITE, 0, "1 suites, 2 cases OK"),
                                                   (BAD_SUITE, 1, "bad.yaml:14: cases[1].requirement: ")])
def test_the_command_keeps_its_exit_code_and_all_it_printed_through_its_quick_exit(tmp_path, suite, code, printed):
    """``conformance`` (python -m conformance.cli) ends without Python's teardown: nothing printed is lost."""
    import os
    import subprocess
    import sys

    (tmp_path / "bad.yaml").write_text(suite)
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "lint", str(tmp_path)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONUNBUFFERED": ""})
    assert done.returncode == code and printed in done.stdout and done.stdout.endswith("\n")


def test_list_prints_every_case_with_its_versions_and_requirement(tmp_path, capsys):
    (tmp_path / "good.yaml").write_text(GOOD_SUITE)
    assert main(["list", str(tmp_path)]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.strip().splitlines()]
    assert rows == [
        ["suite", "case", "api", "versions", "requirement", "title"],
        ["demo.good", "end-txn-commits", "EndTxn", "1+", "MUST", "EndTxn commits"],
        ["demo.good", "waits", "-", "-", "MAY", "A case about no single API"],
    ]


def test_targets_lists_every_bundled_kind_with_its_availability(capsys):
    assert main(["targets"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.strip().splitlines()]
    assert rows[0] == ["kind", "description", "available here"]
    assert {"kafka", "host:port", "rdkafka-mock"} <= {row[0] for row in rows[1:]}
    assert all(row[2] == "yes" or row[2].startswith("no: ") for row in rows[1:])


def test_arguments_after_double_dash_are_refused_outside_run(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["list", "--", "-x"])
    assert exit.value.code == 2
    assert "only for 'conformance run'" in capsys.readouterr().err


def test_summary_counts_outcomes_per_target():
    records = [ResultRecord(target=target, outcome=outcome) for target, outcome in (
        ("kafka", "passed"), ("kafka", "failed"), ("tansu", "unsupported"), ("kafka", "passed"), ("tansu", "differs"))]
    # passed, failed, differs from Kafka, blocked, error, unsupported, skipped, total
    assert summary_rows(records) == [["kafka", 2, 1, 0, 0, 0, 0, 0, 3], ["tansu", 0, 0, 1, 0, 0, 1, 0, 2]]


def test_the_run_summary_has_a_column_for_implementation_items_that_differ_from_kafka(tmp_path, capsys):
    from report_records import record, write_jsonl

    from conformance.cli.run import print_summary

    results = write_jsonl(tmp_path / "r.jsonl", [
        record("commit", 3, "failed"),
        record("internals", 3, "failed", requirement="IMPLEMENTATION", schema_version=2),  # schema 2: read as differs
        record("states", 3, "differs", requirement="IMPLEMENTATION")])
    print_summary(results, "run-a")
    header, row = capsys.readouterr().out.splitlines()[1:3]  # piped: a title, then tab-separated lines
    assert header.split("\t") == ["target", "passed", "failed", "differs from Kafka", "blocked", "error",
                                  "unsupported", "skipped", "total"]
    assert row.split("\t") == ["kafka", "0", "1", "2", "0", "0", "0", "0", "3"]


def test_run_passes_drafts_strict_targets_and_paths_to_pytest(monkeypatch, tmp_path):
    import pytest as pytest_module

    from conformance.cli import run as run_command

    seen = []
    monkeypatch.setattr(pytest_module, "main", lambda arguments: seen.extend(arguments) or 0)
    monkeypatch.setattr(run_command, "print_summary", lambda *_: None)
    assert main(["run", "--drafts", "--long", "--strict", "--target", "tansu", "--results", str(tmp_path / "r.jsonl"),
                 "--alluredir", "", "suites/kip447", "--", "-x"]) == 0
    assert {"--conformance-drafts", "--conformance-long", "--conformance-strict", "-x"} <= set(seen)
    assert seen[seen.index("--target") + 1] == "tansu" and "--suite=suites/kip447" in seen
    assert not any(argument.startswith("--alluredir") for argument in seen)


def test_findings_count_each_targets_latest_run_unless_asked_for_all(tmp_path, capsys):
    from conformance.cli import main
    from conformance.results.store import ResultsWriter

    results = tmp_path / "results.jsonl"
    writer = ResultsWriter(results)
    for run_id, outcome in (("20260101T000000Z-aaaaaa", "failed"), ("20260102T000000Z-bbbbbb", "passed")):
        for case in ("a", "b"):
            writer.append({"run_id": run_id, "target": "kafka", "target_version": "4.4.0", "suite": "s",
                           "case": case, "outcome": outcome, "api_version": 1, "cites": "KIP-98"})
    writer.append({"run_id": "20260101T000000Z-cccccc", "target": "tansu", "suite": "s", "case": "a",
                   "outcome": "blocked", "api_version": 1, "step_label": "1 send InitProducerId",
                   "step_api": "InitProducerId", "actual": "COORDINATOR_NOT_AVAILABLE"})
    # An IMPLEMENTATION item that departed, as results schema 2 wrote it ("failed") and as 3 does ("differs").
    for case, outcome, version in (("states", "failed", 2), ("topic", "differs", 3)):
        writer.append({"schema_version": version, "run_id": "20260101T000000Z-cccccc", "target": "tansu",
                       "suite": "s", "case": case, "outcome": outcome, "requirement": "IMPLEMENTATION",
                       "api_version": 1, "expected": "Ongoing", "actual": "ONGOING"})
    assert main(["findings", str(results)]) == 0
    latest = capsys.readouterr().out
    assert ("| Target | Version | passed | failed | differs from Kafka | blocked | error | unsupported | skipped |"
            in latest)
    assert "| kafka | 4.4.0 | 2 | 0 | 0 | 0 | 0 | 0 | 0 |" in latest  # the older kafka run is not counted
    assert "| tansu |  | 0 | 0 | 2 | 1 | 0 | 0 | 0 |" in latest
    assert "## Per suite (passed / failed / differs from Kafka / blocked / error / unsupported)" in latest
    assert "| s | 2 / 0 / 0 / 0 / 0 / 0 | 0 / 0 / 2 / 1 / 0 / 0 |" in latest
    assert "step 1 send InitProducerId (InitProducerId): COORDINATOR_NOT_AVAILABLE" in latest
    departures = latest[latest.index("## Departures"):latest.index("## Blocked")]
    assert "tansu" not in departures and "0 failed items" in departures
    differs = latest[latest.index("## Differs from Kafka (IMPLEMENTATION, not conformance)"):]
    assert "| tansu | s::states | 1 | Ongoing | ONGOING |" in differs and "| tansu | s::topic | 1 |" in differs
    assert "2 differs from Kafka items in 2 target × case pairs." in differs
    assert main(["findings", "--all-runs", str(results)]) == 0
    assert "| kafka | 4.4.0 | 2 | 2 | 0 | 0 | 0 | 0 | 0 |" in capsys.readouterr().out


def test_conformance_run_without_suites_names_its_own_way_to_give_them(tmp_path, monkeypatch):
    import pytest

    from conformance.pytest_plugin.plugin import _point_collection_at_suites

    class Config:
        args_source = pytest.Config.ArgsSource.TESTPATHS
        args: list = []

    with pytest.raises(pytest.UsageError, match="conformance run: PATH arguments"):
        _point_collection_at_suites(Config(), [tmp_path / "nowhere"], explicit=False)
