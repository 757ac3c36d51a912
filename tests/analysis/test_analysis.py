"""The analysis pipeline on a local Spark: tables, the five jobs, ingestion and the command line.

The inputs are made here: results records of three runs of one target (an item that fails once
between two passes, another fixed in the second run) and one run of another target, and a
capture written packet by packet, so every expected number can be worked out by hand.
"""

from __future__ import annotations

import base64
import json

import pytest

pytest.importorskip("pyspark")

from conformance.analysis import captures, warehouse  # noqa: E402
from conformance.analysis.inputs import collect  # noqa: E402
from conformance.analysis.jobs import job  # noqa: E402
from conformance.capture.pcap import read_capture  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from analysis_captures import write_capture  # noqa: E402

pytestmark = [pytest.mark.broker, pytest.mark.spark]  # every test here starts Spark's JVM

RUNS = {  # run id -> (target, day, {(case, version): outcome})
    "20261120T010000Z-aaaaaa": ("alpha", "2026-11-20", {("c1", 0): "passed", ("c1", 1): "passed",
                                                       ("c2", 0): "failed", ("c3", 0): "passed"}),
    "20261121T010000Z-bbbbbb": ("alpha", "2026-11-21", {("c1", 0): "failed", ("c1", 1): "passed",
                                                       ("c2", 0): "passed", ("c3", 0): "passed"}),
    "20261122T010000Z-cccccc": ("alpha", "2026-11-22", {("c1", 0): "passed", ("c1", 1): "passed",
                                                       ("c2", 0): "passed", ("c3", 0): "passed"}),
    "20261122T020000Z-dddddd": ("beta", "2026-11-22", {("c1", 0): "passed", ("c1", 1): "unsupported",
                                                      ("c2", 0): "error"}),
}
REQUIREMENTS = {"c1": "MUST", "c2": "MUST", "c3": "SHOULD"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def transcript() -> list[dict]:
    """Two exchanges: an EndTxn answered with a nested error code, and one never answered."""
    return [
        {"connection": "node-1", "api": "AddPartitionsToTxn", "api_key": 24, "version": 3, "correlation_id": 4,
         "step": "2 send", "sent_at": 1795400000.0, "received_at": 1795400000.012, "elapsed_ms": 12.0,
         "request": {}, "response": {"throttle_time_ms": 0, "results": [{"name": "t", "results": [
             {"partition_index": 0, "partition_error_code": 48}, {"partition_index": 1, "partition_error_code": 0}]}]},
         "request_bytes": b64(b"x" * 41), "response_bytes": b64(b"y" * 30), "problem": None},
        {"connection": "node-1", "api": "EndTxn", "api_key": 26, "version": 3, "correlation_id": 5,
         "step": "3 send", "sent_at": 1795400001.0, "received_at": None, "elapsed_ms": None,
         "request": {}, "response": None, "request_bytes": b64(b"z" * 40), "response_bytes": None,
         "problem": "no response"},
    ]


def record(run_id: str, target: str, day: str, case: str, version: int, outcome: str, **extra) -> dict:
    return {"schema_version": 2, "run_id": run_id, "target": target, "target_version": "1.0", "suite": "s",
            "case": case, "title": case, "kip": "KIP-98", "api": "EndTxn", "api_version": version,
            "outcome": outcome, "requirement": REQUIREMENTS[case], "cites": "", "draft": False, "tags": ["t"],
            "duration_s": 0.5, "message": "" if outcome == "passed" else f"{case} {outcome}", "step": None,
            "step_label": None, "step_role": None, "step_api": None, "expected": None, "actual": None,
            "path": "s.yaml", "artifacts": {}, "transcript": [], "nodeid": f"s.yaml::{case}[{target}-v{version}]",
            "verdict": outcome, "strict": False, "worker": "main", "recorded_at": f"{day}T01:00:0{version}Z",
            **extra}


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("analysis-corpus")
    capture_dir = folder / "captures" / "20261122T010000Z-cccccc"
    capture_dir.mkdir(parents=True)
    pcap = capture_dir / "s.c1_alpha-v0_.pcapng"
    write_capture(pcap)
    for run_id, (target, day, outcomes) in RUNS.items():
        lines = []
        for (case, version), outcome in outcomes.items():
            extra = {}
            if run_id.endswith("cccccc") and (case, version) == ("c1", 0):
                extra = {"transcript": transcript(), "artifacts": {"pcap": str(pcap)}}
            lines.append(json.dumps(record(run_id, target, day, case, version, outcome, **extra)))
        text = "\n".join(lines) + "\n"
        if target == "beta":
            text += '{"schema_version": 2, "run_id": "killed-mid-line", "outc'  # a writer killed mid-line
        (folder / f"{run_id}.jsonl").write_text(text)
    return folder


@pytest.fixture(scope="session")
def spark():
    from conformance.analysis.spark_session import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def tables(spark, corpus):
    built = warehouse.build(spark, collect([str(corpus)]))
    return warehouse.Tables(built.items.cache(), built.exchanges.cache())


def rows(frame, *keys) -> dict:
    return {tuple(row[key] for key in keys): row for row in frame.collect()}


def test_inputs_sorted_by_kind(corpus):
    found = collect([str(corpus), str(corpus / "*.jsonl"), str(corpus / "nothing-*.jsonl")])
    assert len(found.results) == 8  # the folder's four, and the glob's four again
    assert found.captures == [] and found.capture_folders == [str(corpus)]  # Spark lists folders itself
    assert [name.endswith("s.c1_alpha-v0_.pcapng") for name in found.capture_files()] == [True]
    one = next((corpus / "captures").rglob("*.pcapng"))
    assert collect([str(one)]).captures == [str(one)]
    remote = collect(["hdfs://nn/kc/run.jsonl", "s3a://bucket/captures"])
    assert (remote.results, remote.capture_folders) == (["hdfs://nn/kc/run.jsonl"], ["s3a://bucket/captures"])
    assert found.missing == [str(corpus / "nothing-*.jsonl")]


def test_items_table(tables):
    items = tables.items
    assert items.count() == 15  # the half-written line is dropped
    row = rows(items.where("run_id = '20261122T010000Z-cccccc'"), "item")[("s::c1@v0",)]
    assert row.target == "alpha" and row.outcome == "passed" and row.exchanges == 2
    assert str(row.date) == "2026-11-22" and row.pcap.endswith("s.c1_alpha-v0_.pcapng")
    assert row.source_file.endswith("20261122T010000Z-cccccc.jsonl")


def test_transcript_exchanges(tables):
    found = rows(tables.exchanges.where("source = 'transcript'"), "api")
    answered, unanswered = found[("AddPartitionsToTxn",)], found[("EndTxn",)]
    assert answered.error_codes == [48]  # nested in results[].results[], zeros left out
    assert (answered.latency_ms, answered.request_bytes, answered.response_bytes) == (12.0, 41, 30)
    assert answered.item == "s::c1@v0" and answered.run_id == "20261122T010000Z-cccccc"
    assert unanswered.latency_ms is None and unanswered.response_bytes is None
    assert unanswered.problem == "no response" and unanswered.error_codes == []


def test_captures_decoded_in_executors_match_decode(tables, corpus):
    pcap = next((corpus / "captures").rglob("*.pcapng"))
    direct = read_capture(pcap)
    decoded = tables.exchanges.where("source = 'capture'").orderBy("sent_at").collect()
    exchanges = [row for row in decoded if row.kind == "exchange"]
    assert [(row.api, row.api_version, row.correlation_id) for row in exchanges] == [
        (exchange.api, exchange.version, exchange.correlation_id) for exchange in direct.exchanges]
    assert [row.latency_ms for row in exchanges] == [exchange.elapsed_ms for exchange in direct.exchanges]
    assert [row.error_codes for row in exchanges] == [[], [48]]
    assert [row.response_bytes for row in exchanges] == [len(e.response_bytes) for e in direct.exchanges]
    closes = [row for row in decoded if row.kind == "close"]
    assert [(row.closed_by, row.how) for row in closes] == [("server", "FIN")]
    # matched to the results record that names the file
    assert {(row.run_id, row.target, row.item) for row in decoded} == {
        ("20261122T010000Z-cccccc", "alpha", "s::c1@v0")}


def test_both_capture_readers_agree(spark, corpus):
    folder = str(corpus / "captures")
    by_name = captures.decoded(spark, [], [folder], reader="path").drop("capture_file").collect()
    by_bytes = captures.decoded(spark, [], [folder], reader="binary").drop("capture_file").collect()
    assert len(by_name) == 3 and sorted(map(tuple, by_name)) == sorted(map(tuple, by_bytes))


@pytest.mark.parametrize("reader", ["path", "binary"])
def test_unreadable_capture_is_a_row(spark, tmp_path, reader):
    bad = tmp_path / "run" / "broken.pcapng"
    bad.parent.mkdir()
    bad.write_bytes(b"not a capture at all")
    found = captures.capture_exchanges(spark, [str(bad)], reader=reader).collect()
    assert len(found) == 1 and found[0].kind == "unreadable" and "not a pcap" in found[0].problem
    assert found[0].run_id == "run" and found[0].target == "unknown"


def test_matrix(tables):
    result = job("matrix").run(tables)
    cells = rows(result["matrix"], "target", "case", "api_version")
    assert cells[("alpha", "c1", 0)].outcome == "passed"
    assert cells[("alpha", "c1", 0)].run_id == "20261122T010000Z-cccccc"
    assert cells[("beta", "c2", 0)].outcome == "error"
    assert result["matrix"].count() == 7
    levels = rows(result["kip_levels"], "target", "requirement")
    beta = levels[("beta", "MUST")]
    assert (beta.passed, beta.error, beta.unsupported, beta.total) == (1, 1, 1, 3)
    assert beta.pass_rate == 0.5  # the unsupported item is out of the denominator
    assert levels[("alpha", "SHOULD")].passed == 1


def test_regressions_along_history(tables):
    changes = job("regressions").run(tables)["changes"].collect()
    found = [(row.item, row.previous_outcome, row.outcome, row.change, row.first) for row in changes]
    assert found == [("s::c1@v0", "passed", "failed", "regression", True),
                     ("s::c1@v0", "failed", "passed", "improvement", False),
                     ("s::c2@v0", "failed", "passed", "improvement", True)]
    assert changes[0].run_id == "20261121T010000Z-bbbbbb"


def test_regressions_between_two_runs(tables):
    same_target = job("regressions").run(tables, base="20261120T01", new="20261121T01")["between"]
    assert sorted((row.item, row.change) for row in same_target.collect()) == [
        ("s::c1@v0", "regression"), ("s::c2@v0", "improvement")]
    across = job("regressions").run(tables, base="20261122T010000Z-cccccc", new="20261122T020000Z-dddddd")["between"]
    assert sorted((row.item, row.base_outcome, row.new_outcome, row.change) for row in across.collect()) == [
        ("s::c1@v1", "passed", "unsupported", "changed"), ("s::c2@v0", "passed", "error", "regression"),
        ("s::c3@v0", "passed", None, "missing")]
    with pytest.raises(ValueError, match="matches 2 runs"):
        job("regressions").run(tables, base="20261122", new="20261121")


def test_flaky(tables):
    result = job("flaky").run(tables)
    flaky = result["flaky"].collect()
    assert [(row.item, row.runs, row.flips, row.passed, row.failed) for row in flaky] == [
        ("s::c1@v0", 3, 2, 2, 1), ("s::c2@v0", 3, 1, 2, 1)]
    assert flaky[0].flaky_rate == pytest.approx(1 / 3, abs=1e-4)
    summary = rows(result["flaky_summary"], "target")
    assert (summary[("alpha",)].items_seen_twice, summary[("alpha",)].flaky) == (4, 2)
    assert ("beta",) not in summary  # one run: nothing to compare


def test_latency_and_error_codes(tables):
    result = job("latency").run(tables)
    latency = rows(result["latency"], "source", "api")
    assert latency[("transcript", "AddPartitionsToTxn")].p99_ms == 12.0
    assert latency[("capture", "EndTxn")].exchanges == 1
    assert ("transcript", "EndTxn") not in latency  # unanswered: no latency
    errors = rows(result["error_codes"], "source", "api", "error")
    assert errors[("capture", "EndTxn", "INVALID_TXN_STATE")]["count"] == 1
    assert errors[("capture", "InitProducerId", "NONE")]["count"] == 1
    assert errors[("transcript", "EndTxn", "NONE")]["count"] == 1
    unanswered = rows(result["unanswered"], "source", "api")
    assert unanswered[("transcript", "EndTxn")].unanswered == 1
    assert rows(result["closes"], "closed_by", "how")[("server", "FIN")]["count"] == 1
    only = job("latency").run(tables, source="capture")["latency"]
    assert {row.source for row in only.collect()} == {"capture"}


def test_history_levels(tables):
    result = job("history").run(tables)
    levels = [(row.target, row.run_id[:8], row.level) for row in result["levels"].collect()]
    assert levels == [("alpha", "20261120", "none"), ("alpha", "20261121", "none"), ("alpha", "20261122", "strict"),
                      ("beta", "20261122", "none")]
    runs = rows(result["runs"], "run_id")
    assert runs[("20261122T020000Z-dddddd",)].error == 1


def test_ingest_is_idempotent_and_merges(spark, tables, tmp_path):
    store = tmp_path / "warehouse"
    first = warehouse.ingest(spark, tables, store)
    again = warehouse.ingest(spark, tables, store)
    assert first == again == {"items": 15, "exchanges": 5}  # 2 from the transcript, 2 + a close captured
    assert (store / "items" / "target=alpha" / "date=2026-11-22").is_dir()
    # A run ingested alone is added to its partition; the other run there stays.
    alone = warehouse.Tables(tables.items.where("run_id = '20261122T010000Z-cccccc'"),
                             tables.exchanges.limit(0))
    warehouse.ingest(spark, alone, store)
    back = warehouse.build(spark, collect([str(store)]))
    assert back.items.count() == 15 and back.exchanges.count() == 5
    assert back.items.where("target = 'beta'").count() == 3


def test_a_warehouse_of_the_old_item_spelling_reads_as_the_item_id(spark, tables, tmp_path):
    """Tables written before the item id had one spelling said ``suite/case[vN]``: read back, and merged
    into by a later ingest, they say ``suite::case@vN`` so old and new rows are one item."""
    store = tmp_path / "warehouse"
    old = tables.items.withColumn("item", F.regexp_replace(F.regexp_replace("item", "::", "/"), "@v([0-9]+)$", "[v$1]"))
    assert old.where("item = 's/c1[v0]'").count() > 0
    warehouse.ingest(spark, warehouse.Tables(old, tables.exchanges), store)
    back = warehouse.build(spark, collect([str(store)]))
    assert {row.item for row in back.items.select("item").distinct().collect()} == {
        row.item for row in tables.items.select("item").distinct().collect()}
    later = tables.items.where("run_id = '20261122T010000Z-cccccc'").withColumn("run_id", F.lit("later-run"))
    warehouse.ingest(spark, warehouse.Tables(later, tables.exchanges.limit(0)), store)
    rewritten = spark.read.parquet(str(store / "items" / "target=alpha" / "date=2026-11-22"))
    assert rewritten.count() == 2 * later.count()  # the partition's earlier run is kept, respelt
    assert {row.item for row in rewritten.select("item").distinct().collect()} <= {
        row.item for row in tables.items.select("item").distinct().collect()}


def test_command_line(spark, corpus, tmp_path, capsys):
    from conformance.cli import main

    out = tmp_path / "out"
    assert main(["analyze", "all", str(corpus), "--out", str(out), "--limit", "3"]) == 0
    printed = capsys.readouterr().out
    assert "regressions: changes" in printed and "history: levels" in printed
    for name in ("matrix", "regressions", "flaky", "latency", "history"):
        assert (out / name / "index.html").is_file()
    assert spark.read.parquet(str(out / "flaky" / "flaky")).count() == 2
    assert (out / "latency" / "latency.png").stat().st_size > 1000
    assert "<img" in (out / "matrix" / "index.html").read_text()
    assert spark.sparkContext._jsc is not None  # the command left the caller's session running
    assert main(["analyze", "matrix", str(tmp_path / "nothing")]) == 2


def test_implementation_items_that_differ_from_kafka_are_their_own_outcome(spark, tmp_path):
    """Schema 2 wrote "failed" for an IMPLEMENTATION item that departed: read as "differs", counted
    apart, and passed -> differs is a change, never a regression. A crash stays "failed"."""
    first, second = "20261101T010000Z-eeeeee", "20261102T010000Z-ffffff"
    implementation = {"requirement": "IMPLEMENTATION"}
    lines = [record(first, "gamma", "2026-11-01", "c1", 0, "passed", **implementation),
             record(first, "gamma", "2026-11-01", "c2", 0, "passed", **implementation),
             record(first, "gamma", "2026-11-01", "c3", 0, "passed", **implementation),
             record(second, "gamma", "2026-11-02", "c1", 0, "failed", **implementation),  # schema 2
             record(second, "gamma", "2026-11-02", "c2", 0, "differs", schema_version=3, **implementation),
             record(second, "gamma", "2026-11-02", "c3", 0, "failed", **implementation,
                    message="the target stopped answering after this case: connection refused")]
    (tmp_path / "gamma.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    built = warehouse.build(spark, collect([str(tmp_path)]))
    tables = warehouse.Tables(built.items.cache(), built.exchanges.cache())
    outcomes = {row.case: row.outcome for row in tables.items.where(f"run_id = '{second}'").collect()}
    assert outcomes == {"c1": "differs", "c2": "differs", "c3": "failed"}
    levels = rows(job("matrix").run(tables)["kip_levels"], "target", "requirement")
    assert (levels[("gamma", "IMPLEMENTATION")].differs, levels[("gamma", "IMPLEMENTATION")].failed) == (2, 1)
    changes = {row.item: row.change for row in job("regressions").run(tables)["changes"].collect()}
    assert changes == {"s::c1@v0": "changed", "s::c2@v0": "changed", "s::c3@v0": "regression"}
    runs = rows(job("history").run(tables)["runs"], "run_id")
    assert (runs[(second,)].differs, runs[(second,)].failed) == (2, 1)
