"""``manage.py mqadmin`` end to end against the replayed RocketMQ 4.9.4 cluster.

Every subcommand runs as an operator would run it and must print what the captured frames hold (tables and
``--json``), and every request that mqadmin itself was captured sending must go out with the same code and
extFields. The tests sign with mqadmin's credentials (rocketmq2 / 12345678, the distribution's tools.yml), so an
identical Signature proves every extFields value and the body are byte for byte what mqadmin sent. Failures must
be one line on stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import enum
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from monitor.mqadmin.output import render_table, to_jsonable
from monitor.remoting import body as b
from monitor.remoting.acl import UNIQUE_MSG_QUERY_FLAG, verify_signature
from monitor.remoting.codes import RequestCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.message import create_offset_msg_id
from tests.replay import Exchange, ReplayCluster, load_exchanges, plain_ext
from tests.support.network import free_port

ROOT = Path(__file__).resolve().parents[2]
EXCHANGES = load_exchanges()
MQADMIN_ACL = ["--access-key", "rocketmq2", "--secret-key", "12345678"]
JAVA_CLIENT = "127.0.0.1@28238#7787385373909"
CPP_CLIENT = "28364-127.0.0.1@DEFAULT"


@pytest.fixture(scope="module")
def cluster():
    with ReplayCluster() as replay:
        yield replay


@pytest.fixture(autouse=True)
def fresh(cluster):
    cluster.received.clear()
    cluster.prefer()


@dataclass
class Run:
    stdout: str
    error: CommandError | None


def run(cluster: ReplayCluster, subcommand: str, *args: str, acl: bool = True) -> Run:
    """The subcommand against the replay, signed like mqadmin; options in `args` override these defaults."""
    out, err = io.StringIO(), io.StringIO()
    defaults = ["-n", cluster.namesrv_addr, "--timeout", "2", *(MQADMIN_ACL if acl else [])]
    try:
        call_command("mqadmin", subcommand, *defaults, *args, stdout=out, stderr=err)
    except CommandError as exc:
        return Run(out.getvalue(), exc)
    return Run(out.getvalue(), None)


def mqadmin(cluster: ReplayCluster, *args: str, acl: bool = True) -> str:
    result = run(cluster, *args, acl=acl)
    assert result.error is None, result.error
    return result.stdout


def mqadmin_json(cluster: ReplayCluster, *args: str):
    return json.loads(mqadmin(cluster, *args, "--json"))


def fails(cluster: ReplayCluster, *args: str) -> Run:
    result = run(cluster, *args)
    assert result.error is not None, f"expected a failure, got:\n{result.stdout}"
    assert "\n" not in str(result.error)
    return result


def sent(cluster: ReplayCluster, code: int, role: str | None = None) -> list[RemotingCommand]:
    return [cmd for r, cmd in cluster.received if cmd.code == code and (role is None or r == role)]


def assert_sent_as_captured(cluster: ReplayCluster, fixture: str) -> RemotingCommand:
    """A request went to the captured server role with mqadmin's extFields, Signature included."""
    exchange = EXCHANGES[fixture]
    captured = exchange.request
    matching = [
        cmd for cmd in sent(cluster, captured.code, exchange.server_role) if plain_ext(cmd) == plain_ext(captured)
    ]
    assert matching, (
        f"no {fixture} request like {plain_ext(captured)} in {[plain_ext(c) for c in sent(cluster, captured.code)]}"
    )
    if captured.ext("AccessKey") == "rocketmq2":
        if captured.ext(UNIQUE_MSG_QUERY_FLAG) is None:
            assert matching[-1].ext("Signature") == captured.ext("Signature")
        else:  # brokers check QUERY_MESSAGE signatures without this flag, which mqadmin signs (see acl.py)
            assert verify_signature(matching[-1], "12345678")
    return matching[-1]


def rows(text: str, first: str) -> list[list[str]]:
    """Table lines starting with `first`, split into cells on runs of two or more spaces."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.startswith(first)]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "mqadmin", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings"},
    )


# --- cluster and brokers --------------------------------------------------------------------------------------------


def test_cluster_list_shows_master_and_slave_with_their_runtime_figures(cluster):
    out = mqadmin(cluster, "clusterList")
    assert out.splitlines()[0].split() == [
        "#Cluster", "Name", "#Broker", "Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
        "#PCWait(ms)", "#Hour", "#SPACE",
    ]  # fmt: skip
    master, slave = rows(out, "DefaultCluster")
    assert master[:6] == ["DefaultCluster", "broker-a", "0", cluster.master_addr, "V4_9_4", "9.80(0,0ms)"]
    assert master[6] == "8.40(0,0ms)" and master[-1] == "0.2600"
    assert slave[:5] == ["DefaultCluster", "broker-a", "1", cluster.slave_addr, "V4_9_4"]
    assert_sent_as_captured(cluster, "GET_BROKER_CLUSTER_INFO")
    assert_sent_as_captured(cluster, "GET_BROKER_RUNTIME_INFO")
    assert_sent_as_captured(cluster, "GET_BROKER_RUNTIME_INFO_slave")


def test_cluster_list_more_stats_and_json(cluster):
    master = rows(mqadmin(cluster, "clusterList", "-m"), "DefaultCluster")[0]
    assert master == ["DefaultCluster", "broker-a", "0", "0", "6247", "5760"]  # msgPut/GetTotalTodayNow - morning
    brokers = mqadmin_json(cluster, "clusterList")["brokers"]
    assert [(r["brokerName"], r["brokerId"], r["addr"], r["version"]) for r in brokers] == [
        ("broker-a", 0, cluster.master_addr, "V4_9_4"),
        ("broker-a", 1, cluster.slave_addr, "V4_9_4"),
    ]
    assert brokers[0]["inTps"] == pytest.approx(9.797, abs=1e-3) and brokers[0]["inTotalToday"] == 6247
    assert brokers[0]["earliestMessageTimeStamp"] == -1  # as the broker reports it: its commit log is under 8 MB


def test_broker_status_of_one_broker_and_of_a_cluster(cluster):
    out = mqadmin(cluster, "brokerStatus", "-b", cluster.master_addr)
    assert "brokerVersionDesc               : V4_9_4" in out
    assert "msgPutTotalTodayNow             : 6247" in out
    assert_sent_as_captured(cluster, "GET_BROKER_RUNTIME_INFO")
    out = mqadmin(cluster, "brokerStatus", "-c", "DefaultCluster")
    assert f"{cluster.master_addr:<24} msgPutTotalTodayNow" in out
    assert f"{cluster.slave_addr:<24} brokerVersionDesc" in out
    assert mqadmin_json(cluster, "brokerStatus", "-b", cluster.master_addr)[cluster.master_addr]["putTps"].startswith(
        "9.797"
    )


def test_broker_that_refuses_the_connection_is_one_line_error(cluster):
    addr = f"127.0.0.1:{free_port()}"
    result = fails(cluster, "brokerStatus", "-b", addr)
    assert str(result.error).startswith(f"brokerStatus: connect to {addr} failed")


def test_get_broker_config_of_a_cluster_lists_master_then_slave(cluster):
    out = mqadmin(cluster, "getBrokerConfig", "-c", "DefaultCluster")
    master_part, slave_part = out.split(f"============My Master: {cluster.master_addr}=====Slave: {cluster.slave_addr}")
    assert f"============Master: {cluster.master_addr}============" in master_part
    assert f"{'brokerRole':<50}=  ASYNC_MASTER" in master_part
    assert f"{'brokerRole':<50}=  SLAVE" in slave_part
    assert_sent_as_captured(cluster, "GET_BROKER_CONFIG")
    assert_sent_as_captured(cluster, "GET_BROKER_CONFIG_slave")


def test_get_namesrv_config(cluster):
    out = mqadmin(cluster, "getNamesrvConfig")
    assert out.startswith(f"============{cluster.namesrv_addr}============")
    assert f"{'listenPort':<50}=  9876" in out
    assert_sent_as_captured(cluster, "GET_NAMESRV_CONFIG")
    assert mqadmin_json(cluster, "getNamesrvConfig")[cluster.namesrv_addr]["rocketmqHome"] == "/opt/rocketmq"


# --- topics ---------------------------------------------------------------------------------------------------------


def test_topic_list_plain_and_by_cluster(cluster):
    assert "TopicTest" in mqadmin(cluster, "topicList").splitlines()
    assert_sent_as_captured(cluster, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER")
    assert ["DefaultCluster", "TopicTest", "cg_test"] in rows(mqadmin(cluster, "topicList", "-c"), "DefaultCluster")
    assert_sent_as_captured(cluster, "QUERY_TOPIC_CONSUME_BY_WHO")


def test_topic_route_table_and_json(cluster):
    out = mqadmin(cluster, "topicRoute", "-t", "TopicTest")
    addrs = f"{{0={cluster.master_addr}, 1={cluster.slave_addr}}}"
    assert rows(out, "DefaultCluster") == [["DefaultCluster", "broker-a", addrs, "8", "8", "6"]]
    assert rows(out, "Total:") == [["Total:", "1", "8", "8"]]
    assert_sent_as_captured(cluster, "GET_ROUTEINFO_BY_TOPIC")
    route = mqadmin_json(cluster, "topicRoute", "-t", "TopicTest")
    assert route["brokerDatas"] == [
        {
            "cluster": "DefaultCluster",
            "brokerName": "broker-a",
            "brokerAddrs": {"0": cluster.master_addr, "1": cluster.slave_addr},
            "enableActingMaster": None,  # RocketMQ 5 only
        }
    ]
    assert route["queueDatas"][0] == {
        "brokerName": "broker-a",
        "readQueueNums": 8,
        "writeQueueNums": 8,
        "perm": 6,
        "topicSysFlag": 0,
    }


def test_unknown_topic_is_one_line_error(cluster):
    result = fails(cluster, "topicRoute", "-t", "NoSuchTopic")
    assert str(result.error).startswith(
        f"topicRoute: TOPIC_NOT_EXIST (17) to GET_ROUTEINFO_BY_TOPIC from {cluster.namesrv_addr}: "
        "No topic route info in name server for the topic: NoSuchTopic See http://rocketmq.apache.org/docs/faq/"
    )
    assert result.error.returncode == 1
    assert_sent_as_captured(cluster, "GET_ROUTEINFO_BY_TOPIC_topic_not_exist")


def test_topic_status(cluster):
    table = rows(mqadmin(cluster, "topicStatus", "-t", "TopicTest"), "broker-a")
    assert [(r[1], r[2], r[3]) for r in table] == [
        ("0", "0", "651"), ("1", "0", "651"), ("2", "0", "651"), ("3", "0", "652"),
        ("4", "0", "653"), ("5", "0", "652"), ("6", "0", "651"), ("7", "0", "651"),
    ]  # fmt: skip
    assert table[0][4].startswith("2026-11-2")  # last update, local time
    status = mqadmin_json(cluster, "topicStatus", "-t", "TopicTest")
    assert (status["totalMinOffset"], status["totalMaxOffset"], status["totalMessages"]) == (0, 5212, 5212)
    assert_sent_as_captured(cluster, "GET_TOPIC_STATS_INFO")


def test_update_topic_on_a_cluster_creates_it_on_the_master_only(cluster):
    out = mqadmin(cluster, "updateTopic", "-c", "DefaultCluster", "-t", "TopicTest", "-r", "8", "-w", "8")
    assert out.splitlines() == [
        f"create topic to {cluster.master_addr} success.",
        "TopicConfig [topicName=TopicTest, readQueueNums=8, writeQueueNums=8, perm=RW-, topicFilterType=SINGLE_TAG,"
        " topicSysFlag=0, order=false]",
    ]
    assert_sent_as_captured(cluster, "UPDATE_AND_CREATE_TOPIC")
    assert sent(cluster, RequestCode.UPDATE_AND_CREATE_TOPIC, "slave") == []


def test_update_ordered_topic_reports_the_order_conf_it_could_not_set(cluster):
    # No capture holds GET_KV_CONFIG, and like the real one the replayed name server never answers an unknown code.
    result = run(cluster, "updateTopic", "-b", cluster.master_addr, "-t", "TopicTest", "-o", "true", "--timeout", "0.3")
    assert result.stdout.startswith(f"create topic to {cluster.master_addr} success.")
    assert str(result.error) == (
        f"updateTopic: topic created, but its orderConf was not set: GET_KV_CONFIG to {cluster.namesrv_addr} "
        "timed out after 0.3s"
    )
    (query,) = sent(cluster, RequestCode.GET_KV_CONFIG, "namesrv")
    assert plain_ext(query) == {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest"}
    assert sent(cluster, RequestCode.UPDATE_AND_CREATE_TOPIC)[0].ext("order") == "true"


def test_delete_topic_from_a_cluster_asks_the_masters_then_the_name_servers(cluster):
    out = mqadmin(cluster, "deleteTopic", "-c", "DefaultCluster", "-t", "TopicTmpDel")
    assert out.splitlines() == [
        f"delete topic [TopicTmpDel] from broker [{cluster.master_addr}] success.",
        "delete topic [TopicTmpDel] from cluster [DefaultCluster] success.",
        "delete topic [TopicTmpDel] from NameServer success.",
    ]
    assert_sent_as_captured(cluster, "DELETE_TOPIC_IN_BROKER")
    assert sent(cluster, RequestCode.DELETE_TOPIC_IN_BROKER, "slave") == []  # a slave refuses it
    (namesrv,) = sent(cluster, RequestCode.DELETE_TOPIC_IN_NAMESRV, "namesrv")
    assert plain_ext(namesrv) == {"topic": "TopicTmpDel", "clusterName": "DefaultCluster"}


def test_delete_topic_from_one_broker_leaves_the_name_servers(cluster):
    out = mqadmin(cluster, "deleteTopic", "-b", cluster.master_addr, "-t", "TopicTmpDel")
    assert out.startswith(f"delete topic [TopicTmpDel] from broker [{cluster.master_addr}] success.")
    assert_sent_as_captured(cluster, "DELETE_TOPIC_IN_BROKER")
    assert sent(cluster, RequestCode.DELETE_TOPIC_IN_NAMESRV) == []


# --- subscription groups --------------------------------------------------------------------------------------------


def test_update_sub_group_sends_mqadmins_body(cluster):
    out = mqadmin(cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", "cg_test")
    assert out.splitlines()[0] == f"create subscription group to {cluster.master_addr} success."
    assert "consumeBroadcastEnable=false, retryQueueNums=1, retryMaxTimes=16" in out
    request = assert_sent_as_captured(cluster, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP")
    assert request.body == EXCHANGES["UPDATE_AND_CREATE_SUBSCRIPTIONGROUP"].request.body


@pytest.fixture
def delete_sub_group_answered(cluster):
    """No capture holds DELETE_SUBSCRIPTIONGROUP; the broker answers it with the same empty SUCCESS frame as
    DELETE_TOPIC_IN_BROKER, so that answer stands in for it (for group cg_x only)."""
    answer = EXCHANGES["DELETE_TOPIC_IN_BROKER"]
    ext_fields = {"groupName": "cg_x", "removeOffset": "true", "cleanOffset": "true"}  # cleanOffset: RocketMQ 5's name
    request = RemotingCommand(RequestCode.DELETE_SUBSCRIPTIONGROUP, ext_fields=ext_fields)
    cluster.exchanges["DELETE_SUBSCRIPTIONGROUP_stand_in"] = Exchange("stand_in", answer.data, request, answer.response)
    yield
    del cluster.exchanges["DELETE_SUBSCRIPTIONGROUP_stand_in"]


def test_delete_sub_group_from_a_cluster_also_deletes_its_retry_and_dlq_topics(cluster, delete_sub_group_answered):
    out = mqadmin(cluster, "deleteSubGroup", "-c", "DefaultCluster", "-g", "cg_x", "-r", "true")
    assert out.splitlines() == [
        f"delete subscription group [cg_x] from broker [{cluster.master_addr}] in cluster [DefaultCluster] success.",
        f"delete topic [%RETRY%cg_x] from broker [{cluster.master_addr}] success.",
        "delete topic [%RETRY%cg_x] from cluster [DefaultCluster] success.",
        "delete topic [%RETRY%cg_x] from NameServer success.",
        f"delete topic [%DLQ%cg_x] from broker [{cluster.master_addr}] success.",
        "delete topic [%DLQ%cg_x] from cluster [DefaultCluster] success.",
        "delete topic [%DLQ%cg_x] from NameServer success.",
    ]
    assert [cmd.ext("topic") for cmd in sent(cluster, RequestCode.DELETE_TOPIC_IN_BROKER, "master")] == [
        "%RETRY%cg_x",
        "%DLQ%cg_x",
    ]


def test_delete_sub_group_refused_by_the_broker_keeps_its_topics(cluster):
    result = fails(cluster, "deleteSubGroup", "-c", "DefaultCluster", "-g", "cg_y")
    assert str(result.error).startswith(
        f"deleteSubGroup: SYSTEM_ERROR (1) to DELETE_SUBSCRIPTIONGROUP from {cluster.master_addr}"
    )
    assert str(result.error).endswith("; retry and dead-letter topics kept")
    (request,) = sent(cluster, RequestCode.DELETE_SUBSCRIPTIONGROUP, "master")
    assert plain_ext(request) == {"groupName": "cg_y", "removeOffset": "false"}
    assert sent(cluster, RequestCode.DELETE_TOPIC_IN_BROKER) == []


# --- consumers and producers ----------------------------------------------------------------------------------------


def test_consumer_progress_of_a_group(cluster):
    out = mqadmin(cluster, "consumerProgress", "-g", "cg_test")
    queues = rows(out, "%RETRY%") + rows(out, "TopicTest")
    assert len(queues) == 9
    assert queues[0][:6] == ["%RETRY%cg_test", "broker-a", "0", "461", "461", "0"]
    assert [q[3] for q in queues[1:]] == ["651", "651", "651", "652", "653", "652", "651", "651"]
    assert "Consume TPS: 27.68\nDiff Total: 0" in out
    assert_sent_as_captured(cluster, "GET_CONSUME_STATS")
    assert [cmd.ext("topic") for cmd in sent(cluster, RequestCode.GET_ROUTEINFO_BY_TOPIC)] == ["%RETRY%cg_test"]

    progress = mqadmin_json(cluster, "consumerProgress", "-g", "cg_test")
    assert progress["queues"][0] == {
        "topic": "%RETRY%cg_test", "brokerName": "broker-a", "queueId": 0, "brokerOffset": 461, "consumerOffset": 461,
        "diff": 0, "lastTimestamp": 1795308865274, "clientIp": None, "inflight": None,
    }  # fmt: skip
    assert progress["consumeTps"] == pytest.approx(27.683, abs=1e-3) and progress["diffTotal"] == 0


def test_consumer_progress_with_client_ips_and_of_every_group(cluster):
    out = mqadmin(cluster, "consumerProgress", "-g", "cg_test", "-s", "true")
    ips = {q[2]: q[5] for q in rows(out, "TopicTest")}
    assert ips["0"] == "127.0.0.1" and ips["7"] == "28364-127.0.0.1"  # the Java and the C++ consumer
    assert_sent_as_captured(cluster, "GET_CONSUMER_RUNNING_INFO")
    assert_sent_as_captured(cluster, "GET_CONSUMER_RUNNING_INFO_cpp_client")
    # The captured topic list holds no %RETRY% topic, so there is no group to list.
    assert mqadmin(cluster, "consumerProgress").split() == [
        "#Group",
        "#Count",
        "#Version",
        "#Type",
        "#Model",
        "#TPS",
        "#Diff",
        "Total",
    ]


def test_consumer_connection(cluster):
    out = mqadmin(cluster, "consumerConnection", "-g", "cg_test")
    assert rows(out, JAVA_CLIENT) == [[JAVA_CLIENT, "127.0.0.1:39294", "JAVA", "V4_9_4"]]
    assert rows(out, CPP_CLIENT) == [[CPP_CLIENT, "127.0.0.1:39302", "CPP", "V3_1_8"]]
    assert rows(out, "TopicTest") == [["TopicTest", "*"]]
    assert "ConsumeType: CONSUME_PASSIVELY\nMessageModel: CLUSTERING\n" in out
    assert_sent_as_captured(cluster, "GET_CONSUMER_CONNECTION_LIST")
    connections = mqadmin_json(cluster, "consumerConnection", "-g", "cg_test")["connections"]
    assert connections[1] == {
        "clientId": CPP_CLIENT,
        "clientAddr": "127.0.0.1:39302",
        "language": "CPP",
        "version": 63,
        "versionDesc": "V3_1_8",
    }


def test_consumer_not_online_exits_non_zero_with_one_line(cluster):
    cluster.prefer("GET_CONSUMER_CONNECTION_LIST_not_online")
    proc = run_cli("consumerConnection", "-g", "cg_test", "-n", cluster.namesrv_addr, *MQADMIN_ACL)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        f"CommandError: consumerConnection: CONSUMER_NOT_ONLINE (206) to GET_CONSUMER_CONNECTION_LIST from "
        f"{cluster.master_addr}: the consumer group[cg_test] not online\n"
    )


def test_consumer_status_of_every_client_and_of_one(cluster):
    out = mqadmin(cluster, "consumerStatus", "-g", "cg_test")
    assert rows(out, "     1") + rows(out, "     2") == [
        ["1", JAVA_CLIENT, "V4_9_4", "OK"],
        ["2", CPP_CLIENT, "V3_1_8", "OK"],
    ]
    assert "Same subscription in the same group of consumer\n\nRebalance OK" in out

    out = mqadmin(cluster, "consumerStatus", "-g", "cg_test", "-i", JAVA_CLIENT)
    assert f"{'PROP_CLIENT_VERSION':<40}: V4_9_4" in out
    assert "001 Topic: %RETRY%cg_test" in out
    assert rows(out, "%RETRY%cg_test")[0] == ["%RETRY%cg_test", "broker-a", "0", "461"]  # the consumer's offset
    assert_sent_as_captured(cluster, "GET_CONSUMER_RUNNING_INFO")

    info = mqadmin_json(cluster, "consumerStatus", "-g", "cg_test", "-i", CPP_CLIENT)
    assert info["properties"]["PROP_CLIENT_VERSION"] == "V3_1_8"
    first = info["mqTable"][0]
    assert first["key"] == {"topic": "TopicTest", "brokerName": "broker-a", "queueId": 4}
    assert first["value"]["commitOffset"] == 653


def test_producer_connection(cluster):
    out = mqadmin(cluster, "producerConnection", "-g", "pg_slow", "-t", "TopicTest")
    assert rows(out, "0001") == [["0001", "31942-127.0.0.1@DEFAULT", "127.0.0.1:49870", "CPP", "V3_1_8"]]
    assert_sent_as_captured(cluster, "GET_PRODUCER_CONNECTION_LIST")


# --- offsets --------------------------------------------------------------------------------------------------------


def test_reset_offset_by_time_through_the_brokers(cluster):
    out = mqadmin(cluster, "resetOffsetByTime", "-g", "cg_test", "-t", "TopicTest", "-s", "1795309196000")
    assert out.splitlines()[0] == (
        "rollback consumer offset by specified group[cg_test], topic[TopicTest], force[true], "
        "timestamp(string)[1795309196000], timestamp(long)[1795309196000]"
    )
    assert [r[1:] for r in rows(out, "broker-a")] == [
        ["0", "902"], ["1", "902"], ["2", "902"], ["3", "903"], ["4", "904"], ["5", "902"], ["6", "901"], ["7", "901"]
    ]  # fmt: skip
    assert_sent_as_captured(cluster, "INVOKE_BROKER_TO_RESET_OFFSET")


def test_reset_offset_by_time_falls_back_when_no_consumer_is_online(cluster):
    cluster.prefer("INVOKE_BROKER_TO_RESET_OFFSET_consumer_not_online")
    out = mqadmin(cluster, "resetOffsetByTime", "-g", "cg_test", "-t", "TopicTest", "-s", "1795309422000")
    assert out.startswith("No consumer of the group is online (Consumer not online, so can not reset offset,")
    assert "(resetOffsetByTimeOld)" in out
    table = rows(out, "broker-a")
    assert len(table) == 8
    assert table[7] == ["broker-a", "7", "651", "651", "1179", "1179"]
    assert_sent_as_captured(cluster, "INVOKE_BROKER_TO_RESET_OFFSET_consumer_not_online")
    assert_sent_as_captured(cluster, "SEARCH_OFFSET_BY_TIMESTAMP")
    assert_sent_as_captured(cluster, "GET_CONSUME_STATS")  # the group's offsets, not filtered by topic
    commits = sent(cluster, RequestCode.UPDATE_CONSUMER_OFFSET, "master")
    assert sorted(int(c.ext("queueId")) for c in commits) == list(range(8))
    assert {plain_ext(c)["commitOffset"] for c in commits} == {"1179"}


def test_reset_offset_rejects_a_malformed_time(cluster):
    result = fails(cluster, "resetOffsetByTime", "-g", "cg_test", "-t", "TopicTest", "-s", "yesterday")
    assert "is not now, epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS" in str(result.error)
    assert cluster.received == []


# --- stats ----------------------------------------------------------------------------------------------------------


def test_stats_all_of_one_topic(cluster):
    out = mqadmin(cluster, "statsAll", "-t", "TopicTest")
    assert out.splitlines()[0].split() == [
        "#Topic", "#Consumer", "Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"
    ]  # fmt: skip
    # The capture has no GET_CONSUME_STATS filtered by topic, so the backlog is unknown ("-").
    assert rows(out, "TopicTest") == [["TopicTest", "cg_test", "-", "9.83", "9.83", "6292", "6292"]]
    assert_sent_as_captured(cluster, "VIEW_BROKER_STATS_DATA_GROUP_GET_NUMS_mqadmin_statsAll")
    put = [c for c in sent(cluster, RequestCode.VIEW_BROKER_STATS_DATA) if c.ext("statsName") == "TOPIC_PUT_NUMS"]
    assert [plain_ext(c) for c in put] == [{"statsName": "TOPIC_PUT_NUMS", "statsKey": "TopicTest"}]
    stats = mqadmin_json(cluster, "statsAll", "-t", "TopicTest")
    assert stats == [
        {
            "topic": "TopicTest",
            "inTps": pytest.approx(9.833, abs=1e-3),
            "inMsg24Hour": 6292,
            "groups": [
                {
                    "group": "cg_test",
                    "accumulation": None,
                    "outTps": pytest.approx(9.833, abs=1e-3),
                    "outMsg24Hour": 6292,
                }
            ],
        }
    ]


def test_stats_all_active_skips_keys_the_brokers_do_not_have(cluster):
    cluster.prefer("VIEW_BROKER_STATS_DATA_stats_not_exist")
    out = mqadmin(cluster, "statsAll", "-a")
    assert [r[:2] for r in rows(out, "")[1:]] == [["TopicTest", "cg_test"]]
    names = {c.ext("statsKey") for c in sent(cluster, RequestCode.VIEW_BROKER_STATS_DATA)}
    assert {"TopicTest", "TopicTest@cg_test", "BenchmarkTest", "BenchmarkTest@cg_test"} <= names


def test_broker_consume_stats(cluster):
    out = mqadmin(cluster, "brokerConsumeStats", "-b", cluster.master_addr)
    assert rows(out, "%RETRY%cg_test")[0][:7] == ["%RETRY%cg_test", "cg_test", "broker-a", "0", "477", "476", "1"]
    assert len(rows(out, "TopicTest")) == 8
    assert out.rstrip().endswith("Diff Total: 6")
    assert_sent_as_captured(cluster, "GET_BROKER_CONSUME_STATS")
    only_lagging = mqadmin_json(cluster, "brokerConsumeStats", "-b", cluster.master_addr, "-l", "1")
    assert {(q["topic"], q["queueId"]) for q in only_lagging["queues"]} == {
        ("%RETRY%cg_test", 0), ("TopicTest", 0), ("TopicTest", 1), ("TopicTest", 2), ("TopicTest", 3), ("TopicTest", 6)
    }  # fmt: skip


# --- messages -------------------------------------------------------------------------------------------------------


def test_query_msg_by_key(cluster):
    out = mqadmin(cluster, "queryMsgByKey", "-t", "TopicTest", "-k", "KEY_java_5")
    assert rows(out, "7F00") == [["7F0000016CA35FFD2B276C564148000A", "2", "375", "7F00000100002A9F00000000000A30D9"]]
    assert_sent_as_captured(cluster, "QUERY_MESSAGE")
    (found,) = mqadmin_json(cluster, "queryMsgByKey", "-t", "TopicTest", "-k", "KEY_java_5")
    assert (found["commitLogOffset"], found["bornTimestamp"], found["storeTimestamp"]) == (
        667865, 1795308792136, 1795308792137
    )  # fmt: skip
    assert (found["bodyCRC"], found["queueId"], found["bodyText"]) == (1079023859, 2, "hello from java producer #5")


def test_query_msg_by_id(cluster):
    msg_id = create_offset_msg_id(cluster.master_addr, 666780)
    out = mqadmin(cluster, "queryMsgById", "-i", msg_id)
    assert out.splitlines()[:2] == [f"{'OffsetID:':<20} 7F00000100002A9F00000000000A2C9C", f"{'Topic:':<20} TopicTest"]
    assert out.splitlines()[2:5] == [
        "Tags:                [TagA]",
        "Keys:                [KEY_java_0]",
        "Queue ID:            5",
    ]
    assert "Message Body:        hello from java producer #0" in out
    assert "MessageTrack [consumerGroup=cg_test, trackType=" in out
    assert_sent_as_captured(cluster, "VIEW_MESSAGE_BY_ID")
    (view,) = mqadmin_json(cluster, "queryMsgById", "-i", msg_id)
    assert (view["commitLogOffset"], view["queueOffset"], view["msgId"]) == (
        666780,
        375,
        "7F0000016CA35FFD2B276C5640FE0000",
    )
    assert view["bodyText"] == "hello from java producer #0"
    assert (view["bodyCRC"], view["storeSize"]) == (809135228, 217)
    assert [track["consumerGroup"] for track in view["tracks"]] == ["cg_test"]


def test_query_msg_by_id_rejects_a_producer_id_before_sending_anything(cluster):
    result = fails(cluster, "queryMsgById", "-i", "7F0000016CA35FFD2B276C5640FE0000")
    assert str(result.error) == (
        "queryMsgById: '7F0000016CA35FFD2B276C5640FE0000' is not an offset message id (port 1822646269, "
        "offset 3109573185435992064); a producer-side id (UNIQ_KEY) cannot be looked up by offset; "
        "give its topic with -t to look it up as a producer's message id (UNIQ_KEY)"
    )
    assert cluster.received == []


def test_query_msg_by_offset(cluster):
    out = mqadmin(cluster, "queryMsgByOffset", "-t", "TopicTest", "-b", "broker-a", "-i", "0", "-o", "0")
    assert "Keys:                [KEY_py_0]" in out
    assert "Message Body:        hello from python producer #0" in out
    assert_sent_as_captured(cluster, "PULL_MESSAGE_mqadmin_queryMsgByOffset")


# --- command line ---------------------------------------------------------------------------------------------------


def test_credentials_come_from_the_environment(cluster, monkeypatch):
    monkeypatch.setenv("ROCKETMQ_ACCESS_KEY", "rocketmq2")
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", "12345678")
    mqadmin(cluster, "topicRoute", "-t", "TopicTest", acl=False)
    assert_sent_as_captured(cluster, "GET_ROUTEINFO_BY_TOPIC")


def test_usage_errors(cluster):
    assert "the following arguments are required: -t/--topic" in str(fails(cluster, "topicRoute").error)
    both = fails(cluster, "updateTopic", "-b", cluster.master_addr, "-c", "DefaultCluster", "-t", "T").error
    assert "not allowed with argument" in str(both)
    assert "expected true or false" in str(
        fails(cluster, "updateTopic", "-c", "DefaultCluster", "-t", "T", "-o", "ture").error
    )
    with pytest.raises(CommandError, match="--access-key and --secret-key must be given together") as info:
        call_command("mqadmin", "topicList", "-n", cluster.namesrv_addr, "--access-key", "rocketmq2")
    assert info.value.returncode == 2
    assert cluster.received == []


def test_unknown_cluster_is_an_error_not_silence(cluster):
    result = fails(cluster, "updateSubGroup", "-c", "NoCluster", "-g", "cg_test")
    assert str(result.error) == (
        "updateSubGroup: cluster [NoCluster] is not known to the name server (clusters: DefaultCluster)"
    )
    assert sent(cluster, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) == []


def test_a_real_command_line_prints_one_line_and_exits_non_zero():
    proc = run_cli("topicRoute", "-t", "TopicTest", "-n", f"127.0.0.1:{free_port()}", "--timeout", "1")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("CommandError: topicRoute: connect to 127.0.0.1:")


# --- JSON -----------------------------------------------------------------------------------------------------------


class Colour(enum.Enum):
    RED = 1


def test_json_writes_what_json_has_no_type_for():
    mq = b.MessageQueue("TopicTest", "broker-a", 3)
    value = {
        "offsets": {mq: b.OffsetWrapper(broker_offset=5, consumer_offset=4)},
        "body": b"\x00\xff",
        "tags": {"b", "a"},
        "colour": Colour.RED,
        "byId": {0: "master"},
        "nan": float("nan"),
    }
    assert to_jsonable(value) == {
        "offsets": [
            {
                "key": {"topic": "TopicTest", "brokerName": "broker-a", "queueId": 3},
                "value": {"brokerOffset": 5, "consumerOffset": 4, "lastTimestamp": 0, "pullOffset": None},
            }
        ],
        "body": "AP8=",
        "tags": ["a", "b"],
        "colour": "RED",
        "byId": {"0": "master"},
        "nan": None,
    }
    assert to_jsonable(b.ConsumeStatus(pull_rt=1.5))["pullRT"] == 1.5  # RocketMQ's own spelling


def test_tables_right_align_numbers():
    assert render_table(["#Name", "#N"], [["a", 5], ["bbb", 10]]).splitlines() == [
        "#Name  #N",
        "a       5",
        "bbb    10",
    ]
