"""The portal's cluster operations against real Apache RocketMQ 4.9.4 and 5.5.0: registering a cluster discovers its
master and slave as they describe themselves; approving applications creates topics and consumer groups on the real
brokers and approving their deletion removes them; the brownfield sync imports what an operator created with the
real mqadmin. What the brokers hold is read back with the real Java mqadmin or with admin reads.

The shared clusters (``rocketmq4``, ``rocketmq5``) are used by other tests too, so every name here is the test's own.
"""

from __future__ import annotations

import json
import re

import pytest

from monitor.launcher.cluster import RealCluster
from monitor.remoting import body as b
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError
from portal.models import (
    ApplicationKind,
    ApplicationState,
    ConsumerGroup,
    Origin,
    RegistryState,
    Topic,
)
from portal.services import applications, registry
from portal.services.sync import sync_cluster
from stats.keys import retry_topic
from tests.support import portal_world
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

K = ApplicationKind
WAIT = 90.0  # a loaded machine; every wait polls

# The portal tests' actors (the registered cluster here is a real one, below).
portal_admin = portal_world.portal_admin
team = portal_world.team
member = portal_world.member
team_admin = portal_world.team_admin


@pytest.fixture(params=["rocketmq4", "rocketmq5"])
def real(request) -> RealCluster:
    return request.getfixturevalue(request.param)


@pytest.fixture
def cluster(real, portal_admin):
    return registry.register_cluster(name=f"real-{real.version}", namesrv_addrs=[real.namesrv_addr], by=portal_admin)


@pytest.fixture
def wire(real):
    with real.admin(timeout=10) as admin:
        yield admin


def name(real: RealCluster, what: str) -> str:
    return f"RealPortal{real.version.split('.')[0]}{what}"


def route_or_none(admin: MQAdmin, topic: str):
    try:
        return admin.examine_topic_route_info(topic)
    except RemotingError as exc:
        assert exc.code == ResponseCode.TOPIC_NOT_EXIST, exc
        return None


def mqadmin(real: RealCluster, *args: str) -> str:
    """What the real mqadmin printed; what it said on stderr (an exception) is kept for a failing assertion."""
    result = real.mqadmin(*args)
    return result.stdout + (f"\n[stderr]\n{result.stderr[-3000:]}" if result.stderr.strip() else "")


def mqadmin_json(real: RealCluster, *args: str) -> dict:
    """What the real mqadmin prints as JSON (topicRoute: fastjson, whose maps keyed by numbers have bare keys)."""
    result = real.mqadmin(*args)
    text = result.stdout
    assert "{" in text, f"mqadmin {' '.join(args)} printed no JSON:\n{text}\n{result.stderr[-3000:]}"
    document = text[text.index("{") : text.rindex("}") + 1]
    return json.loads(re.sub(r"([{,]\s*)(-?\d+):", r'\1"\2":', document))


def master_config(admin: MQAdmin, real: RealCluster, topic: str):
    return admin.get_all_topic_config(real.broker("broker-a").addr).topic_config_table.get(topic)


def master_group(admin: MQAdmin, real: RealCluster, group: str):
    return admin.get_all_subscription_group(real.broker("broker-a").addr).subscription_group_table.get(group)


# --- registration -------------------------------------------------------------------------------------------------


def test_registering_a_real_cluster_discovers_its_master_and_slave_as_they_describe_themselves(real, portal_admin):
    cluster = registry.register_cluster(name="registered", namesrv_addrs=[real.namesrv_addr], by=portal_admin)

    described = {
        (b.broker_name, b.broker_id): (b.address, b.role, b.version, b.cluster_name, b.present)
        for b in cluster.brokers.all()
    }
    version = "V" + real.version.replace(".", "_")
    assert described == {
        (node.name, node.broker_id): (
            node.addr,
            real.broker_properties(node.name, node.broker_id, node.port)["brokerRole"],
            version,
            real.cluster_name,
            True,
        )
        for node in real.brokers.values()
    }
    assert all(b.last_seen_at is not None for b in cluster.brokers.all())


# --- applications -------------------------------------------------------------------------------------------------


def test_an_approved_topic_application_creates_the_topic_on_the_real_broker_and_an_approved_deletion_removes_it(
    real, cluster, member, team_admin, team, portal_admin, wire
):
    """An ordered topic: its queues on the master, as the real mqadmin's topicRoute shows them, and its queue layout in
    the name server's ORDER_TOPIC_CONFIG (which routes carry only where the name servers run with
    orderMessageEnable=true, off by default); deleting it removes the topic, its route and its layout."""
    topic = name(real, "Orders")
    application = applications.submit(
        member,
        kind=K.TOPIC_CREATE,
        team=team,
        cluster=cluster,
        payload={"name": topic, "queue_nums": 4, "ordered": True},
        reason="orders",
    )

    approved = applications.approve(application, by=portal_admin)

    assert approved.state == ApplicationState.APPROVED
    config = master_config(wire, real, topic)
    assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (4, 4, 6)
    wait_for(lambda: route_or_none(wire, topic), WAIT, "the master registering the topic's route")
    route = mqadmin_json(real, "topicRoute", "-t", topic)
    assert [(q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"]) for q in route["queueDatas"]] == [
        ("broker-a", 4, 4, 6)
    ]
    assert wire.get_kv_config(ORDER_TOPIC_NAMESPACE, topic) == "broker-a:4"
    (broker_data,) = route["brokerDatas"]
    assert broker_data["brokerAddrs"]["0"] == real.broker("broker-a").addr

    registered = Topic.objects.get(cluster=cluster, name=topic)
    deletion = applications.submit(
        team_admin, kind=K.TOPIC_DELETE, team=team, cluster=cluster, topic=registered, payload={}
    )
    applications.approve(deletion, by=portal_admin)

    assert master_config(wire, real, topic) is None
    assert route_or_none(wire, topic) is None
    assert wire.get_kv_config(ORDER_TOPIC_NAMESPACE, topic) is None
    assert not Topic.objects.filter(cluster=cluster, name=topic).exists()


def test_an_approved_consumer_group_application_creates_the_group_on_the_real_broker_and_a_deletion_removes_it(
    real, cluster, member, team_admin, team, portal_admin, wire
):
    """The group with its retry topic, as a consumer that ran leaves it, is removed whole."""
    subscribed = Topic.objects.create(cluster=cluster, team=team, name=name(real, "Read"), queue_nums=4)
    group = f"cg_real_portal{real.version.split('.')[0]}"
    application = applications.submit(
        member,
        kind=K.CONSUMER_GROUP_CREATE,
        team=team,
        cluster=cluster,
        payload={"name": group, "subscriptions": [{"topic_id": subscribed.pk}]},
        reason="to read",
    )

    applications.approve(application, by=portal_admin)

    created = master_group(wire, real, group)
    assert created is not None and created.group_name == group and not created.consume_broadcast_enable
    shown = mqadmin(real, "getConsumerConfig", "-g", group)
    assert f"{real.cluster_name}:broker-a" in shown and re.search(rf"^groupName\s+=\s+{group}$", shown, re.M), shown
    # What a consumer of the group creates on its first heartbeat: its retry topic.
    retry = b.TopicConfig(topic_name=retry_topic(group), read_queue_nums=1, write_queue_nums=1)
    wire.create_and_update_topic_config(real.broker("broker-a").addr, retry)
    wait_for(lambda: route_or_none(wire, retry_topic(group)), WAIT, "the retry topic's route")

    deletion = applications.submit(
        team_admin,
        kind=K.CONSUMER_GROUP_DELETE,
        team=team,
        cluster=cluster,
        consumer_group=ConsumerGroup.objects.get(cluster=cluster, name=group),
        payload={},
    )
    applications.approve(deletion, by=portal_admin)

    assert master_group(wire, real, group) is None
    assert master_config(wire, real, retry_topic(group)) is None
    assert route_or_none(wire, retry_topic(group)) is None
    assert not ConsumerGroup.objects.filter(cluster=cluster, name=group).exists()


# --- the brownfield sync ------------------------------------------------------------------------------------------


def test_the_sync_imports_a_topic_and_a_group_an_operator_created_with_the_real_mqadmin(real, cluster):
    """``updateTopic -c ... -o true`` and ``updateSubGroup -c ...``, as an operator types them: the sync imports both
    unowned, the topic with its queue count and as ordered (mqadmin records its layout in the name servers)."""
    topic, group = name(real, "Brownfield"), f"cg_real_brownfield{real.version.split('.')[0]}"
    made = mqadmin(real, "updateTopic", "-c", real.cluster_name, "-t", topic, "-r", "6", "-w", "6", "-o", "true")
    assert "success" in made.lower(), made
    made = mqadmin(real, "updateSubGroup", "-c", real.cluster_name, "-g", group)
    assert "success" in made.lower(), made

    report = sync_cluster(cluster)

    assert report.complete, report.errors
    imported = Topic.objects.get(cluster=cluster, name=topic)
    assert (imported.team, imported.origin, imported.state) == (None, Origin.IMPORTED, RegistryState.ACTIVE)
    assert (imported.queue_nums, imported.ordered) == (6, True)
    assert ConsumerGroup.objects.get(cluster=cluster, name=group).origin == Origin.IMPORTED
    assert topic in report.imported_topics and group in report.imported_groups
    # Nothing the brokers made for themselves is imported (topics named after their cluster and broker names).
    own = {real.cluster_name, f"{real.cluster_name}_REPLY_TOPIC", *real.broker_names}
    assert not own & set(report.imported_topics)
    assert report.brokers == len(real.brokers)
