"""Acting on messages and consumer groups (monitor/messages: send, resend, dead letters, offsets, redeliver,
groups, export, diagnostics) against the sandbox cluster: two broker names, each group and topic of its own test.

The same operations against real 4.9.4 brokers with the real C++ client: tests/real/test_message_operations_real.py.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator

import pytest

from monitor.messages import dead_letters, diagnostics, export, groups, offsets, redeliver, resend, send
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin, retry_topic
from monitor.remoting.command import decode_frame
from monitor.remoting.message import MessageExt
from monitor.sandbox.cluster import SandboxCluster
from tests.fixtures import captured, captured_frame
from tests.responder import Responder
from tests.support.waiting import wait_for

QUEUES = 2


@pytest.fixture(scope="module")
def cluster() -> Iterator[SandboxCluster]:
    with SandboxCluster(brokers=2) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def admin(cluster) -> Iterator[MQAdmin]:
    client = MQAdmin(cluster.namesrv_addr, timeout=5.0)
    yield client
    client.close()


def masters(cluster) -> list[str]:
    return [cluster.broker(name).addr for name in cluster.broker_names]


def make_topic(cluster, admin, topic: str, *, everywhere: bool = False, queues: int = QUEUES) -> str:
    for addr in masters(cluster) if everywhere else masters(cluster)[:1]:
        admin.create_and_update_topic_config(
            addr, b.TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
        )
    wait_for(lambda: _routed(admin, topic, 2 if everywhere else 1), 10, f"route of {topic}")
    return topic


def _routed(admin, topic: str, brokers: int) -> bool:
    try:
        return len(admin.examine_topic_route_info(topic).queue_datas) == brokers
    except Exception:
        return False


def make_group(cluster, admin, group: str, *, on: list[str] | None = None, **settings) -> str:
    """The group on the given masters (all by default), with its retry topic on broker-a as a consumer's heartbeat
    would create it."""
    for addr in masters(cluster) if on is None else on:
        admin.create_and_update_subscription_group_config(addr, b.SubscriptionGroupConfig(group_name=group, **settings))
    make_topic(cluster, admin, retry_topic(group), queues=1)
    return group


def stored(admin, result: send.SendResult) -> MessageExt:
    return admin.view_message(result.offset_msg_id)


def send_at(admin, topic: str, queue_id: int, body: str) -> MessageExt:
    result = send.send_message(admin, topic, body.encode(), queue=b.MessageQueue(topic, "broker-a", queue_id))
    return stored(admin, result)


def later_than(ms: int) -> None:
    wait_for(lambda: time.time() * 1000 > ms + 2, 5, "the clock to move on")


# --- send ---------------------------------------------------------------------------------------------------------


def test_a_sent_message_is_found_by_its_producer_id_with_tags_keys_and_properties(cluster, admin):
    topic = make_topic(cluster, admin, "TopicOpsSend")
    result = send.send_message(
        admin, topic, b"hello", tags="TagA", keys=["order-1", "user-7"], properties={"region": "eu"}
    )
    assert (result.topic, result.status, len(result.msg_id)) == (topic, "SEND_OK", 32)
    (found,) = wait_for(lambda: admin.query_message_by_uniq_key(topic, result.msg_id), 5, "the index entry")
    assert found.body == b"hello" and found.tags == "TagA" and found.keys == ["order-1", "user-7"]
    assert found.properties["region"] == "eu" and found.msg_id == result.offset_msg_id
    assert (found.queue_id, found.queue_offset) == (result.queue_id, result.queue_offset)
    assert [m.uniq_key for m in admin.query_message(topic, "user-7")] == [result.msg_id]


def test_a_body_over_4_kib_is_sent_compressed_and_reads_back_whole(cluster, admin):
    topic = make_topic(cluster, admin, "TopicOpsLarge")
    body = ("x" * 10_000).encode()
    found = stored(admin, send.send_message(admin, topic, body))
    assert found.body == body and found.was_compressed


def test_a_send_to_a_queue_goes_there_and_an_unknown_queue_is_refused(cluster, admin):
    topic = make_topic(cluster, admin, "TopicOpsQueue")
    result = send.send_message(admin, topic, b"q1", queue=b.MessageQueue(topic, "broker-a", 1))
    assert (result.broker_name, result.queue_id) == ("broker-a", 1)
    with pytest.raises(ValueError, match="not a writable queue"):
        send.send_message(admin, topic, b"q9", queue=b.MessageQueue(topic, "broker-a", 9))
    with pytest.raises(ValueError, match="empty"):
        send.send_message(admin, topic, b"")
    with pytest.raises(ValueError, match="without spaces"):
        send.send_message(admin, topic, b"k", keys=["two words"])


def test_a_send_request_carries_the_java_producers_header_and_its_answer_decodes():
    """Against the SEND_MESSAGE_V2 a real Java 4.9.4 producer sent, and the answer its broker gave."""
    java = captured("SEND_MESSAGE_V2")["request"]["header"]
    answer = decode_frame(captured_frame("SEND_MESSAGE_V2"))
    with (
        Responder(lambda cmd: cmd.make_response(ext_fields=dict(answer.ext_fields))) as broker,
        MQAdmin(timeout=3.0) as client,
    ):
        props = {"KEYS": "KEY_java_0", "UNIQ_KEY": "7F0000016CA35FFD2B276C5640FE0000", "WAIT": "true", "TAGS": "TagA"}
        response = client.send_message(broker.addr, "TopicTest", 5, b"body", props, producer_group="pg_java")
    (sent,) = broker.received
    assert (sent.code, sent.body) == (java["code"], b"body")
    assert {k: v for k, v in sent.ext_fields.items() if k != "g"} == {
        k: v for k, v in java["extFields"].items() if k != "g"
    }
    assert (response.status, response.offset_msg_id, response.queue_id, response.queue_offset) == (
        "SEND_OK",
        "7F00000100002A9F00000000000A2C9C",
        5,
        375,
    )


def test_a_deterministic_producer_id_carries_its_time_as_java_tools_read_it():
    at = int(time.time() * 1000)
    key = send.make_uniq_key("operation 1 item 0", at)
    assert key == send.make_uniq_key("operation 1 item 0", at) != send.make_uniq_key("operation 1 item 1", at)
    assert len(key) == 32 and key == key.upper() and int(key, 16) >= 0
    span = int(key[20:28], 16)  # MessageClientIDSetter.getNearlyTimeFromID: ms since the start of the month
    assert send._month_start_ms(at) + span == at


# --- resend and dead letters ----------------------------------------------------------------------------------------


def dead_letter(topic: str, group: str) -> MessageExt:
    """A copy as the broker stores it in %DLQ%group after the group's retries (consumerSendMsgBack)."""
    return MessageExt(
        topic=f"%DLQ%{group}",
        body=b"order 42",
        properties={
            "TAGS": "TagA",
            "KEYS": "order-42",
            "amount": "10",
            "UNIQ_KEY": "0A0000010000000000000000000000AA",
            "RETRY_TOPIC": topic,
            "ORIGIN_MESSAGE_ID": "7F00000100002A9F0000000000000123",
            "REAL_TOPIC": f"%RETRY%{group}",
            "REAL_QID": "0",
            "DELAY": "0",  # the broker clears the delay of a dead letter
            "MAX_RECONSUME_TIMES": "2",
            "CLUSTER": "DefaultCluster",
            "WAIT": "false",
        },
        reconsume_times=3,
    )


def test_origin_of_a_dead_letter_is_its_retry_topic_and_origin_id():
    letter = dead_letter("TopicOrders", "cg_orders")
    assert resend.origin_of(letter) == ("TopicOrders", "7F00000100002A9F0000000000000123")
    plain = MessageExt(topic="TopicOrders", properties={"UNIQ_KEY": "AB" * 16})
    assert resend.origin_of(plain) == ("TopicOrders", "AB" * 16)
    delayed = MessageExt(topic="SCHEDULE_TOPIC_XXXX", properties={"REAL_TOPIC": "TopicOrders", "DELAY": "2"})
    assert resend.origin_of(delayed).topic == "TopicOrders"
    with pytest.raises(ValueError, match="does not say which topic"):
        resend.resend_topic(MessageExt(topic="%DLQ%cg_x"), "origin", None)


def test_resend_to_origin_stores_a_fresh_copy_without_the_retry_bookkeeping(cluster, admin):
    topic = make_topic(cluster, admin, "TopicOpsOrigin")
    key = send.make_uniq_key("resend origin 1", int(time.time() * 1000))
    assert resend.already_sent(admin, topic, key) is None
    result = resend.resend(admin, dead_letter(topic, "cg_ops_origin"), to="origin", uniq_key=key)
    copy = wait_for(lambda: resend.already_sent(admin, topic, key), 5, "the copy in the index")
    assert (copy.topic, copy.body, copy.reconsume_times, copy.msg_id) == (topic, b"order 42", 0, result.offset_msg_id)
    assert {k: v for k, v in copy.properties.items() if k != "CLUSTER"} == {
        "TAGS": "TagA",
        "KEYS": "order-42",
        "amount": "10",
        "UNIQ_KEY": key,
    }


def test_resend_to_the_retry_topic_carries_the_original_topic_and_is_browsed_as_such(cluster, admin):
    topic = make_topic(cluster, admin, "TopicOpsRetry")
    group = make_group(cluster, admin, "cg_ops_retry")
    original = send_at(admin, topic, 0, "to retry")
    key = send.make_uniq_key("resend retry 1", int(time.time() * 1000))
    resend.resend(admin, original, to="retry", group=group, uniq_key=key)
    copy = wait_for(lambda: resend.already_sent(admin, retry_topic(group), key), 5, "the copy in the retry topic")
    assert copy.topic == retry_topic(group) and copy.reconsume_times == 0 and copy.body == b"to retry"
    assert copy.retry_topic == topic and copy.origin_msg_id == original.uniq_key
    (entry,) = dead_letters.browse(admin, group, "retry", newest=10)
    assert (entry.origin_topic, entry.origin_msg_id, entry.message.msg_id) == (topic, original.uniq_key, copy.msg_id)
    assert list(dead_letters.browse(admin, group, "dlq", newest=10)) == []  # no DLQ topic yet: no dead letters
    with pytest.raises(ValueError, match="needs the consumer group"):
        resend.resend(admin, original, to="retry", uniq_key=key)


def test_dead_letters_are_browsed_by_time_range_with_their_origin(cluster, admin):
    group = "cg_ops_dlq"
    make_group(cluster, admin, group)
    dlq = make_topic(cluster, admin, dead_letters.dlq_topic(group), queues=1)
    begin = int(time.time() * 1000)
    letter = dead_letter("TopicOpsDlqOrigin", group)
    send.send_message(admin, dlq, letter.body, properties={**letter.properties, "UNIQ_KEY": "ignored"})
    entries = list(dead_letters.browse(admin, group, "dlq", begin_ms=begin, end_ms=None))
    assert [(e.origin_topic, e.origin_msg_id) for e in entries] == [
        ("TopicOpsDlqOrigin", "7F00000100002A9F0000000000000123")
    ]
    with pytest.raises(ValueError, match="not both"):
        list(dead_letters.browse(admin, group, "dlq", begin_ms=begin, newest=3))


# --- offsets ------------------------------------------------------------------------------------------------------


@pytest.fixture
def backlog(cluster, admin, request):
    """A topic of two queues on broker-a, three messages in each with a clock tick between the rounds, and an
    offline group that has committed offset 1 in both queues. Returns (topic, group, rounds of stored messages)."""
    name = request.node.name.split("[")[0][-24:].replace("_", "")
    topic, group = make_topic(cluster, admin, f"TopicOps{name}"), f"cg_ops_{name}"
    master = cluster.broker("broker-a").addr
    admin.create_and_update_subscription_group_config(master, b.SubscriptionGroupConfig(group_name=group))
    rounds = []
    for n in range(3):
        rounds.append([send_at(admin, topic, q, f"round {n} queue {q}") for q in range(QUEUES)])
        later_than(max(m.store_timestamp for m in rounds[-1]))
    for q in range(QUEUES):
        admin.update_consumer_offset(master, group, topic, q, 1)
    return topic, group, rounds


def committed(admin, cluster, group: str, topic: str) -> dict[int, int]:
    master = cluster.broker("broker-a").addr
    return {q: admin.query_consumer_offset(master, group, topic, q) for q in range(QUEUES)}


def test_preview_reset_shows_each_queue_before_and_after(cluster, admin, backlog):
    topic, group, rounds = backlog
    at = rounds[2][0].store_timestamp
    previews = offsets.preview_reset(admin, group, topic, at)
    assert [(p.broker_name, p.queue_id, p.min_offset, p.max_offset, p.current_offset) for p in previews] == [
        ("broker-a", q, 0, 3, 1) for q in range(QUEUES)
    ]
    assert [p.target_offset for p in previews] == [2, 2]
    assert [p.target_offset for p in offsets.preview_reset(admin, group, topic, 0)] == [0, 0]
    newest = offsets.preview_reset(admin, group, topic, offsets.NEWEST, queue=b.MessageQueue(topic, "broker-a", 1))
    assert [(p.queue_id, p.target_offset) for p in newest] == [(1, 3)]


def test_apply_reset_of_an_offline_group_writes_the_committed_offsets(cluster, admin, backlog):
    topic, group, rounds = backlog
    outcome = offsets.apply_reset(admin, group, topic, rounds[1][0].store_timestamp)
    assert not outcome.online
    assert sorted((q.queue_id, q.offset) for q in outcome.queues) == [(0, 1), (1, 1)]
    outcome = offsets.apply_reset(admin, group, topic, 0)
    assert committed(admin, cluster, group, topic) == {0: 0, 1: 0}


def test_apply_reset_of_one_queue_leaves_the_others(cluster, admin, backlog):
    topic, group, _ = backlog
    outcome = offsets.apply_reset(admin, group, topic, offsets.NEWEST, queue=b.MessageQueue(topic, "broker-a", 0))
    assert (outcome.online, [(q.queue_id, q.offset) for q in outcome.queues]) == (False, [(0, 3)])
    assert committed(admin, cluster, group, topic) == {0: 3, 1: 1}


def test_skip_backlog_moves_the_group_to_the_end_of_every_queue(cluster, admin, backlog):
    topic, group, _ = backlog
    offsets.skip_backlog(admin, group, topic)
    assert committed(admin, cluster, group, topic) == {0: 3, 1: 3}


def test_skip_retry_backlog_moves_the_group_past_its_retry_topic(cluster, admin):
    topic = make_topic(cluster, admin, "TopicOpsSkipRetry")
    group = make_group(cluster, admin, "cg_ops_skip_retry")
    original = send_at(admin, topic, 0, "retry me")
    for n in range(2):
        resend.resend(admin, original, to="retry", group=group, uniq_key=send.make_uniq_key(f"skip {n}", 0))
    outcome = offsets.skip_retry_backlog(admin, group)
    assert [(q.queue_id, q.offset) for q in outcome.queues] == [(0, 2)]
    master = cluster.broker("broker-a").addr
    assert admin.query_consumer_offset(master, group, retry_topic(group), 0) == 2


# --- redeliver ----------------------------------------------------------------------------------------------------


def test_redeliver_resends_a_time_range_to_the_groups_retry_topic_once(cluster, admin):
    topic = make_topic(cluster, admin, "TopicOpsRedeliver")
    group = make_group(cluster, admin, "cg_ops_redeliver")
    before = send_at(admin, topic, 0, "before")
    later_than(before.store_timestamp)
    in_range = [send_at(admin, topic, q % QUEUES, f"in range {q}") for q in range(3)]
    end = max(m.store_timestamp for m in in_range)
    later_than(end)
    send_at(admin, topic, 1, "after")
    keys = {}

    def key_for(index: int) -> str:
        return keys.setdefault(index, send.make_uniq_key(f"redeliver {index}", in_range[0].store_timestamp))

    done = list(redeliver.redeliver(admin, topic, group, in_range[0].store_timestamp, end, uniq_key_for=key_for))
    assert sorted(d.source.body for d in done) == [b"in range 0", b"in range 1", b"in range 2"]
    assert all(d.result is not None for d in done)
    # A resumed run: item 2 may have been in flight, so it is looked up and not sent again.
    wait_for(lambda: resend.already_sent(admin, retry_topic(group), key_for(2)), 5, "the index entry of item 2")
    resumed = list(
        redeliver.redeliver(admin, topic, group, in_range[0].store_timestamp, end, uniq_key_for=key_for, start_index=2)
    )
    assert [(d.index, d.result, d.offset_msg_id) for d in resumed] == [(2, None, done[2].offset_msg_id)]
    copies = dead_letters.newest_messages(admin, retry_topic(group), 10)
    assert sorted(m.body for m in copies) == [b"in range 0", b"in range 1", b"in range 2"]
    assert {m.retry_topic for m in copies} == {topic}


# --- group settings -----------------------------------------------------------------------------------------------


def configs(admin, cluster, group: str) -> list[b.SubscriptionGroupConfig]:
    return [admin.get_all_subscription_group(addr).subscription_group_table.get(group) for addr in masters(cluster)]


def test_pause_and_resume_switch_consume_enable_on_every_master(cluster, admin):
    group = "cg_ops_pause"
    for addr in masters(cluster):
        admin.create_and_update_subscription_group_config(
            addr, b.SubscriptionGroupConfig(group_name=group, retry_max_times=3)
        )
    groups.set_consume_enabled(admin, group, False)
    assert [(c.consume_enable, c.retry_max_times) for c in configs(admin, cluster, group)] == [(False, 3), (False, 3)]
    groups.set_consume_enabled(admin, group, True)
    assert [c.consume_enable for c in configs(admin, cluster, group)] == [True, True]


def test_settings_change_only_what_is_given_and_reach_a_master_without_the_group(cluster, admin):
    group = "cg_ops_settings"
    first = masters(cluster)[0]
    admin.create_and_update_subscription_group_config(
        first, b.SubscriptionGroupConfig(group_name=group, consume_enable=False, retry_queue_nums=2, broker_id=1)
    )
    new = groups.update_group_settings(admin, group, retry_max_times=5, consume_broadcast_enable=False)
    expected = b.SubscriptionGroupConfig(
        group_name=group,
        consume_enable=False,
        retry_queue_nums=2,
        broker_id=1,
        retry_max_times=5,
        consume_broadcast_enable=False,
    )
    assert new == expected and configs(admin, cluster, group) == [expected, expected]
    assert groups.group_settings(admin, group) == expected
    with pytest.raises(ValueError, match="0 or more"):
        groups.update_group_settings(admin, group, retry_max_times=-1)
    with pytest.raises(LookupError):
        groups.set_consume_enabled(admin, "cg_ops_nobody", False)


# --- export and diagnostics -----------------------------------------------------------------------------------------


def test_export_writes_one_json_line_or_csv_row_per_message(cluster, admin):
    topic = make_topic(cluster, admin, "TopicOpsExport")
    text = stored(admin, send.send_message(admin, topic, b"=1+2", tags="TagA", keys=["k1"]))
    binary = stored(admin, send.send_message(admin, topic, b"\xff\x00"))
    lines = list(export.export_lines([text, binary], "jsonl"))
    records = [json.loads(line) for line in lines]
    assert [r["body"] if "body" in r else r["bodyBase64"] for r in records] == ["=1+2", "/wA="]
    assert records[0]["offsetMsgId"] == text.msg_id and records[0]["msgId"] == text.uniq_key
    assert records[0]["tags"] == "TagA" and records[0]["queueOffset"] == text.queue_offset
    rows = list(csv.DictReader(io.StringIO("".join(export.export_lines([text, binary], "csv")))))
    assert [(r["offsetMsgId"], r["body"], r["bodyBase64"]) for r in rows] == [
        (text.msg_id, "'=1+2", ""),
        (binary.msg_id, "", "/wA="),
    ]
    assert json.loads(rows[0]["properties"])["KEYS"] == "k1"
    metadata_only = json.loads(next(export.export_lines([text], "jsonl", include_body=False)))
    assert "body" not in metadata_only and "bodyBase64" not in metadata_only


def test_diagnostics_of_a_group_without_clients_is_empty(cluster, admin):
    group = make_group(cluster, admin, "cg_ops_diagnostics")
    assert diagnostics.client_running_info(admin, group) == []
    assert diagnostics.client_running_info(admin, "cg_ops_never_seen") == []
