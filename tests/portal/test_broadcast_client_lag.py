"""Each client of a broadcasting group has a lag of its own (broadcasting consumers keep their offsets themselves), and
the portal keeps and shows every one: against two real C++ broadcasting consumers of one group on the sandbox, one
consuming everything, one holding every message, the collector stores each client's lagging queues, /metrics has a
``rocketmq_group_diff`` series per client, and the group's page lists both clients with their lag."""

import pytest
from django.urls import reverse
from django.utils import timezone

from monitor.collect.consumers import client_position
from monitor.remoting.admin import MQAdmin
from portal.models import ConsumerGroup, MessageModel, Subscription, Topic
from stats.models import ClientMinute, ClientQueueLagMinute, ConsumeMinute, QueueLagMinute
from stats.queries.broadcast import broadcast_client_lags
from tests.monitor.broadcasting import broadcasting_client, create_topic_and_group
from tests.monitor.traffic_helpers import WAIT, collect, plan, running
from tests.portal.metrics_world import scrape
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.monitor.fixtures_traffic", "tests.portal.metrics_fixtures"]

TOPIC, GROUP = "TopicBroadcastPair", "cg_broadcast_pair"


def caught_up(sandbox, client_id: str) -> bool:
    """Whether the client's own position on every queue of the topic is the queue's end."""
    with MQAdmin(sandbox.namesrv_addr) as admin:
        ends = {mq: offsets.max_offset for mq, offsets in admin.examine_topic_stats(TOPIC).offset_table.items()}
        master = sandbox.broker(sandbox.broker_names[0])
        info = admin.get_consumer_running_info(GROUP, client_id, broker_addr=master.addr)
    return all(client_position(queue) == ends[mq] for mq, queue in info.mq_table.items() if mq.topic == TOPIC)


def test_every_client_of_a_broadcasting_group_has_its_lag_stored_exposed_and_shown(
    registered, traffic_sandbox, team, member, scrape_token, client, tmp_path
):
    topic = Topic.objects.create(cluster=registered, team=team, name=TOPIC, queue_nums=4)
    group = ConsumerGroup.objects.create(
        cluster=registered, team=team, name=GROUP, message_model=MessageModel.BROADCASTING
    )
    Subscription.objects.create(consumer_group=group, topic=topic)
    create_topic_and_group(traffic_sandbox, TOPIC, GROUP)
    at = timezone.now()
    with (
        broadcasting_client(traffic_sandbox, GROUP, TOPIC, tmp_path / "keeping-up", hold=False) as keeping_up,
        broadcasting_client(traffic_sandbox, GROUP, TOPIC, tmp_path / "behind", hold=True) as behind,
    ):
        with running(traffic_sandbox, plan(TOPIC, rate=20.0), tmp_path / "producer") as run:
            sent = run.stop_producers(at_least=20)
        wait_for(lambda: caught_up(traffic_sandbox, keeping_up), what="one client consumed everything", timeout=WAIT)

        collect(registered, at)
        stored = {
            model: model.objects.filter(cluster_id=registered.pk, group=GROUP).count()
            for model in (ClientQueueLagMinute, QueueLagMinute, ClientMinute, ConsumeMinute)
        }
        collect(registered, at)  # the same minute again: its rows are replaced, never added to

    assert {model: model.objects.filter(cluster_id=registered.pk, group=GROUP).count() for model in stored} == stored
    queues = ClientQueueLagMinute.objects.filter(cluster_id=registered.pk, group=GROUP, topic=TOPIC)
    assert {q.client_id for q in queues} == {behind} and sum(q.lag for q in queues) == sent
    assert ConsumeMinute.objects.get(cluster_id=registered.pk, group=GROUP, topic=TOPIC).lag == sent
    minute = ConsumeMinute.objects.get(cluster_id=registered.pk, group=GROUP, topic=TOPIC).minute
    lags = {lag.client_id: lag.lag for lag in broadcast_client_lags(registered.pk, minute) if lag.topic == TOPIC}
    assert lags == {keeping_up: 0, behind: sent}

    metrics = scrape(client, scrape_token)
    diff = {
        dict(labels)["clientId"]: (value, dict(labels)["msgModel"])
        for labels, value in metrics["rocketmq_group_diff"].items()
        if dict(labels)["group"] == GROUP
    }
    assert diff == {keeping_up: (0, "0"), behind: (sent, "0")}
    queue_lags = {key: value for key, value in metrics["mqcloud_queue_lag"].items() if dict(key)["group"] == GROUP}
    assert {dict(key)["client_id"] for key in queue_lags} == {behind}
    assert sum(queue_lags.values()) == sent

    client.force_login(member)
    page = client.get(reverse("consumer-group-detail", args=[group.pk])).content.decode()
    table = page[page.index("Lag per client") :]
    assert keeping_up in table and behind in table
