"""The ``produce`` step: a RecordBatch v2 built from the step (producer id, epoch, sequence, records,
compression) and sent in a Produce request; its expectations are the partition's.

Sequences run on by themselves per (producer id, epoch, topic, partition) unless the step gives one.
"""

from __future__ import annotations

import time

from ...protocol import records
from ...suite import expressions
from ...suite.checks import refuse_fetch_only_expect
from ...suite.kinds import Facts, Request, StepKind
from ..context import Context, attributed
from ..exchange import exchange, retrying, topic_id
from ..expect import check_expect, element, save
from .. import observe
from . import requesting
from ..policy import step_version


def _as_bytes(value) -> bytes | None:
    return None if value is None else (value.encode() if isinstance(value, str) else bytes(value))


def _records(spec) -> list[records.Record]:
    if isinstance(spec, int):
        spec = [f"value-{index}" for index in range(spec)]
    built = []
    for index, item in enumerate(spec):
        if not isinstance(item, dict):
            item = {"value": item}
        headers = [(str(key), _as_bytes(value)) for key, value in (item.get("headers") or {}).items()]
        built.append(records.Record(offset_delta=index, timestamp_delta=0, key=_as_bytes(item.get("key")),
                                    value=_as_bytes(item.get("value")), headers=headers))
    return built


def produce_step(context: Context, step: dict, index: str, name: str) -> None:
    """Build a RecordBatch v2 and send it in a Produce request; expectations are per partition."""
    spec = expressions.resolve(step["produce"], context.variables)
    topic, partition = spec["topic"], int(spec.get("partition", 0))
    producer_id, epoch = int(spec.get("producer_id", -1)), int(spec.get("producer_epoch", -1))
    transactional_id = spec.get("transactional_id")
    batch_records = _records(spec.get("records", 1))
    key = (producer_id, epoch, topic, partition)
    sequence = spec.get("base_sequence", "auto")
    with context.lock:
        if sequence == "auto":
            sequence = context.sequences.get(key, 0) if producer_id >= 0 else -1
        context.sequences[key] = int(sequence) + len(batch_records) if producer_id >= 0 else -1
    transactional = bool(spec.get("transactional_flag", transactional_id is not None))
    batch = records.RecordBatch(
        attributes=records.TRANSACTIONAL_FLAG if transactional else 0,
        base_timestamp=int(spec.get("timestamp", time.time() * 1000)), producer_id=producer_id,
        producer_epoch=epoch, base_sequence=int(sequence), records=batch_records)
    data = records.encode_batch(batch, compression=_compression(spec.get("compression", "none")))
    if spec.get("corrupt_crc"):
        data = _with_crc_flipped(data)
    api = "Produce"
    version = step_version(context, {**step, "version": spec.get("version", step.get("version"))}, api)
    expect = expressions.resolve(step.get("expect") or {"error_code": "NONE"}, context.variables)
    # set-up that writes by topic id where the topic has none, or is told the topic it has does not exist,
    # goes on by name (observe.py): the step under test is never moved
    observing = observe.observer(context, api, version) and expect.get("error_code", "NONE") == "NONE"
    no_id = observe.by_id(api, version) and observe.has_no_id(context.topic_ids.get(topic) or topic_id(context, topic))
    if observing and no_id:
        version, name = observe.fallback(context, api, version, observe.no_id_reason(topic), name)
    elif no_id and not observe.observer(context, api, version) and observe.exists_without_id(context, topic):
        raise observe.no_id_root_cause(context, observe.no_id_reason(topic))
    if "to" not in step:
        step = {**step, "to": {"leader": {"topic": topic, "partition": partition}}}
    response = _send(context, step, name, api, version, topic, partition, data, transactional_id, spec)
    if observing and observe.by_id(api, version) and response and observe.unaddressed_error(api, response):
        why = f"answered {observe.unaddressed_error(api, response)} for a topic it has"
        version, name = observe.fallback(context, api, version, why, name)
        response = _send(context, step, name, api, version, topic, partition, data, transactional_id, spec)
    with attributed(api, version):
        if response is None:
            context.checked(api, version, expect)
            return
        partition_response = element(response, "responses[0].partition_responses[0]", name, expect, version)
        check_expect(context, name, partition_response, expect, version)
        context.checked(api, version, expect)
    save(context, partition_response, step.get("save"))


def _send(context: Context, step: dict, name: str, api: str, version: int, topic: str, partition: int, data: bytes,
          transactional_id, spec: dict):
    fields = {
        "transactional_id": transactional_id, "acks": int(spec.get("acks", -1)),
        "timeout_ms": int(spec.get("timeout_ms", 30_000)),
        "topic_data": [{"name": topic, "topic_id": context.topic_ids.get(topic) or topic_id(context, topic),
                        "partition_data": [{"index": partition, "records": data}]}],
    }
    with attributed(api, version):
        return retrying(context, step, lambda: exchange(context, step, name, api, version, fields))


def _with_crc_flipped(data: bytes) -> bytes:
    """The batch with one bit of its CRC flipped: well framed, so only the checksum can tell."""
    at = records.CRC_OFFSET
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


def _compression(name) -> int:
    codes = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    return codes[str(name).lower()] if not isinstance(name, int) else name


def check_produce(step: dict, report, where: list, facts: Facts) -> None:
    """The ``expect`` is a partition's answer to a Produce, not a fetch's summary."""
    if "send" not in step:  # a step that is both is refused for that, and send's check looks at its expect
        refuse_fetch_only_expect(step, report, where)


def requests(step) -> tuple[Request, ...]:
    """The Produce request a produce step sends; it expects the partition's NONE unless told otherwise."""
    return (Request("Produce", requesting.pinned(step, step.get("produce")), step.get("expect") or {"error_code": "NONE"}),)


KIND = StepKind("produce", produce_step, check=check_produce, requests=requests, rough=requesting.rough,
                hazard=requesting.hazard)
