"""The launcher starts what it says, as plain processes on 127.0.0.1, and leaves nothing behind.

Each cluster here is its own (ACL on; controller mode with a proxy), separate from the session's shared ones, so
the tests can stop brokers and look for leftover JVMs.
"""

import os

import pytest

from monitor.launcher.cluster import MASTER_ID, SLAVE_ID, RealCluster
from monitor.launcher.controller import ControllerCluster
from monitor.launcher.process import port_open
from monitor.launcher.releases import ROCKETMQ4, ROCKETMQ5
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingError

pytestmark = pytest.mark.slow

ACL = ("rocketmq2", "12345678")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] != "Z"


def test_both_pinned_releases_are_resolved_with_every_server_jar():
    for release in (ROCKETMQ4, ROCKETMQ5):
        assert release.is_resolved(), f"make rocketmq resolves {release.version}"
    names = {p.name for p in ROCKETMQ5.lib.iterdir()}
    assert {"rocketmq-controller-5.5.0.jar", "rocketmq-proxy-5.5.0.jar", "rocketmq-tools-5.5.0.jar"} <= names


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory):
    cluster = RealCluster("4", brokers=1, slaves=True, acl=ACL, workdir=tmp_path_factory.mktemp("acl4"))
    cluster.start()
    yield cluster
    cluster.stop()


def test_an_acl_cluster_refuses_unsigned_requests_and_serves_signed_ones(acl_cluster):
    master = acl_cluster.broker("broker-a", MASTER_ID).addr
    unsigned = MQAdmin(acl_cluster.namesrv_addr, timeout=10)
    with unsigned, pytest.raises(RemotingError, match="No accessKey is configured"):
        unsigned.create_and_update_topic_config(master, b.TopicConfig(topic_name="TopicUnsigned"))
    with acl_cluster.admin(timeout=10) as admin:
        admin.create_and_update_topic_config(master, b.TopicConfig(topic_name="TopicSigned", read_queue_nums=2))
        assert admin.examine_topic_route_info("TopicSigned").queue_datas[0].read_queue_nums == 2


def test_the_real_mqadmin_signs_with_the_clusters_account(acl_cluster):
    result = acl_cluster.mqadmin("updateTopic", "-c", "DefaultCluster", "-t", "TopicByJavaTool", "-r", "3", "-w", "3")
    assert "create topic to" in result.stdout and "success" in result.stdout, result.stdout + result.stderr
    listing = acl_cluster.mqadmin("topicList")
    assert "TopicByJavaTool" in listing.stdout.split()


def test_a_stopped_broker_leaves_the_route_and_comes_back_on_its_port_with_its_store(acl_cluster):
    slave = acl_cluster.broker("broker-a", SLAVE_ID)
    pid = slave.process.pid
    acl_cluster.stop_broker("broker-a", SLAVE_ID)
    assert not alive(pid) and not port_open(slave.port)
    acl_cluster.start_broker("broker-a", SLAVE_ID)
    assert port_open(slave.port)
    with acl_cluster.admin(timeout=10) as admin:
        addrs = admin.examine_broker_cluster_info().broker_addr_table["broker-a"].broker_addrs
    assert addrs[SLAVE_ID] == slave.addr


def test_stop_ends_every_jvm_of_the_cluster(tmp_path):
    cluster = RealCluster("4", brokers=1, slaves=False, workdir=tmp_path).start()
    pids = [p.pid for p in cluster.processes()]
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    cluster.stop()
    assert not any(alive(pid) for pid in pids)
    assert (tmp_path / "namesrv.log").exists() and (tmp_path / "broker-a-0.log").exists(), "logs stay for the test"


@pytest.mark.timeout(900)  # seven JVMs; a loaded 2-core machine needs minutes where an idle one needs 30 s
def test_rocketmq5_controller_mode_elects_one_master_among_three_replicas_and_the_proxy_serves_routes(tmp_path):
    """A standalone controller, three replicas of broker-a and a proxy in cluster mode: the name server lists one
    master (id 0) and two slaves; the real mqadmin sees the same; the proxy answers remoting route requests with
    itself at every broker id, as it does for the clients it fronts."""
    with ControllerCluster(controller="standalone", proxy=True, workdir=tmp_path) as cluster:
        ids = sorted(broker_id for name, broker_id in cluster.brokers)
        assert len(ids) == 3 and ids[0] == MASTER_ID and len(set(ids)) == 3
        assert cluster.controller is not None and cluster.controller.alive()
        with cluster.admin(timeout=10) as admin:
            master = cluster.broker("broker-a", MASTER_ID).addr
            admin.create_and_update_topic_config(master, b.TopicConfig(topic_name="TopicViaProxy"))
        listing = cluster.mqadmin("clusterList").stdout
        assert all(node.addr in listing for node in cluster.brokers.values())
        assert port_open(cluster.grpc_port)
        with MQAdmin(cluster.proxy_addr, timeout=10) as through_proxy:
            route = through_proxy.examine_topic_route_info("TopicViaProxy")
        assert {addr for data in route.broker_datas for addr in data.broker_addrs.values()} == {cluster.proxy_addr}
        pids = [p.pid for p in cluster.processes()]
    assert not any(alive(pid) for pid in pids)
