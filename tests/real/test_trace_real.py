"""Message trace written by the real Java client (rocketmq-client 4.9.4 and 5.5.0 with enableMsgTrace,
java/TraceTraffic.java run in source-file mode against each release's jars) on the session's real brokers of the same
release, read back by monitor.trace.reader and printed by ``manage.py mqadmin queryMsgTraceById`` exactly as that
release's mqadmin prints it.

The trace topic is a custom one: RMQ_SYS_TRACE_TOPIC is a system topic that only a broker started with
traceTopicEnable creates, and the session's brokers are not.
"""

from __future__ import annotations

import io
import json
import os
import subprocess

import pytest
from django.core.management import call_command

from monitor.launcher.process import JAVA_OPENS
from monitor.remoting import body as b
from monitor.trace import reader
from monitor.trace.timeline import MessageTimeline
from tests.real import mqadmin_tables as java
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TOPIC = "TopicTraceReal"
TRACE_TOPIC = "TraceTopicReal"
PRODUCER, CONSUMER = "pg_trace_real", "cg_trace_real"
COUNT = 5
JAVA_SOURCE = java.JAVA_SOURCE.parent / "TraceTraffic.java"


def run_traffic(cluster, workdir) -> list[list[str]]:
    """TraceTraffic.java's printed lines, split in words."""
    command = [
        "java",
        "-Xms32m",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:-UsePerfData",
        f"-Duser.home={workdir}",
        f"-Drocketmq.client.logRoot={workdir / 'logs'}",
        *JAVA_OPENS,
        "-cp",
        cluster.release.classpath,
        str(JAVA_SOURCE),
        cluster.namesrv_addr,
        TOPIC,
        PRODUCER,
        CONSUMER,
        str(COUNT),
        TRACE_TOPIC,
    ]
    env = {**os.environ, "ROCKETMQ_HOME": str(cluster.home)}
    done = subprocess.run(command, env=env, cwd=workdir, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [
        line.split() for line in done.stdout.splitlines() if line.startswith(("SENT ", "TRANSACTION ", "CONSUMED "))
    ]


@pytest.fixture(scope="module", params=["4", "5"], ids=["4.9.4", "5.5.0"])
def real(request):
    return request.getfixturevalue(f"rocketmq{request.param}")


@pytest.fixture(scope="module")
def traffic(real, tmp_path_factory) -> dict:
    with real.admin(timeout=15.0) as admin:
        broker = real.broker("broker-a").addr
        admin.create_and_update_topic_config(
            broker, b.TopicConfig(topic_name=TOPIC, read_queue_nums=4, write_queue_nums=4)
        )
        admin.create_and_update_topic_config(
            broker, b.TopicConfig(topic_name=TRACE_TOPIC, read_queue_nums=1, write_queue_nums=1)
        )
        wait_for(lambda: admin.examine_topic_route_info(TRACE_TOPIC).queue_datas, 30, f"route of {TRACE_TOPIC}")
    lines = run_traffic(real, tmp_path_factory.mktemp("trace-traffic"))
    sent = {words[3]: {"msg_id": words[1], "offset_msg_id": words[2]} for words in lines if words[0] == "SENT"}
    (tx,) = [words for words in lines if words[0] == "TRANSACTION"]
    consumed = [(words[1], int(words[2])) for words in lines if words[0] == "CONSUMED"]
    return {"sent": sent, "transaction": tx[1], "consumed": consumed}


def read_until(cluster, msg_id: str, complete) -> MessageTimeline:
    with cluster.admin(timeout=15.0) as admin:

        def attempt():
            timeline = reader.read_timeline(admin, msg_id, trace_topic=TRACE_TOPIC)
            return timeline if complete(timeline) else None

        return wait_for(attempt, timeout=60, what=f"the complete trace of {msg_id}", interval=1.0)


def test_a_traced_send_and_its_retried_consume_read_as_one_timeline(real, traffic):
    message = traffic["sent"]["KEY_1"]
    timeline = read_until(
        real,
        message["msg_id"],
        lambda t: len(t.pubs) == 1 and sum(leg.done for leg in t.consumers.get(CONSUMER, [])) == 2,
    )
    (pub,) = timeline.pubs
    assert (pub.producer_group, pub.topic, pub.tags, pub.keys) == (PRODUCER, TOPIC, "TagA", "KEY_1")
    assert (pub.success, pub.msg_type, pub.offset_msg_id) == (True, "Normal_Msg", message["offset_msg_id"])
    assert pub.store_host == real.broker("broker-a").addr and pub.client_host and pub.cost_ms >= 0
    first, retry = timeline.consumers[CONSUMER]
    assert (first.retry_times, first.success, first.context_name) == (0, False, "FAILED")
    assert (retry.retry_times, retry.success, retry.context_name) == (1, True, "SUCCESS")
    assert first.time >= pub.send_time and retry.time > first.finished_time >= first.time
    assert first.client_host == pub.client_host  # same machine, same IP
    assert timeline.missing_legs([CONSUMER, "cg_never_started"]) == ["cg_never_started"]
    assert timeline.slow_legs(0) and timeline.malformed == []


def test_a_message_s_trace_is_found_by_its_key_too(real, traffic):
    msg_id = traffic["sent"]["KEY_2"]["msg_id"]
    read_until(real, msg_id, lambda t: t.pubs and any(leg.done for leg in t.consumers.get(CONSUMER, [])))
    with real.admin(timeout=15.0) as admin:
        by_key = reader.read_timelines_by_key(admin, "KEY_2", trace_topic=TRACE_TOPIC)
    assert list(by_key) == [msg_id]
    assert [pub.keys for pub in by_key[msg_id].pubs] == ["KEY_2"] and by_key[msg_id].consumed_by() == [CONSUMER]


def test_a_transactional_message_has_its_end_transaction_in_the_timeline(real, traffic):
    tx = traffic["transaction"]
    timeline = read_until(
        real, tx, lambda t: t.end_transactions and any(leg.done for leg in t.consumers.get(CONSUMER, []))
    )
    (end,) = timeline.end_transactions
    assert (end.producer_group, end.transaction_state, end.transaction_id) == (
        f"{PRODUCER}_tx",
        "COMMIT_MESSAGE",
        tx,  # the client takes the message id (UNIQ_KEY) as the transaction id
    )
    assert end.from_transaction_check is False and end.msg_type == "Trans_msg_Commit"
    assert [pub.msg_type for pub in timeline.pubs] == ["Trans_Msg_Half"]


def test_query_msg_trace_by_id_prints_what_the_real_mqadmin_prints(real, traffic):
    msg_id = traffic["sent"]["KEY_1"]["msg_id"]
    read_until(real, msg_id, lambda t: sum(leg.done for leg in t.consumers.get(CONSUMER, [])) == 2)
    out = io.StringIO()
    call_command("mqadmin", "queryMsgTraceById", "-n", real.namesrv_addr, "-i", msg_id, "-t", TRACE_TOPIC, stdout=out)
    (theirs,) = java.run_batch(real, [["queryMsgTraceById", "-i", msg_id, "-t", TRACE_TOPIC]])
    assert "#ProducerGroup" in out.getvalue() and f"Sub        {CONSUMER}" in out.getvalue()
    # mqadmin prints the trace messages in the order the broker's index answers: compare the rows as sets
    assert sorted(out.getvalue().splitlines()) == sorted(theirs.stdout.splitlines())
    as_json = io.StringIO()
    call_command(
        "mqadmin",
        "queryMsgTraceById",
        "-n",
        real.namesrv_addr,
        "-i",
        msg_id,
        "-t",
        TRACE_TOPIC,
        "--json",
        stdout=as_json,
    )
    data = json.loads(as_json.getvalue())
    assert data["msgId"] == msg_id and [leg["retryTimes"] for leg in data["consumers"][CONSUMER]] == [0, 1]
