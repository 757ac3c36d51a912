"""Load either side of a diff: a capture file, a folder of them, or a results file.

Both become the same model: groups of :class:`~.wire.WireExchange` timelines. A capture is one
group (``capture``); a results file has one group per (suite, case, API version). Frames from a
results file are decoded again from their bytes with the same decoder as a capture's, so the
two kinds of input compare alike.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path

from ..protocol.codec import Codec
from .kafka_stream import KafkaDecoder
from .pcap import file_kind, read_capture
from .wire import ConnectionEvent, WireExchange

CAPTURE_GROUP = "capture"
CAPTURE_SUFFIXES = {".pcap", ".pcapng"}


@dataclass
class Run:
    """One side of a diff: timelines by case key, and each case's outcome when known."""

    groups: dict[str, list]
    outcomes: dict[str, str] = field(default_factory=dict)


def load_run(path: str | Path, *, ports: list[int] | None = None, target: str | None = None,
             codec: Codec | None = None) -> Run:
    """A pcap/pcapng file (one group) or a results JSONL file (a group per case and version).

    A folder of captures (one per case, as a per-case capture writes them) is one group per
    file, keyed by the file's path inside the folder without its suffix. ``target`` keeps only
    one target's results (a results file of a matrix run holds several).
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(item for item in path.rglob("*") if item.suffix in CAPTURE_SUFFIXES and item.is_file())
        if not files:
            raise ValueError(f"{path}: a folder without .pcap or .pcapng files")
        return Run({str(item.relative_to(path).with_suffix("")): read_capture(item, ports, codec).timeline()
                    for item in files})
    if file_kind(path) is not None:
        return Run({CAPTURE_GROUP: read_capture(path, ports, codec).timeline()})
    return load_results(path, target=target, codec=codec)


def load_results(path: str | Path, *, target: str | None = None, codec: Codec | None = None) -> Run:
    from ..results.store import read_records

    records = read_records(path)
    if not records:
        raise ValueError(f"{path}: neither a capture file nor a results file with records")
    targets = {record.target for record in records}
    if target is None and len(targets) > 1:
        raise ValueError(f"{path} holds results of several targets ({', '.join(sorted(map(str, targets)))}); "
                         "choose one")
    decoder = KafkaDecoder(codec)
    run = Run({})
    for record in records:  # a later record of the same case (a rerun) replaces the earlier one
        if target is not None and record.target != target:
            continue
        key = record.item_id  # an item's group in a wire diff: its item id, as every report names it
        run.groups[key] = timeline_from_transcript(list(record.transcript or []), decoder)
        message = (record.message or "").strip().splitlines()
        run.outcomes[key] = f"{record.outcome}: {message[0][:200]}" if message else str(record.outcome)
    if target is not None and not run.groups:
        raise ValueError(f"{path}: no results for target {target!r}; it has {sorted(map(str, targets))}")
    return run


def timeline_from_transcript(transcript: list[dict], decoder: KafkaDecoder) -> list:
    timeline: list = []
    for entry in transcript:
        exchange = exchange_from_transcript(entry)
        decoder.decode_bodies([exchange], response_version=entry.get("response_version"))
        if exchange.request is None and not exchange.request_bytes and isinstance(entry.get("request"), dict):
            exchange.request = entry["request"]  # redacted bytes: the recorded (also redacted) body
        timeline.append(exchange)
        if entry.get("problem") == "disconnected" and "closed the connection" in (entry.get("diagnosis") or ""):
            at = entry.get("received_at") or entry.get("sent_at")
            timeline.append(ConnectionEvent(exchange.connection, at, "server", "closed"))
    return timeline


def exchange_from_transcript(entry: dict) -> WireExchange:
    request_bytes = _bytes(entry.get("request_bytes")) or b""
    if request_bytes == b"<redacted>":
        request_bytes = b""
    response_bytes = _bytes(entry.get("response_bytes"))
    if response_bytes == b"<redacted>":  # a SASL token from the broker
        response_bytes = b""
    exchange = WireExchange(
        connection=str(entry.get("connection")), api=entry.get("api") or "?", api_key=int(entry.get("api_key", -1)),
        version=int(entry.get("version", -1)), correlation_id=int(entry.get("correlation_id", -1)),
        request_bytes=request_bytes, response_bytes=response_bytes,
        sent_at=entry.get("sent_at"), received_at=entry.get("received_at"), step=entry.get("step"))
    if response_bytes == b"" and isinstance(entry.get("response"), dict):
        exchange.response = entry["response"]  # redacted bytes: the recorded (also redacted) body
    if entry.get("problem"):
        exchange.problems.append(f"{entry['problem']}: {entry.get('diagnosis') or ''}".rstrip(": "))
    return exchange


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)
