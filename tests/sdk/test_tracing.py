"""Message trace written by the SDK with the real C++ client (rocketmq 0.4.4) on a sandbox cluster: a message sent
and consumed through the SDK with its topic traced shows its whole timeline as monitor.trace reads it and as the
portal's message page shows it; the portal's trace switch (its bootstrap answer's ``traced_topics``) starts and
stops the records within one refresh; a full buffer drops records and counts them, and the counts reach the
per-minute reports."""

from __future__ import annotations

import threading
import time

import pytest

from monitor.remoting.admin import MQAdmin
from monitor.sdk import Consumer, Message, Producer, SendStatus
from monitor.sdk.tracing import TRACE_PRODUCER_PREFIX
from monitor.trace.reader import read_entries, read_timeline
from monitor.trace.records import TraceType
from tests.support.factories import unique
from tests.support.waiting import wait_for

TOKEN = "mqc_sdk_trace_test"
REFRESH = 1.0  # seconds between the clients' reads of the portal's settings (a minute in production)


@pytest.fixture
def traced(cluster, make_topic, portal):
    """A topic, a fresh custom trace topic, and the fake portal answering that the topic is traced into it."""
    topic, trace_topic = make_topic(), make_topic({"broker-a": 1})
    portal.bootstrap = {
        "cluster": "sandbox",
        "namesrv_addr": cluster.namesrv_addr,
        "group": "any",
        "refresh_seconds": 60,
        "trace_topic": trace_topic,
        "traced_topics": [topic],
        "topics": [topic],
        "message_model": "CLUSTERING",
        "subscriptions": [{"topic": topic, "tag_expression": "*"}],
        "throttle_tps": None,
        "client_throttle_tps": None,
    }
    return topic, trace_topic


@pytest.fixture
def clients():
    started: list = []
    yield started
    for client in reversed(started):
        client.shutdown()


def start_producer(clients, cluster, portal, **options) -> Producer:
    producer = Producer(
        unique("pg_trace"), timeout=3000, portal_url=portal.url, token=TOKEN, refresh=REFRESH, **options
    )
    producer.set_namesrv_addr(cluster.namesrv_addr)
    producer.start()
    clients.append(producer)
    return producer


def send(producer: Producer, topic: str, body: bytes, keys: str = "") -> str:
    message = Message(topic)
    message.set_tags("TagA")
    if keys:
        message.set_keys(keys)
    message.set_body(body)
    result = producer.send_sync(message)
    assert result.status == SendStatus.OK
    return result.msg_id


def pubs_in(cluster, trace_topic: str, key: str) -> list:
    with MQAdmin(cluster.namesrv_addr) as admin:
        entries, malformed = read_entries(admin, key, trace_topic=trace_topic)
    assert malformed == []
    return [entry.record for entry in entries if entry.record.trace_type is TraceType.Pub]


def test_a_message_sent_and_consumed_through_the_sdk_shows_its_whole_timeline(cluster, traced, portal, clients):
    topic, trace_topic = traced
    group = unique("cg_trace")
    consumed = threading.Event()
    consumer = Consumer(group, portal_url=portal.url, token=TOKEN, refresh=REFRESH)
    consumer.subscribe(topic, lambda message: consumed.set())
    consumer.start()
    clients.append(consumer)
    producer = start_producer(clients, cluster, portal)

    msg_id = send(producer, topic, b"traced order", keys="order-42 order-43")
    assert consumed.wait(30)

    def timeline():
        with MQAdmin(cluster.namesrv_addr) as admin:
            return read_timeline(admin, msg_id, trace_topic=trace_topic)

    wait_for(
        lambda: timeline().pubs and any(leg.done for leg in timeline().consumers.get(group, ())),
        timeout=30,
        interval=0.5,
    )
    found = timeline()
    (pub,) = found.pubs
    broker_addrs = {cluster.broker(name).addr for name in ("broker-a", "broker-b")}
    assert (pub.producer_group, pub.topic, pub.tags, pub.keys, pub.success, pub.msg_type) == (
        producer._group, topic, "TagA", "order-42 order-43", True, "Normal_Msg"
    )  # fmt: skip
    assert pub.store_host in broker_addrs and pub.client_host == producer.client_id.split("@")[0]
    (leg,) = found.consumers[group]
    assert (leg.retry_times, leg.success, leg.context_name) == (0, True, "SUCCESS")
    assert leg.time >= pub.send_time and leg.finished_time >= leg.time
    assert found.malformed == []
    # The trace message is found by the message's keys too (its KEYS hold ids and keys), as Java's are.
    assert [record.msg_id for record in pubs_in(cluster, trace_topic, "order-43")] == [msg_id]
    # The counts go into the next report: the producer's own group wrote them, the trace producer's is its own.
    assert producer.tracing.dispatcher.written >= 1 and producer.tracing.dispatcher.failed == 0
    assert consumer.tracing.dispatcher.written >= 2


@pytest.mark.django_db
def test_the_portal_message_page_shows_the_sdk_written_timeline(cluster, traced, portal, clients):
    from portal.models import Cluster, NameServer
    from portal.services.messages.traces import read_trace

    topic, trace_topic = traced
    producer = start_producer(clients, cluster, portal)
    msg_id = send(producer, topic, b"for the page", keys="page-1")
    wait_for(lambda: pubs_in(cluster, trace_topic, msg_id), timeout=30, interval=0.5)
    registered = Cluster.objects.create(name=unique("sandbox"), trace_topic=trace_topic)
    for address in cluster.namesrv_addr.split(";"):
        NameServer.objects.create(cluster=registered, address=address)
    with MQAdmin(cluster.namesrv_addr) as admin:
        (message,) = admin.query_message_by_uniq_key(topic, msg_id)

    trace = read_trace(registered, message, [])

    assert trace.trace_topic_exists and [pub.producer_group for pub in trace.timeline.pubs] == [producer._group]


def test_switching_the_topic_s_trace_off_in_the_portal_stops_records_within_a_refresh(cluster, traced, portal, clients):
    topic, trace_topic = traced
    producer = start_producer(clients, cluster, portal)
    first = send(producer, topic, b"traced")
    wait_for(lambda: pubs_in(cluster, trace_topic, first), timeout=30, interval=0.5)

    portal.bootstrap = {**portal.bootstrap, "traced_topics": []}
    reads = producer.bootstrap.reads
    wait_for(lambda: producer.bootstrap.reads >= reads + 2, timeout=10)  # a whole refresh after the change
    untraced = send(producer, topic, b"not traced")
    time.sleep(2)  # longer than the dispatcher waits before writing
    assert pubs_in(cluster, trace_topic, untraced) == []

    portal.bootstrap = {**portal.bootstrap, "traced_topics": [topic]}
    reads = producer.bootstrap.reads
    wait_for(lambda: producer.bootstrap.reads >= reads + 2, timeout=10)
    again = send(producer, topic, b"traced again")
    wait_for(lambda: pubs_in(cluster, trace_topic, again), timeout=30, interval=0.5)


def test_a_full_buffer_drops_and_counts_records_without_blocking_sends(cluster, traced, portal, clients):
    topic, _ = traced
    producer = start_producer(clients, cluster, portal, trace_buffer=2)
    dispatcher = producer.tracing.dispatcher
    hold = threading.Event()
    real_send = dispatcher._send
    dispatcher._send = lambda *args: (hold.wait(30), real_send(*args))  # a trace topic that does not answer

    started = time.perf_counter()
    for n in range(20):
        send(producer, topic, f"burst {n}".encode())
    elapsed = time.perf_counter() - started
    hold.set()

    assert elapsed < 10  # sends never waited for the stuck trace writer
    assert dispatcher.dropped >= 20 - 2 - 2  # the buffer holds 2; the writer had taken at most 2 before it stuck
    assert dispatcher.dropped + dispatcher.buffered + dispatcher.written <= 20
    wait_for(lambda: dispatcher.buffered == 0, timeout=10)
    producer.shutdown()
    clients.remove(producer)
    reports = [report for report in portal.reports() if report.get("producer_group") == producer._group]
    assert sum(report["trace"]["dropped"] for report in reports if "trace" in report) == dispatcher.dropped
    assert all(not group.startswith(TRACE_PRODUCER_PREFIX) for group in {r.get("producer_group") for r in reports})
