"""The portal's side of message trace around the message page: each cluster's trace topic (set where admins edit
clusters, checked as RocketMQ checks a topic name), how fast the trace topic grows (the cluster page, from the
collected TOPIC_PUT_SIZE), the topic page's trace switch, and the switch in what SDK clients bootstrap from."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.models import ProducerGroup, Topic
from portal.models.validation import TRACE_TOPIC
from portal.services import client_bootstrap, producer_tokens
from portal.services.trace_storage import trace_storage
from stats.models import TopicMinute
from tests.support.factories import unique


def edit_cluster(client, admin, cluster, trace_topic):
    client.force_login(admin)
    data = {"name": cluster.name, "namesrv_addrs": cluster.namesrv_addr, "trace_topic": trace_topic}
    return client.post(reverse("cluster-detail", args=[cluster.pk]), data)


def test_an_admin_sets_the_clusters_trace_topic_on_its_page(client, portal_admin, cluster):
    response = edit_cluster(client, portal_admin, cluster, "ORDERS_TRACE")

    assert response.status_code == 302
    cluster.refresh_from_db()
    assert cluster.trace_topic == "ORDERS_TRACE"
    assert 'value="ORDERS_TRACE"' in client.get(reverse("cluster-detail", args=[cluster.pk])).content.decode()


@pytest.mark.parametrize("name", ["%RETRY%orders", "orders trace", "SCHEDULE_TOPIC_XXXX", "T" * 128])
def test_a_trace_topic_rocketmq_would_refuse_is_refused(client, portal_admin, cluster, name):
    response = edit_cluster(client, portal_admin, cluster, name)

    assert response.status_code == 200 and response.context["form"].errors["trace_topic"]
    cluster.refresh_from_db()
    assert cluster.trace_topic == TRACE_TOPIC


@pytest.mark.parametrize("name", [TRACE_TOPIC, ""])
def test_the_default_trace_topic_is_accepted_back_and_blank_means_it(client, portal_admin, cluster, name):
    edit_cluster(client, portal_admin, cluster, "ORDERS_TRACE")
    edit_cluster(client, portal_admin, cluster, name)

    cluster.refresh_from_db()
    assert cluster.trace_topic == TRACE_TOPIC


def test_the_cluster_page_shows_the_trace_topics_bytes_per_day_from_collected_figures(
    client, portal_admin, cluster, settings
):
    settings.TIME_ZONE = "UTC"
    cluster.trace_topic = "ORDERS_TRACE"
    cluster.save()
    now = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    yesterday = now - dt.timedelta(days=1)
    later = now + dt.timedelta(minutes=1)
    for minute, size, count in [(yesterday, 3_000_000, 300), (now, 1_000_000, 100), (later, 2_000_000, 200)]:
        TopicMinute.objects.create(
            cluster_id=cluster.pk, topic="ORDERS_TRACE", minute=minute, put_size=size, put_nums=count
        )
    TopicMinute.objects.create(cluster_id=cluster.pk, topic="OTHER", minute=now, put_size=9_999_999, put_nums=1)

    storage = trace_storage(cluster, now=later)

    assert [(day.bytes, day.messages) for day in storage.days] == [(3_000_000, 300), (3_000_000, 300)]
    assert storage.bytes_per_day == 3_000_000
    client.force_login(portal_admin)
    html = client.get(reverse("cluster-detail", args=[cluster.pk])).content.decode()
    assert "2.9\xa0MB per day" in html and "TOPIC_PUT_SIZE of the trace topic" in html


def test_the_default_trace_topic_has_no_figure_and_the_page_says_why(client, portal_admin, cluster):
    assert not trace_storage(cluster).collected
    client.force_login(portal_admin)
    html = client.get(reverse("cluster-detail", args=[cluster.pk])).content.decode()
    assert "the collector leaves out RocketMQ's system topics" in html


def test_the_topic_page_says_whether_sdk_clients_trace(client, member, cluster, team):
    traced = Topic.objects.create(cluster=cluster, team=team, name=unique("TRACED_"), trace_enabled=True)
    untraced = Topic.objects.create(cluster=cluster, team=team, name=unique("UNTRACED_"))
    client.force_login(member)

    on = client.get(reverse("topic-detail", args=[traced.pk])).content.decode()
    off = client.get(reverse("topic-detail", args=[untraced.pk])).content.decode()

    assert f"to write trace records to {TRACE_TOPIC}" in on
    assert "SDK clients of this topic not to trace" in off


def test_the_client_bootstrap_carries_the_trace_switch(portal_admin, cluster, team):
    traced = Topic.objects.create(cluster=cluster, team=team, name=unique("TRACED_"), trace_enabled=True)
    untraced = Topic.objects.create(cluster=cluster, team=team, name=unique("UNTRACED_"))
    group = ProducerGroup.objects.create(cluster=cluster, team=team, name=unique("PG_"))
    group.topics.add(traced, untraced)
    token = producer_tokens.issue(group, by=portal_admin).token

    answer = client_bootstrap.bootstrap(token)

    assert answer["trace_topic"] == TRACE_TOPIC and answer["traced_topics"] == [traced.name]
