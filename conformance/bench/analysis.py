"""How fast the analysis pipeline goes: each job on local[1] and local[2], and the capture decode
against a single-process Python loop over the same files.

``python -m conformance.bench.analysis --results FILE... --captures DIR... [--items N] [--exchanges N]``

The corpus is grown from real results and captures (:mod:`conformance.analysis.synthetic`) into ``--corpus`` (kept
for reruns with ``--reuse``). Steps, each timed on every master:

- parse: results JSONL into the items table (rows/s)
- decode: captures into exchanges inside the executors (exchanges/s), each executor opening its
  files by name; decode_binary: the same through Spark's binaryFile (bytes through the JVM); the
  baseline decodes the same files one after another in this process with the same reader
- ingest: both tables written as partitioned Parquet (the warehouse the jobs then read)
- matrix, regressions, flaky, history: over the items table (rows/s);
  latency: over the exchanges table (exchanges/s)

Job results are computed in full and discarded (Spark's ``noop`` sink), so the times are the
jobs', not a writer's. The defaults are the issue's sizes (1M item rows, 10M exchanges); on a
2-core machine the decode of 10M exchanges takes most of an hour per master, so ``--exchanges``
scales it down.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from functools import partial
from pathlib import Path

from . import timed
from ..analysis import synthetic
from ..analysis.inputs import collect
from ..defaults import DEFAULT_CAPTURES

STEPS_ON_ITEMS = ["matrix", "regressions", "flaky", "history"]
ALL_STEPS = ["parse", "decode", "decode_binary", "ingest", *STEPS_ON_ITEMS, "latency"]


def _exchanges_decoded(spark, folder: str, reader: str) -> int:
    from ..analysis import captures

    return captures.decoded(spark, [], [folder], reader=reader).where("kind = 'exchange'").count()


def _run_job(name: str, stored) -> None:
    from ..analysis.jobs import job

    consume(job(name).run(stored))


def baseline_decode(files: list[str]) -> tuple[float, int]:
    """The same decode, one process, one file after another: the work the executors share out."""
    from ..capture.pcap import read_capture

    started = time.perf_counter()
    exchanges = 0
    for name in files:
        capture = read_capture(name)
        exchanges += len(capture.exchanges)
    return time.perf_counter() - started, exchanges


def consume(frames: dict) -> None:
    """Run every frame's plan to its end without writing anything (Spark's ``noop`` format)."""
    for frame in frames.values():
        frame.write.format("noop").mode("overwrite").save()


def bench_master(master: str, corpus: Path, item_files: list[str], capture_folder: str, warm_up: list[str],
                 steps: list[str]) -> dict:
    """Time each step of the analysis (reading, decoding, every job) on the Spark master ``master``; the timings by
    step."""
    from ..analysis import captures, results, warehouse
    from ..analysis.spark_session import spark_session

    figures: dict = {"master": master}
    spark = spark_session(master)
    try:
        # Warm-up: the first job of a session pays for the JIT, and the first decode in each Python
        # worker for importing the codec and compiling its decoders (seconds, once per worker).
        results.items(results.read_lines(spark, item_files[:1])).count()
        seconds, _ = timed(lambda: [captures.decoded(spark, warm_up, reader=reader).count()
                                    for reader in ("binary", "path")])
        figures["warm_up_decode"] = {"seconds": seconds, "files": len(warm_up)}
        if "parse" in steps:
            seconds, rows = timed(lambda: results.items(results.read_lines(spark, item_files)).count())
            figures["parse"] = {"seconds": seconds, "rows": rows}
        for step, reader in (("decode", "path"), ("decode_binary", "binary")):
            if step in steps:
                seconds, decoded = timed(partial(_exchanges_decoded, spark, capture_folder, reader))
                figures[step] = {"seconds": seconds, "exchanges": decoded}
        if not set(steps) & {"ingest", *STEPS_ON_ITEMS, "latency"}:
            return figures
        store = corpus / f"warehouse-{master.replace('[', '').replace(']', '')}"
        if "ingest" in steps or not store.is_dir():
            shutil.rmtree(store, ignore_errors=True)
            tables = warehouse.build(spark, collect([*item_files, capture_folder]), transcripts=False)
            seconds, written = timed(lambda: warehouse.ingest(spark, tables, store))
            figures["ingest"] = {"seconds": seconds, **written}
        stored = warehouse.build(spark, collect([str(store)]))
        items, exchanges = stored.items.count(), stored.exchanges.count()
        for name in STEPS_ON_ITEMS:
            if name in steps:
                seconds, _ = timed(partial(_run_job, name, stored))
                figures[name] = {"seconds": seconds, "rows": items}
        if "latency" in steps:
            seconds, _ = timed(partial(_run_job, "latency", stored))
            figures["latency"] = {"seconds": seconds, "exchanges": exchanges}
    finally:
        spark.stop()
    return figures


def report(corpus_facts: dict, runs: list[dict], baseline: tuple[float, int] | None) -> str:
    """The benchmark's table as text: the corpus, then each master's timings beside the single-process baseline."""
    lines = [f"corpus: {corpus_facts['rows']} item rows in {corpus_facts['runs']} runs, "
             f"{corpus_facts['exchanges']} captured exchanges in {corpus_facts['captures']} files "
             f"({corpus_facts['capture_bytes'] / 1e6:.0f} MB)", ""]
    header = f"{'step':<12}" + "".join(f"{run['master']:>26}" for run in runs)
    lines += [header, "-" * len(header)]
    for step in ALL_STEPS:
        if step not in runs[0]:
            continue
        cells = []
        for run in runs:
            figure = run[step]
            count = figure.get("rows") or figure.get("exchanges") or figure.get("items")
            unit = "exch/s" if step in ("decode", "decode_binary", "latency") else "rows/s"
            cells.append(f"{figure['seconds']:7.1f} s {count / figure['seconds']:>9,.0f} {unit}")
        lines.append(f"{step:<12}" + "".join(f"{cell:>26}" for cell in cells))
    if len(runs) >= 2:
        first, last = runs[0], runs[-1]
        lines.append("")
        lines.append(f"scaling {first['master']} -> {last['master']}: " + ", ".join(
            f"{step} x{first[step]['seconds'] / last[step]['seconds']:.2f}"
            for step in ALL_STEPS if step in first))
    lines.append("")
    lines.append("first decode in fresh Python workers (import, decoder compilation; not in the figures above): "
                 + ", ".join(f"{run['master']} {run['warm_up_decode']['seconds']:.1f} s" for run in runs))
    if baseline is None:
        return "\n".join(lines)
    seconds, exchanges = baseline
    lines.append(f"decode baseline (one Python process, same reader): {seconds:.1f} s, "
                 f"{exchanges / seconds:,.0f} exch/s")
    for run in runs:
        for step in ("decode", "decode_binary"):
            if step in run:
                decode = run[step]
                lines.append(f"{step} on {run['master']}: {decode['exchanges'] / decode['seconds']:,.0f} exch/s = "
                             f"x{seconds / decode['seconds']:.2f} the baseline")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Grow a corpus from real results, time the analysis on each master and print the table; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.analysis", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", nargs="+", default=["reports"], metavar="FILE",
                        help="real results files or folders to grow the corpus from")
    parser.add_argument("--captures", nargs="+", default=[DEFAULT_CAPTURES], metavar="DIR",
                        help="real captures (files or folders) to grow the corpus from")
    parser.add_argument("--items", type=int, default=1_000_000, help="item rows (default 1M)")
    parser.add_argument("--exchanges", type=int, default=10_000_000, help="captured exchanges (default 10M)")
    parser.add_argument("--corpus", default="/tmp/conformance-analysis-bench", metavar="DIR")
    parser.add_argument("--reuse", action="store_true", help="use the corpus already in --corpus")
    parser.add_argument("--masters", default="local[1],local[2]", help="comma-separated (default local[1],local[2])")
    parser.add_argument("--steps", default=",".join(ALL_STEPS), help=f"comma-separated (default {','.join(ALL_STEPS)})")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    arguments = parser.parse_args(argv)

    corpus = Path(arguments.corpus)
    facts_file = corpus / "corpus.json"
    if not (arguments.reuse and facts_file.exists()):
        from ..capture.pcap import read_capture

        seeds = collect(arguments.results + arguments.captures)
        if not seeds.results or not seeds.capture_files():
            print("need real results files and captures to grow the corpus from (conformance run ... "
                  "-- --wire-capture)", file=sys.stderr)
            return 2
        shutil.rmtree(corpus, ignore_errors=True)
        per_file = {Path(name): len(read_capture(name).exchanges) for name in seeds.capture_files()}
        print(f"growing {arguments.exchanges:,} exchanges from {len(per_file)} captures ...", file=sys.stderr)
        made = synthetic.write_captures(list(per_file), corpus / "captures", arguments.exchanges, per_file)
        print(f"growing {arguments.items:,} item rows from {len(seeds.results)} results files ...", file=sys.stderr)
        grown = synthetic.write_results(synthetic.seed_runs([Path(name) for name in seeds.results]),
                                        corpus / "results", arguments.items, captures=made["names"])
        facts = {"rows": grown["rows"], "runs": grown["runs"], "exchanges": made["exchanges"],
                 "captures": made["files"], "capture_bytes": made["bytes"]}
        facts_file.write_text(json.dumps(facts))
    facts = json.loads(facts_file.read_text())
    found = collect([str(corpus / "results")])
    capture_files = collect([str(corpus / "captures")]).capture_files()
    steps = arguments.steps.split(",")
    baseline = None
    if {"decode", "decode_binary"} & set(steps):
        print(f"baseline decode of {len(capture_files)} captures ...", file=sys.stderr)
        baseline = baseline_decode(capture_files)
    runs = []
    for master in arguments.masters.split(","):
        print(f"jobs on {master} ...", file=sys.stderr)
        runs.append(bench_master(master, corpus, found.results, str(corpus / "captures"), capture_files[:20],
                                 steps))
    print(report(facts, runs, baseline))
    if arguments.json:
        Path(arguments.json).write_text(json.dumps({"corpus": facts, "runs": runs, "baseline": baseline}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
