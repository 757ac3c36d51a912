"""How long ``conformance analyze site`` takes on a long history: 100 runs of six targets by default.

``python -m conformance.bench.site --results FILE... [--runs 100] [--master local[2]]``

The history is grown from real results (:mod:`conformance.analysis.synthetic`: each target's newest run
replayed as many runs, with flaky items, changes at each target version and harness versions of their
own), ingested into a warehouse, then the site is built from the warehouse on the master. Timed apart:
growing the results, ingesting them, starting Spark, building the site (the figure the issue asks to
stay under a minute on local[2]). ``--reuse`` keeps the warehouse of an earlier run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from . import timed
from ..analysis import synthetic
from ..analysis.driver import Options, analyze
from ..analysis.inputs import collect
from ..report.certify.levels import grade_summaries
from ..report.itemref import reproduce


def on_standalone_cluster(warehouse: Path, out: Path) -> dict:
    """The same site from the same warehouse, its driver here and its executor a standalone worker's."""
    from ..analysis.spark_cluster import StandaloneCluster
    from ..analysis.spark_session import spark_session

    with StandaloneCluster(cores=2, memory="2g") as cluster:
        start_seconds, spark = timed(lambda: spark_session(cluster.url), 2)
        site_seconds, status = timed(lambda: analyze(Options(job="site", inputs=[str(warehouse)], out=str(out),
                                                             master=cluster.url),
                                                     grade=grade_summaries, reproduce=reproduce), 2)
        spark.stop()
    return {"master": cluster.url, "spark_start_s": start_seconds, "site_s": site_seconds, "status": status}


def main(argv: list[str] | None = None) -> int:
    """Build a warehouse of many runs from real results, time ingesting it and building the interop site, and print the
    figures; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.site", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", nargs="+", default=["reports"], metavar="FILE",
                        help="real results files or folders: each target's newest run seeds its history")
    parser.add_argument("--runs", type=int, default=100, help="runs of each target (default 100)")
    parser.add_argument("--corpus", default="/tmp/conformance-site-bench", metavar="DIR")
    parser.add_argument("--reuse", action="store_true", help="use the warehouse already in --corpus")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--standalone", action="store_true",
                        help="then build it again on a standalone cluster on loopback (one worker, two cores)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    arguments = parser.parse_args(argv)

    from ..analysis.spark_session import spark_session

    corpus = Path(arguments.corpus)
    warehouse, figures = corpus / "warehouse", dict[str, Any]()
    spark_seconds, spark = timed(lambda: spark_session(arguments.master), 2)
    figures["spark_start_s"] = spark_seconds
    if not (arguments.reuse and (warehouse / "items").is_dir()):
        seeds = synthetic.seed_runs([Path(name) for name in collect(arguments.results).results])
        if not seeds:
            print("no results to grow the history from", file=sys.stderr)
            return 2
        shutil.rmtree(corpus, ignore_errors=True)
        rows = arguments.runs * sum(len(records) for records in seeds.values())
        figures["grow_s"], grown = timed(lambda: synthetic.write_results(seeds, corpus / "results", rows), 2)
        figures.update(targets=sorted(seeds), rows=grown["rows"], runs=grown["runs"])
        figures["ingest_s"], _ = timed(lambda: analyze(Options(job="ingest", inputs=[str(corpus / "results")],
                                                                warehouse=str(warehouse), master=arguments.master,
                                                                no_transcripts=True, no_captures=True)), 2)
    figures["site_s"], status = timed(lambda: analyze(
        Options(job="site", inputs=[str(warehouse)], out=str(corpus / "site"), master=arguments.master),
        grade=grade_summaries, reproduce=reproduce), 2)
    figures.update(master=arguments.master, site=str(corpus / "site"), status=status)
    spark.stop()
    if arguments.standalone and status == 0:
        figures["standalone"] = on_standalone_cluster(warehouse, corpus / "site-standalone")
    print(json.dumps(figures, indent=1))
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(figures, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
