"""Producers' reported sends on the pages: the producer-group page charts send latency (p50/p90/p99/max of the
group, or of one client or broker), p99 per broker and per client, sends and failed sends per broker, and lists the
clients with their last report and the failed sends by broker and exception class; the topic page shows its
producers' send latency beside its traffic. Reports are stored as the ingestion stores them, minutes before now."""

import datetime as dt
import json
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.models import Cluster, ProducerGroup, Topic
from stats.histogram import Histogram
from stats.models import ProducerMinute
from stats.store.producers import store_producer_minutes


def ago(minutes: int) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=minutes)


def stored(minute, client, broker, costs, exceptions=None, group="PID_ORDERS"):
    histogram = Histogram()
    for cost in costs:
        histogram.record(cost)
    return ProducerMinute(
        cluster_id=Cluster.objects.get(name="prod").pk,
        producer_group=group,
        topic="ORDERS",
        client_id=client,
        client_addr=client.partition("@")[0],
        broker_name=broker,
        minute=minute,
        count=len(costs),
        exception_count=sum((exceptions or {}).values()),
        exceptions=exceptions or {},
        histogram=histogram.to_dict(),
        max_ms=histogram.max_ms,
        updated_at=timezone.now(),
    )


@pytest.fixture
def group(db, team):
    cluster = Cluster.objects.create(name="prod")
    topic = Topic.objects.create(cluster=cluster, team=team, name="ORDERS")
    group = ProducerGroup.objects.create(cluster=cluster, team=team, name="PID_ORDERS")
    group.topics.add(topic)
    group.reported = {n: ago(n) for n in (2, 3, 5)}  # the minutes reported, n minutes before the test
    store_producer_minutes(
        [
            stored(group.reported[3], "10.0.0.1@100", "broker-a", [2.0] * 99 + [30.0]),
            stored(group.reported[3], "10.0.0.1@100", "broker-b", [400.0] * 10, {"RemotingTimeoutException": 3}),
            stored(group.reported[2], "10.0.0.1@100", "broker-a", [4.0] * 50),
            stored(group.reported[5], "10.0.0.2@200", "broker-a", [8.0] * 20, {"MQBrokerException": 1}),
        ]
    )
    return group


def charts(page: str) -> dict[str, dict]:
    """The page's plotly specs by title."""
    specs = [
        json.loads(spec.replace("<\\/", "</"))
        for spec in re.findall(r'<script type="application/json">(.*?)</script>', page, re.S)
    ]
    return {spec["layout"]["title"]["text"]: spec for spec in specs}


def last(trace: dict):
    values = [value for value in trace["y"] if value is not None]
    return values[-1] if values else None


def test_the_group_page_charts_latency_per_group_broker_and_client(client, member, group):
    client.force_login(member)

    response = client.get(reverse("producer-group-detail", args=[group.pk]))
    drawn = charts(response.content.decode())

    latency = {trace["name"]: trace for trace in drawn["Send latency"]["data"]}
    assert set(latency) == {"p50", "p90", "p99", "max"}
    assert last(latency["max"]) == 4.0  # the latest minute: client 1 on broker-a only
    total = response.context["producers"].latency.total
    assert dict(total.max)[group.reported[3]] == 400.0  # over both brokers
    assert abs(dict(total.p99)[group.reported[3]] - 400.0) <= 4.0  # rank 109 of 110 sends: one of broker-b's
    assert abs(dict(total.p50)[group.reported[3]] - 2.0) <= 0.02
    by_broker = {trace["name"] for trace in drawn["Send latency p99 by broker"]["data"]}
    assert by_broker == {"broker-a", "broker-b"}
    assert {trace["name"] for trace in drawn["Send latency p99 by client"]["data"]} == {"10.0.0.1@100", "10.0.0.2@200"}
    failed = {
        trace["name"]: [y for y in trace["y"] if y] for trace in drawn["Failed sends per minute by broker"]["data"]
    }
    assert failed == {"broker-a": [1], "broker-b": [3]}


def test_the_group_page_lists_clients_with_their_last_report_and_failures_by_broker(client, member, group):
    client.force_login(member)

    response = client.get(reverse("producer-group-detail", args=[group.pk]))

    clients = {c.client_id: c for c in response.context["producers"].latency.clients}
    assert clients["10.0.0.1@100"].minute == group.reported[2] and clients["10.0.0.1@100"].sends == 50
    assert clients["10.0.0.2@200"].minute == group.reported[5] and clients["10.0.0.2@200"].exceptions == 1
    page = response.content.decode()
    assert "10.0.0.2@200" in page and "RemotingTimeoutException" in page and "MQBrokerException" in page


def test_a_client_or_broker_can_be_charted_alone(client, member, group):
    client.force_login(member)
    url = reverse("producer-group-detail", args=[group.pk])

    one_client = charts(client.get(url, {"client": "10.0.0.2@200"}).content.decode())
    one_broker = charts(client.get(url, {"broker": "broker-b"}).content.decode())
    unknown = charts(client.get(url, {"client": "10.9.9.9@1"}).content.decode())

    assert last(one_client["Send latency of client 10.0.0.2@200"]["data"][3]) == 8.0
    assert last(one_broker["Send latency to broker broker-b"]["data"][3]) == 400.0
    assert "Send latency" in unknown  # an unknown client shows the whole group


def test_the_topic_page_shows_its_producers_latency_beside_its_traffic(client, member, group):
    client.force_login(member)
    topic = group.topics.get()

    drawn = charts(client.get(reverse("topic-detail", args=[topic.pk])).content.decode())

    assert "Messages produced per minute" in drawn
    assert last({t["name"]: t for t in drawn["Send latency"]["data"]}["max"]) == 4.0
    assert "Failed sends per minute by broker" in drawn


def test_a_group_without_reports_says_how_clients_report(client, member, db, team):
    empty = ProducerGroup.objects.create(cluster=Cluster.objects.create(name="qa"), team=team, name="PID_QUIET")
    client.force_login(member)

    page = client.get(reverse("producer-group-detail", args=[empty.pk])).content.decode()

    assert "No client of this group reported sends in this range." in page
