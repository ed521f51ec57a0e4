"""SandboxCluster: name server, masters and slaves together, as the captured master + slave pair behaved.

A slave must refuse admin changes like the captured one, copy its master's topics and groups (SlaveSynchronize),
replicate its commit log byte for byte, and count the replicated messages as puts; brokers stop and come back on
the same port with their data; with ACL on, unsigned or badly signed requests get RocketMQ's refusal.
"""

import base64

import pytest

from monitor.remoting import body as b
from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, MQAdmin
from monitor.remoting.client import RemotingClient
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand, decode_frame, encode_frame, next_opaque
from monitor.remoting.errors import RemotingConnectError, RemotingError
from monitor.remoting.sync import run_sync
from monitor.sandbox.broker._common import InnerMessage
from monitor.sandbox.cluster import SandboxCluster
from tests.fixtures import captured, captured_request
from tests.support.waiting import wait_for


def call(addr: str, cmd: RemotingCommand, client: RemotingClient | None = None) -> RemotingCommand:
    own = client is None
    client = client or RemotingClient(timeout=3.0)
    try:
        return run_sync(client.invoke(addr, cmd))
    finally:
        if own:
            run_sync(client.close())


@pytest.fixture
def cluster():
    with SandboxCluster(brokers=2, slaves=True, slave_sync_interval=0.1) as sandbox:
        yield sandbox


@pytest.fixture
def admin(cluster):
    client = MQAdmin(cluster.namesrv_addr, timeout=3.0)
    yield client
    client.close()


def put(broker, topic: str, body: bytes, queue_id: int = 0) -> None:
    """Store a message on a master the way its send path does, from the broker's own loop."""

    async def store() -> None:
        broker.put_message(InnerMessage(topic=topic, queue_id=queue_id, body=body, properties={"TAGS": "t"}))

    broker.run(store())


def test_cluster_has_masters_and_slaves_named_like_a_real_one(cluster, admin):
    info = admin.examine_broker_cluster_info()
    assert {cluster: sorted(names) for cluster, names in info.cluster_addr_table.items()} == {
        "DefaultCluster": ["broker-a", "broker-b"]
    }
    for name in ("broker-a", "broker-b"):
        master, slave = cluster.broker(name, 0), cluster.broker(name, 1)
        assert info.broker_addr_table[name].broker_addrs == {0: master.addr, 1: slave.addr}
        assert slave.master_addr == master.addr  # learnt from the name server's registration answer
    config = admin.get_broker_config(cluster.broker("broker-a", 1).addr)
    assert (config["brokerRole"], config["brokerId"], config["brokerName"]) == ("SLAVE", "1", "broker-a")
    assert config["namesrvAddr"] == cluster.namesrv_addr


def test_slave_refuses_admin_changes_with_the_captured_frame(cluster):
    data = captured("DELETE_TOPIC_IN_BROKER_slave_rejected")
    request = decode_frame(base64.b64decode(data["request"]["frame_b64"]))
    request.opaque = next_opaque()
    answer = call(cluster.broker("broker-a", 1).addr, request)
    answer.opaque = data["response"]["header"]["opaque"]
    assert encode_frame(answer) == base64.b64decode(data["response"]["frame_b64"])


def test_slave_copies_topics_and_groups_from_its_master(cluster, admin):
    master, slave = cluster.broker("broker-a", 0), cluster.broker("broker-a", 1)
    admin.create_and_update_topic_config(master.addr, b.TopicConfig(topic_name="TopicTest", read_queue_nums=4))
    admin.create_and_update_subscription_group_config(master.addr, b.SubscriptionGroupConfig(group_name="cg_test"))

    def copied() -> bool:
        topics = admin.get_all_topic_config(slave.addr)
        groups = admin.get_all_subscription_group(slave.addr)
        return "TopicTest" in topics.topic_config_table and "cg_test" in groups.subscription_group_table

    wait_for(copied, timeout=5.0)
    assert admin.get_all_topic_config(slave.addr) == admin.get_all_topic_config(master.addr)
    assert "TopicTest" not in admin.get_all_topic_config(cluster.broker("broker-b", 1).addr).topic_config_table


def test_slave_replicates_the_commit_log_and_counts_it_as_puts(cluster, admin):
    master, slave = cluster.broker("broker-a", 0), cluster.broker("broker-a", 1)
    for number in range(5):
        put(master, "TopicTest", f"message {number}".encode(), queue_id=number % 2)
    wait_for(lambda: slave.store.commit_log_max_offset == master.store.commit_log_max_offset, timeout=5.0)
    assert slave.store.records_since(0) == master.store.records_since(0)
    assert slave.store.max_offset("TopicTest", 0) == 3
    runtime = b.BrokerRuntimeInfo.from_kvtable(admin.fetch_broker_runtime_stats(slave.addr))
    assert runtime.msg_put_total_today_now == 5
    assert runtime.commit_log_max_offset == master.store.commit_log_max_offset


def test_stopped_brokers_leave_the_cluster_and_come_back_on_their_port_with_their_data(cluster, admin):
    master, slave = cluster.broker("broker-a", 0), cluster.broker("broker-a", 1)
    put(master, "TopicTest", b"kept")
    port = slave.port
    cluster.stop_broker("broker-a", 1)
    assert admin.examine_broker_cluster_info().broker_addr_table["broker-a"].broker_addrs == {0: master.addr}
    with pytest.raises(RemotingConnectError):
        admin.fetch_broker_runtime_stats(slave.addr)
    cluster.start_broker("broker-a", 1)
    assert slave.port == port
    assert admin.examine_broker_cluster_info().broker_addr_table["broker-a"].broker_addrs == {
        0: master.addr,
        1: slave.addr,
    }
    cluster.stop_broker("broker-a", 0)
    cluster.start_broker("broker-a", 0)
    assert master.store.max_offset("TopicTest", 0) == 1
    wait_for(lambda: slave.master_addr == master.addr and slave.store.max_offset("TopicTest", 0) == 1, timeout=5.0)


def test_order_config_in_the_name_server_marks_topics_ordered_at_registration(cluster, admin):
    """A 4.9.4 broker learns which topics are ordered from the ORDER_TOPIC_CONFIG table the name server answers
    its registrations with (updateOrderTopicConfig): a topic created once its entry exists is ordered at once, one
    whose entry is gone stops being so at the next periodic registration, each a new version of the table."""
    master = cluster.broker("broker-a")
    admin.put_kv_config(ORDER_TOPIC_NAMESPACE, "TopicOrdered", "broker-a:4;broker-b:4")
    admin.create_and_update_topic_config(master.addr, b.TopicConfig(topic_name="TopicOrdered", read_queue_nums=4))
    created = admin.get_all_topic_config(master.addr)
    assert created.topic_config_table["TopicOrdered"].order
    admin.delete_kv_config(ORDER_TOPIC_NAMESPACE, "TopicOrdered")
    master.run(master.register_broker_all())  # what the 30 s period sends
    after = admin.get_all_topic_config(master.addr)
    assert not after.topic_config_table["TopicOrdered"].order
    assert after.data_version.counter == created.data_version.counter + 1


def test_disk_use_is_a_whole_percentage_as_a_real_broker_reports_its_disk():
    """UtilAll.getDiskPartitionSpaceUsedPercent rounds a disk's use up to a whole percent, so the monitor's disk
    figures are hundredths; the sandbox's disk is its commit-log budget. A slave refusing a send names the same
    figures as fractions (SendMessageProcessor.diskUtil's %5.2f of the ratio)."""
    with SandboxCluster(slaves=True, slave_sync_interval=0.1, store_max_bytes=100_000) as sandbox:
        master, slave = sandbox.broker("broker-a", 0), sandbox.broker("broker-a", 1)
        with MQAdmin(sandbox.namesrv_addr, timeout=3.0) as admin:
            admin.create_and_update_topic_config(master.addr, b.TopicConfig(topic_name="TopicTest", read_queue_nums=4))
            put(master, "TopicTest", b"x" * 1000)  # 1.2 % of the budget once stored: 2 % rounded up
            runtime = admin.fetch_broker_runtime_stats(master.addr).table
            wait_for(lambda: "TopicTest" in admin.get_all_topic_config(slave.addr).topic_config_table, timeout=5.0)
            wait_for(lambda: slave.store.commit_log_max_offset == master.store.commit_log_max_offset, timeout=5.0)
        refused = call(slave.addr, captured_request("SEND_MESSAGE_cpp_client"))
    disk = {key: value for key, value in runtime.items() if "DiskRatio" in key}
    assert disk == dict.fromkeys(disk, "0.02") and len(disk) == 3
    assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert "the broker's disk is full [CL:  0.02 CQ:  0.02 INDEX:  0.02]" in refused.remark


def test_cluster_rejects_bad_sizes():
    with pytest.raises(ValueError):
        SandboxCluster(brokers=0)


# --- ACL -------------------------------------------------------------------------------------------------------------

ACL_REMARK = (
    "org.apache.rocketmq.acl.common.AclException: {}, "
    "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:{})"
)


@pytest.fixture
def acl_cluster():
    with SandboxCluster(acl={"rocketmq2": "12345678"}, slaves=True, slave_sync_interval=0.1) as sandbox:
        yield sandbox


def test_acl_refuses_unsigned_and_badly_signed_requests(acl_cluster):
    addr = acl_cluster.broker().addr
    answer = call(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == ACL_REMARK.format("No accessKey is configured", 663)
    stranger = RemotingClient(acl=AclCredentials("nobody", "x"))
    answer = call(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), stranger)
    assert answer.remark == ACL_REMARK.format("No acl config for nobody", 667)
    wrong = RemotingClient(acl=AclCredentials("rocketmq2", "wrong"))
    answer = call(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), wrong)
    assert answer.remark == ACL_REMARK.format("Check signature failed for accessKey=rocketmq2", 683)
    for client in (stranger, wrong):
        run_sync(client.close())


def test_acl_accepts_signed_requests_and_slaves_still_sync(acl_cluster):
    master, slave = acl_cluster.broker("broker-a", 0), acl_cluster.broker("broker-a", 1)
    with MQAdmin(acl_cluster.namesrv_addr, acl=AclCredentials("rocketmq2", "12345678")) as admin:
        assert admin.get_broker_config(master.addr)["aclEnable"] == "true"
        admin.create_and_update_topic_config(master.addr, b.TopicConfig(topic_name="Secured"))
        wait_for(lambda: "Secured" in admin.get_all_topic_config(slave.addr).topic_config_table, timeout=5.0)
    with pytest.raises(RemotingError) as err, MQAdmin(acl_cluster.namesrv_addr) as unsigned:
        unsigned.get_all_topic_config(master.addr)
    assert err.value.code == ResponseCode.SYSTEM_ERROR
