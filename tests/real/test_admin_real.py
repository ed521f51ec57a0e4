"""Every MQAdmin method (monitor/remoting/admin/) against real RocketMQ 4.9.4 and 5.5.0 brokers and name servers.

Each cluster line gets one known traffic run with the real C++ client (tests/real/traffic.py): FIRST messages sent
and consumed by a push consumer group, then REST sent that the group never gets, producer and consumer left online.
The answers must decode and say what the run did: offsets as sent and consumed, the route on master and slave, the
clients as connected, the messages as stored. Where 5.5.0 answers differently (new fields such as pullOffset and
topicPutTps, getTransferredTps in the runtime table, server-side offset resets, SUBSCRIPTION_GROUP_NOT_EXIST) the
tests say what the client makes of it.

The methods that change the traffic group's state run last (pytest keeps this file's order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from monitor.remoting import body as b
from monitor.remoting.admin import DEFAULT_TOPIC, PullStatus, retry_topic
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError
from monitor.remoting.message import create_offset_msg_id
from stats import keys
from tests.real.traffic import FIRST, QUEUES, REST, TAG, client_offsets, committed, start_traffic
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CLUSTER = "DefaultCluster"
NAME = "AdminReal"
STATS_WAIT = 40.0  # the brokers sample their stats every 10 s


@pytest.fixture(scope="module", params=["4", "5"], ids=["4.9.4", "5.5.0"])
def real(request, tmp_path_factory):
    """The cluster after the run, with the brokers' stats of the run as first sampled (before their one-minute
    window lets the run go)."""
    cluster = request.getfixturevalue(f"rocketmq{request.param}")
    admin = cluster.admin(timeout=15.0)
    traffic = start_traffic(cluster, admin, NAME, tmp_path_factory.mktemp(f"cpp{request.param}"))
    master = cluster.broker().addr
    try:

        def sampled(name: str, key: str, count: int):
            def stats():
                data = admin.view_broker_stats_data(master, name, key)
                return data if data.stats_minute.sum == count else None

            return wait_for(stats, STATS_WAIT, f"{name} {key} sampled at {count}", interval=1.0)

        puts = sampled(keys.TOPIC_PUT_NUMS, keys.topic_key(traffic.topic), FIRST + REST)
        gets = sampled(keys.GROUP_GET_NUMS, keys.group_key(traffic.topic, traffic.group), FIRST)
        yield Real(request.param, cluster, admin, traffic, master, cluster.broker("broker-a", 1).addr, puts, gets)
    finally:
        traffic.stop()
        admin.close()


@dataclass
class Real:
    line: str
    cluster: Any
    admin: Any
    traffic: Any
    master: str
    slave: str
    puts: b.BrokerStatsData  # TOPIC_PUT_NUMS of the topic, GROUP_GET_NUMS of topic@group: as first sampled
    gets: b.BrokerStatsData

    @property
    def topic(self) -> str:
        return self.traffic.topic

    @property
    def group(self) -> str:
        return self.traffic.group

    def sent_per_queue(self) -> dict[int, int]:
        """Every queue's end offset: the broker's max offsets, which the consumed counts and REST must add up to."""
        stats = self.admin.get_topic_stats_info(self.master, self.topic).offset_table
        return {mq.queue_id: offset.max_offset for mq, offset in stats.items()}


def _code(call) -> int:
    with pytest.raises(RemotingError) as failure:
        call()
    return failure.value.code


# --- name server ----------------------------------------------------------------------------------------------------


def test_cluster_info_lists_master_and_slave_under_the_cluster(real):
    info = real.admin.examine_broker_cluster_info()
    assert set(info.cluster_addr_table[CLUSTER]) == {"broker-a"}
    data = info.broker_addr_table["broker-a"]
    assert (data.cluster, data.broker_addrs) == (CLUSTER, {0: real.master, 1: real.slave})


def test_topic_lists_and_route_show_the_run_on_both_brokers(real):
    """The route lists broker-a with master and slave and the topic's 4 read/write queues; a 5.5.0 name server adds
    enableActingMaster (false without a controller)."""
    names = real.admin.fetch_all_topic_list().topic_list
    assert {real.topic, retry_topic(real.group), DEFAULT_TOPIC} <= set(names)
    assert real.topic in real.admin.fetch_topics_by_cluster(CLUSTER).topic_list
    route = real.admin.examine_topic_route_info(real.topic)
    ((queues,), (broker,)) = route.queue_datas, route.broker_datas
    assert (queues.broker_name, queues.read_queue_nums, queues.write_queue_nums, queues.perm) == ("broker-a", 4, 4, 6)
    assert (broker.cluster, broker.broker_addrs) == (CLUSTER, {0: real.master, 1: real.slave})
    assert broker.enable_acting_master is (None if real.line == "4" else False)
    assert _code(lambda: real.admin.examine_topic_route_info(f"NoSuch{NAME}")) == ResponseCode.TOPIC_NOT_EXIST


def test_name_server_config_reads_back_an_update(real):
    (config,) = real.admin.get_name_server_config().values()
    assert config["listenPort"] == str(real.cluster.namesrv_port)
    before = config["productEnvName"]
    real.admin.update_name_server_config({"productEnvName": NAME})
    try:
        (config,) = real.admin.get_name_server_config().values()
        assert config["productEnvName"] == NAME
    finally:
        real.admin.update_name_server_config({"productEnvName": before})


def test_kv_config_round_trip(real):
    namespace = f"NS_{NAME}"
    assert real.admin.get_kv_config(namespace, "k") is None
    real.admin.put_kv_config(namespace, "k", "v 1")
    assert real.admin.get_kv_config(namespace, "k") == "v 1"
    assert real.admin.get_kv_list_by_namespace(namespace).table == {"k": "v 1"}
    real.admin.delete_kv_config(namespace, "k")
    assert real.admin.get_kv_config(namespace, "k") is None


# --- topics ---------------------------------------------------------------------------------------------------------


def test_topic_offsets_match_what_was_sent(real):
    """Each queue holds the messages the consumer got from it and its share of REST; max, min and the search by a
    message's store time agree with the message as the consumer received it. 5.5.0 adds the topic's put TPS."""
    table = real.admin.get_topic_stats_info(real.master, real.topic)
    merged = real.admin.examine_topic_stats(real.topic)
    assert merged.offset_table == table.offset_table
    ends = real.sent_per_queue()
    assert sorted(ends) == list(range(QUEUES)) and sum(ends.values()) == FIRST + REST
    consumed = real.traffic.consumed_per_queue()
    assert all(ends[q] >= consumed[q] for q in ends)
    for q in range(QUEUES):
        assert real.admin.get_max_offset(real.master, real.topic, q) == ends[q]
        assert real.admin.get_min_offset(real.master, real.topic, q) == 0
    assert all(o.last_update_timestamp > 0 and o.min_offset == 0 for o in table.offset_table.values())
    if real.line == "4":
        assert merged.topic_put_tps is None
    else:
        assert merged.topic_put_tps >= 0.0
    by_time = {}
    for r in real.traffic.received:
        by_time.setdefault((r["queue"], r["store_timestamp"]), []).append(r["offset"])
    (queue, stamp), (offset,) = next(((k, v) for k, v in sorted(by_time.items()) if len(v) == 1))
    assert real.admin.search_offset(real.master, real.topic, queue, stamp) == offset


def test_created_topic_shows_in_route_and_config_and_deleting_removes_it(real):
    topic = f"TopicCreated{NAME}"
    config = b.TopicConfig(topic_name=topic, read_queue_nums=2, write_queue_nums=3, perm=4)
    real.admin.create_and_update_topic_config(real.master, config)
    stored = real.admin.get_all_topic_config(real.master).topic_config_table[topic]
    assert (stored.read_queue_nums, stored.write_queue_nums, stored.perm) == (2, 3, 4)
    route = real.admin.examine_topic_route_info(topic)
    assert [(q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [(2, 3, 4)]
    assert real.admin.get_all_topic_config(real.master).topic_config_table[real.topic].write_queue_nums == QUEUES

    real.admin.delete_topic_in_broker([real.master], topic)
    assert topic not in real.admin.get_all_topic_config(real.master).topic_config_table
    real.admin.delete_topic_in_name_server(topic, CLUSTER)
    assert _code(lambda: real.admin.examine_topic_route_info(topic)) == ResponseCode.TOPIC_NOT_EXIST
    if real.line == "4":  # a 4.9.4 slave refuses changes; a 5.5.0 slave takes the deletion
        assert _code(lambda: real.admin.delete_topic_in_broker([real.slave], topic)) == ResponseCode.SYSTEM_ERROR
    else:
        real.admin.delete_topic_in_broker([real.slave], topic)
        assert topic not in real.admin.get_all_topic_config(real.slave).topic_config_table


# --- subscription groups --------------------------------------------------------------------------------------------


def test_subscription_group_is_created_read_and_deleted_with_its_offsets(real):
    """Deleting with remove_offset removes the group and its committed offsets on both lines (4.x reads
    removeOffset, 5.x cleanOffset; without it a 5.5.0 broker looks the deleted group up, which creates it again)."""
    group = f"cg_Created{NAME}"
    config = b.SubscriptionGroupConfig(group_name=group, consume_enable=False, retry_queue_nums=2, retry_max_times=5)
    real.admin.create_and_update_subscription_group_config(real.master, config)
    table = real.admin.get_all_subscription_group(real.master).subscription_group_table
    assert table[group] == config
    assert table[real.group].consume_enable is False  # the traffic switched its consumption off
    real.admin.update_consumer_offset(real.master, group, real.topic, 0, 1)
    # Without a topic the broker reports every queue of the topics the group has an offset on.
    stats = real.admin.get_consume_stats(real.master, group).offset_table
    assert {(mq.topic, mq.queue_id): w.consumer_offset for mq, w in stats.items()} == {
        (real.topic, q): int(q == 0) for q in range(QUEUES)
    }

    real.admin.delete_subscription_group(real.master, group, remove_offset=True)
    assert group not in real.admin.get_all_subscription_group(real.master).subscription_group_table
    assert real.admin.get_consume_stats(real.master, group).offset_table == {}


# --- brokers --------------------------------------------------------------------------------------------------------


def test_broker_runtime_stats_decode_on_both_lines(real):
    """The runtime table as BrokerRuntimeInfo: the version, the run's puts, the out TPS under either spelling
    (5.5.0 writes getTransferredTps), and on 5.5.0 the activation and the ack pool."""
    master = b.BrokerRuntimeInfo.from_kvtable(real.admin.fetch_broker_runtime_stats(real.master))
    slave = b.BrokerRuntimeInfo.from_kvtable(real.admin.fetch_broker_runtime_stats(real.slave))
    assert master.broker_version_desc == slave.broker_version_desc == ("V4_9_4" if real.line == "4" else "V5_5_0")
    assert master.msg_put_total_today_now >= FIRST + REST
    assert master.commit_log_max_offset > 0 and master.runtime_seconds > 0
    for info in (master, slave):
        assert info.put_tps >= 0.0 and info.get_transfered_tps >= 0.0
    if real.line == "4":
        assert master.broker_version == 401 and master.broker_active is None
        assert master.ack_thread_pool_queue_size is None and master.timer_read_behind is None
    else:
        assert master.broker_version is None and (master.broker_active, slave.broker_active) == (True, False)
        assert master.ack_thread_pool_queue_size >= 0 and master.timer_read_behind >= 0


def test_broker_config_reads_back_an_update(real):
    config = real.admin.get_broker_config(real.master)
    assert (config["brokerName"], config["brokerRole"], config["listenPort"]) == (
        "broker-a",
        "ASYNC_MASTER",
        real.master.rsplit(":", 1)[1],
    )
    assert real.admin.get_broker_config(real.slave)["brokerRole"] == "SLAVE"
    before = config["flushIntervalCommitLog"]
    real.admin.update_broker_config(real.master, {"flushIntervalCommitLog": "600"})
    try:
        assert real.admin.get_broker_config(real.master)["flushIntervalCommitLog"] == "600"
    finally:
        real.admin.update_broker_config(real.master, {"flushIntervalCommitLog": before})


def test_broker_stats_count_the_run(real):
    """The brokers' per-minute windows as sampled after the run: every message put, the first ones got."""
    assert real.puts.stats_minute.sum == FIRST + REST and real.gets.stats_minute.sum == FIRST
    assert real.puts.stats_minute.tps >= 0.0
    code = _code(lambda: real.admin.view_broker_stats_data(real.master, keys.TOPIC_PUT_NUMS, f"NoSuch{NAME}"))
    assert code == ResponseCode.SYSTEM_ERROR


# --- consumers ------------------------------------------------------------------------------------------------------


def test_consume_stats_show_what_was_consumed(real):
    """Per queue: the broker's end, the group's commit (what the consumer got from that queue), REST behind in all.
    A 5.5.0 broker also reports where the group's pulls have got to (pullOffset), so inflight is known."""
    consumed, ends = real.traffic.consumed_per_queue(), real.sent_per_queue()
    stats = real.admin.get_consume_stats(real.master, real.group, real.topic)
    assert {mq.queue_id: (w.broker_offset, w.consumer_offset) for mq, w in stats.offset_table.items()} == {
        q: (ends[q], consumed[q]) for q in range(QUEUES)
    }
    assert stats.total_diff == REST
    for w in stats.offset_table.values():
        assert w.last_timestamp > 0
        if real.line == "4":
            assert w.pull_offset is None and w.inflight is None
        else:
            assert w.pull_offset >= w.consumer_offset and w.inflight >= 0
    examined = real.admin.examine_consume_stats(real.group)
    assert {mq: w for mq, w in examined.offset_table.items() if mq.topic == real.topic} == stats.offset_table
    by_group = real.admin.fetch_consume_stats_in_broker(real.master).by_group()
    (mine,) = [s for s in by_group[real.group] if any(mq.topic == real.topic for mq in s.offset_table)]
    assert {mq: w.consumer_offset for mq, w in mine.offset_table.items()} == {
        mq: w.consumer_offset for mq, w in stats.offset_table.items()
    }
    for q in range(QUEUES):
        assert real.admin.query_consumer_offset(real.master, real.group, real.topic, q) == consumed[q]
    assert real.group in real.admin.query_topic_consume_by_who(real.master, real.topic).group_list


def test_connections_show_the_online_cpp_clients(real):
    """One C++ client instance runs the producer and the consumer; it is connected to the master under both
    groups, subscribed to the topic and its retry topic."""
    connection = real.admin.get_consumer_connection_list(real.master, real.group)
    ((client,),) = (connection.connection_set,)
    assert (client.language, client.version) == ("CPP", 63)  # V3_1_8: what rocketmq-client-cpp 2.x reports
    assert set(connection.subscription_table) == {real.topic, retry_topic(real.group)}
    assert connection.subscription_table[real.topic].sub_string == "*"
    assert (connection.consume_type, connection.message_model) == (
        b.ConsumeType.CONSUME_PASSIVELY,
        b.MessageModel.CLUSTERING,
    )
    assert real.admin.examine_consumer_connection_info(real.group) == connection
    assert real.admin.get_consumer_id_list_by_group(real.master, real.group) == [client.client_id]
    producers = real.admin.examine_producer_connection_info(real.traffic.producer_group, real.topic).connection_set
    assert [(p.client_id, p.language) for p in producers] == [(client.client_id, "CPP")]
    nobody = f"cg_Nobody{NAME}"
    assert _code(lambda: real.admin.get_consumer_connection_list(real.master, nobody)) == (
        ResponseCode.CONSUMER_NOT_ONLINE
    )


def test_consumer_running_info_comes_from_the_client(real):
    """The broker relays the request to the C++ client: its queues with what it consumed from each, its
    subscriptions, its properties; a "no offset yet" it writes unsigned comes out as -1."""
    (client,) = real.admin.examine_consumer_connection_info(real.group).connection_set

    def info_with_retry_queue():
        """The client holds its retry queue once it has the retry topic's route (it asks every 30 s) and has
        rebalanced (every 20 s): on 5.5.0 the route may come after the run."""
        info = real.admin.get_consumer_running_info(real.group, client.client_id)
        return info if any(mq.topic == retry_topic(real.group) for mq in info.mq_table) else None

    info = wait_for(info_with_retry_queue, 90, "the client holding its retry queue", interval=2.0)
    assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert {sd.topic for sd in info.subscription_set} == {real.topic, retry_topic(real.group)}
    offsets = {mq.queue_id: pq.commit_offset for mq, pq in info.mq_table.items() if mq.topic == real.topic}
    assert offsets == real.traffic.consumed_per_queue()
    # Its retry queue: a 4.9.4 broker gave it offset 0, a 5.5.0 broker none, which the client writes as 2**64 - 1.
    (retry,) = [pq.commit_offset for mq, pq in info.mq_table.items() if mq.topic == retry_topic(real.group)]
    assert retry == (0 if real.line == "4" else -1)


# --- messages -------------------------------------------------------------------------------------------------------


def test_query_by_key_view_by_offset_id_and_pull_find_the_message(real):
    first = real.traffic.received[0]
    (found,) = real.admin.query_message(real.topic, first["key"])
    assert (found.queue_id, found.queue_offset, found.commit_log_offset) == (
        first["queue"],
        first["offset"],
        first["commit_log_offset"],
    )
    assert (found.body.decode(), found.tags, found.keys, found.store_host) == (
        first["body"],
        TAG,
        [first["key"]],
        real.master,
    )
    assert found.uniq_key == next(sent["id"] for sent in real.traffic.sent if sent["key"] == first["key"])
    offset_id = create_offset_msg_id(real.master, first["commit_log_offset"])
    assert found.msg_id == offset_id
    viewed = real.admin.view_message(offset_id)
    assert (viewed.body.decode(), viewed.uniq_key, viewed.queue_offset) == (
        first["body"],
        found.uniq_key,
        first["offset"],
    )

    pulled = real.admin.pull_message(real.master, real.topic, first["queue"], first["offset"], 1)
    assert pulled.status is PullStatus.FOUND and [m.body for m in pulled.messages] == [found.body]
    end = real.sent_per_queue()[first["queue"]]
    at_end = real.admin.pull_message(real.master, real.topic, first["queue"], end, 1)
    assert (at_end.status, at_end.max_offset, at_end.messages) == (PullStatus.NO_NEW_MSG, end, [])
    beyond = real.admin.pull_message(real.master, real.topic, first["queue"], end + 100, 1)
    assert (beyond.status, beyond.next_begin_offset) == (PullStatus.OFFSET_ILLEGAL, end)


# --- resets (these change the groups' offsets) ----------------------------------------------------------------------


def test_offline_group_offsets_are_committed_and_rewritten_by_time(real):
    """A group with no client: commit offsets directly, then the old reset (mqadmin's resetOffsetByTimeOld) moves
    every queue to the offset the broker finds for a time between the first messages."""
    group = f"cg_Offline{NAME}"
    real.admin.create_and_update_subscription_group_config(real.master, b.SubscriptionGroupConfig(group_name=group))
    for q in range(QUEUES):
        real.admin.update_consumer_offset(real.master, group, real.topic, q, 1)
    stats = real.admin.get_consume_stats(real.master, group, real.topic)
    assert {mq.queue_id: w.consumer_offset for mq, w in stats.offset_table.items()} == dict.fromkeys(range(QUEUES), 1)

    # Without a retry topic the group's brokers are found through the topic (with the topic given).
    examined = real.admin.examine_consume_stats(group, real.topic).offset_table
    assert {mq.queue_id: w.consumer_offset for mq, w in examined.items()} == dict.fromkeys(range(QUEUES), 1)
    assert _code(lambda: real.admin.examine_consume_stats(group)) == ResponseCode.TOPIC_NOT_EXIST

    stamp = sorted(r["store_timestamp"] for r in real.traffic.received)[FIRST // 2]
    expected = {q: real.admin.search_offset(real.master, real.topic, q, stamp) for q in range(QUEUES)}
    rollbacks = real.admin.reset_offset_by_timestamp_old(group, real.topic, stamp)
    assert {(r.queue_id, r.consumer_offset, r.rollback_offset) for r in rollbacks} == {
        (q, 1, expected[q]) for q in range(QUEUES)
    }
    for q in range(QUEUES):
        assert real.admin.query_consumer_offset(real.master, group, real.topic, q) == expected[q]


def test_reset_offset_moves_the_online_cpp_group(real):
    """To 0 for the online C++ consumer. 4.9.4: the broker tells the client in the C++ layout (cplus), the client
    commits the new offsets. 5.5.0: the broker resets on its side and refuses the client's commits until its next
    pull. A group the broker does not know: SYSTEM_ERROR on 4.9.4, SUBSCRIPTION_GROUP_NOT_EXIST on 5.5.0."""
    table = real.admin.reset_offset_by_timestamp(real.topic, real.group, 0, cplus=True)
    assert {mq.queue_id: offset for mq, offset in table.items()} == dict.fromkeys(range(QUEUES), 0)
    wait_for(lambda: committed(real.admin, real.group, real.topic) == 0, 60, "the group reset to 0")
    if real.line == "4":  # the client itself holds 0 now, so its next commits keep the reset
        at_zero = dict.fromkeys(range(QUEUES), 0)
        wait_for(lambda: client_offsets(real.admin, real.group, real.topic) == at_zero, 30, "the client at 0")
    unknown = f"cg_Unknown{NAME}"
    code = _code(lambda: real.admin.reset_offset_by_timestamp(real.topic, unknown, 0))
    assert code == (ResponseCode.SYSTEM_ERROR if real.line == "4" else ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
