"""End to end: an application produces and consumes through the SDK (the real C++ client) on a sandbox cluster,
knowing only a live portal's URL, its groups and their tokens. The name servers come from the portal's bootstrap;
the consumer's reports reach the portal and show on the consumer group's page; a throttle the owning team sets on
the group's page is followed at the consumer's next read of its settings and holds the measured consume rate."""

import time

import pytest
from django.urls import reverse

from monitor.sandbox.cluster import SandboxCluster
from monitor.sdk import ListenerContainer, Producer, ProducerTemplate, Settings
from monitor.sdk.listeners import Registry
from portal.models import Cluster, ConsumerGroup, NameServer, ProducerGroup, Subscription, Topic
from portal.services import cluster_ops, consumer_tokens, producer_tokens
from stats.models import ConsumerClientMinute
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC = "SDK_BILLING"
GROUP = "GID_SDK_BILLING"


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # the C++ client's logs
    with SandboxCluster(brokers=1) as cluster:
        yield cluster


def rate(stamps: list[float]) -> float:
    return (len(stamps) - 1) / (stamps[-1] - stamps[0])


def test_sdk_clients_bootstrap_report_and_follow_the_throttle_set_in_the_portal(
    transactional_db, live_server, sandbox, team, member, client
):
    cluster = Cluster.objects.create(name="sdk-live")
    NameServer.objects.create(cluster=cluster, address=sandbox.namesrv_addr)
    topic = Topic.objects.create(cluster=cluster, team=team, name=TOPIC, queue_nums=2)
    cluster_ops.create_topic(cluster, TOPIC, 2, ordered=False)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=GROUP)
    Subscription.objects.create(consumer_group=group, topic=topic)
    producer_group = ProducerGroup.objects.create(cluster=cluster, team=team, name="PID_SDK_BILLING")
    producer_group.topics.add(topic)
    consumer_token = consumer_tokens.issue(group, by=member).secret
    producer_token = producer_tokens.issue(producer_group, by=member).secret

    stamps: list[float] = []
    registry = Registry()

    @registry.listener(TOPIC, GROUP)
    def handle(message):
        stamps.append(time.monotonic())

    settings = Settings.from_mapping({"portal_url": live_server.url, "groups": {GROUP: {"token": consumer_token}}})
    container = ListenerContainer(settings, registry, stop_at_exit=False, refresh=1.0)  # the portal says 60 s
    container.start()
    producer = Producer("PID_SDK_BILLING", portal_url=live_server.url, token=producer_token)
    try:
        producer.start()  # no name server given: from the portal
        template = ProducerTemplate(producer)
        consumer = container.consumers[GROUP]
        assert consumer.throttle.rate is None
        for n in range(20):
            template.send(TOPIC, f"free {n}")
        wait_for(lambda: len(stamps) == 20, timeout=60)

        client.force_login(member)
        client.post(reverse("consumer-group-throttle", args=[group.pk]), {"consume_throttle_tps": "5"})
        wait_for(lambda: consumer.throttle.rate == 5, timeout=10)
        stamps.clear()
        for n in range(12):
            template.send(TOPIC, f"throttled {n}")
        wait_for(lambda: len(stamps) == 12, timeout=60)
        assert 4.0 <= rate(stamps) <= 5.5, rate(stamps)
    finally:
        producer.shutdown()
        container.stop()  # reports the current minute

    assert sum(ConsumerClientMinute.objects.filter(consumer_group=GROUP).values_list("count", flat=True)) == 32
    page = client.get(reverse("consumer-group-detail", args=[group.pk]))
    (figures,) = page.context["consumption"].topics
    assert (figures.name, figures.count, figures.failure_count) == (TOPIC, 32, 0)
    assert consumer.client_id in page.content.decode()
