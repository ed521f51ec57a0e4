"""Retention of the Spark data: rollups per resolution, rankings, finished job runs and the lake's hour partitions
older than their settings are deleted in bounded batches, newer ones kept; whatever the settings, nothing a scheduled
job still reads goes; once an hour's minute data is gone from the lake and the database, its window is refused
rather than replaced with nothing."""

import datetime as dt
from pathlib import Path

import pytest
from celery.schedules import crontab

from portal.celery import app as celery_app
from sparkjobs import tasks
from sparkjobs.extract.export import PastRetention, export_window
from sparkjobs.extract.lake import Lake
from sparkjobs.extract.tables import MINUTE_TABLES, TOPIC_MINUTE
from sparkjobs.jobs.runner import due_windows, run_job
from sparkjobs.retention import Retention, delete_expired
from sparkjobs.transforms.rankings import BASELINE_DAYS
from stats.models import (
    ClusterMinute,
    ClusterRollup,
    JobRun,
    JobState,
    Ranking,
    RankingKind,
    Resolution,
    TopicRollup,
)
from stats.store.retention import delete_in_batches
from tests.sparkjobs.minutes import HOUR, store_hour

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 22, 8, 30, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
ONE_HOUR = dt.timedelta(hours=1)
DEFAULTS = Retention(
    rollup_days={Resolution.TEN_MINUTES: 35, Resolution.HOUR: 400, Resolution.DAY: 0},
    ranking_days=400,
    job_run_days=90,
    lake_days=8,
)
# Every setting far below what the scheduled jobs read: only their needs keep anything.
TINY = Retention(
    rollup_days={Resolution.TEN_MINUTES: 1, Resolution.HOUR: 1, Resolution.DAY: 1},
    ranking_days=1,
    job_run_days=1,
    lake_days=1,
)


def days_ago(days: float) -> dt.datetime:
    return NOW - dt.timedelta(days=days)


def run_retention(lake: Lake, retention: Retention = DEFAULTS, *, batch_size: int = 1000, max_batches: int = 100):
    return delete_expired(
        retention,
        lake,
        now=NOW,
        scheduled=tasks.scheduled_lookbacks(),
        batch_size=batch_size,
        max_batches=max_batches,
    )


def rollup(resolution: Resolution, start: dt.datetime, topic: str = "orders") -> None:
    TopicRollup.objects.create(
        cluster_id=1, topic=topic, resolution=resolution, start=start, minutes=10, put_nums=1, put_size=1
    )
    ClusterRollup.objects.get_or_create(
        cluster_id=1,
        resolution=resolution,
        start=start,
        defaults={"minutes": 10, "collected_minutes": 10, "minutes_incomplete": 0},
    )


def rollup_starts(resolution: Resolution) -> list[dt.datetime]:
    starts = sorted(TopicRollup.objects.filter(resolution=resolution).values_list("start", flat=True))
    assert starts == sorted(ClusterRollup.objects.filter(resolution=resolution).values_list("start", flat=True))
    return starts


def ranking(window_end: dt.datetime) -> None:
    Ranking.objects.create(
        cluster_id=1,
        kind=RankingKind.TOPIC_TRAFFIC_DAY,
        window_start=window_end - DAY,
        window_end=window_end,
        subject="orders",
        value=1.0,
        rank=1,
    )


def job_run(job: str, window_start: dt.datetime, state: JobState, finished_at: dt.datetime | None) -> JobRun:
    length = DAY if job != "hourly" else ONE_HOUR
    started_at = (finished_at or window_start + length) - dt.timedelta(minutes=5)
    return JobRun.objects.create(
        job=job,
        window_start=window_start,
        window_end=window_start + length,
        state=state,
        started_at=started_at,
        finished_at=finished_at,
        lease_expires_at=started_at + dt.timedelta(minutes=15),
    )


def partition(lake: Lake, table: str, hour: dt.datetime) -> None:
    lake.write(lake.partition(table, hour), TOPIC_MINUTE.schema, [])


def partitions(folder: Path) -> list[tuple[str, dt.datetime]]:
    """The lake's (table, hour) partitions, from its files."""
    found = []
    for path in folder.rglob("part.parquet"):
        table, day, hour = path.parts[-4:-1]
        found.append((table, dt.datetime.fromisoformat(f"{day[5:]}T{hour[5:]}:00+00:00")))
    return sorted(found)


@pytest.fixture
def lake(tmp_path) -> Lake:
    return Lake(str(tmp_path / "lake"))


def test_rollups_older_than_their_resolutions_retention_are_deleted_and_newer_ones_kept(lake):
    for resolution, (old, recent) in {
        Resolution.TEN_MINUTES: (days_ago(35.01), days_ago(34.99)),
        Resolution.HOUR: (days_ago(401), days_ago(399)),
        Resolution.DAY: (days_ago(3000), days_ago(399)),
    }.items():
        rollup(resolution, old)
        rollup(resolution, recent)

    assert run_retention(lake).rows == 4  # a 10-minute and an hourly window, each of both tables

    assert rollup_starts(Resolution.TEN_MINUTES) == [days_ago(34.99)]
    assert rollup_starts(Resolution.HOUR) == [days_ago(399)]
    assert rollup_starts(Resolution.DAY) == [days_ago(3000), days_ago(399)]  # daily rollups: kept forever


def test_daily_rollups_go_once_their_retention_is_set():
    day = dt.datetime(2026, 10, 2, tzinfo=dt.UTC)  # 51 days and 8.5 hours ago
    rollup(Resolution.DAY, day - DAY)
    rollup(Resolution.DAY, day)
    retention = Retention(
        rollup_days={**DEFAULTS.rollup_days, Resolution.DAY: 52},
        ranking_days=DEFAULTS.ranking_days,
        job_run_days=DEFAULTS.job_run_days,
        lake_days=0,
    )

    assert run_retention(Lake("/nonexistent/unused"), retention).rows == 2  # the topic's and the cluster's

    assert rollup_starts(Resolution.DAY) == [day]


def test_rankings_older_than_their_retention_are_deleted(lake):
    ranking(days_ago(401))
    ranking(days_ago(399))

    assert run_retention(lake).rows == 1

    assert list(Ranking.objects.values_list("window_end", flat=True)) == [days_ago(399)]


def test_finished_job_runs_older_than_their_retention_are_deleted_and_running_ones_never(lake):
    old, recent = days_ago(91).replace(hour=0, minute=0), days_ago(89).replace(hour=0, minute=0)
    job_run("daily", old, JobState.SUCCEEDED, old + DAY + ONE_HOUR)
    job_run("rankings", old, JobState.FAILED, old + DAY + ONE_HOUR)
    job_run("daily", recent, JobState.SUCCEEDED, recent + DAY + ONE_HOUR)
    stuck = job_run("hourly", days_ago(200).replace(minute=0), JobState.RUNNING, None)

    assert run_retention(lake).rows == 2

    assert sorted(JobRun.objects.values_list("job", "window_start", "state")) == [
        ("daily", recent, JobState.SUCCEEDED),
        ("hourly", stuck.window_start, JobState.RUNNING),
    ]


@pytest.mark.parametrize("as_url", [False, True], ids=["folder", "file-url"])
def test_lake_partitions_older_than_its_retention_are_deleted_and_newer_ones_kept(tmp_path, as_url):
    folder = tmp_path / "lake"
    lake = Lake(folder.as_uri() if as_url else str(folder))
    # The cutoff is the whole hour 8 days back: 2026-11-14 08:00.
    cutoff = dt.datetime(2026, 11, 14, 8, tzinfo=dt.UTC)
    old_day = [dt.datetime(2026, 11, 13, tzinfo=dt.UTC) + hour * ONE_HOUR for hour in range(24)]
    around = [cutoff - 2 * ONE_HOUR, cutoff - ONE_HOUR, cutoff, cutoff + ONE_HOUR]
    for table in ("topic_minute", "producer_minute"):
        for hour in [*old_day, *around, days_ago(1).replace(minute=0)]:
            partition(lake, table, hour)
    # Not the lake's layout: left alone.
    (folder / "topic_minute" / "date=someday").mkdir()
    (folder / "topic_minute" / "notes.txt").write_text("not a partition")

    deleted = run_retention(lake)

    assert deleted.partitions == 2 * (24 + 2)
    expected = [
        (table, hour)
        for table in ("producer_minute", "topic_minute")
        for hour in (*around[2:], days_ago(1).replace(minute=0))
    ]
    assert partitions(folder) == sorted(expected)
    assert (folder / "topic_minute" / "date=someday").is_dir()
    assert (folder / "topic_minute" / "notes.txt").read_text() == "not a partition"
    assert not (folder / "topic_minute" / "date=2026-11-13").exists()  # a whole day goes as one folder
    assert lake.deleted_before() == cutoff


def test_running_retention_twice_is_harmless(lake, tmp_path):
    rollup(Resolution.TEN_MINUTES, days_ago(36))
    rollup(Resolution.TEN_MINUTES, days_ago(1))
    ranking(days_ago(500))
    for hour in (days_ago(10), days_ago(1)):
        partition(lake, "topic_minute", hour)

    first = run_retention(lake)
    state = (rollup_starts(Resolution.TEN_MINUTES), Ranking.objects.count(), partitions(tmp_path / "lake"))
    second = run_retention(lake)

    assert (first.rows, first.partitions) == (3, 1)
    assert (second.rows, second.partitions) == (0, 0)
    assert (rollup_starts(Resolution.TEN_MINUTES), Ranking.objects.count(), partitions(tmp_path / "lake")) == state


def test_rows_are_deleted_in_bounded_batches_a_backlog_over_several_runs(lake):
    for n in range(5):
        rollup(Resolution.TEN_MINUTES, days_ago(40) + n * dt.timedelta(minutes=10))
    ranking(days_ago(500))  # after the rollups in the order of deletion

    # 11 rows: 5 windows of topic and cluster rollups, then the ranking; statements of at most 3 rows.
    assert run_retention(lake, batch_size=3, max_batches=1).rows == 3  # one statement, then the run stops
    assert run_retention(lake, batch_size=3, max_batches=2).rows == 5  # the topics' last 2, then 3 clusters'
    assert run_retention(lake, batch_size=3, max_batches=2).rows == 3  # the clusters' last 2, then the ranking
    assert run_retention(lake, batch_size=3, max_batches=2).rows == 0
    assert not TopicRollup.objects.exists() and not Ranking.objects.exists()


def test_the_batched_delete_stops_after_max_batches_across_tables():
    for n in range(4):
        rollup(Resolution.HOUR, days_ago(1) + n * ONE_HOUR)

    expired = [TopicRollup.objects.all(), ClusterRollup.objects.all()]

    assert delete_in_batches(expired, batch_size=3, max_batches=2) == 4  # 3 topic rollups, then 1: two statements
    assert (TopicRollup.objects.count(), ClusterRollup.objects.count()) == (0, 4)


def test_what_a_scheduled_job_still_reads_is_kept_whatever_the_settings(lake, tmp_path):
    lookbacks = tasks.scheduled_lookbacks()
    due = {name: due_windows(name, NOW, lookback) for name, lookback in lookbacks.items()}
    first_day = min(due["daily"])
    hour = first_day - 3 * DAY
    while hour < NOW:
        partition(lake, "topic_minute", hour)
        hour += ONE_HOUR
    for day in (min(due["rankings"]) - (BASELINE_DAYS + 2) * DAY + n * DAY for n in range(BASELINE_DAYS + 5)):
        rollup(Resolution.DAY, day)
    for name, starts in due.items():
        for start in starts:
            job_run(name, start, JobState.SUCCEEDED, start + (DAY if name != "hourly" else ONE_HOUR) + ONE_HOUR)
    job_run("daily", first_day - 5 * DAY, JobState.SUCCEEDED, first_day - 4 * DAY)

    deleted = run_retention(lake, TINY)

    # The hourly and daily jobs read the minute partitions of their windows.
    needed_hours = set(due["hourly"]) | {start + n * ONE_HOUR for start in due["daily"] for n in range(24)}
    kept_hours = {hour for _table, hour in partitions(tmp_path / "lake")}
    assert needed_hours <= kept_hours
    # The rankings read the daily rollups of their day and the week before.
    needed_days = {start - n * DAY for start in due["rankings"] for n in range(BASELINE_DAYS + 1)}
    assert needed_days <= set(rollup_starts(Resolution.DAY))
    # A window's succeeded run is what keeps it from being run again.
    assert {(name, start) for name, starts in due.items() for start in starts} <= set(
        JobRun.objects.values_list("job", "window_start")
    )
    # Older data still goes.
    assert deleted.partitions and min(kept_hours) > first_day - 3 * DAY
    assert min(rollup_starts(Resolution.DAY)) > min(due["rankings"]) - (BASELINE_DAYS + 2) * DAY
    assert not JobRun.objects.filter(window_start=first_day - 5 * DAY).exists()


def test_an_hour_gone_from_lake_and_database_is_refused_rather_than_exported_empty(lake, tmp_path):
    store_hour()
    now = HOUR + 30 * DAY
    export_window(lake, MINUTE_TABLES, HOUR, HOUR + ONE_HOUR, now=now)
    lake.mark_deleted_before(HOUR + ONE_HOUR)
    for spec in MINUTE_TABLES:
        lake.delete_before(spec.name, HOUR + ONE_HOUR)

    # The database still holds the hour: it is exported again.
    export_window(lake, MINUTE_TABLES, HOUR, HOUR + ONE_HOUR, now=now)
    assert len(partitions(tmp_path / "lake")) == len(MINUTE_TABLES)

    for spec in MINUTE_TABLES:
        lake.delete_before(spec.name, HOUR + ONE_HOUR)
    for spec in MINUTE_TABLES:
        spec.model.objects.all().delete()
    with pytest.raises(PastRetention, match="2026-03-02 10:00 is past retention"):
        export_window(lake, MINUTE_TABLES, HOUR, HOUR + ONE_HOUR, now=now)
    assert partitions(tmp_path / "lake") == []


@pytest.mark.slow
def test_re_running_a_window_past_retention_keeps_its_rollups(spark, config, settings):
    store_hour()
    run_job("hourly", HOUR, config=config, spark=spark)
    rolled = sorted(TopicRollup.objects.values_list("topic", "resolution", "start", "put_nums"))
    for spec in MINUTE_TABLES:
        spec.model.objects.all().delete()
    settings.SPARK_LAKE_URL = config.lake_url
    settings.ROLLUP_10M_RETENTION_DAYS = settings.ROLLUP_HOURLY_RETENTION_DAYS = 0  # keep the rollups

    assert tasks.delete_expired_spark_data() == {"rows": 0, "partitions": len(MINUTE_TABLES)}

    with pytest.raises(PastRetention):
        run_job("hourly", HOUR, config=config, spark=spark)
    assert sorted(TopicRollup.objects.values_list("topic", "resolution", "start", "put_nums")) == rolled
    assert "past retention" in JobRun.objects.get(state=JobState.FAILED).error
    assert not ClusterMinute.objects.exists()


def test_the_retention_task_runs_daily_with_an_expiry():
    entry = celery_app.conf.beat_schedule["spark-delete-expired-data"]

    assert entry["task"] == tasks.delete_expired_spark_data.name
    assert entry["schedule"] == crontab(minute=40, hour=3)
    assert entry["options"]["expires"] == DAY.total_seconds()
