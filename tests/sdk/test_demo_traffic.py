"""The demo traffic reports through the SDK: a traffic worker given a portal and a token folder reports its sends,
and ``manage.py demo`` registers the demo producer groups and writes their tokens where the workers read them."""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth import get_user_model

from monitor.sandbox.traffic import Traffic
from monitor.sandbox.traffic.profiles import Plan, TrafficOptions, demo, producer
from monitor.sdk.reporter import REGISTRATION_PATH
from portal.management.commands.demo import DEMO_PRODUCERS, TOKEN_LABEL, USER
from portal.management.commands.demo import Command as DemoCommand
from portal.models import Cluster, ProducerGroup, Team, Topic
from portal.services import producer_tokens
from stats.histogram import Histogram
from tests.support.factories import unique
from tests.support.waiting import wait_for

OPTIONS = TrafficOptions(rate=20.0, status_interval=0.2)


def test_the_demo_registers_exactly_the_demo_profiles_reporting_producers():
    plan = demo(TrafficOptions())
    reporting = {
        client["group"]: client["topic"]
        for client in plan.clients
        if client["role"] == "producer" and client.get("report", True)
    }
    assert reporting == DEMO_PRODUCERS


def test_a_traffic_producer_reports_its_sends_to_the_portal_named_in_its_environment(
    cluster, portal, tmp_path, monkeypatch
):
    group, topic = unique("pg_demo"), unique("TopicDemo")
    token_dir = tmp_path / "tokens"
    token_dir.mkdir()
    (token_dir / f"{group}.token").write_text("mqp_demo-token\n")
    monkeypatch.setenv("MQCLOUD_PORTAL_URL", portal.url)
    monkeypatch.setenv("MQCLOUD_PRODUCER_TOKEN_DIR", str(token_dir))
    plan = Plan(topics={topic: 4}, clients=[producer(group, topic, OPTIONS.rate, OPTIONS)])
    traffic = Traffic(cluster.namesrv_addr, plan, options=OPTIONS, workdir=tmp_path / "traffic").start()
    try:
        wait_for(lambda: traffic.status()[f"producer {group}"].get("sent", 0) >= 10)
    finally:
        traffic.stop()  # SIGTERM: the worker shuts its producer down, which reports the last minute
    portal.wait_for(lambda: portal.reports())

    reports = portal.reports()
    assert {(report["producer_group"], report["topic"]) for report in reports} == {(group, topic)}
    assert all(post.headers["Authorization"] == "Producer mqp_demo-token" for post in portal.posts())
    sent = Counter()
    for report in reports:
        for broker in report["brokers"]:
            sent[broker["broker_name"]] += broker["count"]
            assert Histogram.from_dict(broker["histogram"]).count == broker["count"]
    assert set(sent) == {"broker-a", "broker-b"}
    checked = [request.query["topic"] for request in portal.requests if request.path == REGISTRATION_PATH]
    assert checked == [[topic]]


@pytest.mark.django_db
def test_the_demo_issues_a_fresh_token_per_producer_group_and_revokes_the_previous_one(tmp_path):
    users = get_user_model().objects
    admin = users.create_user("demo-admin", is_staff=True)
    user = users.create_user(USER[0])
    team = Team.objects.create(name="demo-team")
    team.memberships.create(user=user, role="member")
    cluster = Cluster.objects.create(name="sandbox")
    topics = {
        name: Topic.objects.create(cluster=cluster, team=team, name=name, queue_nums=4)
        for name in ("TopicOrders", "TopicPayments")
    }
    command = DemoCommand()

    assert command._issue_producer_tokens(cluster, team, admin, tmp_path) == list(DEMO_PRODUCERS)
    first = (tmp_path / "pg_orders.token").read_text().strip()
    command._issue_producer_tokens(cluster, team, admin, tmp_path)
    second = (tmp_path / "pg_orders.token").read_text().strip()

    for group_name, topic_name in DEMO_PRODUCERS.items():
        group = ProducerGroup.objects.get(cluster=cluster, name=group_name)
        assert list(group.topics.all()) == [topics[topic_name]]
        assert group.team == team
        assert group.tokens.active().filter(label=TOKEN_LABEL).count() == 1
    assert producer_tokens.authenticate(first) is None
    assert producer_tokens.authenticate(second).producer_group.name == "pg_orders"
    assert oct((tmp_path / "pg_orders.token").stat().st_mode & 0o777) == "0o600"
