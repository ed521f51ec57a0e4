"""``manage.py sparkjob`` runs any job for any window by hand with a progress display; the Celery tasks run every
due window. Both use the configured master and lake (settings), here the shared local session and a tmp lake."""

import datetime as dt
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sparkjobs import tasks
from sparkjobs.jobs.runner import JobsFailed
from stats.models import JobRun, JobState, TopicRollup
from tests.sparkjobs.minutes import HOUR, store_hour
from tests.support.spark import LOCAL_MASTER

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def configured(settings, spark, config):
    """Settings naming the shared session's master and the test's lake."""
    settings.SPARK_MASTER = LOCAL_MASTER
    settings.SPARK_LAKE_URL = config.lake_url
    return settings


def test_the_command_runs_a_window_showing_its_progress(configured):
    store_hour()
    out = io.StringIO()

    call_command("sparkjob", "hourly", "--start", "2026-03-02T10:00", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].startswith("hourly 2026-03-02 10:00 [") and lines[0].endswith("starting Spark")
    assert any("extract topic_minute 2026-03-02 10:00" in line for line in lines)
    assert any("transformed topic rollups" in line for line in lines)
    assert any("load stats_topicrollup" in line for line in lines)
    assert "[##############################] 100% done" in lines[-2]
    assert lines[-1].startswith("hourly 2026-03-02 10:00 succeeded in ")
    assert TopicRollup.objects.filter(topic="orders").count() == 7


def test_the_command_runs_every_window_of_a_range_and_reports_failures(configured):
    store_hour()
    out, err = io.StringIO(), io.StringIO()

    call_command("sparkjob", "hourly", "--start", "2026-03-02T09:00Z", "--end", "2026-03-02T11:00Z", stdout=out)
    with pytest.raises(CommandError, match="not closed yet"):
        call_command("sparkjob", "daily", "--start", dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT00:00"), stderr=err)
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("sparkjob", "weekly")

    assert [run.window_start for run in JobRun.objects.order_by("window_start")] == [
        HOUR - dt.timedelta(hours=1),
        HOUR,
    ]
    assert "hourly 2026-03-02 09:00 succeeded" in out.getvalue()


def test_the_hourly_task_runs_the_windows_due(configured, monkeypatch):
    store_hour()
    monkeypatch.setattr(tasks, "HOURLY_LOOKBACK", dt.timedelta(hours=1))
    monkeypatch.setattr("django.utils.timezone.now", lambda: HOUR + dt.timedelta(hours=1, minutes=5))

    assert tasks.run_hourly_rollups() == 1
    assert tasks.run_hourly_rollups() == 0  # nothing due any more

    assert JobRun.objects.get().window_start == HOUR
    assert TopicRollup.objects.filter(topic="orders").count() == 7


def test_the_daily_task_tries_every_job_and_raises_what_failed(configured, monkeypatch):
    def unreachable(*args, **kwargs):
        raise OSError("lake unreachable")

    monkeypatch.setattr("sparkjobs.jobs.rollups.export_window", unreachable)
    monkeypatch.setattr(tasks, "DAILY_LOOKBACK", dt.timedelta(days=1))
    monkeypatch.setattr("django.utils.timezone.now", lambda: HOUR.replace(hour=0) + dt.timedelta(days=1, minutes=20))

    with pytest.raises(JobsFailed) as failure:
        tasks.run_daily_jobs()

    assert str(failure.value) == (
        "daily 2026-03-02 00:00: OSError: lake unreachable; rankings 2026-03-02 00:00: RollupsMissing: the daily "
        "rollups of 2026-03-02 have not been computed yet (run the daily job first)"
    )
    assert sorted(JobRun.objects.values_list("job", "state")) == [
        ("daily", JobState.FAILED),
        ("rankings", JobState.FAILED),
    ]
