"""``conformance analyze JOB INPUT...``: the analysis jobs on Spark (:func:`conformance.analysis.driver.analyze`).

Parsing loads neither PySpark nor the jobs' code beyond their names. ``spark-submit`` takes this
command through the package's driver script: ``spark-submit conformance/cli/__main__.py analyze ...``.
"""

from __future__ import annotations

from dataclasses import fields

from ..defaults import ANALYSIS_OUT


def register(commands) -> None:
    """Add ``conformance analyze JOB INPUT...`` and its options to ``commands``."""
    from ..analysis.driver import COMMANDS

    parser = commands.add_parser("analyze", help="analysis jobs on Spark over results and captures "
                                                 "(needs the 'analysis' extra)")
    parser.add_argument("job", choices=COMMANDS,
                        help="ingest (write the tables to --warehouse), one of the five jobs, all of them, or site "
                             "(the interop site: matrix, scores, history, side by side, into --out)")
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="results .jsonl files, .pcap/.pcapng captures, folders of them, globs, or a warehouse")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master: local[N], spark://HOST:PORT, ... (default: local[*])")
    parser.add_argument("--out", default=ANALYSIS_OUT, metavar="DIR",
                        help=f"job results as Parquet and an HTML summary per job (default: {ANALYSIS_OUT})")
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
    parser.set_defaults(handler=command_analyze)


def command_analyze(arguments) -> int:
    """Run one analysis job (or every one, or the interop site) on Spark; the exit status."""
    from ..analysis.driver import Options, analyze

    options = Options(**{option.name: getattr(arguments, option.name) for option in fields(Options)})
    if options.job != "site":
        from ..report.console.tables import print_table

        return analyze(options, show_table=print_table)
    from ..report.certify.levels import grade_summaries
    from ..report.itemref import reproduce

    return analyze(options, grade=grade_summaries, reproduce=reproduce)
