"""What the site shows, aggregated in Spark from the existing jobs' outputs; only these rows reach the driver.

- the latest outcome of every item in each column (a target at one version, its newest run of each item:
  :func:`..jobs.matrix.latest` keyed by target and version), one row per item and column;
- every run's outcome counts (:func:`..jobs.history.run`) with the target and harness versions it ran with;
- the changes between consecutive runs of a target (:func:`..jobs.regressions.along_history`), counted
  per run, and the items of the newest few transitions;
- the flaky items (:func:`..jobs.flaky.run`), the flakiest of each target.

However many runs the tables hold, the driver receives one row per item and column, one per run, one per
run and kind of change, and a bounded number of listed items: 100 runs of six targets cost the page what
two runs do, plus a bar per run.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..jobs import flaky, history, matrix, regressions

COLUMN_KEYS = ["target", "target_version"]
CELL_FIELDS = ["target", "target_version", "target_name", "harness_version", "run_id", "kip", "suite", "case", "item", "title",
               "api", "api_version", "requirement", "draft", "outcome", "message", "step", "step_label",
               "step_role", "step_api", "nodeid", "pcap"]
LISTED_TRANSITIONS = 12  # newest transitions of each target whose changed items are listed
LISTED_CHANGES = 60  # changed items listed per transition
LISTED_FLAKY = 40  # flakiest items listed per target


@dataclass
class Facts:
    cells: list  # Rows: CELL_FIELDS plus run_started
    runs: list  # Rows: target, run_id, run_started, target_version, harness_version, outcome counts, total
    changes: list  # Rows: target, run_id, change, count
    changed_items: list  # Rows: target, previous_run, run_id, item, previous_outcome, outcome, change
    flaky: list  # Rows: the flaky job's columns


def latest_cells(items: DataFrame) -> DataFrame:
    """Each column's newest row of each item; a row without a target version is its own column ("")."""
    keyed = items.withColumn("target_version", F.coalesce("target_version", F.lit("")))
    return matrix.latest(keyed, keys=COLUMN_KEYS).select(*CELL_FIELDS, "run_started")


def run_rows(tables) -> DataFrame:
    """The history job's per-run counts, with the versions each run ran: a run changing the harness and
    one changing the broker are told apart on the history page."""
    versions = (tables.items.groupBy("run_id", "target")
                .agg(F.max(F.coalesce("target_version", F.lit(""))).alias("version"),
                     F.max(F.coalesce("harness_version", F.lit(""))).alias("harness_version")))
    runs = history.run(tables)["runs"]
    return (runs.join(versions, ["run_id", "target"], "left").drop("target_version")
            .withColumnRenamed("version", "target_version").orderBy("target", "run_started", "run_id"))


def change_rows(items: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Changes per run and kind, and the changed items of each target's newest transitions."""
    changes = regressions.along_history(items).cache()
    counts = changes.groupBy("target", "run_id", "change").count()
    newest = (changes.select("target", "run_id", "run_started").distinct()
              .withColumn("_age", F.row_number().over(Window.partitionBy("target")
                                                      .orderBy(F.desc("run_started"), F.desc("run_id"))))
              .where(F.col("_age") <= LISTED_TRANSITIONS).select("target", "run_id"))
    ranked = Window.partitionBy("target", "run_id").orderBy("change", "item")
    listed = (changes.join(F.broadcast(newest), ["target", "run_id"], "left_semi")
              .withColumn("_rank", F.row_number().over(ranked)).where(F.col("_rank") <= LISTED_CHANGES)
              .select("target", "previous_run", "run_id", "item", "previous_outcome", "outcome", "change"))
    return counts, listed


def flaky_rows(tables) -> DataFrame:
    found = flaky.run(tables)["flaky"]
    ranked = Window.partitionBy("target").orderBy(F.desc("flaky_rate"), F.desc("flips"), "item")
    return found.withColumn("_rank", F.row_number().over(ranked)).where(F.col("_rank") <= LISTED_FLAKY).drop("_rank")


def gather(tables) -> Facts:
    counts, listed = change_rows(tables.items)
    return Facts(cells=latest_cells(tables.items).collect(), runs=run_rows(tables).collect(),
                 changes=counts.collect(), changed_items=listed.collect(), flaky=flaky_rows(tables).collect())
