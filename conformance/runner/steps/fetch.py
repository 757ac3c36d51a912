"""The ``fetch`` step: one Fetch from a partition, summarised as a consumer at the step's isolation level
sees it (visible records, their values, control markers, batches), and checked against ``expect``.

A fetch whose answer no later fetch can change says so (:func:`beyond_reach`), so that an ``until``
around it fails at once instead of waiting out its time.
"""

from __future__ import annotations

from ...protocol import records
from ...suite import expressions, matchers
from ...suite.kinds import Request, StepKind
from ..context import Context, Departure, attributed
from ..exchange import exchange, retrying, topic_id
from ..expect import check_expect, element, save
from .. import observe
from . import requesting
from ..policy import step_version

DEFAULT_WAIT_MS = 200


def visible_records(batches: list, aborted: list[dict], isolation: int) -> list[records.Record]:
    """Data records a consumer at ``isolation`` delivers, filtering aborted transactions as KIP-98 says."""
    if isolation == 0:
        return [record for batch in batches if isinstance(batch, records.RecordBatch) and not batch.is_control
                for record in batch.records]
    pending = sorted(aborted or [], key=lambda entry: entry["first_offset"])
    aborted_producers: set[int] = set()
    visible = []
    for batch in batches:
        if not isinstance(batch, records.RecordBatch):
            continue
        while pending and pending[0]["first_offset"] <= batch.base_offset + (batch.last_offset_delta or 0):
            aborted_producers.add(pending.pop(0)["producer_id"])
        if batch.is_control:
            marker = records.ControlRecord.from_record(batch.records[0]) if batch.records else None
            if marker is not None and marker.type == records.ControlType.ABORT:
                aborted_producers.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborted_producers:
            continue
        visible.extend(batch.records)
    return visible


def fetch_step(context: Context, step: dict, index: str, name: str) -> None:
    version = step_version(context, {**step, "version": step["fetch"].get("version", step.get("version"))}, "Fetch")
    no_id = None
    if observe.by_id("Fetch", version):
        topic = expressions.resolve(step["fetch"]["topic"], context.variables)
        if observe.has_no_id(context.topic_ids.get(topic) or topic_id(context, topic)):
            no_id = observe.no_id_reason(topic)
    if no_id and observe.observer(context, "Fetch", version):
        version, name = observe.fallback(context, "Fetch", version, no_id, name)
    elif no_id and observe.exists_without_id(context, topic):
        # the step under test cannot name a topic the broker has: Metadata's departure, reported once; no Fetch verdict
        raise observe.no_id_root_cause(context, no_id)
    try:
        with attributed("Fetch", version):
            _fetch(context, step, name, version)
    except observe.Unaddressed as unaddressed:  # the check could not address its topic by id: by name, then
        version, name = observe.fallback(context, "Fetch", version, unaddressed.why, name)
        with attributed("Fetch", version):
            _fetch(context, step, name, version)


def _fetch(context: Context, step: dict, name: str, version: int) -> None:
    spec = expressions.resolve(step["fetch"], context.variables)
    topic, partition = spec["topic"], int(spec.get("partition", 0))
    isolation = {"read_uncommitted": 0, "read_committed": 1}[spec.get("isolation", "read_committed")]
    max_bytes = int(spec.get("max_bytes", 1 << 20))
    fields = {
        "replica_id": -1, "max_wait_ms": int(spec.get("max_wait_ms", DEFAULT_WAIT_MS)), "min_bytes": 1,
        "max_bytes": max_bytes, "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "topic_id": context.topic_ids.get(topic) or topic_id(context, topic),
                    "partitions": [{"partition": partition, "current_leader_epoch": int(spec.get("current_leader_epoch", -1)),
                                    "fetch_offset": int(spec.get("offset", 0)), "last_fetched_epoch": -1,
                                    "log_start_offset": -1, "partition_max_bytes": max_bytes}]}],
        "forgotten_topics_data": [], "rack_id": "",
    }
    if "to" not in step:
        step = {**step, "to": {"leader": {"topic": topic, "partition": partition}}}
    response = retrying(context, step, lambda: exchange(context, step, name, "Fetch", version, fields))
    if response is None:
        context.checked("Fetch", version, step.get("expect") or {})
        return
    expect = expressions.resolve(step.get("expect") or {}, context.variables)
    observing = observe.observer(context, "Fetch", version) and not ({"error_code", "refused"} & set(expect))
    unaddressed = observe.unaddressed_error("Fetch", response) if observe.by_id("Fetch", version) else None
    if observing and unaddressed:
        raise observe.Unaddressed(unaddressed)
    # An answer about another topic than the one asked is no evidence about the records asked for: a check goes on by
    # name; the step under test departs (a client would drop it: Fetch answers are matched by topic).
    asked = {"topic": topic, "topic_id": context.topic_ids.get(topic)}
    elsewhere = observe.answered_elsewhere("Fetch", version, asked, response)
    if elsewhere and observing:
        raise observe.Unaddressed(elsewhere, elsewhere)
    if elsewhere:
        key = "topic_id" if observe.by_id("Fetch", version) else "topic"
        raise Departure(f"{name}: {elsewhere}", expected={key: str(asked[key])},
                        actual={key: str(response["responses"][0][key])})   # attributed: Fetch at this version
    if response.get("error_code"):
        expect = expect or {"error_code": "NONE"}
        _judge_own_error(context, name, response, expect, version, observing)
        return
    data = element(response, "responses[0].partitions[0]", name, step.get("expect"), version)
    if observing and data.get("error_code"):
        _judge_own_error(context, name, data, {"error_code": "NONE"}, version, observing)
    batches = list(records.decode_batches(data.get("records") or b""))
    if "max_bytes" not in spec:  # a case about one response's size reads one response
        data, batches = read_onward(context, step, name, version, fields, data, batches, isolation)
    visible = visible_records(batches, data.get("aborted_transactions") or [], isolation)
    summary = {
        **{key: value for key, value in data.items() if key != "records"},
        "records": len(visible),
        "values": [None if record.value is None else record.value.decode("utf-8", "replace") for record in visible],
        "control": [records.ControlType(records.ControlRecord.from_record(batch.records[0]).type).name
                    for batch in batches if isinstance(batch, records.RecordBatch) and batch.is_control and batch.records],
        "batches": [{"base_offset": batch.base_offset, "producer_id": batch.producer_id,
                     "producer_epoch": batch.producer_epoch, "base_sequence": batch.base_sequence,
                     "transactional": batch.is_transactional, "control": batch.is_control,
                     "crc_valid": batch.crc_valid, "records": len(batch.records),
                     # the epoch of the coordinator that wrote a marker: a coordinator resending it uses its own
                     "coordinator_epoch": marker_coordinator_epoch(batch)}
                    for batch in batches if isinstance(batch, records.RecordBatch)],
        "crc_valid": all(batch.crc_valid for batch in batches if isinstance(batch, records.RecordBatch)),
    }
    expect = dict(expressions.resolve(step.get("expect") or {}, context.variables))
    if not expect.get("refused"):
        expect.setdefault("error_code", "NONE")
    fields_expected = dict(expect.pop("fields", None) or {})
    for key in ("records", "values", "control", "aborted_transactions", "crc_valid"):
        if key in expect:
            wanted = expect.pop(key)
            if key == "aborted_transactions" and isinstance(wanted, int):
                fields_expected["aborted_transactions"] = {"len": wanted}
            else:
                fields_expected[key] = wanted
    expect["fields"] = fields_expected
    try:
        check_expect(context, name, summary, expect, version)
    except Departure as deviation:
        deviation.final = beyond_reach(summary, {key: matchers.for_version(value, version)
                                                 for key, value in fields_expected.items()})
        raise
    context.checked("Fetch", version, expect)
    save(context, summary, step.get("save"))


def marker_coordinator_epoch(batch: records.RecordBatch) -> int | None:
    """The coordinator epoch a transaction marker carries (None for a batch of records, or a KRaft control record)."""
    if not batch.is_control or not batch.records:
        return None
    try:
        return records.ControlRecord.from_record(batch.records[0]).coordinator_epoch
    except Exception:  # noqa: BLE001 - a control record that is no marker has none; the summary never fails on it
        return None


ONWARD_ROUNDS = 50  # at most this many more fetches: a broker may return one batch per response


def read_onward(context: Context, step: dict, name: str, version: int, fields: dict, data: dict, batches: list,
                isolation: int) -> tuple[dict, list]:
    """Reads on as a client does: a broker may return fewer batches than it has (one per response is legal),
    so while the batches end before the high watermark (read_uncommitted) or the last stable offset
    (read_committed), fetch again from where they end. Returns the last response's partition, with the
    aborted transactions of every response, and the batches of all of them: a marker that came in the next
    response is judged with the records it ends."""
    aborted = data.get("aborted_transactions")
    for _ in range(ONWARD_ROUNDS):
        ends = [batch for batch in batches if isinstance(batch, records.RecordBatch)]
        end = data.get("last_stable_offset", -1) if isolation == 1 else -1
        end = end if end is not None and end >= 0 else data.get("high_watermark", -1)
        if not ends:
            break
        last = ends[-1]
        next_offset = last.base_offset + (last.last_offset_delta if last.last_offset_delta is not None
                                          else len(last.records) - 1) + 1
        if end is None or next_offset >= end:
            break
        onward = {**fields, "topics": [{**fields["topics"][0], "partitions": [
            {**fields["topics"][0]["partitions"][0], "fetch_offset": next_offset}]}]}
        later = exchange(context, step, f"{name} (onward from offset {next_offset})", "Fetch", version, onward)
        partitions = (later or {}).get("responses") or [{}]
        more = (partitions[0].get("partitions") or [{}])[0] if not (later or {}).get("error_code") else {}
        found = list(records.decode_batches(more.get("records") or b""))
        if more.get("error_code") or not found:
            break
        batches = batches + found
        for entry in more.get("aborted_transactions") or []:
            if entry not in (aborted or []):
                aborted = [*(aborted or []), entry]
        data = {**more, "aborted_transactions": aborted}
    return data, batches


def _judge_own_error(context: Context, name: str, response: dict, expect: dict, version: int, observing: bool) -> None:
    """A fetch answered with an error: the step under test's departure, or a check that could not observe
    (no evidence either way: the item is blocked, naming the check, even where the check verifies)."""
    try:
        check_expect(context, name, response, expect, version)
    except Departure as deviation:
        if observing:
            deviation.blind = True
            deviation.args = (f"{deviation.args[0]} (the check could not observe, so it is no evidence about "
                              f"{context.api} v{context.version})",)
        raise
    context.checked("Fetch", version, expect)


def beyond_reach(summary: dict, wanted: dict) -> str | None:
    """Why no later fetch from the same offset can show what ``wanted`` asks for, or None if one may.

    A log only grows: a record a fetch delivered (committed, or read uncommitted) is delivered again by
    every later fetch from that offset, and a transaction marker, once written, stays where it is. So
    more visible records than an exact count, or markers that do not begin the exact list wanted, are
    final, and an ``until`` need not wait out its time to fail. Only plain counts and lists are judged;
    a matcher (``{gte: 2}``, ...) is left to the timeout."""
    count = wanted.get("records")
    if isinstance(count, int) and not isinstance(count, bool) and summary["records"] > count:
        return f"{summary['records']} records are visible, more than the {count} expected, and records stay"
    markers = wanted.get("control")
    if isinstance(markers, list) and summary["control"] != markers[:len(summary["control"])]:
        return f"the markers {summary['control']} are written, and {markers} cannot follow them"
    return None


def requests(step) -> tuple[Request, ...]:
    """The Fetch request a fetch step sends; it expects the partition's NONE unless it says otherwise. (Where it
    expects a refusal, :func:`_fetch` drops that NONE; the coverage document has always counted it, and still does.)"""
    return (Request("Fetch", requesting.pinned(step, step.get("fetch")), {"error_code": "NONE", **(step.get("expect") or {})}),)


KIND = StepKind("fetch", fetch_step, requests=requests, rough=requesting.rough, hazard=requesting.hazard)
