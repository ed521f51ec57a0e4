"""A chart page over a week stays small: every line is at most ``MAX_POINTS`` points (the readers pick the resolution,
test_chart_resolution.py), every chart says what one point stands for under its x axis, the JSON carries no plotly
template, and plotly.js is loaded once per page from the static files. The issue this guards: a topic's 7-day page
was 1.2-1.8 MB of HTML and several seconds with only minutes of data, since the producer latency, probe and server
readers filled every minute (or five-minute slot) of the week."""

import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.models import Broker, Cluster, ConsumerGroup, ProducerGroup, Subscription, Topic
from stats.models import ClusterMinute, TopicMinute
from stats.queries.source import MAX_POINTS


@pytest.fixture
def prod(db):
    cluster = Cluster.objects.create(name="prod")
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
                          address="10.0.0.5:10911", role="ASYNC_MASTER", version="V4_9_4")  # fmt: skip
    return cluster


@pytest.fixture
def orders(prod, team):
    topic = Topic.objects.create(cluster=prod, team=team, name="ORDERS", queue_nums=4)
    group = ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=topic)
    ProducerGroup.objects.create(cluster=prod, team=team, name="PID_ORDERS").topics.add(topic)
    now = timezone.now().replace(second=0, microsecond=0)
    for n in range(1, 11):  # ten minutes of data, as a new demo has
        minute = now - dt.timedelta(minutes=n)
        ClusterMinute.objects.create(cluster_id=prod.pk, minute=minute, put_nums=600)
        TopicMinute.objects.create(cluster_id=prod.pk, topic="ORDERS", minute=minute, put_nums=600, put_size=6000)
    return topic


@pytest.fixture
def signed_in(client, member):
    client.force_login(member)
    return client


def pages(prod, orders) -> list[str]:
    return [
        reverse("topic-detail", args=[orders.pk]),
        reverse("consumer-group-detail", args=[ConsumerGroup.objects.get().pk]),
        reverse("producer-group-detail", args=[ProducerGroup.objects.get().pk]),
        reverse("broker-detail", args=[prod.brokers.get().pk]),
        reverse("server-detail", args=["10.0.0.5"]),
    ]


def specs(response) -> dict[str, dict]:
    return {drawn.title: json.loads(drawn.spec) for drawn in response.context["charts"]}


def test_every_line_of_a_weeks_chart_pages_is_bounded_and_the_page_stays_small(signed_in, prod, orders):
    for url in pages(prod, orders):
        response = signed_in.get(url, {"range": "7d"})

        assert response.status_code == 200, url
        for title, spec in specs(response).items():
            assert "template" not in spec["layout"] or not spec["layout"]["template"], (url, title)
            for trace in spec["data"]:
                assert len(trace["x"]) <= MAX_POINTS, (url, title, trace.get("name"))
        assert len(response.content) < 150_000, url  # was 1.2 MB for the topic page
        assert response.text.count("plotly/plotly.min.js") == 1, url


def test_each_chart_says_what_one_point_stands_for(signed_in, prod, orders):
    week = specs(signed_in.get(reverse("topic-detail", args=[orders.pk]), {"range": "7d"}))
    hour = specs(signed_in.get(reverse("topic-detail", args=[orders.pk]), {"range": "1h"}))
    day_of_lag = specs(signed_in.get(reverse("consumer-group-detail", args=[ConsumerGroup.objects.get().pk]),
                                     {"range": "1d"}))  # fmt: skip
    server = specs(signed_in.get(reverse("server-detail", args=["10.0.0.5"])))

    def note(spec: dict) -> str:
        return spec["layout"]["xaxis"]["title"]["text"]

    assert note(week["Messages produced per minute"]) == "hourly averages"
    assert note(week["Send latency"]) == "percentiles of each hour"
    assert note(hour["Messages produced per minute"]) == "per minute"
    assert note(day_of_lag["Lag"]) == "10-minute peaks"
    assert note(day_of_lag["Consumption TPS"]) == "10-minute averages"
    assert note(server["CPU"]) == "5-minute samples"


def test_the_newest_minutes_show_on_a_weeks_chart_before_any_rollup_job_ran(signed_in, orders):
    spec = specs(signed_in.get(reverse("topic-detail", args=[orders.pk]), {"range": "7d"}))
    line = spec["Messages produced per minute"]["data"][0]

    assert [y for y in line["y"] if y is not None] != []  # the last hour's bucket, from the minutes
    assert line["y"][0] is None  # a week ago nothing was collected: a gap, not a zero
