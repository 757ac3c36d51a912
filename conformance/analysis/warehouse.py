"""The two tables, built from raw inputs or read from a warehouse, and ingestion into one.

Jobs take :class:`Tables` however they were made: from results files and captures read on the
spot (nothing written), from a warehouse folder, or both at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import captures, results
from .inputs import Inputs
from .layout import EXCHANGE_COLUMNS, EXCHANGES, EXCHANGES_SCHEMA, ITEM_COLUMNS, ITEMS, PARTITIONS


@dataclass
class Tables:
    items: DataFrame
    exchanges: DataFrame


def empty_exchanges(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], EXCHANGES_SCHEMA)


def build(spark: SparkSession, inputs: Inputs, *, transcripts: bool = True, decode: bool = True,
          capture_reader: str = "auto") -> Tables:
    """Tables from every input; ``transcripts``/``decode`` turn off either source of exchanges."""
    item_frames, exchange_frames = [], []
    if inputs.results:
        lines = results.read_lines(spark, inputs.results)
        item_frames.append(results.items(lines))
        if transcripts:
            exchange_frames.append(results.transcript_exchanges(lines))
    for folder in inputs.warehouses:
        item_frames.append(_aligned(spark.read.parquet(str(Path(folder) / ITEMS))
                                    .withColumn("item", results.respelt_item()), ITEM_COLUMNS))
        # A warehouse ingested without exchanges (--no-transcripts, no captures) has an empty folder, which
        # Parquet cannot read a schema from.
        if any((Path(folder) / EXCHANGES).glob("**/*.parquet")):
            exchange_frames.append(spark.read.parquet(str(Path(folder) / EXCHANGES))
                                   .withColumn("item", results.respelt_item()).select(*EXCHANGE_COLUMNS))
    items = _union(item_frames) if item_frames else None
    if (inputs.captures or inputs.capture_folders) and decode:
        exchange_frames.append(captures.capture_exchanges(spark, inputs.captures, items,
                                                          folders=inputs.capture_folders, reader=capture_reader))
    if items is None:
        items = results.items(spark.createDataFrame([], results.RESULTS_LINE)
                              .withColumn("source_file", F.lit(None).cast("string")))
    return Tables(items, _union(exchange_frames) if exchange_frames else empty_exchanges(spark))


def _aligned(frame: DataFrame, columns: list[str]) -> DataFrame:
    """``frame`` with ``columns`` in order; a column a warehouse written before it existed lacks (``target_name``,
    added with results schema 4) reads null, so older warehouses stay readable and appendable."""
    for column in columns:
        if column not in frame.columns:
            frame = frame.withColumn(column, F.lit(None).cast("string"))
    return frame.select(*columns)


def _union(frames: list[DataFrame]) -> DataFrame:
    first, *rest = frames
    for frame in rest:
        first = first.unionByName(frame)
    return first


def ingest(spark: SparkSession, tables: Tables, warehouse: str | Path) -> dict[str, int]:
    """Write both tables into ``warehouse``, merged with what its touched partitions already hold.

    Rows of a run already there are replaced by the new ones (ingesting a file twice changes
    nothing); other runs in the same (target, date) partitions are kept. Returns rows written.
    """
    warehouse = Path(warehouse)
    written = {}
    keys = {ITEMS: ["run_id", "nodeid", "item", "target"], EXCHANGES: None}
    for name, frame in ((ITEMS, tables.items), (EXCHANGES, tables.exchanges)):
        path = warehouse / name
        new_runs = frame.select("run_id").distinct()
        merged = frame
        if path.is_dir():
            touched = frame.select(*PARTITIONS).distinct()
            kept = (spark.read.parquet(str(path)).join(F.broadcast(touched), PARTITIONS, "left_semi")
                    .join(F.broadcast(new_runs), "run_id", "left_anti"))
            kept = kept.withColumn("item", results.respelt_item())  # rewritten partitions take today's spelling
            merged = frame.unionByName(_aligned(kept, frame.columns))
        if keys[name]:
            merged = merged.dropDuplicates(keys[name])
        # Materialised before writing: dynamic overwrite deletes the partitions this plan reads.
        merged = merged.localCheckpoint(eager=True)
        written[name] = merged.count()
        # One file per partition: every task would otherwise write a small file into each.
        merged.repartition(*PARTITIONS).write.mode("overwrite").partitionBy(*PARTITIONS).parquet(str(path))
    return written
