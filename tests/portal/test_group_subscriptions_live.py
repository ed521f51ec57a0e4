"""A consumer group's subscriptions against real C++ push consumers on the sandbox cluster: what the clients
subscribe reaches the group's page and API through the collector, marked where it differs from the registry, and
the registry sync registers it for a group created directly on the cluster."""

from django.urls import reverse
from rest_framework.test import APIClient

from monitor.sandbox.traffic import Plan
from monitor.sandbox.traffic.profiles import consumer
from portal.models import AuditEntry, ConsumerGroup, Origin, Subscription, Topic
from portal.services.sync import sync_cluster
from tests.monitor.traffic_helpers import WAIT, collect, running
from tests.support.waiting import wait_for

pytest_plugins = ["tests.monitor.fixtures_traffic"]


def online(sandbox, group: str, clients: int) -> bool:
    connected = sandbox.broker("broker-a").consumers.get(group)
    return connected is not None and len(connected.client_ids()) == clients


def views(user, group) -> tuple[str, dict]:
    """The group's page and its API detail's ``subscription_check``, as ``user`` gets them."""
    api = APIClient()
    api.force_login(user)
    text = api.get(reverse("consumer-group-detail", args=[group.pk])).content.decode()
    detail = api.get(reverse("api:consumer-group-detail", args=[group.pk]))
    assert detail.status_code == 200, detail.data
    return text, detail.data["subscription_check"]


def test_a_group_created_on_the_cluster_shows_its_clients_subscription_until_the_sync_registers_it(
    registered, traffic_sandbox, tmp_path, portal_admin
):
    topic, group = "TopicOrdersDirect", "cg_orders_direct"
    traffic_plan = Plan(
        topics={topic: 4}, groups={group: 16}, clients=[consumer(group, topic, expression="TagA || TagB")]
    )
    with running(traffic_sandbox, traffic_plan, tmp_path):
        wait_for(lambda: online(traffic_sandbox, group, 1), what="the consumer online", timeout=WAIT)
        first = sync_cluster(registered)  # imports the topic and the group; nothing collected yet
        collect(registered)

        imported = ConsumerGroup.objects.get(cluster=registered, name=group)
        assert group in first.imported_groups and imported.origin == Origin.IMPORTED
        assert not imported.subscriptions.exists()
        text, check = views(portal_admin, imported)
        assert "subscribes to no registered topic" not in text
        assert f"{topic} (TagA || TagB)" in text and ">not registered<" in text
        (reported,) = check["topics"]
        (client_id,) = check["clients"]
        assert reported == {
            "topic": topic,
            "topic_id": Topic.objects.get(cluster=registered, name=topic).pk,
            "registered_expression": None,
            "reported": [{"expression": "TagA || TagB", "expression_type": "TAG", "clients": [client_id]}],
            "not_subscribing": [],
            "differences": ["unregistered"],
        }
        assert check["group_topics"] == [f"%RETRY%{group}"]

        second = sync_cluster(registered)

        assert group in second.subscribed_groups
        subscription = Subscription.objects.get(consumer_group=imported)
        assert (subscription.topic.name, subscription.tag_expression) == (topic, "TagA || TagB")
        entry = AuditEntry.objects.get(action="consumergroup.subscriptions_imported", object_id=str(imported.pk))
        assert (entry.before["subscriptions"], entry.after["subscriptions"]) == ({}, {topic: "TagA || TagB"})
        text, check = views(portal_admin, imported)
        assert "as registered" in text and check["differs"] is False
        # A registered subscription is never changed by the sync: it stays as it is.
        assert group not in sync_cluster(registered).subscribed_groups


def test_clients_subscribing_unlike_the_registry_and_each_other_are_marked(
    registered, traffic_sandbox, tmp_path, team, member
):
    topic, group = "TopicOrdersSplit", "cg_orders_split"
    registered_topic = Topic.objects.create(cluster=registered, team=team, name=topic, queue_nums=4)
    billing = ConsumerGroup.objects.create(cluster=registered, team=team, name=group)
    Subscription.objects.create(consumer_group=billing, topic=registered_topic, tag_expression="TagA")
    traffic_plan = Plan(
        topics={topic: 4},
        groups={group: 16},
        clients=[
            consumer(group, topic, expression="TagA", name="consumer tag a"),
            consumer(group, topic, expression="TagB", name="consumer tag b"),
        ],
    )
    with running(traffic_sandbox, traffic_plan, tmp_path):
        wait_for(lambda: online(traffic_sandbox, group, 2), what="both consumers online", timeout=WAIT)
        collect(registered)

    text, check = views(member, billing)

    assert "inconsistent subscription" in text and "expression differs from the registry" in text
    assert check["inconsistent"] is True
    (judged,) = check["topics"]
    assert judged["registered_expression"] == "TagA"
    assert sorted(r["expression"] for r in judged["reported"]) == ["TagA", "TagB"]
    assert judged["differences"] == ["expression_differs", "inconsistent"]
