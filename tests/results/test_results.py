"""The JSONL results file: appended line by line, readable after a crash, shared by concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import re

import pytest

from conformance.results.store import ResultsWriter, new_run_id, read_lines


def test_records_are_read_back_in_order_and_filtered_by_run(tmp_path):
    writer = ResultsWriter(tmp_path / "nested" / "results.jsonl")
    for number in range(3):
        writer.append({"run_id": "a" if number < 2 else "b", "number": number})
    assert [record["number"] for record in read_lines(writer.path)] == [0, 1, 2]
    assert [record["number"] for record in read_lines(writer.path, run_id="a")] == [0, 1]


@pytest.mark.parametrize("run_id", ["20261127T141949Z-7c67d8", 'nightly "é" \\ run'])
def test_a_run_is_found_among_others_however_its_id_is_spelled_in_json(tmp_path, run_id):
    writer = ResultsWriter(tmp_path / "results.jsonl")
    for number in range(4):
        writer.append({"run_id": run_id if number % 2 else "20261127T000000Z-000000", "number": number,
                       "message": "a line that mentions 20261127T141949Z-7c67d8 in its text"})
    assert [record["number"] for record in read_lines(writer.path, run_id=run_id)] == [1, 3]


def test_a_truncated_last_line_from_a_killed_run_is_dropped_quietly(tmp_path, recwarn):
    path = tmp_path / "results.jsonl"
    path.write_text('{"run_id": "a", "number": 0}\n{"run_id": "a", "numb')
    assert read_lines(path) == [{"run_id": "a", "number": 0}]
    assert len(recwarn) == 0


def test_appending_after_a_truncated_line_keeps_the_new_record_whole(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"run_id": "a", "number": 0}\n{"run_id": "a", "numb')
    ResultsWriter(path).append({"run_id": "b", "number": 1})
    with pytest.warns(UserWarning, match=r"results.jsonl:2: incomplete record"):
        records = read_lines(path)
    assert records == [{"run_id": "a", "number": 0}, {"run_id": "b", "number": 1}]


def test_results_of_schema_2_read_an_implementation_departure_as_differs(tmp_path):
    """Schema 2 wrote "failed" for an IMPLEMENTATION item whose step under test departed; schema 3
    writes "differs". A crash stays "failed" in both, and schema 3 records are read as written."""
    writer = ResultsWriter(tmp_path / "results.jsonl")
    rows = [(2, "IMPLEMENTATION", "failed", "2 send Produce: expected INVALID_TOPIC_EXCEPTION, got NONE"),
            (2, "IMPLEMENTATION", "failed", "the target stopped answering after this case: connection refused"),
            (2, "MUST", "failed", "1 send EndTxn: expected NONE"),
            (None, "IMPLEMENTATION", "failed", "a record from before schema versions"),
            (3, "IMPLEMENTATION", "failed", "the target stopped answering after this case (refused); restarted"),
            (3, "IMPLEMENTATION", "differs", "2 send Produce: expected INVALID_TOPIC_EXCEPTION, got NONE")]
    for version, requirement, outcome, message in rows:
        writer.append({"schema_version": version, "run_id": "a", "requirement": requirement, "outcome": outcome,
                       "message": message})
    assert [record["outcome"] for record in read_lines(writer.path)] == [
        "differs", "failed", "failed", "differs", "failed", "differs"]


def test_a_missing_file_has_no_results(tmp_path):
    assert read_lines(tmp_path / "absent.jsonl") == []


def _append_many(path: str, writer_number: int) -> None:
    writer = ResultsWriter(path)
    for number in range(40):
        writer.append({"writer": writer_number, "number": number, "padding": "x" * 150_000})


def test_concurrent_writers_never_interleave_lines(tmp_path):
    """Lines far above PIPE_BUF, as xdist workers with long transcripts would write."""
    path = tmp_path / "results.jsonl"
    processes = [multiprocessing.Process(target=_append_many, args=(str(path), writer)) for writer in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    records = read_lines(path)
    assert len(records) == 160
    for writer in range(4):
        assert [record["number"] for record in records if record["writer"] == writer] == list(range(40))


def test_run_ids_sort_by_start_time_and_differ():
    first, second = new_run_id(), new_run_id()
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", first)
    assert first != second


def test_reading_one_run_decodes_only_its_own_lines(tmp_path, monkeypatch):
    """A results file collects every run of a day; the end of a run must not decode them all again."""
    import conformance.results.store as results

    writer = ResultsWriter(tmp_path / "results.jsonl")
    for run in range(50):
        for number in range(20):
            writer.append({"run_id": f"run-{run:02d}", "number": number})
    decoded, loads = [], json.loads
    monkeypatch.setattr(results.json, "loads", lambda line: decoded.append(line) or loads(line))
    assert len(read_lines(writer.path, run_id="run-07")) == 20
    assert len(decoded) == 20


def test_records_read_back_typed_whatever_version_wrote_them(tmp_path):
    from conformance.results.record import ResultRecord
    from conformance.results.store import read_records

    writer = ResultsWriter(tmp_path / "results.jsonl")
    current = ResultRecord(run_id="r", suite="kip98", case="c", api="EndTxn", api_version=3, outcome="blocked")
    writer.append(current.to_line())
    # a version 2 line: no step_api, and an IMPLEMENTATION item that departed was "failed"
    writer.append({"schema_version": 2, "run_id": "r", "suite": "kip98", "case": "d", "outcome": "failed",
                   "requirement": "IMPLEMENTATION", "message": "expected 0"})
    first, old = read_records(writer.path, run_id="r")
    assert first.to_line() == current.to_line()
    assert (old.outcome, old.step_api, old.case) == ("differs", None, "d")


def test_outcomes_say_themselves_how_they_group():
    from conformance.results.record import OUTCOME_ORDER, SEVERITY_ORDER, Outcome

    assert [outcome for outcome in Outcome if not outcome.tested] == [Outcome.UNSUPPORTED, Outcome.SKIPPED]
    assert [outcome for outcome in Outcome if outcome.incomplete] == [Outcome.BLOCKED, Outcome.ERROR]
    assert [outcome for outcome in Outcome if outcome.uneventful] == [Outcome.PASSED, Outcome.UNSUPPORTED,
                                                                      Outcome.SKIPPED]
    assert Outcome.DIFFERS.label == "differs from Kafka" and Outcome.FAILED.label == "failed"
    assert sorted(SEVERITY_ORDER) == sorted(OUTCOME_ORDER) and SEVERITY_ORDER[0] == "failed"
