"""The SDK's queue lists match the C++ client's: where the real client's messages land for each queue index."""

from __future__ import annotations

import socket

import pytest
from rocketmq.client import Message
from rocketmq.client import Producer as RawProducer

from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, MQAdmin
from monitor.remoting.body import BrokerData, PermName, QueueData, TopicConfig, TopicRouteData
from monitor.sandbox.cluster import SandboxCluster
from monitor.sdk.routes import NoRoute, RouteTable, queue_brokers
from tests.support.factories import unique

RW, READ_ONLY = PermName.PERM_READ | PermName.PERM_WRITE, PermName.PERM_READ


@pytest.fixture(scope="module")
def cluster():
    """Three broker names, so that sorting by name is visible whatever order the name server lists them in."""
    with SandboxCluster(brokers=3) as sandbox:
        yield sandbox


def landed_per_queue(cluster, topic: str, queues: dict[str, int]) -> dict[tuple[str, int], int]:
    with MQAdmin(cluster.namesrv_addr) as admin:
        return {
            (broker, queue_id): admin.get_max_offset(cluster.broker(broker).addr, topic, queue_id)
            for broker, nums in queues.items()
            for queue_id in range(nums)
        }


def send_index_times(cluster, topic: str, size: int) -> list[int]:
    """With the raw client, send index+1 messages to each queue index; returns the queue counts it saw."""
    seen = []
    producer = RawProducer(unique("pg_route"))
    producer.set_namesrv_addr(cluster.namesrv_addr)
    producer.start()
    try:
        for index in range(size):
            for _ in range(index + 1):
                message = Message(topic)
                message.set_body(f"to queue index {index}")
                producer.send_orderly(
                    message, 0, retry_times=0, queue_selector=lambda n, _m, _a, i=index: seen.append(n) or i
                )
    finally:
        producer.shutdown()
    return seen


def expected_landing(brokers: tuple[str, ...]) -> dict[tuple[str, int], int]:
    """Queue index i carries i+1 messages; the n-th index of a broker is its queue id n."""
    landing, next_id = {}, {}
    for index, broker in enumerate(brokers):
        queue_id = next_id[broker] = next_id.get(broker, -1) + 1
        landing[broker, queue_id] = index + 1
    return landing


def test_queue_indexes_are_sorted_by_broker_name_as_the_cpp_client_numbers_them(cluster, make_topic):
    queues = {"broker-c": 2, "broker-a": 3, "broker-b": 5}
    topic = make_topic(queues)
    with MQAdmin(cluster.namesrv_addr) as admin:
        brokers = queue_brokers(admin.examine_topic_route_info(topic))
    assert brokers == ("broker-a",) * 3 + ("broker-b",) * 5 + ("broker-c",) * 2

    seen = send_index_times(cluster, topic, len(brokers))

    assert set(seen) == {len(brokers)}
    assert landed_per_queue(cluster, topic, queues) == expected_landing(brokers)


def test_an_order_topic_conf_sets_the_queue_order(cluster, make_topic):
    queues = {"broker-a": 3, "broker-b": 2}
    topic = make_topic(queues)
    with MQAdmin(cluster.namesrv_addr) as admin:
        admin.update_name_server_config({"orderMessageEnable": "true"})  # 4.9.4 sends orderTopicConf only then
        admin.put_kv_config(ORDER_TOPIC_NAMESPACE, topic, "broker-b:2;broker-a:3")
        brokers = queue_brokers(admin.examine_topic_route_info(topic))
    assert brokers == ("broker-b",) * 2 + ("broker-a",) * 3

    send_index_times(cluster, topic, len(brokers))

    assert landed_per_queue(cluster, topic, queues) == expected_landing(brokers)


def test_a_topic_the_name_server_does_not_know_is_sent_on_the_default_topics_queues(cluster):
    topic = unique("SdkAutoTopic")
    routes = RouteTable(cluster.namesrv_addr)
    try:
        brokers = routes.queues(topic)
    finally:
        routes.stop()
    # TBW102 has 8 queues on each master; a new topic gets at most 4 of them per broker.
    assert brokers == ("broker-a",) * 4 + ("broker-b",) * 4 + ("broker-c",) * 4

    send_index_times(cluster, topic, len(brokers))

    assert landed_per_queue(cluster, topic, {"broker-a": 4, "broker-b": 4, "broker-c": 4}) == expected_landing(brokers)


def test_read_only_queues_and_brokers_without_a_master_are_left_out():
    route = TopicRouteData(
        queue_datas=[
            QueueData("broker-c", 2, 2, RW),
            QueueData("broker-b", 4, 4, READ_ONLY),
            QueueData("broker-a", 1, 1, RW),
            QueueData("broker-d", 3, 3, RW),
        ],
        broker_datas=[
            BrokerData("C", "broker-a", {0: "127.0.0.1:1"}),
            BrokerData("C", "broker-b", {0: "127.0.0.1:2"}),
            BrokerData("C", "broker-c", {0: "127.0.0.1:3", 1: "127.0.0.1:4"}),
            BrokerData("C", "broker-d", {1: "127.0.0.1:5"}),
        ],
    )
    assert queue_brokers(route) == ("broker-a", "broker-c", "broker-c")


def test_older_queue_lists_stay_known_by_their_length_after_a_route_change(cluster, make_topic):
    topic = make_topic({"broker-a": 2, "broker-b": 2})
    routes = RouteTable(cluster.namesrv_addr)
    try:
        before = routes.queues(topic)
        make_more = {"broker-a": 3, "broker-b": 3}
        with MQAdmin(cluster.namesrv_addr) as admin:
            for broker, nums in make_more.items():
                config = TopicConfig(topic_name=topic, read_queue_nums=nums, write_queue_nums=nums)
                admin.create_and_update_topic_config(cluster.broker(broker).addr, config)
        after = routes.refresh(topic)
        assert routes.queues(topic) == after == ("broker-a",) * 3 + ("broker-b",) * 3
        assert routes.brokers_for_size(topic, 4) == before
        assert routes.brokers_for_size(topic, 6) == after
        assert routes.brokers_for_size(topic, 5) is None
    finally:
        routes.stop()


def test_an_unreachable_name_server_means_no_route():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{probe.getsockname()[1]}"
    routes = RouteTable(closed, timeout=1.0)
    try:
        with pytest.raises(NoRoute, match="No route info of this topic: AnyTopic"):
            routes.queues("AnyTopic")
    finally:
        routes.stop()
