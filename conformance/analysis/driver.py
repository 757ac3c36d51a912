"""What ``conformance analyze JOB INPUT...`` does: read the inputs into tables, run the jobs, print and write them.

:func:`analyze` takes an :class:`Options` (the command's options, parsed in ``conformance.cli.analyze``),
prints the jobs' tables and returns the exit code: 0 done, 2 no PySpark, no inputs or a bad option.
A Spark session the caller already runs (a test, a notebook) is used and left running.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..defaults import ANALYSIS_OUT
from .jobs import JOBS

COMMANDS = ["ingest", *JOBS, "all", "site"]


@dataclass(frozen=True)
class Options:
    job: str  # one of COMMANDS
    inputs: list[str] = field(default_factory=list)  # results files, captures, folders, globs, warehouses
    master: str | None = None  # Spark master URL (None: local[*])
    out: str = ANALYSIS_OUT  # Parquet tables and an HTML page per job
    warehouse: str | None = None  # ingest: the warehouse to write or merge into
    base: str | None = None  # regressions: the earlier run
    new: str | None = None  # regressions: the later run
    source: str | None = None  # latency: transcript or capture only
    min_runs: int = 2  # flaky: runs an item needs
    no_transcripts: bool = False
    no_captures: bool = False
    capture_reader: str = "auto"  # auto, path or binary
    no_html: bool = False
    limit: int = 25  # rows of each table printed


def analyze(options: Options, *, grade=None, reproduce=None, show_table=None) -> int:
    """``grade`` and ``reproduce`` (the site's certification levels and rerun commands) and ``show_table`` (how a
    job's tables reach the terminal: ``show_table(headers, rows, title=...)``; None: not shown) come from the
    report layer, which this one may not import: the command line hands them in."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("conformance analyze needs PySpark: pip install 'kafka-conformance[analysis]'", file=sys.stderr)
        return 2
    from .inputs import collect

    inputs = collect(options.inputs)
    for missing in inputs.missing:
        print(f"conformance analyze: {missing}: no results, captures or warehouse there", file=sys.stderr)
    if inputs.empty():
        return 2
    if options.job == "ingest" and not options.warehouse:
        print("conformance analyze ingest: --warehouse DIR is required", file=sys.stderr)
        return 2
    from . import warehouse
    from .progress import Progress
    from .spark_session import spark_session

    from pyspark.sql import SparkSession

    started = time.monotonic()
    embedded = SparkSession.getActiveSession() is not None  # a caller's session (a test, a notebook) stays up
    spark = spark_session(options.master)
    print(f"Spark {spark.version} on {spark.sparkContext.master}: {len(inputs.results)} results files, "
          f"{len(inputs.captures)} captures and {len(inputs.capture_folders)} folders of captures, "
          f"{len(inputs.warehouses)} warehouses", file=sys.stderr)
    try:
        tables = warehouse.build(spark, inputs, transcripts=not options.no_transcripts,
                                 decode=not options.no_captures, capture_reader=options.capture_reader)
        if options.job == "ingest":
            assert options.warehouse, "checked before Spark started"
            with Progress(spark, f"ingesting into {options.warehouse}"):
                written = warehouse.ingest(spark, tables, options.warehouse)
            print(f"{options.warehouse}: {written['items']} item rows, {written['exchanges']} exchange rows")
            return 0
        # Jobs read the tables several times: decode and parse once.
        with Progress(spark, "reading inputs"):
            tables = warehouse.Tables(tables.items.cache(), tables.exchanges.cache())
            counts = (tables.items.count(), tables.exchanges.count())
        print(f"{counts[0]} item rows, {counts[1]} exchange rows", file=sys.stderr)
        if options.job == "site":
            from .interop.build import build_site

            with Progress(spark, f"site into {options.out}"):
                built = build_site(spark, tables, options.out, results_files=inputs.results, grade=grade,
                                   reproduce=reproduce, command=f"conformance analyze site {' '.join(options.inputs)}")
            print(f"{built['cases']} cases on {built['columns']} columns, {built['departures']} departures with "
                  f"evidence, {built['runs']} runs")
            print(f"wrote {Path(options.out) / 'index.html'}")
            print(f"done in {time.monotonic() - started:.1f} s", file=sys.stderr)
            return 0
        names = JOBS if options.job == "all" else [options.job]
        for name in names:
            run_job(spark, name, tables, options, show_table)
        if options.job == "all" and not options.no_html:
            write_index(Path(options.out), names)
    except ValueError as error:
        print(f"conformance analyze: {error}", file=sys.stderr)
        return 2
    finally:
        if not embedded:
            spark.stop()
    print(f"done in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


def run_job(spark, name: str, tables, options: Options, show_table=None) -> dict:
    """Run the job ``name`` over ``tables``, write its tables as Parquet (and its page) under ``options.out``, and
    show the first rows of each through ``show_table`` where one is given."""
    from .jobs import job
    from .progress import Progress

    settings = {"base": options.base, "new": options.new, "source": options.source,
                "min_runs": options.min_runs}
    folder = Path(options.out) / name
    with Progress(spark, f"{name}"):
        results = job(name).run(tables, **settings)
        for table, frame in results.items():
            # Job results are aggregates: one file each is what people and other tools want.
            frame.coalesce(1).write.mode("overwrite").parquet(str(folder / table))
    for table, frame in results.items() if show_table is not None else ():
        rows = frame.limit(options.limit).collect()
        show_table(frame.columns, [[_cell(value) for value in row] for row in rows],
                    title=f"{name}: {table} (first {options.limit}; all in {folder / table})")
    if not options.no_html:
        page = write_summary(name, tables, results, folder)
        print(f"wrote {page}")
    return results


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def write_summary(name: str, tables, results: dict, folder: Path) -> Path:
    from . import summary
    from .jobs import history

    folder.mkdir(parents=True, exist_ok=True)
    images = []
    if name == "latency":
        images.append(summary.latency_histograms(tables.exchanges, folder / "latency.png"))
    if name in ("matrix", "history"):
        runs = results["runs"] if name == "history" else history.run(tables)["runs"]
        images.append(summary.outcomes_over_time(runs, folder / "outcomes-over-time.png"))
    return summary.write_page(folder, f"conformance analyze {name}", results, [image for image in images if image])


def write_index(out: Path, names: list[str]) -> None:
    from .. import pages

    (out / "index.html").write_text(pages.render("analysis_index.html.j2", names=names), encoding="utf-8")
    print(f"wrote {out / 'index.html'}")

