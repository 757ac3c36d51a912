"""Latency percentiles and error-code distributions per target × API × version, from exchanges.

Transcript and capture rows see the same requests from two places (the client's clock, the
wire's), so ``source`` stays a key: mixing them would count every captured request twice.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

KEYS = ["target", "source", "api", "api_version"]
PERCENTILES = [0.5, 0.95, 0.99]


def error_names(spark, codes: list[int]) -> DataFrame:
    from ...protocol.errors import error_name

    return spark.createDataFrame([(code, "NONE" if code == 0 else error_name(code)) for code in codes],
                                 "error_code int, error string")


def run(tables, *, source: str | None = None, **_) -> dict[str, DataFrame]:
    exchanges = tables.exchanges
    if source:
        exchanges = exchanges.where(F.col("source") == source)
    requests = exchanges.where(F.col("kind") == "exchange").cache()
    timed = requests.where(F.col("latency_ms").isNotNull())
    quantiles = F.percentile_approx("latency_ms", F.array(*[F.lit(p) for p in PERCENTILES]), 10000)
    latency = (timed.groupBy(*KEYS)
               .agg(F.count("*").alias("exchanges"), quantiles.alias("_q"),
                    F.round(F.avg("latency_ms"), 3).alias("mean_ms"), F.max("latency_ms").alias("max_ms"),
                    F.round(F.avg("request_bytes"), 1).alias("request_bytes_avg"),
                    F.round(F.avg("response_bytes"), 1).alias("response_bytes_avg"))
               .select(*KEYS, "exchanges", F.col("_q")[0].alias("p50_ms"), F.col("_q")[1].alias("p95_ms"),
                       F.col("_q")[2].alias("p99_ms"), "mean_ms", "max_ms", "request_bytes_avg",
                       "response_bytes_avg")
               .orderBy(*KEYS))
    # An exchange with no error anywhere counts once under NONE; one naming several codes once per code.
    codes = (requests.withColumn("error_code", F.explode_outer(
                F.when(F.size("error_codes") > 0, F.col("error_codes")).otherwise(F.array(F.lit(0)))))
             .groupBy(*KEYS, "error_code").count())
    seen = [row.error_code for row in codes.select("error_code").distinct().collect()]
    spark = exchanges.sparkSession
    errors = (codes.join(F.broadcast(error_names(spark, seen)), "error_code", "left")
              .select(*KEYS, "error_code", "error", "count").orderBy(*KEYS, F.desc("count")))
    closes = (exchanges.where(F.col("kind") == "close").groupBy("target", "source", "closed_by", "how").count()
              .orderBy("target", "source", "closed_by", "how"))
    unanswered = (requests.where(F.col("response_bytes").isNull()).groupBy(*KEYS).count()
                  .withColumnRenamed("count", "unanswered").orderBy(*KEYS))
    return {"latency": latency, "error_codes": errors, "closes": closes, "unanswered": unanswered}
