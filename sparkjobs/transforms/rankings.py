"""Rankings of one closed UTC day from the daily rollups, per cluster: rank 1 is the top of each list.

Every function returns (cluster_id, kind, window_start, window_end, subject, value, rank, detail), ``detail`` a
JSON object of what the value was computed from. Only subjects with something to rank are listed (traffic, a
change, lag or failures above zero). Ties go to the subject name, so a ranking is the same on every run.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

DAY = dt.timedelta(days=1)
# The days the growth of a topic is measured against: its average day over the week before.
BASELINE_DAYS = 7


def _ranked(
    frame: DataFrame, *, kind: str, window_start: dt.datetime, window_end: dt.datetime, ascending: bool = False
) -> DataFrame:
    value = F.col("value").asc() if ascending else F.col("value").desc()
    order = Window.partitionBy("cluster_id").orderBy(value, F.col("subject").asc())
    return frame.select(
        "cluster_id",
        F.lit(kind).alias("kind"),
        F.lit(window_start).alias("window_start"),
        F.lit(window_end).alias("window_end"),
        "subject",
        F.col("value").cast("double").alias("value"),
        F.row_number().over(order).alias("rank"),
        "detail",
    )


def _in(column: str, start: dt.datetime, end: dt.datetime) -> Column:
    return (F.col(column) >= F.lit(start)) & (F.col(column) < F.lit(end))


def topic_traffic(topic_days: DataFrame, *, kind: str, days: int, day: dt.datetime) -> DataFrame:
    """Topics by messages stored over the ``days`` days ending with ``day``."""
    start, end = day - (days - 1) * DAY, day + DAY
    frame = (
        topic_days.where(_in("start", start, end))
        .groupBy("cluster_id", F.col("topic").alias("subject"))
        .agg(F.sum("put_nums").alias("value"), F.count("put_nums").alias("days"))
        .where(F.col("value") > 0)
        .withColumn("detail", F.to_json(F.struct("days")))
    )
    return _ranked(frame, kind=kind, window_start=start, window_end=end)


def topic_change(
    topic_days: DataFrame, cluster_days: DataFrame, *, growth_kind: str, shrink_kind: str, day: dt.datetime
) -> DataFrame:
    """Topics by change in messages per day: ``day``'s messages less their average day over the days before
    (the days of the baseline week its cluster was collected in). Growing topics rank by the largest increase,
    shrinking ones by the largest decrease (value < 0). A cluster without a collected day before has no baseline,
    and a cluster not collected on ``day`` no change: neither is ranked."""
    baseline_start = day - BASELINE_DAYS * DAY
    baseline_days = (
        cluster_days.where(_in("start", baseline_start, day) & (F.col("collected_minutes") > 0))
        .groupBy("cluster_id")
        .agg(F.count("*").alias("baseline_days"))
    )
    collected_today = cluster_days.where(_in("start", day, day + DAY) & (F.col("collected_minutes") > 0)).select(
        "cluster_id"
    )
    today = (
        topic_days.where(_in("start", day, day + DAY))
        .groupBy("cluster_id", "topic")
        .agg(F.coalesce(F.sum("put_nums"), F.lit(0)).alias("today"))
    )
    before = (
        topic_days.where(_in("start", baseline_start, day))
        .groupBy("cluster_id", "topic")
        .agg(F.coalesce(F.sum("put_nums"), F.lit(0)).alias("before"))
    )
    changes = (
        today.join(before, ["cluster_id", "topic"], "full")
        .join(baseline_days, "cluster_id")
        .join(collected_today, "cluster_id", "left_semi")
        .select(
            "cluster_id",
            F.col("topic").alias("subject"),
            F.coalesce("today", F.lit(0)).alias("today"),
            (F.coalesce("before", F.lit(0)) / F.col("baseline_days")).alias("baseline"),
        )
        .withColumn("value", F.col("today") - F.col("baseline"))
        .withColumn(
            "detail",
            F.to_json(
                F.struct(
                    F.col("today").alias("day"),
                    "baseline",
                    F.when(F.col("baseline") > 0, F.col("today") / F.col("baseline")).alias("ratio"),
                )
            ),
        )
    )
    window = {"window_start": day, "window_end": day + DAY}
    return _ranked(changes.where(F.col("value") > 0), kind=growth_kind, **window).unionByName(
        _ranked(changes.where(F.col("value") < 0), kind=shrink_kind, ascending=True, **window)
    )


def consumer_lag_time(consume_days: DataFrame, *, kind: str, day: dt.datetime) -> DataFrame:
    """Consumer groups by the longest a waiting message had waited on ``day`` (seconds, worst topic)."""
    frame = (
        consume_days.where(_in("start", day, day + DAY) & (F.col("lag_seconds_max") > 0))
        .groupBy("cluster_id", F.col("group").alias("subject"))
        .agg(F.max_by("topic", "lag_seconds_max").alias("topic"), F.max("lag_seconds_max").alias("value"))
        .withColumn("detail", F.to_json(F.struct("topic")))
    )
    return _ranked(frame, kind=kind, window_start=day, window_end=day + DAY)


def consumer_failures(consume_days: DataFrame, *, kind: str, day: dt.datetime) -> DataFrame:
    """Consumer groups by the messages they sent back for a retry on ``day`` (consume failures), all topics."""
    frame = (
        consume_days.where(_in("start", day, day + DAY))
        .groupBy("cluster_id", F.col("group").alias("subject"))
        .agg(F.sum("sndbck_nums").alias("value"), F.max_by("topic", "sndbck_nums").alias("topic"))
        .where(F.col("value") > 0)
        .withColumn("detail", F.to_json(F.struct("topic")))
    )
    return _ranked(frame, kind=kind, window_start=day, window_end=day + DAY)


def producer_exceptions(producer_days: DataFrame, *, kind: str, day: dt.datetime) -> DataFrame:
    """Producer groups by failed sends on ``day`` (the group-grain latency rollups: blank topic, client, broker)."""
    top = F.expr("array_max(transform(map_entries(exceptions), e -> struct(e.value AS n, e.key AS name))).name")
    frame = producer_days.where(
        _in("start", day, day + DAY)
        & (F.col("producer_group") != "")
        & (F.col("topic") == "")
        & (F.col("client_id") == "")
        & (F.col("broker_name") == "")
        & (F.col("exception_count") > 0)
    ).select(
        "cluster_id",
        F.col("producer_group").alias("subject"),
        F.col("exception_count").alias("value"),
        F.to_json(
            F.struct(
                F.col("count").alias("sends"),
                (F.col("exception_count") / F.col("count")).alias("share"),
                top.alias("top_exception"),
            )
        ).alias("detail"),
    )
    return _ranked(frame, kind=kind, window_start=day, window_end=day + DAY)
