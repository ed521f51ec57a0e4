"""The message subcommands of ``manage.py mqadmin`` on a real RocketMQ 4.9.4 cluster (the session's ``rocketmq4``).

A message sent with this CLI's sendMessage is found by every query (its ``--json`` carrying every field the
captured real answers carry), and the real mqadmin of the release finds it by its unique key too: the send is a
Java producer's send as far as the broker and the Java tools can tell.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.monitor.test_messages_present import real_record_fields
from tests.real import mqadmin_tables as java
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TOPIC = "TopicCliMessages"
JSON_FIELDS = real_record_fields() | {"msgId", "offsetMsgId", "keys", "tags", "brokerName", "body", "bodyText"}


def ours(cluster, subcommand: str, *args: str) -> str:
    out = io.StringIO()
    call_command("mqadmin", subcommand, "-n", cluster.namesrv_addr, "--timeout", "15", *args, stdout=out)
    return out.getvalue()


def ours_json(cluster, subcommand: str, *args: str):
    return json.loads(ours(cluster, subcommand, *args, "--json"))


def indexed(cluster, msg_id: str) -> list[dict]:
    try:
        return ours_json(cluster, "queryMsgByUniqueKey", "-i", msg_id, "-t", TOPIC)
    except CommandError:  # not indexed yet
        return []


@pytest.fixture(scope="module")
def sent(rocketmq4) -> dict:
    ours(rocketmq4, "updateTopic", "-c", "DefaultCluster", "-t", TOPIC, "-r", "4", "-w", "4")
    return ours_json(rocketmq4, "sendMessage", "-t", TOPIC, "-p", "hello real broker", "-k", "KEY_real", "-c", "TagR")


def test_a_sent_message_is_found_by_its_unique_key_by_both_tools(rocketmq4, sent):
    assert sent["status"] == "SEND_OK" and sent["brokerName"] == "broker-a"
    # The broker indexes a message shortly after storing it (the index is built by the reput thread).
    (view,) = wait_for(lambda: indexed(rocketmq4, sent["msgId"]), timeout=10, what="the message in the index")
    assert view.keys() >= JSON_FIELDS
    assert (view["msgId"], view["offsetMsgId"], view["queueId"], view["queueOffset"]) == (
        sent["msgId"], sent["offsetMsgId"], sent["queueId"], sent["queueOffset"]
    )  # fmt: skip
    assert (view["keys"], view["tags"], view["bodyText"], view["topic"]) == (
        "KEY_real",
        "TagR",
        "hello real broker",
        TOPIC,
    )
    assert view["storeHost"] == rocketmq4.broker().addr and view["bodyCRC"] is not None
    result = rocketmq4.mqadmin("queryMsgByUniqueKey", "-i", sent["msgId"], "-t", TOPIC)
    assert result.returncode == 0, result.stderr
    fields = java.message(result.stdout)
    assert (fields["Topic"], fields["Tags"], fields["Keys"]) == (TOPIC, "[TagR]", "[KEY_real]")
    assert (fields["Queue ID"], fields["Queue Offset"]) == (str(sent["queueId"]), str(sent["queueOffset"]))


def test_every_query_writes_every_field_the_real_broker_sends(rocketmq4, sent):
    wait_for(lambda: indexed(rocketmq4, sent["msgId"]), timeout=10, what="the message in the index")
    answers = {
        "queryMsgByKey": ours_json(rocketmq4, "queryMsgByKey", "-t", TOPIC, "-k", "KEY_real"),
        "queryMsgById": ours_json(rocketmq4, "queryMsgById", "-i", sent["offsetMsgId"]),
        "queryMsgByOffset": ours_json(
            rocketmq4, "queryMsgByOffset", "-t", TOPIC, "-b", "broker-a", "-i", str(sent["queueId"]), "-o",
            str(sent["queueOffset"]),
        ),
    }  # fmt: skip
    for name, answer in answers.items():
        (view,) = answer
        assert view.keys() >= JSON_FIELDS, name
        assert (view["offsetMsgId"], view["bodyText"], view["brokerName"]) == (
            sent["offsetMsgId"], "hello real broker", "broker-a"
        ), name  # fmt: skip
        assert view["storeTimestamp"] >= view["bornTimestamp"] > 0, name
    assert "tracks" in answers["queryMsgById"][0] and answers["queryMsgById"][0]["trackError"] is None


def test_print_msg_and_consume_message_read_it_from_its_queue(rocketmq4, sent):
    reads = ours_json(rocketmq4, "printMsg", "-t", TOPIC, "-s", "TagR")
    assert [m["msgId"] for read in reads for m in read["messages"]] == [sent["msgId"]]
    (read,) = ours_json(
        rocketmq4, "consumeMessage", "-t", TOPIC, "-b", "broker-a", "-i", str(sent["queueId"]), "-o",
        str(sent["queueOffset"]), "-c", "1",
    )  # fmt: skip
    assert [m["bodyText"] for m in read["messages"]] == ["hello real broker"]
