"""The sandbox broker's admin side against a real sandbox name server, the project's admin client and the 4.9.4
captures: what it registers, the topics and groups it starts with, and the shape of every admin answer.

Captured requests are replayed to the sandbox broker; answers must carry the captured header (code, remark,
which extFields) and body keys, and, where the sandbox holds the same data as the captured broker, the same body.
"""

import json
import zlib

import pytest

from monitor.remoting import body as b
from monitor.remoting import fastjson
from monitor.remoting.admin import MQAdmin
from monitor.remoting.client import RemotingClient
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand, encode_frame
from monitor.remoting.errors import RemotingError
from monitor.remoting.sync import run_sync
from monitor.sandbox.broker import Broker, registration
from monitor.sandbox.server import RemotingServer
from tests.fixtures import captured_request, captured_response
from tests.support.waiting import wait_for

CAPTURED_SYSTEM_TOPICS = {
    "SCHEDULE_TOPIC_XXXX",
    "SELF_TEST_TOPIC",
    "DefaultCluster",
    "DefaultCluster_REPLY_TOPIC",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "broker-a",
    "RMQ_SYS_TRACE_TOPIC",
    "TBW102",
    "BenchmarkTest",
    "OFFSET_MOVED_EVENT",
}


def header_shape(cmd: RemotingCommand) -> dict:
    """What a client sees of a response header, apart from the opaque: code, flag, language, version, remark and
    which extFields keys it has (None when extFields is absent)."""
    keys = None if cmd.ext_fields is None else sorted(cmd.ext_fields)
    return {"code": cmd.code, "flag": cmd.flag, "lang": cmd.language, "version": cmd.version, "ext": keys}


class Peer:
    """A raw remoting connection to one address, driven synchronously."""

    def __init__(self, addr: str):
        self.addr = addr
        self.client = RemotingClient(timeout=3.0)

    def call(self, cmd: RemotingCommand) -> RemotingCommand:
        return run_sync(self.client.invoke(self.addr, cmd))

    def replay(self, name: str) -> tuple[RemotingCommand, RemotingCommand]:
        """A captured request sent to this peer: (our answer, the captured answer)."""
        return self.call(captured_request(name)), captured_response(name)

    def close(self) -> None:
        run_sync(self.client.close())


@pytest.fixture
def broker(ns):
    server = Broker("DefaultCluster", "broker-a", 0, [ns.addr]).start()
    yield server
    server.stop()


@pytest.fixture
def admin(ns):
    client = MQAdmin(ns.addr, timeout=3.0)
    yield client
    client.close()


@pytest.fixture
def peer(broker):
    connection = Peer(broker.addr)
    yield connection
    connection.close()


# --- registration ------------------------------------------------------------------------------------------------


class FakeNameServer(RemotingServer):
    """Records what a broker sends a name server and answers like one (the slave answer names a master)."""

    def __init__(self):
        super().__init__(name="fake-namesrv")
        self.requests: list[RemotingCommand] = []
        for code in (RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER):
            self.register(code, self._record)

    async def _record(self, conn, cmd: RemotingCommand) -> RemotingCommand:
        self.requests.append(cmd)
        return cmd.make_response(ext_fields={} if cmd.code == RequestCode.REGISTER_BROKER else None)


def test_registration_and_unregistration_have_the_captured_shape():
    with FakeNameServer() as fake:
        broker = Broker("DefaultCluster", "broker-a", 0, [fake.addr]).start()
        broker.stop()
    register, unregister = fake.requests
    real = captured_request("REGISTER_BROKER")
    assert (register.code, register.language, register.version) == (103, "JAVA", 401)
    assert sorted(register.ext_fields) == sorted(real.ext_fields)
    assert register.ext_fields["brokerAddr"] == broker.addr
    assert register.ext_fields["haServerAddr"] == f"127.0.0.1:{broker.port + 1}"
    assert register.ext_fields["compressed"] == "false"
    assert int(register.ext_fields["bodyCrc32"]) == zlib.crc32(register.body) & 0x7FFFFFFF
    body = fastjson.loads(register.body)
    assert list(body) == ["filterServerList", "topicConfigSerializeWrapper"]
    table = body["topicConfigSerializeWrapper"]["topicConfigTable"]
    real_table = fastjson.loads(real.body)["topicConfigSerializeWrapper"]["topicConfigTable"]
    # Same system topics, same configs, same ConcurrentHashMap order as the captured broker's.
    assert list(table) == [name for name in real_table if name in CAPTURED_SYSTEM_TOPICS]
    assert all(table[name] == real_table[name] for name in table)
    assert sorted(unregister.ext_fields) == sorted(captured_request("UNREGISTER_BROKER").ext_fields)
    assert unregister.ext_fields["brokerId"] == "0"


def test_broker_registers_again_every_period(monkeypatch):
    # 4.9.4 keeps the period within 10..60 s; lift the floor so the test need not wait 10 s.
    monkeypatch.setattr(registration, "_REGISTER_PERIOD_MIN_MS", 0)
    with FakeNameServer() as fake:
        broker = Broker("DefaultCluster", "broker-a", 0, [fake.addr], config={"registerNameServerPeriod": 20}).start()
        try:
            wait_for(lambda: sum(cmd.code == RequestCode.REGISTER_BROKER for cmd in fake.requests) >= 3, timeout=5.0)
        finally:
            broker.stop()


def test_broker_joins_the_cluster_and_leaves_it_when_stopped(ns, admin):
    broker = Broker("DefaultCluster", "broker-a", 0, [ns.addr]).start()
    try:
        info = admin.examine_broker_cluster_info()
        assert info.broker_addr_table["broker-a"].broker_addrs == {0: broker.addr}
        assert set(admin.fetch_all_topic_list().topic_list) == CAPTURED_SYSTEM_TOPICS
    finally:
        broker.stop()
    assert admin.examine_broker_cluster_info().broker_addr_table == {}


def test_created_topic_shows_in_the_route_at_once(broker, admin):
    config = b.TopicConfig(topic_name="TopicTest", read_queue_nums=8, write_queue_nums=8)
    admin.create_and_update_topic_config(broker.addr, config)
    route = admin.examine_topic_route_info("TopicTest")
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 8, 8, 6)
    ]
    assert route.broker_datas[0].broker_addrs == {0: broker.addr}


def test_broker_permission_change_is_registered_for_every_topic(broker, admin):
    admin.create_and_update_topic_config(broker.addr, b.TopicConfig(topic_name="TopicTest"))
    admin.update_broker_config(broker.addr, {"brokerPermission": "4"})
    assert admin.examine_topic_route_info("TopicTest").queue_datas[0].perm == 4
    assert admin.examine_topic_route_info("TBW102").queue_datas[0].perm == 4
    assert admin.get_broker_config(broker.addr)["brokerPermission"] == "4"


# --- topics --------------------------------------------------------------------------------------------------------


def test_create_topic_answer_is_the_captured_frame(peer):
    ours, real = peer.replay("UPDATE_AND_CREATE_TOPIC")
    ours.opaque = real.opaque
    assert encode_frame(ours) == encode_frame(real)


def test_all_topic_config_is_the_captured_table(peer, broker):
    peer.replay("UPDATE_AND_CREATE_TOPIC")
    broker.topics.create_in_send_back("%RETRY%cg_test", 1, 6, 0)  # in the capture, a consumer's heartbeat did this
    ours, real = peer.replay("GET_ALL_TOPIC_CONFIG")
    assert header_shape(ours) == header_shape(real)
    ours_body, real_body = fastjson.loads(ours.body), fastjson.loads(real.body)
    assert list(ours_body) == list(real_body)
    assert ours_body["topicConfigTable"] == real_body["topicConfigTable"]
    assert list(ours_body["topicConfigTable"]) == list(real_body["topicConfigTable"])


def test_delete_topic_answers_like_the_capture_and_keeps_system_topics(peer, admin, broker):
    peer.call(captured_request("UPDATE_AND_CREATE_TOPIC"))
    create = captured_request("UPDATE_AND_CREATE_TOPIC")
    create.ext_fields["topic"] = "TopicTmpDel"
    peer.call(create)
    ours, real = peer.replay("DELETE_TOPIC_IN_BROKER")
    assert header_shape(ours) == header_shape(real) and ours.remark == real.remark
    assert "TopicTmpDel" not in admin.get_all_topic_config(broker.addr).topic_config_table
    with pytest.raises(RemotingError) as err:
        admin.delete_topic_in_broker([broker.addr], "TBW102")
    assert (err.value.code, err.value.remark) == (1, "The topic[TBW102] is conflict with system topic.")
    with pytest.raises(RemotingError) as err:
        admin.create_and_update_topic_config(broker.addr, b.TopicConfig(topic_name="bad topic"))
    assert err.value.remark == "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"


def test_topic_stats_have_the_captured_shape(peer):
    peer.call(captured_request("UPDATE_AND_CREATE_TOPIC"))
    ours, real = peer.replay("GET_TOPIC_STATS_INFO")
    assert header_shape(ours) == header_shape(real)
    ours_table = b.TopicStatsTable.decode(ours.body).offset_table
    real_table = b.TopicStatsTable.decode(real.body).offset_table
    assert [(mq.topic, mq.queue_id) for mq in ours_table] == [(mq.topic, mq.queue_id) for mq in real_table]
    assert all(offset == b.TopicOffset(0, 0, 0) for offset in ours_table.values())
    missing = captured_request("GET_TOPIC_STATS_INFO")
    missing.ext_fields["topic"] = "NoSuchTopic"
    answer = peer.call(missing)
    assert (answer.code, answer.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[NoSuchTopic] not exist")


# --- subscription groups -------------------------------------------------------------------------------------------


def test_subscription_groups_are_the_captured_table(peer, admin, broker):
    ours, real = peer.replay("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP")
    assert header_shape(ours) == header_shape(real) and ours.remark is None
    broker.groups.find("")  # auto-created by the C++ producer's UNREGISTER_CLIENT in the capture
    ours, real = peer.replay("GET_ALL_SUBSCRIPTIONGROUP_CONFIG")
    assert header_shape(ours) == header_shape(real)
    ours_table = fastjson.loads(ours.body)["subscriptionGroupTable"]
    real_table = fastjson.loads(real.body)["subscriptionGroupTable"]
    assert list(ours_table.items()) == list(real_table.items())
    admin.delete_subscription_group(broker.addr, "cg_test")
    assert "cg_test" not in admin.get_all_subscription_group(broker.addr).subscription_group_table


# --- configuration and runtime figures -----------------------------------------------------------------------------


def test_broker_config_lists_the_captured_keys_in_order_with_a_data_version(peer, broker):
    ours, real = peer.replay("GET_BROKER_CONFIG")
    assert header_shape(ours) == header_shape(real)
    ours_config, real_config = b.parse_properties(ours.body), b.parse_properties(real.body)
    assert list(ours_config) == list(real_config)
    assert ours_config["listenPort"] == str(broker.port)
    assert ours_config["brokerRole"] == "ASYNC_MASTER"
    assert list(json.loads(ours.ext_fields["version"])) == ["counter", "timestamp"]


def test_update_broker_config_bumps_the_version_and_ignores_unknown_keys(admin, broker, peer):
    before = json.loads(peer.call(captured_request("GET_BROKER_CONFIG")).ext_fields["version"])
    admin.update_broker_config(broker.addr, {"defaultTopicQueueNums": "4", "noSuchKey": "x", "maxDelayTime": "NaN"})
    after = peer.call(captured_request("GET_BROKER_CONFIG"))
    config = b.parse_properties(after.body)
    assert config["defaultTopicQueueNums"] == "4" and "noSuchKey" not in config and config["maxDelayTime"] == "40"
    assert json.loads(after.ext_fields["version"])["counter"] == before["counter"] + 1


def test_runtime_info_has_the_captured_keys(peer, broker):
    ours, real = peer.replay("GET_BROKER_RUNTIME_INFO")
    assert header_shape(ours) == header_shape(real)
    ours_table = b.KVTable.decode(ours.body).table
    real_table = b.KVTable.decode(real.body).table

    def general(keys):
        return {key.split("_/")[0] for key in keys if not key.startswith("scheduleMessageOffset_")}

    assert general(ours_table) == general(real_table)
    assert f"commitLogDiskRatio_{broker.config['storePathCommitLog']}" in ours_table
    info = b.BrokerRuntimeInfo.from_kvtable(ours_table)
    assert (info.broker_version_desc, info.broker_version, info.msg_put_total_today_now) == ("V4_9_4", 401, 0)
    assert info.commit_log_dir_capacity == "Total : 256.0 MiB, Free : 256.0 MiB."
    assert 0 <= info.runtime_seconds < 60


def test_stats_errors_have_the_captured_remarks(peer):
    for name in ("VIEW_BROKER_STATS_DATA_stats_not_exist", "VIEW_BROKER_STATS_DATA_group_key_wrong_order"):
        ours, real = peer.replay(name)
        ours.opaque = real.opaque
        assert encode_frame(ours) == encode_frame(real)


def test_unknown_code_is_answered_with_the_captured_frame(peer):
    ours, real = peer.replay("REQUEST_CODE_NOT_SUPPORTED_broker")
    ours.opaque = real.opaque
    assert encode_frame(ours) == encode_frame(real)
