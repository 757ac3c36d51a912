"""Results JSONL files into the items table and the transcript half of the exchanges table.

Parsing stays in the JVM: lines are read with an explicit schema (inferring one would walk every
transcript body), and the error codes of a response are found with a regular expression over
its JSON text, so no Python worker is involved.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..results.ids import SEPARATOR, VERSION_MARK
from ..results.record import STOPPED_ANSWERING
from .layout import EXCHANGE_COLUMNS, ITEM_COLUMNS, RESULTS_LINE

# Any key ending in error_code, as the protocol names them (error_code, top_level_error_code, ...).
ERROR_CODE_PATTERN = r'"[A-Za-z_]*error_code"\s*:\s*(-?[0-9]+)'


def read_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """Complete records only: a line a killed run left half-written parses as nulls and is dropped.
    Outcomes are named as the current results schema names them (see :func:`current_outcome`)."""
    lines = (spark.read.schema(RESULTS_LINE).option("mode", "PERMISSIVE").json(files)
             .withColumn("source_file", F.col("_metadata.file_path")))
    return (lines.where(F.col("run_id").isNotNull() & F.col("outcome").isNotNull())
            .withColumn("outcome", current_outcome()))


def current_outcome() -> F.Column:
    """:func:`conformance.results.record.outcome_of` as a column: before schema version 3 an IMPLEMENTATION
    item that departed was ``failed``; it reads ``differs`` unless the target stopped answering after it."""
    older = F.col("schema_version").isNull() | (F.col("schema_version") < 3)
    crashed = F.coalesce(F.col("message"), F.lit("")).startswith(STOPPED_ANSWERING)
    departed = (F.col("outcome") == "failed") & (F.col("requirement") == "IMPLEMENTATION")
    return F.when(older & departed & ~crashed, F.lit("differs")).otherwise(F.col("outcome"))


def item_key() -> F.Column:
    """The item id (:func:`conformance.results.ids.item_id`): the same test whatever the target or run."""
    version = F.when(F.col("api_version").isNotNull(), F.concat(F.lit(VERSION_MARK), F.col("api_version")))
    return F.concat(F.col("suite"), F.lit(SEPARATOR), F.col("case"), F.coalesce(version, F.lit("")))


def respelt_item() -> F.Column:
    """The ``item`` column of a warehouse table, in today's spelling: tables written before the item id
    had one spelling say ``suite/case[vN]`` (a suite id has no ``/``), which must still match new rows."""
    item = F.col("item")
    versioned = F.regexp_replace(item, r"^([^/:]+)/(.+)\[v([0-9]+)\]$", f"$1{SEPARATOR}$2{VERSION_MARK}$3")
    return F.when(item.contains(SEPARATOR), item).otherwise(
        F.regexp_replace(versioned, r"^([^/:]+)/(.+)$", f"$1{SEPARATOR}$2"))


def items(lines: DataFrame) -> DataFrame:
    recorded = F.to_timestamp("recorded_at")
    return (lines
            .withColumn("item", item_key())
            .withColumn("recorded_at", recorded)
            .withColumn("pcap", F.col("artifacts").getItem("pcap"))
            .withColumn("exchanges", F.coalesce(F.size("transcript"), F.lit(0)).cast("int"))
            .withColumn("exchanges", F.when(F.col("exchanges") < 0, 0).otherwise(F.col("exchanges")))
            .withColumn("date", F.to_date(recorded))
            .select(*ITEM_COLUMNS))


def frame_size(encoded: str) -> F.Column:
    """Bytes of a base64 text without decoding it."""
    text = F.col(encoded)
    padding = F.when(text.endswith("=="), 2).when(text.endswith("="), 1).otherwise(0)
    return (F.floor(F.length(text) * 3 / 4) - padding).cast("int")


def error_codes(json_text: str) -> F.Column:
    """Distinct non-zero error codes anywhere in a response's JSON text, sorted."""
    found = F.regexp_extract_all(F.col(json_text), F.lit(ERROR_CODE_PATTERN), F.lit(1))
    codes = F.transform(found, lambda code: code.cast("int"))
    return F.coalesce(F.array_sort(F.array_distinct(F.filter(codes, lambda code: code != 0))),
                      F.array().cast("array<int>"))


def transcript_exchanges(lines: DataFrame) -> DataFrame:
    entries = (lines.withColumn("item", item_key())
               .select("run_id", "target", "item", "nodeid", "recorded_at",
                       F.explode("transcript").alias("x"))
               .select("*", "x.*").drop("x"))
    latency = F.coalesce(F.col("elapsed_ms"), (F.col("received_at") - F.col("sent_at")) * 1000)
    sent = F.coalesce(F.timestamp_seconds("sent_at"), F.to_timestamp("recorded_at"))
    return (entries
            .withColumn("source", F.lit("transcript"))
            .withColumn("kind", F.lit("exchange"))
            .withColumn("api_version", F.col("version"))
            .withColumn("latency_ms", F.when(F.col("response_bytes").isNotNull(), latency))
            .withColumn("request_bytes", frame_size("request_bytes"))
            .withColumn("response_bytes", frame_size("response_bytes"))
            .withColumn("error_codes", error_codes("response"))
            .withColumn("sent_ts", sent)
            .withColumn("date", F.to_date("sent_ts"))
            .withColumn("sent_at", F.col("sent_ts"))
            .withColumn("closed_by", F.lit(None).cast("string"))
            .withColumn("how", F.lit(None).cast("string"))
            .withColumn("capture_file", F.lit(None).cast("string"))
            .select(*EXCHANGE_COLUMNS))
