"""How a collection cycle saves requests without losing numbers: stats keys a broker says do not exist are not asked
again while nothing happened, keys proved idle are not asked at all, and new traffic is still counted; offset errors
are read once; a cluster is never collected twice at once; old minutes are deleted in bounded batches."""

import datetime as dt

from django.utils import timezone

from monitor.collect import lease
from monitor.collect.memory import HORIZON
from monitor.collect.traffic import collect_cluster
from monitor.models import CollectionState
from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import SubscriptionGroupConfig, TopicConfig
from stats import keys
from stats.models import BrokerProbe, ClusterMinute, ConsumeMinute, OffsetMovedEvent, TopicMinute
from stats.store.traffic import delete_expired
from tests.monitor.traffic_helpers import WAIT, collect, plan, running, stats_requests
from tests.support.waiting import wait_for

pytest_plugins = ["tests.monitor.fixtures_traffic"]


def masters(sandbox) -> list[str]:
    return [sandbox.broker(name).addr for name in sandbox.broker_names]


def asked(seen: list[tuple[str, str, str]], stat: str, key: str) -> set[str]:
    return {label for label, name, k in seen if (name, k) == (stat, key)}


def noise(sandbox, workdir) -> None:
    """Traffic on a topic of its own: the masters' counters move, so they prove nothing idle."""
    with running(sandbox, plan("TopicNoise", rate=20.0), workdir / "noise") as run:
        run.stop_producers(at_least=1)


def create_topic(sandbox, topic: str, group: str | None = None) -> None:
    """The topic on both masters; with ``group``, the group's offsets committed at its start (a group that reads
    it, so the masters report its queue ends)."""
    with MQAdmin(sandbox.namesrv_addr) as admin:
        for addr in masters(sandbox):
            admin.create_and_update_topic_config(addr, TopicConfig(topic, read_queue_nums=4, write_queue_nums=4))
            if group is not None:
                admin.create_and_update_subscription_group_config(addr, SubscriptionGroupConfig(group))
                for queue_id in range(4):
                    admin.update_consumer_offset(addr, group, topic, queue_id, 0)


def test_stats_a_broker_says_do_not_exist_are_asked_again_while_nothing_proves_them_still_missing(
    registered, traffic_sandbox, manual_stats, tmp_path
):
    """Issue 16: the collector used to take "not exist" on trust for five minutes, storing zeros for a new topic's
    first messages. Only figures prove a key still missing; a topic no group reads has none but the brokers'."""
    topic = "TopicUnread"  # no group reads it: nothing but the broker's answer says whether it has traffic
    noise(traffic_sandbox, tmp_path)
    create_topic(traffic_sandbox, topic)
    at = timezone.now().replace(second=0, microsecond=0)
    with stats_requests(traffic_sandbox) as seen:
        collect(registered, at)
        assert asked(seen, keys.TOPIC_PUT_NUMS, topic) == {"broker-a:0", "broker-b:0"}  # not exist: remembered
        seen.clear()
        collect(registered, at + dt.timedelta(seconds=30))
        assert asked(seen, keys.TOPIC_PUT_NUMS, topic) == set()  # the brokers' counters have not moved since
        with running(traffic_sandbox, plan(topic, rate=20.0), tmp_path) as run:
            sent = run.stop_producers(at_least=10)
        manual_stats.sample()
        seen.clear()
        later = at + dt.timedelta(minutes=1)
        collect(registered, later)  # the brokers are busy: it could be this topic, so it is asked
        assert asked(seen, keys.TOPIC_PUT_NUMS, topic) == {"broker-a:0", "broker-b:0"}
    assert TopicMinute.objects.get(topic=topic, minute=later).put_nums == sent


def test_stats_a_broker_says_do_not_exist_are_asked_as_soon_as_the_queues_move(
    registered, traffic_sandbox, manual_stats, tmp_path
):
    topic, group = "TopicRead", "cg_read"
    noise(traffic_sandbox, tmp_path)
    create_topic(traffic_sandbox, topic, group)
    at = timezone.now().replace(second=0, microsecond=0)
    with stats_requests(traffic_sandbox) as seen:
        collect(registered, at)
        assert asked(seen, keys.TOPIC_PUT_NUMS, topic) == {"broker-a:0", "broker-b:0"}  # not exist: remembered
        seen.clear()
        collect(registered, at + dt.timedelta(seconds=30))
        assert asked(seen, keys.TOPIC_PUT_NUMS, topic) == set()  # the queue ends have not moved
        with running(traffic_sandbox, plan(topic, rate=20.0), tmp_path) as run:
            sent = run.stop_producers(at_least=10)
        manual_stats.sample()
        seen.clear()
        collect(registered, at + dt.timedelta(minutes=1))
        assert asked(seen, keys.TOPIC_PUT_NUMS, topic) == {"broker-a:0", "broker-b:0"}
    assert TopicMinute.objects.get(topic=topic, minute=at + dt.timedelta(minutes=1)).put_nums == sent


def test_keys_proved_idle_are_not_asked_and_read_zero(registered, traffic_sandbox, manual_stats, tmp_path):
    topic, group = "TopicIdleLater", "cg_idle_later"
    with running(traffic_sandbox, plan(topic, group), tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        run.stop_producers(at_least=10)
        wait_for(
            lambda: admin.examine_consume_stats(group, topic).total_diff == 0, what="consumer caught up", timeout=WAIT
        )
    manual_stats.sample()
    at = timezone.now().replace(second=0, microsecond=0)

    with stats_requests(traffic_sandbox) as seen:
        collect(registered, at)
        # The masters served the pulls; the slaves never served anything, which their counters prove.
        assert asked(seen, keys.GROUP_GET_NUMS, keys.group_key(topic, group)) == {"broker-a:0", "broker-b:0"}
        seen.clear()
        # Offsets unchanged for longer than any stats window reaches back: nothing of this topic is asked.
        collect(registered, at + dt.timedelta(seconds=HORIZON + 60))
        assert not [request for request in seen if topic in request[2]]
    later = (at + dt.timedelta(seconds=HORIZON + 60)).replace(second=0)
    assert TopicMinute.objects.get(topic=topic, minute=at).put_nums > 0
    assert not TopicMinute.objects.filter(topic=topic, minute=later).exists()
    assert not ConsumeMinute.objects.filter(group=group, minute=later).exists()
    assert ClusterMinute.objects.filter(cluster_id=registered.pk, minute=later).exists()


def test_offset_errors_are_read_once(registered, traffic_sandbox):
    topic, group = "TopicMoved", "cg_moved"
    master = traffic_sandbox.broker("broker-a").addr
    at = timezone.now().replace(second=0, microsecond=0)
    with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        admin.create_and_update_topic_config(master, TopicConfig(topic, read_queue_nums=1, write_queue_nums=1))
        admin.create_and_update_subscription_group_config(master, SubscriptionGroupConfig(group))
        collect(registered, at)  # whatever earlier tests left is read now
        before = OffsetMovedEvent.objects.count()
        # A pull far past the end of an empty queue: the broker moves the consumer and records the event.
        admin.pull_message(master, topic, 0, 1000, group=group)
        collect(registered, at + dt.timedelta(minutes=1))
        collect(registered, at + dt.timedelta(minutes=1))
        admin.pull_message(master, topic, 0, 2000, group=group)
        collect(registered, at + dt.timedelta(minutes=2))

    events = OffsetMovedEvent.objects.filter(cluster_id=registered.pk, group=group).order_by("queue_offset")
    assert [(e.topic, e.event_broker_name, e.event_queue_id, e.offset_request, e.offset_new) for e in events] == [
        (topic, "broker-a", 0, 1000, 0),
        (topic, "broker-a", 0, 2000, 0),
    ]
    assert OffsetMovedEvent.objects.count() == before + 2


def test_a_cluster_being_collected_is_not_collected_again(registered):
    token, _ = lease.claim(registered)
    report = collect_cluster(registered)
    assert not report.ran and not ClusterMinute.objects.exists()
    lease.release(registered, token, memory=None)

    assert collect_cluster(registered).ran
    assert ClusterMinute.objects.count() == 1


def test_a_lease_left_by_a_collector_that_died_is_taken_over(registered):
    lease.claim(registered)
    CollectionState.objects.filter(cluster=registered).update(
        started_at=timezone.now() - lease.LEASE - dt.timedelta(seconds=1)
    )
    assert collect_cluster(registered).ran


def test_minutes_past_retention_are_deleted_in_bounded_batches(db):
    now = timezone.now().replace(second=0, microsecond=0)
    old, recent = now - dt.timedelta(days=8), now - dt.timedelta(days=6)
    for minute in (old, old + dt.timedelta(minutes=1), old + dt.timedelta(minutes=2), recent):
        ClusterMinute.objects.create(cluster_id=1, minute=minute)
        BrokerProbe.objects.create(
            cluster_id=1,
            broker_name="broker-a",
            broker_id=0,
            minute=minute,
            address="a:1",
            listed=True,
            ok=True,
            attempts=1,
        )
    cutoff = now - dt.timedelta(days=7)

    assert delete_expired(cutoff, batch_size=2, max_batches=1) == 2  # one batch: a backlog waits for the next run
    assert delete_expired(cutoff, batch_size=2, max_batches=10) == 4
    assert delete_expired(cutoff, batch_size=2, max_batches=10) == 0
    assert list(ClusterMinute.objects.values_list("minute", flat=True)) == [recent]
    assert list(BrokerProbe.objects.values_list("minute", flat=True)) == [recent]
