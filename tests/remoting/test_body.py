"""Specification of monitor.remoting.body against real RocketMQ 4.9.4 captures.

Every fixture body is decoded into its typed object and checked against the figures in the capture. Bodies
written by Java (brokers, name servers, the Java client) must come back byte for byte from ``encode()``, because a
sandbox broker answers with it. Bodies written by the C++ client (jsoncpp, enum ordinals, numbers as strings) only
have to decode. Broken bodies raise ProtocolError, never a bare Python error.
"""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.remoting import fastjson
from monitor.remoting.body import (
    BrokerData,
    BrokerRuntimeInfo,
    BrokerStatsData,
    ClusterInfo,
    Connection,
    ConsumeFromWhere,
    ConsumerConnection,
    ConsumerData,
    ConsumerOffsetSerializeWrapper,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatsList,
    ConsumeStatus,
    ConsumeType,
    DataVersion,
    DelayOffsetSerializeWrapper,
    GetConsumerListByGroupResponseBody,
    GroupList,
    HeartbeatData,
    KVTable,
    MessageModel,
    MessageQueue,
    OffsetWrapper,
    PermName,
    ProcessQueueInfo,
    ProducerConnection,
    ProducerData,
    QueueData,
    RegisterBrokerBody,
    ResetOffsetBody,
    SubscriptionData,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
    format_properties,
    parse_properties,
)
from monitor.remoting.errors import ProtocolError

FIXTURES = Path("/work/shared/fixtures/rocketmq-4.9")
MASTER, SLAVE = "127.0.0.1:10911", "127.0.0.1:11911"


def body(name: str, side: str = "response") -> bytes:
    return json.loads((FIXTURES / f"{name}.json").read_text())[side]["body_text"].encode()


def mq(queue_id: int, topic: str = "TopicTest") -> MessageQueue:
    return MessageQueue(topic, "broker-a", queue_id)


# --- route ------------------------------------------------------------------------------------------------------------


def test_cluster_info_maps_broker_names_to_member_addresses_by_broker_id():
    info = ClusterInfo.decode(body("GET_BROKER_CLUSTER_INFO"))

    broker = info.broker_addr_table["broker-a"]
    assert broker == BrokerData("DefaultCluster", "broker-a", {0: MASTER, 1: SLAVE})
    assert broker.master_addr == MASTER
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}


def test_cluster_info_after_the_slave_stopped_lists_only_the_master():
    info = ClusterInfo.decode(body("GET_BROKER_CLUSTER_INFO_after_slave_stop"))

    assert info.broker_addr_table["broker-a"].broker_addrs == {0: MASTER}


def test_broker_without_a_master_has_no_master_addr():
    assert BrokerData("c", "b", {1: SLAVE}).master_addr is None


def test_route_data_reads_quoted_and_unquoted_broker_ids_alike():
    standard = TopicRouteData.decode(body("GET_ROUTEINFO_BY_TOPIC"))
    plain = TopicRouteData.decode(body("GET_ROUTEINFO_BY_TOPIC_old_client_version"))

    assert standard == plain
    assert standard.broker_datas == [BrokerData("DefaultCluster", "broker-a", {0: MASTER, 1: SLAVE})]
    assert standard.queue_datas == [QueueData("broker-a", 8, 8, 6, 0)]
    assert standard.filter_server_table == {}
    assert standard.order_topic_conf is None


def test_route_data_encodes_like_the_name_server_for_new_and_old_clients():
    route = TopicRouteData.decode(body("GET_ROUTEINFO_BY_TOPIC"))

    assert route.encode(standard_json=True) == body("GET_ROUTEINFO_BY_TOPIC")
    assert route.encode() == body("GET_ROUTEINFO_BY_TOPIC_old_client_version")


def test_standard_json_route_sorts_maps_quotes_ids_and_escapes_like_browser_compatible_fastjson():
    route = TopicRouteData(
        broker_datas=[BrokerData("集群/a", "b", {10: "x", 2: "y"})],
        filter_server_table={"b": [], "a": ["f"]},
    )

    text = route.encode(standard_json=True).decode()

    assert text.startswith('{"brokerDatas":[{"brokerAddrs":{"2":"y","10":"x"},"brokerName":"b",')
    assert '"cluster":"\\u96C6\\u7FA4\\/a"' in text
    assert '"filterServerTable":{"a":["f"],"b":[]}' in text
    assert TopicRouteData.decode(text.encode()) == route


def test_topic_list_keeps_the_name_server_order():
    topics = TopicList.decode(body("GET_ALL_TOPIC_LIST_FROM_NAMESERVER"))

    assert len(topics.topic_list) == 11
    assert topics.topic_list[:2] == ["SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC"]
    assert topics.broker_addr is None


def test_topic_config_table_carries_queue_counts_permissions_and_version():
    wrapper = TopicConfigSerializeWrapper.decode(body("GET_ALL_TOPIC_CONFIG"))

    assert len(wrapper.topic_config_table) == 12
    assert wrapper.topic_config_table["TopicTest"] == TopicConfig("TopicTest", 8, 8, 6, TopicFilterType.SINGLE_TAG)
    assert wrapper.topic_config_table["TBW102"].perm_text == "RWX"
    assert wrapper.data_version == DataVersion(timestamp=1795308820419, counter=5)


def test_topic_config_defaults_are_rocketmqs():
    config = TopicConfig.from_wire({"topicName": "t"})

    assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (16, 16, 6)
    assert (config.topic_filter_type, config.topic_sys_flag, config.order) == (TopicFilterType.SINGLE_TAG, 0, False)
    assert config.readable and config.writeable


@pytest.mark.parametrize(("perm", "text"), [(0, "---"), (2, "-W-"), (4, "R--"), (6, "RW-"), (7, "RWX"), (1, "--X")])
def test_perm_name_text_reads_read_write_inherit(perm, text):
    assert PermName.perm_to_string(perm) == text
    assert PermName.is_readable(perm) == ("R" in text)
    assert PermName.is_writeable(perm) == ("W" in text)
    assert PermName.is_inherited(perm) == ("X" in text)


def test_register_broker_body_carries_the_brokers_topic_table():
    registration = RegisterBrokerBody.decode(body("REGISTER_BROKER", "request"))

    wrapper = registration.topic_config_serialize_wrapper
    assert registration.filter_server_list == []
    assert wrapper.data_version.counter == 7
    assert wrapper.topic_config_table["BenchmarkTest"].read_queue_nums == 1024


# --- subscription groups, offsets, membership -------------------------------------------------------------------------


def test_subscription_group_request_body_has_every_setting():
    group = SubscriptionGroupConfig.decode(body("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", "request"))

    assert group == SubscriptionGroupConfig(
        group_name="cg_test",
        consume_enable=True,
        consume_from_min_enable=False,
        consume_broadcast_enable=False,
        retry_queue_nums=1,
        retry_max_times=16,
        broker_id=0,
        which_broker_when_consume_slowly=1,
        notify_consumer_ids_changed_enable=True,
    )


def test_subscription_group_wrapper_lists_groups_including_the_empty_name_cpp_producers_create():
    wrapper = SubscriptionGroupWrapper.decode(body("GET_ALL_SUBSCRIPTIONGROUP_CONFIG"))

    assert len(wrapper.subscription_group_table) == 9
    assert wrapper.subscription_group_table[""].group_name == ""
    assert wrapper.subscription_group_table["cg_test"].consume_broadcast_enable is False
    assert wrapper.data_version == DataVersion(timestamp=1795308789996, counter=2)


def test_missing_subscription_group_settings_take_rocketmq_defaults():
    assert SubscriptionGroupConfig.from_wire({"groupName": "g"}) == SubscriptionGroupConfig(group_name="g")
    assert SubscriptionGroupConfig().consume_enable and SubscriptionGroupConfig().retry_max_times == 16


def test_consumer_offset_table_is_keyed_by_topic_at_group_then_queue_id():
    offsets = ConsumerOffsetSerializeWrapper.decode(body("GET_ALL_CONSUMER_OFFSET"))

    assert offsets.offset_table["TopicTest@cg_test"][0] == 1181
    assert offsets.offset_table["%RETRY%cg_test@cg_test"] == {0: 680}


def test_delay_offset_table_is_keyed_by_delay_level():
    assert DelayOffsetSerializeWrapper.decode(body("GET_ALL_DELAY_OFFSET")).offset_table == {3: 684}


def test_group_list_and_consumer_id_list():
    assert GroupList.decode(body("QUERY_TOPIC_CONSUME_BY_WHO")).group_list == ["cg_test"]
    ids = GetConsumerListByGroupResponseBody.decode(body("GET_CONSUMER_LIST_BY_GROUP")).consumer_id_list
    assert ids == ["28364-127.0.0.1@DEFAULT", "127.0.0.1@28238#7787385373909"]


def test_reset_offset_body_maps_message_queues_to_new_offsets_as_broker_and_client_see_them():
    reset = ResetOffsetBody.decode(body("INVOKE_BROKER_TO_RESET_OFFSET"))

    assert len(reset.offset_table) == 8
    assert reset.offset_table[mq(4)] == 904
    assert reset == ResetOffsetBody.decode(body("RESET_CONSUMER_CLIENT_OFFSET_broker_to_client", "request"))


# --- stats ------------------------------------------------------------------------------------------------------------


def test_consume_stats_have_one_offset_per_queue_and_the_groups_tps():
    stats = ConsumeStats.decode(body("GET_CONSUME_STATS"))

    assert len(stats.offset_table) == 9
    retry = stats.offset_table[mq(0, "%RETRY%cg_test")]
    assert retry == OffsetWrapper(broker_offset=461, consumer_offset=461, last_timestamp=1795308865274)
    assert stats.offset_table[mq(4)].broker_offset == 653
    assert stats.consume_tps == 27.683333333333334
    assert stats.total_diff == 0


def test_consume_stats_of_a_group_that_never_consumed_are_empty():
    stats = ConsumeStats.decode(body("GET_CONSUME_STATS_unknown_group"))

    assert stats == ConsumeStats(offset_table={}, consume_tps=0.0)
    assert stats.total_diff == 0


def test_lag_is_broker_offset_minus_consumer_offset():
    stats = ConsumeStats({mq(0): OffsetWrapper(10, 4, 0), mq(1): OffsetWrapper(7, 7, 0)})

    assert stats.offset_table[mq(0)].lag == 6
    assert stats.total_diff == 6


def test_message_queues_sort_by_topic_broker_then_queue_id_and_key_as_objects():
    queues = [MessageQueue("b", "broker-a", 0), MessageQueue("a", "broker-b", 0), MessageQueue("a", "broker-a", 10)]

    assert sorted(queues) == [queues[2], queues[1], queues[0]]
    assert isinstance(mq(3).to_wire_key(), fastjson.ObjectKey)
    assert dict(mq(3).to_wire_key()) == {"brokerName": "broker-a", "queueId": 3, "topic": "TopicTest"}
    assert {mq(3): 1}[MessageQueue("TopicTest", "broker-a", 3)] == 1


def test_topic_stats_table_has_min_and_max_offset_per_queue():
    table = TopicStatsTable.decode(body("GET_TOPIC_STATS_INFO"))

    assert sorted(table.offset_table) == [mq(i) for i in range(8)]
    assert table.offset_table[mq(4)].max_offset == 653
    assert table.offset_table[mq(4)].min_offset == 0
    assert table.offset_table[mq(4)].last_update_timestamp == 1795308855244


def test_broker_consume_stats_list_single_entry_maps_per_group():
    stats = ConsumeStatsList.decode(body("GET_BROKER_CONSUME_STATS"))

    by_group = stats.by_group()
    assert stats.broker_addr == MASTER
    assert len(stats.consume_stats_list) == 9
    assert by_group[""] == [] and by_group["TOOLS_CONSUMER"] == []
    retry, topic = by_group["cg_test"]
    assert retry.consume_tps == 0.23333333333333334
    assert len(topic.offset_table) == 8
    assert stats.total_diff == 6 == retry.total_diff + topic.total_diff


def test_broker_stats_data_has_minute_hour_and_day_windows():
    stats = BrokerStatsData.decode(body("VIEW_BROKER_STATS_DATA_GROUP_GET_NUMS"))

    assert (stats.stats_minute.sum, stats.stats_minute.tps, stats.stats_minute.avgpt) == (590, 9.833333333333334, 1.0)
    assert stats.stats_hour.sum == 6292
    assert stats.stats_day.sum == 0 and stats.stats_day.tps == 0.0


# --- connections and clients ------------------------------------------------------------------------------------------


def test_consumer_connection_lists_java_and_cpp_clients_with_the_groups_subscription():
    conn = ConsumerConnection.decode(body("GET_CONSUMER_CONNECTION_LIST"))

    assert conn.connection_set == [
        Connection("127.0.0.1@28238#7787385373909", "127.0.0.1:39294", "JAVA", 401),
        Connection("28364-127.0.0.1@DEFAULT", "127.0.0.1:39302", "CPP", 63),
    ]
    assert conn.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert conn.message_model is MessageModel.CLUSTERING
    assert conn.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    assert conn.subscription_table["TopicTest"] == SubscriptionData(
        topic="TopicTest", sub_string="*", sub_version=1795308822918
    )


def test_producer_connection_lists_the_cpp_producer():
    conn = ProducerConnection.decode(body("GET_PRODUCER_CONNECTION_LIST"))

    assert conn.connection_set == [Connection("31942-127.0.0.1@DEFAULT", "127.0.0.1:49870", "CPP", 63)]


def test_java_consumer_running_info():
    info = ConsumerRunningInfo.decode(body("GET_CONSUMER_RUNNING_INFO"))

    assert sorted(info.mq_table) == [mq(0, "%RETRY%cg_test"), mq(0), mq(1), mq(2), mq(3)]
    queue = info.mq_table[mq(0, "%RETRY%cg_test")]
    assert (queue.commit_offset, queue.dropped, queue.locked, queue.cached_msg_size_in_mib) == (461, False, False, 0)
    assert info.status_table["TopicTest"] == ConsumeStatus(
        pull_rt=128.52545454545455,
        pull_tps=10.0,
        consume_rt=0.0016666666666666668,
        consume_ok_tps=9.0,
        consume_failed_tps=1.0,
        consume_failed_msgs=0,
    )
    assert info.properties["PROP_CLIENT_VERSION"] == "V4_9_4"
    assert [sub.topic for sub in info.subscription_set] == ["%RETRY%cg_test", "TopicTest"]
    assert info.jstack is None


@pytest.mark.parametrize(
    "name", ["GET_CONSUMER_RUNNING_INFO_cpp_client", "GET_CONSUMER_RUNNING_INFO_broker_to_cpp_client"]
)
def test_cpp_consumer_running_info_in_jsoncpp_style_decodes(name):
    info = ConsumerRunningInfo.decode(body(name))

    assert sorted(info.mq_table) == [mq(4), mq(5), mq(6), mq(7)]
    queue = info.mq_table[mq(4)]
    assert (queue.cached_msg_max_offset, queue.commit_offset, queue.cached_msg_size_in_mib) == (652, 653, 0)
    assert info.mq_table[mq(7)].last_lock_timestamp == 0
    assert info.properties["PROP_CLIENT_VERSION"] == "V3_1_8"
    assert info.subscription_set[1] == SubscriptionData(topic="TopicTest", sub_string="*", sub_version=1795308822898)
    assert info.jstack == ""
    assert info.status_table == {}


def test_cpp_garbage_long_is_kept_as_the_number_it_claims_to_be():
    info = ConsumerRunningInfo.decode(body("GET_CONSUMER_RUNNING_INFO_cpp_client"))

    assert info.mq_table[mq(4)].last_lock_timestamp == 8243112819376136762


def test_java_heartbeat_names_its_enums():
    heartbeat = HeartbeatData.decode(body("HEART_BEAT", "request"))

    assert heartbeat.client_id == "127.0.0.1@28238#7787385373909"
    assert heartbeat.producer_data_set == [ProducerData("CLIENT_INNER_PRODUCER")]
    (consumer,) = heartbeat.consumer_data_set
    assert consumer.group_name == "cg_test"
    assert consumer.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert consumer.message_model is MessageModel.CLUSTERING
    assert consumer.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert [sub.sub_version for sub in consumer.subscription_data_set] == [1795308820083, 1795308820086]


def test_cpp_heartbeat_uses_enum_ordinals_string_versions_and_a_trailing_newline():
    raw = body("HEART_BEAT_cpp_client", "request")
    heartbeat = HeartbeatData.decode(raw)

    assert raw.endswith(b"}\n")
    assert heartbeat.client_id == "28364-127.0.0.1@DEFAULT"
    assert heartbeat.producer_data_set == []
    assert heartbeat.consumer_data_set == [
        ConsumerData(
            group_name="cg_test",
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            subscription_data_set=[
                SubscriptionData(topic="%RETRY%cg_test", sub_string="*", sub_version=1795308822898),
                SubscriptionData(topic="TopicTest", sub_string="*", sub_version=1795308822898),
            ],
        )
    ]


# --- byte-exact round trips of Java-written bodies --------------------------------------------------------------------

JAVA_BODIES = [
    ("GET_ALL_CONSUMER_OFFSET", "response", ConsumerOffsetSerializeWrapper),
    ("GET_ALL_DELAY_OFFSET", "response", DelayOffsetSerializeWrapper),
    ("GET_ALL_SUBSCRIPTIONGROUP_CONFIG", "response", SubscriptionGroupWrapper),
    ("GET_ALL_TOPIC_CONFIG", "response", TopicConfigSerializeWrapper),
    ("GET_ALL_TOPIC_LIST_FROM_NAMESERVER", "response", TopicList),
    ("GET_BROKER_CLUSTER_INFO", "response", ClusterInfo),
    ("GET_BROKER_CLUSTER_INFO_after_slave_stop", "response", ClusterInfo),
    ("GET_BROKER_CLUSTER_INFO_rocketmq_serialize", "response", ClusterInfo),
    ("GET_BROKER_CONSUME_STATS", "response", ConsumeStatsList),
    ("GET_BROKER_RUNTIME_INFO", "response", KVTable),
    ("GET_BROKER_RUNTIME_INFO_slave", "response", KVTable),
    ("GET_CONSUMER_CONNECTION_LIST", "response", ConsumerConnection),
    ("GET_CONSUMER_LIST_BY_GROUP", "response", GetConsumerListByGroupResponseBody),
    ("GET_CONSUMER_LIST_BY_GROUP_cpp_client", "response", GetConsumerListByGroupResponseBody),
    ("GET_CONSUMER_RUNNING_INFO", "response", ConsumerRunningInfo),
    ("GET_CONSUMER_RUNNING_INFO_broker_to_java_client", "response", ConsumerRunningInfo),
    ("GET_CONSUME_STATS", "response", ConsumeStats),
    ("GET_CONSUME_STATS_unknown_group", "response", ConsumeStats),
    ("GET_PRODUCER_CONNECTION_LIST", "response", ProducerConnection),
    ("GET_ROUTEINFO_BY_TOPIC_old_client_version", "response", TopicRouteData),
    ("GET_TOPIC_STATS_INFO", "response", TopicStatsTable),
    ("HEART_BEAT", "request", HeartbeatData),
    ("INVOKE_BROKER_TO_RESET_OFFSET", "response", ResetOffsetBody),
    ("QUERY_TOPIC_CONSUME_BY_WHO", "response", GroupList),
    ("REGISTER_BROKER", "request", RegisterBrokerBody),
    ("REGISTER_BROKER_slave", "request", RegisterBrokerBody),
    ("RESET_CONSUMER_CLIENT_OFFSET_broker_to_client", "request", ResetOffsetBody),
    ("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", "request", SubscriptionGroupConfig),
    ("VIEW_BROKER_STATS_DATA_GROUP_GET_NUMS", "response", BrokerStatsData),
    ("VIEW_BROKER_STATS_DATA_GROUP_GET_NUMS_mqadmin_statsAll", "response", BrokerStatsData),
    ("VIEW_BROKER_STATS_DATA_GROUP_GET_SIZE", "response", BrokerStatsData),
    ("VIEW_BROKER_STATS_DATA_SNDBCK_PUT_NUMS", "response", BrokerStatsData),
    ("VIEW_BROKER_STATS_DATA_TOPIC_PUT_NUMS", "response", BrokerStatsData),
    ("VIEW_BROKER_STATS_DATA_TOPIC_PUT_NUMS_all_zero", "response", BrokerStatsData),
    ("VIEW_BROKER_STATS_DATA_TOPIC_PUT_SIZE", "response", BrokerStatsData),
]


@pytest.mark.parametrize(("name", "side", "body_type"), JAVA_BODIES, ids=[name for name, _, _ in JAVA_BODIES])
def test_java_written_body_encodes_back_byte_for_byte(name, side, body_type):
    raw = body(name, side)

    assert body_type.decode(raw).encode() == raw


@pytest.mark.parametrize("name", ["GET_ROUTEINFO_BY_TOPIC", "GET_ROUTEINFO_BY_TOPIC_rocketmq_serialize"])
def test_standard_json_route_body_encodes_back_byte_for_byte(name):
    assert TopicRouteData.decode(body(name)).encode(standard_json=True) == body(name)


def test_cpp_written_bodies_are_not_reproduced_but_re_encode_in_java_form():
    heartbeat = HeartbeatData.decode(body("HEART_BEAT_cpp_client", "request"))

    assert b'"consumeType":"CONSUME_PASSIVELY"' in heartbeat.encode()
    assert HeartbeatData.decode(heartbeat.encode()) == heartbeat


def test_every_json_body_in_the_captures_is_covered_above():
    """A new capture with a JSON body must get a typed model and a round-trip (or decode-only) case here."""
    covered = {(name, side) for name, side, _ in JAVA_BODIES}
    covered |= {("GET_ROUTEINFO_BY_TOPIC", "response"), ("GET_ROUTEINFO_BY_TOPIC_rocketmq_serialize", "response")}
    covered |= {("HEART_BEAT_cpp_client", "request"), ("GET_CONSUMER_RUNNING_INFO_cpp_client", "response")}
    covered |= {("GET_CONSUMER_RUNNING_INFO_broker_to_cpp_client", "response")}
    json_bodies = set()
    for path in FIXTURES.glob("*.json"):
        capture = json.loads(path.read_text())
        for side in ("request", "response"):
            text = (capture[side] or {}).get("body_text") or ""
            if text.startswith("{"):
                json_bodies.add((path.stem, side))

    assert json_bodies == covered


# --- tolerance and errors ---------------------------------------------------------------------------------------------


def test_unknown_properties_from_newer_brokers_are_ignored():
    raw = b'{"consumeTps":1.5,"newField":{"x":[1]},"offsetTable":{{"brokerName":"b","queueId":1,"topic":"t",'
    raw += b'"extra":true}:{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":9,"futureOffset":5}}}'

    stats = ConsumeStats.decode(raw)

    assert stats == ConsumeStats({MessageQueue("t", "b", 1): OffsetWrapper(5, 3, 9)}, 1.5)


def test_numbers_and_booleans_as_strings_and_nulls_are_accepted():
    info = ProcessQueueInfo.from_wire({"commitOffset": " 12 ", "locked": "true", "droped": None, "tryUnlockTimes": 2.0})

    assert (info.commit_offset, info.locked, info.dropped, info.try_unlock_times) == (12, True, False, 2)


@pytest.mark.parametrize(
    ("body_type", "raw", "message"),
    [
        (ConsumeStats, b"[]", "ConsumeStats: expected a JSON object, got an array"),
        (ClusterInfo, b'{"brokerAddrTable":[]}', "ClusterInfo.brokerAddrTable: expected an object, got an array"),
        (ClusterInfo, b'{"brokerAddrTable":{"b":{"brokerAddrs":{"x":"a"}}}}', "brokerAddrs['x']: expected an integer"),
        (ConsumeStats, b'{"offsetTable":{"q1":{}}}', "ConsumeStats.offsetTable['q1']: expected a JSON object"),
        (ConsumeStats, b'{"offsetTable":{{"topic":"t"}:{}}}', "brokerName: required property missing"),
        (ConsumeStats, b'{"consumeTps":"fast"}', "ConsumeStats.consumeTps: expected a number, got str 'fast'"),
        (TopicConfig, b'{"perm":true}', "TopicConfig.perm: expected an integer, got bool True"),
        (TopicConfig, b'{"order":"maybe"}', "TopicConfig.order: expected a boolean"),
        (ConsumerConnection, b'{"consumeType":"PUSH"}', "'PUSH' is not a ConsumeType"),
        (ConsumerConnection, b'{"messageModel":7}', "7 is not a MessageModel"),
        (HeartbeatData, b'{"consumerDataSet":[null]}', "HeartbeatData.consumerDataSet[0]: null where a value"),
        (HeartbeatData, b'{"consumerDataSet":{"groupName":"g"}}', "expected an array, got an object"),
        (TopicList, b'{"topicList":[["nested"]]}', "TopicList.topicList[0]: expected a string, got an array"),
        (KVTable, b'{"table":{"k":{"v":1}}}', "KVTable.table['k']: expected a string, got an object"),
    ],
)
def test_body_of_the_wrong_shape_raises_protocol_error_naming_the_path(body_type, raw, message):
    with pytest.raises(ProtocolError) as caught:
        body_type.decode(raw)

    assert message in str(caught.value)


@pytest.mark.parametrize("raw", [b"", b"{", b'{"table":', b"\xff\xfe"])
def test_malformed_json_raises_protocol_error(raw):
    with pytest.raises(ProtocolError):
        KVTable.decode(raw)


# --- Properties text --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["GET_BROKER_CONFIG", "GET_BROKER_CONFIG_slave", "GET_NAMESRV_CONFIG"])
def test_config_properties_parse_and_format_back_byte_for_byte(name):
    raw = body(name)
    props = parse_properties(raw)

    assert format_properties(props).encode() == raw


def test_broker_config_properties_values():
    props = parse_properties(body("GET_BROKER_CONFIG"))

    assert len(props) == 177
    assert props["brokerName"] == "broker-a"
    assert props["namesrvAddr"] == "127.0.0.1:9876"
    assert props["messageDelayLevel"].split()[:3] == ["1s", "5s", "10s"]
    assert props["messageStorePlugIn"] == ""
    assert parse_properties(body("GET_NAMESRV_CONFIG"))["listenPort"] == "9876"


def test_properties_follow_java_load_rules():
    text = (
        "# comment\n"
        "  ! also a comment \\\n"
        "a\\:b\\=c = x\\u0041y \n"
        "colon:value\n"
        "spaced   value with  spaces\n"
        "multi = one, \\\n"
        "        two, \\\n"
        "    three\n"
        "\n"
        "escapes=tab\\there\\nnewline\\\\back\\zslash\n"
        "emoji=\\uD83D\\uDE00\n"
        "empty\n"
        "==lead\n"
    )

    assert parse_properties(text) == {
        "a:b=c": "xAy ",
        "colon": "value",
        "spaced": "value with  spaces",
        "multi": "one, two, three",
        "escapes": "tab\there\nnewline\\backzslash",
        "emoji": "😀",
        "empty": "",
        "": "=lead",
    }


def test_properties_line_endings_and_trailing_backslash_at_end_of_text():
    assert parse_properties("a=1\r\nb=2\rc=3\\") == {"a": "1", "b": "2", "c": "3"}


def test_malformed_unicode_escape_in_properties_raises_protocol_error():
    with pytest.raises(ProtocolError, match="uxxxx"):
        parse_properties("key=\\u12G4\n")


def test_properties_formatting_escapes_only_what_load_would_misread():
    props = {"plain.key": "127.0.0.1:9876;x=y", "k e:y=#": " lead", "#hash": "a\\b\nc", "u": "é"}

    assert format_properties(props) == (
        "plain.key=127.0.0.1:9876;x=y\nk\\ e\\:y\\=#=\\ lead\n\\#hash=a\\\\b\\nc\nu=\\u00E9\n"
    )


@given(st.dictionaries(st.text(), st.text(), max_size=5))
@settings(max_examples=200, deadline=None)
def test_any_properties_survive_format_then_parse(props):
    assert parse_properties(format_properties(props)) == props


# --- broker runtime info ----------------------------------------------------------------------------------------------


def test_broker_runtime_info_exposes_the_watched_figures():
    info = BrokerRuntimeInfo.from_kvtable(KVTable.decode(body("GET_BROKER_RUNTIME_INFO")))

    assert info.broker_version_desc == "V4_9_4"
    assert info.broker_version == 401
    assert (info.msg_put_total_today_now, info.msg_get_total_today_now) == (6247, 5760)
    assert info.put_tps == 9.79706088173548
    assert info.get_transfered_tps == 8.397480755773268
    assert info.get_total_tps == 16.99490152954114
    assert info.commit_log_disk_ratio == 0.26
    assert info.commit_log_max_offset == 1702804
    assert info.earliest_message_timestamp == -1
    assert info.runtime == "[ 0 days, 0 hours, 8 minutes, 18 seconds ]"
    assert info.runtime_seconds == 498
    assert info.commit_log_dir_capacity == "Total : 252.0 GiB, Free : 75.4 GiB."
    assert info.commit_log_disk_ratio_by_path == {"/opt/rocketmq/store/broker-a/commitlog": 0.26}
    assert info.schedule_message_offsets == {3: (461, 465)}
    assert info.table["putMessageDistributeTime"].startswith("[<=0ms]:0")


def test_slave_runtime_info_has_no_gets():
    info = BrokerRuntimeInfo.from_kvtable(KVTable.decode(body("GET_BROKER_RUNTIME_INFO_slave")))

    assert info.msg_get_total_today_now == 0
    assert info.get_transfered_tps == 0.0
    assert info.schedule_message_offsets == {}


def test_runtime_info_turns_bad_or_missing_figures_into_none():
    info = BrokerRuntimeInfo.from_kvtable(
        {"putTps": "", "commitLogDiskRatio": "NaN", "msgPutTotalTodayNow": "12x", "scheduleMessageOffset_x": "1,2"}
    )

    assert (info.put_tps, info.commit_log_disk_ratio, info.msg_put_total_today_now) == (None, None, None)
    assert info.broker_version_desc is None and info.runtime_seconds is None
    assert info.schedule_message_offsets == {}


# --- random instances round-trip --------------------------------------------------------------------------------------

longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
doubles = st.floats(allow_nan=False, allow_infinity=False)
names = st.text(max_size=12)
queues = st.builds(MessageQueue, names, names, st.integers(min_value=0, max_value=2**31 - 1))
subscriptions = st.builds(
    SubscriptionData,
    topic=names,
    sub_string=names,
    class_filter_mode=st.booleans(),
    tags_set=st.lists(names, max_size=3),
    code_set=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3),
    sub_version=longs,
    expression_type=st.sampled_from(["TAG", "SQL92"]),
)
RANDOM_BODIES = {
    "ConsumeStats": st.builds(
        ConsumeStats,
        st.dictionaries(queues, st.builds(OffsetWrapper, longs, longs, longs), max_size=5),
        doubles,
    ),
    "TopicRouteData": st.builds(
        TopicRouteData,
        st.none() | names,
        st.lists(st.builds(QueueData, names, longs, longs, longs, longs), max_size=3),
        st.lists(st.builds(BrokerData, names, names, st.dictionaries(longs, names, max_size=3)), max_size=3),
        st.dictionaries(names, st.lists(names, max_size=2), max_size=2),
    ),
    "ConsumerRunningInfo": st.builds(
        ConsumerRunningInfo,
        st.dictionaries(names, names, max_size=3),
        st.lists(subscriptions, max_size=2),
        st.dictionaries(queues, st.builds(ProcessQueueInfo, commit_offset=longs, locked=st.booleans()), max_size=3),
        st.dictionaries(
            names, st.builds(ConsumeStatus, doubles, doubles, doubles, doubles, doubles, longs), max_size=2
        ),
        st.none() | st.text(),
    ),
    "HeartbeatData": st.builds(
        HeartbeatData,
        names,
        st.lists(st.builds(ProducerData, names), max_size=2),
        st.lists(
            st.builds(
                ConsumerData,
                names,
                st.none() | st.sampled_from(ConsumeType),
                st.none() | st.sampled_from(MessageModel),
                st.none() | st.sampled_from(ConsumeFromWhere),
                st.lists(subscriptions, max_size=2),
                st.booleans(),
            ),
            max_size=2,
        ),
    ),
    "ResetOffsetBody": st.builds(ResetOffsetBody, st.dictionaries(queues, longs, max_size=4)),
}


@pytest.mark.parametrize("kind", sorted(RANDOM_BODIES))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_bodies_round_trip_through_encode_and_decode(kind, data):
    value = data.draw(RANDOM_BODIES[kind])

    assert type(value).decode(value.encode()) == value


@given(RANDOM_BODIES["TopicRouteData"])
@settings(max_examples=40, deadline=None)
def test_random_routes_round_trip_through_standard_json(route):
    assert TopicRouteData.decode(route.encode(standard_json=True)) == route
