"""After a known traffic run with the real C++ client (PyPI rocketmq 0.4.4), every admin view the monitor reads
tells the same story: the offsets, the brokers' stats, the consumer group's progress and its connections.

The run: N messages to a topic with QUEUES queues on each of two broker names, all consumed by a push consumer
group, then M more the group never sees. The clients run in subprocesses (see test_broker_messaging); the first
waits on its stdin while its consumer is online, so the test can look at the connection before letting it go.

A consumer's pulls that the broker holds outlive the consumer: a message arriving during the hold is served to
the dead pull and counted in GROUP_GET_NUMS although nobody consumes it (Java's PullRequestHoldService does the
same for a pull carrying its subscription, as the C++ client's do). So the M messages are sent only once the
brokers hold no pull of the group any more, and the brokers short-poll (holds of 1 s instead of the client's 15 s
long polling) to keep that wait short.

The brokers' stats are sampled on Java's schedule (every 10 s for the minute window, 10 min for the hour); the
test drives the sampling by hand instead: one tick a day ahead before the traffic, which also keeps the brokers'
own wall-clock sampler quiet for the rest of the run, and one an hour after that once the traffic is over, so each
window holds exactly the run's counts.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import ConsumerConnection, TopicConfig
from monitor.remoting.message import decode_messages
from monitor.sandbox.broker._common import now_ms
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.stats import DAY_SAMPLE_PERIOD_MS, GROUP_GET_NUMS, TOPIC_PUT_NUMS
from tests.support.waiting import wait_for

TOPIC = "TopicConsistency"
GROUP = "cg_consistency"
QUEUES = 4
N = 40
M = 16
CLIENT_SECONDS = 30  # how long the client waits for its N messages before giving up (then the test fails)

CLIENT = r"""
import json, sys, threading, time
from rocketmq.client import Message, Producer, PushConsumer

plan = json.loads(sys.argv[1])
producer = Producer("pg_consistency", timeout=3000)
producer.set_namesrv_addr(plan["namesrv"])
producer.start()
sent = []
for n in range(*plan["keys"]):
    message = Message(plan["topic"])
    message.set_keys(f"KEY_{n}")
    message.set_body(f"body {n}")
    sent.append(int(producer.send_sync(message).status))
producer.shutdown()
received, lock = [], threading.Lock()


def on_message(message):
    with lock:
        received.append(message.keys.decode())


if plan.get("group"):
    consumer = PushConsumer(plan["group"])
    consumer.set_namesrv_addr(plan["namesrv"])
    consumer.subscribe(plan["topic"], on_message)
    consumer.start()
    deadline = time.monotonic() + plan["seconds"]
    while time.monotonic() < deadline:
        with lock:
            if len(received) >= len(sent):
                break
        time.sleep(0.02)
    print("CONSUMED", flush=True)
    sys.stdin.readline()  # the test has looked at the online group
    consumer.shutdown()
print("RESULT " + json.dumps({"sent": sent, "received": received}), flush=True)
"""


@pytest.fixture
def cluster():
    with SandboxCluster(brokers=2, broker_config={"longPollingEnable": False}) as sandbox:
        yield sandbox


@pytest.fixture
def admin(cluster):
    client = MQAdmin(cluster.namesrv_addr, timeout=5.0)
    yield client
    client.close()


def _stored_keys(broker) -> list[str]:
    keys = []
    for queue_id in broker.store.queue_ids(TOPIC):
        for message in decode_messages(broker.store.get_message(TOPIC, queue_id, 0, 1000).body):
            keys.extend(message.keys)
    return keys


def _client(cluster, home: Path, keys: range, group: str | None = None) -> subprocess.Popen:
    plan = {"namesrv": cluster.namesrv_addr, "topic": TOPIC, "keys": [keys.start, keys.stop], "group": group}
    return subprocess.Popen(
        [sys.executable, "-c", CLIENT, json.dumps({**plan, "seconds": CLIENT_SECONDS})],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(home)},
    )


def _result(process: subprocess.Popen, stdin: str = "") -> dict:
    out, err = process.communicate(stdin, timeout=CLIENT_SECONDS)
    assert process.returncode == 0, err[-3000:]
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def _produce_and_consume(cluster, admin, home: Path) -> tuple[dict, ConsumerConnection, dict[str, list[str]]]:
    """The first N, produced then consumed; returns the client's results, and the group's connection and each
    master's consumer id list as the admin saw them while the consumer was online."""
    process = _client(cluster, home, range(N), GROUP)
    try:
        for line in process.stdout:
            if line.strip() == "CONSUMED":
                break
        else:
            raise AssertionError(f"the C++ client ended early: {process.stderr.read()[-3000:]}")
        online = admin.examine_consumer_connection_info(GROUP)
        ids = {addr: admin.get_consumer_id_list_by_group(addr, GROUP) for addr in _master_addrs(cluster)}
        return _result(process, "\n"), online, ids
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _masters(cluster):
    return [cluster.broker(name) for name in cluster.broker_names]


def _master_addrs(cluster) -> list[str]:
    return [master.addr for master in _masters(cluster)]


def test_admin_views_agree_with_a_known_traffic_run(cluster, admin, tmp_path):
    masters = _masters(cluster)
    for master in masters:
        admin.create_and_update_topic_config(
            master.addr, TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        )
    sampled_at = now_ms() + DAY_SAMPLE_PERIOD_MS * 24
    for master in masters:
        master.stats.tick(sampled_at)

    first, online, ids = _produce_and_consume(cluster, admin, tmp_path)
    wait_for(lambda: not any(m.pull.hold_service.held(TOPIC, q) for m in masters for q in range(QUEUES)), timeout=10.0)
    second = _result(_client(cluster, tmp_path, range(N, N + M)))

    # What the clients did: N + M sends, all SEND_OK, and exactly the first N delivered, once each.
    assert first["sent"] + second["sent"] == [0] * (N + M)
    assert sorted(first["received"]) == sorted(f"KEY_{n}" for n in range(N))
    # What each broker stored: every message on exactly one of them, both used.
    stored = {master.broker_name: _stored_keys(master) for master in masters}
    assert sorted(key for keys in stored.values() for key in keys) == sorted(f"KEY_{n}" for n in range(N + M))
    assert all(stored.values())

    # While online, the group showed the C++ client on every broker, subscribed to the topic.
    (connection,) = online.connection_set
    assert connection.language == "CPP" and TOPIC in online.subscription_table
    assert ids == {addr: [connection.client_id] for addr in _master_addrs(cluster)}

    # Topic stats: per queue max offsets, N + M in all, each broker's share what it stored.
    topic_stats = admin.examine_topic_stats(TOPIC).offset_table
    assert len(topic_stats) == 2 * QUEUES
    assert sum(offset.max_offset for offset in topic_stats.values()) == N + M
    per_broker_put = {
        name: sum(o.max_offset for mq, o in topic_stats.items() if mq.broker_name == name) for name in stored
    }
    assert per_broker_put == {name: len(keys) for name, keys in stored.items()}

    # Consume stats once the consumer's final commit is in: it consumed N, and M are left (the lag).
    def consumed() -> int:
        stats = admin.examine_consume_stats(GROUP)
        return sum(w.consumer_offset for mq, w in stats.offset_table.items() if mq.topic == TOPIC)

    wait_for(lambda: consumed() == N, timeout=CLIENT_SECONDS)
    progress = admin.examine_consume_stats(GROUP)
    queues = {mq: w for mq, w in progress.offset_table.items() if mq.topic == TOPIC}
    assert {mq: w.broker_offset for mq, w in queues.items()} == {mq: o.max_offset for mq, o in topic_stats.items()}
    assert progress.total_diff == sum(w.broker_offset - w.consumer_offset for w in queues.values()) == M
    per_broker_got = {
        name: sum(w.consumer_offset for mq, w in queues.items() if mq.broker_name == name) for name in stored
    }

    # The brokers' stats windows, sampled after the run: puts as stored, gets as consumed, broker by broker.
    for master in masters:
        master.stats.tick(sampled_at + DAY_SAMPLE_PERIOD_MS)
    for master in masters:
        puts = admin.view_broker_stats_data(master.addr, TOPIC_PUT_NUMS, TOPIC)
        gets = admin.view_broker_stats_data(master.addr, GROUP_GET_NUMS, f"{TOPIC}@{GROUP}")
        windows = (puts.stats_minute.sum, puts.stats_hour.sum, puts.stats_day.sum)
        assert windows == (per_broker_put[master.broker_name],) * 3
        windows = (gets.stats_minute.sum, gets.stats_hour.sum, gets.stats_day.sum)
        assert windows == (per_broker_got[master.broker_name],) * 3
    assert sum(per_broker_got.values()) == N
