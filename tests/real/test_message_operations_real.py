"""Consumer-group operations (monitor/messages) on a real RocketMQ 4.9.4 broker with a real C++ push consumer (PyPI
rocketmq 0.4.4): an offset reset while the consumer runs makes it consume again from that point; messages a consumer
always fails end as dead letters, which are resent (to the original topic and to the group's retry topic) and then
consumed by the group once it succeeds.

The messages are sent with this project's own producer (monitor.messages.send), so its sends are checked too: the
C++ consumer must read them as any producer's. The consumer runs in a subprocess that prints each message as it gets
it (``GOT <json>``) until its stdin is closed.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from monitor.messages import dead_letters, diagnostics, offsets, resend, send
from monitor.remoting import body as b
from monitor.remoting.admin import retry_topic
from monitor.remoting.errors import RemotingError
from tests.real.traffic import committed
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

QUEUES = 2

CONSUMER = r"""
import json, sys
from rocketmq.client import PushConsumer, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import dll

plan = json.loads(sys.argv[1])


def on_message(_consumer, handle):
    message = RecvMessage(handle)
    record = {
        "topic": message.topic, "body": message.body.decode(), "keys": message.keys.decode(),
        "queue": message.queue_id, "offset": message.queue_offset, "reconsume": message.reconsume_times,
        "retry_topic": message.get_property("RETRY_TOPIC").decode(),
    }
    print("GOT " + json.dumps(record), flush=True)
    return 1 if plan["fail"] else 0  # 1: RECONSUME_LATER


consumer = PushConsumer(plan["group"])
consumer.set_namesrv_addr(plan["namesrv"])
consumer.set_thread_count(1)
consumer.set_message_batch_max_size(1)  # a failed message sends its whole batch back
ffi_check(dll.Subscribe(consumer._handle, plan["topic"].encode(), b"*"))
consumer._register_callback(on_message)  # our own callback, so that it can answer RECONSUME_LATER
consumer.start()
sys.stdin.readline()
consumer.shutdown()
"""


@dataclass
class Consumer:
    """A running C++ push consumer and what it has got so far."""

    process: subprocess.Popen
    got: list[dict] = field(default_factory=list)
    lines: queue.Queue = field(default_factory=queue.Queue)
    reader: threading.Thread | None = None

    def read(self) -> list[dict]:
        while not self.lines.empty():
            self.got.append(self.lines.get())
        return self.got

    def stop(self) -> list[dict]:
        if self.process.poll() is None:
            self.process.stdin.write("\n")
            self.process.stdin.flush()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.reader.join(10)  # the lines the process printed before it ended
        return self.read()


def start_consumer(cluster, group: str, topic: str, home: Path, *, fail: bool = False) -> Consumer:
    home.mkdir(parents=True, exist_ok=True)
    plan = {"namesrv": cluster.namesrv_addr, "group": group, "topic": topic, "fail": fail}
    process = subprocess.Popen(
        [sys.executable, "-c", CONSUMER, json.dumps(plan)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "HOME": str(home)},
    )
    consumer = Consumer(process)

    def pump() -> None:
        for line in process.stdout:
            if line.startswith("GOT "):
                consumer.lines.put(json.loads(line[4:]))

    consumer.reader = threading.Thread(target=pump, daemon=True)
    consumer.reader.start()
    return consumer


@pytest.fixture(scope="module", params=["4", "5"], ids=["4.9.4", "5.5.0"])
def real(request):
    cluster = request.getfixturevalue(f"rocketmq{request.param}")
    admin = cluster.admin(timeout=15.0)
    yield cluster, admin
    admin.close()


@pytest.fixture(scope="module")
def real4(rocketmq4):
    """4.9.4 only: on 5.5.0 one of the two always-failed messages had not reached the DLQ after two minutes (its
    second delivery never came); why is still to be found out."""
    admin = rocketmq4.admin(timeout=15.0)
    yield rocketmq4, admin
    admin.close()


def _routed(admin, topic: str) -> bool:
    try:
        return bool(admin.examine_topic_route_info(topic).queue_datas)
    except RemotingError:
        return False


def make_topic(cluster, admin, topic: str, queues: int = QUEUES) -> None:
    config = b.TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
    admin.create_and_update_topic_config(cluster.broker().addr, config)
    wait_for(lambda: _routed(admin, topic), 30, f"route of {topic}")


def make_group(cluster, admin, group: str, **settings) -> None:
    """The group, and its retry topic as a group that has run before has it (a C++ client finds a retry topic
    created by its own first heartbeat only at its next route refresh, 30 s later)."""
    master = cluster.broker().addr
    admin.create_and_update_subscription_group_config(master, b.SubscriptionGroupConfig(group_name=group, **settings))
    make_topic(cluster, admin, retry_topic(group), 1)


def later_than(ms: int) -> None:
    wait_for(lambda: time.time() * 1000 > ms + 2, 5, "the clock to move on")


def test_a_reset_while_the_cpp_consumer_runs_makes_it_consume_again_from_that_point(real, tmp_path):
    cluster, admin = real
    topic, group = "TopicOpsResetReal", "cg_ops_reset_real"
    make_topic(cluster, admin, topic)
    make_group(cluster, admin, group)
    master = cluster.broker().addr
    rounds = []
    for n in range(3):
        sent = [
            send.send_message(admin, topic, f"round {n} queue {q}".encode(), queue=b.MessageQueue(topic, "broker-a", q))
            for q in range(QUEUES)
        ]
        rounds.append([admin.view_message(s.offset_msg_id) for s in sent])
        later_than(max(m.store_timestamp for m in rounds[-1]))
    for q in range(QUEUES):  # where a new group starts
        admin.update_consumer_offset(master, group, topic, q, 0)

    consumer = start_consumer(cluster, group, topic, tmp_path / "cpp")
    try:
        wait_for(lambda: len(consumer.read()) >= 6, 90, "the first six messages", state=lambda: consumer.got)
        wait_for(lambda: committed(admin, group, topic) == 6, 60, "the consumer's commit of six")
        (client,) = diagnostics.client_running_info(admin, group)
        assert (client.language, client.error) == ("CPP", None)
        assert {s.topic for s in client.running_info.subscription_set} >= {topic, retry_topic(group)}
        assert diagnostics.client_stack(admin, group, client.client_id) is None  # the C++ client sends none
        at = rounds[1][0].store_timestamp
        preview = offsets.preview_reset(admin, group, topic, at)
        assert [(p.queue_id, p.current_offset, p.target_offset, p.max_offset) for p in preview] == [
            (q, 3, 1, 3) for q in range(QUEUES)
        ]
        outcome = offsets.apply_reset(admin, group, topic, at)
        assert (outcome.online, outcome.cplus) == (True, True)
        assert sorted((q.queue_id, q.offset) for q in outcome.queues) == [(q, 1) for q in range(QUEUES)]
        wait_for(lambda: len(consumer.read()) >= 10, 90, "the four messages again", state=lambda: consumer.got)
        wait_for(lambda: committed(admin, group, topic) == 6, 60, "the consumer's commit of six again")
    finally:
        got = consumer.stop()
    again = sorted(m["body"] for m in got[6:])
    assert again == sorted(m.body.decode() for m in rounds[1] + rounds[2])


def test_dead_letters_of_an_always_failing_consumer_are_resent_and_then_consumed(real4, tmp_path):
    cluster, admin = real4
    topic, group = "TopicOpsDlqReal", "cg_ops_dlq_real"
    make_topic(cluster, admin, topic)
    make_group(cluster, admin, group, retry_max_times=1)  # the second failure sends a message to the DLQ
    master = cluster.broker().addr
    for q in range(QUEUES):
        admin.update_consumer_offset(master, group, topic, q, 0)
    originals = [
        send.send_message(
            admin, topic, f"order {n}".encode(), keys=[f"order-{n}"], queue=b.MessageQueue(topic, "broker-a", n)
        )
        for n in range(QUEUES)
    ]

    failing = start_consumer(cluster, group, topic, tmp_path / "failing", fail=True)
    try:

        def letters():
            found = list(dead_letters.browse(admin, group, "dlq", newest=10))
            return found if len(found) == 2 else None

        dead = wait_for(letters, 120, "two dead letters", state=lambda: failing.read())
    finally:
        deliveries = failing.stop()
    # Each was delivered and failed. (Not necessarily twice: the C++ client hands the listener one message of a
    # pulled batch at a time and sends the whole batch back at the first failure, so a retry pulled together with
    # another may go back unseen.)
    assert {m["keys"] for m in deliveries if m["reconsume"] == 0} == {"order-0", "order-1"}
    assert {(d.origin_topic, d.message.reconsume_times) for d in dead} == {(topic, 2)}
    assert sorted(d.message.uniq_key for d in dead) == sorted(o.msg_id for o in originals)

    # One dead letter back to its topic, the other to the group's retry topic; each copy is then found under its
    # deterministic id, which is what a resend retried after a crash asks before sending again.
    approved_at = int(time.time() * 1000)
    dead.sort(key=lambda d: d.message.keys)
    plan = [(dead[0], "origin", topic), (dead[1], "retry", retry_topic(group))]
    for index, (letter, to, target) in enumerate(plan):
        key = send.make_uniq_key(f"resend {group} {index}", approved_at)
        resend.resend(admin, letter.message, to=to, group=group, uniq_key=key)
        copy = wait_for(
            lambda target=target, key=key: resend.already_sent(admin, target, key), 30, f"the resent copy in {target}"
        )
        assert (copy.body, copy.reconsume_times) == (letter.message.body, 0)

    succeeding = start_consumer(cluster, group, topic, tmp_path / "succeeding")
    try:
        wait_for(lambda: len(succeeding.read()) >= 2, 90, "the two resent messages", state=lambda: succeeding.got)
    finally:
        got = succeeding.stop()
    assert sorted((m["keys"], m["body"], m["topic"], m["reconsume"]) for m in got) == [
        ("order-0", "order 0", topic, 0),
        ("order-1", "order 1", topic, 0),  # from %RETRY%group, shown under the original topic (RETRY_TOPIC)
    ]
