"""The latest outcome per target × suite × case × version, and counts per target × KIP × level."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..outcomes import NO_VERDICT, OUTCOMES
from .runs import with_run_start


def latest(items: DataFrame, keys: tuple[str, ...] | list[str] = ("target",)) -> DataFrame:
    """Each target's newest row of each item (the item's latest run, not the latest run overall:
    a run of one suite must not hide what earlier runs said of the others). ``keys`` are what one
    column of a matrix is (the site's columns are a target at one version)."""
    newest = Window.partitionBy(*keys, "item").orderBy(F.desc("run_started"), F.desc("run_id"),
                                                          F.desc("recorded_at"))
    return (with_run_start(items).withColumn("_rank", F.row_number().over(newest))
            .where(F.col("_rank") == 1).drop("_rank"))


def outcome_counts(frame: DataFrame, keys: list[str]) -> DataFrame:
    """One column per outcome (every outcome apart), a total, and the pass rate over items with a
    verdict (unsupported and skipped items did not test the target)."""
    counts = frame.groupBy(*keys).pivot("outcome", list(OUTCOMES)).count().fillna(0, subset=OUTCOMES)
    total = sum((F.col(outcome) for outcome in OUTCOMES), F.lit(0))
    judged = sum((F.col(outcome) for outcome in OUTCOMES if outcome not in NO_VERDICT), F.lit(0))
    return (counts.withColumn("total", total)
            .withColumn("pass_rate", F.when(judged > 0, F.round(F.col("passed") / judged, 4))))


def run(tables, **_) -> dict[str, DataFrame]:
    newest = latest(tables.items).cache()
    cells = newest.select("target", "target_version", "suite", "case", "api", "api_version", "kip", "requirement",
                          "outcome", "run_id", "recorded_at", "message").orderBy("target", "suite", "case",
                                                                                  "api_version")
    levels = outcome_counts(newest, ["target", "kip", "requirement"]).orderBy("target", "kip", "requirement")
    return {"matrix": cells, "kip_levels": levels}
