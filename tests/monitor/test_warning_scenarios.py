"""The warning rules against a real cluster: real C++ clients drive the sandbox (two broker names, master + slave
each) into each condition, the real collection and probes store it, and ``evaluate`` must report it with the right
reason; when the sandbox recovers it must be gone, and ``reconcile`` records the warning firing and resolving.
Server thresholds are checked with stats read over SSH from a real sshd.

Every event is delivered (:mod:`tests.monitor.warning_audience`, fixture ``audience``): the people who chose to hear
of a kind — the owning team's member for a group's warnings, a portal admin for the brokers' and servers' — get the
firing once through each of their channels (a real SMTP server and a real HTTP endpoint on 127.0.0.1 receive it, and
in-app), nothing more while the condition lasts, then the resolved notice once; nobody else hears anything.

Collections run at whole minutes a little ahead of the clock (``minute(k)``): each is a minute of its own, as the
per-minute beat would make them, and the time since a client last consumed is at least that far ahead."""

import contextlib
import datetime as dt
import socket
import subprocess
import sys
import threading
from collections import Counter

import pytest
from django.utils import timezone
from rocketmq.exceptions import ProducerSendSyncFailed

import portal.tasks  # noqa: F401  (registers the delivery task reconcile enqueues, run eagerly with a live server)
from monitor.collect.probe import probe_cluster
from monitor.collect.servers import collect_server_stats
from monitor.launcher.sshd import SSH_USER
from monitor.models import ServerAccess
from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import SubscriptionGroupConfig, TopicConfig
from monitor.remoting.errors import RemotingError
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.traffic import Plan
from monitor.sandbox.traffic.profiles import consumer, producer
from monitor.sdk import Message, Producer
from portal.models import Broker, Cluster, ConsumerGroup, NameServer, ProducerGroup, Team, Topic
from portal.models.warnings import Severity, Transition, WarningKind
from portal.services import producer_tokens
from portal.services.cluster_ops import discover_brokers
from portal.services.warnings.lifecycle import stored_summary
from portal.services.warnings.rules import evaluate
from stats.models import SERVER_SLOT, BlockedQueueMinute, ServerSample
from tests.monitor.traffic_helpers import OPTIONS, WAIT, collect, plan, running
from tests.monitor.warning_audience import reconcile_and_deliver
from tests.portal.warning_rules.warning_rows import admin_user, default_threshold, override_threshold
from tests.support.waiting import wait_for

pytest_plugins = ["tests.monitor.fixtures_traffic", "tests.monitor.fixtures_warnings"]

LAG = WarningKind.CONSUMER_LAG
BLOCKED = WarningKind.CLIENT_BLOCKED
DOWN = WarningKind.BROKER_DOWN
SLAVE = WarningKind.SLAVE_LAG
MOVED = WarningKind.OFFSET_MOVED
RETRIES, DEAD = WarningKind.CONSUME_FAILURES, WarningKind.DEAD_LETTERS
SPLIT = WarningKind.SUBSCRIPTION_MISMATCH
PRODUCE = WarningKind.PRODUCE_ERRORS
TCP, CPU = WarningKind.SERVER_TCP, WarningKind.SERVER_CPU
FIRED, RESOLVED = Transition.FIRED, Transition.RESOLVED


@pytest.fixture
def start():
    """The start of the minute two minutes ahead: collections and probes run at ``start + k`` minutes."""
    return timezone.now().replace(second=0, microsecond=0) + dt.timedelta(minutes=2)


def minute(start, k: int) -> dt.datetime:
    return start + dt.timedelta(minutes=k)


def conditions(cluster, at, kind) -> dict:
    """The conditions of ``kind`` the rules see 20 s into the minute ``at`` (the kind must have been evaluated)."""
    evaluation = evaluate(cluster, at + dt.timedelta(seconds=20))
    assert kind in evaluation.evaluated
    return {c.subject_name: c for c in evaluation.of_kind(kind)}


def reconciled(cluster, at, kind, subject) -> list[str]:
    """Reconcile the evaluation 20 s into the minute ``at`` and deliver every event it records; the transitions
    recorded for ``subject``'s warning of ``kind``."""
    now = at + dt.timedelta(seconds=20)
    result = reconcile_and_deliver(cluster, evaluate(cluster, now), now)
    return [e.transition for e in result.events if e.warning.kind == kind and e.warning.subject_name == subject]


def owned_group(cluster, name) -> ConsumerGroup:
    team, _ = Team.objects.get_or_create(name="scenarios")
    return ConsumerGroup.objects.create(cluster=cluster, team=team, name=name)


def committed(admin, group, topic) -> int:
    return sum(o.consumer_offset for o in admin.examine_consume_stats(group, topic).offset_table.values())


def lag_of(admin, group, topic) -> int:
    return sum(o.lag for o in admin.examine_consume_stats(group, topic).offset_table.values())


def dead_letters(admin, group) -> int:
    try:
        return sum(o.max_offset for o in admin.examine_topic_stats(f"%DLQ%{group}").offset_table.values())
    except RemotingError:  # no route yet: nothing dead-lettered so far
        return 0


def test_a_lagging_consumer_is_reported_catching_up_then_stopped_and_resolved_once_caught_up(
    registered, traffic_sandbox, tmp_path, start, audience
):
    topic, group = "TopicWarnLag", "cg_warn_lag"
    override_threshold(LAG, owned_group(registered, group), messages=50, seconds=30)
    # 800 messages at once, and a slow single-threaded consumer (about 20 a second).
    slow = plan(topic, group, queues=2, backlog=800, rate=1.0, threads=1, delay=0.05)
    with running(traffic_sandbox, slow, tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        run.stop_producers(at_least=800)
        wait_for(lambda: committed(admin, group, topic) >= 40, what="some consumed and committed", timeout=WAIT)
        first = committed(admin, group, topic)
        collect(registered, minute(start, 0))
        wait_for(lambda: committed(admin, group, topic) >= first + 40, what="more consumed and committed", timeout=WAIT)
        collect(registered, minute(start, 1))

        lag = conditions(registered, minute(start, 1), LAG)[group]
        assert lag.details["state"] == "catching_up" and lag.severity == Severity.WARNING
        summary = stored_summary(lag)
        assert summary.startswith(f"{group} is {lag.details['lag']:,} messages behind on {topic}; the oldest ")
        assert "Slow but catching up: consuming " in summary and " Most behind: TopicWarnLag broker-" in summary
        assert lag.details["consumed_per_second"] > 0 and lag.details["lag_change_per_minute"] < 0
        assert reconciled(registered, minute(start, 1), LAG, group) == [FIRED]
        assert audience.heard(LAG, group) == audience.told(LAG, FIRED)

    # The consumer is gone, with messages still waiting: worse, but the owner has been told.
    collect(registered, minute(start, 2))
    lag = conditions(registered, minute(start, 2), LAG)[group]
    assert lag.details["state"] == "stopped" and lag.severity == Severity.CRITICAL
    assert "Stopped: no consumer client is online" in stored_summary(lag)
    assert reconciled(registered, minute(start, 2), LAG, group) == []
    assert audience.heard(LAG, group) == audience.told(LAG, FIRED)

    recovery = Plan(topics={topic: 2}, groups={group: 16}, clients=[consumer(group, topic)])
    with running(traffic_sandbox, recovery, tmp_path / "recovery"), MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        wait_for(lambda: lag_of(admin, group, topic) == 0, what="the consumer to catch up", timeout=WAIT)
        collect(registered, minute(start, 3))
    assert group not in conditions(registered, minute(start, 3), LAG)
    assert reconciled(registered, minute(start, 3), LAG, group) == [RESOLVED]
    assert audience.heard(LAG, group) == audience.told(LAG, FIRED, RESOLVED)
    assert audience.strangers(LAG) == []


def test_a_hung_consumer_is_blocked_and_stalled_and_both_clear_when_it_is_gone(
    registered, traffic_sandbox, tmp_path, start, settings, audience
):
    settings.CONSUMER_BLOCKED_SECONDS = 1
    topic, group = "TopicWarnHung", "cg_warn_hung"
    entry = owned_group(registered, group)
    override_threshold(BLOCKED, entry, seconds=30)
    override_threshold(LAG, entry, messages=5, seconds=30)
    # About one callback in ten never returns: the consumer consumes (and commits) a little, then both of its
    # threads are stuck while it stays connected, like a hung application.
    hung = plan(topic, group, rate=20.0, block_every=10)
    with running(traffic_sandbox, hung, tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        wait_for(
            lambda: run.status(f"consumer {group}").get("blocked", 0) == 2, what="both threads stuck", timeout=WAIT
        )
        wait_for(lambda: committed(admin, group, topic) > 0, what="some consumed and committed", timeout=WAIT)
        wait_for(lambda: lag_of(admin, group, topic) > 20, what="messages waiting", timeout=WAIT)

        def blocked_queues() -> bool:
            collect(registered, minute(start, 0))
            return BlockedQueueMinute.objects.filter(cluster_id=registered.pk, group=group).exists()

        wait_for(blocked_queues, what="blocked queues", timeout=WAIT)
        collect(registered, minute(start, 1))

        blocked = conditions(registered, minute(start, 1), BLOCKED)[group]
        summary = stored_summary(blocked)
        assert summary.startswith(f"{blocked.details['blocked_queues']} queue")
        assert f" of {group} not consumed for up to " in summary and f"{topic} broker-" in summary
        assert all(q["blocked_seconds"] > 30 for q in blocked.details["queues"])
        lag = conditions(registered, minute(start, 1), LAG)[group]
        assert lag.details["state"] == "stalled" and lag.severity == Severity.CRITICAL
        assert "Stalled: 1 client online, but the committed offsets have not moved in 1 min." in stored_summary(lag)
        assert reconciled(registered, minute(start, 1), BLOCKED, group) == [FIRED]
        assert audience.heard(BLOCKED, group) == audience.told(BLOCKED, FIRED)
        assert audience.heard(LAG, group) == audience.told(LAG, FIRED)

        # Still hung a minute later: nothing new.
        collect(registered, minute(start, 2))
        assert group in conditions(registered, minute(start, 2), BLOCKED)
        assert reconciled(registered, minute(start, 2), BLOCKED, group) == []
        assert audience.heard(BLOCKED, group) == audience.told(BLOCKED, FIRED)

    collect(registered, minute(start, 3))
    assert group not in conditions(registered, minute(start, 3), BLOCKED)
    assert conditions(registered, minute(start, 3), LAG)[group].details["state"] == "stopped"
    assert reconciled(registered, minute(start, 3), BLOCKED, group) == [RESOLVED]
    assert audience.heard(BLOCKED, group) == audience.told(BLOCKED, FIRED, RESOLVED)
    assert audience.heard(LAG, group) == audience.told(LAG, FIRED)  # still lagging: no client left
    assert audience.strangers(BLOCKED) == []


def test_a_stopped_broker_is_down_after_the_grace_period_and_up_again_when_restarted(db, start, audience):
    # A sandbox of its own: a restarted master's slave stops copying its tables (see the report), which the other
    # scenarios' shared sandbox must not inherit.
    with SandboxCluster(brokers=2) as sandbox:
        cluster = Cluster.objects.create(name="probed")
        NameServer.objects.create(cluster=cluster, address=sandbox.namesrv_addr)
        discover_brokers(cluster)
        sandbox.stop_broker("broker-b")
        try:
            probe_cluster(cluster, now=minute(start, 0))
            assert conditions(cluster, minute(start, 0), DOWN) == {}  # one round: not yet

            probe_cluster(cluster, now=minute(start, 1))
            down = conditions(cluster, minute(start, 1), DOWN)
            assert set(down) == {"broker-b@0"} and down["broker-b@0"].severity == Severity.CRITICAL
            assert stored_summary(down["broker-b@0"]).startswith(
                f"Broker broker-b@0 (ASYNC_MASTER, {sandbox.broker('broker-b').addr}) has not answered for 2 min: "
                "2 probe rounds of 3 quick attempts each failed ("
            )
            assert "The name servers no longer list it." in stored_summary(down["broker-b@0"])
            assert reconciled(cluster, minute(start, 1), DOWN, "broker-b@0") == [FIRED]
            assert audience.heard(DOWN, "broker-b@0") == audience.told(DOWN, FIRED)

            probe_cluster(cluster, now=minute(start, 2))  # still down a round later: nothing new
            assert "broker-b@0" in conditions(cluster, minute(start, 2), DOWN)
            assert reconciled(cluster, minute(start, 2), DOWN, "broker-b@0") == []
            assert audience.heard(DOWN, "broker-b@0") == audience.told(DOWN, FIRED)
        finally:
            sandbox.start_broker("broker-b")

        wait_for(
            lambda: all(row.ok for row in probe_cluster(cluster, now=minute(start, 3))[1]),
            what="all answering",
            timeout=WAIT,
        )
        assert conditions(cluster, minute(start, 3), DOWN) == {}
        assert reconciled(cluster, minute(start, 3), DOWN, "broker-b@0") == [RESOLVED]
    assert audience.heard(DOWN, "broker-b@0") == audience.told(DOWN, FIRED, RESOLVED)
    assert audience.strangers(DOWN) == []


def test_a_slave_that_stops_copying_falls_behind_and_catches_up_again(
    registered, traffic_sandbox, tmp_path, start, monkeypatch, audience
):
    """The sandbox slave copies its master's commit log in-process; holding that copy back is the fault."""
    default_threshold(WarningKind.SLAVE_LAG, bytes=50_000)
    slave, master = traffic_sandbox.broker("broker-a", 1), traffic_sandbox.broker("broker-a")
    monkeypatch.setattr(slave, "replicate_once", lambda: 0)
    topic = "TopicWarnSlave"
    with running(traffic_sandbox, plan(topic, rate=50.0, queues=2), tmp_path) as run:
        run.stop_producers(at_least=200)
    wait_for(lambda: master.store.commit_log_max_offset - slave.store.commit_log_max_offset > 50_000, timeout=WAIT)
    probe_cluster(registered, now=minute(start, 0))
    probe_cluster(registered, now=minute(start, 1))

    lagging = conditions(registered, minute(start, 1), SLAVE)["broker-a@1"]
    behind = master.store.commit_log_max_offset - slave.store.commit_log_max_offset
    assert lagging.details["behind_bytes"] == behind
    assert lagging.details["master_commit_log_max_offset"] == master.store.commit_log_max_offset
    assert stored_summary(lagging).startswith(f"Slave broker-a@1 ({slave.addr}) is ")
    assert f" of commit log behind its master broker-a@0 ({master.addr}), neither catching up nor falling" in (
        stored_summary(lagging)
    )
    assert reconciled(registered, minute(start, 1), SLAVE, "broker-a@1") == [FIRED]
    assert audience.heard(SLAVE, "broker-a@1") == audience.told(SLAVE, FIRED)

    probe_cluster(registered, now=minute(start, 2))  # still behind a round later: nothing new
    assert "broker-a@1" in conditions(registered, minute(start, 2), SLAVE)
    assert reconciled(registered, minute(start, 2), SLAVE, "broker-a@1") == []

    monkeypatch.undo()
    wait_for(
        lambda: slave.store.commit_log_max_offset == master.store.commit_log_max_offset,
        what="slave caught up",
        timeout=WAIT,
    )
    probe_cluster(registered, now=minute(start, 3))
    assert "broker-a@1" not in conditions(registered, minute(start, 3), SLAVE)
    assert reconciled(registered, minute(start, 3), SLAVE, "broker-a@1") == [RESOLVED]
    assert audience.heard(SLAVE, "broker-a@1") == audience.told(SLAVE, FIRED, RESOLVED)
    assert audience.strangers(SLAVE) == []


def test_a_consumer_asking_for_an_offset_past_the_queue_is_an_offset_error_for_ten_minutes(
    registered, traffic_sandbox, start, audience
):
    topic, group = "TopicWarnMoved", "cg_warn_moved"
    owned_group(registered, group)
    master = traffic_sandbox.broker("broker-a").addr
    with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        admin.create_and_update_topic_config(master, TopicConfig(topic, read_queue_nums=1, write_queue_nums=1))
        admin.create_and_update_subscription_group_config(master, SubscriptionGroupConfig(group))
        # A pull far past the end of an empty queue, as a consumer with a bad offset makes it.
        admin.pull_message(master, topic, 0, 1000, group=group)
    collect(registered, minute(start, 0))

    moved = conditions(registered, minute(start, 0), MOVED)[group]
    assert stored_summary(moved).startswith(f"{group} asked for offsets outside the queues 1 time in the last 10 min ")
    assert f"the broker moved it: {topic} broker-a/0: asked for 1,000, moved to 0, 1,000 messages to be consumed " in (
        stored_summary(moved)
    )
    assert reconciled(registered, minute(start, 0), MOVED, group) == [FIRED]
    assert audience.heard(MOVED, group) == audience.told(MOVED, FIRED)

    collect(registered, minute(start, 1))  # still within the ten minutes: nothing new
    assert group in conditions(registered, minute(start, 1), MOVED)
    assert reconciled(registered, minute(start, 1), MOVED, group) == []

    collect(registered, minute(start, 11))
    assert group not in conditions(registered, minute(start, 11), MOVED)
    assert reconciled(registered, minute(start, 11), MOVED, group) == [RESOLVED]
    assert audience.heard(MOVED, group) == audience.told(MOVED, FIRED, RESOLVED)
    assert audience.strangers(MOVED) == []


def test_a_failing_consumers_retries_and_first_dead_letters_are_reported_until_an_hour_without_them(
    registered, traffic_sandbox, manual_stats, tmp_path, start, audience
):
    topic, group = "TopicWarnFailing", "cg_warn_failing"
    override_threshold(WarningKind.CONSUME_FAILURES, owned_group(registered, group), retries_per_hour=10)
    failing = plan(topic, group, rate=20.0, fail_every=5)
    failing.groups[group] = 2  # retried twice, then dead-lettered
    with running(traffic_sandbox, failing, tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        # Seen online before anything reached its dead-letter queue.
        wait_for(lambda: run.status(f"consumer {group}").get("received"), what="consumer running", timeout=WAIT)
        assert dead_letters(admin, group) == 0
        collect(registered, minute(start, 0))
        run.stop_producers(at_least=60)
        wait_for(lambda: dead_letters(admin, group) > 0, timeout=3 * WAIT, what="dead letters")
    # The consumer is gone: nothing more is sent back or dead-lettered.
    with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        dlq = dead_letters(admin, group)
    manual_stats.sample()
    collect(registered, minute(start, 1))

    failures = conditions(registered, minute(start, 1), RETRIES)[group]
    assert failures.details["sent_back"] >= 10
    summary = stored_summary(failures)
    assert summary.startswith(f"{group} sent {failures.details['sent_back']:,} messages back for retry in ")
    assert f"They come back through %RETRY%{group} and, retried too often, end in %DLQ%{group}." in summary
    dead = conditions(registered, minute(start, 1), DEAD)[group]
    assert dead.details["dead_letters"] == dlq
    assert stored_summary(dead).startswith(
        f"{dlq} message{'s' if dlq != 1 else ''} of {group} reached its dead-letter queue "
    )
    assert reconciled(registered, minute(start, 1), DEAD, group) == [FIRED]
    assert audience.heard(DEAD, group) == audience.told(DEAD, FIRED)
    assert audience.heard(RETRIES, group) == audience.told(RETRIES, FIRED)

    collect(registered, minute(start, 2))  # within the hour: nothing new
    assert group in conditions(registered, minute(start, 2), DEAD)
    assert reconciled(registered, minute(start, 2), DEAD, group) == []

    # An hour without failures (the brokers' minute windows sampled past them; the failed minutes out of the rules'
    # hour): both are over.
    for _ in range(7):
        manual_stats.sample()
    collect(registered, minute(start, 62))
    assert group not in conditions(registered, minute(start, 62), RETRIES)
    assert group not in conditions(registered, minute(start, 62), DEAD)
    assert reconciled(registered, minute(start, 62), DEAD, group) == [RESOLVED]
    assert audience.heard(DEAD, group) == audience.told(DEAD, FIRED, RESOLVED)
    assert audience.heard(RETRIES, group) == audience.told(RETRIES, FIRED, RESOLVED)
    assert audience.strangers(DEAD) == []


def test_clients_of_a_group_subscribing_differently_are_a_subscription_error_until_one_leaves(
    registered, traffic_sandbox, tmp_path, start, audience
):
    group = "cg_warn_split"
    owned_group(registered, group)
    clients = {
        "a": consumer(group, "TopicWarnSplitA", name="consumer split a"),
        "b": consumer(group, "TopicWarnSplitB", name="consumer split b"),
    }
    split = Plan(
        topics={"TopicWarnSplitA": 4, "TopicWarnSplitB": 4},
        groups={group: 16},
        clients=[producer("pg_warn_split", "TopicWarnSplitA", 2.0, OPTIONS), *clients.values()],
    )
    master = traffic_sandbox.broker("broker-a")
    with running(traffic_sandbox, split, tmp_path) as run:
        wait_for(
            lambda: master.consumers.get(group) and len(master.consumers.get(group).client_ids()) == 2, timeout=WAIT
        )
        collect(registered, minute(start, 0))
        mismatch = conditions(registered, minute(start, 0), SPLIT)[group]
        assert stored_summary(mismatch).startswith(f"The clients of {group} subscribe differently: 1 client (")
        assert ") to TopicWarnSplitA (*); 1 client (" in stored_summary(mismatch)
        assert stored_summary(mismatch).count(") to TopicWarnSplitB (*)") == 1
        assert reconciled(registered, minute(start, 0), SPLIT, group) == [FIRED]
        assert audience.heard(SPLIT, group) == audience.told(SPLIT, FIRED)

        collect(registered, minute(start, 1))  # still split a minute later: nothing new
        assert group in conditions(registered, minute(start, 1), SPLIT)
        assert reconciled(registered, minute(start, 1), SPLIT, group) == []

        run.client("consumer split b").terminate()
        masters = [traffic_sandbox.broker(name) for name in traffic_sandbox.broker_names]
        wait_for(
            lambda: all(len(m.consumers.get(group).client_ids()) == 1 for m in masters),
            what="one client left",
            timeout=WAIT,
        )
        collect(registered, minute(start, 2))
    assert group not in conditions(registered, minute(start, 2), SPLIT)
    assert reconciled(registered, minute(start, 2), SPLIT, group) == [RESOLVED]
    assert audience.heard(SPLIT, group) == audience.told(SPLIT, FIRED, RESOLVED)
    assert audience.strangers(SPLIT) == []


def test_a_producer_whose_sends_fail_is_reported_from_its_sdk_reports(
    registered, traffic_sandbox, live_server, tmp_path, monkeypatch, eager, audience
):
    """The SDK producer (the real C++ client in this process) reports its sends to the portal's API, served by a
    live server; broker-a stops answering, so sends to it time out and are retried on broker-b. (With a live
    server every transaction commits, so the deliveries reconcile enqueues run, eagerly, as the worker would run
    them; delivering again afterwards sends nothing twice.)"""
    monkeypatch.setenv("HOME", str(tmp_path))  # the C++ client logs under $HOME
    topic, group = "TopicWarnProduce", "pg_warn_produce"
    team, _ = Team.objects.get_or_create(name="scenarios")
    producer_group = ProducerGroup.objects.create(cluster=registered, team=team, name=group)
    producer_group.topics.add(Topic.objects.create(cluster=registered, team=team, name=topic, queue_nums=2))
    issued = producer_tokens.issue(producer_group, by=admin_user())
    with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        for name in traffic_sandbox.broker_names:
            config = TopicConfig(topic, read_queue_nums=2, write_queue_nums=2)
            admin.create_and_update_topic_config(traffic_sandbox.broker(name).addr, config)
    producer = Producer(group, timeout=1000, portal_url=live_server.url, token=issued.secret, topics=[topic])
    producer.set_namesrv_addr(traffic_sandbox.namesrv_addr)
    records = []  # what the application saw, send by send
    producer.add_listener(records.append)
    producer.start()
    try:
        message = Message(topic)
        message.set_body("order")
        producer.send_sync(message)  # the client has its route and connections
        traffic_sandbox.drop_responses("broker-a", 1.0)
        try:
            for _ in range(4):
                with contextlib.suppress(ProducerSendSyncFailed):  # every attempt may fail on a busy machine
                    producer.send_sync(message)
        finally:
            traffic_sandbox.heal("broker-a")
    finally:
        producer.shutdown()  # reports everything recorded
    now = timezone.now()
    failures = Counter(record.exception for record in records if record.exception)
    failed = sum(failures.values())
    assert failed and {r.broker_name for r in records if r.exception} >= {"broker-a"}

    errors = conditions(registered, now, PRODUCE)[group]
    assert (errors.details["failed"], errors.details["sent"]) == (failed, len(records))
    assert errors.details["exceptions"] == dict(failures) == {"ProducerSendSyncFailed": failed}
    assert "broker-a" in errors.details["brokers"]["ProducerSendSyncFailed"]
    assert stored_summary(errors).startswith(
        f"{failed} send{'s' if failed > 1 else ''} of {group} failed in the last 5 min "
        f"({failed / len(records):.1%} of {len(records)}): ProducerSendSyncFailed ×{failed} (broker-a"
    )
    assert f"on {topic}, from 1 client ({producer.client_id})." in stored_summary(errors)
    assert reconciled(registered, now, PRODUCE, group) == [FIRED]
    assert audience.heard(PRODUCE, group) == audience.told(PRODUCE, FIRED)

    # A minute later the failures are still within the window: nothing new.
    assert group in conditions(registered, now + dt.timedelta(minutes=1), PRODUCE)
    assert reconciled(registered, now + dt.timedelta(minutes=1), PRODUCE, group) == []

    # Five minutes without a failed send: over.
    later = now + dt.timedelta(minutes=6)
    assert group not in conditions(registered, later, PRODUCE)
    assert reconciled(registered, later, PRODUCE, group) == [RESOLVED]
    assert audience.heard(PRODUCE, group) == audience.told(PRODUCE, FIRED, RESOLVED)
    assert audience.strangers(PRODUCE) == []


@pytest.fixture
def connections():
    """Open ``n`` TCP connections to a local listener (2 ``n`` established sockets on this host); closed at the
    end."""
    sockets: list[socket.socket] = []
    listener = socket.create_server(("127.0.0.1", 0), backlog=4096)

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            sockets.append(conn)

    threading.Thread(target=accept, daemon=True).start()

    def open_(n: int) -> None:
        for _ in range(n):
            sockets.append(socket.create_connection(listener.getsockname()))
        wait_for(lambda: len(sockets) >= 2 * n, what="connections accepted", timeout=WAIT)

    def close() -> None:
        for sock in sockets:
            sock.close()
        sockets.clear()

    yield open_, close
    close()
    listener.close()


@pytest.fixture
def server_cluster(db, sshd, ssh_keys) -> Cluster:
    """A cluster whose one broker runs on 127.0.0.1, read over SSH by the real sshd there."""
    cluster = Cluster.objects.create(name="servers")
    Broker.objects.create(
        cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0, address="127.0.0.1:10911"
    )
    ServerAccess.objects.create(
        cluster=cluster, username=SSH_USER, port=sshd.port, private_key=ssh_keys.client.read_text()
    )
    return cluster


def test_a_server_holding_many_connections_is_reported_from_its_stats_over_ssh(server_cluster, connections, audience):
    open_connections, close_connections = connections
    at = timezone.now()
    collect_server_stats(server_cluster, at)
    before = ServerSample.objects.get(host="127.0.0.1").tcp_established
    default_threshold(TCP, established=before + 500)
    assert conditions(server_cluster, at, TCP) == {}

    open_connections(500)
    collect_server_stats(server_cluster, at)
    tcp = conditions(server_cluster, at, TCP)["127.0.0.1"]
    established = ServerSample.objects.get(host="127.0.0.1").tcp_established
    # 1,000 more (both ends of each connection), give or take other processes' connections coming and going
    assert established > before + 900 and tcp.details["established"] == established
    assert stored_summary(tcp).startswith(
        f"127.0.0.1: {established:,} established TCP connections (threshold {before + 500:,}), "
    )
    assert reconciled(server_cluster, at, TCP, "127.0.0.1") == [FIRED]
    assert audience.heard(TCP, "127.0.0.1") == audience.told(TCP, FIRED)

    # The next reading, five minutes later, still over: nothing new.
    collect_server_stats(server_cluster, at + SERVER_SLOT)
    assert "127.0.0.1" in conditions(server_cluster, at + SERVER_SLOT, TCP)
    assert reconciled(server_cluster, at + SERVER_SLOT, TCP, "127.0.0.1") == []

    close_connections()
    collect_server_stats(server_cluster, at + 2 * SERVER_SLOT)
    assert conditions(server_cluster, at + 2 * SERVER_SLOT, TCP) == {}
    assert reconciled(server_cluster, at + 2 * SERVER_SLOT, TCP, "127.0.0.1") == [RESOLVED]
    assert audience.heard(TCP, "127.0.0.1") == audience.told(TCP, FIRED, RESOLVED)
    assert audience.strangers(TCP) == []


SPIN = "import os\nos.nice(19)\nprint('spinning', flush=True)\nwhile True:\n    pass\n"


@pytest.fixture
def busy_cpus():
    """Start one spinning process per CPU the host's readings cover (``/proc/stat``); killed at the end. At nice
    19 they only take the time the CPUs would otherwise idle, so the rest of the machine hardly slows down."""
    with open("/proc/stat") as stat:
        cpus = sum(1 for line in stat if line.startswith("cpu") and line[3].isdigit())
    spinners: list[subprocess.Popen] = []

    def start() -> None:
        for _ in range(cpus):
            spinners.append(subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True))
        for spinner in spinners:
            assert spinner.stdout.readline() == "spinning\n"

    yield start
    for spinner in spinners:
        spinner.kill()
        spinner.wait()
        spinner.stdout.close()


def test_a_server_whose_cpus_are_all_busy_is_reported_after_two_readings_over_ssh(server_cluster, busy_cpus, audience):
    """Busy CPUs are made (a spinning process on each); how idle the shared machine is afterwards is not in the test's
    hands, so this one ends while they are still busy (the TCP scenario above checks a server warning's end)."""
    default_threshold(CPU, percent=80)
    busy_cpus()
    at = timezone.now()
    collect_server_stats(server_cluster, at)
    assert conditions(server_cluster, at, CPU) == {}  # one reading is not enough

    collect_server_stats(server_cluster, at + SERVER_SLOT)
    cpu = conditions(server_cluster, at + SERVER_SLOT, CPU)["127.0.0.1"]
    readings = list(ServerSample.objects.order_by("-minute").values_list("cpu_percent", flat=True))
    assert len(readings) == 2 and min(readings) >= 80 and cpu.details["cpu_percent"] == readings
    assert stored_summary(cpu).startswith(f"127.0.0.1: CPU {readings[0]:.0f}% busy")
    assert ", over 80% in the last 2 readings (10 min); load " in stored_summary(cpu)
    assert reconciled(server_cluster, at + SERVER_SLOT, CPU, "127.0.0.1") == [FIRED]
    assert audience.heard(CPU, "127.0.0.1") == audience.told(CPU, FIRED)

    # Still busy at the next reading: nothing new.
    collect_server_stats(server_cluster, at + 2 * SERVER_SLOT)
    assert "127.0.0.1" in conditions(server_cluster, at + 2 * SERVER_SLOT, CPU)
    assert reconciled(server_cluster, at + 2 * SERVER_SLOT, CPU, "127.0.0.1") == []
    assert audience.heard(CPU, "127.0.0.1") == audience.told(CPU, FIRED)
    assert audience.strangers(CPU) == []
