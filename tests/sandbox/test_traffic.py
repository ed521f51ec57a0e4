"""Traffic profiles run by real C++ clients in worker processes, observed only the way a monitor would: through
the admin client (topic offsets, consume progress, broker stats), plus the workers' own counters for what only a
client sees (its send exceptions, its callbacks that never returned).

Every wait polls with a deadline; nothing sleeps a fixed time.
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingError
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.traffic import PROFILES, Traffic, TrafficError, TrafficOptions, plan_for
from monitor.sandbox.traffic.worker import rate_at
from tests.support.waiting import wait_for

# Fast enough that each situation shows within a few seconds, slow enough for a 2-core machine.
OPTIONS = TrafficOptions(rate=20.0, backlog=200, status_interval=0.2)
PROJECT = Path(__file__).resolve().parents[2]
# A parent that starts traffic, reports the worker pids, then waits to be killed.
PARENT = """
import sys
from monitor.sandbox.traffic import Traffic, TrafficOptions
traffic = Traffic(sys.argv[1], "steady", options=TrafficOptions(rate=5.0), workdir=sys.argv[2]).start()
print(" ".join(str(client.pid) for client in traffic.clients), flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def cluster():
    # A small suggest threshold so that a consumer starting 200 messages behind is sent to the slave.
    with SandboxCluster(slaves=True, slave_sync_interval=0.2, suggest_slave_behind_bytes=16 * 1024) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def admin(cluster):
    with MQAdmin(cluster.namesrv_addr, timeout=5.0) as client:
        yield client


@pytest.fixture
def run(cluster, tmp_path):
    """Start a profile; stop it at the end of the test and check that every worker shut down cleanly."""
    started: list[Traffic] = []

    def start(profile: str) -> Traffic:
        traffic = Traffic(cluster.namesrv_addr, profile, options=OPTIONS, workdir=tmp_path / profile)
        started.append(traffic.start())
        return traffic

    yield start
    for traffic in started:
        processes = [client.process for client in traffic.clients]
        traffic.stop()
        # 0, not -9: each worker shut its client down on SIGTERM, blocked callbacks included.
        assert [process.returncode for process in processes] == [0] * len(processes)


def put_total(admin: MQAdmin, topic: str) -> int:
    try:
        return sum(offset.max_offset for offset in admin.examine_topic_stats(topic).offset_table.values())
    except RemotingError:  # no route yet: nothing was ever stored there
        return 0


def consumed_total(admin: MQAdmin, group: str) -> int:
    return sum(offset.consumer_offset for offset in admin.examine_consume_stats(group).offset_table.values())


def test_steady_traffic_moves_topic_offsets_and_consume_progress(run, admin):
    traffic = run("steady")
    puts = wait_for(lambda: put_total(admin, "TopicSteady"))
    consumed = wait_for(lambda: consumed_total(admin, "cg_steady"))
    wait_for(lambda: put_total(admin, "TopicSteady") > puts and consumed_total(admin, "cg_steady") > consumed)
    stats = admin.examine_consume_stats("cg_steady")
    assert stats.total_diff < put_total(admin, "TopicSteady")  # it keeps up: most of what was sent is consumed
    connection = admin.examine_consumer_connection_info("cg_steady")
    assert len(connection.connection_set) == 1 and "TopicSteady" in connection.subscription_table
    producer = wait_for(lambda: (status := traffic.status()["producer pg_steady"]).get("sent") and status)
    assert not producer.get("failed")


def test_failing_consumer_sends_messages_through_retry_to_the_dlq(run, admin):
    traffic = run("failing-consumer")
    wait_for(lambda: put_total(admin, "%RETRY%cg_failing") > 0)
    wait_for(lambda: put_total(admin, "%DLQ%cg_failing") > 0)  # after FAILING_RETRY_MAX_TIMES retries
    consumer = traffic.status()["consumer cg_failing"]
    assert consumer["reconsume_later"] > 0 and consumer["redelivered"] > 0


def test_lagging_consumer_falls_behind(run, admin):
    traffic = run("lagging-consumer")
    # Produced at 20/s (10 to 30 over the day), consumed at 5/s: the lag grows while it consumes.
    wait_for(lambda: admin.examine_consume_stats("cg_lagging").total_diff >= 30)
    wait_for(lambda: traffic.status()["consumer cg_lagging"].get("consumed"))


def test_blocking_consumer_hangs_with_every_thread_stuck(run, admin):
    traffic = run("blocking-consumer")
    wait_for(lambda: traffic.status()["consumer cg_blocking"].get("blocked") == 2)  # both callback threads
    wait_for(lambda: admin.examine_consume_stats("cg_blocking").total_diff >= 20)
    # Still connected, as a hung application is: only its progress shows the problem.
    assert admin.examine_consumer_connection_info("cg_blocking").connection_set


def test_failing_producer_gets_send_exceptions(run):
    traffic = run("failing-producer")
    producer = wait_for(lambda: (status := traffic.status()["producer pg_forbidden"]).get("failed") and status)
    assert not producer.get("sent") and "SELF_TEST_TOPIC" in producer["last_error"]


def test_slave_reader_is_served_by_the_slave(run, cluster, admin):
    run("slave-reader")
    slave = cluster.broker("broker-a", 1)
    # The slave counts what it served: the key exists only once it answered the group's pulls with messages.
    key = "TopicSlaveRead@cg_slave_reader"

    def served_by_slave() -> bool:
        try:
            admin.view_broker_stats_data(slave.addr, "GROUP_GET_NUMS", key)
        except RemotingError:
            return False
        return True

    wait_for(served_by_slave)


def test_clients_sign_their_requests_on_an_acl_cluster(tmp_path):
    account = AclCredentials("rocketmq2", "12345678")
    with (
        SandboxCluster(acl={account.access_key: account.secret_key}) as secured,
        MQAdmin(secured.namesrv_addr, acl=account) as admin,
        Traffic(secured.namesrv_addr, "steady", options=OPTIONS, acl=account, workdir=tmp_path),
    ):
        wait_for(lambda: put_total(admin, "TopicSteady") and consumed_total(admin, "cg_steady"))


def running(pid: int) -> bool:
    """Whether the process exists and has not exited (an exited orphan may wait as a zombie for a PID 1 that
    does not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_workers_stop_by_themselves_when_their_parent_is_killed(cluster, tmp_path):
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, cluster.namesrv_addr, str(tmp_path)],
        cwd=PROJECT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(map(running, pids))
    finally:
        parent.send_signal(signal.SIGKILL)  # no chance to stop its workers
        parent.wait()
        parent.stdin.close()
        parent.stdout.close()
    wait_for(lambda: not any(map(running, pids)))


def test_demo_runs_every_client(run):
    traffic = run("demo")

    def everyone_busy() -> bool:
        status = traffic.status()
        producers = [name for name in status if name.startswith("producer") and name != "producer pg_forbidden"]
        consumers = [name for name in status if name.startswith("consumer")]
        return (
            all(status[name].get("sent") for name in producers)
            and all(status[name].get("received") for name in consumers)
            and status["producer pg_forbidden"].get("failed")
        )

    wait_for(everyone_busy)


def test_demo_mixes_the_profiles():
    plan = plan_for("demo", OPTIONS)
    assert set(plan.topics) == {"TopicOrders", "TopicPayments"}
    roles = [(client["role"], client["group"]) for client in plan.clients]
    assert len(roles) == 7 and ("producer", "pg_forbidden") in roles
    assert {"cg_orders_fulfil", "cg_orders_audit", "cg_payments_ledger", "cg_payments_notify"} == set(plan.groups)
    assert set(PROFILES) >= {"steady", "lagging-consumer", "blocking-consumer", "failing-consumer", "demo"}


def test_unknown_profiles_and_clusters_without_slaves_are_refused():
    with pytest.raises(ValueError, match="unknown traffic profile 'nope'"):
        plan_for("nope")
    with SandboxCluster() as plain, pytest.raises(TrafficError, match="--slaves"):
        Traffic(plain.namesrv_addr, "slave-reader").start()


def test_rate_follows_a_daily_curve():
    def at(hour: int) -> float:
        moment = time.mktime((2024, 6, 1, hour, 0, 0, 0, 0, -1))
        return rate_at(moment, base=10.0, amplitude=0.5, day_seconds=86400)

    assert at(15) == pytest.approx(15.0) and at(3) == pytest.approx(5.0)
    assert at(9) == pytest.approx(10.0) and at(21) == pytest.approx(10.0)
    # A ten-minute day: 00:02:30 is a quarter into the first one, where a real day is at 06:00.
    squeezed = rate_at(time.mktime((2024, 6, 1, 0, 2, 30, 0, 0, -1)), 10.0, 0.5, 600)
    assert squeezed == pytest.approx(at(6))
