"""Reading stored minutes back for charts and tables: one point per minute of the range; a minute the cluster was
not collected in is a gap, a collected minute without a row is zero, a value that could not be read stays a gap;
"now" is each cluster's latest collection while it is recent; probe failures become shaded outages."""

import datetime as dt

import pytest

from stats.models import BrokerMinute, BrokerProbe, ClusterMinute, ConsumeMinute, NameServerProbe, TopicMinute
from stats.queries.health import broker_health, cluster_health, latest_broker_probes
from stats.queries.traffic import (
    FRESH_FOR,
    broker_traffic,
    cluster_traffic,
    group_now,
    group_traffic,
    lagging_now,
    minutes,
    per_second,
    topic_consumers,
    topic_traffic,
)
from stats.store.traffic import MinuteSamples, store_minute

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.UTC)
CLUSTER = 7


def minute(n: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


def collected(n: int, cluster_id: int = CLUSTER, **rows) -> None:
    """Store minute ``n`` of a cluster as the collector does, with the given rows (lists of unsaved models)."""
    store_minute(MinuteSamples(cluster=ClusterMinute(cluster_id=cluster_id, minute=minute(n)), **rows))


def consume(n: int, group: str, topic: str, cluster_id: int = CLUSTER, **figures) -> ConsumeMinute:
    return ConsumeMinute(cluster_id=cluster_id, group=group, topic=topic, minute=minute(n), **figures)


def values(points) -> list:
    return [value for _, value in points]


def test_a_range_has_one_point_per_minute_both_ends_included():
    assert minutes(minute(0), minute(60)) == [minute(n) for n in range(61)]
    assert minutes(minute(0) + dt.timedelta(seconds=20), minute(2)) == [minute(1), minute(2)]


def test_uncollected_minutes_are_gaps_idle_minutes_are_zero_and_unreadable_values_stay_gaps():
    collected(0, topics=[TopicMinute(cluster_id=CLUSTER, topic="T", minute=minute(0), put_nums=120, put_size=4096)])
    collected(1)  # collected: the topic had no traffic
    # minute 2 was not collected at all
    collected(3, topics=[TopicMinute(cluster_id=CLUSTER, topic="T", minute=minute(3), put_nums=None, put_size=None)])
    collected(4, topics=[TopicMinute(cluster_id=CLUSTER, topic="T", minute=minute(4), put_nums=60, put_size=2048)])

    traffic = topic_traffic(CLUSTER, "T", minute(0), minute(4))

    assert values(traffic.put_nums) == [120, 0, None, None, 60]
    assert values(traffic.put_size) == [4096, 0, None, None, 2048]
    assert [moment for moment, _ in traffic.put_nums] == [minute(n) for n in range(5)]


def test_another_clusters_collection_does_not_fill_this_clusters_gaps():
    collected(0, cluster_id=CLUSTER + 1)

    assert values(topic_traffic(CLUSTER, "T", minute(0), minute(0)).put_nums) == [None]


def test_per_second_divides_a_minutes_count_and_keeps_gaps():
    assert values(per_second([(minute(0), 120), (minute(1), None)])) == [2.0, None]


def test_a_groups_series_cover_the_topics_it_consumed_and_its_idle_subscriptions():
    collected(0, consumes=[consume(0, "G", "T", consume_tps=2.0, lag=10, lag_seconds=30.0)])
    collected(1, consumes=[consume(1, "G", "%RETRY%G", consume_tps=0.5, lag=0, lag_seconds=0.0)])

    series = group_traffic(CLUSTER, "G", minute(0), minute(2), topics=["IDLE"])

    assert list(series) == ["%RETRY%G", "IDLE", "T"]
    assert values(series["T"].consume_tps) == [2.0, 0, None]
    assert values(series["T"].lag) == [10, 0, None]
    assert values(series["T"].lag_seconds) == [30.0, 0, None]
    assert values(series["IDLE"].lag) == [0, 0, None]


def test_a_broker_without_a_row_in_a_collected_minute_was_not_read():
    collected(
        0,
        brokers=[
            BrokerMinute(cluster_id=CLUSTER, broker_name="b", broker_id=0, minute=minute(0), up=True, put_nums=600,
                         get_nums=300),
        ],
    )  # fmt: skip
    collected(1, brokers=[BrokerMinute(cluster_id=CLUSTER, broker_name="b", broker_id=0, minute=minute(1), up=False)])
    collected(2)

    traffic = broker_traffic(CLUSTER, "b", 0, minute(0), minute(2))

    assert values(traffic.put_nums) == [600, None, None]
    assert values(traffic.get_nums) == [300, None, None]


def test_cluster_totals_and_brokers_down_per_minute():
    store_minute(MinuteSamples(ClusterMinute(cluster_id=CLUSTER, minute=minute(0), put_nums=60, get_nums=30)))
    store_minute(MinuteSamples(ClusterMinute(cluster_id=CLUSTER, minute=minute(1), brokers=2, brokers_down=1)))

    traffic = cluster_traffic(CLUSTER, minute(0), minute(2))

    assert values(traffic.put_nums) == [60, None, None]
    assert values(traffic.brokers_down) == [0, 1, None]


def test_now_is_the_latest_collection_while_it_is_recent():
    collected(0, consumes=[consume(0, "G", "T", lag=5)])
    collected(1, consumes=[consume(1, "G", "T", lag=7)])

    latest, by_group = topic_consumers(CLUSTER, "T", now=minute(1) + FRESH_FOR)
    assert latest == minute(1) and by_group["G"].lag == 7
    assert group_now(CLUSTER, "G", now=minute(1) + FRESH_FOR).consumes[0].lag == 7
    stale = minute(1) + FRESH_FOR + dt.timedelta(minutes=1)
    assert topic_consumers(CLUSTER, "T", now=stale) == (None, {})
    assert group_now(CLUSTER, "G", now=stale).minute is None


def test_who_is_lagging_now_longest_wait_first_unknown_waits_last_and_only_the_latest_minute():
    collected(0, consumes=[consume(0, "OLD", "T", lag=999, lag_seconds=9999.0)])
    collected(
        1,
        consumes=[
            consume(1, "SHORT", "T", lag=500, lag_seconds=20.0),
            consume(1, "LONG", "T", lag=10, lag_seconds=600.0),
            consume(1, "BROADCAST", "T", lag=50, lag_seconds=None),
            consume(1, "CAUGHT_UP", "T", lag=0, lag_seconds=0.0),
        ],
    )
    collected(1, cluster_id=CLUSTER + 1, consumes=[consume(1, "ELSEWHERE", "T", cluster_id=CLUSTER + 1, lag=1,
                                                           lag_seconds=60.0)])  # fmt: skip

    everyone = lagging_now(minute(2))
    mine = lagging_now(minute(2), groups={CLUSTER: ["SHORT", "BROADCAST"], CLUSTER + 1: []})

    assert [row.group for row in everyone] == ["LONG", "ELSEWHERE", "SHORT", "BROADCAST"]
    assert [row.group for row in mine] == ["SHORT", "BROADCAST"]
    assert list(lagging_now(minute(1) + FRESH_FOR + dt.timedelta(minutes=1))) == []


def probe(n: int, ok: bool, latency: float | None = None, error: str = "", **key) -> BrokerProbe:
    key = {"broker_name": "b", "broker_id": 0, **key}
    return BrokerProbe.objects.create(
        cluster_id=CLUSTER, minute=minute(n), address="127.0.0.1:10911", listed=ok, ok=ok, latency_ms=latency,
        attempts=1 if ok else 3, error=error, **key,
    )  # fmt: skip


def test_failed_probes_are_gaps_in_latency_and_one_outage_until_the_broker_answers_again():
    probe(0, True, 3.0)
    probe(1, False, error="connection refused")
    # minute 2: no probe (the beat skipped it); it does not end the outage
    probe(3, False, error="timed out")
    probe(4, True, 4.0)
    probe(6, False, error="connection refused")

    health = broker_health(CLUSTER, "b", 0, minute(0), minute(6))

    assert values(health.latency_ms) == [3.0, None, None, None, 4.0, None, None]
    assert [(o.start, o.end, o.error) for o in health.outages] == [
        (minute(1), minute(4), "connection refused"),
        (minute(6), None, "connection refused"),
    ]


def test_a_clusters_health_lists_name_servers_and_brokers_and_the_latest_probe_of_each_broker():
    NameServerProbe.objects.create(cluster_id=CLUSTER, address="127.0.0.1:9876", minute=minute(0), ok=True,
                                   latency_ms=1.5, attempts=1)  # fmt: skip
    probe(0, True, 2.0)
    probe(1, False, error="down")
    probe(0, True, 2.5, broker_id=1)

    health = cluster_health(CLUSTER, minute(0), minute(1))
    latest = latest_broker_probes(CLUSTER)

    assert list(health) == ["127.0.0.1:9876", "b[0]", "b[1]"]
    assert values(health["127.0.0.1:9876"].latency_ms) == [1.5, None]
    assert (latest[("b", 0)].minute, latest[("b", 0)].ok) == (minute(1), False)
    assert latest[("b", 1)].latency_ms == 2.5
