"""Charts over more than six hours read the rollups: three days are drawn per 10-minute bucket, the buckets the
hourly Spark job has rolled up come from the rollup tables and the others (the open tail, an hour whose job has not
run) are aggregated from the minute data the same way (in SQL), so a bucket reads the same from either source;
charts of six hours or less read the minute data. The rollups are the real job's (``sparkjobs``, on a local Spark
session), over the known hours of ``tests/sparkjobs/minutes.py`` (uncollected minutes, a broker down, an idle
topic)."""

import datetime as dt
import itertools

import pytest
from django.db import transaction

from sparkjobs.config import SparkConfig
from sparkjobs.jobs.runner import run_job
from sparkjobs.session import spark_session
from stats.models import (
    ROLLUP_MODELS,
    BrokerMinute,
    ClusterMinute,
    ClusterRollup,
    ConsumeMinute,
    JobState,
    Resolution,
    TopicMinute,
    TopicRollup,
)
from stats.queries.source import resolution_for
from stats.queries.traffic import broker_traffic, cluster_traffic, group_traffic, topic_traffic
from tests.sparkjobs.minutes import BROKER_DOWN, CLUSTER, HOUR, store_hour

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

HOURS = [HOUR + dt.timedelta(hours=n) for n in range(3)]  # 10:00, 11:00, 12:00 stored
UNTIL = HOURS[-1] + dt.timedelta(minutes=59)
DAYS = (UNTIL - dt.timedelta(days=3), UNTIL)  # drawn per 10 minutes
TEN = dt.timedelta(minutes=10)


@pytest.fixture(scope="module")
def job_rollups(django_db_setup, django_db_blocker, tmp_path_factory) -> list:
    """The rollup rows the real hourly job writes for the first and the last of the three stored hours (not the
    one between: its job has not run), computed once for the module in a transaction rolled back afterwards."""
    config = SparkConfig(master="local[2]", lake_url=str(tmp_path_factory.mktemp("lake")))
    with django_db_blocker.unblock(), transaction.atomic():
        for hour in HOURS:
            store_hour(hour=hour)
        spark = spark_session(config)
        try:
            for hour in (HOURS[0], HOURS[2]):
                assert run_job("hourly", hour, config=config, spark=spark).state == JobState.SUCCEEDED
        finally:
            spark.stop()
        rows = [row for model in ROLLUP_MODELS for row in model.objects.all()]
        transaction.set_rollback(True)
    return rows


@pytest.fixture
def rolled_up(job_rollups):
    """The three stored hours, with the job's rollups of the first and the last."""
    for hour in HOURS:
        store_hour(hour=hour)
    for model in ROLLUP_MODELS:
        model.objects.bulk_create(row for row in job_rollups if type(row) is model)


def at(hour: int, minute: int) -> dt.datetime:
    return HOURS[hour] + dt.timedelta(minutes=minute)


def drawn(points) -> dict:
    return dict(points)


def every_chart() -> dict:
    """Every reader's three days, as points."""
    group = group_traffic(CLUSTER, "billing", *DAYS, topics=["orders", "idle-subscription"])
    broker = broker_traffic(CLUSTER, "broker-a", 0, *DAYS)
    cluster = cluster_traffic(CLUSTER, *DAYS)
    topic = topic_traffic(CLUSTER, "orders", *DAYS)
    return {
        "topic put_nums": topic.put_nums,
        "topic put_size": topic.put_size,
        "payments put_nums": topic_traffic(CLUSTER, "payments", *DAYS).put_nums,
        **{
            f"group {name} {t}": getattr(s, name)
            for t, s in group.items()
            for name in ("consume_tps", "lag", "lag_seconds")
        },
        "broker put_nums": broker.put_nums,
        "broker get_nums": broker.get_nums,
        "cluster put_nums": cluster.put_nums,
        "cluster get_nums": cluster.get_nums,
        "cluster brokers_down": cluster.brokers_down,
    }


def test_six_hours_are_drawn_per_minute_up_to_three_days_per_ten_minutes_and_a_week_per_hour():
    assert resolution_for(UNTIL - dt.timedelta(hours=6), UNTIL) is None
    assert resolution_for(UNTIL - dt.timedelta(hours=7), UNTIL) == Resolution.TEN_MINUTES
    assert resolution_for(UNTIL - dt.timedelta(days=1), UNTIL) == Resolution.TEN_MINUTES
    assert resolution_for(*DAYS) == Resolution.TEN_MINUTES
    assert resolution_for(UNTIL - dt.timedelta(days=7), UNTIL) == Resolution.HOUR
    assert resolution_for(UNTIL - dt.timedelta(days=20), UNTIL) == Resolution.HOUR
    assert resolution_for(UNTIL - dt.timedelta(days=30), UNTIL) == Resolution.DAY


def test_three_days_have_one_point_per_ten_minute_bucket_aligned_on_utc(db):
    points = topic_traffic(CLUSTER, "orders", *DAYS).put_nums

    starts = [moment for moment, _ in points]
    assert starts[0] == dt.datetime(2026, 2, 27, 12, 50, tzinfo=dt.UTC)  # the bucket the range's first minute is in
    assert starts[-1] == at(2, 50)
    assert all(later - earlier == TEN for earlier, later in itertools.pairwise(starts))
    assert len(points) == 3 * 24 * 6 + 1


def test_rolled_up_buckets_come_from_the_rollups_even_after_their_minutes_are_deleted(rolled_up):
    before = every_chart()
    for model in (ClusterMinute, BrokerMinute, TopicMinute, ConsumeMinute):  # as retention would
        model.objects.filter(minute__lt=HOURS[1]).delete()

    after = every_chart()

    first_hour = [at(0, m) for m in range(0, 60, 10)]
    for name, points in after.items():
        assert [drawn(points)[s] for s in first_hour] == [drawn(before[name])[s] for s in first_hour], name
    assert drawn(after["topic put_nums"])[at(0, 10)] == 10.0


def test_buckets_not_rolled_up_are_aggregated_from_the_minutes_like_the_rollups(rolled_up):
    """The middle hour (its job has not run) against hand-computed figures of the stored minutes."""
    orders = drawn(topic_traffic(CLUSTER, "orders", *DAYS).put_nums)
    # 10 messages a collected minute: minute 5 idle (a zero), 15 and 16 not collected, 30 its broker down (unknown).
    assert [orders[at(1, m)] for m in range(0, 60, 10)] == [9.0, 10.0, 10.0, 9.0, 10.0, 10.0]
    assert orders[at(1, 0) - TEN] == 10.0  # the hour before: rolled up
    billing = group_traffic(CLUSTER, "billing", *DAYS, topics=["orders"])["orders"]
    lag, lag_seconds, tps = drawn(billing.lag), drawn(billing.lag_seconds), drawn(billing.consume_tps)
    assert [lag[at(1, m)] for m in (0, 10, 20, 40)] == [9, 19, 29, 0]  # the peak; no row after minute 30: no lag
    assert lag[at(1, BROKER_DOWN)] is None  # its one row is unknown (as the rollup has it)
    assert lag_seconds[at(1, 20)] == 58.0
    assert tps[at(1, 10)] == 80 / (8 * 60)  # 8 minutes of 10 messages, per second
    cluster = cluster_traffic(CLUSTER, *DAYS)
    assert drawn(cluster.brokers_down)[at(1, 30)] == 0.1  # one broker down one minute of ten
    assert drawn(cluster.put_nums)[at(1, 30)] == sum(1000 + n for n in range(31, 40)) / 9  # complete minutes only


def test_a_bucket_reads_the_same_from_the_rollups_as_from_its_minutes(rolled_up):
    from_rollups = every_chart()
    for model in ROLLUP_MODELS:
        model.objects.all().delete()

    from_minutes = every_chart()

    assert from_rollups == from_minutes
    # and the comparison covers gaps, zeros and figures alike
    orders = drawn(from_rollups["topic put_nums"])
    assert orders[at(0, 0) - TEN] is None and orders[at(2, 50)] == 10.0
    assert drawn(from_rollups["group lag orders"])[at(0, 40)] == 0
    assert {value for value in drawn(from_rollups["group lag idle-subscription"]).values()} == {None, 0}


def test_six_hours_or_less_read_the_minutes_only(rolled_up):
    ClusterMinute.objects.filter(minute__lt=HOURS[1]).delete()

    day = topic_traffic(CLUSTER, "orders", HOURS[0], HOURS[0] + dt.timedelta(hours=6)).put_nums

    assert [value for moment, value in day if moment < HOURS[1]] == [None] * 60
    assert drawn(day)[at(1, 0)] == 10


def test_many_buckets_between_rolled_up_ones_are_read_from_the_minutes_without_counting_a_rolled_one_twice():
    """Every other bucket of a day rolled up (more separate runs than the reader queries one by one): the others
    come from their minutes, and the minutes of the rolled-up buckets (different figures here) are not mixed in."""
    start = HOURS[0]
    buckets = [start + n * TEN for n in range(60)]
    for n, bucket in enumerate(buckets):
        for m in range(10):
            minute = bucket + dt.timedelta(minutes=m)
            ClusterMinute.objects.create(cluster_id=CLUSTER, minute=minute)
            TopicMinute.objects.create(cluster_id=CLUSTER, topic="T", minute=minute, put_nums=7, put_size=1)
        if n % 2 == 0:
            rolled = {"cluster_id": CLUSTER, "resolution": Resolution.TEN_MINUTES, "start": bucket, "minutes": 10}
            ClusterRollup.objects.create(**rolled, put_nums=0, collected_minutes=10, minutes_incomplete=0)
            TopicRollup.objects.create(**rolled, topic="T", put_nums=50, put_size=10)

    points = drawn(topic_traffic(CLUSTER, "T", buckets[-1] - dt.timedelta(days=3), buckets[-1]).put_nums)

    assert [points[bucket] for bucket in buckets] == [5.0 if n % 2 == 0 else 7.0 for n in range(60)]
