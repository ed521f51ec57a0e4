"""Retention of the Spark pipeline's data: rollups per resolution, rankings, finished job runs and the lake's hour
partitions are deleted once older than their settings say (``ROLLUP_10M_RETENTION_DAYS``,
``ROLLUP_HOURLY_RETENTION_DAYS``, ``ROLLUP_DAILY_RETENTION_DAYS``, ``RANKING_RETENTION_DAYS``,
``JOB_RUN_RETENTION_DAYS``, ``LAKE_RETENTION_DAYS``; 0 keeps forever). Rows go in bounded batches
(:func:`stats.store.retention.delete_in_batches`); running job runs are never deleted.

Nothing a scheduled job still reads is deleted, whatever the settings: a scheduled run goes back over the windows of
its lookback (``sparkjobs.tasks``) that have no succeeded run, so

- the lake keeps every hour of those windows of the jobs that read it (``hourly`` and ``daily``; the rankings read
  the daily rollups from the database, not the lake),
- the daily rollups keep the days the ``rankings`` job reads (its day and the ``BASELINE_DAYS`` before it),
- the job runs of those windows are kept (a window without its succeeded run would be run again, and the rankings
  of a day need its daily run).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db.models import QuerySet

from sparkjobs.extract.export import CLOSE_GRACE
from sparkjobs.extract.lake import Lake
from sparkjobs.extract.tables import MINUTE_TABLES
from sparkjobs.jobs import JOBS
from sparkjobs.jobs.rankings import RANKINGS
from sparkjobs.jobs.rollups import DAILY, HOURLY
from sparkjobs.transforms.rankings import BASELINE_DAYS
from stats.models import ROLLUP_MODELS, JobRun, JobState, Ranking, Resolution
from stats.store.retention import delete_in_batches

DAY = dt.timedelta(days=1)
HOUR = dt.timedelta(hours=1)
# The jobs that read minute partitions from the lake (sparkjobs.jobs.rollups).
LAKE_JOBS = (HOURLY.name, DAILY.name)


@dataclass(frozen=True)
class Retention:
    """Days each kind of data is kept; 0 (or less) keeps it forever."""

    rollup_days: Mapping[Resolution, int]
    ranking_days: int
    job_run_days: int
    lake_days: int

    @classmethod
    def from_settings(cls) -> Retention:
        return cls(
            rollup_days={
                Resolution.TEN_MINUTES: settings.ROLLUP_10M_RETENTION_DAYS,
                Resolution.HOUR: settings.ROLLUP_HOURLY_RETENTION_DAYS,
                Resolution.DAY: settings.ROLLUP_DAILY_RETENTION_DAYS,
            },
            ranking_days=settings.RANKING_RETENTION_DAYS,
            job_run_days=settings.JOB_RUN_RETENTION_DAYS,
            lake_days=settings.LAKE_RETENTION_DAYS,
        )


@dataclass(frozen=True)
class Cutoffs:
    """What is older than these goes (None: kept forever). Rollups and partitions by their window's start, rankings
    by their window's end, job runs by when they finished."""

    rollups: Mapping[Resolution, dt.datetime | None]
    rankings: dt.datetime | None
    job_runs: dt.datetime | None
    lake: dt.datetime | None


@dataclass(frozen=True)
class Deleted:
    rows: int
    partitions: int


def oldest_scheduled_windows(now: dt.datetime, scheduled: Mapping[str, dt.timedelta]) -> dict[str, dt.datetime]:
    """For each scheduled job (name -> how far back its scheduled run looks), a time no window a scheduled run may
    still run starts before (one period earlier than the oldest such window, to be safe)."""
    closed_until = now - CLOSE_GRACE
    return {name: JOBS[name].last_closed(closed_until) - lookback for name, lookback in scheduled.items()}


def cutoffs(retention: Retention, now: dt.datetime, scheduled: Mapping[str, dt.timedelta]) -> Cutoffs:
    """The cutoffs of ``retention`` at ``now``, moved back where a scheduled job still needs older data."""
    oldest = oldest_scheduled_windows(now, scheduled)

    def cutoff(days: int, *floors: dt.datetime) -> dt.datetime | None:
        return None if days <= 0 else min([now - days * DAY, *floors])

    # The rankings of a day read the daily rollups of the day and the BASELINE_DAYS before it.
    floors = {Resolution.DAY: [oldest[RANKINGS.name] - BASELINE_DAYS * DAY] if RANKINGS.name in oldest else []}
    rollups = {
        resolution: cutoff(days, *floors.get(resolution, ())) for resolution, days in retention.rollup_days.items()
    }
    lake = cutoff(retention.lake_days, *(oldest[name] for name in LAKE_JOBS if name in oldest))
    return Cutoffs(
        rollups=rollups,
        rankings=cutoff(retention.ranking_days),
        job_runs=cutoff(retention.job_run_days, *oldest.values()),
        # Whole hours only: an hour partition goes once all of it is older than the retention.
        lake=None if lake is None else lake.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0),
    )


def expired_rows(cut: Cutoffs) -> list[QuerySet]:
    """The rows past their cutoffs, as one queryset per table and resolution (each selected by an indexed column
    where the table has one)."""
    expired = [
        model.objects.filter(resolution=resolution, start__lt=at)
        for resolution, at in cut.rollups.items()
        if at is not None
        for model in ROLLUP_MODELS
    ]
    if cut.rankings is not None:
        expired.append(Ranking.objects.filter(window_end__lt=cut.rankings))
    if cut.job_runs is not None:
        # A finished run started before it finished: started_at narrows the scan on the (state, started_at) index.
        expired.append(
            JobRun.objects.filter(
                state__in=[JobState.SUCCEEDED, JobState.FAILED],
                started_at__lt=cut.job_runs,
                finished_at__lt=cut.job_runs,
            )
        )
    return expired


def delete_expired_partitions(lake: Lake, cutoff: dt.datetime) -> int:
    """Delete every minute table's hour partitions before ``cutoff`` (recording the cutoff first, so an export
    can tell a deleted partition from a missing one); returns the partitions deleted."""
    lake.mark_deleted_before(cutoff)
    return sum(lake.delete_before(spec.name, cutoff) for spec in MINUTE_TABLES)


def delete_expired(
    retention: Retention,
    lake: Lake,
    *,
    now: dt.datetime,
    scheduled: Mapping[str, dt.timedelta],
    batch_size: int,
    max_batches: int,
) -> Deleted:
    """Delete what is past retention: rows in at most ``max_batches`` statements of ``batch_size`` rows (a backlog
    is worked off over several runs), then the lake's expired hour partitions. Running it twice is harmless."""
    cut = cutoffs(retention, now, scheduled)
    rows = delete_in_batches(expired_rows(cut), batch_size=batch_size, max_batches=max_batches)
    partitions = 0 if cut.lake is None else delete_expired_partitions(lake, cut.lake)
    return Deleted(rows=rows, partitions=partitions)
