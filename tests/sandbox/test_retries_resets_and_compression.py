"""What issue 18's message operations rely on the sandbox broker for, as a 4.9.4 broker does it (the same
requests are compared with a real one in tests/real/test_differential.py): sends of an admin tool to retry topics,
dead letters, paused groups, offset resets pushed to a running C++ consumer, compressed bodies, and a client's
thread stacks asked through the broker.
"""

import struct
import zlib

import pytest

from monitor.remoting import headers as h
from monitor.remoting.admin import MQAdmin
from monitor.remoting.admin.base import PULL_FLAG_SUBSCRIPTION, retry_topic
from monitor.remoting.body import SubscriptionGroupConfig
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.message import COMPRESSED_FLAG, decode_messages
from monitor.remoting.sync import run_sync
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.stats import GROUP_GET_NUMS
from tests.sandbox.test_broker_messaging import client_process, finish, h_topic, messages, put, run_client, stored
from tests.support.waiting import wait_for

TOPIC = "TopicTest"


@pytest.fixture(scope="module")
def cluster():
    with SandboxCluster() as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def admin(cluster):
    client = MQAdmin(cluster.namesrv_addr, timeout=5.0)
    yield client
    client.close()


def call(admin: MQAdmin, addr: str, code: RequestCode, header: h.CommandHeader, body: bytes = b"") -> RemotingCommand:
    return run_sync(admin.aio.client.invoke(addr, RemotingCommand.request(code, header.to_ext_fields(), body)))


def batch_of(body: bytes) -> bytes:
    """A batch body of one message without properties (MessageDecoder.encodeMessages)."""
    return struct.pack(">iiiii", 22 + len(body), 0, 0, 0, len(body)) + body + struct.pack(">h", 0)


def send_v2(admin, addr: str, topic: str, *, queue_id: int, reconsume_times: int = 0, batch: bool = False):
    header = h.SendMessageRequestHeaderV2(
        a="pg_admin",
        b=topic,
        c="TBW102",
        d=4,
        e=queue_id,
        f=0,
        g=1,
        h=0,
        i="KEYS\x01AdminKey\x02",
        j=reconsume_times,
        m=batch,
    )
    body = b"from the admin"
    return call(admin, addr, RequestCode.SEND_MESSAGE_V2, header, batch_of(body) if batch else body)


def group(admin, broker, name: str, **settings) -> None:
    admin.create_and_update_subscription_group_config(broker.addr, SubscriptionGroupConfig(group_name=name, **settings))


def test_a_send_to_a_retry_topic_past_the_groups_max_goes_to_the_dlq_and_names_the_queue_asked_for(cluster, admin):
    broker = cluster.broker()
    group(admin, broker, "cg_sent_retry", retry_max_times=2)
    admin.create_and_update_topic_config(broker.addr, h_topic(retry_topic("cg_sent_retry"), 2))
    kept = send_v2(admin, broker.addr, "%RETRY%cg_sent_retry", queue_id=1, reconsume_times=1)
    dead = send_v2(admin, broker.addr, "%RETRY%cg_sent_retry", queue_id=1, reconsume_times=2)
    assert (kept.code, kept.ext("queueId"), kept.ext("queueOffset")) == (ResponseCode.SUCCESS, "1", "0")
    # handleRetryAndDLQ moves the message to the DLQ's only queue; the answer keeps the queue the sender chose.
    assert (dead.code, dead.ext("queueId"), dead.ext("queueOffset")) == (ResponseCode.SUCCESS, "1", "0")
    (letter,) = stored(broker, "%DLQ%cg_sent_retry")
    assert (letter.queue_id, letter.reconsume_times, letter.keys) == (0, 2, ["AdminKey"])
    assert "DELAY" not in letter.properties  # the sent properties replace the map handleRetryAndDLQ marked
    assert admin.get_all_topic_config(broker.addr).topic_config_table["%DLQ%cg_sent_retry"].perm == 6


def test_a_batch_sent_to_a_retry_topic_stays_there_whatever_its_reconsume_times(cluster, admin):
    broker = cluster.broker()
    group(admin, broker, "cg_batch_retry", retry_max_times=1)
    admin.create_and_update_topic_config(broker.addr, h_topic(retry_topic("cg_batch_retry"), 1))
    answer = send_v2(admin, broker.addr, "%RETRY%cg_batch_retry", queue_id=0, reconsume_times=5, batch=True)
    assert answer.code == ResponseCode.SUCCESS  # asyncSendBatchMessage has no retry/DLQ handling
    assert "%DLQ%cg_batch_retry" not in admin.get_all_topic_config(broker.addr).topic_config_table
    (kept,) = stored(broker, "%RETRY%cg_batch_retry")
    assert (kept.body, kept.reconsume_times) == (b"from the admin", 5)


def test_a_paused_group_is_refused_pulls_until_resumed(cluster, admin):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicPaused", 1))
    put(broker, "TopicPaused", 1)
    group(admin, broker, "cg_paused", consume_enable=False)
    header = h.PullMessageRequestHeader(
        consumer_group="cg_paused",
        topic="TopicPaused",
        queue_id=0,
        queue_offset=0,
        max_msg_nums=32,
        sys_flag=PULL_FLAG_SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
    )
    refused = call(admin, broker.addr, RequestCode.PULL_MESSAGE, header)
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "subscription group no permission, cg_paused")
    group(admin, broker, "cg_paused", consume_enable=True)
    assert call(admin, broker.addr, RequestCode.PULL_MESSAGE, header).code == ResponseCode.SUCCESS


def test_a_group_without_retry_queues_drops_what_is_sent_back(cluster, admin):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicNoRetry", 1))
    put(broker, "TopicNoRetry", 1)
    group(admin, broker, "cg_no_retry", retry_queue_nums=0)
    (message,) = stored(broker, "TopicNoRetry")
    header = h.ConsumerSendMsgBackRequestHeader(offset=message.commit_log_offset, group="cg_no_retry", delay_level=0)
    assert call(admin, broker.addr, RequestCode.CONSUMER_SEND_MSG_BACK, header).code == ResponseCode.SUCCESS
    assert retry_topic("cg_no_retry") not in admin.get_all_topic_config(broker.addr).topic_config_table


def test_big_bodies_of_the_cpp_client_are_stored_compressed_and_consumed_inflated(cluster, admin, tmp_path):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicBig", 1))
    big = {"topic": "TopicBig", "body": "x" * 5000 + " big", "keys": "BIG", "tags": "TagA", "props": {"p": "0"}}
    result = run_client(
        {
            "namesrv": cluster.namesrv_addr,
            "produce": {"group": "pg_big", "messages": [big]},
            "consume": {"group": "cg_big", "topic": "TopicBig", "expect": 1},
        },
        tmp_path,
    )
    assert [m["body"] for m in result["received"]] == [big["body"]]
    record = broker.store.get_message("TopicBig", 0, 0, 1).body
    (raw,) = decode_messages(record, decompress=False)
    assert raw.sys_flag & COMPRESSED_FLAG  # kept as the client set it
    assert len(raw.body) < 1000 and zlib.decompress(raw.body).decode() == big["body"]


def test_a_reset_while_a_cpp_consumer_runs_makes_it_consume_again_from_there(cluster, admin, tmp_path):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic(TOPIC, 1))
    admin.create_and_update_topic_config(broker.addr, h_topic(retry_topic("cg_reset"), 1))
    run_client({"namesrv": cluster.namesrv_addr, "produce": {"group": "pg", "messages": messages(TOPIC, 3)}}, tmp_path)
    # The consumer waits for each message twice (or gives up after 40 s), then says CONSUMED and stays online.
    plan = {"group": "cg_reset", "topic": TOPIC, "expect": 6, "hold": True, "seconds": 40}
    consumer = client_process({"namesrv": cluster.namesrv_addr, "consume": plan}, tmp_path)
    try:
        # Consumed and committed once (the broker resets only a group with an offset in every queue, else
        # "THe consumer group <g> not exist").
        wait_for(lambda: broker.offsets.query("cg_reset", TOPIC, 0) == 3, 30, "the consumer's first commit")
        table = admin.reset_offset_by_timestamp(TOPIC, "cg_reset", 0, cplus=True)
        assert set(table.values()) == {0}
        assert consumer.stdout.readline().strip() == "CONSUMED"
    finally:
        received = finish(consumer)["received"]  # closing its stdin lets it go
    assert sorted(m["body"] for m in received) == sorted(["body 0", "body 1", "body 2"] * 2)
    assert broker.stats.get_stats_item(GROUP_GET_NUMS, f"{TOPIC}@cg_reset").value == 6


def test_a_cpp_consumer_asked_for_its_stacks_answers_without_any(cluster, admin, tmp_path):
    broker = cluster.broker()
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicStacks", 1))
    run_client(
        {"namesrv": cluster.namesrv_addr, "produce": {"group": "pg", "messages": messages("TopicStacks", 1)}}, tmp_path
    )
    plan = {"group": "cg_stacks", "topic": "TopicStacks", "expect": 1, "hold": True}
    consumer = client_process({"namesrv": cluster.namesrv_addr, "consume": plan}, tmp_path)
    try:
        assert consumer.stdout.readline().strip() == "CONSUMED"
        (client_id,) = admin.get_consumer_id_list_by_group(broker.addr, "cg_stacks")
        info = admin.get_consumer_running_info("cg_stacks", client_id, jstack=True, broker_addr=broker.addr)
        assert not info.jstack  # relayed to the client, which has no stacks to give
        assert "TopicStacks" in {sub.topic for sub in info.subscription_set}
    finally:
        finish(consumer)
