"""The CI gate: regressions only fail it, known and flaky items are tolerated, stale entries reported."""

from __future__ import annotations

import dataclasses
import json
import textwrap

import pytest
from report_records import record, result_record, write_jsonl

from conformance.cli import main
from conformance.report import gate, known_failures


def baseline_rows():
    return [record("commit", 3, "passed"), record("commit", 4, "passed"), record("abort", 3, "failed"),
            record("fenced", 3, "passed"), record("detail", 3, "passed", requirement="IMPLEMENTATION"),
            record("old-only", 3, "passed")]


def test_unchanged_run_passes(tmp_path, capsys):
    base = write_jsonl(tmp_path / "base.jsonl", baseline_rows())
    assert main(["gate", "--baseline", str(base), "--results", str(base)]) == 0
    assert "gate PASS" in capsys.readouterr().out


def test_regressions_improvements_and_missing_items(tmp_path, capsys):
    base = write_jsonl(tmp_path / "base.jsonl", baseline_rows())
    new = write_jsonl(tmp_path / "new.jsonl", [
        record("commit", 3, "failed"),                      # regression: a departure
        record("commit", 4, "error"),                       # regression: an error is no pass either
        record("abort", 3, "passed"),                       # improvement
        record("fenced", 3, "unsupported"),                 # a lost pass, not a departure
        record("detail", 3, "differs", requirement="IMPLEMENTATION"),  # information, never a regression
        record("brand-new", 0, "failed"),                   # a new case that fails
        record("brand-new-ok", 0, "passed"),
    ])
    assert main(["gate", "--baseline", str(base), "--results", str(new)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION: kafka kip98.transactions::commit@v3: passed -> failed" in out
    assert "REGRESSION: kafka kip98.transactions::commit@v4: passed -> error" in out
    assert "REGRESSION: kafka kip98.transactions::brand-new@v0: absent -> failed" in out
    assert "reproduce: conformance run --target kafka --item kip98.transactions::commit@v3" in out
    assert "IMPROVEMENT: kafka kip98.transactions::abort@v3: failed -> passed" in out
    assert "NO LONGER RUN: kafka kip98.transactions::fenced@v3: passed -> unsupported" in out
    assert "CHANGED: kafka kip98.transactions::detail@v3: passed -> differs (differs from Kafka" in out
    assert "MISSING from the results: kafka kip98.transactions::old-only@v3: passed -> absent" in out
    assert "3 regression" in out and "1 missing" in out


def test_an_implementation_item_that_differs_from_kafka_is_never_a_regression(tmp_path, capsys):
    report = gate.compare([], [result_record("detail", 3, "differs", requirement="IMPLEMENTATION")])
    assert [change.kind for change in report.changes] == ["new"] and report.passed(strict=True)
    # A baseline of results schema 2 said "failed" for the same item: it reads as "differs", so nothing changed.
    old = record("detail", 3, "failed", requirement="IMPLEMENTATION", schema_version=2)
    base = write_jsonl(tmp_path / "base.jsonl", [old])
    new = write_jsonl(tmp_path / "new.jsonl", [record("detail", 3, "differs", requirement="IMPLEMENTATION")])
    assert main(["gate", "--baseline", str(base), "--results", str(new)]) == 0
    assert "gate PASS: 1 items compared; 0 regression" in capsys.readouterr().out


def test_blocked_after_a_pass_is_a_regression():
    report = gate.compare([result_record("commit", 3, "passed")], [result_record("commit", 3, "blocked")])
    assert [change.kind for change in report.changes] == ["regression"]


def test_items_are_per_target():
    report = gate.compare([result_record("commit", 3, "passed", target="kafka")],
                          [result_record("commit", 3, "failed", target="tansu")])
    assert sorted(change.kind for change in report.changes) == ["missing", "regression"]


def test_the_last_record_of_an_item_wins():
    """A file appended by a rerun: the later record replaces the earlier one."""
    report = gate.compare([result_record("commit", 3, "passed")], [result_record("commit", 3, "failed", run_id="a"),
                                                               result_record("commit", 3, "passed", run_id="b")])
    assert report.changes == []


KNOWN = textwrap.dedent("""\
    target: kafka
    known_failures:
      - case: kip98.transactions::commit
        versions: "3"
        reason: the coordinator answers NONE (hand-made entry)
        link: https://example.org/tracker/1
      - case: kip98.transactions::abort
        versions: ["3-4"]
        reason: fixed since, so stale
    flaky:
      - case: kip98.transactions::commit
        versions: 4+
        reason: marker sometimes late
""")


def test_known_failures_and_flaky_are_tolerated_and_stale_entries_reported(tmp_path, capsys):
    base = write_jsonl(tmp_path / "base.jsonl", baseline_rows())
    new = write_jsonl(tmp_path / "new.jsonl", [record("commit", 3, "failed"), record("commit", 4, "failed"),
                                               record("abort", 3, "passed"), *baseline_rows()[3:]])
    known = tmp_path / "known.yaml"
    known.write_text(KNOWN)
    arguments = ["gate", "--baseline", str(base), "--results", str(new), "--known-failures", str(known)]
    assert main(arguments) == 0
    out = capsys.readouterr().out
    assert "KNOWN FAILURE (tolerated): kafka kip98.transactions::commit@v3" in out
    assert "https://example.org/tracker/1" in out
    assert "FLAKY (tolerated): kafka kip98.transactions::commit@v4" in out
    assert "STALE known failure: kip98.transactions::abort (3-4, kafka): fixed since, so stale" in out
    assert main([*arguments, "--strict"]) == 1  # a stale entry is an error with --strict


def test_known_failures_of_another_target_do_not_apply():
    entries = [known_failures.Entry("known_failures", "kip98.transactions::commit", (), "x", None, "tansu", "f")]
    report = gate.compare([result_record("commit", 3, "passed")], [result_record("commit", 3, "failed")], entries)
    assert [change.kind for change in report.changes] == ["regression"]


def test_a_malformed_known_failures_file_is_a_usage_error(tmp_path, capsys):
    base = write_jsonl(tmp_path / "base.jsonl", baseline_rows())
    known = tmp_path / "known.yaml"
    known.write_text("known_failures:\n  - case: no-suite-separator\n    reason: r\n")
    assert main(["gate", "--baseline", str(base), "--results", str(base), "--known-failures", str(known)]) == 2
    assert "is not suite::case" in capsys.readouterr().err


def test_empty_results_are_a_usage_error(tmp_path, capsys):
    base = write_jsonl(tmp_path / "base.jsonl", baseline_rows())
    assert main(["gate", "--baseline", str(base), "--results", str(tmp_path / "none.jsonl")]) == 2
    assert "no records in the results" in capsys.readouterr().err


def test_reruns_classify_by_measurement(monkeypatch):
    """An item that passes in some reruns is flaky; one that fails in every rerun stays a regression."""
    calls = []

    def fake_run_items(target, records, pytest_arguments=()):
        calls.append((target, [row.case for row in records]))
        attempt = len(calls)
        return [result_record("commit", 3, "passed" if attempt == 2 else "failed"), result_record("abort", 3, "failed")]

    monkeypatch.setattr(gate, "run_items", fake_run_items)
    report = gate.compare([result_record("commit", 3, "passed"), result_record("abort", 3, "passed")],
                          [result_record("commit", 3, "failed"), result_record("abort", 3, "failed")])
    gate.rerun(report, 3)
    assert calls == [("kafka", ["commit", "abort"])] * 3
    kinds = {change.record.case: (change.kind, change.note) for change in report.changes}
    assert kinds == {"commit": ("flaky", "measured: passed 1 of 3 reruns"),
                     "abort": ("regression", "failed all 3 reruns")}


def test_json_output(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", baseline_rows())
    new = write_jsonl(tmp_path / "new.jsonl", [record("commit", 3, "failed")])
    out = tmp_path / "gate.json"
    main(["gate", "--baseline", str(base), "--results", str(new), "--json", str(out)])
    verdict = json.loads(out.read_text())
    assert verdict["passed"] is False
    assert {"kind": "regression", "item": "kip98.transactions::commit@v3"}.items() <= verdict["changes"][0].items()


@pytest.mark.broker
def test_rerun_measures_a_real_item_on_kafka(tmp_path):
    """An injected regression of a case that really passes on Kafka is classified flaky after one rerun."""
    from pathlib import Path

    from conformance.extension import Extensions

    reason = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches("kafka")).availability()
    if reason:
        pytest.skip(f"kafka: {reason}")

    suite = Path(__file__).resolve().parents[2] / "suites" / "kip98" / "transactions.yaml"
    item = result_record("init-producer-id-assigns-id", 3, "failed", suite="kip98.transactions", api="InitProducerId",
                         path=str(suite), nodeid="suites/kip98/transactions.yaml::init-producer-id-assigns-id[kafka-v3]")
    report = gate.compare([dataclasses.replace(item, outcome="passed")], [item])
    gate.rerun(report, 1)
    assert [(change.kind, change.note) for change in report.changes] == [("flaky", "measured: passed 1 of 1 reruns")]


def test_save_baseline_keeps_the_last_record_of_each_item_without_transcripts(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [record("commit", 3, "failed", transcript=[{"api": "EndTxn"}]),
                                                 record("commit", 3, "passed", run_id="b"), record("abort", 3, "failed")])
    baseline = tmp_path / "base.jsonl"
    assert main(["gate", "--results", str(results), "--save-baseline", str(baseline)]) == 0
    rows = [json.loads(line) for line in baseline.read_text().splitlines()]
    assert [(row["case"], row["outcome"]) for row in rows] == [("abort", "failed"), ("commit", "passed")]
    assert "transcript" not in rows[0] and rows[0]["message"].startswith("2 send EndTxn")
    assert main(["gate", "--baseline", str(baseline), "--results", str(results)]) == 0


def test_the_example_known_failures_files_load():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "fixtures" / "known-failures"
    entries = known_failures.load(sorted(folder.glob("*.yaml")))
    assert {entry.target for entry in entries} >= {"tansu", "rdkafka-mock"}
    assert all(entry.reason for entry in entries)


def test_many_missing_items_are_summed_per_suite(tmp_path, capsys):
    base = write_jsonl(tmp_path / "base.jsonl", [record(f"case-{n}", 1, "passed", suite="kip98.offsets")
                                                 for n in range(30)] + [record("commit", 3, "passed")])
    new = write_jsonl(tmp_path / "new.jsonl", [record("commit", 3, "passed")])
    assert main(["gate", "--baseline", str(base), "--results", str(new)]) == 0
    out = capsys.readouterr().out
    assert "MISSING from the results: kafka kip98.offsets: 30 items of the baseline" in out
    assert main(["gate", "--baseline", str(base), "--results", str(new), "--strict"]) == 1
