"""Thin Celery tasks for the Spark jobs; their beat entries (after each hour and each day closes, and the daily
retention) are in :mod:`portal.beat`. Each runs every due window (the one that just closed, and any missed while
workers were down); running one twice is harmless: a window already done is not due, one running elsewhere is
skipped."""

import datetime as dt

from celery import shared_task
from django.utils import timezone

from sparkjobs import retention
from sparkjobs.config import spark_config
from sparkjobs.extract.lake import Lake
from sparkjobs.jobs.runner import run_scheduled

# How far back a scheduled run looks for windows without a successful run (well within the minute data's
# retention, MINUTE_RETENTION_DAYS; the Spark data's retention keeps what these windows read).
HOURLY_LOOKBACK = dt.timedelta(hours=24)
DAILY_LOOKBACK = dt.timedelta(days=3)
# Retention deletes at most RETENTION_BATCH_SIZE * RETENTION_MAX_BATCHES rows a run (20 million), one statement
# per batch: about five times what a day adds for 10,000 topics and 10,000 consumer groups (chiefly their
# 10-minute rollups), so the daily run keeps up and works off a backlog over a few days.
RETENTION_BATCH_SIZE = 5000
RETENTION_MAX_BATCHES = 4000


def scheduled_lookbacks() -> dict[str, dt.timedelta]:
    """Each scheduled job and how far back its scheduled run looks (what retention keeps for it)."""
    return {"hourly": HOURLY_LOOKBACK, "daily": DAILY_LOOKBACK, "rankings": DAILY_LOOKBACK}


@shared_task
def run_hourly_rollups() -> int:
    return len(run_scheduled(["hourly"], lookback=HOURLY_LOOKBACK))


@shared_task
def run_daily_jobs() -> int:
    """The daily rollups, then the rankings made from them."""
    return len(run_scheduled(["daily", "rankings"], lookback=DAILY_LOOKBACK))


@shared_task
def catch_up(lookback_hours: dict[str, float]) -> int:
    """Every due window of each job within its lookback (``{"daily": 192, ...}``, in hours), jobs in the given
    order: for history written in one go, wider than the scheduled runs' lookbacks (the demo's generated week)."""
    return sum(len(run_scheduled([name], lookback=dt.timedelta(hours=hours))) for name, hours in lookback_hours.items())


@shared_task
def delete_expired_spark_data() -> dict[str, int]:
    """Rollups, rankings, finished job runs and lake partitions past their retention settings."""
    deleted = retention.delete_expired(
        retention.Retention.from_settings(),
        Lake(spark_config().lake_uri),
        now=timezone.now(),
        scheduled=scheduled_lookbacks(),
        batch_size=RETENTION_BATCH_SIZE,
        max_batches=RETENTION_MAX_BATCHES,
    )
    return {"rows": deleted.rows, "partitions": deleted.partitions}
