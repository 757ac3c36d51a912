"""A small HTML page with PNG plots of a job's results, for people rather than tools.

Only aggregates reach the driver (a few hundred rows at most): latency histograms are bucketed
in Spark, so plotting costs the same for ten exchanges or ten million. The page's markup is the
template ``analysis_summary.html.j2`` of :mod:`conformance.pages` (which escapes every value); this
module gives it the rows as text.
"""

from __future__ import annotations

import math
from pathlib import Path

from pyspark.sql import functions as F

from .. import pages

COLOURS = {"passed": "#2e7d32", "failed": "#c62828", "differs": "#1565c0", "blocked": "#ef6c00", "error": "#6a1b9a",
           "unsupported": "#9e9e9e", "skipped": "#cfd8dc"}
TABLE_ROWS = 200  # rows of each table shown on the page; the Parquet beside it has them all


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    return plt


def latency_histograms(exchanges, path: Path, *, top: int = 8) -> Path | None:
    """Log-scale latency histograms of the busiest APIs, one line per target and source."""
    timed = exchanges.where((F.col("kind") == "exchange") & (F.col("latency_ms") > 0))
    busiest = [row.api for row in timed.groupBy("api").count().orderBy(F.desc("count")).limit(top).collect()]
    if not busiest:
        return None
    bucket = F.floor(F.log10("latency_ms") * 10)  # ten buckets per decade
    rows = (timed.where(F.col("api").isin(busiest)).withColumn("bucket", bucket)
            .groupBy("api", "target", "source", "bucket").count().collect())
    plt = _pyplot()
    columns = min(4, len(busiest))
    lines = math.ceil(len(busiest) / columns)
    figure, axes = plt.subplots(lines, columns, figsize=(4 * columns, 3 * lines), squeeze=False)
    for index, api in enumerate(busiest):
        axis = axes[index // columns][index % columns]
        series: dict[tuple, dict[int, int]] = {}
        for row in rows:
            if row.api == api:
                series.setdefault((row.target, row.source), {})[row.bucket] = row["count"]
        for (target, source), counts in sorted(series.items()):
            buckets = sorted(counts)
            axis.step([10 ** (b / 10) for b in buckets], [counts[b] for b in buckets], where="mid",
                      label=f"{target} ({source})")
        axis.set_xscale("log")
        axis.set_title(api, fontsize=10)
        axis.set_xlabel("latency (ms)", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.legend(fontsize=6)
    for index in range(len(busiest), lines * columns):
        axes[index // columns][index % columns].axis("off")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def outcomes_over_time(runs, path: Path, *, last: int = 60) -> Path | None:
    """Stacked outcome counts per run, a panel per target: the matrix over time (each target's
    ``last`` runs: more bars than that are not readable)."""
    from pyspark.sql import Window

    from ..results.record import OUTCOME_LABELS
    from .outcomes import OUTCOMES

    newest = Window.partitionBy("target").orderBy(F.desc("run_started"), F.desc("run_id"))
    rows = (runs.withColumn("_age", F.row_number().over(newest)).where(F.col("_age") <= last)
            .orderBy("target", "run_started").collect())
    if not rows:
        return None
    targets = list(dict.fromkeys(row.target for row in rows))
    plt = _pyplot()
    figure, axes = plt.subplots(len(targets), 1, figsize=(8, 2.6 * len(targets)), squeeze=False)
    for axis, target in zip([line[0] for line in axes], targets):
        mine = [row for row in rows if row.target == target]
        labels = [row.run_started.strftime("%m-%d %H:%M") if row.run_started else row.run_id for row in mine]
        bottom = [0] * len(mine)
        for outcome in OUTCOMES:
            values = [row[outcome] for row in mine]
            axis.bar(range(len(mine)), values, bottom=bottom, color=COLOURS[outcome], label=OUTCOME_LABELS[outcome])
            bottom = [b + v for b, v in zip(bottom, values)]
        axis.set_xticks(range(len(mine)), labels, rotation=30, fontsize=7)
        axis.set_title(target, fontsize=10)
        axis.set_ylabel("items", fontsize=8)
        axis.legend(fontsize=6, ncols=3)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def table(title: str, frame) -> dict:
    """A job's result as the page shows it: its first rows as text, each outcome in its colour."""
    rows = frame.limit(TABLE_ROWS + 1).collect()
    return {"title": title, "columns": frame.columns, "more": len(rows) > TABLE_ROWS,
            "rows": [[("" if row[name] is None else str(row[name]),
                       COLOURS[row[name]] if isinstance(row[name], str) and row[name] in COLOURS else None)
                      for name in frame.columns] for row in rows[:TABLE_ROWS]]}


def write_page(folder: Path, title: str, tables: dict, images: list[Path]) -> Path:
    """``folder/index.html``: the plots first, then every table of the job's results."""
    page = folder / "index.html"
    page.write_text(pages.render("analysis_summary.html.j2", title=title, images=images, rows_shown=TABLE_ROWS,
                                 tables=[table(name, frame) for name, frame in tables.items()]), encoding="utf-8")
    return page
