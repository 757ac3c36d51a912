"""The SparkSession every analysis job runs on: ``local[*]`` by default, or a cluster's master URL.

PySpark's defaults are wrong here in three ways this module fixes before the JVM starts:
Python workers would run whatever ``python3`` is first on PATH (often one without pyarrow or
this package), the driver would log every INFO line and draw stage bars over our own output,
and a host name resolving to loopback makes Spark warn on every start.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

DEFAULT_MASTER = "local[*]"
QUIET_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.blocks.name = org.apache.spark.storage.BlockManager
logger.blocks.level = error
logger.shutdown.name = org.apache.spark.util.ShutdownHookManager
logger.shutdown.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""
# Root at WARN, not ERROR: at ERROR Spark's shell logic prints a "Setting default log level" line.


def quiet_log4j_file() -> Path:
    """A log4j2 configuration that keeps Spark at WARN, written once per user into the temp folder."""
    path = Path(tempfile.gettempdir()) / f"conformance-spark-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != QUIET_LOG4J:
        path.write_text(QUIET_LOG4J)
    return path


def prepare_environment() -> None:
    """Environment the driver's JVM and the Python workers inherit; set before the session starts."""
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers need this interpreter's pyarrow and package
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def spark_session(master: str | None = None, *, app_name: str = "conformance-analysis",
                  shuffle_partitions: int | None = None, driver_memory: str = "4g", config: dict | None = None):
    """A new or the running SparkSession for ``master`` (default ``local[*]``).

    ``getOrCreate`` hands back a session already running in this process whatever the master
    asked for, so a caller that needs another master stops the old session first.
    """
    prepare_environment()
    from pyspark.sql import SparkSession

    # Under spark-submit the JVM is already up with the submitted --master: asking for local[*]
    # here would silently run the job in the driver instead.
    submitted = master is None and "PYSPARK_GATEWAY_PORT" in os.environ
    master = master or DEFAULT_MASTER
    log4j = f"-Dlog4j2.configurationFile=file:{quiet_log4j_file()}"
    builder = SparkSession.builder if submitted else SparkSession.builder.master(master)
    builder = (builder.appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")  # our own progress line instead of stage bars
               .config("spark.driver.extraJavaOptions", log4j)
               .config("spark.executor.extraJavaOptions", log4j)
               .config("spark.sql.session.timeZone", "UTC")  # dates of partitions are UTC dates
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions or _default_partitions(master)))
               .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.debug.maxToStringFields", "200")  # wide plans: no "truncated" warning
               # A capture or results file is a few kilobytes: at Spark's 4 MB cost per file opened,
               # a split held 32 of them and the Python work of decoding drowned in task overhead.
               .config("spark.sql.files.openCostInBytes", str(64 * 1024)))
    if master.startswith("local") and not submitted:
        builder = builder.config("spark.driver.memory", driver_memory)  # local mode: the executors live in it
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _default_partitions(master: str) -> int:
    """Twice the cores of a local master: the results are small, Spark's 200 would be 200 tiny tasks."""
    if master.startswith("local["):
        inside = master[len("local["):].split(",")[0].rstrip("]")
        cores = (os.cpu_count() or 1) if inside == "*" else int(inside)
        return max(2, 2 * cores)
    if master == "local":
        return 2
    return 16
