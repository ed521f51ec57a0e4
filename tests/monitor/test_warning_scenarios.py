"""The warning rules against a real cluster: real C++ clients drive the sandbox (two broker names, master + slave
each) into each condition, the real collection and probes store it, and ``evaluate`` must report it with the right
reason; when the sandbox recovers it must be gone, and ``reconcile`` records the warning firing and resolving.
Server thresholds are checked with stats read over SSH from a real sshd.

Collections run at whole minutes a little ahead of the clock (``minute(k)``): each is a minute of its own, as the
per-minute beat would make them, and the time since a client last consumed is at least that far ahead."""

import contextlib
import datetime as dt
import socket
import threading
from collections import Counter

import pytest
from django.utils import timezone
from rocketmq.exceptions import ProducerSendSyncFailed

import portal.tasks  # noqa: F401  (registers the delivery task reconcile enqueues, run eagerly with a live server)
from monitor.collect.probe import probe_cluster
from monitor.collect.servers import collect_server_stats
from monitor.models import ServerAccess
from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import SubscriptionGroupConfig, TopicConfig
from monitor.remoting.errors import RemotingError
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.traffic import Plan
from monitor.sandbox.traffic.profiles import consumer, producer
from monitor.sdk import Message, Producer
from monitor.warnings import evaluate
from portal.models import Broker, Cluster, ConsumerGroup, NameServer, ProducerGroup, Team, Topic
from portal.models.warnings import Severity, Transition, WarningKind
from portal.services import producer_tokens
from portal.services.cluster_ops import discover_brokers
from portal.services.warnings.lifecycle import reconcile
from stats.models import BlockedQueueMinute, ServerSample
from tests.monitor.conftest import SSH_USER
from tests.monitor.traffic_helpers import OPTIONS, WAIT, collect, plan, running, wait_for
from tests.monitor.warning_rows import admin_user, default_threshold, override_threshold

pytest_plugins = ["tests.monitor.fixtures_traffic"]

LAG = WarningKind.CONSUMER_LAG
BLOCKED = WarningKind.CLIENT_BLOCKED


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
    """Reconcile the evaluation at ``at``; the transitions recorded for ``subject``'s warning of ``kind``."""
    result = reconcile(cluster, evaluate(cluster, at + dt.timedelta(seconds=20)), at + dt.timedelta(seconds=20))
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
    registered, traffic_sandbox, tmp_path, start
):
    topic, group = "TopicWarnLag", "cg_warn_lag"
    override_threshold(LAG, owned_group(registered, group), messages=50, seconds=30)
    # 800 messages at once, and a slow single-threaded consumer (about 20 a second).
    slow = plan(topic, group, queues=2, backlog=800, rate=1.0, threads=1, delay=0.05)
    with running(traffic_sandbox, slow, tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        run.stop_producers(at_least=800)
        wait_for(lambda: committed(admin, group, topic) >= 40, what="some consumed and committed")
        first = committed(admin, group, topic)
        collect(registered, minute(start, 0))
        wait_for(lambda: committed(admin, group, topic) >= first + 40, what="more consumed and committed")
        collect(registered, minute(start, 1))

        lag = conditions(registered, minute(start, 1), LAG)[group]
        assert lag.details["state"] == "catching_up" and lag.severity == Severity.WARNING
        assert lag.summary.startswith(f"{group} is {lag.details['lag']:,} messages behind on {topic}; the oldest ")
        assert "Slow but catching up: consuming " in lag.summary and " Most behind: TopicWarnLag broker-" in lag.summary
        assert lag.details["consumed_per_second"] > 0 and lag.details["lag_change_per_minute"] < 0
        assert reconciled(registered, minute(start, 1), LAG, group) == [Transition.FIRED]

    # The consumer is gone, with messages still waiting.
    collect(registered, minute(start, 2))
    lag = conditions(registered, minute(start, 2), LAG)[group]
    assert lag.details["state"] == "stopped" and lag.severity == Severity.CRITICAL
    assert "Stopped: no consumer client is online" in lag.summary

    recovery = Plan(topics={topic: 2}, groups={group: 16}, clients=[consumer(group, topic)])
    with running(traffic_sandbox, recovery, tmp_path / "recovery"), MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        wait_for(lambda: lag_of(admin, group, topic) == 0, what="the consumer to catch up")
        collect(registered, minute(start, 3))
    assert group not in conditions(registered, minute(start, 3), LAG)
    assert reconciled(registered, minute(start, 3), LAG, group) == [Transition.RESOLVED]


def test_a_hung_consumer_is_blocked_and_stalled_and_both_clear_when_it_is_gone(
    registered, traffic_sandbox, tmp_path, start, settings
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
        wait_for(lambda: run.status(f"consumer {group}").get("blocked", 0) == 2, what="both threads stuck")
        wait_for(lambda: committed(admin, group, topic) > 0, what="some consumed and committed")
        wait_for(lambda: lag_of(admin, group, topic) > 20, what="messages waiting")

        def blocked_queues() -> bool:
            collect(registered, minute(start, 0))
            return BlockedQueueMinute.objects.filter(cluster_id=registered.pk, group=group).exists()

        wait_for(blocked_queues, what="blocked queues")
        collect(registered, minute(start, 1))

        blocked = conditions(registered, minute(start, 1), BLOCKED)[group]
        assert blocked.summary.startswith(f"{blocked.details['blocked_queues']} queue")
        assert f" of {group} not consumed for up to " in blocked.summary and f"{topic} broker-" in blocked.summary
        assert all(q["blocked_seconds"] > 30 for q in blocked.details["queues"])
        lag = conditions(registered, minute(start, 1), LAG)[group]
        assert lag.details["state"] == "stalled" and lag.severity == Severity.CRITICAL
        assert "Stalled: 1 client online, but the committed offsets have not moved in 1 min." in lag.summary
        assert reconciled(registered, minute(start, 1), BLOCKED, group) == [Transition.FIRED]

    collect(registered, minute(start, 2))
    assert group not in conditions(registered, minute(start, 2), BLOCKED)
    assert conditions(registered, minute(start, 2), LAG)[group].details["state"] == "stopped"
    assert reconciled(registered, minute(start, 2), BLOCKED, group) == [Transition.RESOLVED]


def test_a_stopped_broker_is_down_after_the_grace_period_and_up_again_when_restarted(db, start):
    # A sandbox of its own: a restarted master's slave stops copying its tables (see the report), which the other
    # scenarios' shared sandbox must not inherit.
    with SandboxCluster(brokers=2) as sandbox:
        cluster = Cluster.objects.create(name="probed")
        NameServer.objects.create(cluster=cluster, address=sandbox.namesrv_addr)
        discover_brokers(cluster)
        sandbox.stop_broker("broker-b")
        try:
            probe_cluster(cluster, now=minute(start, 0))
            assert conditions(cluster, minute(start, 0), WarningKind.BROKER_DOWN) == {}  # one round: not yet

            probe_cluster(cluster, now=minute(start, 1))
            down = conditions(cluster, minute(start, 1), WarningKind.BROKER_DOWN)
            assert set(down) == {"broker-b@0"} and down["broker-b@0"].severity == Severity.CRITICAL
            assert down["broker-b@0"].summary.startswith(
                f"Broker broker-b@0 (ASYNC_MASTER, {sandbox.broker('broker-b').addr}) has not answered for 2 min: "
                "2 probe rounds of 3 quick attempts each failed ("
            )
            assert "The name servers no longer list it." in down["broker-b@0"].summary
            assert reconciled(cluster, minute(start, 1), WarningKind.BROKER_DOWN, "broker-b@0") == [Transition.FIRED]
        finally:
            sandbox.start_broker("broker-b")

        wait_for(lambda: all(row.ok for row in probe_cluster(cluster, now=minute(start, 2))[1]), what="all answering")
        assert conditions(cluster, minute(start, 2), WarningKind.BROKER_DOWN) == {}
        assert reconciled(cluster, minute(start, 2), WarningKind.BROKER_DOWN, "broker-b@0") == [Transition.RESOLVED]


def test_a_slave_that_stops_copying_falls_behind_and_catches_up_again(
    registered, traffic_sandbox, tmp_path, start, monkeypatch
):
    """The sandbox slave copies its master's commit log in-process; holding that copy back is the fault."""
    default_threshold(WarningKind.SLAVE_LAG, bytes=50_000)
    slave, master = traffic_sandbox.broker("broker-a", 1), traffic_sandbox.broker("broker-a")
    monkeypatch.setattr(slave, "replicate_once", lambda: 0)
    topic = "TopicWarnSlave"
    with running(traffic_sandbox, plan(topic, rate=50.0, queues=2), tmp_path) as run:
        run.stop_producers(at_least=200)
    wait_for(lambda: master.store.commit_log_max_offset - slave.store.commit_log_max_offset > 50_000)
    probe_cluster(registered, now=minute(start, 0))
    probe_cluster(registered, now=minute(start, 1))

    lagging = conditions(registered, minute(start, 1), WarningKind.SLAVE_LAG)["broker-a@1"]
    behind = master.store.commit_log_max_offset - slave.store.commit_log_max_offset
    assert lagging.details["behind_bytes"] == behind
    assert lagging.details["master_commit_log_max_offset"] == master.store.commit_log_max_offset
    assert lagging.summary.startswith(f"Slave broker-a@1 ({slave.addr}) is ")
    assert f" of commit log behind its master broker-a@0 ({master.addr}), neither catching up nor falling" in (
        lagging.summary
    )
    assert reconciled(registered, minute(start, 1), WarningKind.SLAVE_LAG, "broker-a@1") == [Transition.FIRED]

    monkeypatch.undo()
    wait_for(lambda: slave.store.commit_log_max_offset == master.store.commit_log_max_offset, what="slave caught up")
    probe_cluster(registered, now=minute(start, 2))
    assert "broker-a@1" not in conditions(registered, minute(start, 2), WarningKind.SLAVE_LAG)
    assert reconciled(registered, minute(start, 2), WarningKind.SLAVE_LAG, "broker-a@1") == [Transition.RESOLVED]


def test_a_consumer_asking_for_an_offset_past_the_queue_is_an_offset_error_for_ten_minutes(
    registered, traffic_sandbox, start
):
    topic, group = "TopicWarnMoved", "cg_warn_moved"
    master = traffic_sandbox.broker("broker-a").addr
    with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        admin.create_and_update_topic_config(master, TopicConfig(topic, read_queue_nums=1, write_queue_nums=1))
        admin.create_and_update_subscription_group_config(master, SubscriptionGroupConfig(group))
        # A pull far past the end of an empty queue, as a consumer with a bad offset makes it.
        admin.pull_message(master, topic, 0, 1000, group=group)
    collect(registered, minute(start, 0))

    moved = conditions(registered, minute(start, 0), WarningKind.OFFSET_MOVED)[group]
    assert moved.summary.startswith(f"{group} asked for offsets outside the queues 1 time in the last 10 min ")
    assert f"the broker moved it: {topic} broker-a/0: asked for 1,000, moved to 0, 1,000 messages to be consumed " in (
        moved.summary
    )
    assert reconciled(registered, minute(start, 0), WarningKind.OFFSET_MOVED, group) == [Transition.FIRED]

    collect(registered, minute(start, 11))
    assert group not in conditions(registered, minute(start, 11), WarningKind.OFFSET_MOVED)
    assert reconciled(registered, minute(start, 11), WarningKind.OFFSET_MOVED, group) == [Transition.RESOLVED]


def test_a_failing_consumers_retries_and_first_dead_letters_are_reported(
    registered, traffic_sandbox, manual_stats, tmp_path, start
):
    topic, group = "TopicWarnFailing", "cg_warn_failing"
    override_threshold(WarningKind.CONSUME_FAILURES, owned_group(registered, group), retries_per_hour=10)
    failing = plan(topic, group, rate=20.0, fail_every=5)
    failing.groups[group] = 2  # retried twice, then dead-lettered
    with running(traffic_sandbox, failing, tmp_path) as run, MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        # Seen online before anything reached its dead-letter queue.
        wait_for(lambda: run.status(f"consumer {group}").get("received"), what="consumer running")
        assert dead_letters(admin, group) == 0
        collect(registered, minute(start, 0))
        run.stop_producers(at_least=60)
        wait_for(lambda: dead_letters(admin, group) > 0, timeout=3 * WAIT, what="dead letters")
    # The consumer is gone: nothing more is sent back or dead-lettered.
    with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        dlq = dead_letters(admin, group)
    manual_stats.sample()
    collect(registered, minute(start, 1))

    failures = conditions(registered, minute(start, 1), WarningKind.CONSUME_FAILURES)[group]
    assert failures.details["sent_back"] >= 10
    assert failures.summary.startswith(f"{group} sent {failures.details['sent_back']:,} messages back for retry in ")
    assert f"They come back through %RETRY%{group} and, retried too often, end in %DLQ%{group}." in failures.summary
    dead = conditions(registered, minute(start, 1), WarningKind.DEAD_LETTERS)[group]
    assert dead.details["dead_letters"] == dlq
    assert dead.summary.startswith(f"{dlq} message{'s' if dlq != 1 else ''} of {group} reached its dead-letter queue ")
    assert reconciled(registered, minute(start, 1), WarningKind.DEAD_LETTERS, group) == [Transition.FIRED]


def test_clients_of_a_group_subscribing_differently_are_a_subscription_error_until_one_leaves(
    registered, traffic_sandbox, tmp_path, start
):
    group = "cg_warn_split"
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
        wait_for(lambda: master.consumers.get(group) and len(master.consumers.get(group).client_ids()) == 2)
        collect(registered, minute(start, 0))
        mismatch = conditions(registered, minute(start, 0), WarningKind.SUBSCRIPTION_MISMATCH)[group]
        assert mismatch.summary.startswith(f"The clients of {group} subscribe differently: 1 client (")
        assert ") to TopicWarnSplitA (*); 1 client (" in mismatch.summary
        assert mismatch.summary.count(") to TopicWarnSplitB (*)") == 1
        assert reconciled(registered, minute(start, 0), WarningKind.SUBSCRIPTION_MISMATCH, group) == [Transition.FIRED]

        run.client("consumer split b").terminate()
        masters = [traffic_sandbox.broker(name) for name in traffic_sandbox.broker_names]
        wait_for(lambda: all(len(m.consumers.get(group).client_ids()) == 1 for m in masters), what="one client left")
        collect(registered, minute(start, 1))
    assert group not in conditions(registered, minute(start, 1), WarningKind.SUBSCRIPTION_MISMATCH)
    assert reconciled(registered, minute(start, 1), WarningKind.SUBSCRIPTION_MISMATCH, group) == [Transition.RESOLVED]


def test_a_producer_whose_sends_fail_is_reported_from_its_sdk_reports(
    registered, traffic_sandbox, live_server, tmp_path, monkeypatch, eager
):
    """The SDK producer (the real C++ client in this process) reports its sends to the portal's API, served by a
    live server; broker-a stops answering, so sends to it time out and are retried on broker-b. (With a live
    server every transaction commits, so the deliveries reconcile enqueues run, eagerly.)"""
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

    errors = conditions(registered, now, WarningKind.PRODUCE_ERRORS)[group]
    assert (errors.details["failed"], errors.details["sent"]) == (failed, len(records))
    assert errors.details["exceptions"] == dict(failures) == {"ProducerSendSyncFailed": failed}
    assert "broker-a" in errors.details["brokers"]["ProducerSendSyncFailed"]
    assert errors.summary.startswith(
        f"{failed} send{'s' if failed > 1 else ''} of {group} failed in the last 5 min "
        f"({failed / len(records):.1%} of {len(records)}): ProducerSendSyncFailed ×{failed} (broker-a"
    )
    assert f"on {topic}, from 1 client ({producer.client_id})." in errors.summary
    assert reconciled(registered, now, WarningKind.PRODUCE_ERRORS, group) == [Transition.FIRED]

    # Five minutes without a failed send: over.
    later = now + dt.timedelta(minutes=6)
    assert group not in conditions(registered, later, WarningKind.PRODUCE_ERRORS)
    assert reconciled(registered, later, WarningKind.PRODUCE_ERRORS, group) == [Transition.RESOLVED]


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
        wait_for(lambda: len(sockets) >= 2 * n, what="connections accepted")

    def close() -> None:
        for sock in sockets:
            sock.close()
        sockets.clear()

    yield open_, close
    close()
    listener.close()


def test_a_server_holding_many_connections_is_reported_from_its_stats_over_ssh(db, sshd, ssh_keys, connections):
    open_connections, close_connections = connections
    cluster = Cluster.objects.create(name="servers")
    Broker.objects.create(
        cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0, address="127.0.0.1:10911"
    )
    ServerAccess.objects.create(
        cluster=cluster, username=SSH_USER, port=sshd.port, private_key=ssh_keys.client.read_text()
    )
    at = timezone.now()
    collect_server_stats(cluster, at)
    before = ServerSample.objects.get(host="127.0.0.1").tcp_established
    default_threshold(WarningKind.SERVER_TCP, established=before + 500)
    assert conditions(cluster, at, WarningKind.SERVER_TCP) == {}

    open_connections(500)
    collect_server_stats(cluster, at)
    tcp = conditions(cluster, at, WarningKind.SERVER_TCP)["127.0.0.1"]
    established = ServerSample.objects.get(host="127.0.0.1").tcp_established
    # 1,000 more (both ends of each connection), give or take other processes' connections coming and going
    assert established > before + 900 and tcp.details["established"] == established
    assert tcp.summary.startswith(
        f"127.0.0.1: {established:,} established TCP connections (threshold {before + 500:,}), "
    )
    assert reconciled(cluster, at, WarningKind.SERVER_TCP, "127.0.0.1") == [Transition.FIRED]

    close_connections()
    collect_server_stats(cluster, at)
    assert conditions(cluster, at, WarningKind.SERVER_TCP) == {}
    assert reconciled(cluster, at, WarningKind.SERVER_TCP, "127.0.0.1") == [Transition.RESOLVED]
