"""Every captured exchange, specified: the admin client decodes the real response into the right objects, and
where the admin client makes the same call, the request it sends carries the same code and extFields as the real
tool's. mqadmin signed its requests with AccessKey rocketmq2 / SecretKey 12345678 (the distribution's tools.yml),
so with the same credentials our Signature must equal the captured one: that proves every extFields value (and
the body) is the same, byte for byte."""

from __future__ import annotations

import pytest

from monitor.remoting import body as b
from monitor.remoting.acl import AclCredentials, verify_signature
from monitor.remoting.admin import MQAdmin, PullStatus
from monitor.remoting.codes import ResponseCode, SerializeType
from monitor.remoting.errors import RemotingError, RemotingTimeoutError
from monitor.remoting.message import create_offset_msg_id, decode_messages
from tests.replay import ReplayCluster, load_exchanges, plain_ext

EXCHANGES = load_exchanges()
MQADMIN_ACL = AclCredentials("rocketmq2", "12345678")


@pytest.fixture(scope="module")
def cluster():
    with ReplayCluster() as replay:
        yield replay


@pytest.fixture(autouse=True)
def fresh(cluster):
    cluster.received.clear()
    cluster.prefer()


@pytest.fixture
def admin(cluster):
    client = MQAdmin([cluster.namesrv_addr], acl=MQADMIN_ACL, timeout=2)
    yield client
    client.close()


def last_request(cluster, code):
    requests = [cmd for _, cmd in cluster.received if cmd.code == code]
    assert requests, f"no request with code {code} reached the replay servers"
    return requests[-1]


def assert_same_request(cluster, fixture: str, *, signature: bool = True):
    captured = EXCHANGES[fixture].request
    sent = last_request(cluster, captured.code)
    assert plain_ext(sent) == plain_ext(captured)
    if signature and captured.ext("AccessKey") == "rocketmq2":
        assert sent.ext("Signature") == captured.ext("Signature")


def assert_signed_as_brokers_check(cluster, fixture: str):
    """QUERY_MESSAGE: mqadmin signs _UNIQUE_KEY_QUERY but brokers verify without it (PlainAccessValidator), so
    mqadmin's signature fails on ACL clusters; ours must carry the same fields and the signature brokers expect."""
    assert_same_request(cluster, fixture, signature=False)
    sent = last_request(cluster, EXCHANGES[fixture].request.code)
    captured = EXCHANGES[fixture].request
    assert verify_signature(sent, MQADMIN_ACL.secret_key)
    assert not verify_signature(captured, MQADMIN_ACL.secret_key)


# --- admin calls: response decoded, request identical ------------------------------------------------------------


def test_cluster_list(cluster, admin):
    info = admin.examine_broker_cluster_info()
    assert_same_request(cluster, "GET_BROKER_CLUSTER_INFO")
    broker = info.broker_addr_table["broker-a"]
    assert broker.cluster == "DefaultCluster"
    assert broker.broker_addrs == {0: cluster.master_addr, 1: cluster.slave_addr}
    assert broker.master_addr == cluster.master_addr
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}


def test_cluster_list_after_the_slave_stopped(cluster, admin):
    cluster.prefer("GET_BROKER_CLUSTER_INFO_after_slave_stop")
    info = admin.examine_broker_cluster_info()
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: cluster.master_addr}


def test_cluster_list_with_binary_rocketmq_headers(cluster):
    with MQAdmin([cluster.namesrv_addr], acl=MQADMIN_ACL, serialize_type=SerializeType.ROCKETMQ) as admin:
        info = admin.examine_broker_cluster_info()
    sent = last_request(cluster, 106)
    assert sent.serialize_type is SerializeType.ROCKETMQ
    assert sent.ext("Signature") == EXCHANGES["GET_BROKER_CLUSTER_INFO_rocketmq_serialize"].request.ext("Signature")
    assert set(info.broker_addr_table["broker-a"].broker_addrs) == {0, 1}


def test_topic_list(cluster, admin):
    topics = admin.fetch_all_topic_list().topic_list
    assert_same_request(cluster, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER")
    assert {"TopicTest", "RMQ_SYS_TRACE_TOPIC", "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX"} <= set(topics)


def test_topic_route(cluster, admin):
    route = admin.examine_topic_route_info("TopicTest")
    assert_same_request(cluster, "GET_ROUTEINFO_BY_TOPIC")
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 8, 8, 6)
    ]
    assert route.broker_datas[0].broker_addrs == {0: cluster.master_addr, 1: cluster.slave_addr}


def test_topic_route_with_binary_headers_and_the_old_client_variant_decode_alike():
    standard = b.TopicRouteData.decode(EXCHANGES["GET_ROUTEINFO_BY_TOPIC"].response.body)
    old = b.TopicRouteData.decode(EXCHANGES["GET_ROUTEINFO_BY_TOPIC_old_client_version"].response.body)
    binary = b.TopicRouteData.decode(EXCHANGES["GET_ROUTEINFO_BY_TOPIC_rocketmq_serialize"].response.body)
    assert standard == old
    assert binary.broker_datas == standard.broker_datas


def test_unknown_topic_is_a_typed_error_with_rocketmqs_remark(cluster, admin):
    with pytest.raises(RemotingError) as err:
        admin.examine_topic_route_info("NoSuchTopic")
    assert_same_request(cluster, "GET_ROUTEINFO_BY_TOPIC_topic_not_exist")
    assert err.value.code == ResponseCode.TOPIC_NOT_EXIST
    assert err.value.remark.startswith("No topic route info in name server for the topic: NoSuchTopic")


def test_name_server_config(cluster, admin):
    configs = admin.get_name_server_config()
    assert_same_request(cluster, "GET_NAMESRV_CONFIG")
    config = configs[cluster.namesrv_addr]
    assert config["serverWorkerThreads"] == "8"
    assert config["rocketmqHome"] == "/opt/rocketmq"


def test_name_server_never_answers_unknown_codes(cluster):
    from monitor.remoting.client import RemotingClient
    from monitor.remoting.command import RemotingCommand
    from monitor.remoting.sync import run_sync

    client = RemotingClient(timeout=0.3)
    with pytest.raises(RemotingTimeoutError):
        run_sync(client.invoke(cluster.namesrv_addr, RemotingCommand.request(9999)))
    run_sync(client.close())
    assert EXCHANGES["UNKNOWN_CODE_namesrv_no_response"].response is None


def test_broker_rejects_unknown_codes_with_request_code_not_supported(cluster, admin):
    response = EXCHANGES["REQUEST_CODE_NOT_SUPPORTED_broker"].response
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 9999 not supported"


def test_delete_topic_in_name_server(cluster, admin):
    admin.delete_topic_in_name_server("TopicTmpDel2", "DefaultCluster")
    assert_same_request(cluster, "DELETE_TOPIC_IN_NAMESRV", signature=False)


def test_broker_runtime_info(cluster, admin):
    kv = admin.fetch_broker_runtime_stats(cluster.master_addr)
    assert_same_request(cluster, "GET_BROKER_RUNTIME_INFO")
    info = b.BrokerRuntimeInfo.from_kvtable(kv)
    assert info.broker_version_desc == "V4_9_4"
    assert info.msg_put_total_today_now == 6247
    slave = b.BrokerRuntimeInfo.from_kvtable(b.KVTable.decode(EXCHANGES["GET_BROKER_RUNTIME_INFO_slave"].response.body))
    assert slave.msg_put_total_today_now == 6318


def test_stopped_broker_capture_has_no_frames():
    exchange = EXCHANGES["GET_BROKER_RUNTIME_INFO_connection_refused"]
    assert exchange.request is None and exchange.response is None


def test_broker_config(cluster, admin):
    config = admin.get_broker_config(cluster.master_addr)
    assert_same_request(cluster, "GET_BROKER_CONFIG")
    assert config["brokerName"] == "broker-a"
    assert config["brokerRole"] == "ASYNC_MASTER"
    slave = b.parse_properties(EXCHANGES["GET_BROKER_CONFIG_slave"].response.body)
    assert slave["brokerRole"] == "SLAVE" and slave["brokerId"] == "1"


def test_all_topic_configs_of_a_broker(cluster, admin):
    wrapper = admin.get_all_topic_config(cluster.master_addr)
    assert_same_request(cluster, "GET_ALL_TOPIC_CONFIG", signature=False)
    topic = wrapper.topic_config_table["TopicTest"]
    assert (topic.read_queue_nums, topic.write_queue_nums, topic.perm, topic.order) == (8, 8, 6, False)


def test_all_subscription_groups_of_a_broker(cluster, admin):
    wrapper = admin.get_all_subscription_group(cluster.master_addr)
    assert_same_request(cluster, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", signature=False)
    assert "cg_test" in wrapper.subscription_group_table
    assert "" in wrapper.subscription_group_table  # auto-created by the C++ producer's unregister


def test_create_topic_on_a_broker(cluster, admin):
    config = b.TopicConfig(topic_name="TopicTest", read_queue_nums=8, write_queue_nums=8, perm=6)
    admin.create_and_update_topic_config(cluster.master_addr, config)
    assert_same_request(cluster, "UPDATE_AND_CREATE_TOPIC")


def test_create_subscription_group_sends_the_same_body(cluster, admin):
    captured = EXCHANGES["UPDATE_AND_CREATE_SUBSCRIPTIONGROUP"].request
    config = b.SubscriptionGroupConfig.decode(captured.body)
    admin.create_and_update_subscription_group_config(cluster.master_addr, config)
    sent = last_request(cluster, 200)
    assert sent.body == captured.body
    assert_same_request(cluster, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP")


def test_delete_topic_on_master_and_refusal_from_slave(cluster, admin):
    admin.delete_topic_in_broker([cluster.master_addr], "TopicTmpDel")
    assert_same_request(cluster, "DELETE_TOPIC_IN_BROKER")
    with pytest.raises(RemotingError) as err:
        admin.delete_topic_in_broker([cluster.slave_addr], "TopicTmpDel")
    assert_same_request(cluster, "DELETE_TOPIC_IN_BROKER_slave_rejected")
    assert err.value.code == ResponseCode.SYSTEM_ERROR
    assert "slave" in err.value.remark


def test_topic_status(cluster, admin):
    stats = admin.examine_topic_stats("TopicTest")
    assert_same_request(cluster, "GET_TOPIC_STATS_INFO")
    assert len(stats.offset_table) == 8
    q7 = stats.offset_table[b.MessageQueue("TopicTest", "broker-a", 7)]
    assert (q7.min_offset, q7.max_offset, q7.last_update_timestamp) == (0, 651, 1795308855235)


def test_who_consumes_a_topic(cluster, admin):
    groups = admin.query_topic_consume_by_who(cluster.master_addr, "TopicTest")
    assert_same_request(cluster, "QUERY_TOPIC_CONSUME_BY_WHO")
    assert groups.group_list == ["cg_test"]


def test_consume_stats_of_every_group_on_a_broker(cluster, admin):
    stats = admin.fetch_consume_stats_in_broker(cluster.master_addr)
    assert_same_request(cluster, "GET_BROKER_CONSUME_STATS")
    groups = {group for entry in stats.consume_stats_list for group in entry}
    assert {"cg_test", ""} <= groups
    assert stats.broker_addr == cluster.master_addr


def test_producer_connections(cluster, admin):
    conn = admin.examine_producer_connection_info("pg_slow", "TopicTest")
    assert_same_request(cluster, "GET_PRODUCER_CONNECTION_LIST")
    assert [(c.client_id, c.language, c.version) for c in conn.connection_set] == [
        ("31942-127.0.0.1@DEFAULT", "CPP", 63)
    ]


@pytest.mark.parametrize(
    ("fixture", "name", "key", "minute_sum"),
    [
        ("VIEW_BROKER_STATS_DATA_TOPIC_PUT_NUMS", "TOPIC_PUT_NUMS", "TopicTest", 590),
        ("VIEW_BROKER_STATS_DATA_TOPIC_PUT_SIZE", "TOPIC_PUT_SIZE", "TopicTest", None),
        ("VIEW_BROKER_STATS_DATA_GROUP_GET_NUMS", "GROUP_GET_NUMS", "TopicTest@cg_test", None),
        ("VIEW_BROKER_STATS_DATA_GROUP_GET_SIZE", "GROUP_GET_SIZE", "TopicTest@cg_test", None),
        ("VIEW_BROKER_STATS_DATA_SNDBCK_PUT_NUMS", "SNDBCK_PUT_NUMS", "TopicTest@cg_test", 29),
    ],
)
def test_broker_stats_data(cluster, admin, fixture, name, key, minute_sum):
    cluster.prefer(fixture)
    stats = admin.view_broker_stats_data(cluster.master_addr, name, key)
    assert_same_request(cluster, fixture, signature=False)
    expected = b.BrokerStatsData.decode(EXCHANGES[fixture].response.body)
    assert stats == expected
    assert stats.stats_day.sum == 0 and stats.stats_hour.sum > 0
    if minute_sum is not None:
        assert stats.stats_minute.sum == minute_sum


def test_broker_stats_with_no_recent_traffic_are_zero_not_an_error(cluster, admin):
    cluster.prefer("VIEW_BROKER_STATS_DATA_TOPIC_PUT_NUMS_all_zero")
    stats = admin.view_broker_stats_data(cluster.master_addr, "TOPIC_PUT_NUMS", "TopicTest")
    assert (stats.stats_minute.sum, stats.stats_hour.sum, stats.stats_day.sum) == (0, 0, 0)


def test_statsall_request_is_the_same_as_mqadmins(cluster, admin):
    admin.view_broker_stats_data(cluster.master_addr, "GROUP_GET_NUMS", "TopicTest@cg_test")
    assert_same_request(cluster, "VIEW_BROKER_STATS_DATA_GROUP_GET_NUMS_mqadmin_statsAll")


@pytest.mark.parametrize(
    ("fixture", "name", "key"),
    [
        ("VIEW_BROKER_STATS_DATA_stats_not_exist", "TOPIC_PUT_NUMS", "NoSuchTopic"),
        ("VIEW_BROKER_STATS_DATA_group_key_wrong_order", "GROUP_GET_NUMS", "cg_test@TopicTest"),
    ],
)
def test_unknown_stats_keys_are_rocketmqs_system_error(cluster, admin, fixture, name, key):
    with pytest.raises(RemotingError) as err:
        admin.view_broker_stats_data(cluster.master_addr, name, key)
    assert err.value.code == ResponseCode.SYSTEM_ERROR
    assert err.value.remark == f"The stats <{name}> <{key}> not exist"


def test_consumer_progress(cluster, admin):
    stats = admin.examine_consume_stats("cg_test")
    assert_same_request(cluster, "GET_CONSUME_STATS")
    assert len(stats.offset_table) == 9
    retry = stats.offset_table[b.MessageQueue("%RETRY%cg_test", "broker-a", 0)]
    assert (retry.broker_offset, retry.consumer_offset) == (461, 461)
    assert stats.consume_tps == pytest.approx(27.683333333333334)


def test_consume_stats_of_a_group_that_never_consumed_is_empty(cluster, admin):
    stats = admin.get_consume_stats(cluster.master_addr, "cg_nobody")
    assert_same_request(cluster, "GET_CONSUME_STATS_unknown_group", signature=False)
    assert stats.offset_table == {} and stats.consume_tps == 0.0


def test_consumer_connections(cluster, admin):
    conn = admin.examine_consumer_connection_info("cg_test")
    assert_same_request(cluster, "GET_CONSUMER_CONNECTION_LIST")
    assert sorted(c.language for c in conn.connection_set) == ["CPP", "JAVA"]
    assert "TopicTest" in conn.subscription_table


def test_consumer_connections_when_no_consumer_is_online(cluster, admin):
    cluster.prefer("GET_CONSUMER_CONNECTION_LIST_not_online")
    with pytest.raises(RemotingError) as err:
        admin.examine_consumer_connection_info("cg_test")
    assert err.value.code == ResponseCode.CONSUMER_NOT_ONLINE
    assert err.value.remark == "the consumer group[cg_test] not online"


@pytest.mark.parametrize(
    ("fixture", "client_id", "language_queue_count"),
    [
        ("GET_CONSUMER_RUNNING_INFO", "127.0.0.1@28238#7787385373909", None),
        ("GET_CONSUMER_RUNNING_INFO_cpp_client", "28364-127.0.0.1@DEFAULT", None),
    ],
)
def test_consumer_running_info_relayed_from_java_and_cpp_clients(
    cluster, admin, fixture, client_id, language_queue_count
):
    cluster.prefer(fixture)
    info = admin.get_consumer_running_info("cg_test", client_id)
    assert_same_request(cluster, fixture)
    assert info.mq_table, "the running info lists the queues the client holds"
    assert all(isinstance(mq, b.MessageQueue) for mq in info.mq_table)
    assert any(s.topic == "TopicTest" for s in info.subscription_set)


def test_reset_offset_by_time_with_consumers_online(cluster, admin):
    captured = EXCHANGES["INVOKE_BROKER_TO_RESET_OFFSET"].request
    table = admin.reset_offset_by_timestamp("TopicTest", "cg_test", int(captured.ext("timestamp")))
    assert_same_request(cluster, "INVOKE_BROKER_TO_RESET_OFFSET")
    assert table[b.MessageQueue("TopicTest", "broker-a", 7)] == 901


def test_reset_offset_by_time_without_consumers_is_consumer_not_online(cluster, admin):
    captured = EXCHANGES["INVOKE_BROKER_TO_RESET_OFFSET_consumer_not_online"].request
    with pytest.raises(RemotingError) as err:
        admin.reset_offset_by_timestamp("TopicTest", "cg_test", int(captured.ext("timestamp")))
    assert_same_request(cluster, "INVOKE_BROKER_TO_RESET_OFFSET_consumer_not_online")
    assert err.value.code == ResponseCode.CONSUMER_NOT_ONLINE


def test_search_offset_by_timestamp(cluster, admin):
    assert admin.search_offset(cluster.master_addr, "TopicTest", 7, 1795309422000) == 1179
    assert_same_request(cluster, "SEARCH_OFFSET_BY_TIMESTAMP")


def test_query_msg_by_offset_pulls_exactly_one_message(cluster, admin):
    result = admin.pull_message(cluster.master_addr, "TopicTest", 0, 0, max_nums=1)
    assert_same_request(cluster, "PULL_MESSAGE_mqadmin_queryMsgByOffset")
    assert result.status is PullStatus.FOUND
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (1, 0, 698)
    assert [m.queue_offset for m in result.messages] == [0]


def test_query_message_by_key(cluster, admin):
    messages = admin.query_message("TopicTest", "KEY_java_5")
    assert_signed_as_brokers_check(cluster, "QUERY_MESSAGE")
    assert [m.keys for m in messages] == [["KEY_java_5"]]


def test_query_trace_records_by_message_id(cluster, admin):
    msg_id = "7F0000016CA35FFD2B276C5640FE0000"
    messages = admin.query_message("RMQ_SYS_TRACE_TOPIC", msg_id, end=1795309023533)
    assert_signed_as_brokers_check(cluster, "QUERY_MESSAGE_trace_topic")
    assert messages and all(m.topic == "RMQ_SYS_TRACE_TOPIC" for m in messages)
    assert all(msg_id in m.body.decode() for m in messages)


def test_view_message_by_offset_id(cluster, admin):
    msg = admin.view_message(create_offset_msg_id(cluster.master_addr, 666780))
    assert_same_request(cluster, "VIEW_MESSAGE_BY_ID")
    assert msg.commit_log_offset == 666780
    assert msg.keys == ["KEY_java_0"]


def test_consumer_offset_query_and_commit(cluster, admin):
    assert admin.query_consumer_offset(cluster.master_addr, "cg_test", "TopicTest", 7) == 0
    assert_same_request(cluster, "QUERY_CONSUMER_OFFSET", signature=False)
    admin.update_consumer_offset(cluster.master_addr, "cg_test", "TopicTest", 4, 503)
    assert_same_request(cluster, "UPDATE_CONSUMER_OFFSET_cpp_client", signature=False)


def test_consumer_ids_of_a_group(cluster, admin):
    ids = admin.get_consumer_id_list_by_group(cluster.master_addr, "cg_test")
    assert_same_request(cluster, "GET_CONSUMER_LIST_BY_GROUP", signature=False)
    assert ids == ["28364-127.0.0.1@DEFAULT", "127.0.0.1@28238#7787385373909"]


# --- traffic between brokers, clients and name servers: the bodies decode into RocketMQ's types -----------------


def test_client_and_broker_traffic_decodes():
    heartbeat = b.HeartbeatData.decode(EXCHANGES["HEART_BEAT"].request.body)
    cpp_heartbeat = b.HeartbeatData.decode(EXCHANGES["HEART_BEAT_cpp_client"].request.body)
    assert heartbeat.consumer_data_set[0].group_name == "cg_test"
    assert cpp_heartbeat.consumer_data_set[0].message_model == b.MessageModel.CLUSTERING
    register = b.RegisterBrokerBody.decode(EXCHANGES["REGISTER_BROKER"].request.body)
    assert "TopicTest" in register.topic_config_serialize_wrapper.topic_config_table
    assert EXCHANGES["REGISTER_BROKER_slave"].response.ext("masterAddr") == "127.0.0.1:10911"
    offsets = b.ConsumerOffsetSerializeWrapper.decode(EXCHANGES["GET_ALL_CONSUMER_OFFSET"].response.body)
    assert offsets.offset_table["TopicTest@cg_test"][0] == 1181
    delay = b.DelayOffsetSerializeWrapper.decode(EXCHANGES["GET_ALL_DELAY_OFFSET"].response.body)
    assert delay.offset_table == {3: 684}
    reset = b.ResetOffsetBody.decode(EXCHANGES["RESET_CONSUMER_CLIENT_OFFSET_broker_to_client"].request.body)
    assert reset.offset_table[b.MessageQueue("TopicTest", "broker-a", 7)] == 901
    for name in ("GET_CONSUMER_RUNNING_INFO_broker_to_java_client", "GET_CONSUMER_RUNNING_INFO_broker_to_cpp_client"):
        assert b.ConsumerRunningInfo.decode(EXCHANGES[name].response.body).mq_table


def test_message_traffic_decodes():
    for name in ("PULL_MESSAGE", "PULL_MESSAGE_cpp_client", "PULL_MESSAGE_compressed_body"):
        exchange = EXCHANGES[name]
        messages = decode_messages(exchange.response.body)
        assert messages and all(m.topic == exchange.request.ext("topic") for m in messages)
    big = [m for m in decode_messages(EXCHANGES["PULL_MESSAGE_compressed_body"].response.body) if m.was_compressed]
    assert big and len(big[0].body) == 8192
    for name, code in [
        ("PULL_MESSAGE_not_found", ResponseCode.PULL_NOT_FOUND),
        ("PULL_MESSAGE_subscription_not_latest", ResponseCode.SUBSCRIPTION_NOT_LATEST),
    ]:
        assert EXCHANGES[name].response.code == code
    for name in ("SEND_MESSAGE", "SEND_MESSAGE_V2", "SEND_MESSAGE_cpp_client", "SEND_MESSAGE_V2_compressed_body"):
        assert EXCHANGES[name].response.ext("msgId")
    trace = EXCHANGES["SEND_MESSAGE_V2_trace_record"].request
    assert trace.ext("b") == "RMQ_SYS_TRACE_TOPIC" and int(trace.ext("f")) & 0x1
    assert EXCHANGES["CONSUMER_SEND_MSG_BACK"].response.code == ResponseCode.SUCCESS
    assert EXCHANGES["UPDATE_CONSUMER_OFFSET_oneway"].request.is_oneway
    assert EXCHANGES["NOTIFY_CONSUMER_IDS_CHANGED_broker_to_client"].request.is_oneway
    assert EXCHANGES["QUERY_CONSUMER_OFFSET_cpp_client"].response.ext("offset") == "503"
    assert b.GetConsumerListByGroupResponseBody.decode(
        EXCHANGES["GET_CONSUMER_LIST_BY_GROUP_cpp_client"].response.body
    ).consumer_id_list
    assert EXCHANGES["UNREGISTER_BROKER"].response.code == ResponseCode.SUCCESS
    assert EXCHANGES["UNREGISTER_CLIENT"].response.code == ResponseCode.SUCCESS


def test_every_captured_exchange_is_covered_by_this_file():
    from pathlib import Path

    source = Path(__file__).read_text()
    missing = [name for name in EXCHANGES if f'"{name}"' not in source]
    assert not missing, f"captured exchanges without a test here: {missing}"
