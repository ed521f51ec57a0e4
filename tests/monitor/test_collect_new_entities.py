"""Issue 16: a topic or consumer group that has just been created on a running cluster is collected from its first
minute, and a minute the collector could not measure is a gap (a NULL row), never a zero.

The collector is already running (a first collection before the topic exists), as in the demo: the new topic or
group then appears in a cycle of its own. Its stats keys do not exist until its first message (the broker answers
"not exist", a true zero), and a key's first messages are missing from its minute window until the broker's next
10-second sampling of it (the window then reads 0 although messages were counted)."""

import datetime as dt

from django.utils import timezone

from monitor.remoting.admin import MQAdmin
from portal.services import cluster_ops
from stats import keys
from stats.models import ClusterMinute, ConsumeMinute, TopicMinute
from stats.queries.traffic import group_traffic, topic_traffic
from tests.monitor.traffic_helpers import WAIT, collect, plan, running
from tests.support.waiting import wait_for

pytest_plugins = ["tests.monitor.fixtures_traffic"]

MINUTE = dt.timedelta(minutes=1)


def approve_topic(cluster, sandbox, topic: str, group: str | None = None) -> None:
    """What approving the topic (and the group reading it) does on the cluster (:mod:`portal.services.cluster_ops`);
    the group's offsets are then committed at the start of every queue, so its consumer reads every message sent."""
    cluster_ops.create_topic(cluster, topic, 4, False)
    if group is None:
        return
    cluster_ops.create_subscription_group(cluster, group, False)
    with MQAdmin(sandbox.namesrv_addr) as admin:
        for name in sandbox.broker_names:
            for queue_id in range(4):
                admin.update_consumer_offset(sandbox.broker(name).addr, group, topic, queue_id, 0)


def in_window(sandbox, stat: str, key: str) -> int:
    """A stats key's minute window summed over every broker (masters and slaves), as they would answer it now."""
    items = [broker.stats.get_stats_item(stat, key) for broker in sandbox.brokers.values()]
    return sum(item.get_stats_data_in_minute().sum for item in items if item is not None)


def busy(sandbox, workdir) -> None:
    """Traffic on a topic of its own, as a running cluster has: the brokers' counters have moved, so they prove no
    key idle."""
    with running(sandbox, plan("TopicBusy", rate=20.0), workdir / "busy") as run:
        run.stop_producers(at_least=1)


def put_series(cluster, topic: str, first: dt.datetime, last: dt.datetime) -> list:
    return [value for _, value in topic_traffic(cluster.pk, topic, first, last).put_nums]


def test_a_new_topics_messages_are_counted_from_its_first_minute(registered, traffic_sandbox, manual_stats, tmp_path):
    """No group reads the topic: nothing but the brokers' answers says whether it has traffic, so its key is asked
    every minute its brokers are busy (the collector used to take "not exist" on trust for five minutes)."""
    topic = "TopicApprovedNew"
    busy(traffic_sandbox, tmp_path)
    at = timezone.now().replace(second=0, microsecond=0)
    collect(registered, at)
    approve_topic(registered, traffic_sandbox, topic)
    collect(registered, at + MINUTE)  # no message yet: the brokers say its key does not exist
    with running(traffic_sandbox, plan(topic, rate=5.0), tmp_path) as run:
        sent = run.stop_producers(at_least=10)
    manual_stats.sample()

    collect(registered, at + 2 * MINUTE)

    assert TopicMinute.objects.get(topic=topic, minute=at + 2 * MINUTE).put_nums == sent
    assert put_series(registered, topic, at + MINUTE, at + 2 * MINUTE) == [0, sent]


def test_a_new_topics_first_window_not_yet_sampled_is_a_gap(registered, traffic_sandbox, manual_stats, tmp_path):
    """Messages sent less than a sampling period before the collection: the key exists, its window still reads 0.
    That minute is a gap; the next one has the messages."""
    topic = "TopicFirstWindow"
    busy(traffic_sandbox, tmp_path)
    at = timezone.now().replace(second=0, microsecond=0)
    collect(registered, at)
    approve_topic(registered, traffic_sandbox, topic)
    collect(registered, at + MINUTE)
    with running(traffic_sandbox, plan(topic, rate=5.0), tmp_path) as run:
        sent = run.stop_producers(at_least=10)

    collect(registered, at + 2 * MINUTE)  # the brokers have not sampled the new key yet
    manual_stats.sample()
    collect(registered, at + 3 * MINUTE)

    assert put_series(registered, topic, at + MINUTE, at + 3 * MINUTE) == [0, None, sent]
    # A partial sum would look like a drop: the minute's broker and cluster totals are gaps too.
    assert ClusterMinute.objects.get(cluster_id=registered.pk, minute=at + 2 * MINUTE).put_nums is None


def test_a_topic_new_on_quiet_brokers_is_known_missing_without_asking(
    registered, traffic_sandbox, manual_stats, tmp_path
):
    """The brokers' counters prove the new topic idle, so its key is not asked; nothing has created it either, so
    when messages come, its empty first window is read as a gap, not a zero."""
    topic = "TopicNewOnQuietBrokers"
    busy(traffic_sandbox, tmp_path)
    at = timezone.now().replace(second=0, microsecond=0)
    collect(registered, at)
    approve_topic(registered, traffic_sandbox, topic)
    collect(registered, at + 2 * MINUTE)  # nothing stored anywhere for two minutes: the brokers are quiet
    with running(traffic_sandbox, plan(topic, rate=5.0), tmp_path) as run:
        sent = run.stop_producers(at_least=10)

    collect(registered, at + 3 * MINUTE)
    manual_stats.sample()
    collect(registered, at + 4 * MINUTE)

    assert put_series(registered, topic, at + 2 * MINUTE, at + 4 * MINUTE) == [0, None, sent]


def test_a_new_groups_first_window_not_yet_sampled_is_a_gap(registered, traffic_sandbox, manual_stats, tmp_path):
    """A new group's pull rate in the masters' consume stats reads 0 until its key is sampled: it proves nothing."""
    topic, group = "TopicNewGroup", "cg_new_group"
    busy(traffic_sandbox, tmp_path)
    at = timezone.now().replace(second=0, microsecond=0)
    collect(registered, at)
    approve_topic(registered, traffic_sandbox, topic, group)
    collect(registered, at + MINUTE)
    with (
        running(traffic_sandbox, plan(topic, group, rate=5.0), tmp_path) as run,
        MQAdmin(traffic_sandbox.namesrv_addr) as admin,
    ):
        sent = run.stop_producers(at_least=10)
        wait_for(
            lambda: admin.examine_consume_stats(group, topic).total_diff == 0, what="consumer caught up", timeout=WAIT
        )

    collect(registered, at + 2 * MINUTE)  # the brokers have not sampled the new key yet
    manual_stats.sample()
    collect(registered, at + 3 * MINUTE)

    series = group_traffic(registered.pk, group, at + MINUTE, at + 3 * MINUTE)[topic].consume_tps
    assert [value for _, value in series][:2] == [0, None]
    assert ConsumeMinute.objects.get(group=group, topic=topic, minute=at + 3 * MINUTE).get_nums == sent


def test_a_new_group_behind_is_counted_from_its_first_minute(registered, traffic_sandbox, manual_stats, tmp_path):
    """A group with a backlog proves nothing idle by its offsets: its key is asked every minute (the collector used
    to take its earlier "not exist" on trust for five minutes, storing a zero next to a growing lag)."""
    topic, group = "TopicNewGroupBehind", "cg_new_group_behind"
    busy(traffic_sandbox, tmp_path)
    at = timezone.now().replace(second=0, microsecond=0)
    collect(registered, at)
    approve_topic(registered, traffic_sandbox, topic, group)
    collect(registered, at + MINUTE)
    # Every callback hangs: the consumer pulls its first messages and stays behind.
    with running(traffic_sandbox, plan(topic, group, rate=5.0, block_every=1), tmp_path) as run:
        wait_for(
            lambda: run.status(f"consumer {group}").get("blocked", 0) == 2, what="both threads stuck", timeout=WAIT
        )
        run.stop_producers(at_least=10)
        manual_stats.sample()
        pulled = in_window(traffic_sandbox, keys.GROUP_GET_NUMS, keys.group_key(topic, group))

        collect(registered, at + 2 * MINUTE)

    row = ConsumeMinute.objects.get(group=group, topic=topic, minute=at + 2 * MINUTE)
    assert row.lag > 0 and row.get_nums == pulled > 0
