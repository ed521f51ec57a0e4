"""Messages on the portal's sandbox cluster for the message tests: topics and groups created on every master and
registered, and messages sent over the wire as a producer sends them."""

from __future__ import annotations

import pytest

from monitor.messages.send import SendResult, send_message
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from portal.models import ConsumerGroup, Subscription, Topic
from tests.support.factories import unique
from tests.support.waiting import wait_for


def create_topic(sandbox, name: str, queues: int = 4) -> None:
    with MQAdmin(sandbox.namesrv_addr) as admin:
        for broker_name in sandbox.broker_names:
            config = b.TopicConfig(topic_name=name, read_queue_nums=queues, write_queue_nums=queues)
            admin.create_and_update_topic_config(sandbox.broker(broker_name).addr, config)
        wait_for(lambda: admin.examine_topic_route_info(name).queue_datas, timeout=10)


def create_group(sandbox, name: str) -> None:
    with MQAdmin(sandbox.namesrv_addr) as admin:
        for broker_name in sandbox.broker_names:
            admin.create_and_update_subscription_group_config(
                sandbox.broker(broker_name).addr, b.SubscriptionGroupConfig(group_name=name)
            )


def send(sandbox, topic: str, body: bytes = b'{"order": 1}', **kwargs) -> SendResult:
    with MQAdmin(sandbox.namesrv_addr) as admin:
        return send_message(admin, topic, body, **kwargs)


@pytest.fixture(name="live_topic")
def live_topic_fixture(cluster, sandbox, team):
    """A topic of ``team`` that exists on the sandbox's masters."""
    name = unique("MSG_TOPIC_")
    create_topic(sandbox, name)
    return Topic.objects.create(cluster=cluster, team=team, name=name, queue_nums=4)


@pytest.fixture(name="live_group")
def live_group_fixture(cluster, sandbox, team, live_topic):
    """A consumer group of ``team`` on the sandbox's masters, registered as subscribed to ``live_topic``."""
    name = unique("MSG_GROUP_")
    create_group(sandbox, name)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=name)
    Subscription.objects.create(consumer_group=group, topic=live_topic)
    return group
