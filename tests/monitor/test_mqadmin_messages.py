"""The message subcommands of ``manage.py mqadmin`` end to end on the sandbox cluster: sendMessage, the four
queries (their ``--json`` with every field a real broker sends, under Java's MessageExt names), printMsg,
consumeMessage and skipAccumulatedMessage, as an operator runs them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from monitor.messages.send import send_message
from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import MessageQueue
from monitor.sandbox.cluster import SandboxCluster
from tests.monitor.test_messages_present import real_record_fields

TOPIC = "TopicCli"
KEY_TOPIC = "TopicCliKeys"
MANY = 80  # more messages of one key than a broker answers to one key query (32), most of them on broker-a


@pytest.fixture(scope="module")
def cluster() -> Iterator[SandboxCluster]:
    with SandboxCluster(brokers=2) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def admin(cluster) -> Iterator[MQAdmin]:
    with MQAdmin(cluster.namesrv_addr, timeout=5.0) as client:
        yield client


def mqadmin(cluster: SandboxCluster, subcommand: str, *args: str) -> str:
    out = io.StringIO()
    call_command("mqadmin", subcommand, "-n", cluster.namesrv_addr, "--timeout", "5", *args, stdout=out)
    return out.getvalue()


def mqadmin_json(cluster: SandboxCluster, subcommand: str, *args: str):
    return json.loads(mqadmin(cluster, subcommand, *args, "--json"))


def create_topic(cluster: SandboxCluster, topic: str, queues: int = 4) -> None:
    mqadmin(cluster, "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", str(queues), "-w", str(queues))


@pytest.fixture(scope="module")
def sent(cluster, admin) -> list[dict]:
    """Six messages sent with sendMessage, tags TagA and TagB in turn; each entry is the send result's JSON."""
    create_topic(cluster, TOPIC)
    results = []
    for i in range(6):
        tag = "TagA" if i % 2 == 0 else "TagB"
        results.append(mqadmin_json(cluster, "sendMessage", "-t", TOPIC, "-p", f"body {i}", "-k", f"K{i}", "-c", tag))
    return results


@pytest.fixture(scope="module")
def many_of_one_key(cluster, admin) -> list[str]:
    """MANY messages of the key "busy": one in eight on broker-b, the others on broker-a; their producer ids."""
    create_topic(cluster, KEY_TOPIC)
    queues = [MessageQueue(KEY_TOPIC, "broker-b" if i % 8 == 0 else "broker-a", i % 4) for i in range(MANY)]
    return [send_message(admin, KEY_TOPIC, b"busy", keys=("busy",), queue=queue).msg_id for queue in queues]


def test_send_message_prints_mqadmins_send_result(cluster):
    create_topic(cluster, TOPIC)
    out = mqadmin(cluster, "sendMessage", "-t", TOPIC, "-p", "hello", "-b", "broker-b", "-i", "2")
    header, row = out.splitlines()
    assert header.split() == ["#Broker", "Name", "#QID", "#Send", "Result", "#MsgId", "#Offset", "Message", "ID"]
    broker, queue, status, msg_id, offset_msg_id = row.split()
    assert (broker, queue, status) == ("broker-b", "2", "SEND_OK")
    (view,) = mqadmin_json(cluster, "queryMsgById", "-i", offset_msg_id)
    assert (view["msgId"], view["bodyText"], view["brokerName"], view["queueId"]) == (msg_id, "hello", "broker-b", 2)


def test_send_message_refuses_a_queue_without_its_broker(cluster):
    with pytest.raises(CommandError, match="Broker name must be set if the queue is chosen"):
        mqadmin(cluster, "sendMessage", "-t", TOPIC, "-p", "x", "-i", "1")


def test_a_sent_message_is_found_by_its_unique_key_with_every_field(cluster, sent):
    first = sent[0]
    (view,) = mqadmin_json(cluster, "queryMsgByUniqueKey", "-i", first["msgId"], "-t", TOPIC)
    assert real_record_fields() <= view.keys()
    assert (view["msgId"], view["offsetMsgId"], view["brokerName"]) == (
        first["msgId"],
        first["offsetMsgId"],
        first["brokerName"],
    )
    assert (view["queueId"], view["queueOffset"]) == (first["queueId"], first["queueOffset"])
    assert (view["keys"], view["tags"], view["bodyText"]) == ("K0", "TagA", "body 0")
    assert isinstance(view["bodyCRC"], int) and view["tracks"] == [] and view["trackError"] is None
    text = mqadmin(cluster, "queryMsgByUniqueKey", "-i", first["msgId"], "-t", TOPIC)
    assert "Message Body:        body 0" in text and "WARN: No Consumer" in text


def test_every_query_writes_every_field_a_real_broker_sends(cluster, sent):
    first = sent[0]
    fields = real_record_fields() | {"msgId", "offsetMsgId", "keys", "tags", "brokerName", "bodyText", "body"}
    by_id = mqadmin_json(cluster, "queryMsgById", "-i", first["offsetMsgId"])
    by_key = mqadmin_json(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "K0")
    by_offset = mqadmin_json(
        cluster, "queryMsgByOffset", "-t", TOPIC, "-b", first["brokerName"], "-i", str(first["queueId"]), "-o",
        str(first["queueOffset"]),
    )  # fmt: skip
    for answer in (by_id, by_key, by_offset):
        (view,) = answer
        assert fields <= view.keys()
        assert (view["offsetMsgId"], view["bodyText"]) == (first["offsetMsgId"], "body 0")
        assert view["storeTimestamp"] >= view["bornTimestamp"] > 0 and view["commitLogOffset"] >= 0
    assert {"tracks", "trackError"} <= by_id[0].keys() and "tracks" not in by_key[0]


def test_query_msg_by_key_finds_every_message_of_a_busy_key(cluster, many_of_one_key):
    found = mqadmin_json(cluster, "queryMsgByKey", "-t", KEY_TOPIC, "-k", "busy")
    assert sorted(m["msgId"] for m in found) == sorted(many_of_one_key)
    assert {m["brokerName"] for m in found} == {"broker-a", "broker-b"}
    assert [m["storeTimestamp"] for m in found] == sorted(m["storeTimestamp"] for m in found)
    table = mqadmin(cluster, "queryMsgByKey", "-t", KEY_TOPIC, "-k", "busy")
    assert len(table.splitlines()) == MANY + 1


def test_query_msg_by_key_within_a_time_range(cluster, sent):
    (first,) = mqadmin_json(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "K0")
    stored = first["storeTimestamp"]
    assert mqadmin_json(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "K0", "-b", str(stored + 60_000)) == []
    within = mqadmin_json(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "K0", "-b", str(stored), "-e", str(stored))
    assert [m["msgId"] for m in within] == [first["msgId"]]


def test_print_msg_prints_every_queue_and_filters_by_tag(cluster, sent):
    reads = mqadmin_json(cluster, "printMsg", "-t", TOPIC, "-s", "TagB")
    assert len(reads) == 8  # 4 queues on each of the two brokers
    bodies = sorted(m["bodyText"] for read in reads for m in read["messages"])
    assert bodies[:3] == ["body 1", "body 3", "body 5"]
    assert all(m["tags"] == "TagB" for read in reads for m in read["messages"])
    text = mqadmin(cluster, "printMsg", "-t", TOPIC, "-d", "false")
    assert f"MSGID: {sent[0]['msgId']} MessageExt [brokerName={sent[0]['brokerName']}" in text
    assert "BODY: NOT PRINT BODY" in text and "BODY: body 0" not in text
    assert text.count("minOffset=") == 8


def test_consume_message_pulls_at_most_count_messages_from_one_queue_and_offset(cluster, sent):
    first = sent[0]
    reads = mqadmin_json(
        cluster, "consumeMessage", "-t", TOPIC, "-b", first["brokerName"], "-i", str(first["queueId"]), "-o",
        str(first["queueOffset"]), "-c", "1",
    )  # fmt: skip
    (read,) = reads
    assert [m["msgId"] for m in read["messages"]] == [first["msgId"]]
    everything = mqadmin_json(cluster, "consumeMessage", "-t", TOPIC, "-c", "3")
    assert sum(len(r["messages"]) for r in everything) == 3
    out = mqadmin(cluster, "consumeMessage", "-t", TOPIC, "-c", "2")
    assert out.count("MSGID: ") == 2 and "Consume ok" in out


def test_consume_message_refuses_an_offset_without_its_queue(cluster):
    with pytest.raises(CommandError, match="Please set queueId before offset"):
        mqadmin(cluster, "consumeMessage", "-t", TOPIC, "-o", "3")


def test_skip_accumulated_message_moves_an_offline_group_to_the_newest_message(cluster, admin, sent):
    group = "cg_skip_cli"
    mqadmin(cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", group)
    for bd in admin.examine_topic_route_info(TOPIC).broker_datas:
        for queue_id in range(4):
            admin.update_consumer_offset(bd.master_addr, group, TOPIC, queue_id, 0)
    backlog = sum_diff(admin, group)
    assert backlog >= len(sent)  # every message of the topic, whichever other tests sent some too
    result = mqadmin_json(cluster, "skipAccumulatedMessage", "-g", group, "-t", TOPIC)
    assert result["online"] is False  # no consumer online: the committed offsets were rewritten directly
    assert sum(q["skipped"] for q in result["queues"]) == backlog
    assert sum_diff(admin, group) == 0
    out = mqadmin(cluster, "skipAccumulatedMessage", "-g", group, "-t", TOPIC)
    assert out.startswith(f"No consumer of [{group}] is online") and "#skipped" in out


def sum_diff(admin: MQAdmin, group: str) -> int:
    """The group's backlog on TOPIC, from each master's consume stats of the topic."""
    diff = 0
    for bd in admin.examine_topic_route_info(TOPIC).broker_datas:
        stats = admin.get_consume_stats(bd.master_addr, group, TOPIC)
        diff += sum(o.broker_offset - o.consumer_offset for o in stats.offset_table.values())
    return diff
