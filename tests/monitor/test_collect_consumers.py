"""Consumer progress and client health as the collector stores them, against real C++ consumers: lag per group and
per queue (messages and time behind, history kept), connections and subscriptions of online clients, queues a hung
consumer is stuck on, and dead letters of a consumer that keeps failing."""

import datetime as dt
import time

from django.utils import timezone

from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingError
from monitor.sandbox.traffic import Plan
from monitor.sandbox.traffic.profiles import consumer, producer
from stats.models import BlockedQueueMinute, ClientMinute, ConsumeMinute, GroupMinute, QueueLagMinute
from tests.monitor.broadcasting import broadcasting_client, create_topic_and_group
from tests.monitor.traffic_helpers import OPTIONS, WAIT, collect, plan, running, stored
from tests.support.waiting import wait_for

pytest_plugins = ["tests.monitor.fixtures_traffic"]


def test_lag_is_what_the_brokers_hold_unconsumed_and_its_age_that_of_the_last_consumed_message(
    registered, traffic_sandbox, tmp_path
):
    topic, group = "TopicBehind", "cg_behind"
    # One queue on each master, 200 messages each, and a consumer stopped after 40: at least one queue is part
    # consumed (its last consumed message has a store time), the other may be untouched.
    traffic_plan = plan(topic, group, queues=1, backlog=400, rate=1.0, threads=1, delay=0.05)
    with running(traffic_sandbox, traffic_plan, tmp_path) as run:
        run.stop_producers(at_least=400)
        with MQAdmin(traffic_sandbox.namesrv_addr) as admin:

            def committed() -> int:
                return sum(o.consumer_offset for o in admin.examine_consume_stats(group, topic).offset_table.values())

            wait_for(lambda: committed() >= 40, what="some consumed and committed", timeout=WAIT)
    with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        queues = admin.examine_consume_stats(group, topic).offset_table
    lagging = {mq: o for mq, o in queues.items() if o.lag > 0}
    at = timezone.now()

    collect(registered, at)

    row = ConsumeMinute.objects.get(cluster_id=registered.pk, group=group, topic=topic)
    assert row.lag == sum(o.lag for o in queues.values()) > 0
    oldest = min(o.last_timestamp for o in lagging.values() if o.last_timestamp)
    assert row.lag_seconds == (int(at.timestamp() * 1000) - oldest) / 1000
    stored = {
        (r.broker_name, r.queue_id): (r.broker_offset, r.consumer_offset, r.lag)
        for r in QueueLagMinute.objects.filter(cluster_id=registered.pk, group=group, topic=topic)
    }
    assert stored == {
        (mq.broker_name, mq.queue_id): (o.broker_offset, o.consumer_offset, o.lag) for mq, o in lagging.items()
    }

    # History: the next minute is a row of its own, the earlier one stays.
    collect(registered, at + dt.timedelta(minutes=1))
    assert ConsumeMinute.objects.filter(group=group, topic=topic).count() == 2
    assert QueueLagMinute.objects.filter(group=group, topic=topic).count() == 2 * len(lagging)


def test_online_clients_their_connections_and_subscriptions(registered, traffic_sandbox, tmp_path):
    topic, group = "TopicClients", "cg_clients"
    with running(traffic_sandbox, plan(topic, group, rate=2.0), tmp_path) as run:
        wait_for(lambda: run.status(f"consumer {group}").get("received"), what="consumer running", timeout=WAIT)
        collect(registered)

    (client,) = ClientMinute.objects.filter(cluster_id=registered.pk, group=group)
    assert client.language == "CPP" and client.version > 0 and client.address.startswith("127.0.0.1:")
    assert client.subscription == {topic: "*", f"%RETRY%{group}": "*"} and client.error == ""
    assert client.expression_types == {topic: "TAG", f"%RETRY%{group}": "TAG"}
    health = GroupMinute.objects.get(cluster_id=registered.pk, group=group)
    assert (health.clients, health.message_model, health.consume_type) == (1, "CLUSTERING", "CONSUME_PASSIVELY")
    assert health.subscription_consistent is True and health.blocked_queues == 0


def test_clients_of_one_group_subscribing_differently_are_flagged(registered, traffic_sandbox, tmp_path):
    group = "cg_split"
    traffic_plan = Plan(
        topics={"TopicSplitA": 4, "TopicSplitB": 4},
        groups={group: 16},
        clients=[
            producer("pg_split", "TopicSplitA", 2.0, OPTIONS),
            consumer(group, "TopicSplitA", name="consumer split a"),
            consumer(group, "TopicSplitB", name="consumer split b"),
        ],
    )
    with running(traffic_sandbox, traffic_plan, tmp_path):
        wait_for(
            lambda: (
                len(traffic_sandbox.broker("broker-a").consumers.get(group).client_ids()) == 2
                if traffic_sandbox.broker("broker-a").consumers.get(group)
                else False
            ),
            what="both clients online",
            timeout=WAIT,
        )
        collect(registered)

    subscriptions = sorted(
        sorted(row.subscription) for row in ClientMinute.objects.filter(cluster_id=registered.pk, group=group)
    )
    assert subscriptions == [[f"%RETRY%{group}", "TopicSplitA"], [f"%RETRY%{group}", "TopicSplitB"]]
    health = GroupMinute.objects.get(cluster_id=registered.pk, group=group)
    assert health.clients == 2 and health.subscription_consistent is False


def test_queues_a_hung_consumer_is_stuck_on_are_blocked(registered, traffic_sandbox, tmp_path, settings):
    settings.CONSUMER_BLOCKED_SECONDS = 1
    topic, group = "TopicHung", "cg_hung"
    # Every callback hangs: both threads are stuck on their first message, the rest wait in the client.
    with running(traffic_sandbox, plan(topic, group, rate=10.0, block_every=1), tmp_path) as run:
        wait_for(
            lambda: run.status(f"consumer {group}").get("blocked", 0) == 2, what="both threads stuck", timeout=WAIT
        )

        def blocked() -> list[BlockedQueueMinute]:
            collect(registered)
            return list(BlockedQueueMinute.objects.filter(cluster_id=registered.pk, group=group))

        rows = wait_for(blocked, what="blocked queues", timeout=WAIT)
        health = GroupMinute.objects.get(cluster_id=registered.pk, group=group)
    assert health.blocked_queues == len(rows) > 0
    assert {row.topic for row in rows} == {topic}
    assert all(row.cached_messages > 0 or row.lag for row in rows)


def test_retries_and_dead_letters_of_a_failing_consumer(registered, traffic_sandbox, manual_stats, tmp_path):
    topic, group = "TopicFailingCounted", "cg_failing_counted"
    traffic_plan = plan(topic, group, rate=20.0, fail_every=5)
    traffic_plan.groups[group] = 2  # retried twice, then dead-lettered
    with running(traffic_sandbox, traffic_plan, tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        run.stop_producers(at_least=40)
        # What the brokers hold, not what the producers counted: a producer stopped mid-send may not have counted
        # a message the broker stored.
        sent, _ = stored(traffic_sandbox, topic)

        def stored_in(topic_name: str) -> int:
            try:
                table = admin.examine_topic_stats(topic_name).offset_table
            except RemotingError:  # no route yet: nothing sent there so far
                return 0
            return sum(o.max_offset for o in table.values())

        def behind() -> int:
            try:
                return sum(
                    o.broker_offset - o.consumer_offset
                    for o in admin.examine_consume_stats(group).offset_table.values()
                )
            except RemotingError:
                return -1

        seen = {}

        def settled() -> bool:
            """Failures were dead-lettered, the group is behind on nothing, and nothing has moved for two seconds
            (the tests' retry delays are a fraction of a second). Judged by quiescence, not by the client's
            counters: on a loaded machine a send-back the client timed out on may still have reached the broker."""
            now = {
                "client": run.status(f"consumer {group}"),
                "retried": stored_in(f"%RETRY%{group}"),
                "dlq": stored_in(f"%DLQ%{group}"),
                "behind": behind(),
                "stored": sent,
            }
            if now != seen.get("state"):
                seen.update(state=now, since=time.monotonic())
                return False
            return now["dlq"] > 0 and now["behind"] == 0 and time.monotonic() - seen["since"] >= 2.0

        wait_for(settled, timeout=3 * WAIT, what="failing messages dead-lettered", state=lambda: seen.get("state"))
        dlq = seen["state"]["dlq"]
        # What the brokers stored by send-back: every retry (through the retry topic) and every dead letter.
        sent_back = seen["state"]["retried"] + dlq
    manual_stats.sample()

    collect(registered)

    row = ConsumeMinute.objects.get(cluster_id=registered.pk, group=group, topic=topic)
    assert row.sndbck_nums == sent_back > 0
    health = GroupMinute.objects.get(cluster_id=registered.pk, group=group)
    assert health.dlq_total == dlq


def test_a_broadcasting_groups_lag_is_its_furthest_behind_clients(registered, traffic_sandbox, tmp_path):
    """Broadcasting consumers keep their offsets themselves: the brokers know none, the clients report them."""
    topic, group = "TopicBroadcast", "cg_broadcast"
    create_topic_and_group(traffic_sandbox, topic, group)
    with broadcasting_client(traffic_sandbox, group, topic, tmp_path / "client", hold=True) as client_id:
        with running(traffic_sandbox, plan(topic, rate=20.0), tmp_path / "producer") as run:
            sent = run.stop_producers(at_least=20)
        collect(registered)

    row = ConsumeMinute.objects.get(cluster_id=registered.pk, group=group, topic=topic)
    assert (row.lag, row.lag_seconds) == (sent, None)  # nothing consumed: every callback is held
    queues = QueueLagMinute.objects.filter(cluster_id=registered.pk, group=group, topic=topic)
    assert sum(q.lag for q in queues) == sent and {q.client_id for q in queues} == {client_id}
    health = GroupMinute.objects.get(cluster_id=registered.pk, group=group)
    assert (health.clients, health.message_model) == (1, "BROADCASTING")
