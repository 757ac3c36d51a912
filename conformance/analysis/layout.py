"""The analysis tables: what each column means, and how they lie on disk.

A warehouse is a folder with two Parquet tables, each partitioned by ``target`` and ``date``
(the UTC day the item was recorded; Hive-style folders ``target=kafka/date=2026-11-24/``)::

    WAREHOUSE/items/target=.../date=.../part-*.parquet
    WAREHOUSE/exchanges/target=.../date=.../part-*.parquet

Target and date are what every question filters on first (one vendor's nightly runs, the last
month), and both have few distinct values, so partitions stay large. Re-ingesting a run
replaces its rows: ingestion merges into the partitions it touches (see :mod:`.warehouse`).

**items**: one row per results record (one pytest item: case × target × API version × run).

=================  ======================================================================
run_id             the run (sortable by start time: ``20261124T071433Z-ce7be4``)
target             the target spec (``kafka``, ``kafka:3.9.1``, ``tansu``, ``HOST:PORT``)
target_version     what the target says it is (``4.4.0``), may be null
harness_version    the harness that ran the item, when the record says (null before it did)
suite, case        the suite id and case id
item               ``suite::case@vN`` (:mod:`conformance.results.ids`): the same test on any target and in
                   any run (read from a warehouse of ``suite/case[vN]`` rows, it is respelt)
title, kip, api    as in the suite; api is null for cases with no API under test
api_version        the version under test, null when none
outcome            passed, failed, differs, blocked, error, unsupported, skipped (``differs``: an
                   IMPLEMENTATION item where the target does not do what Apache Kafka does; files
                   of results schema 2 said ``failed``, and are read as ``differs``)
requirement        MUST, SHOULD, MAY, IMPLEMENTATION
draft, strict      the case checks a draft KIP; the run made SHOULD/MAY departures fail
tags               the case's tags
duration_s         the item's run time
message            why it did not pass (empty when it did)
step, step_label   the first departing step (null when none), its role and API
step_role,step_api
verdict            pytest's verdict (passed, failed, xfailed, skipped, error)
nodeid, worker     pytest's node id, the xdist worker
recorded_at        when the item finished (UTC timestamp)
pcap               the item's capture file (``artifacts.pcap``), null when not captured
exchanges          how many exchanges its transcript holds
source_file        the results file the row was read from
date               partition: the UTC date of ``recorded_at``
=================  ======================================================================

**exchanges**: one row per Kafka request (and its response) or connection close, from an
item's transcript (``source = transcript``: the client's view) or from its capture decoded in
the executors (``source = capture``: the wire's view, with TCP endpoints and packet numbers).

=================  ======================================================================
run_id, target     as in items (for a capture with no results record: from its folder)
item, nodeid       as in items (null when the capture matches no results record)
source             ``transcript`` or ``capture``
kind               ``exchange`` or ``close``
connection         the transcript's connection name, or ``client:port>server:port``
api, api_key       the request's API (``Unknown(N)`` for a key no spec defines)
api_version        the request's version
correlation_id     the request's correlation id
step               the suite step that sent it (transcripts only)
sent_at            time of the request's first byte (UTC timestamp)
latency_ms         request sent to response received; null without a response
request_bytes      size of the request frame, size prefix included
response_bytes     size of the response frame; null without a response
error_codes        every distinct non-zero error code anywhere in the response
problem            what went wrong (no response, undecodable frame, ...), null when nothing
closed_by, how     for ``close`` rows: ``client``/``server``, and ``FIN``/``RST``/``unknown``
capture_file       the capture file (capture rows only)
date               partition: the UTC date of ``sent_at`` (else of the item)
=================  ======================================================================
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import types as T

from ..results.record import FIELDS, ResultRecord

PARTITIONS = ["target", "date"]
ITEMS, EXCHANGES = "items", "exchanges"

# What a results line holds, as read with spark.read.json. Transcript bodies are read as JSON
# text (a StringType column keeps an object's text) so Spark never infers their shape.
TRANSCRIPT_ENTRY = T.StructType([
    T.StructField("connection", T.StringType()),
    T.StructField("api", T.StringType()),
    T.StructField("api_key", T.IntegerType()),
    T.StructField("version", T.IntegerType()),
    T.StructField("correlation_id", T.IntegerType()),
    T.StructField("step", T.StringType()),
    T.StructField("sent_at", T.DoubleType()),
    T.StructField("received_at", T.DoubleType()),
    T.StructField("elapsed_ms", T.DoubleType()),
    T.StructField("response", T.StringType()),
    T.StructField("request_bytes", T.StringType()),
    T.StructField("response_bytes", T.StringType()),
    T.StructField("problem", T.StringType()),
])

# A results line as Spark reads it: the fields of :class:`conformance.results.ResultRecord`, typed
# by their JSON Schema, except those below.
# Free JSON (expected, actual) has no Spark type, and the suite's text and path are not analysed.
NOT_READ = frozenset({"expected", "actual", "cites", "path"})
# Columns typed apart from what the record's JSON type says: ``step`` was always read as text, and
# warehouses written so must stay appendable; containers take their element types from here.
COLUMN_TYPES = {
    "step": T.StringType(),
    "tags": T.ArrayType(T.StringType()),
    "artifacts": T.MapType(T.StringType(), T.StringType()),
    "transcript": T.ArrayType(TRANSCRIPT_ENTRY),
}
_SCALARS = {"string": T.StringType(), "integer": T.IntegerType(), "number": T.DoubleType(), "boolean": T.BooleanType()}


def _column_type(spec) -> T.DataType:
    if spec.name in COLUMN_TYPES:
        return COLUMN_TYPES[spec.name]
    schema = spec.metadata["json"]
    if "enum" in schema or "anyOf" in schema:  # the record's enumerations are words
        return T.StringType()
    named = schema["type"] if isinstance(schema["type"], str) else next(t for t in schema["type"] if t != "null")
    return _SCALARS[named]


RESULTS_LINE = T.StructType([T.StructField(spec.name, _column_type(spec))
                             for spec in dataclasses.fields(ResultRecord)
                             if spec.name in FIELDS and spec.name not in NOT_READ])

ITEM_COLUMNS = ["run_id", "target", "target_version", "target_name", "harness_version", "suite", "case", "item", "title", "kip",
                "api", "api_version", "outcome", "requirement", "draft", "strict", "tags", "duration_s", "message",
                "step", "step_label", "step_role", "step_api", "verdict", "nodeid", "worker", "recorded_at", "pcap",
                "exchanges", "source_file", "date"]

EXCHANGES_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType()),
    T.StructField("target", T.StringType()),
    T.StructField("item", T.StringType()),
    T.StructField("nodeid", T.StringType()),
    T.StructField("source", T.StringType()),
    T.StructField("kind", T.StringType()),
    T.StructField("connection", T.StringType()),
    T.StructField("api", T.StringType()),
    T.StructField("api_key", T.IntegerType()),
    T.StructField("api_version", T.IntegerType()),
    T.StructField("correlation_id", T.IntegerType()),
    T.StructField("step", T.StringType()),
    T.StructField("sent_at", T.TimestampType()),
    T.StructField("latency_ms", T.DoubleType()),
    T.StructField("request_bytes", T.IntegerType()),
    T.StructField("response_bytes", T.IntegerType()),
    T.StructField("error_codes", T.ArrayType(T.IntegerType())),
    T.StructField("problem", T.StringType()),
    T.StructField("closed_by", T.StringType()),
    T.StructField("how", T.StringType()),
    T.StructField("capture_file", T.StringType()),
    T.StructField("date", T.DateType()),
])
EXCHANGE_COLUMNS = [field.name for field in EXCHANGES_SCHEMA.fields]
