"""The jobs end to end on the shared local session: minute data in the database, exported to a lake, rolled up and
ranked by Spark, written back; re-runs, failures half-way, and the one-run-at-a-time lease."""

import datetime as dt
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.utils import timezone

from sparkjobs import load
from sparkjobs.config import SparkConfig
from sparkjobs.extract.lake import Lake
from sparkjobs.extract.tables import MINUTE_TABLES
from sparkjobs.jobs.rankings import RollupsMissing
from sparkjobs.jobs.rollups import DAILY
from sparkjobs.jobs.runner import InvalidWindow, JobAlreadyRunning, claim, due_windows, run_job, worker_name
from stats.histogram import Histogram
from stats.models import (
    BrokerMinute,
    BrokerRollup,
    ClusterMinute,
    ClusterRollup,
    ConsumeMinute,
    ConsumeRollup,
    JobRun,
    JobState,
    ProducerLatencyRollup,
    Ranking,
    RankingKind,
    Resolution,
    ServerRollup,
    ServerSample,
    TopicMinute,
    TopicRollup,
)
from stats.models.producers import ProducerMinute
from tests.sparkjobs.minutes import CLUSTER, HOUR, PRODUCER_MINUTES, PRODUCERS, histogram, snapshot, store_hour

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

TEN = dt.timedelta(minutes=10)


def merged(pairs, minutes) -> Histogram:
    return Histogram.merged(histogram(client, broker, n) for n in minutes for client, broker in pairs)


def test_hourly_rollups_equal_the_hand_computed_sums_and_merged_percentiles(spark, config):
    store_hour()

    run = run_job("hourly", HOUR, config=config, spark=spark)

    assert run.state == JobState.SUCCEEDED and run.progress == 1.0
    hour = {"cluster_id": CLUSTER, "resolution": Resolution.HOUR, "start": HOUR}
    # 58 collected minutes; orders idle (no row) in one, its broker down (NULL) in another: 56 known minutes of 10.
    orders = TopicRollup.objects.get(topic="orders", **hour)
    assert (orders.put_nums, orders.put_size, orders.minutes) == (560, 56_000, 58)
    assert TopicRollup.objects.get(topic="payments", **hour).put_nums == sum(range(10))
    # Minutes 10..19 without the two uncollected ones.
    ten = TopicRollup.objects.get(
        topic="orders", cluster_id=CLUSTER, resolution=Resolution.TEN_MINUTES, start=HOUR + TEN
    )
    assert (ten.put_nums, ten.minutes) == (80, 8)
    assert TopicRollup.objects.filter(topic="orders", resolution=Resolution.TEN_MINUTES).count() == 6

    # Lag 0..29 (minutes 15 and 16 missing) then no row (no lag, a zero) and one unknown minute (NULL).
    billing = ConsumeRollup.objects.get(group="billing", topic="orders", **hour)
    assert (billing.get_nums, billing.sndbck_nums, billing.lag_max, billing.lag_seconds_max) == (280, 3, 29, 58.0)
    assert billing.lag_avg == pytest.approx((435 - 15 - 16) / 57)
    assert billing.lag_seconds_avg == pytest.approx(2 * (435 - 15 - 16) / 57)

    stored = 58 * 1000 + (1770 - 15 - 16) - 1030
    broker = BrokerRollup.objects.get(broker_name="broker-a", broker_id=0, **hour)
    assert (broker.put_nums, broker.minutes, broker.minutes_down) == (stored, 58, 1)
    cluster = ClusterRollup.objects.get(**hour)
    assert (cluster.put_nums, cluster.collected_minutes, cluster.minutes_incomplete, cluster.minutes) == (
        stored,
        58,
        1,
        57,
    )
    server = ServerRollup.objects.get(host="10.0.0.1", resolution=Resolution.HOUR, start=HOUR)
    assert (server.cpu_percent_avg, server.cpu_percent_max, server.mem_used_max, server.minutes) == (
        27.5,
        55.0,
        1055,
        12,
    )

    # Producer latency: the histograms of every client, broker and minute merged, percentiles of the merge.
    group = ProducerLatencyRollup.objects.get(producer_group="checkout", topic="", client_id="", broker_name="", **hour)
    expected = merged(PRODUCERS, PRODUCER_MINUTES)
    assert Histogram.from_dict(group.histogram) == expected
    assert (group.p50_ms, group.p90_ms, group.p99_ms, group.max_ms) == (
        expected.percentile(0.5),
        expected.percentile(0.9),
        expected.percentile(0.99),
        expected.max_ms,
    )
    assert (group.count, group.exception_count, group.minutes) == (4 * sum(10 + n for n in PRODUCER_MINUTES), 12, 12)
    assert group.exceptions == {"MQBrokerException": 4, "RemotingTimeoutException": 8}
    slow_broker = ProducerLatencyRollup.objects.get(
        producer_group="checkout", topic="", client_id="", broker_name="broker-b", **hour
    )
    assert slow_broker.p99_ms == merged([("c1", "broker-b"), ("c2", "broker-b")], PRODUCER_MINUTES).percentile(0.99)
    first_ten = ProducerLatencyRollup.objects.get(
        producer_group="checkout",
        topic="",
        client_id="c1",
        broker_name="",
        cluster_id=CLUSTER,
        resolution=Resolution.TEN_MINUTES,
        start=HOUR,
    )
    assert first_ten.p90_ms == merged([("c1", "broker-a"), ("c1", "broker-b")], range(10)).percentile(0.9)


def test_rerunning_a_window_changes_nothing(spark, config):
    store_hour()
    run_job("hourly", HOUR, config=config, spark=spark)
    first = snapshot()

    run_job("hourly", HOUR, config=config, spark=spark)

    assert snapshot() == first
    assert sum(len(rows) for rows in first.values()) > 0
    assert list(JobRun.objects.filter(job="hourly").values_list("state", flat=True)) == [JobState.SUCCEEDED] * 2


def test_a_run_failing_after_its_first_partition_resumes_and_completes_on_rerun(spark, config, tmp_path, monkeypatch):
    store_hour()
    write = Lake.write
    calls = []

    def dies_after_the_first_partition(self, relative, schema, batches):
        calls.append(relative)
        if len(calls) > 1:
            raise RuntimeError("worker killed")
        return write(self, relative, schema, batches)

    monkeypatch.setattr(Lake, "write", dies_after_the_first_partition)
    with pytest.raises(RuntimeError, match="worker killed"):
        run_job("hourly", HOUR, config=config, spark=spark)

    failed = JobRun.objects.get()
    assert failed.state == JobState.FAILED and "worker killed" in failed.error and failed.finished_at is not None
    lake = Path(config.lake_url)
    exported = sorted(path.relative_to(lake) for path in lake.rglob("*.parquet"))
    assert exported == [Path(Lake.partition("cluster_minute", HOUR))]
    assert not TopicRollup.objects.exists()
    first_partition = (lake / exported[0]).stat()

    monkeypatch.setattr(Lake, "write", write)
    resumed = run_job("hourly", HOUR, config=config, spark=spark)

    assert resumed.state == JobState.SUCCEEDED
    assert (lake / exported[0]).stat().st_ino == first_partition.st_ino  # kept, not exported again
    assert len(list(lake.rglob("*.parquet"))) == len(MINUTE_TABLES)
    resumed_rows = snapshot()
    # The same window from scratch, in another lake, gives the same rollups.
    fresh = SparkConfig(master=config.master, lake_url=str(tmp_path / "fresh"), java_options=config.java_options)
    run_job("hourly", HOUR, config=fresh, spark=spark)
    assert snapshot() == resumed_rows


def test_a_failure_while_loading_leaves_the_previous_rows(spark, config, monkeypatch):
    store_hour()
    run_job("hourly", HOUR, config=config, spark=spark)
    before = snapshot()
    TopicMinute.objects.filter(topic="payments").update(put_nums=1000)
    insert = load._insert
    loaded = []

    def fails_on_the_third_table(model, names):
        loaded.append(model)
        if len(loaded) == 3:
            raise RuntimeError("database went away")
        return insert(model, names)

    monkeypatch.setattr(load, "_insert", fails_on_the_third_table)
    with pytest.raises(RuntimeError, match="database went away"):
        run_job("hourly", HOUR, config=config, spark=spark, refresh=True)

    assert snapshot() == before
    monkeypatch.setattr(load, "_insert", insert)
    run_job("hourly", HOUR, config=config, spark=spark, refresh=True)
    payments = TopicRollup.objects.get(topic="payments", resolution=Resolution.HOUR)
    assert payments.put_nums == 10 * 1000


def test_a_window_running_elsewhere_is_not_run_again(db, config):
    holder = JobRun.objects.create(
        job="hourly",
        window_start=HOUR,
        window_end=HOUR + dt.timedelta(hours=1),
        worker=worker_name(),
        started_at=timezone.now(),
        lease_expires_at=timezone.now() + dt.timedelta(minutes=5),
    )

    with pytest.raises(JobAlreadyRunning, match="already running"):
        run_job("hourly", HOUR, config=config)

    assert list(JobRun.objects.values_list("pk", "state")) == [(holder.pk, JobState.RUNNING)]


def test_a_run_whose_worker_died_or_lease_expired_is_taken_over(spark, config):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = JobRun.objects.create(
        job="hourly",
        window_start=HOUR,
        window_end=HOUR + dt.timedelta(hours=1),
        worker=f"{socket.gethostname()}:{ended.stdout.strip()}",
        started_at=timezone.now(),
        lease_expires_at=timezone.now() + dt.timedelta(minutes=5),
    )
    expired = JobRun.objects.create(
        job="daily",
        window_start=HOUR.replace(hour=0),
        window_end=HOUR.replace(hour=0) + dt.timedelta(days=1),
        worker="elsewhere:1",
        started_at=timezone.now() - dt.timedelta(hours=1),
        lease_expires_at=timezone.now() - dt.timedelta(seconds=1),
    )
    store_hour()

    run = run_job("hourly", HOUR, config=config, spark=spark)
    claim_of_daily = claim(DAILY, expired.window_start, expired.window_end, master="local[2]")

    dead.refresh_from_db()
    expired.refresh_from_db()
    assert dead.state == JobState.FAILED and "is gone" in dead.error
    assert expired.state == JobState.FAILED and "lease expired" in expired.error
    assert claim_of_daily.state == JobState.RUNNING
    assert run.state == JobState.SUCCEEDED and run.rows_read == sum(
        model.objects.count()
        for model in (ClusterMinute, BrokerMinute, TopicMinute, ConsumeMinute, ServerSample, ProducerMinute)
    )
    assert run.rows_written == sum(len(rows) for rows in snapshot().values())


def test_windows_not_closed_or_not_aligned_are_refused_before_anything_runs(db, config):
    now = timezone.now()
    current_hour = now.replace(minute=0, second=0, microsecond=0)

    with pytest.raises(InvalidWindow, match="not closed yet"):
        run_job("hourly", current_hour, config=config, now=now)
    with pytest.raises(InvalidWindow, match="whole hour"):
        run_job("hourly", HOUR + dt.timedelta(minutes=10), config=config)
    with pytest.raises(InvalidWindow, match="whole day"):
        run_job("daily", HOUR, config=config)

    assert not JobRun.objects.exists()


def test_due_windows_are_the_closed_ones_without_a_successful_or_live_run(db):
    now = HOUR + dt.timedelta(hours=3, minutes=5)
    hours = [HOUR + dt.timedelta(hours=n) for n in range(3)]
    later = timezone.now() + dt.timedelta(minutes=5)
    for start, state, lease in [
        (hours[0], JobState.SUCCEEDED, later),
        (hours[1], JobState.FAILED, later),
        (hours[2], JobState.RUNNING, later),
        (hours[2] - dt.timedelta(hours=1), JobState.RUNNING, now - dt.timedelta(minutes=1)),
    ]:
        JobRun.objects.create(
            job="hourly",
            window_start=start,
            window_end=start + dt.timedelta(hours=1),
            state=state,
            started_at=now,
            lease_expires_at=lease,
        )

    # 10:00 succeeded, 12:00 is running; 11:00 failed (and its stale running row's lease is over); 09:00 never ran.
    due = due_windows("hourly", now, dt.timedelta(hours=4))

    assert due == [HOUR - dt.timedelta(hours=1), hours[1]]


def test_daily_rollups_then_the_days_rankings(spark, config):
    day = HOUR.replace(hour=0)
    store_hour()
    # The two days before, as the daily job left them: orders stored 1,120 a day, payments nothing.
    for n in (1, 2):
        before = {"cluster_id": CLUSTER, "resolution": Resolution.DAY, "start": day - n * dt.timedelta(days=1)}
        ClusterRollup.objects.create(minutes=1440, collected_minutes=1440, minutes_incomplete=0, **before)
        TopicRollup.objects.create(topic="orders", minutes=1440, put_nums=1120, **before)

    with pytest.raises(RollupsMissing, match="daily rollups of 2026-03-02"):
        run_job("rankings", day, config=config, spark=spark)
    run_job("daily", day, config=config, spark=spark)
    run_job("rankings", day, config=config, spark=spark)

    today = {"cluster_id": CLUSTER, "resolution": Resolution.DAY, "start": day}
    assert TopicRollup.objects.get(topic="orders", **today).put_nums == 560
    assert TopicRollup.objects.get(topic="orders", **today).minutes == 58
    group = ProducerLatencyRollup.objects.get(
        producer_group="checkout", topic="", client_id="", broker_name="", **today
    )
    assert group.p99_ms == merged(PRODUCERS, PRODUCER_MINUTES).percentile(0.99)
    ranked = {
        (kind, subject): (rank, value)
        for kind, subject, rank, value in Ranking.objects.filter(cluster_id=CLUSTER).values_list(
            "kind", "subject", "rank", "value"
        )
    }
    assert ranked == {
        (RankingKind.TOPIC_TRAFFIC_DAY, "orders"): (1, 560),
        (RankingKind.TOPIC_TRAFFIC_DAY, "payments"): (2, 45),
        (RankingKind.TOPIC_TRAFFIC_7D, "orders"): (1, 560 + 2 * 1120),
        (RankingKind.TOPIC_TRAFFIC_7D, "payments"): (2, 45),
        (RankingKind.TOPIC_GROWTH, "payments"): (1, 45),
        (RankingKind.TOPIC_SHRINK, "orders"): (1, 560 - 1120),
        (RankingKind.CONSUMER_LAG_TIME, "billing"): (1, 58),
        (RankingKind.CONSUMER_FAILURES, "billing"): (1, 3),
        (RankingKind.PRODUCER_EXCEPTIONS, "checkout"): (1, 12),
    }
    shrink = Ranking.objects.get(kind=RankingKind.TOPIC_SHRINK)
    assert (shrink.window_start, shrink.window_end) == (day, day + dt.timedelta(days=1))
    assert shrink.detail == {"day": 560, "baseline": 1120.0, "ratio": 0.5}
    assert Ranking.objects.get(kind=RankingKind.PRODUCER_EXCEPTIONS).detail["top_exception"] == (
        "RemotingTimeoutException"
    )

    run_job("rankings", day, config=config, spark=spark)
    assert Ranking.objects.count() == len(ranked)


def test_a_day_without_data_has_empty_rankings_and_a_refresh_keeps_exported_hours(spark, config):
    day = HOUR.replace(hour=0)
    JobRun.objects.create(
        job="daily",
        window_start=day,
        window_end=day + dt.timedelta(days=1),
        state=JobState.SUCCEEDED,
        started_at=timezone.now(),
        lease_expires_at=timezone.now(),
    )
    store_hour()
    run_job("hourly", HOUR, config=config, spark=spark)
    before = snapshot()
    TopicMinute.objects.all().delete()  # as retention would

    rankings = run_job("rankings", day, config=config, spark=spark)
    run_job("hourly", HOUR, config=config, spark=spark, refresh=True)

    assert rankings.state == JobState.SUCCEEDED and (rankings.rows_read, rankings.rows_written) == (0, 0)
    assert not Ranking.objects.exists()
    assert snapshot() == before
