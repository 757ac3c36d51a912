"""Run order: a run is placed by when its first item finished (run ids sort the same way, but a
hand-given ``--run-id`` need not)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def with_run_start(items: DataFrame) -> DataFrame:
    starts = items.groupBy("run_id").agg(F.min("recorded_at").alias("run_started"))
    return items.join(F.broadcast(starts), "run_id")


def run_order():
    """Columns that order runs, oldest first."""
    return [F.col("run_started"), F.col("run_id")]
