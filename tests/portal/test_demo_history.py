"""The demo's generated week of history (portal/services/demo_history.py): real rows of the minute tables, every
minute marked as demo history, never written over or into a measured minute, the same on every start; and how
charts and the rankings API label it."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest
from django.urls import reverse

from monitor.sandbox.traffic.profiles import TrafficOptions, demo
from portal.management.commands.demo import DEMO_TRAFFIC
from portal.models import Broker, Cluster, Team, Topic
from portal.services import demo_history, rankings
from portal.services.demo_history import Behaviour
from portal.web.monitoring import Window, labelled, topic_charts
from stats.charts import Series
from stats.models import BrokerMinute, ClusterMinute, ConsumeMinute, Ranking, RankingKind, TopicMinute
from stats.store.traffic import MinuteSamples, store_minute
from tests.support.factories import make_user

NOW = dt.datetime(2026, 3, 9, 12, 0, 30, tzinfo=dt.UTC)
WEEK = 7 * 24 * 60
LAST = NOW.replace(second=0) - demo_history.MEASURED_MARGIN - dt.timedelta(minutes=1)  # the last generated minute


@pytest.fixture
def demo_cluster(db) -> Cluster:
    """The sandbox demo's shape: two master/slave pairs."""
    cluster = Cluster.objects.create(name="sandbox")
    for name in ("broker-a", "broker-b"):
        for broker_id in (0, 1):
            Broker.objects.create(
                cluster=cluster, cluster_name="DefaultCluster", broker_name=name, broker_id=broker_id,
                address=f"127.0.0.1:{10911 + broker_id}",
            )  # fmt: skip
    return cluster


def rows(model, cluster: Cluster, **filters) -> list[tuple]:
    fields = [field.name for field in model._meta.fields if field.name != "id"]
    return sorted(model.objects.filter(cluster_id=cluster.pk, **filters).values_list(*fields))


def local_hour(minute: dt.datetime) -> int:
    return time.localtime(minute.timestamp()).tm_hour


def test_a_week_of_minutes_is_written_for_every_demo_topic_group_and_broker_marked_as_demo_history(demo_cluster):
    assert demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW) == WEEK

    minutes = ClusterMinute.objects.filter(cluster_id=demo_cluster.pk)
    assert minutes.count() == WEEK and not minutes.filter(demo_history=False).exists()
    assert minutes.latest("minute").minute == LAST
    assert minutes.earliest("minute").minute == LAST - dt.timedelta(minutes=WEEK - 1)
    assert set(TopicMinute.objects.values_list("topic", flat=True).distinct()) == set(DEMO_TRAFFIC.topics)
    assert set(ConsumeMinute.objects.values_list("group", flat=True).distinct()) == set(DEMO_TRAFFIC.groups)
    assert BrokerMinute.objects.count() == 4 * WEEK
    slaves = BrokerMinute.objects.filter(broker_id=1)
    assert not slaves.exclude(put_nums=None).exists(), "a slave stores nothing of its own"
    one = ClusterMinute.objects.get(cluster_id=demo_cluster.pk, minute=LAST)
    assert one.put_nums == sum(TopicMinute.objects.filter(minute=LAST).values_list("put_nums", flat=True))


def test_writing_the_history_again_adds_nothing_and_the_same_minute_always_gets_the_same_figures(demo_cluster):
    demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW)
    before = {model: rows(model, demo_cluster) for model in (ClusterMinute, BrokerMinute, TopicMinute, ConsumeMinute)}

    assert demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW) == 0
    assert {model: rows(model, demo_cluster) for model in before} == before

    other = Cluster.objects.create(name="other")
    demo_history.backfill(other, DEMO_TRAFFIC, NOW)
    values = ["topic", "minute", "put_nums", "put_size"]
    assert list(TopicMinute.objects.filter(cluster_id=other.pk).order_by("topic", "minute").values_list(*values)) == (
        list(TopicMinute.objects.filter(cluster_id=demo_cluster.pk).order_by("topic", "minute").values_list(*values))
    )


def test_a_restart_fills_only_the_minutes_since_and_leaves_the_measured_ones(demo_cluster):
    demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW)
    measured = LAST + dt.timedelta(minutes=3)
    store_minute(MinuteSamples(ClusterMinute(cluster_id=demo_cluster.pk, minute=measured, put_nums=7, brokers=4)))

    later = NOW + dt.timedelta(minutes=10)
    assert demo_history.backfill(demo_cluster, DEMO_TRAFFIC, later) == 10 - 1  # every new minute but the measured one

    assert ClusterMinute.objects.get(cluster_id=demo_cluster.pk, minute=measured).demo_history is False
    assert ClusterMinute.objects.filter(cluster_id=demo_cluster.pk, demo_history=True).count() == WEEK + 9


def test_a_measured_minute_is_never_overwritten_nor_added_to(demo_cluster):
    measured = LAST - dt.timedelta(hours=3)
    store_minute(
        MinuteSamples(
            ClusterMinute(cluster_id=demo_cluster.pk, minute=measured, put_nums=7, get_nums=0, brokers=4),
            brokers=[
                BrokerMinute(cluster_id=demo_cluster.pk, broker_name="broker-a", broker_id=0, minute=measured, up=True)
            ],
            topics=[TopicMinute(cluster_id=demo_cluster.pk, topic="TopicOrders", minute=measured, put_nums=7)],
        )
    )
    before = {
        model: rows(model, demo_cluster, minute=measured)
        for model in (ClusterMinute, BrokerMinute, TopicMinute, ConsumeMinute)
    }

    assert demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW) == WEEK - 1

    assert {model: rows(model, demo_cluster, minute=measured) for model in before} == before
    assert before[ConsumeMinute] == [] and len(before[BrokerMinute]) == 1


def test_a_measured_minute_replaces_a_generated_one_whole(demo_cluster):
    demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW)

    store_minute(
        MinuteSamples(
            ClusterMinute(cluster_id=demo_cluster.pk, minute=LAST, put_nums=7, brokers=1),
            brokers=[
                BrokerMinute(cluster_id=demo_cluster.pk, broker_name="broker-a", broker_id=0, minute=LAST, up=True)
            ],
        )
    )

    minute = ClusterMinute.objects.get(cluster_id=demo_cluster.pk, minute=LAST)
    assert (minute.demo_history, minute.put_nums) == (False, 7)
    assert BrokerMinute.objects.filter(minute=LAST).count() == 1, "no generated broker row left beside it"
    assert not TopicMinute.objects.filter(minute=LAST).exists() and not ConsumeMinute.objects.filter(minute=LAST)


def test_the_history_follows_the_daily_curve_and_each_group_plays_its_part(demo_cluster):
    demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW, days=2)
    by_hour: dict[int, list[int]] = {}
    for minute, put in TopicMinute.objects.filter(topic="TopicOrders").values_list("minute", "put_nums"):
        by_hour.setdefault(local_hour(minute), []).append(put)
    mean = {hour: sum(values) / len(values) for hour, values in by_hour.items()}
    assert mean[15] > 2 * mean[3], "busiest at 15:00, quietest at 03:00, as the live demo traffic"
    assert 0.4 * 600 < mean[3] < 0.6 * 600 * 1.3 and 1.2 * 600 < mean[15] < 1.6 * 600

    def consumed(group: str, hour: int) -> list[ConsumeMinute]:
        return [row for row in ConsumeMinute.objects.filter(group=group) if local_hour(row.minute) == hour]

    roles = {name: group.behaviour for name, group in DEMO_TRAFFIC.groups.items()}
    keeps_up, behind, failing, hanging = (
        next(name for name, role in roles.items() if role is behaviour) for behaviour in Behaviour
    )
    assert max(row.lag for row in consumed(keeps_up, 15)) < max(row.lag for row in consumed(behind, 15)) / 100
    assert all(row.lag_seconds < 5 for row in consumed(behind, 23)), "caught up at night"
    assert all(row.sndbck_nums > 0 for row in consumed(failing, 10))
    stuck = [row for row in consumed(hanging, 11) if row.minute.minute > 0]
    assert stuck and all(row.get_nums == 0 for row in stuck), "stopped from 11:00"
    backlog, before = consumed(hanging, 12), consumed(hanging, 10)
    assert sum(row.get_nums for row in backlog) > 1.5 * sum(row.get_nums for row in before), "then its backlog"
    assert not any(row.sndbck_nums for row in consumed(keeps_up, 10))


def test_the_generated_history_plays_the_demo_traffic_profile():
    plan = demo(TrafficOptions())
    producers = {client["topic"]: client for client in plan.clients if client["role"] == "producer"}
    consumers = {client["group"]: client for client in plan.clients if client["role"] == "consumer"}
    assert set(DEMO_TRAFFIC.topics) == set(plan.topics)
    for name, topic in DEMO_TRAFFIC.topics.items():
        assert (topic.rate, topic.body_bytes) == (producers[name]["rate"], producers[name]["body_bytes"])
    assert {name: group.topic for name, group in DEMO_TRAFFIC.groups.items()} == {
        name: client["topic"] for name, client in consumers.items()
    }
    assert TrafficOptions().amplitude == demo_history.AMPLITUDE


def test_charts_draw_generated_points_as_series_of_their_own(demo_cluster):
    demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW, days=1)
    measured = LAST + dt.timedelta(minutes=2)
    store_minute(
        MinuteSamples(
            ClusterMinute(cluster_id=demo_cluster.pk, minute=measured, put_nums=9),
            topics=[TopicMinute(cluster_id=demo_cluster.pk, topic="TopicOrders", minute=measured, put_nums=9)],
        )
    )
    topic = Topic.objects.create(cluster=demo_cluster, name="TopicOrders", team=Team.objects.create(name="t"))

    chart = topic_charts(topic, Window("1h", measured - dt.timedelta(hours=1), measured))[0]

    traces = {trace["name"]: trace["y"] for trace in json.loads(chart.spec)["data"]}
    assert set(traces) == {"TopicOrders", "TopicOrders (demo history)"}
    assert [y for y in traces["TopicOrders"] if y is not None] == [9]
    assert traces["TopicOrders (demo history)"][-1] is None and None not in traces["TopicOrders (demo history)"][:-3]


def test_a_series_without_generated_points_is_drawn_as_it_is():
    points = [(NOW, 1.0), (NOW + dt.timedelta(minutes=1), 2.0)]
    assert labelled([Series("a", points)], frozenset({NOW - dt.timedelta(minutes=1)})) == [Series("a", points)]
    assert labelled([Series("a", points)], frozenset(point for point, _ in points)) == [
        Series("a (demo history)", points)
    ]


def test_a_ranking_computed_from_demo_history_says_so_on_the_page_and_in_the_api(client, demo_cluster):
    demo_history.backfill(demo_cluster, DEMO_TRAFFIC, NOW)
    day = dt.datetime(2026, 3, 8, tzinfo=dt.UTC)
    for end in (day, day + dt.timedelta(days=1), dt.datetime(2026, 2, 20, tzinfo=dt.UTC)):
        Ranking.objects.create(
            cluster_id=demo_cluster.pk, kind=RankingKind.TOPIC_TRAFFIC_DAY, window_start=end - dt.timedelta(days=1),
            window_end=end, subject="TopicOrders", value=1.0, rank=1,
        )  # fmt: skip
    client.force_login(make_user("viewer"))

    answer = client.get(reverse("api:ranking-list"), {"cluster": demo_cluster.pk, "window": day.isoformat()}).json()
    assert [row["demo_history"] for row in answer["results"]] == [True]
    old = dt.datetime(2026, 2, 20, tzinfo=dt.UTC)
    answer = client.get(reverse("api:ranking-list"), {"cluster": demo_cluster.pk, "window": old.isoformat()}).json()
    assert [row["demo_history"] for row in answer["results"]] == [False], "measured only: before the demo history"
    page = client.get(reverse("rankings"), {"cluster": demo_cluster.pk, "window": day.isoformat()}).text
    assert 'id="ranking-demo-history"' in page
    selection = rankings.select(
        make_user("other"), cluster=demo_cluster, kind=RankingKind.TOPIC_TRAFFIC_DAY, window_end=old
    )
    assert selection.demo_history is False
