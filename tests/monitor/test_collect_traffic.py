"""The per-minute collection against a real sandbox cluster with real C++ client traffic: what is stored equals what
the clients did (messages sent, received, bytes stored), including reads served by a slave; a minute collected
again is unchanged."""

import datetime as dt

from django.utils import timezone

from monitor.remoting.admin import MQAdmin
from stats.models import BrokerMinute, ClusterMinute, ConsumeMinute, QueueLagMinute, TopicMinute
from tests.monitor.traffic_helpers import WAIT, collect, plan, running, stored
from tests.support.waiting import wait_for

pytest_plugins = ["tests.monitor.fixtures_traffic"]


def consumed(admin: MQAdmin, group: str, topic: str) -> tuple[int, int]:
    """(committed, stored) over the group's queues of the topic, as the brokers report them."""
    table = admin.examine_consume_stats(group, topic).offset_table
    return sum(o.consumer_offset for o in table.values()), sum(o.broker_offset for o in table.values())


def test_production_and_consumption_equal_what_the_clients_did(registered, traffic_sandbox, manual_stats, tmp_path):
    topic, group = "TopicCounted", "cg_counted"
    with running(traffic_sandbox, plan(topic, group), tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        sent = run.stop_producers(at_least=40)
        wait_for(
            lambda: run.status(f"consumer {group}").get("received", 0) >= sent, what="consumer caught up", timeout=WAIT
        )
        wait_for(lambda: consumed(admin, group, topic) == (sent, sent), what="offsets committed", timeout=WAIT)
        received = run.status(f"consumer {group}")["received"]
    manual_stats.sample()

    report = collect(registered)

    count, size = stored(traffic_sandbox, topic)
    assert count == sent == received
    production = TopicMinute.objects.get(cluster_id=registered.pk, topic=topic, minute=report.minute)
    assert (production.put_nums, production.put_size) == (sent, size)
    consumption = ConsumeMinute.objects.get(cluster_id=registered.pk, group=group, topic=topic)
    assert (consumption.get_nums, consumption.get_size, consumption.lag, consumption.lag_seconds) == (
        received,
        size,
        0,
        0.0,
    )
    assert consumption.consume_tps > 0 and consumption.sndbck_nums == 0
    assert not QueueLagMinute.objects.filter(group=group).exists()
    brokers = BrokerMinute.objects.filter(cluster_id=registered.pk, minute=report.minute)
    assert brokers.count() == 4 and all(row.up for row in brokers)
    masters = brokers.filter(broker_id=0)
    assert sum(row.put_nums for row in masters) >= sent
    cluster = ClusterMinute.objects.get(cluster_id=registered.pk, minute=report.minute)
    assert cluster.put_nums == sum(row.put_nums for row in masters) and cluster.brokers_down == 0


def test_reads_served_by_the_slave_are_counted(registered, traffic_sandbox, manual_stats, tmp_path):
    """seed 003: a consumer far behind is sent to the slave; the master never counts those reads."""
    topic, group = "TopicSlaveCounted", "cg_slave_counted"
    # A backlog of 600 KiB, 75 messages a queue: a pull takes 32, and the first, from the master, lags the commit
    # log's end by far more than the brokers' 16 KiB threshold, so the next pulls of each queue go to the slave.
    traffic_plan = plan(topic, group, backlog=600, rate=2.0, threads=1)
    with running(traffic_sandbox, traffic_plan, tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        sent = run.stop_producers(at_least=600)
        wait_for(
            lambda: run.status(f"consumer {group}").get("received", 0) >= sent, what="consumer caught up", timeout=WAIT
        )
        wait_for(lambda: consumed(admin, group, topic) == (sent, sent), what="offsets committed", timeout=WAIT)
        received = run.status(f"consumer {group}")["received"]
    manual_stats.sample()

    collect(registered)

    consumption = ConsumeMinute.objects.get(cluster_id=registered.pk, group=group, topic=topic)
    assert received == sent and consumption.get_nums == received
    assert 0 < consumption.slave_get_nums < received
    assert consumption.get_nums - consumption.slave_get_nums < received  # what counting masters alone would say


def test_a_minute_collected_again_is_unchanged(registered, traffic_sandbox, manual_stats, tmp_path):
    topic, group = "TopicAgain", "cg_again"
    with running(traffic_sandbox, plan(topic, group), tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        sent = run.stop_producers(at_least=20)
        wait_for(lambda: consumed(admin, group, topic) == (sent, sent), what="offsets committed", timeout=WAIT)
    manual_stats.sample()
    at = timezone.now().replace(second=5, microsecond=0)

    def snapshot() -> dict:
        tables = (TopicMinute, ConsumeMinute, BrokerMinute, ClusterMinute, QueueLagMinute)
        return {
            model.__name__: sorted(
                tuple(v for k, v in row.items() if k not in ("id", "seconds", "requests"))
                for row in model.objects.values()
            )
            for model in tables
        }

    collect(registered, at)
    first = snapshot()
    collect(registered, at)
    assert snapshot() == first
    collect(registered, at + dt.timedelta(seconds=20))
    assert ClusterMinute.objects.filter(cluster_id=registered.pk).count() == 1  # still the same minute
