"""The sandbox name server against the real 4.9.4 captures, the project's admin client and the real C++ client.

Brokers are played by replaying the captured REGISTER_BROKER frames over connections of their own; where the
sandbox then holds the same data as the captured name server, its answers must be the captured bytes.
"""

import base64
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from monitor.remoting import body as b
from monitor.remoting import fastjson
from monitor.remoting import headers as h
from monitor.remoting.admin import MQAdmin
from monitor.remoting.client import RemotingClient
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand, decode_frame, encode_frame, next_opaque
from monitor.remoting.errors import RemotingError, RemotingTimeoutError
from monitor.remoting.javahash import java_hashmap_order
from monitor.remoting.sync import run_sync
from monitor.sandbox.namesrv import NameServer
from tests.fixtures import captured
from tests.support.waiting import wait_for

MASTER = "127.0.0.1:10911"
SLAVE = "127.0.0.1:11911"


def captured_body(name: str):
    return fastjson.loads(captured(name)["response"]["body_text"])


def shape(value):
    """The key structure of a parsed body: keys kept (int keys stay int), leaves replaced by their type."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({repr(shape(item)) for item in value})
    return type(value).__name__


class Peer:
    """One client connection to the name server (a broker or an admin tool), driven synchronously."""

    def __init__(self, addr: str, timeout: float = 3.0):
        self.addr = addr
        self.client = RemotingClient(timeout=timeout)

    def call(self, cmd: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        return run_sync(self.client.invoke(self.addr, cmd, timeout=timeout))

    def replay(self, name: str) -> tuple[bytes, bytes]:
        """Send a captured request; return our answer re-encoded with the captured opaque, and the captured answer."""
        data = captured(name)
        cmd = decode_frame(base64.b64decode(data["request"]["frame_b64"]))
        original_opaque, cmd.opaque = cmd.opaque, next_opaque()
        response = self.call(cmd)
        response.opaque = original_opaque
        return encode_frame(response), base64.b64decode(data["response"]["frame_b64"])

    def close(self) -> None:
        run_sync(self.client.close())


@pytest.fixture
def peers(ns):
    opened = []

    def connect(timeout: float = 3.0) -> Peer:
        opened.append(Peer(ns.addr, timeout))
        return opened[-1]

    yield connect
    for peer in opened:
        peer.close()


@pytest.fixture
def admin(ns):
    client = MQAdmin(ns.addr, timeout=2.0)
    yield client
    client.close()


@pytest.fixture
def cluster(peers):
    """broker-a master and slave registered as in the captures, each over its own connection."""
    master, slave = peers(), peers()
    for peer, name in ((master, "REGISTER_BROKER"), (slave, "REGISTER_BROKER_slave")):
        ours, real = peer.replay(name)
        assert ours == real
    return master, slave


# --- registration and the answers built from it ----------------------------------------------------------------


def test_slave_registration_answer_tells_master_and_ha_address(cluster):
    # The fixture already compared the whole frames; the point of the slave's answer is these two fields.
    _, slave = cluster
    header = h.RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr=SLAVE,
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:11912",
        broker_id=1,
    )
    response = slave.call(RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields()))
    assert response.ext_fields == {"haServerAddr": "127.0.0.1:10912", "masterAddr": MASTER}


@pytest.mark.parametrize(
    "name",
    [
        "GET_BROKER_CLUSTER_INFO",
        "GET_BROKER_CLUSTER_INFO_rocketmq_serialize",
        "GET_ROUTEINFO_BY_TOPIC",
        "GET_ROUTEINFO_BY_TOPIC_rocketmq_serialize",
        "GET_ROUTEINFO_BY_TOPIC_old_client_version",
        "GET_ROUTEINFO_BY_TOPIC_topic_not_exist",
    ],
)
def test_answers_are_the_captured_bytes(cluster, peers, name):
    ours, real = peers().replay(name)
    assert ours == real
    if captured(name)["response"].get("body_text"):
        assert shape(fastjson.loads(decode_frame(ours).body)) == shape(captured_body(name))


def test_cluster_info_keeps_fastjsons_unquoted_int_keys_and_routes_switch_on_version(cluster, peers):
    admin = peers()
    info = fastjson.loads(admin.call(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)).body)
    assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: MASTER, 1: SLAVE}

    def route(version: int, **ext) -> bytes:
        cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest", **ext})
        cmd.version = version
        return admin.call(cmd).body

    assert b'"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:11911"}' in route(401)
    assert b'"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:11911"}' in route(63)
    assert b'"brokerAddrs":{"0":' in route(63, acceptStandardJsonOnly="true")
    json.loads(route(401))  # standard JSON parses with the stdlib


def test_topic_list_has_the_captured_shape_and_java_order(cluster, admin):
    # The capture was taken before %RETRY%cg_test existed; every other topic comes in the same HashSet order.
    topics = admin.fetch_all_topic_list().topic_list
    real = captured_body("GET_ALL_TOPIC_LIST_FROM_NAMESERVER")
    assert [t for t in topics if t != "%RETRY%cg_test"] == real["topicList"]
    assert topics == java_hashmap_order(topics)
    assert set(admin.fetch_topics_by_cluster("DefaultCluster").topic_list) == set(topics)
    assert admin.fetch_topics_by_cluster("NoSuchCluster").topic_list == []


def test_admin_client_reads_cluster_and_route(cluster, admin):
    info = admin.examine_broker_cluster_info()
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: MASTER, 1: SLAVE}
    route = admin.examine_topic_route_info("TopicTest")
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 8, 8, 6)
    ]
    assert route.broker_datas[0].master_addr == MASTER


def test_topic_not_exist_remark_is_exact(ns, admin):
    with pytest.raises(RemotingError) as err:
        admin.examine_topic_route_info("NoSuchTopic")
    assert err.value.code == ResponseCode.TOPIC_NOT_EXIST
    assert err.value.remark == (
        "No topic route info in name server for the topic: NoSuchTopic\n"
        "See http://rocketmq.apache.org/docs/faq/ for further details."
    )


def test_queue_data_comes_from_the_master_only(ns, peers, admin):
    def register(peer, broker_id, addr, topics):
        wrapper = b.TopicConfigSerializeWrapper(
            topic_config_table={t: b.TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4) for t in topics}
        )
        header = h.RegisterBrokerRequestHeader(
            broker_name="broker-b",
            broker_addr=addr,
            cluster_name="C",
            ha_server_addr="127.0.0.1:1",
            broker_id=broker_id,
        )
        body = b.RegisterBrokerBody(wrapper).encode()
        assert peer.call(RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)).code == 0

    register(peers(), 1, "127.0.0.1:2", ["only-on-slave"])
    assert admin.fetch_all_topic_list().topic_list == []
    register(peers(), 0, "127.0.0.1:1", ["T1", "T2"])
    assert sorted(admin.fetch_all_topic_list().topic_list) == ["T1", "T2"]


# --- brokers leaving -------------------------------------------------------------------------------------------


def test_closing_a_brokers_connection_drops_it_at_once(cluster, peers, admin):
    master, slave = cluster
    peer = peers()

    def cluster_info() -> bytes:
        return encode_frame(peer.call(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)))

    slave.close()
    expected = base64.b64decode(captured("GET_BROKER_CLUSTER_INFO_after_slave_stop")["response"]["frame_b64"])
    wait_for(lambda: decode_frame(cluster_info()).body == decode_frame(expected).body, timeout=1.0)

    master.close()
    wait_for(lambda: b'brokerAddrTable":{}' in decode_frame(cluster_info()).body, timeout=1.0)
    with pytest.raises(RemotingError):
        admin.examine_topic_route_info("TopicTest")


def test_unregister_broker_answer_and_effect(cluster, peers, admin):
    ours, real = peers().replay("UNREGISTER_BROKER")
    assert ours == real
    assert admin.examine_broker_cluster_info().broker_addr_table["broker-a"].broker_addrs == {0: MASTER}


def test_brokers_that_stop_registering_expire():
    with NameServer(broker_expiry=0.2, scan_interval=0.05) as ns:
        broker = Peer(ns.addr)
        try:
            broker.replay("REGISTER_BROKER")
            assert len(ns.connections) == 1
            wait_for(lambda: not ns.routes.broker_addr_table and not ns.connections, timeout=2.0)
            assert ns.routes.topic_queue_table == {}
        finally:
            broker.close()


def test_delete_topic_in_namesrv(cluster, peers, admin):
    ours, real = peers().replay("DELETE_TOPIC_IN_NAMESRV")
    assert ours == real
    admin.delete_topic_in_name_server("TopicTest", "DefaultCluster")
    assert "TopicTest" not in admin.fetch_all_topic_list().topic_list
    admin.delete_topic_in_name_server("TBW102")
    assert "TBW102" not in admin.fetch_all_topic_list().topic_list


def test_data_version_query_and_system_and_unit_topic_lists(cluster, peers):
    peer = peers()
    ask = {"brokerName": "broker-a", "brokerAddr": MASTER, "clusterName": "DefaultCluster", "brokerId": "0"}
    registered = b'{"counter":7,"timestamp":1795309559069}'
    same = peer.call(RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, ask, registered))
    newer = peer.call(RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, ask, b'{"counter":8,"timestamp":1}'))
    assert (same.ext_fields, same.body) == ({"changed": "false"}, registered)
    assert newer.ext_fields == {"changed": "true"}

    system = b.TopicList.decode(peer.call(RemotingCommand.request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)).body)
    assert (sorted(system.topic_list), system.broker_addr) == (["DefaultCluster", "broker-a"], MASTER)

    # A broker older than V3_0_11 registers a bare TopicConfigSerializeWrapper; here with a unit topic (sys flag 1).
    unit = b.TopicConfig(topic_name="UnitTopic", topic_sys_flag=1)
    wrapper = b.TopicConfigSerializeWrapper(topic_config_table={"UnitTopic": unit})
    header = h.RegisterBrokerRequestHeader(
        broker_name="old", broker_addr="127.0.0.1:3", cluster_name="Old", ha_server_addr="h", broker_id=0
    )
    old = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), wrapper.encode())
    old.version = 36
    assert peer.call(old).code == 0
    units = peer.call(RemotingCommand.request(RequestCode.GET_UNIT_TOPIC_LIST)).body
    assert b.TopicList.decode(units).topic_list == ["UnitTopic"]
    for code in (RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST):
        assert b.TopicList.decode(peer.call(RemotingCommand.request(code)).body).topic_list == []


def test_wipe_and_add_write_perm(cluster, peers, admin):
    peer = peers()
    wiped = peer.call(RemotingCommand.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}))
    assert wiped.ext_fields == {"wipeTopicCount": "12"}
    assert admin.examine_topic_route_info("TopicTest").queue_datas[0].perm == b.PermName.PERM_READ
    added = peer.call(RemotingCommand.request(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}))
    assert added.ext_fields == {"addTopicCount": "12"}
    assert admin.examine_topic_route_info("TBW102").queue_datas[0].perm == 6  # RW, the inherit bit is not restored


def test_compressed_registration(ns, peers, admin):
    """compressedRegister=true brokers send a zlib stream of length-prefixed parts (RegisterBrokerBody.encode)."""
    parts = [
        b'{"counter":3,"timestamp":1}',
        struct.pack(">i", 2),
        b"TopicZ 4 2 6 SINGLE_TAG",
        b"TopicY 1 1 4 MULTI_TAG",
    ]
    raw = struct.pack(">i", len(parts[0])) + parts[0] + parts[1]
    raw += b"".join(struct.pack(">i", len(p)) + p for p in parts[2:]) + struct.pack(">i", 2) + b"[]"
    body = zlib.compress(raw, 9)
    header = h.RegisterBrokerRequestHeader(
        broker_name="broker-z",
        broker_addr="127.0.0.1:1",
        cluster_name="Z",
        ha_server_addr="127.0.0.1:2",
        broker_id=0,
        compressed=True,
        body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
    )
    assert peers().call(RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)).code == 0
    queues = admin.examine_topic_route_info("TopicZ").queue_datas[0]
    assert (queues.read_queue_nums, queues.write_queue_nums, queues.perm) == (4, 2, 6)


def test_bad_requests_get_java_style_errors(ns, peers):
    peer = peers()
    header = h.RegisterBrokerRequestHeader(
        broker_name="x", broker_addr="127.0.0.1:1", cluster_name="C", ha_server_addr="h", broker_id=0, body_crc32=1
    )
    bad_crc = peer.call(RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), b"{}"))
    assert (bad_crc.code, bad_crc.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    missing = peer.call(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {}))
    assert missing.code == ResponseCode.SYSTEM_ERROR
    assert missing.remark == (
        "org.apache.rocketmq.remoting.exception.RemotingCommandException: the custom field <topic> is null"
    )


def test_unknown_code_is_never_answered(ns, peers):
    peer = peers(timeout=0.5)
    data = captured("UNKNOWN_CODE_namesrv_no_response")
    cmd = decode_frame(base64.b64decode(data["request"]["frame_b64"]))
    cmd.opaque = next_opaque()
    with pytest.raises(RemotingTimeoutError):
        peer.call(cmd)
    assert ns.received[9999] == 1
    assert peer.call(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)).code == 0  # connection still fine


# --- KV config and name server config --------------------------------------------------------------------------


def test_kv_config_round_trip(ns, peers, admin):
    admin.put_kv_config("NS_A", "k1", "v1")
    admin.put_kv_config("NS_A", "k2", "v=2")
    assert admin.get_kv_config("NS_A", "k1") == "v1"
    assert admin.get_kv_list_by_namespace("NS_A").table == {"k1": "v1", "k2": "v=2"}

    peer = peers()
    header = h.DeleteKVConfigRequestHeader(namespace="NS_A", key="k1")
    assert peer.call(RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, header.to_ext_fields())).code == 0
    assert admin.get_kv_config("NS_A", "k1") is None
    missing = peer.call(RemotingCommand.request(RequestCode.GET_KV_CONFIG, {"namespace": "NS_A", "key": "k1"}))
    assert (missing.code, missing.remark, missing.ext_fields) == (
        ResponseCode.QUERY_NOT_FOUND,
        "No config item, Namespace: NS_A Key: k1",
        {},
    )
    with pytest.raises(RemotingError) as err:
        admin.get_kv_list_by_namespace("NS_NONE")
    assert (err.value.code, err.value.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: NS_NONE")


def test_order_topic_config_reaches_brokers_and_routes(cluster, peers, admin):
    admin.put_kv_config("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:8")
    register = decode_frame(base64.b64decode(captured("REGISTER_BROKER")["request"]["frame_b64"]))
    register.opaque = next_opaque()
    response = peers().call(register)
    assert b.KVTable.decode(response.body).table == {"TopicTest": "broker-a:8"}
    assert admin.examine_topic_route_info("TopicTest").order_topic_conf is None
    admin.update_name_server_config({"orderMessageEnable": "true"})
    assert admin.examine_topic_route_info("TopicTest").order_topic_conf == "broker-a:8"


def test_name_server_config_has_the_real_keys_in_the_real_order(ns, admin):
    config = admin.get_name_server_config()[ns.addr]
    real = b.parse_properties(captured("GET_NAMESRV_CONFIG")["response"]["body_text"])
    assert list(config) == list(real)
    assert config["listenPort"] == str(ns.port)
    admin.update_name_server_config({"serverWorkerThreads": "16", "clusterTest": "TRUE", "listenPort": "x", "bad": "1"})
    updated = admin.get_name_server_config()[ns.addr]
    assert (updated["serverWorkerThreads"], updated["clusterTest"], updated["listenPort"]) == (
        "16",
        "true",
        str(ns.port),
    )
    assert "bad" not in updated


# --- faults ----------------------------------------------------------------------------------------------------


def test_paused_name_server_times_out_and_resumes(ns):
    with MQAdmin(ns.addr, timeout=0.5) as impatient, MQAdmin(ns.addr) as patient:
        ns.pause()
        with pytest.raises(RemotingTimeoutError):
            impatient.examine_broker_cluster_info()
        ns.resume()
        assert patient.examine_broker_cluster_info().broker_addr_table == {}


# --- the real C++ client (rocketmq==0.4.4) ---------------------------------------------------------------------

CPP_PRODUCER = """
import sys, time
from rocketmq.client import Message, Producer
producer = Producer("pg_sandbox", timeout=3000)
producer.set_namesrv_addr(sys.argv[1])
producer.start()
message = Message("TopicTest")
message.set_body("hello")
started = time.monotonic()
try:
    producer.send_sync(message)
    print("SENT")
except Exception as exc:
    print("ERROR", exc)
print("ELAPSED", time.monotonic() - started)
producer.shutdown()
"""


def run_cpp_producer(addr: str, home: Path) -> str:
    """In a subprocess: the C++ client can block for a minute on a hung peer, and it logs to $HOME/logs."""
    result = subprocess.run(
        [sys.executable, "-c", CPP_PRODUCER, addr],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "HOME": str(home)},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_cpp_producer_without_broker_gets_a_route_error_fast(ns, tmp_path):
    out = run_cpp_producer(ns.addr, tmp_path)
    assert "ERROR No route info of this topic: TopicTest" in out
    assert float(out.split("ELAPSED")[1]) < 5
    assert ns.received[RequestCode.GET_ROUTEINFO_BY_TOPIC] >= 1


def test_cpp_producer_reads_the_old_client_route(ns, peers, tmp_path):
    # A route to a broker address nobody listens on: the C++ client must parse the version-63 fastjson route
    # (unquoted int keys) and then fail to connect to exactly that address.
    header = h.RegisterBrokerRequestHeader(
        broker_name="broker-a", broker_addr="127.0.0.1:9", cluster_name="C", ha_server_addr="127.0.0.1:9", broker_id=0
    )
    wrapper = b.TopicConfigSerializeWrapper(topic_config_table={"TopicTest": b.TopicConfig(topic_name="TopicTest")})
    request = RemotingCommand.request(
        RequestCode.REGISTER_BROKER, header.to_ext_fields(), b.RegisterBrokerBody(wrapper).encode()
    )
    assert peers().call(request).code == 0
    out = run_cpp_producer(ns.addr, tmp_path)
    assert "ERROR" in out
    log_text = "".join(p.read_text(errors="replace") for p in (tmp_path / "logs").rglob("*") if p.is_file())
    assert "can not connect to server:127.0.0.1:9" in log_text
    assert ns.received[RequestCode.GET_ROUTEINFO_BY_TOPIC] == 1
