"""The ``rankings`` job: the rankings of a closed UTC day, from the daily rollups (which must have been computed:
the ``daily`` job of the same day succeeded). The daily rollups are one row per subject and day, so they are read
straight from the database rather than through the lake."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from django.db.models import Q

from sparkjobs.extract.read import read_rows
from sparkjobs.extract.tables import CLUSTER_DAY, CONSUME_DAY, PRODUCER_DAY, TOPIC_DAY
from sparkjobs.jobs.base import Job, JobContext, Outcome, materialize
from sparkjobs.load import Replacement, replace_windows
from sparkjobs.transforms import rankings
from stats.models import (
    ClusterRollup,
    ConsumeRollup,
    JobRun,
    JobState,
    ProducerLatencyRollup,
    Ranking,
    RankingKind,
    Resolution,
    TopicRollup,
)

DAY = dt.timedelta(days=1)


class RollupsMissing(RuntimeError):
    pass


def day_rankings(context: JobContext) -> Outcome:
    day = context.start
    if not JobRun.objects.filter(job="daily", window_start=day, state=JobState.SUCCEEDED).exists():
        raise RollupsMissing(
            f"the daily rollups of {day:%Y-%m-%d} have not been computed yet (run the daily job first)"
        )
    progress = context.stage(0.0, 0.2)
    progress(0, 1, "extract daily rollups")
    days = {"resolution": Resolution.DAY}
    history = {"start__gte": day - rankings.BASELINE_DAYS * DAY, "start__lt": day + DAY}
    spark = context.spark
    topic_days, topic_rows = read_rows(spark, TOPIC_DAY, TopicRollup.objects.filter(**days, **history))
    cluster_days, cluster_rows = read_rows(spark, CLUSTER_DAY, ClusterRollup.objects.filter(**days, **history))
    consume_days, consume_rows = read_rows(spark, CONSUME_DAY, ConsumeRollup.objects.filter(**days, start=day))
    producer_days, producer_rows = read_rows(
        spark,
        PRODUCER_DAY,
        ProducerLatencyRollup.objects.filter(**days, start=day, topic="", client_id="", broker_name=""),
    )
    rows_read = topic_rows + cluster_rows + consume_rows + producer_rows
    frames = [
        (
            "topics by traffic (day)",
            rankings.topic_traffic(topic_days, kind=RankingKind.TOPIC_TRAFFIC_DAY.value, days=1, day=day),
        ),
        (
            "topics by traffic (7 days)",
            rankings.topic_traffic(topic_days, kind=RankingKind.TOPIC_TRAFFIC_7D.value, days=7, day=day),
        ),
        (
            "topic growth",
            rankings.topic_change(
                topic_days,
                cluster_days,
                growth_kind=RankingKind.TOPIC_GROWTH.value,
                shrink_kind=RankingKind.TOPIC_SHRINK.value,
                day=day,
            ),
        ),
        (
            "consumers by lag time",
            rankings.consumer_lag_time(consume_days, kind=RankingKind.CONSUMER_LAG_TIME.value, day=day),
        ),
        (
            "consumers by failures",
            rankings.consumer_failures(consume_days, kind=RankingKind.CONSUMER_FAILURES.value, day=day),
        ),
        (
            "producers by exceptions",
            rankings.producer_exceptions(producer_days, kind=RankingKind.PRODUCER_EXCEPTIONS.value, day=day),
        ),
    ]
    tables = materialize(frames, context.stage(0.2, 0.8))
    written = replace_windows(
        [Replacement(Ranking, Q(window_end=day + DAY), pa.concat_tables(tables))], progress=context.stage(0.8, 1.0)
    )
    return Outcome(rows_read=rows_read, rows_written=written)


RANKINGS = Job("rankings", DAY, day_rankings, "rankings of a closed UTC day, from its daily rollups")
