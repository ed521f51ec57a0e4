"""The client SDK's send template and listener container with the real C++ client (rocketmq 0.4.4) against a
sandbox cluster and a fake portal on 127.0.0.1: the template sends in every way the C++ client has (sync, async,
oneway, orderly by sharding key, delay level, tags and keys, batches) and the container's listeners get each message;
the consumer reports every message's consume time and failures per minute with the group's token, redelivers
failures up to max_reconsume_times, takes its name servers and throttle from the portal, and follows a throttle
changed in the portal (the rate is measured)."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from monitor.remoting.admin import MQAdmin
from monitor.sdk import ListenerContainer, Producer, ProducerTemplate, SendStatus, Settings
from monitor.sdk.listeners import Registry
from monitor.sdk.template import java_string_hash
from stats.histogram import Histogram
from tests.support.factories import unique
from tests.support.waiting import wait_for

TOKEN = "mqc_sdk_consumer_test"


@pytest.fixture
def topic(make_topic):
    return make_topic({"broker-a": 2, "broker-b": 2})


@pytest.fixture
def template(cluster):
    producer = Producer(unique("pg_template"), timeout=3000)
    producer.set_namesrv_addr(cluster.namesrv_addr)
    producer.start()
    yield ProducerTemplate(producer)
    producer.shutdown()


@pytest.fixture
def run_container(cluster, portal):
    """``run_container(registry, group, **options)``: a started container whose group bootstraps from the fake
    portal (which lists the sandbox's name servers and subscribes the group to every topic of the registry)."""
    started = []

    def run(registry: Registry, group: str, *, throttle: int | None = None, refresh: float | None = None):
        portal.bootstrap = {
            "cluster": "sandbox",
            "namesrv_addr": cluster.namesrv_addr,
            "group": group,
            "refresh_seconds": 60,
            "message_model": "CLUSTERING",
            "subscriptions": [{"topic": entry.topic, "tag_expression": entry.tags} for entry in registry.listeners],
            "throttle_tps": throttle,
            "client_throttle_tps": throttle,
        }
        settings = Settings.from_mapping({"portal_url": portal.url, "groups": {group: {"token": TOKEN}}})
        container = ListenerContainer(settings, registry, stop_at_exit=False, refresh=refresh)
        container.start()
        started.append(container)
        return container

    yield run
    for container in started:
        container.stop()


def consumer_reports(portal, group: str) -> list[dict]:
    return [report for report in portal.reports() if report.get("consumer_group") == group]


def test_the_template_sends_every_way_and_a_listener_gets_each_message(template, topic, run_container):
    group = unique("cg_template")
    received: list = []
    lock = threading.Lock()
    registry = Registry()

    @registry.listener(topic, group)
    def handle(message):
        with lock:
            received.append((message.body, message.tags, message.keys, message.queue_id, message.get_property("DELAY")))

    run_container(registry, group)
    assert template.send(topic, b"sync", tags="TagA", keys=["order-1", "order-2"]).status == SendStatus.OK
    async_done = threading.Event()
    template.send_async(topic, "async", lambda result: async_done.set(), lambda error: None, tags="TagB")
    assert async_done.wait(10)
    template.send_oneway(topic, {"kind": "oneway", "amount": 3})
    for n in range(4):
        template.send_orderly(topic, f"order-4711 step {n}", "order-4711")
    template.send(topic, b"delayed", delay_level=3)  # the broker's third level: 10 s (the sandbox shortens it)
    template.send_batch(topic, [b"batch 1", b"batch 2"], tags="TagC")

    wait_for(lambda: len(received) == 10, timeout=30, state=lambda: sorted(r[0] for r in received))
    by_body = {body: (tags, keys, queue, delay) for body, tags, keys, queue, delay in received}
    assert by_body[b"sync"][:2] == (b"TagA", b"order-1 order-2")
    assert by_body[b"async"][0] == b"TagB"
    assert b'{"kind":"oneway","amount":3}' in by_body
    assert by_body[b"batch 1"][0] == by_body[b"batch 2"][0] == b"TagC"
    steps = [body for body, *_ in received if body.startswith(b"order-4711")]
    assert steps == [f"order-4711 step {n}".encode() for n in range(4)]  # one queue, in order
    queues = {by_body[step][2] for step in steps}
    assert len(queues) == 1
    assert by_body[b"delayed"][3] == b"3"  # it went through the broker's SCHEDULE_TOPIC_XXXX


@pytest.mark.parametrize("key", ["order-4711", "polygenelubricants"])  # the second's hashCode() is Integer.MIN_VALUE
def test_orderly_sends_pick_the_queue_java_picks_for_the_key(cluster, template, topic, key):
    result = template.send_orderly(topic, "x", key)
    with MQAdmin(cluster.namesrv_addr) as admin:
        (stored,) = admin.query_message_by_uniq_key(topic, result.msg_id)
    # librocketmq lists a topic's queues by broker name: broker-a's 2, then broker-b's 2
    expected = abs(java_string_hash(key)) % 4
    broker = ["broker-a", "broker-b"][expected // 2]
    assert (stored.store_host, stored.queue_id) == (cluster.broker(broker).addr, expected % 2)


def test_consumption_is_reported_per_topic_with_its_failures_and_consume_times(template, topic, run_container, portal):
    group = unique("cg_reports")
    attempts: Counter = Counter()
    registry = Registry()

    @registry.listener(topic, group)
    def handle(message):
        attempts[message.body] += 1
        if message.body == b"fails once" and attempts[message.body] == 1:
            raise ValueError("not yet")
        time.sleep(0.02)

    container = run_container(registry, group)
    for body in (b"fine 1", b"fine 2", b"fails once"):
        template.send(topic, body)
    wait_for(lambda: attempts[b"fails once"] == 2, timeout=60)  # redelivered through the group's retry topic
    consumer = container.consumers[group]
    container.stop()

    reports = consumer_reports(portal, group)  # one per minute: two when the consumption crossed a minute
    assert reports and {(r["topic"], r["client_id"]) for r in reports} == {(topic, consumer.client_id)}
    failures: Counter = Counter()
    for report in reports:
        failures.update(report["failures"])
    assert (sum(r["count"] for r in reports), failures) == (4, Counter({"ValueError": 1}))
    histogram = Histogram.merged(Histogram.from_dict(r["histogram"]) for r in reports)
    assert histogram.count == 4 and histogram.percentile(0.5) >= 19
    posts = [post for post in portal.posts() if post.path == "/api/v1/consumer-reports/"]
    assert posts and all(post.headers["Authorization"] == f"Consumer {TOKEN}" for post in posts)


def test_a_message_failing_past_max_reconsume_times_is_given_up(template, topic, run_container, portal):
    group = unique("cg_give_up")
    attempts: list[int] = []
    registry = Registry()

    @registry.listener(topic, group, max_reconsume_times=1)
    def handle(message):
        attempts.append(message.reconsume_times)
        raise RuntimeError("always")

    container = run_container(registry, group)
    template.send(topic, b"poison")
    wait_for(lambda: container.consumers[group].given_up == 1, timeout=60)
    time.sleep(2)  # nothing comes back once given up
    assert attempts == [0, 1]


def consume_rate(stamps: list[float]) -> float:
    return (len(stamps) - 1) / (stamps[-1] - stamps[0])


def test_the_portals_throttle_limits_the_rate_and_a_change_applies_at_the_next_read(
    template, topic, run_container, portal
):
    group = unique("cg_throttle")
    stamps: list[float] = []
    registry = Registry()

    @registry.listener(topic, group)
    def handle(message):
        stamps.append(time.monotonic())

    container = run_container(registry, group, throttle=20, refresh=1.0)
    for n in range(40):
        template.send_oneway(topic, f"m{n}")
    wait_for(lambda: len(stamps) == 40, timeout=60)
    limited = consume_rate(stamps[5:])
    assert 14 <= limited <= 22, limited

    portal.bootstrap = {**portal.bootstrap, "throttle_tps": 5, "client_throttle_tps": 5}
    consumer = container.consumers[group]
    wait_for(lambda: consumer.throttle.rate == 5, timeout=10)  # read again within the refresh
    stamps.clear()
    for n in range(12):
        template.send_oneway(topic, f"slow {n}")
    wait_for(lambda: len(stamps) == 12, timeout=60)
    slowed = consume_rate(stamps[1:])
    assert 3.5 <= slowed <= 5.5, slowed

    portal.bootstrap = {**portal.bootstrap, "throttle_tps": None, "client_throttle_tps": None}
    wait_for(lambda: consumer.throttle.rate is None, timeout=10)


def test_settings_come_from_the_environment_a_file_or_a_mapping(tmp_path):
    environ = {
        "MQCLOUD_PORTAL_URL": "https://mq.example.com",
        "MQCLOUD_CONSUMER_TOKEN": "mqc_default",
        "MQCLOUD_CONSUMER_TOKEN_CG_ORDERS": "mqc_orders",
    }
    from_env = Settings.from_environment(["cg-orders", "cg_audit"], environ)
    assert from_env.portal_url == "https://mq.example.com"
    assert (from_env.group("cg-orders").token, from_env.group("cg_audit").token) == ("mqc_orders", "mqc_default")

    toml = tmp_path / "mqcloud.toml"
    toml.write_text('portal_url = "https://mq.example.com"\n[groups.cg_orders]\ntoken_file = "/run/token"\n')
    assert Settings.from_file(toml).group("cg_orders").token_file == "/run/token"
    with pytest.raises(ValueError, match="unknown MQCloud settings: portal"):
        Settings.from_mapping({"portal": "typo"})
