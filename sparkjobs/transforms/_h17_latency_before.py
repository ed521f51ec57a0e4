"""Producer latency rollups: the SDK's histograms merged exactly, percentiles computed from the merged counts.

A histogram is a sparse bucket -> count map (plus sum, min and max); merging adds the counts per bucket index, so a
window's histogram is exactly the one the producers would have recorded over it. The percentiles are computed from
the merged counts by :func:`stats.histogram.percentile_from_counts` (a UDF on the executors), never averaged.

Rows are kept at several grains (``grains``: name -> the key columns kept; the other key columns are blank,
meaning "all"), e.g. a producer group over all its topics, clients and brokers, or per broker.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkjobs.transforms.windows import Windows, in_windows
from stats.histogram import VERSION, percentile_from_counts

KEYS = ("producer_group", "topic", "client_id", "broker_name")
QUANTILES = {"p50_ms": 0.5, "p90_ms": 0.9, "p99_ms": 0.99}

_PERCENTILES = T.StructType([T.StructField(name, T.DoubleType()) for name in QUANTILES])


def _percentiles(counts, min_ms, max_ms):
    # No type hints: PySpark would read them as a pandas UDF's.
    if not counts:
        return None
    return tuple(percentile_from_counts(counts, q, min_ms=min_ms, max_ms=max_ms) for q in QUANTILES.values())


percentiles_udf = F.udf(_percentiles, _PERCENTILES)


def _sum_map(frame: DataFrame, group: list[str], column: str, key: str, value: str) -> DataFrame:
    """Per group: the map ``column`` summed key by key, as a map ordered by key (empty groups have no row)."""
    exploded = frame.select(*group, F.explode(column).alias(key, value))
    summed = exploded.groupBy(*group, key).agg(F.sum(value).alias(value))
    return summed.groupBy(*group).agg(
        F.map_from_entries(F.array_sort(F.collect_list(F.struct(key, value)))).alias(column)
    )


def latency_rollup(producer_minute: DataFrame, *, windows: Windows, grains: Mapping[str, tuple[str, ...]]) -> DataFrame:
    with_start = in_windows(producer_minute, windows).withColumn(
        "_hist_count", F.aggregate(F.map_values("hist_counts"), F.lit(0).cast("long"), lambda total, n: total + n)
    )
    at_grains = None
    for kept in grains.values():
        keyed = with_start.select(
            "cluster_id",
            *[F.col(key) if key in kept else F.lit("").alias(key) for key in KEYS],
            "resolution",
            "start",
            "minute",
            "count",
            "exception_count",
            "exceptions",
            "hist_counts",
            "hist_sum_ms",
            F.when(F.col("_hist_count") > 0, F.col("hist_min_ms")).alias("hist_min_ms"),
            F.when(F.col("_hist_count") > 0, F.col("hist_max_ms")).alias("hist_max_ms"),
        )
        at_grains = keyed if at_grains is None else at_grains.unionByName(keyed)
    group = ["cluster_id", *KEYS, "resolution", "start"]
    totals = at_grains.groupBy(*group).agg(
        F.count_distinct("minute").cast("int").alias("minutes"),
        F.sum("count").alias("count"),
        F.sum("exception_count").alias("exception_count"),
        F.sum("hist_sum_ms").alias("sum_ms"),
        F.min("hist_min_ms").alias("min_ms"),
        F.max("hist_max_ms").alias("max_ms"),
    )
    counts = _sum_map(at_grains, group, "hist_counts", "bucket", "n")
    exceptions = _sum_map(at_grains, group, "exceptions", "name", "failed")
    merged = (
        totals.join(counts, group, "left")
        .join(exceptions, group, "left")
        .withColumn("hist_counts", F.coalesce("hist_counts", F.create_map().cast("map<int,bigint>")))
        .withColumn("exceptions", F.coalesce("exceptions", F.create_map().cast("map<string,bigint>")))
        .withColumn("_p", percentiles_udf("hist_counts", "min_ms", "max_ms"))
    )
    empty = F.size("hist_counts") == 0
    return merged.select(
        "resolution",
        "start",
        "minutes",
        "cluster_id",
        *KEYS,
        "count",
        "exception_count",
        "exceptions",
        F.struct(
            F.lit(VERSION).alias("v"),
            F.col("hist_counts").alias("counts"),
            F.when(empty, 0.0).otherwise(F.col("sum_ms")).alias("sum_ms"),
            F.when(empty, 0.0).otherwise(F.col("max_ms")).alias("max_ms"),
            F.when(empty, 0.0).otherwise(F.col("min_ms")).alias("min_ms"),
        ).alias("histogram"),
        *[F.col(f"_p.{name}").alias(name) for name in QUANTILES],
        F.when(~empty, F.col("max_ms")).alias("max_ms"),
    )
