"""The analysis pipeline: many runs, many targets, every captured exchange, on Spark.

Needs the ``analysis`` extra (PySpark, pyarrow, pandas<3, matplotlib); nothing else in the
package imports this one. Modules, one job each:

- :mod:`.layout`: the items and exchanges tables (columns, partitioning) as documented
- :mod:`.inputs`: command-line arguments sorted into results files, captures and warehouses
- :mod:`.results`: results JSONL into items and transcript exchanges (parsed in the JVM)
- :mod:`.captures`: pcap/pcapng decoded inside the executors with the project's own reader
- :mod:`.warehouse`: both tables from any inputs, and ingestion into a Parquet warehouse
- :mod:`.jobs`: matrix, regressions, flaky, latency, history
- :mod:`.summary`: the HTML page and PNG plots; :mod:`.progress`: the progress line
- :mod:`.spark_session`: the SparkSession; :mod:`.spark_cluster`: a standalone cluster on loopback
- :mod:`.driver`: what ``conformance analyze`` does (its options are parsed in ``conformance.cli.analyze``)
- :mod:`.synthetic`: the corpus the benchmark (``conformance.bench.analysis``) grows
"""
