"""Wire captures decoded inside the Spark executors: the capture half of the exchanges table.

Spark's ``binaryFile`` source hands each executor whole files as bytes (so captures may live on
HDFS or S3, not only on a disk the workers share); each is decoded by the project's own reader,
TCP reassembly and codec (:func:`conformance.capture.pcap.read_capture`, the code behind
``conformance decode``), so the table says exactly what ``conformance decode`` says. Decoding
is Python work and the expensive step: it scales with the executors' cores, not the driver.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import PurePosixPath

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .layout import EXCHANGE_COLUMNS

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
    """The rows of one capture (one ``unreadable`` row when it cannot be read at all)."""
    from ..capture.pcap import CaptureFileError, read_capture

    key = capture_key(path)
    base = {"capture_file": path, "capture_key": key}
    # read_capture maps a file; the bytes arrive from wherever the file lives, so they are written
    # to a local temporary file first (small next to decoding: a few kilobytes per exchange).
    with tempfile.NamedTemporaryFile(suffix=".pcapng") as handle:
        handle.write(content)
        handle.flush()
        try:
            capture = read_capture(handle.name)
        except (CaptureFileError, OSError) as error:
            return [{**base, "kind": "unreadable", "problem": str(error).replace(handle.name, path)}]
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
    import pyarrow as pa

    schema = _arrow_schema()
    names = schema.names
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content").to_pylist()
        rows = [row for path, content in zip(paths, contents) for row in decode_file(path, content)]
        columns = {name: [row.get(name) for row in rows] for name in names}
        yield pa.RecordBatch.from_pydict(columns, schema=schema)


def _arrow_schema():
    import pyarrow as pa

    kinds = {T.StringType: pa.string(), T.IntegerType: pa.int32(), T.DoubleType: pa.float64()}
    fields = []
    for field in DECODED.fields:
        kind = pa.list_(pa.int32()) if isinstance(field.dataType, T.ArrayType) else kinds[type(field.dataType)]
        fields.append(pa.field(field.name, kind))
    return pa.schema(fields)


def decoded(spark: SparkSession, files: list[str], folders: list[str] = ()) -> DataFrame:
    """Decoded rows of every capture: ``files``, and every .pcap/.pcapng under ``folders``.

    Folders are listed by Spark (in parallel, and without a path per file in the plan: a corpus
    holds a file per item). No repartition: Spark already packs small files into at least as
    many splits as there are cores, and shuffling the bytes would cost more than it spreads.
    """
    frames = []
    if files:
        frames.append(spark.read.format("binaryFile").load(list(files)))
    if folders:
        frames.append(spark.read.format("binaryFile").option("recursiveFileLookup", "true")
                      .option("pathGlobFilter", "*.pcap*").load(list(folders)))
    binary = frames[0].select("path", "content")
    for frame in frames[1:]:
        binary = binary.unionByName(frame.select("path", "content"))
    return binary.mapInArrow(decode_batches, DECODED)


def capture_exchanges(spark: SparkSession, files: list[str], items: DataFrame | None = None, *,
                      folders: list[str] = ()) -> DataFrame:
    """Exchanges table rows of captures, with run, target and item from the results that name them."""
    rows = decoded(spark, files, folders)
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
