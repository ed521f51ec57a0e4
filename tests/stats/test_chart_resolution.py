"""A chart's range decides the resolution it is read at, and every reader keeps to it: six hours or less per minute,
up to about three days per 10 minutes, a week per hour, so no line has more than ``MAX_POINTS`` points whatever the
range; buckets are aggregated in the database, aligned on UTC; a bucket nothing was collected in stays a gap (never a
zero) at every resolution; and the newest hours, which the rollup job has not rolled up yet, are aggregated from
the minutes, so they are never blank. The rollup rows here are written by hand (the real job's rows and their
agreement with the minutes are test_rollup_source.py's)."""

import datetime as dt
import itertools

import pytest
from django.db.models import Sum
from django.utils import timezone

from stats.histogram import Histogram
from stats.models import (
    BrokerProbe,
    ClusterMinute,
    ClusterRollup,
    ProducerLatencyRollup,
    ProducerMinute,
    Resolution,
    ServerSample,
    TopicMinute,
    TopicRollup,
)
from stats.queries.health import broker_health
from stats.queries.producers import group_latency, topic_latency
from stats.queries.servers import server_series
from stats.queries.source import MAX_POINTS, by_bucket, resolution_for
from stats.queries.traffic import broker_traffic, cluster_traffic, group_traffic, topic_traffic
from stats.ranges import RANGES, time_range

pytestmark = pytest.mark.django_db

CLUSTER = 7
UNTIL = dt.datetime(2026, 3, 9, 12, 34, tzinfo=dt.UTC)
WEEK = (UNTIL - dt.timedelta(days=7), UNTIL)
HOUR = dt.timedelta(hours=1)
THIS_HOUR = UNTIL.replace(minute=0)


def every_line(since: dt.datetime, until: dt.datetime) -> dict[str, list]:
    """Every line every reader draws over the range, by name."""
    group = group_traffic(CLUSTER, "GID", since, until, topics=["T"])["T"]
    broker = broker_traffic(CLUSTER, "broker-a", 0, since, until)
    cluster = cluster_traffic(CLUSTER, since, until)
    server = server_series("10.0.0.5", since, until)
    producers = group_latency(CLUSTER, "PID", since, until)
    return {
        "topic": topic_traffic(CLUSTER, "T", since, until).put_nums,
        "group tps": group.consume_tps,
        "group lag": group.lag,
        "broker": broker.put_nums,
        "cluster": cluster.brokers_down,
        "health": broker_health(CLUSTER, "broker-a", 0, since, until).latency_ms,
        "server": server.metrics["cpu_percent"],
        "producer p99": producers.total.p99,
        "topic producer p99": topic_latency(CLUSTER, "T", since, until).total.p99,
    }


@pytest.mark.parametrize(
    "key, resolution",
    [("1h", None), ("6h", None), ("1d", Resolution.TEN_MINUTES), ("7d", Resolution.HOUR)],
)
def test_each_offered_range_is_read_at_the_resolution_that_keeps_it_under_the_point_cap(key, resolution):
    _key, since, until = time_range(key, now=UNTIL)

    assert resolution_for(since, until) == resolution
    assert all(0 < len(points) <= MAX_POINTS for points in every_line(since, until).values())


def test_every_offered_range_is_covered():
    assert set(RANGES) == {"1h", "6h", "1d", "7d"}


def test_a_week_is_one_point_an_hour_in_every_reader():
    for name, points in every_line(*WEEK).items():
        starts = [moment for moment, _value in points]
        assert starts[0] == dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC), name
        assert len(points) == 7 * 24 + 1, name
        assert all(later - earlier == HOUR for earlier, later in itertools.pairwise(starts)), name


def collect(minute: dt.datetime, *, put_nums: int | None = None) -> None:
    ClusterMinute.objects.create(cluster_id=CLUSTER, minute=minute, put_nums=put_nums or 0)
    if put_nums is not None:
        TopicMinute.objects.create(cluster_id=CLUSTER, topic="T", minute=minute, put_nums=put_nums, put_size=1)


def test_a_bucket_nothing_was_collected_in_is_a_gap_an_idle_one_a_zero_at_every_resolution():
    busy, idle = THIS_HOUR - 3 * HOUR, THIS_HOUR - 2 * HOUR  # and nothing collected the hour before busy
    for m in range(60):
        collect(busy + dt.timedelta(minutes=m), put_nums=6)
        collect(idle + dt.timedelta(minutes=m))
    for since in (UNTIL - dt.timedelta(days=1), WEEK[0]):  # per 10 minutes, per hour
        points = dict(topic_traffic(CLUSTER, "T", since, UNTIL).put_nums)

        assert points[busy] == 6.0
        assert points[idle] == 0
        assert points[busy - HOUR] is None


def test_the_newest_hours_not_rolled_up_yet_are_aggregated_from_the_minutes():
    rolled = THIS_HOUR - 2 * HOUR  # the job has run for this hour only
    window = {"cluster_id": CLUSTER, "resolution": Resolution.HOUR, "start": rolled, "minutes": 60}
    ClusterRollup.objects.create(**window, put_nums=0, collected_minutes=60, minutes_incomplete=0)
    TopicRollup.objects.create(**window, topic="T", put_nums=60 * 5, put_size=60)
    for m in range(120):  # the last hour and this one: collected, not rolled up
        collect(THIS_HOUR - HOUR + dt.timedelta(minutes=m), put_nums=8)

    points = dict(topic_traffic(CLUSTER, "T", *WEEK).put_nums)

    assert points[rolled] == 5.0  # from the rollup (there are no minutes behind it)
    assert points[THIS_HOUR - HOUR] == 8.0 and points[THIS_HOUR] == 8.0  # from the minutes


def report(minute: dt.datetime, costs: list[float], client: str = "10.0.0.1@1") -> ProducerMinute:
    histogram = Histogram()
    for cost in costs:
        histogram.record(cost)
    return ProducerMinute(cluster_id=CLUSTER, producer_group="PID", topic="T", client_id=client, client_addr="10.0.0.1",
                          broker_name="broker-a", minute=minute, count=len(costs), exception_count=0,
                          histogram=histogram.to_dict(), max_ms=histogram.max_ms, updated_at=minute)  # fmt: skip


def test_producers_newest_hours_come_from_their_reports_and_older_ones_from_the_latency_rollups():
    rolled = THIS_HOUR - 2 * HOUR
    slow = Histogram()
    for _ in range(100):
        slow.record(500.0)
    ClusterRollup.objects.create(cluster_id=CLUSTER, resolution=Resolution.HOUR, start=rolled, minutes=60,
                                 collected_minutes=60, minutes_incomplete=0)  # fmt: skip
    ProducerLatencyRollup.objects.create(cluster_id=CLUSTER, producer_group="PID", resolution=Resolution.HOUR,
                                         start=rolled, minutes=10, count=100, exception_count=0,
                                         histogram=slow.to_dict(), p99_ms=500.0, max_ms=500.0)  # fmt: skip
    ProducerMinute.objects.bulk_create([report(THIS_HOUR + dt.timedelta(minutes=m), [2.0] * 30) for m in range(5)])

    latency = group_latency(CLUSTER, "PID", *WEEK)

    p99, sends = dict(latency.total.p99), dict(latency.total.sends)
    assert p99[rolled] == pytest.approx(500.0, rel=0.01) and sends[rolled] == 10.0  # 100 sends in 10 minutes
    assert p99[THIS_HOUR] == pytest.approx(2.0, rel=0.01) and sends[THIS_HOUR] == 30.0
    assert p99[THIS_HOUR - HOUR] is None  # nobody reported: a gap
    assert [client.client_id for client in latency.clients] == ["10.0.0.1@1"]


def test_buckets_are_aligned_on_utc_whatever_the_viewers_zone():
    for m in (5, 14, 15):
        collect(THIS_HOUR + dt.timedelta(minutes=m), put_nums=1)

    with timezone.override("Asia/Kolkata"):  # UTC+5:30: its hours start at :30 UTC
        ten = by_bucket(TopicMinute.objects.all(), Resolution.TEN_MINUTES, total=Sum("put_nums"))
        hour = by_bucket(TopicMinute.objects.all(), Resolution.HOUR, total=Sum("put_nums"))

    assert ten == {(THIS_HOUR,): {"total": 1}, (THIS_HOUR + dt.timedelta(minutes=10),): {"total": 2}}
    assert hour == {(THIS_HOUR,): {"total": 3}}


def test_a_flapping_broker_over_a_week_is_at_most_one_shaded_outage_per_hour():
    start = THIS_HOUR - 3 * HOUR
    BrokerProbe.objects.bulk_create(
        BrokerProbe(
            cluster_id=CLUSTER,
            broker_name="broker-a",
            broker_id=0,
            minute=start + dt.timedelta(minutes=m),
            address="10.0.0.5:10911",
            listed=True,
            ok=m % 2 == 0,
            attempts=1,
            latency_ms=3.0,
            error="" if m % 2 == 0 else "refused",
        )
        for m in range(61)  # every odd minute failed, minute 60 answered
    )

    week = broker_health(CLUSTER, "broker-a", 0, *WEEK)
    hour = broker_health(CLUSTER, "broker-a", 0, start, start + HOUR)

    assert len(hour.outages) == 30  # per minute, each is drawn
    assert [(outage.start, outage.end) for outage in week.outages] == [(start + dt.timedelta(minutes=1), start + HOUR)]
    assert dict(week.latency_ms)[start] == 3.0


def test_a_server_slot_that_failed_shades_its_whole_bucket_over_a_week():
    slot = THIS_HOUR - 3 * HOUR
    ServerSample.objects.create(host="10.0.0.5", minute=slot, error="", cpu_percent=30.0)
    ServerSample.objects.create(host="10.0.0.5", minute=slot + dt.timedelta(minutes=5), error="", cpu_percent=50.0)
    ServerSample.objects.create(host="10.0.0.5", minute=slot + dt.timedelta(minutes=10), error="ssh: refused")

    week = server_series("10.0.0.5", *WEEK)

    assert dict(week.metrics["cpu_percent"])[slot] == 40.0  # the hour's average reading
    assert dict(week.metrics["cpu_percent"])[slot - HOUR] is None
    assert week.errors == [(slot, "ssh: refused")] and week.step == HOUR
