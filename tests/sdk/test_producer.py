"""The producer SDK with the real C++ client (rocketmq 0.4.4) against a sandbox cluster: every send is recorded
against the broker its message actually landed on, failures against the broker that failed, costs as measured,
and reports reach the portal without ever failing or holding up a send."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from rocketmq.exceptions import ProducerSendOrderlyFailed, ProducerSendSyncFailed

from monitor.remoting.admin import MQAdmin
from monitor.sdk import UNKNOWN_BROKER, Message, Producer, SendStatus
from monitor.sdk.reporter import REGISTRATION_PATH
from stats.histogram import Histogram
from tests.support.factories import unique
from tests.support.network import closed_port_url
from tests.support.paths import VAR
from tests.support.waiting import wait_for

SEND_TIMEOUT_MS = 500
QUEUES = {"broker-a": 3, "broker-b": 5}


@pytest.fixture
def start_producer(cluster):
    """``start_producer(**options)``: a started SDK producer on the sandbox, with its records in ``.records``."""
    producers = []

    def start(namesrv: str | None = None, **options) -> Producer:
        producer = Producer(unique("pg_sdk"), timeout=SEND_TIMEOUT_MS, **options)
        producer.set_namesrv_addr(namesrv or cluster.namesrv_addr)
        producer.records = []
        producer.add_listener(producer.records.append)
        producer.start()
        producers.append(producer)
        return producer

    yield start
    for producer in producers:
        producer.shutdown()


def message(topic: str, body: str = "hello") -> Message:
    built = Message(topic)
    built.set_body(body)
    return built


def landed_per_broker(cluster, topic: str) -> dict[str, int]:
    with MQAdmin(cluster.namesrv_addr) as admin:
        return {
            broker: sum(admin.get_max_offset(cluster.broker(broker).addr, topic, q) for q in range(nums))
            for broker, nums in QUEUES.items()
        }


def recorded_per_broker(records) -> dict[str, int]:
    counts = Counter(record.broker_name for record in records if record.exception is None)
    return {broker: counts.get(broker, 0) for broker in QUEUES}


def test_sync_sends_are_recorded_against_the_broker_they_landed_on(cluster, make_topic, start_producer):
    topic = make_topic(QUEUES)
    producer = start_producer()

    results = [producer.send_sync(message(topic, f"m{i}")) for i in range(24)]

    assert {result.status for result in results} == {SendStatus.OK}
    assert recorded_per_broker(producer.records) == landed_per_broker(cluster, topic) == {"broker-a": 9, "broker-b": 15}
    assert all(record.topic == topic and record.cost_ms > 0 for record in producer.records)


def test_oneway_async_and_orderly_sends_are_recorded_against_their_brokers(cluster, make_topic, start_producer):
    topic = make_topic(QUEUES)
    producer = start_producer()
    callbacks = threading.Semaphore(0)
    for i in range(8):
        producer.send_oneway(message(topic, f"oneway {i}"))
    for i in range(8):
        producer.send_async(message(topic, f"async {i}"), lambda result: callbacks.release(), pytest.fail)
    for i in range(8):
        producer.send_orderly(message(topic, f"orderly {i}"), i)  # the default selector: arg % queue count
    for i in range(8):
        producer.send_oneway_orderly(message(topic, f"oneway orderly {i}"), 7 - i)
    for _ in range(8):
        assert callbacks.acquire(timeout=30)

    wait_for(lambda: sum(landed_per_broker(cluster, topic).values()) == 32)  # oneway sends land a moment later
    assert recorded_per_broker(producer.records) == landed_per_broker(cluster, topic)
    assert len(producer.records) == 32


def test_a_failing_broker_is_charged_with_each_failed_attempt_and_the_send_goes_to_another(
    cluster, make_topic, start_producer
):
    topic = make_topic(QUEUES)
    producer = start_producer()
    producer.send_sync(message(topic))  # the client has its route and connections
    cluster.drop_responses("broker-a", 1.0)
    try:
        results = [producer.send_sync(message(topic, f"m{i}")) for i in range(8)]
    finally:
        cluster.heal("broker-a")

    assert {result.status for result in results} == {SendStatus.OK}
    failed = [record for record in producer.records if record.exception is not None]
    assert failed
    assert {(record.broker_name, record.exception) for record in failed} == {("broker-a", "ProducerSendSyncFailed")}
    assert all(record.cost_ms >= SEND_TIMEOUT_MS for record in failed)
    succeeded = [record for record in producer.records[1:] if record.exception is None]
    assert len(succeeded) == 8
    assert {record.broker_name for record in succeeded} == {"broker-b"}


def test_an_async_send_that_times_out_is_charged_to_its_broker(cluster, make_topic, start_producer):
    topic = make_topic({"broker-a": 2})
    producer = start_producer()
    producer.send_sync(message(topic))
    failures = []
    done = threading.Event()
    cluster.drop_responses("broker-a", 1.0)
    try:
        producer.send_async(message(topic), pytest.fail, lambda error: (failures.append(error), done.set()))
        assert done.wait(30)
    finally:
        cluster.heal("broker-a")

    assert [type(error).__name__ for error in failures] == ["ProducerSendAsyncFailed"]
    assert [(r.broker_name, r.exception) for r in producer.records[1:]] == [("broker-a", "ProducerSendAsyncFailed")]


def test_a_slow_broker_shows_in_its_recorded_costs(cluster, make_topic, start_producer):
    topic = make_topic(QUEUES)
    producer = start_producer()
    producer.send_sync(message(topic))
    cluster.slow_down("broker-b", 0.2)
    try:
        for i in range(8):
            producer.send_sync(message(topic, f"m{i}"))
    finally:
        cluster.heal("broker-b")

    slow = [record.cost_ms for record in producer.records[1:] if record.broker_name == "broker-b"]
    assert slow
    assert min(slow) >= 200


def test_send_orderly_raises_like_the_plain_client_when_its_attempts_fail(cluster, make_topic, start_producer):
    topic = make_topic(QUEUES)
    producer = start_producer()
    producer.send_sync(message(topic))
    cluster.drop_responses("broker-a", 1.0)
    try:
        with pytest.raises(ProducerSendOrderlyFailed):
            producer.send_orderly(message(topic), 0, retry_times=0)  # queue 0 is on broker-a
    finally:
        cluster.heal("broker-a")

    assert [(r.broker_name, r.exception) for r in producer.records[1:]] == [("broker-a", "ProducerSendOrderlyFailed")]


def test_a_topic_without_a_route_fails_at_once_with_the_clients_exception(start_producer):
    producer = start_producer(namesrv=closed_port_url().removeprefix("http://"))

    with pytest.raises(ProducerSendSyncFailed, match="No route info of this topic: NoSuchTopic"):
        producer.send_sync(message("NoSuchTopic"))

    (record,) = producer.records
    assert (record.topic, record.broker_name) == ("NoSuchTopic", UNKNOWN_BROKER)
    assert record.exception == "ProducerSendSyncFailed"


def test_shutdown_reports_every_send_to_the_portal(cluster, make_topic, start_producer, portal):
    topic = make_topic(QUEUES)
    producer = start_producer(portal_url=portal.url, token="mqp_secret", topics=[topic])
    for i in range(10):
        producer.send_sync(message(topic, f"m{i}"))
    producer.shutdown()

    reports = portal.reports()
    assert {(report["producer_group"], report["topic"], report["client_id"]) for report in reports} == {
        (producer._group, topic, producer.client_id)
    }
    assert producer.client_id == f"{reports[0]['client_addr']}@{os.getpid()}"
    counted = Counter()
    for report in reports:
        for broker in report["brokers"]:
            counted[broker["broker_name"]] += broker["count"]
            assert Histogram.from_dict(broker["histogram"]).count == broker["count"]
    assert counted == Counter(record.broker_name for record in producer.records)
    registration = [request for request in portal.requests if request.path == REGISTRATION_PATH]
    assert [request.query["topic"] for request in registration] == [[topic]]


def test_an_unreachable_portal_never_fails_a_send(cluster, make_topic, start_producer, caplog):
    topic = make_topic(QUEUES)
    producer = start_producer(portal_url=closed_port_url(), token="mqp_secret", flush_timeout=0.5)

    results = [producer.send_sync(message(topic, f"m{i}")) for i in range(5)]
    producer.shutdown()

    assert {result.status for result in results} == {SendStatus.OK}
    # One report per minute the sends were made in, all lost when the producer stopped.
    assert producer.reporter.dropped == len({record.minute for record in producer.records})
    assert "did not take; they are lost" in caplog.text


def test_a_failing_listener_never_fails_a_send(cluster, make_topic, start_producer, caplog):
    topic = make_topic(QUEUES)
    producer = start_producer()
    producer.add_listener(lambda record: 1 / 0)
    caplog.set_level(logging.ERROR, logger="monitor.sdk")

    assert producer.send_sync(message(topic)).status == SendStatus.OK
    assert "recording a send to" in caplog.text
    assert len(producer.records) == 1


GUARD_SCRIPT = r"""
import json, os, sys
from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import TopicConfig
from monitor.sandbox.cluster import SandboxCluster
from monitor.sdk import Message, Producer

outcome = {}
with SandboxCluster(brokers=1) as sandbox:
    with MQAdmin(sandbox.namesrv_addr) as admin:
        admin.create_and_update_topic_config(sandbox.broker().addr, TopicConfig(topic_name="GuardTopic"))
    producer = Producer("pg_guard", timeout=500, topics=["GuardTopic"])  # the SDK reads the route at start
    producer.set_namesrv_addr(sandbox.namesrv_addr)
    producer.start()
    sandbox.hang()  # the client has not fetched the route yet; the name server now accepts and never answers
    for attempt in ("first", "second"):
        message = Message("GuardTopic")
        message.set_body("hello")
        try:
            producer.send_sync(message)
            outcome[attempt] = "sent"
        except Exception as error:
            outcome[attempt] = [type(error).__name__, str(error)]
    taken = producer.recorder.take(everything=True)
    outcome["recorded"] = {name: cell.exceptions for stats in taken for name, cell in stats.brokers.items()}
    print(json.dumps(outcome), flush=True)
    # The client is still inside its route request; librocketmq 1.2 aborts the process if shut down now.
    os._exit(0)
"""


def test_the_first_send_to_a_topic_does_not_hang_on_a_name_server_that_stopped_answering(cpp_client_home):
    """In a subprocess: the client stays stuck in its route request for about a minute after the guard returns."""
    result = subprocess.run(
        [sys.executable, "-c", GUARD_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(VAR).parent,
        env={**os.environ, "HOME": str(cpp_client_home), "PYTHONPATH": str(Path(VAR).parent)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["first"][0] == "ProducerSendSyncFailed"
    assert "did not return within" in outcome["first"][1]
    assert outcome["second"][0] == "ProducerSendSyncFailed"
    assert "has not returned yet" in outcome["second"][1]
    assert outcome["recorded"] == {UNKNOWN_BROKER: {"ProducerSendSyncFailed": 2}}
