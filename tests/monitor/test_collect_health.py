"""Brokers that are down: probes show them down, the collection stores their figures as gaps (NULL, never 0), and a
broker that hangs does not keep the rest of the cluster from being collected."""

import datetime as dt

from django.utils import timezone

from monitor.collect.probe import probe_cluster
from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import RequestCode, ResponseCode
from stats.models import BrokerMinute, BrokerProbe, ClusterMinute, ConsumeMinute, NameServerProbe, TopicMinute
from tests.monitor.traffic_helpers import WAIT, collect, plan, running
from tests.support.waiting import wait_for

pytest_plugins = ["tests.monitor.fixtures_traffic"]

# What a real 4.9.4 broker answers GET_BROKER_RUNTIME_INFO with just after it boots.
NOT_SAMPLED_YET = "java.util.NoSuchElementException, java.base/java.util.LinkedList.getLast(LinkedList.java:261)"


def test_probes_record_every_name_server_and_broker(registered, traffic_sandbox):
    probe_cluster(registered)

    (namesrv,) = NameServerProbe.objects.filter(cluster_id=registered.pk)
    assert (namesrv.address, namesrv.ok, namesrv.attempts, namesrv.error) == (traffic_sandbox.namesrv_addr, True, 1, "")
    assert namesrv.latency_ms > 0
    probes = {(p.broker_name, p.broker_id): p for p in BrokerProbe.objects.filter(cluster_id=registered.pk)}
    assert set(probes) == {("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)}
    for (_, broker_id), probe in probes.items():
        assert probe.ok and probe.listed and probe.error == "" and probe.latency_ms > 0
        assert probe.version.startswith("V4_9") and probe.runtime_seconds is not None
        assert probe.role == ("SLAVE" if broker_id else "ASYNC_MASTER")
        assert probe.msg_put_total_today is not None and probe.commit_log_disk_ratio is not None


def test_a_stopped_broker_shows_as_down_and_its_figures_as_gaps(registered, traffic_sandbox, tmp_path):
    topic, group = "TopicOutage", "cg_outage"
    with (
        running(traffic_sandbox, plan(topic, group, rate=5.0), tmp_path) as run,
        MQAdmin(traffic_sandbox.namesrv_addr) as admin,
    ):
        run.stop_producers(at_least=5)
        wait_for(
            lambda: admin.examine_consume_stats(group, topic).total_diff == 0, what="consumer caught up", timeout=WAIT
        )
    at = timezone.now().replace(second=0, microsecond=0)
    collect(registered, at)  # the cluster as it was: where the topic and the group live
    traffic_sandbox.stop_broker("broker-b")
    try:
        report = collect(registered, at + dt.timedelta(minutes=1))
        probe_cluster(registered, now=at + dt.timedelta(minutes=1))
    finally:
        traffic_sandbox.start_broker("broker-b")

    assert report.brokers_down == ["broker-b:0"]
    minute = at + dt.timedelta(minutes=1)
    down = BrokerMinute.objects.get(cluster_id=registered.pk, broker_name="broker-b", broker_id=0, minute=minute)
    assert not down.up and (down.put_nums, down.put_size, down.get_nums, down.get_size) == (None, None, None, None)
    up = BrokerMinute.objects.get(cluster_id=registered.pk, broker_name="broker-a", broker_id=0, minute=minute)
    assert up.up and up.put_nums is not None
    assert TopicMinute.objects.get(cluster_id=registered.pk, topic=topic, minute=minute).put_nums is None
    consumption = ConsumeMinute.objects.get(cluster_id=registered.pk, group=group, topic=topic, minute=minute)
    assert consumption.get_nums is None and consumption.lag is None
    cluster = ClusterMinute.objects.get(cluster_id=registered.pk, minute=minute)
    assert (cluster.put_nums, cluster.get_nums, cluster.brokers, cluster.brokers_down) == (None, None, 4, 1)
    probe = BrokerProbe.objects.get(cluster_id=registered.pk, broker_name="broker-b", broker_id=0, minute=minute)
    assert not probe.ok and not probe.listed and probe.error and probe.put_tps is None
    assert BrokerProbe.objects.get(cluster_id=registered.pk, broker_name="broker-a", broker_id=0, minute=minute).ok


def test_a_hung_broker_is_down_and_the_others_are_collected(registered, traffic_sandbox, settings):
    # Short enough that the hung broker costs seconds, long enough that a healthy one answers on a loaded machine.
    settings.COLLECT_REQUEST_TIMEOUT = 2.0
    settings.PROBE_TIMEOUT = 1.0
    traffic_sandbox.hang("broker-a:1")
    try:
        report = collect(registered)
        probe_cluster(registered)
    finally:
        traffic_sandbox.heal()

    assert report.brokers_down == ["broker-a:1"]
    rows = {(r.broker_name, r.broker_id): r for r in BrokerMinute.objects.filter(cluster_id=registered.pk)}
    assert not rows["broker-a", 1].up and rows["broker-a", 1].get_nums is None
    assert all(row.up and row.get_nums is not None for key, row in rows.items() if key != ("broker-a", 1))
    probe = BrokerProbe.objects.get(cluster_id=registered.pk, broker_name="broker-a", broker_id=1)
    assert not probe.ok and probe.listed and probe.attempts == settings.PROBE_ATTEMPTS


def test_a_broker_that_cannot_give_its_runtime_info_yet_is_up_and_collected(registered, traffic_sandbox):
    """A 4.9.4 broker answers GET_BROKER_RUNTIME_INFO with SYSTEM_ERROR for about a second after it boots (its store
    has not sampled yet, seen on real servers) while it answers everything else: it is up, only its counters are
    unknown."""
    broker = traffic_sandbox.broker("broker-b")
    original = broker._handlers[RequestCode.GET_BROKER_RUNTIME_INFO]

    async def not_sampled_yet(conn, cmd):
        return cmd.make_response(ResponseCode.SYSTEM_ERROR, NOT_SAMPLED_YET)

    broker.register(RequestCode.GET_BROKER_RUNTIME_INFO, not_sampled_yet)
    try:
        report = collect(registered)
    finally:
        broker.register(RequestCode.GET_BROKER_RUNTIME_INFO, original)

    assert report.brokers_down == []
    row = BrokerMinute.objects.get(cluster_id=registered.pk, broker_name="broker-b", broker_id=0)
    assert row.up and row.put_nums is not None and row.get_nums is not None
