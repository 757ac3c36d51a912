"""Wire captures decoded inside the Spark executors: the capture half of the exchanges table.

Two ways in: a Python data source (:class:`CaptureSource`) has each executor open its share of
the files by name, for captures on a disk every executor sees (local mode, a shared mount);
Spark's ``binaryFile`` source hands executors whole files as bytes, for captures on HDFS or S3.
Either way each file is decoded by the project's own reader,
TCP reassembly and codec (:func:`conformance.capture.pcap.read_capture`, the code behind
``conformance decode``), so the table says exactly what ``conformance decode`` says. Decoding
is Python work and the expensive step: it scales with the executors' cores, not the driver.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .layout import EXCHANGE_COLUMNS

REGISTERED = "conformance.analysis.captureSourceRegistered"
DECODED = T.StructType([
    T.StructField("capture_file", T.StringType()),
    T.StructField("capture_key", T.StringType()),
    T.StructField("kind", T.StringType()),
    T.StructField("connection", T.StringType()),
    T.StructField("api", T.StringType()),
    T.StructField("api_key", T.IntegerType()),
    T.StructField("api_version", T.IntegerType()),
    T.StructField("correlation_id", T.IntegerType()),
    T.StructField("sent_seconds", T.DoubleType()),
    T.StructField("latency_ms", T.DoubleType()),
    T.StructField("request_bytes", T.IntegerType()),
    T.StructField("response_bytes", T.IntegerType()),
    T.StructField("error_codes", T.ArrayType(T.IntegerType())),
    T.StructField("problem", T.StringType()),
    T.StructField("closed_by", T.StringType()),
    T.StructField("how", T.StringType()),
])


def capture_key(path: str) -> str:
    """``RUN/FILE``: the run folder and file name, which survive moving a reports folder elsewhere."""
    parts = PurePosixPath(path.split(":", 1)[1] if path.startswith("file:") else path).parts
    return "/".join(parts[-2:])


def response_error_codes(message) -> list[int]:
    """Distinct non-zero codes of every ``*error_code`` field, however deep in the response."""
    found: set[int] = set()
    pending = [message]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            for key, inner in value.items():
                if isinstance(inner, int) and key.endswith("error_code"):
                    if inner:
                        found.add(inner)
                elif isinstance(inner, (dict, list)):
                    pending.append(inner)
        elif isinstance(value, list):
            pending.extend(value)
    return sorted(found)


def decode_file(path: str, content: bytes) -> list[dict]:
    """The rows of one capture given as bytes (``binaryFile``)."""
    # read_capture maps a file; the bytes arrive from wherever the file lives, so they are written
    # to a local temporary file first.
    with tempfile.NamedTemporaryFile(suffix=".pcapng") as handle:
        handle.write(content)
        handle.flush()
        return decode_path(handle.name, name=path)


def decode_path(path: str, *, name: str | None = None) -> list[dict]:
    """The rows of one capture file (one ``unreadable`` row when it cannot be read at all)."""
    from ..capture.pcap import CaptureFileError, read_capture

    name = name or path
    base = {"capture_file": name, "capture_key": capture_key(name)}
    try:
        capture = read_capture(path)
    except (CaptureFileError, OSError) as error:
        return [{**base, "kind": "unreadable", "problem": str(error).replace(path, name)}]
    rows = []
    for exchange in capture.exchanges:
        rows.append({**base, "kind": "exchange", "connection": exchange.connection, "api": exchange.api,
                     "api_key": exchange.api_key, "api_version": exchange.version,
                     "correlation_id": exchange.correlation_id,
                     "sent_seconds": exchange.sent_at if exchange.sent_at is not None else exchange.received_at,
                     "latency_ms": exchange.elapsed_ms,
                     "request_bytes": len(exchange.request_bytes) if exchange.request_bytes else None,
                     "response_bytes": None if exchange.response_bytes is None else len(exchange.response_bytes),
                     "error_codes": response_error_codes(exchange.response),
                     "problem": "; ".join(exchange.problems) or None})
    for event in capture.events:
        rows.append({**base, "kind": "close", "connection": event.connection, "sent_seconds": event.at,
                     "closed_by": event.by, "how": event.how, "error_codes": []})
    return rows


def decode_batches(batches: Iterator) -> Iterator:
    """``mapInArrow`` body: batches of (path, content) in, batches of decoded rows out."""
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content").to_pylist()
        yield arrow_batch([row for path, content in zip(paths, contents) for row in decode_file(path, content)])


def arrow_batch(rows: list[dict]):
    import pyarrow as pa

    schema = _arrow_schema()
    return pa.RecordBatch.from_pydict({name: [row.get(name) for row in rows] for name in schema.names}, schema=schema)


def _arrow_schema():
    import pyarrow as pa

    kinds = {T.StringType: pa.string(), T.IntegerType: pa.int32(), T.DoubleType: pa.float64()}
    fields = []
    for field in DECODED.fields:
        kind = pa.list_(pa.int32()) if isinstance(field.dataType, T.ArrayType) else kinds[type(field.dataType)]
        fields.append(pa.field(field.name, kind))
    return pa.schema(fields)


def decoded(spark: SparkSession, files: list[str], folders: Sequence[str] = (), *, reader: str = "auto") -> DataFrame:
    """Decoded rows of every capture: ``files``, and every .pcap/.pcapng under ``folders``.

    ``reader``: ``path`` has each executor open its files by name (:class:`CaptureSource`: no
    bytes through the JVM, for disks every executor sees); ``binary`` reads them with Spark's
    ``binaryFile`` (any file system Spark reads, HDFS or S3 too); ``auto`` picks ``path`` for
    local paths and ``binary`` for URIs.
    """
    names = [*files, *folders]
    if reader == "auto":
        reader = "binary" if any("://" in name for name in names) else "path"
    if reader == "path":
        if spark.conf.get(REGISTERED, "false") != "true":  # registering again makes Spark warn
            spark.dataSource.register(CaptureSource)
            spark.conf.set(REGISTERED, "true")
        return (spark.read.format(CaptureSource.name()).option("paths", json.dumps(names))
                .option("partitions", str(spark.sparkContext.defaultParallelism * 4)).load())
    frames = []
    if files:
        frames.append(spark.read.format("binaryFile").load(list(files)))
    if folders:
        # Listed by Spark (in parallel, and without a path per file in the plan). No repartition:
        # Spark packs small files into at least as many splits as cores, and shuffling the bytes
        # would cost more than it spreads.
        frames.append(spark.read.format("binaryFile").option("recursiveFileLookup", "true")
                      .option("pathGlobFilter", "*.pcap*").load(list(folders)))
    binary = frames[0].select("path", "content")
    for frame in frames[1:]:
        binary = binary.unionByName(frame.select("path", "content"))
    return binary.mapInArrow(decode_batches, DECODED)


def capture_files(names: list[str]) -> list[str]:
    found = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            found += sorted(str(child) for child in path.rglob("*")
                            if child.suffix in (".pcap", ".pcapng") and child.is_file())
        else:
            found.append(name)
    return found


class CaptureSource(DataSource):
    """``spark.read.format("conformance_captures").option("paths", JSON list).load()``: captures
    decoded where they lie, each task opening its share of the files by name."""

    @classmethod
    def name(cls) -> str:
        return "conformance_captures"

    def schema(self):
        return DECODED

    def reader(self, schema):
        return CaptureReader(json.loads(self.options["paths"]), int(self.options.get("partitions", "8")))


class CaptureReader(DataSourceReader):
    def __init__(self, paths: list[str], partitions: int):
        self.paths, self.wanted = paths, partitions

    def partitions(self):
        files = capture_files(self.paths)
        # Largest first onto the least loaded task: a big capture must not end up last in a long task.
        loads = [[0, index, []] for index in range(max(1, min(self.wanted, len(files))))]
        for size, name in sorted(((os.path.getsize(name), name) for name in files), reverse=True):
            lightest = min(loads)
            lightest[0] += size
            lightest[2].append(name)
        return [InputPartition(names) for _, _, names in loads if names]

    def read(self, partition):
        for start in range(0, len(partition.value), 200):  # Arrow batches of a few thousand rows
            rows = [row for name in partition.value[start:start + 200] for row in decode_path(name)]
            if rows:
                yield arrow_batch(rows)


def capture_exchanges(spark: SparkSession, files: list[str], items: DataFrame | None = None, *,
                      folders: Sequence[str] = (), reader: str = "auto") -> DataFrame:
    """Exchanges table rows of captures, with run, target and item from the results that name them."""
    rows = decoded(spark, files, folders, reader=reader)
    if items is not None:
        owners = (items.where(F.col("pcap").isNotNull())
                  .select(_key_column("pcap").alias("capture_key"), "run_id", "target", "item", "nodeid")
                  .dropDuplicates(["capture_key"]))
        rows = rows.join(F.broadcast(owners), "capture_key", "left")
    else:
        rows = (rows.withColumn("run_id", F.lit(None).cast("string")).withColumn("target", F.lit(None).cast("string"))
                .withColumn("item", F.lit(None).cast("string")).withColumn("nodeid", F.lit(None).cast("string")))
    # A capture no results record names still has a run: the folder its run wrote it into.
    folder = F.element_at(F.split("capture_key", "/"), 1)
    sent = F.timestamp_seconds("sent_seconds")
    return (rows
            .withColumn("run_id", F.coalesce("run_id", folder))
            .withColumn("target", F.coalesce("target", F.lit("unknown")))
            .withColumn("source", F.lit("capture"))
            .withColumn("step", F.lit(None).cast("string"))
            .withColumn("sent_at", sent)
            .withColumn("date", F.to_date("sent_at"))
            .select(*EXCHANGE_COLUMNS))


def _key_column(name: str) -> F.Column:
    """:func:`capture_key` in Spark SQL (the last two path segments)."""
    parts = F.split(F.regexp_replace(F.col(name), r"^file:", ""), "/")
    return F.concat_ws("/", F.slice(parts, -2, 2))
