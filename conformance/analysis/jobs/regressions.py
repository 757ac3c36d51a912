"""What changed: between two runs (``--base``, ``--new``), and along each target's history.

A regression is an item that passed and now fails, is blocked or errs; an improvement one that
passes now and did not; any other change of outcome (failed to error, passed to unsupported when
a target stops advertising a version) is a change, and so is passed to ``differs`` (an
IMPLEMENTATION item: information about the target, never a regression). Items in one run only
are reported too (``missing``, ``new``), never silently dropped.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .runs import with_run_start

DEPARTED = ["failed", "blocked", "error"]  # never "differs": an IMPLEMENTATION item is information


def classify(before: F.Column, after: F.Column) -> F.Column:
    return (F.when(before.isNull(), "new").when(after.isNull(), "missing")
            .when(before == after, "unchanged")
            .when((before == "passed") & after.isin(*DEPARTED), "regression").when(after == "passed", "improvement")
            .otherwise("changed"))


def along_history(items: DataFrame) -> DataFrame:
    """Every change of an item's outcome from one run of its target to the next; ``first`` marks
    the first run where the item changed at all."""
    ordered = Window.partitionBy("target", "item").orderBy("run_started", "run_id")
    steps = (with_run_start(items)
             .withColumn("previous_outcome", F.lag("outcome").over(ordered))
             .withColumn("previous_run", F.lag("run_id").over(ordered))
             .where(F.col("previous_outcome").isNotNull() & (F.col("previous_outcome") != F.col("outcome"))))
    first = Window.partitionBy("target", "item").orderBy("run_started", "run_id")
    return (steps.withColumn("change", classify(F.col("previous_outcome"), F.col("outcome")))
            .withColumn("first", F.row_number().over(first) == 1)
            .select("target", "item", "previous_run", "run_id", "run_started", "previous_outcome", "outcome",
                    "change", "first", "message")
            .orderBy("target", "item", "run_started"))


def resolve_run(items: DataFrame, wanted: str) -> str:
    """A run id, or an unambiguous prefix of one."""
    runs = [row.run_id for row in items.select("run_id").distinct().where(F.col("run_id").startswith(wanted))
            .collect()]
    exact = [run for run in runs if run == wanted]
    if exact:
        return exact[0]
    if len(runs) != 1:
        raise ValueError(f"run {wanted!r} matches {len(runs)} runs" + (f": {', '.join(sorted(runs))}" if runs else ""))
    return runs[0]


def between(items: DataFrame, base: str, new: str) -> DataFrame:
    """Items whose outcome differs between two runs. Runs sharing a target are compared target by
    target; runs of different targets (one broker against another) item by item."""
    base, new = resolve_run(items, base), resolve_run(items, new)
    a = items.where(F.col("run_id") == base)
    b = items.where(F.col("run_id") == new)
    shared = a.select("target").intersect(b.select("target")).limit(1).count() > 0
    keys = ["target", "item"] if shared else ["item"]
    left = a.select(*keys, *([] if shared else [F.col("target").alias("base_target")]),
                    F.col("outcome").alias("base_outcome"), F.col("message").alias("base_message"))
    right = b.select(*keys, *([] if shared else [F.col("target").alias("new_target")]),
                     F.col("outcome").alias("new_outcome"), F.col("message").alias("new_message"))
    joined = left.join(right, keys, "full_outer")
    return (joined.withColumn("change", classify(F.col("base_outcome"), F.col("new_outcome")))
            .where(F.col("change") != "unchanged")
            .withColumn("base_run", F.lit(base)).withColumn("new_run", F.lit(new))
            .orderBy("change", *keys))


def run(tables, *, base: str | None = None, new: str | None = None, **_) -> dict[str, DataFrame]:
    found = {"changes": along_history(tables.items)}
    if base and new:
        found["between"] = between(tables.items, base, new)
    elif base or new:
        raise ValueError("--base and --new go together")
    return found
