"""The conformance levels each run of a target reached, oldest run first.

Per target × run × KIP: the level is ``MUST`` when every MUST item that tested the target passed
(at least one did), and ``strict`` when besides every SHOULD and MAY item passed (at least one
such item was judged: a level is claimed on passes, never on their absence). Unsupported and
skipped items did not test the target and are left out; blocked and error items gave no
verdict, so they hold a level back. IMPLEMENTATION items and draft cases never count.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..outcomes import CONFORMANCE_LEVELS, NO_VERDICT, OUTCOMES
from .matrix import outcome_counts
from .runs import with_run_start

RUN_KEYS = ["target", "run_id", "run_started"]


def level_column() -> F.Column:
    must = (F.col("MUST_judged") > 0) & (F.col("MUST_judged") == F.col("MUST_passed"))
    others_judged = F.col("SHOULD_judged") + F.col("MAY_judged")
    others = (others_judged > 0) & (others_judged == F.col("SHOULD_passed") + F.col("MAY_passed"))
    return F.when(must & others, "strict").when(must, "MUST").otherwise("none")


def run(tables, **_) -> dict[str, DataFrame]:
    items = with_run_start(tables.items)
    counted = items.where(F.col("requirement").isin(CONFORMANCE_LEVELS) & ~F.coalesce(F.col("draft"), F.lit(False))
                          & ~F.col("outcome").isin(list(NO_VERDICT)))
    aggregates = []
    for level in CONFORMANCE_LEVELS:
        mine = F.col("requirement") == level
        aggregates += [F.sum(mine.cast("int")).alias(f"{level}_judged"),
                       F.sum((mine & (F.col("outcome") == "passed")).cast("int")).alias(f"{level}_passed")]
    per_kip = (counted.groupBy(*RUN_KEYS, "target_version", "kip").agg(*aggregates)
               .withColumn("level", level_column())
               .orderBy("target", "kip", "run_started"))
    per_run = outcome_counts(items, [*RUN_KEYS, "target_version"]).orderBy("target", "run_started")
    return {"levels": per_kip, "runs": per_run.select(*RUN_KEYS, "target_version", *OUTCOMES, "total", "pass_rate")}
