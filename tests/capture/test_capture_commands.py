"""``conformance decode`` and ``conformance diff``, and loading results files and captures alike."""

from __future__ import annotations

import json
import time

from conformance.cli import main
from conformance.capture.loaders import load_run
from conformance.capture.writer import SyntheticConnection, write_packets
from conformance.client.transcript import Exchange
from conformance.protocol import frames
from conformance.protocol.codec import default_codec

CODEC = default_codec()
TXN = "kip98.transactions.case.main.run-1"


def init_producer_id(correlation_id: int, error_code: int, producer_id: int) -> tuple[bytes, bytes]:
    request = {"transactional_id": TXN, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
    response = {"throttle_time_ms": 0, "error_code": error_code, "producer_id": producer_id, "producer_epoch": 0}
    return (frames.encode_request(CODEC, "InitProducerId", 4, correlation_id, request),
            frames.encode_response(CODEC, "InitProducerId", 4, correlation_id, response))


def capture_file(path, pairs: list[tuple[bytes, bytes]], port: int = 9092, close_by_server: bool = False) -> None:
    connection = SyntheticConnection(server=("127.0.0.1", port))
    packets = connection.handshake()
    for request, response in pairs:
        packets += connection.segments(True, request) + connection.segments(False, response)
    packets += connection.close(by_client=not close_by_server)
    write_packets(path, packets, format=path.suffix.lstrip("."))


def results_file(path, pairs: list[tuple[bytes, bytes]], target: str = "kafka", outcome: str = "passed") -> None:
    transcript = []
    for request, response in pairs:
        header, body = frames.decode_request(CODEC, request[4:])
        exchange = Exchange("bootstrap", "InitProducerId", 22, 4, header["correlation_id"], body, request, time.time(),
                            step="1 send InitProducerId")
        exchange.response_header, exchange.response = frames.decode_response(CODEC, 22, 4, response[4:])
        exchange.response_bytes, exchange.received_at = response, time.time()
        transcript.append(exchange.to_json())
    record = {"suite": "kip98.transactions", "case": "init", "api_version": 4, "target": target, "outcome": outcome,
              "message": "", "transcript": transcript}
    with open(path, "a") as handle:
        handle.write(json.dumps(record) + "\n")


def test_decode_prints_one_line_per_exchange(tmp_path, capsys):
    capture_file(tmp_path / "a.pcap", [init_producer_id(1, 0, 4000), init_producer_id(2, 51, -1)], close_by_server=True)
    assert main(["decode", str(tmp_path / "a.pcap")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("#4 ")
    assert "127.0.0.1:50000>127.0.0.1:9092 InitProducerId v4 corr=1 -> " in lines[0] and lines[0].endswith(" ok")
    assert lines[1].endswith("CONCURRENT_TRANSACTIONS")
    assert lines[2].endswith("closed by the server (FIN)")
    assert lines[-1] == "2 exchanges, 4 frames, 1 closes in 9 packets"


def test_decode_json_and_verbose(tmp_path, capsys):
    capture_file(tmp_path / "a.pcap", [init_producer_id(1, 0, 4000)], port=45000)
    assert main(["decode", str(tmp_path / "a.pcap"), "--json", "--port", "45000", "--bytes"]) == 0
    document = json.loads(capsys.readouterr().out)
    (exchange,) = document["exchanges"]
    assert (exchange["api"], exchange["response"]["producer_id"], exchange["request_packet"]) == ("InitProducerId", 4000, 4)
    assert exchange["request_bytes"]
    assert document["events"][0]["by"] == "client"
    assert main(["decode", str(tmp_path / "a.pcap"), "-v"]) == 0
    assert f'request:  {{"transactional_id":"{TXN}"' in capsys.readouterr().out


def test_decode_refuses_a_file_that_is_not_a_capture(tmp_path, capsys):
    (tmp_path / "x.pcap").write_text("not a capture")
    assert main(["decode", str(tmp_path / "x.pcap")]) == 2
    assert "not a pcap or pcapng file" in capsys.readouterr().err


def test_results_and_captures_load_into_the_same_model(tmp_path):
    pairs = [init_producer_id(1, 0, 4000)]
    capture_file(tmp_path / "a.pcap", pairs)
    results_file(tmp_path / "a.jsonl", pairs)
    (wire,) = load_run(tmp_path / "a.pcap").groups["capture"][:1]
    run = load_run(tmp_path / "a.jsonl")
    (recorded,) = run.groups["kip98.transactions::init@v4"]
    assert run.outcomes == {"kip98.transactions::init@v4": "passed"}
    assert (recorded.request, recorded.response) == (wire.request, wire.response)
    assert (recorded.request_bytes, recorded.response_bytes) == (wire.request_bytes, wire.response_bytes)
    assert recorded.step == "1 send InitProducerId" and wire.step is None


def test_diff_of_results_files(tmp_path, capsys):
    results_file(tmp_path / "a.jsonl", [init_producer_id(1, 0, 4000)])
    results_file(tmp_path / "b.jsonl", [init_producer_id(1, 0, 12)])
    assert main(["diff", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]) == 0  # producer ids are masked
    assert capsys.readouterr().out.rstrip().endswith("1 compared, 0 differ, 0 differences")
    results_file(tmp_path / "c.jsonl", [init_producer_id(1, 51, -1)], outcome="failed")
    assert main(["diff", str(tmp_path / "a.jsonl"), str(tmp_path / "c.jsonl"), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [difference["kind"] for difference in document["cases"][0]["differences"]] == ["outcome", "error_code"]


def test_diff_of_captures_writes_html(tmp_path, capsys):
    capture_file(tmp_path / "a.pcap", [init_producer_id(1, 0, 4000)])
    capture_file(tmp_path / "b.pcap", [init_producer_id(1, 47, -1)], port=19092)
    out = tmp_path / "report" / "diff.html"
    assert main(["diff", str(tmp_path / "a.pcap"), str(tmp_path / "b.pcap"), "--html", str(out)]) == 1
    assert "1 compared, 1 differ, 1 difference (error_code 1)" in capsys.readouterr().out
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "47 INVALID_PRODUCER_EPOCH" in page


def test_diff_of_a_results_file_with_several_targets_needs_a_choice(tmp_path, capsys):
    results_file(tmp_path / "matrix.jsonl", [init_producer_id(1, 0, 4000)], target="kafka")
    results_file(tmp_path / "matrix.jsonl", [init_producer_id(1, 51, -1)], target="tansu")
    assert main(["diff", str(tmp_path / "matrix.jsonl"), str(tmp_path / "matrix.jsonl")]) == 2
    assert "choose one" in capsys.readouterr().err
    assert main(["diff", str(tmp_path / "matrix.jsonl"), str(tmp_path / "matrix.jsonl"),
                      "--a-target", "kafka", "--b-target", "tansu"]) == 1


def test_diff_of_capture_folders_pairs_files_by_name(tmp_path, capsys):
    for side, error in (("a", 0), ("b", 0)):
        (tmp_path / side).mkdir()
        capture_file(tmp_path / side / "suite--case--v4.pcapng", [init_producer_id(1, error, 7)])
    capture_file(tmp_path / "b" / "suite--other--v4.pcapng", [init_producer_id(1, 0, 7)])
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    output = capsys.readouterr().out
    assert "== only in B: 1 case\n   suite--other--v4" in output
    assert "1 compared, 0 differ, 0 differences; 0 only in A, 1 only in B" in output
