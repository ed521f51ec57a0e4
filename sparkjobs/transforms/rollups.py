"""Rollups of the collected minute tables over ``windows`` ((resolution label, seconds) pairs, see
:mod:`sparkjobs.transforms.windows`).

The minute rules hold (:mod:`stats.models.traffic`): in a minute the cluster was collected in, an entity without a
row reads as zero, and a NULL value is unknown. So an entity's ``minutes`` is its cluster's collected minutes in the
window, sums skip NULLs, and averages divide by the collected minutes less those whose value was NULL.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparkjobs.transforms.windows import Windows, in_windows


def _nulls(column: str) -> Column:
    return F.count(F.when(F.col(column).isNull(), 1))


def _average(total: str, nulls: str) -> Column:
    """``total`` over the known minutes (collected less NULL ones): absent rows count as zeros."""
    known = F.col("minutes") - F.col(nulls)
    return F.when(known > 0, F.col(total) / known)


def _labelled(frame: DataFrame, columns: list[str]) -> DataFrame:
    return frame.select("resolution", "start", F.col("minutes").cast("int"), *columns)


def collected_minutes(cluster_minute: DataFrame, *, windows: Windows) -> DataFrame:
    """(cluster_id, resolution, start, collected): how many minutes of each window each cluster was collected in."""
    return (
        in_windows(cluster_minute, windows)
        .groupBy("cluster_id", "resolution", "start")
        .agg(F.count("*").alias("collected"))
    )


def _with_minutes(aggregated: DataFrame, collected: DataFrame) -> DataFrame:
    return aggregated.join(collected, ["cluster_id", "resolution", "start"], "left").withColumn(
        "minutes", F.coalesce(F.col("collected"), F.col("_rows"))
    )


def topic_rollup(topic_minute: DataFrame, collected: DataFrame, *, windows: Windows) -> DataFrame:
    aggregated = (
        in_windows(topic_minute, windows)
        .groupBy("cluster_id", "topic", "resolution", "start")
        .agg(F.sum("put_nums").alias("put_nums"), F.sum("put_size").alias("put_size"), F.count("*").alias("_rows"))
    )
    return _labelled(_with_minutes(aggregated, collected), ["cluster_id", "topic", "put_nums", "put_size"])


def consume_rollup(consume_minute: DataFrame, collected: DataFrame, *, windows: Windows) -> DataFrame:
    aggregated = (
        in_windows(consume_minute, windows)
        .groupBy("cluster_id", "group", "topic", "resolution", "start")
        .agg(
            F.sum("get_nums").alias("get_nums"),
            F.sum("get_size").alias("get_size"),
            F.sum("sndbck_nums").alias("sndbck_nums"),
            F.max("lag").alias("lag_max"),
            F.sum("lag").alias("_lag_sum"),
            _nulls("lag").alias("_lag_nulls"),
            F.max("lag_seconds").alias("lag_seconds_max"),
            F.sum("lag_seconds").alias("_lag_seconds_sum"),
            _nulls("lag_seconds").alias("_lag_seconds_nulls"),
            F.count("*").alias("_rows"),
        )
    )
    frame = (
        _with_minutes(aggregated, collected)
        .withColumn("lag_avg", _average("_lag_sum", "_lag_nulls"))
        .withColumn("lag_seconds_avg", _average("_lag_seconds_sum", "_lag_seconds_nulls"))
    )
    return _labelled(
        frame,
        [
            "cluster_id",
            "group",
            "topic",
            "get_nums",
            "get_size",
            "sndbck_nums",
            "lag_max",
            "lag_avg",
            "lag_seconds_max",
            "lag_seconds_avg",
        ],
    )


def broker_rollup(broker_minute: DataFrame, *, windows: Windows) -> DataFrame:
    """Every collection writes a row per known broker, so a broker's ``minutes`` are its own rows; ``minutes_down``
    those it did not answer in (their figures are NULL)."""
    frame = (
        in_windows(broker_minute, windows)
        .groupBy("cluster_id", "broker_name", "broker_id", "resolution", "start")
        .agg(
            F.sum("put_nums").alias("put_nums"),
            F.sum("put_size").alias("put_size"),
            F.sum("get_nums").alias("get_nums"),
            F.sum("get_size").alias("get_size"),
            F.count("*").alias("minutes"),
            F.count(F.when(~F.col("up"), 1)).cast("int").alias("minutes_down"),
        )
    )
    return _labelled(
        frame,
        ["cluster_id", "broker_name", "broker_id", "put_nums", "put_size", "get_nums", "get_size", "minutes_down"],
    )


def cluster_rollup(cluster_minute: DataFrame, *, windows: Windows) -> DataFrame:
    """A minute's cluster totals are NULL when a broker was down: sums are over the complete minutes."""
    frame = (
        in_windows(cluster_minute, windows)
        .groupBy("cluster_id", "resolution", "start")
        .agg(
            F.sum("put_nums").alias("put_nums"),
            F.sum("put_size").alias("put_size"),
            F.sum("get_nums").alias("get_nums"),
            F.sum("get_size").alias("get_size"),
            F.count("*").cast("int").alias("collected_minutes"),
            F.count(F.when(F.col("put_nums").isNull() | (F.col("brokers_down") > 0), 1))
            .cast("int")
            .alias("minutes_incomplete"),
        )
        .withColumn("minutes", F.col("collected_minutes") - F.col("minutes_incomplete"))
    )
    return _labelled(
        frame,
        ["cluster_id", "put_nums", "put_size", "get_nums", "get_size", "collected_minutes", "minutes_incomplete"],
    )


def server_rollup(server_sample: DataFrame, *, windows: Windows) -> DataFrame:
    """Averages and peaks of the five-minute samples; ``minutes`` counts the samples with a CPU reading."""
    averaged = {
        "cpu_percent": ("avg", "max"),
        "cpu_iowait_percent": ("avg",),
        "load1": ("avg", "max"),
        "mem_used": ("avg", "max"),
        "swap_used": ("max",),
        "net_in_bytes_per_s": ("avg", "max"),
        "net_out_bytes_per_s": ("avg", "max"),
        "disk_read_bytes_per_s": ("avg",),
        "disk_write_bytes_per_s": ("avg",),
        "disk_busy_percent": ("avg", "max"),
        "tcp_established": ("avg", "max"),
        "tcp_time_wait": ("max",),
    }
    aggregates = [F.count("cpu_percent").alias("minutes"), F.max("mem_total").alias("mem_total")]
    names = ["host", "mem_total"]
    for column, kinds in averaged.items():
        for kind in kinds:
            aggregates.append(getattr(F, kind)(column).alias(f"{column}_{kind}"))
            names.append(f"{column}_{kind}")
    frame = in_windows(server_sample, windows).groupBy("host", "resolution", "start").agg(*aggregates)
    return _labelled(frame, names)
