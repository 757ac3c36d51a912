"""How fast captures decode: ours against tshark's Kafka dissector on the same generated file.

``python -m conformance.bench.capture [--frames N] [--connections N] [--keep FILE]``

The file holds small Produce and Fetch exchanges (with record batches) spread over a few
connections, one frame per TCP segment, as a client without pipelining sends them. Both
decoders read it from a warm page cache; tshark is asked only for correlation ids, the least
it can do while still dissecting every Kafka PDU.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..protocol import frames
from ..protocol.codec import default_codec
from ..protocol.records import Record, RecordBatch, encode_batch
from ..capture.pcap import read_capture
from ..capture.writer import PcapWriter, SyntheticConnection, link_frame

PORT = 9092
PRODUCE_VERSION, FETCH_VERSION = 8, 11  # the newest tshark 4.0 dissects, so it does its full work


def exchange_frames(correlation_id: int) -> tuple[bytes, bytes]:
    """A Produce or a Fetch (alternately) request and response frame."""
    codec = default_codec()
    batch = encode_batch(RecordBatch(producer_id=1000, producer_epoch=0, base_sequence=correlation_id,
                                     records=[Record(key=b"key", value=b"value-%d" % correlation_id)]))
    request: dict
    response: dict
    if correlation_id % 2:
        request = {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": "bench", "partition_data": [{"index": 0, "records": batch}]}]}
        response = {"responses": [{"name": "bench", "partition_responses": [
            {"index": 0, "error_code": 0, "base_offset": correlation_id, "log_append_time_ms": -1,
             "log_start_offset": 0, "record_errors": [], "error_message": None}]}], "throttle_time_ms": 0}
        api, version = "Produce", PRODUCE_VERSION
    else:
        request = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
                   "isolation_level": 1, "session_id": 0, "session_epoch": -1, "topics": [
                       {"topic": "bench", "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                          "fetch_offset": correlation_id, "log_start_offset": -1,
                                                          "partition_max_bytes": 1 << 20}]}],
                   "forgotten_topics_data": [], "rack_id": ""}
        response = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
            {"topic": "bench", "partitions": [
                {"partition_index": 0, "error_code": 0, "high_watermark": correlation_id + 1,
                 "last_stable_offset": correlation_id + 1, "log_start_offset": 0, "aborted_transactions": [],
                 "preferred_read_replica": -1, "records": batch}]}]}
        api, version = "Fetch", FETCH_VERSION
    return (frames.encode_request(codec, api, version, correlation_id, request),
            frames.encode_response(codec, api, version, correlation_id, response))


def generate(path: Path, frame_count: int, connection_count: int) -> int:
    """Write the benchmark capture; returns the number of Kafka frames in it."""
    connections = [SyntheticConnection(client=("127.0.0.1", 40000 + index), server=("127.0.0.1", PORT))
                   for index in range(connection_count)]
    clock = 1_700_000_000.0
    written = 0
    with PcapWriter(path) as writer:
        def put(packets: list[bytes]) -> None:
            nonlocal clock
            for packet in packets:
                clock += 0.000_01
                writer.write(clock, link_frame(1, packet))

        for connection in connections:
            put(connection.handshake())
        pairs = frame_count // 2
        for correlation_id in range(1, pairs + 1):
            connection = connections[correlation_id % connection_count]
            request, response = exchange_frames(correlation_id)
            put(connection.segments(True, request))
            put(connection.segments(False, response))
            written += 2
        for connection in connections:
            put(connection.close())
    return written


def time_ours(path: Path, bodies: bool) -> tuple[float, int]:
    """``(seconds, frames)`` of reading the capture with the harness's own reader."""
    started = time.perf_counter()
    capture = read_capture(path, [PORT], bodies=bodies)
    return time.perf_counter() - started, capture.frames


def time_tshark(path: Path) -> tuple[float, int] | None:
    """``(seconds, frames)`` of tshark reading the capture, or None where tshark is not installed."""
    binary = shutil.which("tshark")
    if binary is None:
        return None
    started = time.perf_counter()
    result = subprocess.run([binary, "-r", str(path), "-d", f"tcp.port=={PORT},kafka", "-T", "fields",
                             "-e", "kafka.correlation_id"], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - started
    pdus = sum(len(line.split(",")) for line in result.stdout.splitlines() if line.strip())
    return elapsed, pdus


def main(argv: list[str] | None = None) -> int:
    """Write a capture of generated Kafka traffic, read it with ours and with tshark, and print both rates; the exit
    status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.capture", description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=100_000, help="Kafka frames to generate (default 100000)")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--keep", type=Path, metavar="FILE", help="write the capture here and keep it")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = arguments.keep or Path(folder, "bench.pcap")
        started = time.perf_counter()
        frame_count = generate(path, arguments.frames, arguments.connections)
        print(f"generated {frame_count} frames, {path.stat().st_size / 1e6:.1f} MB, "
              f"in {time.perf_counter() - started:.1f}s")
        path.read_bytes()  # warm the page cache for both readers
        ours = {}
        for bodies, label in ((False, "ours, headers and pairing"), (True, "ours, every body decoded")):
            seconds, count = time_ours(path, bodies)
            ours[label] = (count / seconds, count)
            print(f"{label:27} {count} frames in {seconds:.2f}s = {count / seconds:>9,.0f} frames/s")
        measured = time_tshark(path)
        if measured is None:
            print("tshark: not installed (apt-get install tshark); no comparison")
            return 0
        tshark_seconds, tshark_frames = measured
        tshark_rate = tshark_frames / tshark_seconds
        print(f"{'tshark -e kafka.correlation_id':27} {tshark_frames} frames in {tshark_seconds:.2f}s = "
              f"{tshark_rate:>9,.0f} frames/s")
        for label, (rate, _) in ours.items():
            print(f"ratio ({label}): {rate / tshark_rate:.1f}x")
        counts = {count for _, count in ours.values()} | {tshark_frames}
        if counts != {frame_count}:
            print(f"warning: expected {frame_count} frames from every decoder, got {sorted(counts)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
