"""Messaging through the sandbox broker with the real C++ client (PyPI rocketmq 0.4.4) and with captured frames.

The C++ client runs in subprocesses: it can block for a minute on a peer that does not answer, it logs to
$HOME/logs, and its callbacks run on its own threads. Each run gets a JSON plan and prints JSON results. The
captured C++ and Java frames pin the wire details the client does not show: header fields, remarks, codes.
"""

import asyncio
import base64
import concurrent.futures
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monitor.remoting import headers as h
from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import SubscriptionGroupConfig, TopicConfig
from monitor.remoting.client import RemotingClient
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand, decode_frame, encode_frame
from monitor.remoting.message import decode_messages
from monitor.remoting.sync import background_loop, run_sync
from monitor.sandbox.broker._common import InnerMessage
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.stats import GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, TOPIC_PUT_NUMS
from tests.fixtures import captured, captured_frame, captured_request
from tests.support.waiting import wait_for

CLIENT = r"""
import json, sys, threading, time
from rocketmq.client import Message, Producer, PullConsumer, PushConsumer, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import MessageModel, dll

plan = json.loads(sys.argv[1])
addr = plan["namesrv"]
results = {}


def build(spec):
    message = Message(spec["topic"])
    message.set_body(spec["body"])
    if spec.get("keys"):
        message.set_keys(spec["keys"])
    if spec.get("tags"):
        message.set_tags(spec["tags"])
    for name, value in spec.get("props", {}).items():
        message.set_property(name, value)
    return message


def received(message):
    return {
        "topic": message.topic, "body": message.body.decode(), "keys": message.keys.decode(),
        "tags": message.tags.decode(), "p": message.get_property("p").decode(), "queue": message.queue_id,
        "offset": message.queue_offset, "id": message.id, "at": time.time(), "reconsume": message.reconsume_times,
        "retry_topic": message.get_property("RETRY_TOPIC").decode(),
    }


if "produce" in plan:
    producer = Producer(plan["produce"]["group"], timeout=3000)
    producer.set_namesrv_addr(addr)
    producer.start()
    sent = []
    for spec in plan["produce"]["messages"]:
        mode = spec.get("mode", "sync")
        if mode == "sync":
            result = producer.send_sync(build(spec))
            sent.append({"id": result.msg_id, "offset": result.offset, "status": int(result.status)})
        elif mode == "async":
            done = threading.Event()
            outcome = []
            producer.send_async(
                build(spec),
                lambda r: (outcome.append(r.msg_id), done.set()),
                lambda e: (outcome.append(str(e)), done.set()),
            )
            done.wait(10)
            sent.append({"id": outcome[0] if outcome else None})
        elif mode == "oneway":
            producer.send_oneway(build(spec))
            sent.append({})
        elif mode == "orderly":
            result = producer.send_orderly(build(spec), spec["arg"])
            sent.append({"id": result.msg_id, "offset": result.offset})
        elif mode == "batch":
            result = producer.send_batch([build(part) for part in spec["parts"]])
            sent.append({"id": result.msg_id, "status": int(result.status)})
        sent[-1]["sent_at"] = time.time()
    producer.shutdown()
    results["sent"] = sent

if "consume" in plan:
    spec = plan["consume"]
    got, lock = [], threading.Lock()
    fail = spec.get("fail", {})  # key -> how many deliveries to answer RECONSUME_LATER

    def on_message(_consumer, handle):
        record = received(RecvMessage(handle))
        with lock:
            got.append(record)
        return 1 if record["reconsume"] < fail.get(record["keys"], 0) else 0

    model = MessageModel.BROADCASTING if spec.get("broadcast") else MessageModel.CLUSTERING
    consumer = PushConsumer(spec["group"], orderly=spec.get("orderly", False), message_model=model)
    consumer.set_namesrv_addr(addr)
    consumer.set_message_batch_max_size(1)  # a failing message sends its whole batch back
    ffi_check(dll.Subscribe(consumer._handle, spec["topic"].encode(), spec.get("expression", "*").encode()))
    consumer._register_callback(on_message)  # our own callback, so that it can answer RECONSUME_LATER
    consumer.start()
    deadline = time.monotonic() + spec.get("seconds", 15)
    while time.monotonic() < deadline:
        with lock:
            if len(got) >= spec["expect"]:
                break
        time.sleep(0.02)
    time.sleep(spec.get("linger", 0.3))  # anything beyond the expected messages would be a duplicate
    if spec.get("hold"):  # stay online, for the test to look at, until it closes our stdin
        print("CONSUMED", flush=True)
        sys.stdin.readline()
    consumer.shutdown()
    results["received"] = got

if "pull" in plan:
    consumer = PullConsumer(plan["pull"]["group"])
    consumer.set_namesrv_addr(addr)
    consumer.start()
    results["pulled"] = [received(message) for message in consumer.pull(plan["pull"]["topic"])]
    consumer.shutdown()

print("RESULT " + json.dumps(results), flush=True)
"""


def client_process(plan: dict, home: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CLIENT, json.dumps(plan)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(home)},
    )


def finish(process: subprocess.Popen, timeout: float = 40) -> dict:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"C++ client run did not finish: {out[-2000:]} {err[-2000:]}") from None
    assert process.returncode == 0, err[-3000:]
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def run_client(plan: dict, home: Path) -> dict:
    return finish(client_process(plan, home))


def messages(topic: str, count: int, start: int = 0, **extra) -> list[dict]:
    return [
        {"topic": topic, "body": f"body {n}", "keys": f"KEY_{n}", "tags": "TagA", "props": {"p": str(n)}, **extra}
        for n in range(start, start + count)
    ]


@pytest.fixture
def cluster():
    with SandboxCluster() as sandbox:
        yield sandbox


@pytest.fixture
def admin(cluster):
    client = MQAdmin(cluster.namesrv_addr, timeout=3.0)
    yield client
    client.close()


@pytest.fixture
def home(tmp_path):
    return tmp_path


def stored(broker, topic: str) -> list:
    found = []
    for queue_id in broker.store.queue_ids(topic):
        found.extend(decode_messages(broker.store.get_message(topic, queue_id, 0, 1000).body))
    return found


# --- the real C++ client -----------------------------------------------------------------------------------------


def test_cpp_sends_in_every_mode_and_a_pull_consumer_reads_them_back(cluster, admin, home):
    specs = messages("TopicTest", 4)
    for spec, mode in zip(specs, ("sync", "async", "oneway", "orderly"), strict=True):
        spec["mode"] = mode
    specs[3]["arg"] = 2
    result = run_client(
        {
            "namesrv": cluster.namesrv_addr,
            "produce": {"group": "pg_test", "messages": specs},
            "pull": {"group": "cg_pull", "topic": "TopicTest"},
        },
        home,
    )
    assert all(sent.get("id") != "" for sent in result["sent"])
    pulled = sorted(result["pulled"], key=lambda message: message["body"])
    assert [(m["body"], m["keys"], m["tags"], m["p"]) for m in pulled] == [
        (f"body {n}", f"KEY_{n}", "TagA", str(n)) for n in range(4)
    ]
    assert pulled[3]["queue"] == 2  # the orderly send's selector: arg % queue count
    broker = cluster.broker()
    for message in stored(broker, "TopicTest"):
        assert message.properties["CLUSTER"] == "DefaultCluster" and "WAIT" not in message.properties
        assert message.born_host.startswith("127.0.0.1:")
    # TBW102 handed its inheritable config to the new topic, capped at the client's 4 queues.
    route = admin.examine_topic_route_info("TopicTest")
    assert (route.queue_datas[0].write_queue_nums, route.queue_datas[0].perm) == (4, 6)
    assert broker.stats.get_stats_item(TOPIC_PUT_NUMS, "TopicTest").value == 4
    # The C++ producer unregisters with consumerGroup "", which auto-creates a group "", as in the capture.
    assert "" in broker.groups.table


def test_cpp_batch_lands_as_one_message_as_on_a_real_4_9_broker(cluster, home):
    # The C++ client marks batches with batch="1", which Java's Boolean.parseBoolean reads as false: a 4.9 broker
    # stores the encoded batch as one message (apache/rocketmq-client-cpp#363, #447), and so does the sandbox.
    batch = {"topic": "TopicTest", "mode": "batch", "parts": messages("TopicTest", 2)}
    run_client({"namesrv": cluster.namesrv_addr, "produce": {"group": "pg_batch", "messages": [batch]}}, home)
    (message,) = stored(cluster.broker(), "TopicTest")
    assert b"KEY_0" in message.body and b"KEY_1" in message.body


def test_clustering_consumer_receives_exactly_what_was_sent_and_resumes_after_a_restart(cluster, home):
    addr = cluster.namesrv_addr
    first = run_client(
        {
            "namesrv": addr,
            "produce": {"group": "pg_test", "messages": messages("TopicTest", 6)},
            "consume": {"group": "cg_test", "topic": "TopicTest", "expect": 6},
        },
        home,
    )
    assert sorted((m["body"], m["keys"], m["tags"], m["p"]) for m in first["received"]) == [
        (f"body {n}", f"KEY_{n}", "TagA", str(n)) for n in range(6)
    ]
    assert {m["id"] for m in first["received"]} == {s["id"] for s in first["sent"]}
    broker = cluster.broker()
    assert sum(broker.offsets.table["TopicTest@cg_test"].values()) == 6
    assert broker.stats.get_stats_item(GROUP_GET_NUMS, "TopicTest@cg_test").value == 6
    assert broker.stats.get_stats_item(GROUP_GET_SIZE, "TopicTest@cg_test").value > 0
    second = run_client(
        {
            "namesrv": addr,
            "produce": {"group": "pg_test", "messages": messages("TopicTest", 3, start=6)},
            "consume": {"group": "cg_test", "topic": "TopicTest", "expect": 3},
        },
        home,
    )
    assert sorted(m["body"] for m in second["received"]) == ["body 6", "body 7", "body 8"]


def test_failed_messages_come_back_through_the_retry_topic_then_go_to_the_dlq(cluster, admin, home):
    broker = cluster.broker()
    group = SubscriptionGroupConfig(group_name="cg_retry", retry_max_times=2)
    admin.create_and_update_subscription_group_config(broker.addr, group)
    # As for a group that has run before: otherwise the client finds the retry topic's route only on its next
    # periodic route refresh after its first heartbeat created the topic.
    admin.create_and_update_topic_config(broker.addr, h_topic("%RETRY%cg_retry", 1))
    result = run_client(
        {
            "namesrv": cluster.namesrv_addr,
            "produce": {"group": "pg", "messages": messages("TopicTest", 2)},
            # KEY_1 fails every time. (Only one failing message: the C++ client hands retried messages to the
            # listener in batches and sends a whole batch back when one of them fails.)
            "consume": {"group": "cg_retry", "topic": "TopicTest", "expect": 4, "fail": {"KEY_1": 9}},
        },
        home,
    )
    deliveries = sorted((m["keys"], m["reconsume"], m["body"]) for m in result["received"])
    assert deliveries == [
        ("KEY_0", 0, "body 0"),
        ("KEY_1", 0, "body 1"),
        ("KEY_1", 1, "body 1"),
        ("KEY_1", 2, "body 1"),
    ]
    retried = [m for m in result["received"] if m["reconsume"]]
    assert {m["topic"] for m in retried} == {"TopicTest"} and {m["retry_topic"] for m in retried} == {"TopicTest"}
    (dead,) = stored(broker, "%DLQ%cg_retry")  # the third failure is one more than retryMaxTimes allows
    assert (dead.body, dead.keys, dead.reconsume_times) == (b"body 1", ["KEY_1"], 3)
    assert dead.properties["RETRY_TOPIC"] == "TopicTest" and dead.properties["ORIGIN_MESSAGE_ID"]
    assert broker.stats.get_stats_item(SNDBCK_PUT_NUMS, "TopicTest@cg_retry").value == 3
    # Retries went through SCHEDULE_TOPIC_XXXX at level 3 + reconsumeTimes, each level delivered once.
    assert broker.schedule.offset_table == {3: 1, 4: 1}
    runtime = admin.fetch_broker_runtime_stats(broker.addr).table
    assert (runtime["scheduleMessageOffset_3"], runtime["scheduleMessageOffset_4"]) == ("1,1", "1,1")
    assert "%DLQ%cg_retry" in admin.get_all_topic_config(broker.addr).topic_config_table


def test_long_polling_delivers_a_new_message_at_once(cluster, admin, home):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicPoll", 2))
    consumer = client_process(
        {"namesrv": cluster.namesrv_addr, "consume": {"group": "cg_poll", "topic": "TopicPoll", "expect": 1}}, home
    )
    # Both queues have been pulled and are held by the broker.
    wait_for(
        lambda: broker.pull.hold_service.held("TopicPoll", 0) + broker.pull.hold_service.held("TopicPoll", 1) == 2,
        timeout=10.0,
    )
    sent = run_client(
        {"namesrv": cluster.namesrv_addr, "produce": {"group": "pg", "messages": messages("TopicPoll", 1)}}, home
    )
    (message,) = finish(consumer)["received"]
    assert message["at"] - sent["sent"][0]["sent_at"] < 1.0  # not after the 15 s suspend timeout


def test_broadcasting_consumers_each_receive_every_message(cluster, admin, home):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicCast", 2))
    plan = {"namesrv": cluster.namesrv_addr}
    consume = {"group": "cg_cast", "topic": "TopicCast", "expect": 4, "broadcast": True}
    consumers = [client_process({**plan, "consume": consume}, home / str(n)) for n in range(2)]
    # Broadcasting consumers start at the queue's end: wait until both are polling before producing.
    wait_for(
        lambda: len(broker.consumers.get("cg_cast").channels) == 2 if broker.consumers.get("cg_cast") else False,
        timeout=10.0,
    )
    wait_for(
        lambda: broker.pull.hold_service.held("TopicCast", 0) + broker.pull.hold_service.held("TopicCast", 1) == 4,
        timeout=10.0,
    )
    run_client({**plan, "produce": {"group": "pg", "messages": messages("TopicCast", 4)}}, home)
    for consumer in consumers:
        assert sorted(m["body"] for m in finish(consumer)["received"]) == [f"body {n}" for n in range(4)]
    assert "TopicCast@cg_cast" not in broker.offsets.table  # broadcasting consumers keep offsets locally


def test_orderly_consumer_locks_its_queues_and_gets_each_queue_in_order(cluster, home):
    specs = messages("TopicOrder", 8, mode="orderly", arg=1)
    result = run_client(
        {
            "namesrv": cluster.namesrv_addr,
            "produce": {"group": "pg_order", "messages": specs},
            "consume": {"group": "cg_order", "topic": "TopicOrder", "expect": 8, "orderly": True},
        },
        home,
    )
    assert [m["body"] for m in result["received"]] == [f"body {n}" for n in range(8)]
    assert {m["queue"] for m in result["received"]} == {1}
    broker = cluster.broker()
    assert broker.received[RequestCode.LOCK_BATCH_MQ] >= 1 and broker.received[RequestCode.UNLOCK_BATCH_MQ] >= 1


def test_two_consumers_of_a_group_share_the_queues(cluster, admin, home):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicShare", 4))
    plan = {"namesrv": cluster.namesrv_addr}
    consume = {"group": "cg_share", "topic": "TopicShare", "expect": 4, "seconds": 6, "linger": 0}
    hold = broker.pull.hold_service

    def held() -> int:
        return sum(hold.held("TopicShare", queue_id) for queue_id in range(4))

    first = client_process({**plan, "consume": consume}, home / "a")
    wait_for(lambda: held() == 4, timeout=10.0)  # the first consumer polls all four queues
    second = client_process({**plan, "consume": consume}, home / "b")
    # NOTIFY_CONSUMER_IDS_CHANGED made both rebalance: the newcomer polls its two queues (the first consumer's
    # dropped pulls stay held until they time out).
    wait_for(lambda: held() == 6, timeout=10.0)
    run_client({**plan, "produce": {"group": "pg", "messages": messages("TopicShare", 8)}}, home)
    first_got, second_got = finish(first)["received"], finish(second)["received"]
    assert {m["body"] for m in first_got + second_got} == {f"body {n}" for n in range(8)}
    assert len(first_got) == len(second_got) == 4  # two queues each


def h_topic(name: str, queues: int) -> TopicConfig:
    return TopicConfig(topic_name=name, read_queue_nums=queues, write_queue_nums=queues)


# --- captured frames -----------------------------------------------------------------------------------------------


class Peer:
    def __init__(self, addr: str):
        self.addr = addr
        self.client = RemotingClient(timeout=5.0)

    def call(self, cmd: RemotingCommand) -> RemotingCommand:
        return run_sync(self.client.invoke(self.addr, cmd))

    def oneway(self, cmd: RemotingCommand) -> None:
        run_sync(self.client.invoke_oneway(self.addr, cmd))

    def replay_exact(self, name: str) -> None:
        """Send a captured request; our answer must be the captured frame (opaque aside)."""
        answer = self.call(captured_request(name))
        answer.opaque = captured(name)["response"]["header"]["opaque"]
        assert encode_frame(answer) == captured_frame(name)

    def close(self) -> None:
        run_sync(self.client.close())


@pytest.fixture
def peers(cluster):
    opened = []

    def connect() -> Peer:
        opened.append(Peer(cluster.broker().addr))
        return opened[-1]

    yield connect
    for peer in opened:
        peer.close()


def test_heartbeats_unregistration_and_offset_commits_answer_with_the_captured_frames(cluster, peers):
    java, cpp = peers(), peers()
    java.replay_exact("HEART_BEAT")
    cpp.replay_exact("HEART_BEAT_cpp_client")
    answer = cpp.call(captured_request("GET_CONSUMER_LIST_BY_GROUP_cpp_client"))
    real = decode_frame(captured_frame("GET_CONSUMER_LIST_BY_GROUP_cpp_client"))
    assert (answer.code, answer.ext_fields, answer.remark) == (real.code, real.ext_fields, real.remark)
    assert sorted(json.loads(answer.body)["consumerIdList"]) == sorted(json.loads(real.body)["consumerIdList"])
    broker = cluster.broker()
    assert "%RETRY%cg_test" in broker.topics.table  # a consumer group's heartbeat creates its retry topic
    cpp.replay_exact("UPDATE_CONSUMER_OFFSET_cpp_client")
    answer = cpp.call(captured_request("QUERY_CONSUMER_OFFSET_cpp_client"))
    assert (answer.code, answer.ext_fields) == (0, {"offset": "503"})
    java.oneway(captured_request("UPDATE_CONSUMER_OFFSET_oneway"))
    wait_for(lambda: broker.offsets.query("cg_test", "TopicTest", 4) == 503, timeout=10.0)
    java.replay_exact("UNREGISTER_CLIENT")
    cpp.close()  # a closed connection leaves the group at once
    wait_for(lambda: broker.consumers.get("cg_test").client_ids() == ["127.0.0.1@28238#7787385373909"], timeout=10.0)


def test_group_members_are_told_when_membership_changes(cluster):
    notified: list[tuple[str, RemotingCommand]] = []

    async def record(addr: str, cmd: RemotingCommand) -> None:
        notified.append((addr, cmd))

    first, second = (RemotingClient(timeout=3.0, request_handler=record) for _ in range(2))
    addr = cluster.broker().addr
    try:
        run_sync(first.invoke(addr, captured_request("HEART_BEAT")))
        wait_for(lambda: len(notified) == 1, timeout=10.0)  # the newcomer itself is told too, as in Java
        run_sync(second.invoke(addr, captured_request("HEART_BEAT_cpp_client")))
        wait_for(lambda: len(notified) == 3, timeout=10.0)
        run_sync(second.close())
        wait_for(lambda: len(notified) == 4, timeout=10.0)
    finally:
        run_sync(first.close())
        run_sync(second.close())
    real = decode_frame(
        base64.b64decode(captured("NOTIFY_CONSUMER_IDS_CHANGED_broker_to_client")["request"]["frame_b64"])
    )
    for _, cmd in notified:
        assert (cmd.code, cmd.flag, cmd.language, cmd.version, cmd.remark, cmd.ext_fields, cmd.body) == (
            real.code,
            real.flag,
            real.language,
            real.version,
            real.remark,
            real.ext_fields,
            real.body,
        )


def test_query_offset_of_a_group_that_never_committed(cluster, peers):
    answer = peers().call(captured_request("QUERY_CONSUMER_OFFSET"))
    assert (answer.code, answer.ext_fields) == (0, {"offset": "0"})


def test_pull_of_an_outdated_subscription_is_the_captured_frame(peers):
    peer = peers()
    peer.call(captured_request("HEART_BEAT"))
    peer.replay_exact("PULL_MESSAGE_subscription_not_latest")


def test_cpp_send_answer_has_the_captured_header(cluster, peers):
    answer = peers().call(captured_request("SEND_MESSAGE_cpp_client"))
    real = decode_frame(captured_frame("SEND_MESSAGE_cpp_client"))
    broker = cluster.broker()
    expected = dict(real.ext_fields, msgId=f"7F000001{broker.port:08X}0000000000000000")
    assert (answer.code, answer.remark, answer.ext_fields) == (real.code, real.remark, expected)
    (message,) = stored(broker, "TopicTest")
    assert message.body == b"hello from python producer #0"
    assert message.properties == {
        "KEYS": "KEY_py_0",
        "TAGS": "TagA",
        "UNIQ_KEY": "0100007F0000ED6C0000477AB3710100",
        "CLUSTER": "DefaultCluster",
    }


def pull_request(offset: int, *, sys_flag: int = 4, suspend_ms: int = 0, commit: int = 0) -> RemotingCommand:
    header = h.PullMessageRequestHeader(
        consumer_group="cg_raw",
        topic="TopicRaw",
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=sys_flag,
        commit_offset=commit,
        suspend_timeout_millis=suspend_ms,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


def put(broker, topic: str, count: int) -> None:
    async def store() -> None:
        for number in range(count):
            broker.put_message(InnerMessage(topic=topic, queue_id=0, body=f"m{number}".encode()))

    broker.run(store())


def test_pull_statuses_headers_and_offset_moved_events(cluster, admin, peers):
    broker, peer = cluster.broker(), peers()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicRaw", 1))
    put(broker, "TopicRaw", 3)
    found = peer.call(pull_request(0, sys_flag=5, commit=2))
    assert (found.code, found.remark) == (ResponseCode.SUCCESS, "FOUND")
    assert found.ext_fields == {"suggestWhichBrokerId": "0", "nextBeginOffset": "3", "minOffset": "0", "maxOffset": "3"}
    assert [m.body for m in decode_messages(found.body)] == [b"m0", b"m1", b"m2"]
    assert broker.offsets.query("cg_raw", "TopicRaw", 0) == 2  # committed from the pull's sysFlag
    started = time.monotonic()
    empty = peer.call(pull_request(3, sys_flag=6, suspend_ms=300))
    assert (empty.code, empty.remark) == (ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE")
    assert 0.25 < time.monotonic() - started < 3
    moved = peer.call(pull_request(10))
    assert (moved.code, moved.remark, moved.ext_fields["nextBeginOffset"]) == (21, "OFFSET_OVERFLOW_BADLY", "3")
    (event,) = stored(broker, "OFFSET_MOVED_EVENT")
    assert json.loads(event.body) == {
        "consumerGroup": "cg_raw",
        "messageQueue": {"brokerName": "broker-a", "queueId": 0, "topic": "TopicRaw"},
        "offsetNew": 3,
        "offsetRequest": 10,
    }
    assert (event.tags, event.keys) == ("cg_raw", ["cg_raw"])


def test_held_pull_is_answered_when_a_message_arrives(cluster, admin, peers):
    broker, peer = cluster.broker(), peers()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicRaw", 1))
    held = run_sync_later(peer, pull_request(0, sys_flag=6, suspend_ms=10_000))
    wait_for(lambda: broker.pull.hold_service.held("TopicRaw", 0) == 1, timeout=10.0)
    put(broker, "TopicRaw", 1)
    answer = held.result(timeout=3)
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, "FOUND")


def run_sync_later(peer: Peer, cmd: RemotingCommand) -> concurrent.futures.Future:
    """Send without waiting for the answer (a held pull)."""
    return asyncio.run_coroutine_threadsafe(peer.client.invoke(peer.addr, cmd), background_loop())


def test_offset_queries_through_the_admin_client(cluster, admin):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicRaw", 1))
    before = int(time.time() * 1000)
    put(broker, "TopicRaw", 3)
    assert admin.get_max_offset(broker.addr, "TopicRaw", 0) == 3
    assert admin.get_min_offset(broker.addr, "TopicRaw", 0) == 0
    assert admin.search_offset(broker.addr, "TopicRaw", 0, before - 1) == 0
    cmd = RemotingCommand.request(RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": "TopicRaw", "queueId": "0"})
    answer = run_sync(admin.aio.client.invoke(broker.addr, cmd))
    assert before <= int(answer.ext_fields["timestamp"]) <= int(time.time() * 1000)
