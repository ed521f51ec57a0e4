"""The monitoring parts of the pages, as the server renders them: a topic's production charts (signed-in users
only; its configuration stays public) and its consumers' lag, a consumer group's consumption, lag, queues and
clients, the broker, cluster and server pages, the time-range choice, and "who is lagging now" for admins (every
group) and teams (their own). Who may open which page is the authorization matrix's business; the charts as a
browser draws them are test_browser_charts.py's.

Samples are stored as the collector stores them (``stats.store``), at minutes just before the test's "now", so
that they are the clusters' latest collection."""

import datetime as dt
import json
import zoneinfo

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.models import Broker, Cluster, ConsumerGroup, MessageModel, Subscription, Topic, UserProfile
from stats.models import (
    BlockedQueueMinute,
    BrokerMinute,
    BrokerProbe,
    ClientMinute,
    ClusterMinute,
    ConsumeMinute,
    GroupMinute,
    NameServerProbe,
    OffsetMovedEvent,
    QueueLagMinute,
    TopicMinute,
    slot_start,
)
from stats.store.servers import DiskUse, ServerStats, store_server_samples
from stats.store.traffic import MinuteSamples, store_minute

NOW = timezone.now().replace(second=0, microsecond=0)


@pytest.fixture(autouse=True)
def now():
    """Each test's "now" (the minute it starts in): samples stored minutes before it are its clusters' latest
    collection, recent enough to be current however long the suite has been running."""
    global NOW
    NOW = timezone.now().replace(second=0, microsecond=0)
    return NOW


def ago(minutes: int) -> dt.datetime:
    return NOW - dt.timedelta(minutes=minutes)


@pytest.fixture
def prod(db):
    """A registered cluster with one master and one slave on 10.0.0.5 (no live cluster behind it: these pages read
    stored samples only)."""
    cluster = Cluster.objects.create(name="prod")
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
                          address="10.0.0.5:10911", role="ASYNC_MASTER", version="V4_9_4")  # fmt: skip
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=1,
                          address="10.0.0.5:10921", role="SLAVE", version="V4_9_4")  # fmt: skip
    return cluster


@pytest.fixture
def orders(prod, team):
    return Topic.objects.create(cluster=prod, team=team, name="ORDERS", queue_nums=4)


@pytest.fixture
def billing(prod, team, orders):
    group = ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=orders, tag_expression="paid")
    return group


@pytest.fixture
def signed_in(client, member):
    client.force_login(member)
    return client


def collected(minutes_ago: int, cluster: Cluster, **rows) -> None:
    store_minute(MinuteSamples(cluster=ClusterMinute(cluster_id=cluster.pk, minute=ago(minutes_ago)), **rows))


def consume(minutes_ago: int, cluster: Cluster, group: str, topic: str, **figures) -> ConsumeMinute:
    return ConsumeMinute(cluster_id=cluster.pk, group=group, topic=topic, minute=ago(minutes_ago), **figures)


def chart(response, index: int) -> dict:
    return json.loads(response.context["charts"][index].spec)


def plotted(spec: dict, trace: int = 0) -> dict[str, object]:
    """A drawn line as {local time (ISO, minutes): value}."""
    data = spec["data"][trace]
    return {x[:16]: y for x, y in zip(data["x"], data["y"], strict=True)}


def local(moment: dt.datetime, zone: str = "UTC") -> str:
    """How the charts of a viewer in ``zone`` show ``moment`` (to the minute)."""
    return moment.astimezone(zoneinfo.ZoneInfo(zone)).strftime("%Y-%m-%dT%H:%M")


# --- topic page -----------------------------------------------------------------------------------------------------


def test_anonymous_visitors_see_a_topics_configuration_but_not_its_traffic(client, orders):
    collected(1, orders.cluster, topics=[TopicMinute(cluster_id=orders.cluster_id, topic="ORDERS", minute=ago(1),
                                                     put_nums=120, put_size=4096)])  # fmt: skip

    response = client.get(reverse("topic-detail", args=[orders.pk]))

    assert response.status_code == 200 and "ORDERS" in response.text
    assert "charts" not in response.context
    assert "data-chart" not in response.text and "plotly.min.js" not in response.text


def test_a_topics_production_per_minute_is_charted_in_the_viewers_zone_with_gaps_as_gaps(signed_in, member, orders):
    UserProfile.objects.update_or_create(user=member, defaults={"time_zone": "Asia/Shanghai"})
    cluster = orders.cluster
    collected(4, cluster, topics=[TopicMinute(cluster_id=cluster.pk, topic="ORDERS", minute=ago(4), put_nums=120,
                                              put_size=4096)])  # fmt: skip
    # three minutes ago nothing was collected
    collected(2, cluster)  # collected; ORDERS had no traffic
    collected(1, cluster, topics=[TopicMinute(cluster_id=cluster.pk, topic="ORDERS", minute=ago(1), put_nums=None,
                                              put_size=None)])  # fmt: skip

    response = signed_in.get(reverse("topic-detail", args=[orders.pk]))

    counts, sizes = plotted(chart(response, 0)), plotted(chart(response, 1))
    at = [local(ago(n), "Asia/Shanghai") for n in (4, 3, 2, 1)]
    assert [counts[moment] for moment in at] == [120, None, 0, None]
    assert [sizes[moment] for moment in at] == [4.0, None, 0, None]  # KiB
    assert chart(response, 0)["data"][0]["connectgaps"] is False
    assert "plotly/plotly.min.js" in response.text and "js/charts.js" in response.text


def test_the_time_range_choice_sets_the_span_of_every_chart(signed_in, orders):
    url = reverse("topic-detail", args=[orders.pk])

    def span(response) -> dt.timedelta:
        start, end = (dt.datetime.fromisoformat(x) for x in chart(response, 0)["layout"]["xaxis"]["range"])
        return end - start

    six_hours = signed_in.get(url, {"range": "6h"})
    assert span(six_hours) == dt.timedelta(hours=6)
    assert span(signed_in.get(url, {"range": "7d"})) == dt.timedelta(days=7)
    assert span(signed_in.get(url, {"range": "nonsense"})) == dt.timedelta(hours=1)
    for key in ("1h", "6h", "1d", "7d"):
        assert f'href="?range={key}#monitoring"' in six_hours.text
    assert 'href="?range=6h#monitoring" class="active"' in six_hours.text


def test_the_topic_page_lists_every_consumer_with_its_lag_registered_or_not(signed_in, orders, billing, team):
    idle = ConsumerGroup.objects.create(cluster=orders.cluster, team=team, name="GID_IDLE")
    Subscription.objects.create(consumer_group=idle, topic=orders)
    collected(1, orders.cluster, consumes=[
        consume(1, orders.cluster, "GID_BILLING", "ORDERS", consume_tps=2.5, lag=42, lag_seconds=90.0),
        consume(1, orders.cluster, "GID_GHOST", "ORDERS", consume_tps=0.0, lag=5, lag_seconds=None),
    ])  # fmt: skip

    response = signed_in.get(reverse("topic-detail", args=[orders.pk]))

    consumers = {consumer.name: consumer for consumer in response.context["consumers"]}
    assert list(consumers) == ["GID_BILLING", "GID_GHOST", "GID_IDLE"]
    assert (consumers["GID_BILLING"].now.lag, consumers["GID_BILLING"].tag_expression) == (42, "paid")
    assert consumers["GID_GHOST"].group is None and consumers["GID_GHOST"].now.lag == 5
    assert consumers["GID_IDLE"].now is None  # collected, nothing to consume: shown as 0
    assert response.context["minute"] == ago(1)
    assert reverse("consumer-group-detail", args=[billing.pk]) in response.text
    assert "not registered" in response.text


def test_without_a_recent_collection_the_topics_consumers_lag_is_unknown(signed_in, orders, billing):
    collected(30, orders.cluster, consumes=[consume(30, orders.cluster, "GID_BILLING", "ORDERS", lag=42)])

    response = signed_in.get(reverse("topic-detail", args=[orders.pk]))

    assert response.context["minute"] is None
    assert "No recent collection" in response.text


# --- consumer group page --------------------------------------------------------------------------------------------


def test_the_group_page_charts_consumption_lag_and_lag_time_per_topic(signed_in, billing):
    cluster = billing.cluster
    collected(2, cluster, consumes=[consume(2, cluster, "GID_BILLING", "ORDERS", consume_tps=3.0, lag=100,
                                            lag_seconds=240.0)])  # fmt: skip
    collected(1, cluster, consumes=[consume(1, cluster, "GID_BILLING", "ORDERS", consume_tps=5.0, lag=20,
                                            lag_seconds=15.0)])  # fmt: skip

    response = signed_in.get(reverse("consumer-group-detail", args=[billing.pk]))

    tps, lag, lag_time = (chart(response, i) for i in range(3))
    assert [trace["name"] for trace in tps["data"]] == ["ORDERS"]
    assert [plotted(tps)[local(ago(n))] for n in (2, 1)] == [3.0, 5.0]
    assert [plotted(lag)[local(ago(n))] for n in (2, 1)] == [100, 20]
    assert [plotted(lag_time)[local(ago(n))] for n in (2, 1)] == [240.0, 15.0]


def test_the_group_page_shows_queue_lag_clients_and_blocked_queues_of_the_latest_minute(signed_in, billing):
    cluster, key = billing.cluster, {"cluster_id": billing.cluster_id, "group": "GID_BILLING", "minute": ago(1)}
    collected(
        1,
        cluster,
        consumes=[consume(1, cluster, "GID_BILLING", "ORDERS", consume_tps=1.0, lag=30, lag_seconds=75.0)],
        queue_lags=[
            QueueLagMinute(**key, topic="ORDERS", broker_name="broker-a", queue_id=q, broker_offset=100 + q,
                           consumer_offset=100 + q - lag, lag=lag, last_consumed_stored_at=ago(3))
            for q, lag in ((0, 10), (3, 20))
        ],
        groups=[GroupMinute(**key, clients=2, message_model="CLUSTERING", consume_type="CONSUME_PASSIVELY",
                            subscription_consistent=False, blocked_queues=1, dlq_nums=0, dlq_total=4)],
        clients=[
            ClientMinute(**key, client_id="10.1.1.1@billing-1", address="10.1.1.1:50000", language="CPP",
                         version=395, subscription={"ORDERS": "paid"}),
            ClientMinute(**key, client_id="10.1.1.2@billing-2", address="10.1.1.2:50000", language="JAVA",
                         version=395, subscription={}, error="running info timed out"),
        ],
        blocked=[BlockedQueueMinute(**key, topic="ORDERS", broker_name="broker-a", queue_id=3,
                                    client_id="10.1.1.1@billing-1", last_consumed_at=ago(20), cached_messages=64,
                                    lag=20)],
    )  # fmt: skip

    response = signed_in.get(reverse("consumer-group-detail", args=[billing.pk]))

    now = response.context["now"]
    assert [(q.queue_id, q.lag) for q in now.queue_lags] == [(3, 20), (0, 10)]
    assert [c.client_id for c in now.clients] == ["10.1.1.1@billing-1", "10.1.1.2@billing-2"]
    text = response.text
    assert "10.1.1.1@billing-1" in text and "ORDERS: paid" in text and "not answering" in text
    assert "no: the clients subscribe differently" in text
    assert "Blocked queues" in text and ">64<" in text


def test_a_broadcasting_groups_queue_lag_names_the_client_behind(signed_in, team, orders):
    group = ConsumerGroup.objects.create(cluster=orders.cluster, team=team, name="GID_CACHE",
                                         message_model=MessageModel.BROADCASTING)  # fmt: skip
    collected(1, orders.cluster, queue_lags=[
        QueueLagMinute(cluster_id=orders.cluster_id, group="GID_CACHE", topic="ORDERS", broker_name="broker-a",
                       queue_id=0, minute=ago(1), broker_offset=10, consumer_offset=4, lag=6, client_id="c@slow"),
    ])  # fmt: skip

    text = signed_in.get(reverse("consumer-group-detail", args=[group.pk])).text

    assert "c@slow" in text


def offset_move(billing, minutes_ago: int, queue_offset: int, **fields) -> OffsetMovedEvent:
    return OffsetMovedEvent.objects.create(
        cluster_id=billing.cluster_id, broker_name="broker-a", queue_id=0, queue_offset=queue_offset,
        stored_at=ago(minutes_ago), topic="ORDERS", event_broker_name="broker-a", event_queue_id=2,
        **{"group": "GID_BILLING", "offset_request": 900, "offset_new": 120, **fields},
    )  # fmt: skip


def test_the_group_page_lists_its_offset_moves_in_the_chosen_range_newest_first(signed_in, billing):
    offset_move(billing, 30, queue_offset=1, offset_request=500, offset_new=40)
    offset_move(billing, 5, queue_offset=2, offset_request=900, offset_new=120)
    offset_move(billing, 2 * 60, queue_offset=3)  # before the last hour
    offset_move(billing, 3, queue_offset=4, group="GID_OTHER")

    response = signed_in.get(reverse("consumer-group-detail", args=[billing.pk]), {"range": "1h"})

    moves = response.context["offset_moves"]
    assert [(m.offset_request, m.offset_new) for m in moves] == [(900, 120), (500, 40)]
    assert "Offset moves" in response.text and ">120<" in response.text


def test_a_group_without_offset_moves_shows_no_offset_move_table(signed_in, billing):
    assert 'id="offset-moves"' not in signed_in.get(reverse("consumer-group-detail", args=[billing.pk])).text


# --- broker, cluster and server pages -------------------------------------------------------------------------------


def broker_probe(minutes_ago: int, cluster: Cluster, ok: bool, **fields) -> BrokerProbe:
    return BrokerProbe(cluster_id=cluster.pk, broker_name="broker-a", broker_id=0, minute=ago(minutes_ago),
                       address="10.0.0.5:10911", listed=ok, ok=ok, attempts=1 if ok else 3, **fields)  # fmt: skip


def test_a_stopped_broker_shows_as_down_and_as_a_gap_in_its_charts(signed_in, prod):
    master = prod.brokers.get(broker_id=0)
    minute_row = {"cluster_id": prod.pk, "broker_name": "broker-a", "broker_id": 0}
    collected(2, prod, brokers=[BrokerMinute(**minute_row, minute=ago(2), up=True, put_nums=600, get_nums=300)])
    collected(1, prod, brokers=[BrokerMinute(**minute_row, minute=ago(1), up=False)])
    BrokerProbe.objects.bulk_create([
        broker_probe(2, prod, True, latency_ms=2.0, put_tps=10.0, get_tps=5.0, role="ASYNC_MASTER"),
        broker_probe(1, prod, False, error="connect to 10.0.0.5:10911 refused"),
    ])  # fmt: skip

    response = signed_in.get(reverse("broker-detail", args=[master.pk]))

    tps, health = chart(response, 0), chart(response, 1)
    assert [trace["name"] for trace in tps["data"]] == ["put", "get"]
    assert [plotted(tps, 0)[local(ago(n))] for n in (2, 1)] == [10.0, None]  # 600 a minute = 10 a second
    assert [plotted(tps, 1)[local(ago(n))] for n in (2, 1)] == [5.0, None]
    assert [plotted(health)[local(ago(n))] for n in (2, 1)] == [2.0, None]
    [outage] = health["layout"]["shapes"]
    assert outage["x0"].startswith(local(ago(1)))
    assert any("refused" in (trace.get("hovertext") or [""])[0] for trace in health["data"])
    assert response.context["probe"].ok is False
    assert "connect to 10.0.0.5:10911 refused" in response.text
    assert reverse("server-detail", args=["10.0.0.5"]) in response.text


def test_a_slaves_page_charts_only_what_it_serves(signed_in, prod):
    slave = prod.brokers.get(broker_id=1)

    response = signed_in.get(reverse("broker-detail", args=[slave.pk]))

    assert [trace["name"] for trace in chart(response, 0)["data"]] == ["get"]


def test_the_cluster_page_charts_totals_brokers_down_and_probe_latency_and_links_brokers(signed_in, prod):
    store_minute(MinuteSamples(ClusterMinute(cluster_id=prod.pk, minute=ago(2), put_nums=1200, get_nums=600,
                                             brokers=2)))  # fmt: skip
    store_minute(MinuteSamples(ClusterMinute(cluster_id=prod.pk, minute=ago(1), brokers=2, brokers_down=1)))
    NameServerProbe.objects.create(cluster_id=prod.pk, address="10.0.0.9:9876", minute=ago(1), ok=True,
                                   latency_ms=1.5, attempts=1)  # fmt: skip
    BrokerProbe.objects.bulk_create([broker_probe(1, prod, False, error="refused")])

    response = signed_in.get(reverse("cluster-detail", args=[prod.pk]))

    tps, down, health = (chart(response, i) for i in range(3))
    assert [plotted(tps, 0)[local(ago(n))] for n in (2, 1)] == [20.0, None]
    assert [plotted(down)[local(ago(n))] for n in (2, 1)] == [0, 1]
    assert [trace["name"] for trace in health["data"] if trace.get("showlegend") is not False] == [
        "10.0.0.9:9876",
        "broker-a[0]",
    ]
    for broker in prod.brokers.all():
        assert reverse("broker-detail", args=[broker.pk]) in response.text
    assert reverse("server-detail", args=["10.0.0.5"]) in response.text


def test_the_server_page_charts_cpu_memory_disks_and_network_of_a_broker_host(signed_in, prod):
    slot = slot_start(ago(10))
    store_server_samples(
        slot,
        stats={"10.0.0.5": ServerStats(cpu_percent=37.5, mem_total=8 * 1024**3, mem_used=2 * 1024**3,
                                       net_in_bytes_per_s=2048.0, net_out_bytes_per_s=1024.0,
                                       disks=(DiskUse("/", size=100, used=40, available=60),))},
        errors={},
    )  # fmt: skip

    response = signed_in.get(reverse("server-detail", args=["10.0.0.5"]))

    titles = [drawn.title for drawn in response.context["charts"]]
    assert titles == ["CPU", "Load", "Memory", "Disk use", "Disk I/O", "Network", "TCP connections"]
    by_title = {drawn.title: json.loads(drawn.spec) for drawn in response.context["charts"]}
    assert plotted(by_title["CPU"])[local(slot)] == 37.5
    assert plotted(by_title["Memory"])[local(slot)] == 2048.0  # MiB
    assert plotted(by_title["Disk use"])[local(slot)] == 40.0
    assert [plotted(by_title["Network"], i)[local(slot)] for i in (0, 1)] == [2.0, 1.0]  # KiB/s
    assert [broker.broker_id for broker in response.context["brokers"]] == [0, 1]


def test_a_host_no_broker_runs_on_has_no_server_page(signed_in, prod):
    assert signed_in.get(reverse("server-detail", args=["10.9.9.9"])).status_code == 404


def test_a_server_slot_that_could_not_be_read_is_a_gap_shaded_with_its_error(signed_in, prod):
    slot = slot_start(ago(10))
    store_server_samples(slot, stats={}, errors={"10.0.0.5": "ssh: connection refused"})

    cpu = json.loads(signed_in.get(reverse("server-detail", args=["10.0.0.5"])).context["charts"][0].spec)

    assert plotted(cpu)[local(slot)] is None
    assert any(trace.get("hovertext") == ["ssh: connection refused"] for trace in cpu["data"])


# --- who is lagging now ---------------------------------------------------------------------------------------------


@pytest.fixture
def fleet(prod, team, other_team, billing):
    """Lag in the latest minute of two clusters: the member's team's group, another team's, and a group the
    registry does not know; and an older minute that is no longer "now"."""
    trucks = ConsumerGroup.objects.create(cluster=prod, team=other_team, name="GID_TRUCKS")
    second = Cluster.objects.create(name="second")
    collected(3, prod, consumes=[consume(3, prod, "GID_BILLING", "ORDERS", lag=9999, lag_seconds=9999.0)])
    collected(1, prod, consumes=[
        consume(1, prod, "GID_BILLING", "ORDERS", lag=40, lag_seconds=120.0, consume_tps=1.0),
        consume(1, prod, "GID_TRUCKS", "ROUTES", lag=7, lag_seconds=600.0),
        consume(1, prod, "GID_BILLING", "%RETRY%GID_BILLING", lag=0, lag_seconds=0.0),
    ])  # fmt: skip
    collected(2, second, consumes=[consume(2, second, "GID_LEGACY", "OLD", lag=1000, lag_seconds=None)])
    return {"billing": billing, "trucks": trucks, "second": second}


def lagging_rows(response) -> list[tuple[str, str]]:
    return [(row["lag"].group, row["lag"].topic) for row in response.context["rows"]]


def test_portal_admins_see_every_lagging_group_longest_wait_first(client, portal_admin, fleet):
    client.force_login(portal_admin)

    response = client.get(reverse("lagging"))

    assert lagging_rows(response) == [("GID_TRUCKS", "ROUTES"), ("GID_BILLING", "ORDERS"), ("GID_LEGACY", "OLD")]
    assert reverse("consumer-group-detail", args=[fleet["trucks"].pk]) in response.text
    assert reverse("cluster-detail", args=[fleet["second"].pk]) in response.text  # the unregistered group's cluster
    assert "not registered" in response.text


def test_a_team_member_sees_their_teams_lagging_groups_only(signed_in, fleet):
    response = signed_in.get(reverse("lagging"))

    assert lagging_rows(response) == [("GID_BILLING", "ORDERS")]
    assert reverse("consumer-group-detail", args=[fleet["billing"].pk]) in response.text


def test_the_other_team_sees_its_own_and_cannot_look_into_another_team(client, outsider, team, fleet):
    client.force_login(outsider)

    assert lagging_rows(client.get(reverse("lagging"))) == [("GID_TRUCKS", "ROUTES")]
    assert lagging_rows(client.get(reverse("lagging"), {"team": team.pk})) == [("GID_TRUCKS", "ROUTES")]


def test_a_portal_admin_narrows_the_list_to_one_team(client, portal_admin, other_team, fleet):
    client.force_login(portal_admin)

    assert lagging_rows(client.get(reverse("lagging"), {"team": other_team.pk})) == [("GID_TRUCKS", "ROUTES")]


def test_a_user_without_a_team_sees_nobody_lagging(client, db, fleet):
    from tests.support.factories import make_user

    client.force_login(make_user("nobody"))

    response = client.get(reverse("lagging"))

    assert lagging_rows(response) == [] and "Nobody is lagging." in response.text


def test_charts_and_range_choices_speak_the_viewers_language(signed_in, member, orders):
    UserProfile.objects.update_or_create(user=member, defaults={"language": "zh-hans"})

    response = signed_in.get(reverse("topic-detail", args=[orders.pk]))

    assert "最近 1 小时" in response.text and "7 天" in response.text
    assert response.context["charts"][0].title == "每分钟生产消息数"
