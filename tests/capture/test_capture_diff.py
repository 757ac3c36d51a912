"""Wire diffs: alignment, field-by-field differences, normalisation rules and the renderers."""

from __future__ import annotations

import json

import pytest

from conformance.capture.diff import diff_exchanges, diff_runs
from conformance.capture.html_report import render_html
from conformance.capture.normalise import Rules
from conformance.capture.render import render_json, render_text, single
from conformance.capture.wire import ConnectionEvent, WireExchange
from conformance.protocol.records import control_batch, encode_batch


def exchange(api: str, request: dict, response: dict | None, *, step: str | None = None,
             connection: str = "127.0.0.1:50000>127.0.0.1:9092", version: int = 5, correlation_id: int = 1,
             client_id: str = "kafka-conformance") -> WireExchange:
    return WireExchange(connection, api, 0, version, correlation_id, b"\0\0\0\0", response_bytes=b"\0\0\0\0",
                        request_header={"client_id": client_id}, request=request, response=response, step=step,
                        sent_at=float(correlation_id))


def run(suffix: str, producer_id: int, port: int, *, error_code: int = 0, with_message: bool = True,
        tagged: dict | None = None, commit: bool = True) -> list:
    """One made-up run of a transactional case; the arguments are what differs between runs."""
    txn = f"kip98.transactions.case.main.{suffix}"
    topic = f"kip98.transactions.case.out.{suffix}"
    coordinator = {"throttle_time_ms": 3, "coordinators": [
        {"key": txn, "node_id": port % 7, "host": "127.0.0.1", "port": port, "error_code": 0, "error_message": None}]}
    init = {"throttle_time_ms": 0, "error_code": error_code, "producer_id": producer_id, "producer_epoch": 0}
    if tagged:
        init["_unknown_tagged"] = tagged
    end = {"throttle_time_ms": 0, "error_code": 0}
    if with_message:
        end["error_message"] = None
    marker = encode_batch(control_batch(producer_id, 0, commit, coordinator_epoch=0, base_offset=5, timestamp=1700))
    fetch = {"throttle_time_ms": 0, "error_code": 0, "session_id": 77, "responses": [{"topic": topic, "partitions": [
        {"partition_index": 0, "error_code": 0, "high_watermark": 6, "last_stable_offset": 6, "log_start_offset": 0,
         "aborted_transactions": [], "preferred_read_replica": -1, "records": marker}]}]}
    return [
        exchange("FindCoordinator", {"key_type": 1, "coordinator_keys": [txn]}, coordinator, step="1 send FindCoordinator",
                 correlation_id=1),
        exchange("InitProducerId", {"transactional_id": txn, "transaction_timeout_ms": 60000, "producer_id": -1,
                                    "producer_epoch": -1}, init, step="2 send InitProducerId", correlation_id=2),
        exchange("EndTxn", {"transactional_id": txn, "producer_id": producer_id, "producer_epoch": 0, "committed": True},
                 end, step="3 send EndTxn", correlation_id=3),
        exchange("Fetch", {"isolation_level": 1, "topics": [{"topic": topic, "partitions": [{"partition": 0}]}]}, fetch,
                 step="4 fetch", correlation_id=4),
    ]


def kinds_and_paths(result) -> set[tuple[str, str]]:
    return {(difference.kind, difference.path) for difference in result.differences}


def test_exactly_the_real_differences_are_reported():
    kafka = run("runA-1", producer_id=1000, port=9092)
    other = run("runB-9", producer_id=5, port=19092, error_code=51, with_message=False, tagged={7: b"\x01\x02"},
                commit=False)
    result = diff_exchanges(kafka, other)
    assert kinds_and_paths(result) == {
        ("error_code", "response.error_code"),
        ("tagged", "response._unknown_tagged"),
        ("absent", "response.error_message"),
        ("records", "response.responses[topic=<topic#2>].partitions[partition_index=0].records.batches[0].control_types[0]"),
    }
    by_kind = {difference.kind: difference for difference in result.differences}
    assert (by_kind["error_code"].a, by_kind["error_code"].b) == (0, 51)
    assert by_kind["error_code"].key == "2 send InitProducerId / InitProducerId #1"
    assert by_kind["error_code"].describe() == "response.error_code: 0 NONE vs 51 CONCURRENT_TRANSACTIONS"
    assert (by_kind["records"].a, by_kind["records"].b) == ("COMMIT", "ABORT")


def test_normalisation_hides_run_specific_values():
    assert diff_exchanges(run("runA-1", 1000, 9092), run("runB-9", 5, 19092)).same


def test_without_rules_the_masked_fields_differ():
    unmasked = Rules(mask=[], presence=[])
    paths = {path for _, path in kinds_and_paths(diff_exchanges(run("runA-1", 1000, 9092), run("runB-9", 5, 19092), unmasked))}
    assert {"response.coordinators[key=<key#1>].port", "response.producer_id", "request.producer_id"} <= paths
    nothing = Rules(mask=[], ordinal=[], presence=[])
    paths = {path for _, path in kinds_and_paths(diff_exchanges(run("runA-1", 1000, 9092), run("runB-9", 5, 19092), nothing))}
    assert "request.transactional_id" in paths


def test_rules_file_extends_the_defaults(tmp_path):
    rules_file = tmp_path / "rules.json"
    rules_file.write_text(json.dumps({"extend_mask": ["error_code"]}))
    rules = Rules.load(rules_file)
    assert "producer_id" in " ".join(rules.mask)  # defaults kept
    assert diff_exchanges(run("a-1", 1, 1), run("b-1", 2, 2, error_code=51), rules).same
    rules_file.write_text(json.dumps({"mask_everything": True}))
    with pytest.raises(ValueError, match="unknown rule keys"):
        Rules.load(rules_file)


def test_extra_exchanges_and_ordering():
    a = run("a-1", 1, 1)
    b = run("b-1", 1, 1)
    b.insert(1, exchange("Metadata", {"topics": None}, {"brokers": []}, step="1 send FindCoordinator", correlation_id=9))
    a[2].sent_at, a[3].sent_at = a[3].sent_at, a[2].sent_at
    a[2], a[3] = a[3], a[2]
    result = diff_exchanges(a, b)
    assert kinds_and_paths(result) == {("only_in_b", ""), ("ordering", "exchange 3")}
    assert [pair.key for pair in result.pairs][:3] == [
        "1 send FindCoordinator / FindCoordinator #1", "1 send FindCoordinator / Metadata #1",
        "2 send InitProducerId / InitProducerId #1"]


def test_lists_of_structs_are_matched_by_identity():
    partitions = [{"partition_index": index, "error_code": 0} for index in range(3)]
    a = [exchange("ListOffsets", {}, {"topics": [{"name": "t", "partitions": partitions}]})]
    b = [exchange("ListOffsets", {}, {"topics": [{"name": "t", "partitions": partitions[::-1]}]})]
    result = diff_exchanges(a, b)
    assert kinds_and_paths(result) == {("ordering", "response.topics[name=t].partitions")}


def test_the_order_of_api_versions_entries_is_not_a_difference_but_their_ranges_are():
    keys = [{"api_key": key, "min_version": 0, "max_version": 4} for key in (0, 1, 18, 22)]
    features = [{"name": name, "min_version": 0, "max_version": 2} for name in ("transaction.version", "kraft.version")]

    def versions(entries, supported):
        return [exchange("ApiVersions", {}, {"error_code": 0, "api_keys": entries, "supported_features": supported})]

    assert diff_exchanges(versions(keys, features), versions(keys[::-1], features[::-1])).differences == []
    changed = [*keys[:-1], {**keys[-1], "max_version": 5}]
    result = diff_exchanges(versions(keys, features), versions(changed[::-1], features))
    assert [difference.kind for difference in result.differences] == ["value"]
    assert "max_version" in result.differences[0].path


def test_server_closes_are_compared_client_closes_are_not():
    a = run("a-1", 1, 1)
    b = run("b-1", 1, 1)
    connection = a[0].connection
    a.append(ConnectionEvent(connection, 9.0, "client", "FIN"))
    b.append(ConnectionEvent(connection, 9.0, "server", "RST"))
    result = diff_exchanges(a, b)
    assert [(d.kind, d.path, d.a, d.b) for d in result.differences] == [
        ("close", "connection 1", None, "closed by the server (RST)")]


def test_steps_are_ignored_when_one_side_has_none():
    a = run("a-1", 1, 1)
    b = run("b-1", 1, 1)
    for item in b:
        item.step = None
    result = diff_exchanges(a, b)
    assert result.same
    assert result.pairs[0].key == "FindCoordinator #1"


def test_problems_compare_by_kind():
    a = run("a-1", 1, 1)
    b = run("b-1", 1, 1)
    a[1].problems = ["disconnected: broker closed the connection without answering"]
    b[1].problems = ["no response: the server closed the connection (FIN)"]
    assert diff_exchanges(a, b).same
    b[1].problems = ["response does not decode: ..."]
    assert ("problem", "problems[0]") in kinds_and_paths(diff_exchanges(a, b))


def test_inter_broker_traffic_is_ignored_by_default():
    a = run("a-1", 1, 1)
    b = run("b-1", 1, 1)
    a.append(exchange("WriteTxnMarkers", {}, {}, client_id="broker-1-txn-marker-sender", correlation_id=7))
    assert diff_exchanges(a, b).same
    assert not diff_exchanges(a, b, Rules(ignore_client_ids=[])).same


def test_runs_pair_cases_and_list_the_unpaired():
    result = diff_runs({"s::x[v1]": run("a-1", 1, 1), "s::only-a[v1]": []},
                       {"s::x[v1]": run("b-1", 1, 1, error_code=3), "s::only-b[v2]": []})
    assert (result.only_in_a, result.only_in_b) == (["s::only-a[v1]"], ["s::only-b[v2]"])
    assert [case.label for case in result.cases] == ["s::x[v1]"]
    assert not result.same


def test_renderers():
    hostile = run("<script>alert(1)</script>", 1, 1)
    other = run("b-1", 1, 1, error_code=51)
    hostile[1].response["error_message"] = "</td><script>alert(2)</script>"
    other[1].response["error_message"] = None
    result = single(diff_exchanges(hostile, other, label="s::x[v5]"), "kafka <a>", "tansu")
    text = render_text(result)
    assert "[error_code] 2 send InitProducerId / InitProducerId #1  response.error_code: 0 NONE vs 51" in text
    assert "1 compared, 1 differ, 2 differences (error_code 1, absent 1)" in text
    document = json.loads(render_json(result))
    assert document["cases"][0]["differences"][0]["kind"] == "error_code"
    page = render_html(result)
    assert "<script>" not in page
    assert "&lt;script&gt;alert(2)" not in page  # presence-only: the text itself never reaches the page
    assert "kafka &lt;a&gt;" in page
    assert "<tr class='differs'><td class='path'>response.error_code</td>" in page
