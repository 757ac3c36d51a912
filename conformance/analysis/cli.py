"""``conformance analyze JOB INPUT...``: the analysis jobs on the command line.

``register(subparsers)`` adds the sub-command to ``conformance``'s parser and
``command_analyze(arguments)`` runs it; ``python -m conformance.analysis`` (or that file given
to ``spark-submit``) runs the same parser on its own.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .jobs import JOBS

DEFAULT_OUT = "reports/analysis"
COMMANDS = ["ingest", *JOBS, "all"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", choices=COMMANDS,
                        help="ingest (write the tables to --warehouse), one of the five jobs, or all of them")
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="results .jsonl files, .pcap/.pcapng captures, folders of them, globs, or a warehouse")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master: local[N], spark://HOST:PORT, ... (default: local[*])")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"job results as Parquet and an HTML summary per job (default: {DEFAULT_OUT})")
    parser.add_argument("--warehouse", metavar="DIR", help="ingest: the warehouse to write or merge into")
    parser.add_argument("--base", metavar="RUN", help="regressions: the earlier run (an id or a prefix of one)")
    parser.add_argument("--new", metavar="RUN", help="regressions: the later run")
    parser.add_argument("--source", choices=["transcript", "capture"], help="latency: only exchanges from one source")
    parser.add_argument("--min-runs", type=int, default=2, metavar="N", help="flaky: runs an item needs (default 2)")
    parser.add_argument("--no-transcripts", action="store_true", help="exchanges from captures only")
    parser.add_argument("--no-captures", action="store_true", help="do not decode captures")
    parser.add_argument("--capture-reader", choices=["auto", "path", "binary"], default="auto",
                        help="path: executors open captures by name (a disk they all see); binary: Spark's "
                             "binaryFile (HDFS, S3); auto: path for local paths (default)")
    parser.add_argument("--no-html", action="store_true", help="Parquet only, no summary page")
    parser.add_argument("--limit", type=int, default=25, metavar="N", help="rows of each table printed (default 25)")


def register(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("analyze", help="analysis jobs on Spark over results and captures "
                                                   "(needs the 'analysis' extra)")
    add_arguments(parser)
    return parser


def command_analyze(arguments) -> int:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("conformance analyze needs PySpark: pip install 'kafka-conformance[analysis]'", file=sys.stderr)
        return 2
    from .inputs import collect

    inputs = collect(arguments.inputs)
    for missing in inputs.missing:
        print(f"conformance analyze: {missing}: no results, captures or warehouse there", file=sys.stderr)
    if inputs.empty():
        return 2
    if arguments.job == "ingest" and not arguments.warehouse:
        print("conformance analyze ingest: --warehouse DIR is required", file=sys.stderr)
        return 2
    from . import warehouse
    from .progress import Progress
    from .session import spark_session

    from pyspark.sql import SparkSession

    started = time.monotonic()
    embedded = SparkSession.getActiveSession() is not None  # a caller's session (a test, a notebook) stays up
    spark = spark_session(arguments.master)
    print(f"Spark {spark.version} on {spark.sparkContext.master}: {len(inputs.results)} results files, "
          f"{len(inputs.captures)} captures and {len(inputs.capture_folders)} folders of captures, "
          f"{len(inputs.warehouses)} warehouses", file=sys.stderr)
    try:
        tables = warehouse.build(spark, inputs, transcripts=not arguments.no_transcripts,
                                 decode=not arguments.no_captures, capture_reader=arguments.capture_reader)
        if arguments.job == "ingest":
            with Progress(spark, f"ingesting into {arguments.warehouse}"):
                written = warehouse.ingest(spark, tables, arguments.warehouse)
            print(f"{arguments.warehouse}: {written['items']} item rows, {written['exchanges']} exchange rows")
            return 0
        # Jobs read the tables several times: decode and parse once.
        with Progress(spark, "reading inputs"):
            tables = warehouse.Tables(tables.items.cache(), tables.exchanges.cache())
            counts = (tables.items.count(), tables.exchanges.count())
        print(f"{counts[0]} item rows, {counts[1]} exchange rows", file=sys.stderr)
        names = JOBS if arguments.job == "all" else [arguments.job]
        for name in names:
            run_job(spark, name, tables, arguments)
        if arguments.job == "all" and not arguments.no_html:
            write_index(Path(arguments.out), names)
    except ValueError as error:
        print(f"conformance analyze: {error}", file=sys.stderr)
        return 2
    finally:
        if not embedded:
            spark.stop()
    print(f"done in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


def run_job(spark, name: str, tables, arguments) -> dict:
    from ..report.console import print_table
    from .jobs import job
    from .progress import Progress

    options = {"base": arguments.base, "new": arguments.new, "source": arguments.source,
               "min_runs": arguments.min_runs}
    folder = Path(arguments.out) / name
    with Progress(spark, f"{name}"):
        results = job(name).run(tables, **options)
        for table, frame in results.items():
            # Job results are aggregates: one file each is what people and other tools want.
            frame.coalesce(1).write.mode("overwrite").parquet(str(folder / table))
    for table, frame in results.items():
        rows = frame.limit(arguments.limit).collect()
        print_table(frame.columns, [[_cell(value) for value in row] for row in rows],
                    title=f"{name}: {table} (first {arguments.limit}; all in {folder / table})")
    if not arguments.no_html:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="conformance analyze", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return command_analyze(parser.parse_args(argv))
