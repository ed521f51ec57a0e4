"""cluster_ops against real sandbox clusters: what each operation leaves on the brokers and name servers, and how
failures read."""

import re

import pytest

from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, MQAdmin
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.errors import RemotingError
from monitor.sandbox.cluster import SandboxCluster
from portal.models import BrokerRole, Cluster, NameServer
from portal.services import cluster_ops
from portal.services.cluster_ops import ClusterOperationError, NameServerUnreachable


@pytest.fixture
def wire(sandbox):
    with MQAdmin(sandbox.namesrv_addr, timeout=2) as admin:
        yield admin


def masters_of(admin):
    info = admin.examine_broker_cluster_info()
    return {name: data.master_addr for name, data in info.broker_addr_table.items()}


def topic_configs(admin, topic):
    """broker name -> the topic's config on that master (None where it is absent)."""
    return {
        name: admin.get_all_topic_config(addr).topic_config_table.get(topic) for name, addr in masters_of(admin).items()
    }


def route_or_none(admin, topic):
    try:
        return admin.examine_topic_route_info(topic)
    except RemotingError as exc:
        assert exc.code == ResponseCode.TOPIC_NOT_EXIST
        return None


@pytest.fixture
def fast_timeouts(settings):
    settings.ROCKETMQ_REQUEST_TIMEOUT = 0.5


@pytest.fixture
def own_sandbox(db):
    """A cluster of our own to break: two broker names, masters only."""
    with SandboxCluster(brokers=2) as sandbox:
        yield sandbox


def register(sandbox, name="own", **fields):
    cluster = Cluster.objects.create(name=name, **fields)
    NameServer.objects.create(cluster=cluster, address=sandbox.namesrv_addr)
    return cluster


# --- brokers ------------------------------------------------------------------------------------------------------


def test_discover_brokers_records_every_broker_with_role_and_version(cluster):
    brokers = cluster_ops.discover_brokers(cluster)

    described = {(b.broker_name, b.broker_id, b.role, b.version, b.cluster_name, b.present) for b in brokers}
    assert described == {
        ("broker-a", 0, BrokerRole.ASYNC_MASTER, "V4_9_4", "DefaultCluster", True),
        ("broker-a", 1, BrokerRole.SLAVE, "V4_9_4", "DefaultCluster", True),
        ("broker-b", 0, BrokerRole.ASYNC_MASTER, "V4_9_4", "DefaultCluster", True),
        ("broker-b", 1, BrokerRole.SLAVE, "V4_9_4", "DefaultCluster", True),
    }
    assert cluster.brokers.count() == 4
    assert all(b.last_seen_at is not None for b in brokers)


def test_discover_brokers_again_updates_rows_instead_of_adding(cluster):
    cluster_ops.discover_brokers(cluster)
    cluster_ops.discover_brokers(cluster)

    assert cluster.brokers.count() == 4


def test_a_broker_the_name_server_no_longer_lists_is_kept_as_not_present(own_sandbox):
    cluster = register(own_sandbox)
    cluster_ops.discover_brokers(cluster)
    own_sandbox.stop_broker("broker-b")

    listed = cluster_ops.discover_brokers(cluster)

    assert [b.broker_name for b in listed] == ["broker-a"]
    gone = cluster.brokers.get(broker_name="broker-b")
    assert not gone.present
    assert gone.role == BrokerRole.ASYNC_MASTER  # what it was last seen as


def test_a_broker_whose_config_is_unreadable_keeps_its_known_identity_and_the_others_are_discovered(own_sandbox):
    cluster = register(own_sandbox)
    cluster_ops.discover_brokers(cluster)
    own_sandbox.corrupt_answers("broker-b", RequestCode.GET_BROKER_CONFIG, b"brokerRole=\xff\xfe\n")

    listed = cluster_ops.discover_brokers(cluster)

    assert sorted(b.broker_name for b in listed) == ["broker-a", "broker-b"]
    assert cluster.brokers.get(broker_name="broker-b").role == BrokerRole.ASYNC_MASTER  # as last read


def test_discover_brokers_without_an_answering_name_server_fails(db, fast_timeouts, own_sandbox):
    cluster = register(own_sandbox)
    own_sandbox.hang("namesrv")

    with pytest.raises(NameServerUnreachable, match="No name server of cluster own answered"):
        cluster_ops.discover_brokers(cluster)
    assert cluster.brokers.count() == 0


# What a real 4.9.4 broker answers GET_BROKER_RUNTIME_INFO with for about a second after it boots.
NOT_SAMPLED_YET = "java.util.NoSuchElementException, java.base/java.util.LinkedList.getLast(LinkedList.java:261)"


def answer_runtime_info_with_errors(sandbox, broker_name: str, errors: int | None) -> list:
    """The broker answers GET_BROKER_RUNTIME_INFO with SYSTEM_ERROR ``errors`` times (None: always), as a 4.9.4
    broker does until its store has sampled; returns the list of refused requests."""
    broker = sandbox.broker(broker_name)
    original = broker._handlers[RequestCode.GET_BROKER_RUNTIME_INFO]
    refused = []

    async def not_sampled_yet(conn, cmd):
        if errors is None or len(refused) < errors:
            refused.append(cmd)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, NOT_SAMPLED_YET)
        return await original(conn, cmd)

    broker.register(RequestCode.GET_BROKER_RUNTIME_INFO, not_sampled_yet)
    return refused


def test_a_broker_that_just_booted_is_asked_again_for_its_version(db, own_sandbox, monkeypatch):
    """Its SYSTEM_ERROR is no refusal (it answered its config just before): registering a cluster right after a
    broker restarts must not fail."""
    monkeypatch.setattr(cluster_ops, "RUNTIME_INFO_PAUSE", 0.0)
    cluster = register(own_sandbox)
    refused = answer_runtime_info_with_errors(own_sandbox, "broker-b", 2)

    brokers = cluster_ops.discover_brokers(cluster)

    assert len(refused) == 2
    assert {(b.broker_name, b.role, b.version) for b in brokers} == {
        ("broker-a", BrokerRole.ASYNC_MASTER, "V4_9_4"),
        ("broker-b", BrokerRole.ASYNC_MASTER, "V4_9_4"),
    }


def test_a_broker_that_cannot_tell_its_version_yet_keeps_the_one_last_seen(db, own_sandbox, monkeypatch):
    """After a few tries the discovery goes on without the version rather than failing or blanking it."""
    monkeypatch.setattr(cluster_ops, "RUNTIME_INFO_PAUSE", 0.0)
    cluster = register(own_sandbox)
    cluster_ops.discover_brokers(cluster)
    refused = answer_runtime_info_with_errors(own_sandbox, "broker-b", None)

    cluster_ops.discover_brokers(cluster)

    assert len(refused) == cluster_ops.RUNTIME_INFO_ATTEMPTS
    broker = cluster.brokers.get(broker_name="broker-b")
    assert (broker.present, broker.role, broker.version) == (True, BrokerRole.ASYNC_MASTER, "V4_9_4")


# --- topics -------------------------------------------------------------------------------------------------------


def test_create_topic_creates_it_on_every_master_with_equal_read_and_write_queues(cluster, wire):
    cluster_ops.create_topic(cluster, "OPS_CREATE", 6, False)

    configs = topic_configs(wire, "OPS_CREATE")
    assert set(configs) == {"broker-a", "broker-b"}
    assert {(c.read_queue_nums, c.write_queue_nums, c.perm) for c in configs.values()} == {(6, 6, 6)}
    route = wire.examine_topic_route_info("OPS_CREATE")
    assert sorted(q.broker_name for q in route.queue_datas) == ["broker-a", "broker-b"]
    assert wire.get_kv_config(ORDER_TOPIC_NAMESPACE, "OPS_CREATE") is None


def test_create_topic_again_updates_the_queue_count(cluster, wire):
    cluster_ops.create_topic(cluster, "OPS_UPSERT", 4, False)
    cluster_ops.create_topic(cluster, "OPS_UPSERT", 12, False)

    assert {c.write_queue_nums for c in topic_configs(wire, "OPS_UPSERT").values()} == {12}


def test_an_ordered_topic_gets_its_order_conf_in_the_name_server(cluster, wire):
    cluster_ops.create_topic(cluster, "OPS_ORDERED", 4, True)

    assert wire.get_kv_config(ORDER_TOPIC_NAMESPACE, "OPS_ORDERED") == "broker-a:4;broker-b:4"


def test_delete_topic_removes_it_from_every_master_and_the_route_from_the_name_server(cluster, wire):
    cluster_ops.create_topic(cluster, "OPS_DELETE", 4, False)

    cluster_ops.delete_topic(cluster, "OPS_DELETE")

    assert topic_configs(wire, "OPS_DELETE") == {"broker-a": None, "broker-b": None}
    assert route_or_none(wire, "OPS_DELETE") is None


def test_deleting_an_ordered_topic_removes_its_order_conf_so_a_new_topic_of_that_name_is_not_ordered(cluster, wire):
    cluster_ops.create_topic(cluster, "OPS_ORDERED_GONE", 4, True)

    cluster_ops.delete_topic(cluster, "OPS_ORDERED_GONE")

    assert wire.get_kv_config(ORDER_TOPIC_NAMESPACE, "OPS_ORDERED_GONE") is None


def test_deleting_a_topic_that_does_not_exist_succeeds(cluster):
    cluster_ops.delete_topic(cluster, "OPS_NEVER_WAS")


# --- subscription groups ------------------------------------------------------------------------------------------


def groups_of(admin, group):
    return {
        name: admin.get_all_subscription_group(addr).subscription_group_table.get(group)
        for name, addr in masters_of(admin).items()
    }


def test_create_subscription_group_creates_it_on_every_master(cluster, wire):
    cluster_ops.create_subscription_group(cluster, "OPS_GROUP", False)
    cluster_ops.create_subscription_group(cluster, "OPS_BROADCAST_GROUP", True)

    clustering = groups_of(wire, "OPS_GROUP")
    assert set(clustering) == {"broker-a", "broker-b"}
    assert all(config is not None and not config.consume_broadcast_enable for config in clustering.values())
    assert all(config.consume_broadcast_enable for config in groups_of(wire, "OPS_BROADCAST_GROUP").values())


def test_delete_subscription_group_removes_it_and_its_retry_topic(cluster, wire):
    cluster_ops.create_subscription_group(cluster, "OPS_GONE_GROUP", False)
    cluster_ops.create_topic(cluster, "%RETRY%OPS_GONE_GROUP", 1, False)  # what a consumer's first retry creates

    cluster_ops.delete_subscription_group(cluster, "OPS_GONE_GROUP")

    assert groups_of(wire, "OPS_GONE_GROUP") == {"broker-a": None, "broker-b": None}
    assert route_or_none(wire, "%RETRY%OPS_GONE_GROUP") is None


# --- failures -----------------------------------------------------------------------------------------------------


def test_a_hung_master_fails_the_operation_naming_the_broker(db, fast_timeouts, own_sandbox):
    cluster = register(own_sandbox)
    own_sandbox.hang("broker-b")

    with pytest.raises(ClusterOperationError, match=r"Creating topic OPS_HUNG on broker broker-b \(127\.0\.0\.1:\d+\)"):
        cluster_ops.create_topic(cluster, "OPS_HUNG", 4, False)


def test_a_known_master_missing_from_the_name_server_fails_the_operation(db, own_sandbox):
    cluster = register(own_sandbox)
    cluster_ops.discover_brokers(cluster)
    own_sandbox.stop_broker("broker-b")

    with pytest.raises(ClusterOperationError, match="master of broker-b is not registered"):
        cluster_ops.create_topic(cluster, "OPS_HALF", 4, False)
    with MQAdmin(own_sandbox.namesrv_addr, timeout=2) as admin:
        assert route_or_none(admin, "OPS_HALF") is None  # not even created on broker-a


def test_a_cluster_without_any_master_is_an_error(db, own_sandbox):
    cluster = register(own_sandbox)
    own_sandbox.stop_broker("broker-a")
    own_sandbox.stop_broker("broker-b")

    with pytest.raises(ClusterOperationError, match="list no master broker"):
        cluster_ops.create_subscription_group(cluster, "OPS_NOWHERE", False)


def test_a_cluster_whose_name_servers_do_not_answer_is_an_error(db, fast_timeouts, own_sandbox):
    cluster = register(own_sandbox)
    own_sandbox.hang("namesrv")

    with pytest.raises(NameServerUnreachable, match=re.escape(own_sandbox.namesrv_addr)):
        cluster_ops.delete_topic(cluster, "OPS_ANY")


# --- ACL ----------------------------------------------------------------------------------------------------------


@pytest.fixture
def acl_sandbox(db):
    with SandboxCluster(brokers=1, acl={"portal": "s3cret"}) as sandbox:
        yield sandbox


def test_an_acl_cluster_is_operated_with_its_stored_credentials(acl_sandbox):
    cluster = register(acl_sandbox, name="acl", acl_access_key="portal", acl_secret_key="s3cret")
    cluster.refresh_from_db()  # the secret as read back from its encrypted column

    brokers = cluster_ops.discover_brokers(cluster)
    cluster_ops.create_topic(cluster, "OPS_ACL", 2, False)

    assert [(b.broker_name, b.role) for b in brokers] == [("broker-a", BrokerRole.ASYNC_MASTER)]
    with MQAdmin(acl_sandbox.namesrv_addr, acl=AclCredentials("portal", "s3cret"), timeout=2) as admin:
        assert topic_configs(admin, "OPS_ACL")["broker-a"].write_queue_nums == 2


def test_wrong_acl_credentials_are_an_error_naming_the_broker(acl_sandbox):
    cluster = register(acl_sandbox, name="acl", acl_access_key="portal", acl_secret_key="wrong")

    with pytest.raises(ClusterOperationError, match=r"broker-a.*Check signature failed"):
        cluster_ops.discover_brokers(cluster)
