"""The per-minute collection against real Apache RocketMQ 4.9.4 and 5.5.0 with real C++ client traffic: the cluster
registered as the portal registers it, its topics and groups created as approving their applications creates them,
then probes and collection cycles (the functions the Celery tasks call) store what the clients and brokers did.

Real brokers sample their stats on their own clock (every 10 s; a key's minute window is the difference between its
first and last sample of the last minute), so a test collects again and again, with a deadline, until the window
holds the traffic it ran; what the rows then say is compared with what the clients counted and what the brokers
report through other requests (queue offsets, stored messages).

The shared clusters (``rocketmq4``, ``rocketmq5``) carry other tests' traffic too, so every name here is unique and
figures of whole brokers are compared as "at least". The seed-003 and stopped-broker tests run on a small 4.9.4
cluster of their own, its brokers set to send slow consumers to the slave.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from monitor.collect.probe import probe_cluster
from monitor.collect.traffic import CollectReport, collect_cluster
from monitor.launcher.cluster import RealCluster
from monitor.remoting.admin import MQAdmin, PullStatus
from monitor.remoting.body import BrokerRuntimeInfo
from monitor.remoting.errors import RemotingError
from monitor.sandbox.traffic import Plan, Traffic, TrafficClient, TrafficOptions
from monitor.sandbox.traffic.profiles import consumer, producer
from portal.models import Cluster
from portal.services import cluster_ops, registry
from stats import keys
from stats.models import (
    BrokerMinute,
    BrokerProbe,
    ClientMinute,
    ClusterMinute,
    ConsumeMinute,
    GroupMinute,
    NameServerProbe,
    QueueLagMinute,
    TopicMinute,
)
from tests.support.factories import make_user
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

QUEUES = 4
# Generous: the machine running these is shared and slow; every wait polls and returns as soon as it can.
WAIT = 90.0
# One 10-second sampling of the brokers' stats and then some, on a loaded machine.
STATS_WAIT = 60.0
OPTIONS = TrafficOptions(rate=20.0, amplitude=0.0, backlog=0, status_interval=0.2)
# What makes a 4.9.4 master send a consumer to its slave (seed 003): slave reads on, and "in memory" meaning 0% of
# RAM, so every pull that leaves messages behind is suggested to the slave (whichBrokerWhenConsumeSlowly, id 1).
SLAVE_READ = {"slaveReadEnable": True, "accessMessageInMemoryMaxRatio": 0}


# --- the clusters and their registration ---------------------------------------------------------------------------


@pytest.fixture(params=["rocketmq4", "rocketmq5"])
def real(request) -> RealCluster:
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def slave_reading_cluster(tmp_path_factory) -> Iterator[RealCluster]:
    cluster = RealCluster(
        "4", brokers=1, slaves=True, broker_config=SLAVE_READ, workdir=tmp_path_factory.mktemp("rocketmq4-slave-read")
    )
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def slave_reading(slave_reading_cluster) -> RealCluster:
    """The cluster of our own with every broker running (a test before may have stopped one)."""
    for node in list(slave_reading_cluster.brokers.values()):
        if not node.process.alive():
            slave_reading_cluster.start_broker(node.name, node.broker_id)
    return slave_reading_cluster


def register(real: RealCluster, name: str) -> Cluster:
    """The cluster registered as a portal admin registers it: name servers checked, brokers discovered."""
    admin = make_user(f"ops-{name}", staff=True)
    return registry.register_cluster(name=name, namesrv_addrs=[real.namesrv_addr], by=admin)


@pytest.fixture
def registered(db, real) -> Cluster:
    return register(real, f"real-{real.version}")


def names(real: RealCluster, what: str) -> tuple[str, str]:
    """A topic and a group of this test's own on the shared cluster."""
    line = real.version.split(".")[0]
    return f"RealCollect{line}{what}", f"cg_real_collect{line}_{what.lower()}"


def deploy(cluster: Cluster, topic: str, groups: list[str]) -> None:
    """The topic and groups created as approving their applications creates them, plus each group's retry topic (as
    for a group that has run before: a new client finds a retry topic's route only on its next refresh)."""
    cluster_ops.create_topic(cluster, topic, QUEUES, False)
    for group in groups:
        cluster_ops.create_subscription_group(cluster, group, False)
        cluster_ops.create_topic(cluster, keys.retry_topic(group), 1, False)


def start_at_the_beginning(real: RealCluster, group: str, topic: str) -> None:
    with real.admin(timeout=10) as admin:
        for queue_id in range(QUEUES):
            admin.update_consumer_offset(master_addr(real), group, topic, queue_id, 0)


# --- C++ client traffic ---------------------------------------------------------------------------------------------


class Deployed(Traffic):
    """A plan's clients on topics and groups already created (:func:`deploy`): nothing to set up, so no wait for the
    slaves to copy them either (a 5.x slave copies its master's tables once a minute; these masters never send a
    consumer to a slave)."""

    def setup(self) -> None:
        return None


@contextlib.contextmanager
def clients(real: RealCluster, plan: Plan, workdir: Path, *, set_up: bool = False) -> Iterator[Traffic]:
    """The plan's C++ clients, each in a process of its own; ``set_up``: create the topics and groups on the masters
    and wait for the slaves to copy them first (a consumer sent to a slave needs it to know the topic)."""
    traffic = (Traffic if set_up else Deployed)(real.namesrv_addr, plan, options=OPTIONS, workdir=workdir)
    traffic.start()
    try:
        yield traffic
    finally:
        traffic.stop()


def client(traffic: Traffic, role: str) -> TrafficClient:
    (found,) = [c for c in traffic.clients if c.spec["role"] == role]
    return found


def stop_producer(traffic: Traffic, at_least: int) -> int:
    """Once the producer has stored ``at_least`` messages, stop it; returns how many it stored (a send that failed,
    e.g. the C++ client's occasional "No route info" on a first send, is not counted; the tests compare the count
    with what the brokers hold)."""
    sender = client(traffic, "producer")
    wait_for(lambda: sender.status().get("sent", 0) >= at_least, what="producer sending", timeout=WAIT)
    sender.terminate()
    sender.reap(time.monotonic() + 15)
    return sender.status()["sent"]


# --- what the brokers say ------------------------------------------------------------------------------------------


def master_addr(real: RealCluster) -> str:
    return real.broker("broker-a").addr


def offsets(admin: MQAdmin, group: str, topic: str) -> dict[int, tuple[int, int, int]]:
    """queue id -> (queue end, committed offset, store time of the last message consumed) as the master reports
    them (GET_CONSUME_STATS)."""
    table = admin.examine_consume_stats(group, topic).offset_table
    return {mq.queue_id: (o.broker_offset, o.consumer_offset, o.last_timestamp) for mq, o in table.items()}


def caught_up(admin: MQAdmin, group: str, topic: str, sent: int) -> bool:
    queues = offsets(admin, group, topic).values()
    return sum(end for end, _, _ in queues) == sent == sum(committed for _, committed, _ in queues)


def stored_bytes(admin: MQAdmin, addr: str, topic: str) -> tuple[int, int]:
    """(messages, bytes) the master holds for the topic, read back message by message with pulls."""
    count = size = 0
    for queue_id in range(QUEUES):
        offset = 0
        while True:
            result = admin.pull_message(addr, topic, queue_id, offset, 32)
            if result.status is not PullStatus.FOUND:
                break
            count += len(result.messages)
            size += sum(message.store_size for message in result.messages)
            offset = result.next_begin_offset
    return count, size


def commit_log_end(admin: MQAdmin, addr: str) -> int | None:
    """Where the broker's commit log ends (None while it cannot tell: a 4.9.4 broker just booted)."""
    try:
        return BrokerRuntimeInfo.from_kvtable(admin.fetch_broker_runtime_stats(addr)).commit_log_max_offset
    except RemotingError:
        return None


def stats_minute(admin: MQAdmin, addr: str, stat: str, key: str) -> int:
    try:
        return admin.view_broker_stats_data(addr, stat, key).stats_minute.sum
    except RemotingError as exc:
        assert keys.is_missing_stats_remark(exc.remark), exc
        return 0


# --- collecting ----------------------------------------------------------------------------------------------------


def collect_until(cluster: Cluster, done: Callable[[CollectReport], bool], timeout: float = STATS_WAIT):
    """Collect the current minute again and again until ``done(report)``: the brokers' minute windows hold the traffic
    once they have sampled it. Returns the time of the last collection and its report."""
    deadline = time.monotonic() + timeout
    while True:
        at = timezone.now()
        report = collect_cluster(cluster, now=at)
        assert report.ran
        if done(report):
            return at, report
        assert time.monotonic() < deadline, f"the collected minute did not show the traffic in {timeout:g} s"
        time.sleep(1.0)


def put_nums(cluster: Cluster, topic: str, minute: dt.datetime) -> int | None:
    row = TopicMinute.objects.filter(cluster_id=cluster.pk, topic=topic, minute=minute).first()
    return row.put_nums if row else None


def get_nums(cluster: Cluster, group: str, topic: str, minute: dt.datetime) -> int | None:
    row = ConsumeMinute.objects.filter(cluster_id=cluster.pk, group=group, topic=topic, minute=minute).first()
    return row.get_nums if row else None


def broker_rows(cluster: Cluster, minute: dt.datetime) -> dict[tuple[str, int], BrokerMinute]:
    rows = BrokerMinute.objects.filter(cluster_id=cluster.pk, minute=minute)
    return {(row.broker_name, row.broker_id): row for row in rows}


def rows_of(cluster: Cluster, minute: dt.datetime, topic: str, groups: list[str]) -> dict[str, list[tuple]]:
    """The minute's rows of the topic and groups (with their settled figures), of the brokers and of the cluster; a
    row stored twice would show twice. (Other tests' topics on the shared cluster come and go with their traffic.)"""
    mine = {
        TopicMinute: (Q(topic=topic), ("topic", "put_nums", "put_size")),
        ConsumeMinute: (Q(topic=topic), ("group", "get_nums", "get_size", "lag")),
        QueueLagMinute: (Q(topic=topic), ("group", "broker_name", "queue_id", "lag")),
        GroupMinute: (Q(group__in=groups), ("group", "clients")),
        ClientMinute: (Q(group__in=groups), ("group", "client_id")),
        BrokerMinute: (Q(), ("broker_name", "broker_id", "up")),
        ClusterMinute: (Q(), ("brokers", "brokers_down")),
    }
    return {
        model.__name__: sorted(model.objects.filter(where, cluster_id=cluster.pk, minute=minute).values_list(*fields))
        for model, (where, fields) in mine.items()
    }


# --- the tests -----------------------------------------------------------------------------------------------------


def test_a_cycle_stores_what_the_clients_did_and_the_brokers_hold(real, registered, tmp_path):
    """Put counts equal what the producer sent, gets what the consumer received, bytes what the master stored; lag
    per queue is the queue end minus the committed offset; the online C++ consumer is listed; collecting the same
    minute again adds no rows."""
    topic, group = names(real, "Counted")
    stopped = f"{group}_stopped"  # a group that read half of every queue, then went offline
    deploy(registered, topic, [group, stopped])
    # Committed at the start, as for a group that has run before: a new C++ consumer asks for its offsets before
    # every queue has a message, and a 5.5.0 broker answers "not found" for an empty queue (4.9.4: 0), so the client
    # would start where the queue ends when it asks again, past what the producer sent meanwhile.
    start_at_the_beginning(real, group, topic)
    traffic_plan = Plan(
        topics={topic: QUEUES},
        groups={group: 16},
        clients=[producer(f"pg_{topic}", topic, 20.0, OPTIONS, body_bytes=1024), consumer(group, topic)],
    )
    with clients(real, traffic_plan, tmp_path) as traffic, real.admin(timeout=10) as admin:
        sent = stop_producer(traffic, at_least=40)
        reader = client(traffic, "consumer")
        wait_for(lambda: reader.status().get("received", 0) >= sent, what="consumer received everything", timeout=WAIT)
        wait_for(lambda: caught_up(admin, group, topic, sent), what="consumer committed everything", timeout=WAIT)
        received = reader.status()["received"]
        for queue_id, (end, _, _) in offsets(admin, group, topic).items():
            admin.update_consumer_offset(master_addr(real), stopped, topic, queue_id, end // 2)
        behind = offsets(admin, stopped, topic)
        count, size = stored_bytes(admin, master_addr(real), topic)

        at, report = collect_until(
            registered,
            lambda r: (
                put_nums(registered, topic, r.minute) == sent
                and get_nums(registered, group, topic, r.minute) == received
            ),
        )
        minute = report.minute

        assert count == sent and received >= sent
        production = TopicMinute.objects.get(cluster_id=registered.pk, topic=topic, minute=minute)
        assert (production.put_nums, production.put_size) == (sent, size)
        consumption = ConsumeMinute.objects.get(cluster_id=registered.pk, group=group, topic=topic, minute=minute)
        assert (consumption.get_nums, consumption.get_size, consumption.slave_get_nums) == (received, size, 0)
        assert (consumption.lag, consumption.lag_seconds, consumption.sndbck_nums) == (0, 0.0, 0)
        assert consumption.consume_tps > 0
        assert not QueueLagMinute.objects.filter(cluster_id=registered.pk, group=group).exists()

        lagging = {q: (end, done, stamp) for q, (end, done, stamp) in behind.items() if end > done}
        late = ConsumeMinute.objects.get(cluster_id=registered.pk, group=stopped, topic=topic, minute=minute)
        assert late.get_nums == 0 and late.lag == sum(end - done for end, done, _ in behind.values()) > 0
        oldest = min(stamp for _, _, stamp in lagging.values() if stamp > 0)
        assert late.lag_seconds == (int(at.timestamp() * 1000) - oldest) / 1000
        queue_lags = QueueLagMinute.objects.filter(cluster_id=registered.pk, group=stopped, minute=minute)
        assert {(r.broker_name, r.queue_id): (r.broker_offset, r.consumer_offset, r.lag) for r in queue_lags} == {
            ("broker-a", q): (end, done, end - done) for q, (end, done, _) in lagging.items()
        }

        (online,) = ClientMinute.objects.filter(cluster_id=registered.pk, group=group, minute=minute)
        assert online.client_id.startswith(f"{reader.pid}-")  # the C++ client names itself after its process
        assert (online.language, online.error) == ("CPP", "") and online.version > 0
        assert online.address.startswith("127.0.0.1:")
        assert online.subscription == {topic: "*", keys.retry_topic(group): "*"}
        health = GroupMinute.objects.get(cluster_id=registered.pk, group=group, minute=minute)
        assert (health.clients, health.message_model, health.consume_type) == (1, "CLUSTERING", "CONSUME_PASSIVELY")
        assert health.subscription_consistent is True and health.blocked_queues == 0

        brokers = {
            (b.broker_name, b.broker_id): b
            for b in BrokerMinute.objects.filter(cluster_id=registered.pk, minute=minute)
        }
        assert set(brokers) == set(real.brokers) and all(b.up for b in brokers.values())
        assert brokers["broker-a", 0].put_nums >= sent and brokers["broker-a", 0].get_nums >= received
        cluster = ClusterMinute.objects.get(cluster_id=registered.pk, minute=minute)
        assert (cluster.brokers, cluster.brokers_down) == (2, 0) and cluster.put_nums >= sent
        assert report.brokers_down == []

        before = rows_of(registered, minute, topic, [group, stopped])
        again = collect_cluster(registered, now=at)
        assert again.ran and again.minute == minute
        assert rows_of(registered, minute, topic, [group, stopped]) == before


def test_probes_describe_every_name_server_and_both_master_and_slave(real, registered):
    """Master and slave are both probed: each answers with the version it runs, the role it was started with and
    its figures, rates included (5.x spells the served-messages rate getTransferredTps, 4.x getTransferedTps)."""
    rates = ("put_tps", "get_tps")

    def probed():
        # A broker reports its rates blank until it has sampled them for a while (tens of seconds after it starts).
        name_servers, brokers = probe_cluster(registered)
        known = all(getattr(probe, rate) is not None for probe in brokers for rate in rates)
        return (name_servers, brokers) if known else None

    name_servers, brokers = wait_for(probed, what="every broker reporting its rates", timeout=WAIT)

    assert [(p.address, p.ok, p.error) for p in name_servers] == [(real.namesrv_addr, True, "")]
    assert NameServerProbe.objects.filter(cluster_id=registered.pk).count() == 1
    assert BrokerProbe.objects.filter(cluster_id=registered.pk).count() == len(brokers)
    probes = {(p.broker_name, p.broker_id): p for p in brokers}
    assert set(probes) == set(real.brokers)
    version = "V" + real.version.replace(".", "_")
    for (name, broker_id), probe in probes.items():
        node = real.broker(name, broker_id)
        configured = real.broker_properties(name, broker_id, node.port)["brokerRole"]
        assert (probe.address, probe.ok, probe.listed, probe.error) == (node.addr, True, True, "")
        assert (probe.version, probe.role) == (version, configured)
        assert probe.runtime_seconds > 0 and probe.latency_ms > 0
        figures = ("msg_put_total_today", "msg_get_total_today", "commit_log_disk_ratio", "commit_log_max_offset")
        assert all(getattr(probe, figure) is not None for figure in figures), {f: getattr(probe, f) for f in figures}


def test_reads_served_by_the_slave_are_summed_with_the_masters(db, slave_reading, tmp_path):
    """Seed 003: a 4.9.4 master sends a consumer that is behind to its slave; the master never counts those reads,
    so only GROUP_GET_NUMS of master and slave together equal what the consumer received."""
    registered = register(slave_reading, "slave-reading")
    topic, group = "RealCollectSlaveRead", "cg_real_collect_slave_read"
    deploy(registered, topic, [group])
    # Committed at the start, as for a group that has run before: a new group would start at the end here (with 0%
    # of RAM "in memory", its first message already counts as swapped out).
    start_at_the_beginning(slave_reading, group, topic)
    master, slave = slave_reading.broker("broker-a", 0).addr, slave_reading.broker("broker-a", 1).addr
    # 200 messages of 1 KiB written before the consumer starts: a pull leaves the rest behind, so the next pulls of
    # each queue go to the slave, once the slave holds them (a new slave starts copying some 10 s after it boots;
    # until then it sends the consumer back).
    writing = Plan(
        topics={topic: QUEUES},
        groups={group: 16},
        clients=[producer(f"pg_{topic}", topic, 1.0, OPTIONS, backlog=200, body_bytes=1024)],
    )
    with clients(slave_reading, writing, tmp_path / "producer", set_up=True) as traffic:
        sent = stop_producer(traffic, at_least=200)
    with slave_reading.admin(timeout=10) as admin:
        wait_for(
            lambda: commit_log_end(admin, slave) == commit_log_end(admin, master),
            what="the slave copying",
            timeout=WAIT,
        )
    reading = Plan(topics={topic: QUEUES}, groups={group: 16}, clients=[consumer(group, topic, threads=1)])
    with clients(slave_reading, reading, tmp_path / "consumer") as traffic, slave_reading.admin() as admin:
        reader = client(traffic, "consumer")
        wait_for(lambda: reader.status().get("received", 0) >= sent, what="consumer received everything", timeout=WAIT)
        wait_for(lambda: caught_up(admin, group, topic, sent), what="consumer committed everything", timeout=WAIT)
        received = reader.status()["received"]

        _, report = collect_until(registered, lambda r: get_nums(registered, group, topic, r.minute) == received)
        key = keys.group_key(topic, group)
        on_slave = stats_minute(admin, slave, keys.GROUP_GET_NUMS, key)
        on_master = stats_minute(admin, master, keys.GROUP_GET_NUMS, key)

    consumption = ConsumeMinute.objects.get(cluster_id=registered.pk, group=group, topic=topic, minute=report.minute)
    assert consumption.get_nums == received == on_master + on_slave
    assert consumption.slave_get_nums == on_slave > 0  # what a collector reading masters alone would miss
    assert consumption.get_nums - consumption.slave_get_nums == on_master < received
    slave_row = BrokerMinute.objects.get(cluster_id=registered.pk, broker_id=1, minute=report.minute)
    assert slave_row.up and slave_row.get_nums >= on_slave


def test_a_stopped_broker_is_down_its_figures_gaps_and_the_others_are_read(db, slave_reading):
    """A master stopped for good: its probe fails at once (connection refused), its minute's figures and those of the
    topics it held are gaps, never zeros, and the slave and the name server are probed and collected as usual."""
    registered = register(slave_reading, "stopping")
    topic = "RealCollectOutage"
    cluster_ops.create_topic(registered, topic, QUEUES, False)
    at = timezone.now().replace(second=0, microsecond=0)
    collect_cluster(registered, now=at)  # the cluster as it was: where the topic lives
    slave_reading.stop_broker("broker-a", 0)
    later = at + dt.timedelta(minutes=1)

    started = time.monotonic()
    name_servers, brokers = probe_cluster(registered, now=later)
    probing = time.monotonic() - started
    report = collect_cluster(registered, now=later)

    # A round ends within one probe's timeout and retries however many brokers are down.
    assert probing < settings.PROBE_TIMEOUT * settings.PROBE_ATTEMPTS
    assert [p.ok for p in name_servers] == [True]
    probes = {(p.broker_name, p.broker_id): p for p in brokers}
    down, slave = probes["broker-a", 0], probes["broker-a", 1]
    assert (down.ok, down.listed, down.put_tps, down.version) == (False, False, None, "") and down.error
    assert down.attempts == settings.PROBE_ATTEMPTS
    assert (slave.ok, slave.listed, slave.error, slave.role) == (True, True, "", "SLAVE")

    assert report.brokers_down == ["broker-a:0"]
    rows = {
        (r.broker_name, r.broker_id): r for r in BrokerMinute.objects.filter(cluster_id=registered.pk, minute=later)
    }
    assert not rows["broker-a", 0].up
    assert (rows["broker-a", 0].put_nums, rows["broker-a", 0].get_nums) == (None, None)
    assert rows["broker-a", 1].up
    assert TopicMinute.objects.get(cluster_id=registered.pk, topic=topic, minute=later).put_nums is None
    cluster = ClusterMinute.objects.get(cluster_id=registered.pk, minute=later)
    assert (cluster.brokers, cluster.brokers_down, cluster.put_nums) == (2, 1, None)
