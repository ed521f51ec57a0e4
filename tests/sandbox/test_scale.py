"""The sandbox at the size the monitor's benchmarks load it: one broker pair (master and slave) holding 10,000
topics and 10,000 subscription groups, created through the admin client many at a time.

At that size the broker coalesces the name-server registrations of topics created concurrently, caches its
whole-table bodies and indexes committed offsets (see the broker package); these tests check that the answers stay
complete and right: every topic reaches the name server and the slave, and the per-topic and per-group requests
find the late ones. Timings are the benchmark's business (tests/bench/bench_sandbox.py), not these tests'.
"""

import asyncio
import time

import pytest

from monitor.remoting.admin import AsyncMQAdmin, MQAdmin
from monitor.remoting.body import MessageQueue, SubscriptionGroupConfig, TopicConfig
from monitor.remoting.sync import run_sync
from monitor.sandbox.broker._common import InnerMessage
from monitor.sandbox.cluster import SandboxCluster

TOPICS = 10_000
GROUPS = 10_000
QUEUES = 4
CONCURRENCY = 500
# The slave copies its master every few seconds (SandboxCluster's slave_sync_interval); a generous bound for a
# loaded machine, only ever reached when the copy is broken.
SLAVE_DEADLINE = 60.0
LATE_TOPIC, LATE_GROUP = f"topic-{TOPICS - 1}", f"group-{GROUPS - 1}"


async def _create(admin: AsyncMQAdmin, addr: str) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def gated(call) -> None:
        async with gate:
            await call

    topics = (
        admin.create_and_update_topic_config(
            addr, TopicConfig(topic_name=f"topic-{n}", read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        )
        for n in range(TOPICS)
    )
    groups = (
        admin.create_and_update_subscription_group_config(addr, SubscriptionGroupConfig(group_name=f"group-{n}"))
        for n in range(GROUPS)
    )
    await asyncio.gather(*(gated(call) for call in (*topics, *groups)))


@pytest.fixture(scope="module")
def loaded():
    """The loaded cluster and an admin client; the tests only read it."""
    with SandboxCluster(brokers=1, slaves=True) as cluster:
        admin = MQAdmin(cluster.namesrv_addr, timeout=60.0, max_inflight=CONCURRENCY)
        try:
            run_sync(_create(admin.aio, cluster.broker().addr))
            yield cluster, admin
        finally:
            admin.close()


def _eventually(read, expected, timeout: float = SLAVE_DEADLINE):
    """``read()`` once it equals ``expected``, or its last value at the deadline (for the assertion to show)."""
    deadline = time.monotonic() + timeout
    while (value := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return value


def test_every_topic_and_group_is_on_the_master(loaded):
    cluster, admin = loaded
    master = cluster.broker().addr
    topics = admin.get_all_topic_config(master).topic_config_table
    created = {f"topic-{n}" for n in range(TOPICS)}
    assert created <= topics.keys()
    assert {(c.read_queue_nums, c.write_queue_nums) for name, c in topics.items() if name in created} == {
        (QUEUES, QUEUES)
    }
    groups = admin.get_all_subscription_group(master).subscription_group_table
    assert {f"group-{n}" for n in range(GROUPS)} <= groups.keys()


def test_every_topic_reached_the_name_server_with_its_route(loaded):
    """Creation answers only after the registration carrying the topic, however many were coalesced into one."""
    cluster, admin = loaded
    assert {f"topic-{n}" for n in range(TOPICS)} <= set(admin.fetch_all_topic_list().topic_list)
    route = admin.examine_topic_route_info(LATE_TOPIC)
    (queue_data,) = route.queue_datas
    assert (queue_data.broker_name, queue_data.read_queue_nums, queue_data.write_queue_nums) == (
        "broker-a",
        QUEUES,
        QUEUES,
    )
    (broker_data,) = route.broker_datas
    assert broker_data.broker_addrs == {0: cluster.broker().addr, 1: cluster.broker("broker-a", 1).addr}


def test_the_slave_copies_every_topic_and_group(loaded):
    cluster, admin = loaded
    master, slave = cluster.broker(), cluster.broker("broker-a", 1)
    topics = admin.get_all_topic_config(master.addr).topic_config_table
    groups = admin.get_all_subscription_group(master.addr).subscription_group_table
    slave_topics = _eventually(lambda: admin.get_all_topic_config(slave.addr).topic_config_table.keys(), topics.keys())
    assert slave_topics == topics.keys()
    slave_groups = _eventually(
        lambda: admin.get_all_subscription_group(slave.addr).subscription_group_table.keys(), groups.keys()
    )
    assert slave_groups == groups.keys()
    assert admin.get_all_topic_config(slave.addr).topic_config_table[LATE_TOPIC] == topics[LATE_TOPIC]


def test_consume_stats_of_a_late_group(loaded):
    cluster, admin = loaded
    master = cluster.broker()

    async def put(queue_id: int, count: int) -> None:
        for n in range(count):
            master.put_message(InnerMessage(topic=LATE_TOPIC, queue_id=queue_id, body=f"body {n}".encode()))

    for queue_id in range(QUEUES):
        master.run(put(queue_id, queue_id + 1))
    admin.update_consumer_offset(master.addr, LATE_GROUP, LATE_TOPIC, 2, 1)

    stats = admin.get_consume_stats(master.addr, LATE_GROUP)
    table = {mq.queue_id: (w.broker_offset, w.consumer_offset) for mq, w in stats.offset_table.items()}
    assert set(stats.offset_table) == {MessageQueue(LATE_TOPIC, "broker-a", q) for q in range(QUEUES)}
    assert table == {0: (1, 0), 1: (2, 0), 2: (3, 1), 3: (4, 0)}
    assert stats.total_diff == 1 + 2 + 3 + 4 - 1
    assert admin.query_topic_consume_by_who(master.addr, LATE_TOPIC).group_list == [LATE_GROUP]
    # The broker-wide view lists every group, the late one with its progress.
    everything = admin.fetch_consume_stats_in_broker(master.addr)
    by_group = {group: per_topic for entry in everything.consume_stats_list for group, per_topic in entry.items()}
    assert {f"group-{n}" for n in range(GROUPS)} <= by_group.keys()
    (late,) = by_group[LATE_GROUP]
    assert late.offset_table == stats.offset_table and everything.total_diff == stats.total_diff
