"""A known traffic run with the real C++ client (PyPI rocketmq 0.4.4) on a real cluster, its clients left online.

The run: a topic of QUEUES queues on broker-a; a producer sends FIRST messages, a push consumer group consumes all
of them; the group's consumption is then switched off on the broker (``consumeEnable=false``: its pulls are refused
with NO_PERMISSION, its clients stay connected) and the producer sends REST more, which the group never gets. So
while the tests look, the producer group and the consumer group are both online, the group has consumed exactly the
first FIRST and is REST behind, and each message's key, queue, queue offset and commit-log offset are known.

The client runs in a subprocess (HOME in a folder of its own for the C++ client's logs) and talks over its stdin and
stdout: ``CONSUMED <json>`` once the first messages are in, ``SENT <json>`` after the rest, and the final results
(see tests/sandbox/test_broker_messaging.finish) once its stdin is closed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import ProtocolError, RemotingError
from tests.sandbox.test_broker_messaging import finish
from tests.support.waiting import wait_for

QUEUES = 4
FIRST = 12
REST = 5
TAG = "TagA"
CLIENT_SECONDS = 60.0  # the client's own deadline for the first messages; slow on a loaded machine
COMMIT_PERIOD = 5.5  # seconds: the C++ client commits its consumers' offsets every 5 s

CLIENT = r"""
import json, sys, threading, time
from rocketmq.client import Message, Producer, PushConsumer

plan = json.loads(sys.argv[1])
producer = Producer(plan["producer_group"], timeout=10000)
producer.set_namesrv_addr(plan["namesrv"])
producer.start()


def send(numbers):
    sent = []
    for n in numbers:
        message = Message(plan["topic"])
        message.set_keys(f"{plan['key_prefix']}{n}")
        message.set_tags(plan["tag"])
        message.set_body(f"body {n}")
        result = producer.send_sync(message)
        sent.append({"key": f"{plan['key_prefix']}{n}", "id": result.msg_id, "status": int(result.status)})
    return sent


received, lock = [], threading.Lock()


def on_message(message):
    record = {
        "key": message.keys.decode(), "body": message.body.decode(), "queue": message.queue_id,
        "offset": message.queue_offset, "commit_log_offset": message.commit_log_offset, "id": message.id,
        "store_timestamp": message.store_timestamp,
    }
    with lock:
        received.append(record)


first = send(range(plan["first"]))
consumer = PushConsumer(plan["group"])
consumer.set_namesrv_addr(plan["namesrv"])
consumer.set_thread_count(1)
consumer.subscribe(plan["topic"], on_message)
consumer.start()
deadline = time.monotonic() + plan["seconds"]
while time.monotonic() < deadline:
    with lock:
        if len(received) >= len(first):
            break
    time.sleep(0.05)
with lock:
    print("CONSUMED " + json.dumps({"sent": first, "received": received}), flush=True)
sys.stdin.readline()  # the test has switched the group's consumption off
print("SENT " + json.dumps(send(range(plan["first"], plan["first"] + plan["rest"]))), flush=True)
sys.stdin.readline()  # the test is done looking
consumer.shutdown()
producer.shutdown()
print("RESULT " + json.dumps({"received": received}), flush=True)
"""


@dataclass
class Traffic:
    """What the run did: ``sent``, every message's key and the id the producer got for it, in send order (the first
    FIRST were consumed); ``received``, the consumed ones as the consumer got them (key, body, queue, queue offset,
    commit-log offset, store time)."""

    topic: str
    group: str
    producer_group: str
    process: subprocess.Popen
    sent: list[dict] = field(default_factory=list)
    received: list[dict] = field(default_factory=list)

    def consumed_per_queue(self) -> dict[int, int]:
        """How many of the first messages each queue delivered (offsets start at 0, so also the committed offset)."""
        counts = dict.fromkeys(range(QUEUES), 0)
        for record in self.received:
            counts[record["queue"]] += 1
        return counts

    def stop(self) -> None:
        """Let the clients shut down (the consumer commits its offsets)."""
        if self.process.poll() is None:
            self.process.stdin.write("\n")
            self.process.stdin.flush()
            finish(self.process, timeout=CLIENT_SECONDS)


def _line(process: subprocess.Popen, prefix: str):
    for line in process.stdout:
        if line.startswith(prefix + " "):
            return json.loads(line[len(prefix) + 1 :])
    process.kill()
    raise AssertionError(f"the C++ client ended before {prefix}: {process.stderr.read()[-3000:]}")


def committed(admin: MQAdmin, group: str, topic: str) -> int:
    """The group's committed offsets on the topic, summed over its queues (0 while the brokers have none)."""
    try:
        stats = admin.examine_consume_stats(group, topic)
    except RemotingError:
        return 0
    return sum(w.consumer_offset for mq, w in stats.offset_table.items() if mq.topic == topic)


def client_offsets(admin: MQAdmin, group: str, topic: str) -> dict[int, int] | None:
    """The online client's own offsets of the topic's queues, from its running info (the broker relays the request
    to the client); None while it cannot say: while it rebuilds its queues after a reset the C++ client writes
    ``"mqTable":}``, which is not JSON."""
    try:
        (connection,) = admin.examine_consumer_connection_info(group).connection_set
        info = admin.get_consumer_running_info(group, connection.client_id)
    except (RemotingError, ProtocolError):
        return None
    return {mq.queue_id: pq.commit_offset for mq, pq in info.mq_table.items() if mq.topic == topic}


def settle(admin: MQAdmin, group: str) -> None:
    """Until the group's offsets read the same twice one commit period of the C++ client (5 s) apart: besides the
    topic's queues it commits its retry queue, on its own schedule."""

    def table() -> dict:
        try:
            return admin.examine_consume_stats(group).offset_table
        except RemotingError:
            return {}

    previous = table()
    deadline = time.monotonic() + 30
    while True:
        time.sleep(COMMIT_PERIOD)
        current = table()
        if current == previous:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{group}'s offsets still changing after 30 s")
        previous = current


def start_traffic(cluster, admin: MQAdmin, name: str, home: Path) -> Traffic:
    """The run on ``cluster`` with topic ``Topic<name>``, groups ``cg_<name>`` / ``pg_<name>``; returns once the
    rest has been sent and the group's commit of the first messages is on the broker."""
    topic, group, producer_group = f"Topic{name}", f"cg_{name}", f"pg_{name}"
    master = cluster.broker("broker-a").addr
    admin.create_and_update_topic_config(
        master, b.TopicConfig(topic_name=topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    )
    wait_for(lambda: _routed(admin, topic), 30, f"route of {topic}")
    plan = {
        "namesrv": cluster.namesrv_addr,
        "topic": topic,
        "group": group,
        "producer_group": producer_group,
        "key_prefix": f"KEY_{name}_",
        "tag": TAG,
        "first": FIRST,
        "rest": REST,
        "seconds": CLIENT_SECONDS,
    }
    home.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-c", CLIENT, json.dumps(plan)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(home)},
    )
    traffic = Traffic(topic, group, producer_group, process)
    try:
        consumed = _line(process, "CONSUMED")
        traffic.sent, traffic.received = consumed["sent"], consumed["received"]
        assert len(traffic.received) == FIRST, f"the group consumed {len(traffic.received)} of {FIRST}"
        admin.create_and_update_subscription_group_config(
            master, b.SubscriptionGroupConfig(group_name=group, consume_enable=False)
        )
        process.stdin.write("\n")
        process.stdin.flush()
        traffic.sent += _line(process, "SENT")
        assert [s["status"] for s in traffic.sent] == [0] * (FIRST + REST)  # SEND_OK
        wait_for(lambda: committed(admin, group, topic) == FIRST, 30, f"{group}'s commit of {FIRST} messages")
        settle(admin, group)
    except BaseException:
        process.kill()
        process.communicate()
        raise
    return traffic


def _routed(admin: MQAdmin, topic: str) -> bool:
    try:
        return bool(admin.examine_topic_route_info(topic).queue_datas)
    except RemotingError:
        return False
