"""Producer latency rollups: the SDK's histograms merged exactly, percentiles computed from the merged counts.

A histogram is a sparse bucket -> count map (plus sum, min and max); merging adds the counts per bucket index, so a
window's histogram is exactly the one the producers would have recorded over it. The percentiles are computed from
the merged counts by :func:`stats.histogram.percentile_from_counts`, never averaged. Both run in one Python UDF on the
executors, per row of the result: the minutes' histograms are collected and merged by
:func:`stats.histogram.merge_into`, the merge the portal's queries and the SDK's histograms use, so a rollup can never
disagree with the minutes it was made of.

Rows are kept at several grains (``grains``: name -> the key columns kept; the other key columns are blank,
meaning "all"), e.g. a producer group over all its topics, clients and brokers, or per broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkjobs.transforms.windows import Windows, in_windows
from stats.histogram import VERSION, empty, merge_into, percentile_from_counts

KEYS = ("producer_group", "topic", "client_id", "broker_name")
QUANTILES = {"p50_ms": 0.5, "p90_ms": 0.9, "p99_ms": 0.99}

_MERGED = T.StructType(
    [
        T.StructField("counts", T.MapType(T.IntegerType(), T.LongType())),
        T.StructField("sum_ms", T.DoubleType()),
        T.StructField("max_ms", T.DoubleType()),
        T.StructField("min_ms", T.DoubleType()),
        *[T.StructField(name, T.DoubleType()) for name in QUANTILES],
    ]
)


def _merged(histograms):
    """The group's histograms (Rows of counts, sum_ms, min_ms, max_ms) merged, counts ordered by bucket, and the
    percentiles of the merge (None when no minute recorded a latency)."""
    # No type hints: PySpark would read them as a pandas UDF's.
    total = reduce(merge_into, histograms, empty())
    counts = total["counts"]
    percentiles = (
        percentile_from_counts(counts, q, min_ms=total["min_ms"], max_ms=total["max_ms"]) for q in QUANTILES.values()
    )
    return (dict(sorted(counts.items())), total["sum_ms"], total["max_ms"], total["min_ms"], *percentiles)


merged_udf = F.udf(_merged, _MERGED)


def _sum_map(frame: DataFrame, group: list[str], column: str, key: str, value: str) -> DataFrame:
    """Per group: the map ``column`` summed key by key, as a map ordered by key (empty groups have no row)."""
    exploded = frame.select(*group, F.explode(column).alias(key, value))
    summed = exploded.groupBy(*group, key).agg(F.sum(value).alias(value))
    return summed.groupBy(*group).agg(
        F.map_from_entries(F.array_sort(F.collect_list(F.struct(key, value)))).alias(column)
    )


def latency_rollup(producer_minute: DataFrame, *, windows: Windows, grains: Mapping[str, tuple[str, ...]]) -> DataFrame:
    with_start = in_windows(producer_minute, windows)
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
            F.struct(
                F.col("hist_counts").alias("counts"),
                F.col("hist_sum_ms").alias("sum_ms"),
                F.col("hist_min_ms").alias("min_ms"),
                F.col("hist_max_ms").alias("max_ms"),
            ).alias("histogram"),
        )
        at_grains = keyed if at_grains is None else at_grains.unionByName(keyed)
    group = ["cluster_id", *KEYS, "resolution", "start"]
    totals = at_grains.groupBy(*group).agg(
        F.count_distinct("minute").cast("int").alias("minutes"),
        F.sum("count").alias("count"),
        F.sum("exception_count").alias("exception_count"),
        F.collect_list("histogram").alias("histograms"),
    )
    exceptions = _sum_map(at_grains, group, "exceptions", "name", "failed")
    merged = (
        totals.join(exceptions, group, "left")
        .withColumn("exceptions", F.coalesce("exceptions", F.create_map().cast("map<string,bigint>")))
        .withColumn("_h", merged_udf("histograms"))
    )
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
            F.col("_h.counts").alias("counts"),
            F.col("_h.sum_ms").alias("sum_ms"),
            F.col("_h.max_ms").alias("max_ms"),
            F.col("_h.min_ms").alias("min_ms"),
        ).alias("histogram"),
        *[F.col(f"_h.{name}").alias(name) for name in QUANTILES],
        F.when(F.size("_h.counts") > 0, F.col("_h.max_ms")).alias("max_ms"),
    )
