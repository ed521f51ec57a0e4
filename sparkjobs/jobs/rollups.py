"""The rollup jobs: ``hourly`` (the 10-minute and hourly rollups of a closed hour) and ``daily`` (the daily rollups of
a closed UTC day), both from the minute data in the lake."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q
from pyspark.sql import DataFrame

from sparkjobs.extract.export import export_window
from sparkjobs.extract.read import read_window
from sparkjobs.extract.tables import MINUTE_TABLES
from sparkjobs.jobs.base import Job, JobContext, Outcome, materialize
from sparkjobs.load import Replacement, replace_windows
from sparkjobs.transforms import latency, rollups
from stats.models import (
    LATENCY_GRAINS,
    RESOLUTION_LENGTH,
    BrokerRollup,
    ClusterRollup,
    ConsumeRollup,
    ProducerLatencyRollup,
    Resolution,
    ServerRollup,
    TopicRollup,
)


def rollup_frames(frames: dict[str, DataFrame], resolutions: Sequence[Resolution]) -> dict[type, DataFrame]:
    """Every rollup of the minute tables (lake table name -> DataFrame) at the resolutions, by rollup model."""
    windows = [(resolution.value, int(RESOLUTION_LENGTH[resolution].total_seconds())) for resolution in resolutions]
    collected = rollups.collected_minutes(frames["cluster_minute"], windows=windows)
    return {
        TopicRollup: rollups.topic_rollup(frames["topic_minute"], collected, windows=windows),
        ConsumeRollup: rollups.consume_rollup(frames["consume_minute"], collected, windows=windows),
        BrokerRollup: rollups.broker_rollup(frames["broker_minute"], windows=windows),
        ClusterRollup: rollups.cluster_rollup(frames["cluster_minute"], windows=windows),
        ServerRollup: rollups.server_rollup(frames["server_sample"], windows=windows),
        ProducerLatencyRollup: latency.latency_rollup(
            frames["producer_minute"], windows=windows, grains=LATENCY_GRAINS
        ),
    }


def _run(context: JobContext, resolutions: tuple[Resolution, ...]) -> Outcome:
    exported = export_window(
        context.lake,
        MINUTE_TABLES,
        context.start,
        context.end,
        now=context.now,
        refresh=context.refresh,
        progress=context.stage(0.0, 0.4),
    )
    rows_read = sum(context.lake.rows(context.lake.partition(item.table, item.hour)) for item in exported)
    frames = {
        spec.name: read_window(context.spark, context.lake, spec, context.start, context.end) for spec in MINUTE_TABLES
    }
    results = rollup_frames(frames, resolutions)
    tables = materialize(
        [(model._meta.verbose_name_plural, frame) for model, frame in results.items()], context.stage(0.4, 0.8)
    )
    window = Q(resolution__in=resolutions, start__gte=context.start, start__lt=context.end)
    replacements = [Replacement(model, window, table) for model, table in zip(results, tables, strict=True)]
    written = replace_windows(replacements, progress=context.stage(0.8, 1.0))
    return Outcome(rows_read=rows_read, rows_written=written)


def hourly(context: JobContext) -> Outcome:
    return _run(context, (Resolution.TEN_MINUTES, Resolution.HOUR))


def daily(context: JobContext) -> Outcome:
    return _run(context, (Resolution.DAY,))


HOURLY = Job("hourly", RESOLUTION_LENGTH[Resolution.HOUR], hourly, "10-minute and hourly rollups of a closed hour")
DAILY = Job("daily", RESOLUTION_LENGTH[Resolution.DAY], daily, "daily rollups of a closed UTC day")
