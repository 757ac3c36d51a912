"""Items whose outcome differs across runs of the same target, target version and harness version.

``flaky_rate`` is the share of runs that disagree with the item's most common outcome;
``flips`` counts outcome changes from one run to the next (a rate of 0.5 with one flip is a
change of behaviour, with many flips it is noise). :mod:`..flakiness` is the same judgement in
plain Python (``conformance flaky`` without PySpark).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..outcomes import OUTCOMES
from .runs import with_run_start

GROUP = ["target", "target_version", "harness_version"]


def run(tables, *, min_runs: int = 2, **_) -> dict[str, DataFrame]:
    items = with_run_start(tables.items).withColumn("harness_version", F.coalesce("harness_version", F.lit("")))
    ordered = Window.partitionBy(*GROUP, "item").orderBy("run_started", "run_id")
    flips = (items.withColumn("_previous", F.lag("outcome").over(ordered))
             .withColumn("_flip", (F.col("_previous").isNotNull() & (F.col("_previous") != F.col("outcome")))
                         .cast("int")))
    # Per outcome first, then per item: the distinct outcomes and the most common one's count come
    # from the outcomes themselves, so an outcome OUTCOMES does not name still makes an item change.
    per_outcome = (flips.groupBy(*GROUP, "item", "outcome")
                   .agg(F.count("*").alias("_n"), F.sum("_flip").alias("_flips"),
                        F.collect_set("run_id").alias("_runs")))
    scored = (per_outcome.groupBy(*GROUP, "item")
              .agg(F.size(F.array_distinct(F.flatten(F.collect_list("_runs")))).alias("runs"),
                   F.sum("_n").alias("rows"), F.sum("_flips").alias("flips"),
                   *[F.sum(F.when(F.col("outcome") == outcome, F.col("_n")).otherwise(0)).alias(outcome)
                     for outcome in OUTCOMES],
                   F.count("*").alias("outcomes"), F.max("_n").alias("_modal"))
              .where(F.col("runs") >= min_runs)
              .withColumn("flaky_rate", F.round(1 - F.col("_modal") / F.col("rows"), 4)).drop("_modal"))
    flaky = scored.where(F.col("outcomes") > 1).orderBy(F.desc("flaky_rate"), F.desc("flips"), *GROUP, "item")
    summary = (scored.groupBy(*GROUP)
               .agg(F.count("*").alias("items_seen_twice"), F.sum((F.col("outcomes") > 1).cast("int")).alias("flaky"),
                    F.max("runs").alias("runs"))
               .withColumn("flaky_share", F.round(F.col("flaky") / F.col("items_seen_twice"), 4))
               .orderBy(*GROUP))
    return {"flaky": flaky, "flaky_summary": summary}
