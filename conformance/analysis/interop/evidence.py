"""The evidence a click on a departing cell opens: expected, observed, the first departing step's exchanges, the
citation and the command that reruns the item.

Only departures of the cells the matrix shows are looked up (a few hundred items, whatever the history's
size). The items table carries the message and the departing step; what it leaves out (the expected and
observed values, the citation, the transcript's bodies) is read from the results files the site was built
from, joined on the departing items in Spark. A warehouse alone has no bodies: the step's exchanges then
come from its exchanges table (API, version, error codes, latency).
"""

from __future__ import annotations

import json
import re

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...results.record import ResultRecord

DEPARTED = ("failed", "differs", "blocked", "error")
TEXT_LIMIT = 3000  # characters of one JSON body or value shown; the results file has the rest
EXCHANGES_SHOWN = 6  # of the departing step

EVIDENCE_LINE = T.StructType([
    T.StructField("run_id", T.StringType()), T.StructField("target", T.StringType()),
    T.StructField("suite", T.StringType()), T.StructField("case", T.StringType()),
    T.StructField("api_version", T.IntegerType()), T.StructField("cites", T.StringType()),
    # A StringType field keeps a JSON value's text, whatever its shape.
    T.StructField("expected", T.StringType()), T.StructField("actual", T.StringType()),
    T.StructField("path", T.StringType()),
    # an explored departure's written case and history: its rerun command names the case
    T.StructField("artifacts", T.MapType(T.StringType(), T.StringType())),
    T.StructField("transcript", T.ArrayType(T.StructType([
        T.StructField("connection", T.StringType()), T.StructField("api", T.StringType()),
        T.StructField("version", T.IntegerType()), T.StructField("correlation_id", T.IntegerType()),
        T.StructField("step", T.StringType()), T.StructField("elapsed_ms", T.DoubleType()),
        T.StructField("request", T.StringType()), T.StructField("response", T.StringType()),
        T.StructField("problem", T.StringType())]))),
])
KEYS = ["run_id", "target", "suite", "case", "api_version"]


def departures(cells: list) -> list:
    return [cell for cell in cells if cell.outcome in DEPARTED]


def _keys_frame(spark: SparkSession, rows: list) -> DataFrame:
    schema = "run_id string, target string, suite string, case string, api_version int"
    return spark.createDataFrame([tuple(row[key] for key in KEYS) for row in rows], schema)


def from_results(spark: SparkSession, files: list[str], rows: list) -> dict[tuple, dict]:
    """Expected, actual, citation and transcript of each departing row, by its key."""
    if not files or not rows:
        return {}
    lines = spark.read.schema(EVIDENCE_LINE).option("mode", "PERMISSIVE").json(files)
    found = lines.join(F.broadcast(_keys_frame(spark, rows)), KEYS, "left_semi").collect()
    return {tuple(line[key] for key in KEYS): line.asDict(recursive=True) for line in found}


def from_exchanges(exchanges: DataFrame, rows: list) -> dict[tuple, list[dict]]:
    """The transcript rows of the exchanges table for each departing row (a warehouse without bodies)."""
    if not rows:
        return {}
    spark = exchanges.sparkSession
    wanted = spark.createDataFrame([(row.run_id, row.target, row.item) for row in rows],
                                   "run_id string, target string, item string")
    found = (exchanges.where((F.col("source") == "transcript") & (F.col("kind") == "exchange"))
             .join(F.broadcast(wanted), ["run_id", "target", "item"], "left_semi")
             .select("run_id", "target", "item", "step", "connection", "api", "api_version", "correlation_id",
                     "latency_ms", "error_codes", "problem").collect())
    grouped: dict[tuple, list[dict]] = {}
    for row in found:
        grouped.setdefault((row.run_id, row.target, row.item), []).append(
            {"step": row.step, "connection": row.connection, "api": row.api, "version": row.api_version,
             "correlation_id": row.correlation_id, "elapsed_ms": row.latency_ms,
             "response": f"error codes {row.error_codes}" if row.error_codes else None, "problem": row.problem})
    return grouped


def _step_number(text) -> int | None:
    found = re.match(r"\s*(\d+)", str(text or ""))
    return int(found.group(1)) if found else None


def departing_exchanges(entries: list[dict], step: int | None, label: str | None) -> list[dict]:
    """The exchanges the first departing step sent (by its label, else its number), or the last ones
    before the item stopped when no step is named."""
    entries = entries or []
    mine = [entry for entry in entries if label and entry.get("step") == label]
    if not mine and step is not None:
        mine = [entry for entry in entries if _step_number(entry.get("step")) == step]
    chosen = mine or entries[-EXCHANGES_SHOWN:]
    return [{"step": entry.get("step"), "api": entry.get("api"), "version": entry.get("version"),
             "connection": entry.get("connection"), "correlation_id": entry.get("correlation_id"),
             "elapsed_ms": entry.get("elapsed_ms"), "request": clip(entry.get("request")),
             "response": clip(entry.get("response")), "problem": entry.get("problem")}
            for entry in chosen[:EXCHANGES_SHOWN]]


def clip(text) -> str | None:
    """JSON text, pretty when it parses, cut at :data:`TEXT_LIMIT`."""
    if text is None:
        return None
    try:
        text = json.dumps(json.loads(text), indent=1, sort_keys=True)
    except (TypeError, ValueError):
        text = str(text)
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"\n… ({len(text) - TEXT_LIMIT} more characters)"


def gather(spark: SparkSession, results_files: list[str], exchanges: DataFrame, cells: list, reproduce) -> dict:
    """Evidence of every departing cell, keyed ``run_id|target|item``."""
    departing = departures(cells)
    bodies = from_results(spark, results_files, departing)
    fallback = from_exchanges(exchanges, [row for row in departing
                                          if tuple(row[key] for key in KEYS) not in bodies])
    evidence = {}
    for row in departing:
        body = bodies.get(tuple(row[key] for key in KEYS), {})
        entries = body.get("transcript") or fallback.get((row.run_id, row.target, row.item), [])
        record = ResultRecord.from_line({**row.asDict(), "path": body.get("path"), "cites": body.get("cites"),
                                         "artifacts": body.get("artifacts") or {}})
        evidence[f"{row.run_id}|{row.target}|{row.item}"] = {
            "outcome": row.outcome, "message": row.message or "", "cites": body.get("cites") or "",
            "expected": clip(body.get("expected")), "observed": clip(body.get("actual")),
            "step": row.step_label or (str(row.step) if row.step is not None else ""),
            "step_role": row.step_role or "", "exchanges": departing_exchanges(entries, _int(row.step), row.step_label),
            "reproduce": reproduce(record), "pcap": row.pcap or ""}
    return evidence


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
