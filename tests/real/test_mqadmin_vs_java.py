"""``manage.py mqadmin`` against the real mqadmin of the same release, on the same live cluster, fact by fact.

For each cluster line (4.9.4 and 5.5.0, the session's ``rocketmq4``/``rocketmq5``) a C++ client run leaves a topic
with messages and a push consumer group online that has consumed part of them (tests/real/traffic.py). Then, in
this order, so that both tools see one state: this project's CLI makes its changes (creates and deletes a topic and
a group, resets two groups' offsets), reads everything with ``--json``; the real mqadmin, in one JVM
(tests/real/mqadmin_tables.py), reads the same things, reads back this CLI's changes and makes its own; this CLI
reads back those. The read-only subcommands are compared field by field (the Java tool's tables parsed); the
mutating ones by their effect as the other tool reads it.

What is compared exactly and what is not: figures the brokers recompute on their own clock (TPS windows, thread
pool queues, disk usage, run time) are compared within a margin or by form, everything else exactly. The
differences the CLI keeps on purpose are in DIFFERENCES below, each with its reason, and in docs/mqadmin.md; any
other difference fails a test.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from monitor.mqadmin.common import format_date, human_millis
from monitor.remoting import body as b
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, retry_topic
from monitor.remoting.message import create_offset_msg_id
from tests.real import mqadmin_tables as java
from tests.real.traffic import FIRST, QUEUES, REST, client_offsets, committed, start_traffic
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "DefaultCluster"
NAME = "VsJava"  # the traffic's topic TopicVsJava, groups cg_VsJava / pg_VsJava
TIMEOUT = "15"  # seconds for each of our CLI's requests: the machine is shared and slow
COMMIT_WAIT = 60.0  # the C++ consumer commits reset offsets on its own 5 s schedule
# TPS figures are over the brokers' last 10 s: between the two tools' reads they can move by this run's whole traffic.
TPS_MARGIN = (FIRST + REST) / 10 + 0.5

# Differences kept on purpose: (subcommand, what differs, why). docs/mqadmin.md says the same.
DIFFERENCES = [
    (
        "clusterList",
        "#Hour is blank while the broker reports no earliest message time; mqadmin prints hours since 1970",
        "4.9.4 brokers report earliestMessageTimeStamp -1 until the commit log holds 8 MB (two maximum messages), "
        "and mqadmin subtracts that from now: ~500,000 hours reads as a store holding 57-year-old messages",
    ),
    (
        "consumerStatus",
        "the running info of each client is part of the result instead of files written under /tmp",
        "a command's output is what an operator (or a script reading --json) sees; files on the host are not",
    ),
    (
        "consumerStatus, consumerProgress",
        "reads C++ clients' running info on RocketMQ 5 (consumerProgress -s true: their queues); mqadmin 5.5.0 fails "
        "with a fastjson2 JSONException (and shows N/A)",
        "the C++ client writes its -1 offsets as unsigned 64-bit numbers; they are read as the signed values",
    ),
    (
        "queryMsgById, queryMsgByOffset",
        "the body is shown inline (text, or Base64) instead of the path of a file under /tmp/rocketmq/msgbodys",
        "as for consumerStatus: the answer belongs in the output",
    ),
    (
        "queryMsgByOffset",
        "no MIN_OFFSET / MAX_OFFSET among the properties",
        "they are not the message's: Java's pull client adds the queue's bounds to every message it pulls",
    ),
    (
        "queryMsgById",
        "an id is read as an offset id only when the store host it names is a broker of the cluster; otherwise it is "
        "looked up by unique key in the -t topic (as mqadmin 5 does), and without -t it is an error",
        "both mqadmin versions connect to whatever address the id decodes to: a producer's id names a made-up one, and "
        "connecting wherever a typed id points would let it aim requests at any host (request forgery)",
    ),
    (
        "queryMsgByKey",
        "no #IndexKey column (mqadmin 5.5.0)",
        "it is the tool's own paging cursor for 5.5's -b/-e/-m/-c query options, which are not offered",
    ),
    (
        "deleteTopic, deleteSubGroup",
        "-c deletes topics from the masters only, then from the name servers (as mqadmin 5 does)",
        "mqadmin 4.9.4 also asks the slaves, which refuse, and stops before the name servers: the topic stays routed "
        "(for deleteSubGroup: the group's retry and DLQ topics)",
    ),
    (
        "resetOffsetByTime",
        "-c is implied when every online consumer of the group is a C++ client",
        "a C++ client cannot read the Java layout of the new offsets, keeps its own and commits them back: without -c "
        "mqadmin reports a reset that does not happen",
    ),
    (
        "statsAll",
        "a group the brokers give no consume stats for shows - as its backlog (--json: null); mqadmin prints 0",
        "0 reads as caught up",
    ),
    (
        "statsAll",
        "the backlog of a group without a retry topic is found through the topic's brokers (as mqadmin 5 does)",
        "mqadmin 4.9.4 looks for the group's brokers through its retry topic only and prints 0 when there is none: a "
        "group that never had a push consumer (offsets committed by an admin tool, a pull consumer) shows no backlog",
    ),
    (
        "consumerProgress",
        "the totals read Diff Total (and Inflight Total on 5.x), not mqadmin 5's Consume Diff Total",
        "one wording for both lines; --json carries diffTotal and inflightTotal",
    ),
]

# Tables whose columns (RocketMQ 5's extra ones included) our text output has in mqadmin's order, by first column.
TABLES = {
    "clusterList": "Cluster Name",
    "topicStatus": "Broker Name",
    "consumerProgress -g": "Topic",
    "consumerProgress": "Group",
    "brokerConsumeStats": "Topic",
}

# GET_BROKER_RUNTIME_INFO entries the broker recomputes on its own clock or that follow the shared disk.
VOLATILE_RUNTIME = re.compile(
    r"runtime|.*Tps|.*DiskRatio.*|commitLogDirCapacity|.*QueueSize|.*HeadWaitTimeMills|timer.*|pageCacheLockTimeMills"
    r"|putMessageDistributeTime|putLatency.*|.*EntireTimeMax|dispatchBehindBytes|remainHowManyDataToFlush"
)


# --- the scene ------------------------------------------------------------------------------------------------------


def ours(cluster, *args: str) -> Any:
    """Our CLI's --json answer, run in this process as an operator runs it."""
    return json.loads(ours_text(cluster, *args, "--json"))


def ours_text(cluster, *args: str) -> str:
    """What our CLI prints."""
    out = io.StringIO()
    call_command("mqadmin", *args, "-n", cluster.namesrv_addr, "--timeout", TIMEOUT, stdout=out)
    return out.getvalue()


@dataclass
class Scene:
    """One cluster line after the run: the names, what each tool printed (by key), the traffic."""

    line: str
    cluster: Any
    admin: Any
    traffic: Any
    master: str
    slave: str
    client_id: str = ""
    reset_time: int = 0  # the time both tools reset the offline groups to
    ours: dict[str, Any] = field(default_factory=dict)
    ours_tables: dict[str, str] = field(default_factory=dict)  # our text output of TABLES
    java: dict[str, java.JavaRun] = field(default_factory=dict)
    ours_after: dict[str, Any] = field(default_factory=dict)

    @property
    def topic(self) -> str:
        return self.traffic.topic

    @property
    def group(self) -> str:
        return self.traffic.group

    def name(self, tool: str, what: str) -> str:
        """A topic or group of one tool's changes: ``TopicOursVsJava``, ``cg_JavaGoneVsJava``..."""
        return f"{'Topic' if what.startswith('topic') else 'cg_'}{tool}{what.removeprefix('topic')}{NAME}"


def _reads(s: Scene) -> dict[str, list[str]]:
    """The read-only subcommands, as both tools take them (but see _java_args)."""
    first = s.traffic.received[0]
    offset_id = create_offset_msg_id(s.master, first["commit_log_offset"])
    return {
        "clusterList": ["clusterList"],
        "clusterList -m": ["clusterList", "-m"],
        "brokerStatus -b": ["brokerStatus", "-b", s.master],
        "brokerStatus -c": ["brokerStatus", "-c", CLUSTER],
        "getBrokerConfig -b": ["getBrokerConfig", "-b", s.slave],
        "getBrokerConfig -c": ["getBrokerConfig", "-c", CLUSTER],
        "getNamesrvConfig": ["getNamesrvConfig"],
        "topicList": ["topicList"],
        "topicList -c": ["topicList", "-c"],
        "topicRoute": ["topicRoute", "-t", s.topic],
        "topicStatus": ["topicStatus", "-t", s.topic],
        "consumerProgress": ["consumerProgress"],
        "consumerProgress -g": ["consumerProgress", "-g", s.group],
        "consumerProgress -s": ["consumerProgress", "-g", s.group, "-s", "true"],
        "consumerConnection": ["consumerConnection", "-g", s.group],
        "consumerStatus": ["consumerStatus", "-g", s.group],
        "consumerStatus -i": ["consumerStatus", "-g", s.group, "-i", s.client_id],
        "producerConnection": ["producerConnection", "-g", s.traffic.producer_group, "-t", s.topic],
        "statsAll": ["statsAll"],
        "statsAll -t": ["statsAll", "-t", s.topic],
        "brokerConsumeStats": ["brokerConsumeStats", "-b", s.master],
        "queryMsgByKey": ["queryMsgByKey", "-t", s.topic, "-k", first["key"]],
        "queryMsgById": ["queryMsgById", "-i", offset_id],
        # Our effects, read back by mqadmin (our reads of the same are above: the state both tools see).
        "topicRoute ours": ["topicRoute", "-t", s.name("Ours", "topic")],
        "topicRoute ours gone": ["topicRoute", "-t", s.name("Ours", "topicGone")],
        "getConsumerConfig ours": ["getConsumerConfig", "-g", s.name("Ours", "")],
        "getConsumerConfig ours gone": ["getConsumerConfig", "-g", s.name("Ours", "Gone")],
        "consumerProgress ours offline": ["consumerProgress", "-g", s.name("Ours", "Offline")],
    }


def _java_args(s: Scene, key: str, args: list[str]) -> list[str]:
    """RocketMQ 5's mqadmin wants the topic with queryMsgById (DIFFERENCES)."""
    return [*args, "-t", s.topic] if key == "queryMsgById" and s.line == "5" else args


# updateTopic and updateSubGroup with every option away from its default, so that each one's effect shows.
def _update_topic(topic: str) -> list[str]:
    return ["updateTopic", "-c", CLUSTER, "-t", topic, "-r", "3", "-w", "5", "-p", "6", "-o", "true"]


def _update_sub_group(group: str) -> list[str]:
    options = ["-s", "false", "-m", "true", "-d", "true", "-q", "2", "-r", "3", "-i", "1", "-w", "0", "-a", "false"]
    return ["updateSubGroup", "-c", CLUSTER, "-g", group, *options]


def _changes(s: Scene, tool: str) -> list[tuple[str, list[str]]]:
    """One tool's changes, in order: create a topic and a group that stay, create and delete another pair, reset
    an offline group to the reset time and the online group (to 0 for ours, to now for mqadmin)."""
    gone_topic, gone_group = s.name(tool, "topicGone"), s.name(tool, "Gone")
    online = ["resetOffsetByTime", "-g", s.group, "-t", s.topic, "-s", "0" if tool == "Ours" else "now"]
    if tool == "Java":  # mqadmin's C++ switch: -c in 4.9.4; in 5.5.0 -c names the cluster and implies it
        online += ["-c"] if s.line == "4" else ["-c", CLUSTER]
    return [
        ("updateTopic", _update_topic(s.name(tool, "topic"))),
        ("updateSubGroup", _update_sub_group(s.name(tool, ""))),
        ("updateTopic gone", _update_topic(gone_topic)),
        ("deleteTopic", ["deleteTopic", "-c", CLUSTER, "-t", gone_topic]),
        ("updateSubGroup gone", _update_sub_group(gone_group)),
        ("deleteSubGroup", ["deleteSubGroup", "-c", CLUSTER, "-g", gone_group]),
        ("reset offline", ["resetOffsetByTime", "-g", s.name(tool, "Offline"), "-t", s.topic, "-s", str(s.reset_time)]),
        ("reset online", online),
    ]


def _prepare_offline_groups(s: Scene) -> None:
    """Two groups with no client that have consumed the first messages (their offsets committed directly), with
    the retry topic a group that once had clients has (both tools find a group's brokers through it)."""
    for tool in ("Ours", "Java"):
        group = s.name(tool, "Offline")
        s.admin.create_and_update_subscription_group_config(s.master, b.SubscriptionGroupConfig(group_name=group))
        retry = b.TopicConfig(topic_name=f"%RETRY%{group}", read_queue_nums=1, write_queue_nums=1)
        s.admin.create_and_update_topic_config(s.master, retry)
        for queue_id, count in s.traffic.consumed_per_queue().items():
            s.admin.update_consumer_offset(s.master, group, s.topic, queue_id, count)
        wait_for(lambda g=group: committed(s.admin, g, s.topic) == FIRST, 30, f"{group}'s offsets")


def _offsets(admin, group: str, topic: str) -> dict[int, int]:
    stats = admin.examine_consume_stats(group, topic)
    return {mq.queue_id: w.consumer_offset for mq, w in stats.offset_table.items() if mq.topic == topic}


@pytest.fixture(scope="module", params=["4", "5"], ids=["4.9.4", "5.5.0"])
def scene(request, tmp_path_factory):
    cluster = request.getfixturevalue(f"rocketmq{request.param}")
    admin = cluster.admin(timeout=15.0)
    traffic = start_traffic(cluster, admin, NAME, tmp_path_factory.mktemp(f"cpp{request.param}"))
    try:
        s = Scene(request.param, cluster, admin, traffic, cluster.broker().addr, cluster.broker("broker-a", 1).addr)
        (connection,) = admin.examine_consumer_connection_info(s.group).connection_set
        s.client_id = connection.client_id
        # A time between the first messages: each queue's offset for it is part-way.
        s.reset_time = sorted(r["store_timestamp"] for r in traffic.received)[FIRST // 2]
        _prepare_offline_groups(s)

        for key, args in _changes(s, "Ours"):
            s.ours[key] = ours(cluster, *args)
        wait_for(lambda: committed(admin, s.group, s.topic) == 0, COMMIT_WAIT, "the C++ consumer's commit of 0")
        # And the client has its queues back (a 4.9.4 broker's reset makes it drop and rebuild them).
        wait_for(lambda: set(client_offsets(admin, s.group, s.topic) or ()) == set(range(QUEUES)), 30, "queues")
        reads = _reads(s)
        s.ours.update({key: ours(cluster, *args) for key, args in reads.items() if " ours" not in key})
        s.ours_tables = {key: ours_text(cluster, *reads[key]) for key in TABLES}

        changes = _changes(s, "Java")
        by_offset = ["queryMsgByOffset", "-t", s.topic, "-b", "broker-a", "-i", "0", "-o", "1"]
        # The pull of queryMsgByOffset counts as a get in the brokers' figures: each tool pulls after its reads.
        plan = [*reads.items(), *changes, ("queryMsgByOffset", by_offset)]
        runs = java.run_batch(cluster, [_java_args(s, key, args) for key, args in plan])
        s.java = dict(zip([key for key, _ in plan], runs, strict=True))

        s.ours_after["queryMsgByOffset"] = ours(cluster, *by_offset)
        java_reset = {int(r["queueId"]): int(r["offset"]) for r in java.table(s.java["reset online"].stdout, "broker")}
        wait_for(lambda: _offsets(admin, s.group, s.topic) == java_reset, COMMIT_WAIT, "mqadmin's reset of now")
        s.ours_after["consumerProgress java online"] = ours(cluster, "consumerProgress", "-g", s.group)
        s.ours_after["consumerProgress java offline"] = ours(
            cluster, "consumerProgress", "-g", s.name("Java", "Offline")
        )
        s.ours_after["topicRoute java"] = ours(cluster, "topicRoute", "-t", s.name("Java", "topic"))
        s.ours_after["topicList"] = ours(cluster, "topicList")
        yield s
    finally:
        traffic.stop()
        admin.close()


# --- helpers --------------------------------------------------------------------------------------------------------


def out(s: Scene, key: str) -> str:
    """What mqadmin printed for ``key``; it must have printed no exception."""
    run = s.java[key]
    assert "Exception" not in run.stderr, f"mqadmin {' '.join(run.args)} failed:\n{run.stderr[-3000:]}"
    return run.stdout


def no_nulls(value: Any) -> Any:
    """JSON without null members: fastjson leaves them out, our --json writes them."""
    if isinstance(value, dict):
        return {k: no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [no_nulls(v) for v in value]
    return value


def route_json(value: Any) -> Any:
    """A route as our --json writes it (map keys as text), from mqadmin's fastjson print."""
    return no_nulls(json.loads(json.dumps(b.TopicRouteData.from_wire(value).to_wire())))


def tps_cell(text: str) -> tuple[float, str]:
    """``0.00(0,0ms)`` -> (0.0, "(0,0ms)"): mqadmin's load cell, its TPS and the pools' queue figures."""
    number, _, rest = text.partition("(")
    return float(number), "(" + rest


# --- cluster and brokers --------------------------------------------------------------------------------------------


def test_cluster_list_shows_the_same_brokers_with_the_same_figures(scene):
    """Rows for master and slave with the same identity; the figures the brokers recompute every few seconds agree
    within what can change between the two reads. On 5.x the out load has the ack pool after a '|', and the timer
    and activation columns exist in both."""
    rows = java.table(out(scene, "clusterList"), "Cluster Name")
    mine = scene.ours["clusterList"]["brokers"]
    assert [(r["Cluster Name"], r["Broker Name"], r["BID"], r["Addr"], r["Version"]) for r in rows] == [
        (b["cluster"], b["brokerName"], str(b["brokerId"]), b["addr"], b["version"]) for b in mine
    ]
    version = "V4_9_4" if scene.line == "4" else "V5_5_0"
    assert {b["version"] for b in mine} == {version}
    for row, broker in zip(rows, mine, strict=True):
        in_tps, in_load = tps_cell(row["InTPS(LOAD)"])
        out_tps, out_load = tps_cell(row["OutTPS(LOAD)"])
        assert in_tps == pytest.approx(broker["inTps"], abs=TPS_MARGIN)
        # Ours was None on 5.x until the runtime table's getTransferredTps (5.x spelling) was read.
        assert out_tps == pytest.approx(broker["outTps"], abs=TPS_MARGIN)
        assert re.fullmatch(r"\(\d+,\d+ms\)", in_load)
        assert re.fullmatch(r"\(\d+,\d+ms\)" if scene.line == "4" else r"\(\d+,\d+ms\|\d+,\d+ms\)", out_load)
        assert float(row["SPACE"]) == pytest.approx(broker["space"], abs=0.01)
        assert int(row["PCWait(ms)"]) >= 0 and broker["pageCacheLockTimeMills"] >= 0
        if broker["hours"] is None:  # DIFFERENCES: no earliest message time; mqadmin counts from 1970
            assert float(row["Hour"]) > 400_000
        else:
            assert float(row["Hour"]) == pytest.approx(broker["hours"], abs=0.1)
        if scene.line == "5":
            assert row["ACTIVATED"] == str(broker["activated"]).lower()
            # read behind-offset behind(congested, enqueue TPS, dequeue TPS): the timer wheel moves every second.
            assert re.fullmatch(r"\d+-\d+\(\d+\.\dw, \d+\.\d, \d+\.\d\)", row["Timer(Progress)"])
            assert broker["timerReadBehind"] >= 0 and broker["timerOffsetBehind"] >= 0
        else:
            assert broker["activated"] is None and "ACTIVATED" not in row


def test_tables_have_mqadmins_columns_in_its_order(scene):
    """Our text tables keep mqadmin's columns, including those a 5.x broker adds (#Timer(Progress), #ACTIVATED,
    #Inflight) and only then; topicStatus ends with the topic's put TPS when the broker reports it."""
    for key, first in TABLES.items():
        assert java.headers(scene.ours_tables[key], first) == java.headers(out(scene, key), first), key
    assert ("Topic Put TPS: " in scene.ours_tables["topicStatus"]) == (scene.line == "5")


def test_cluster_list_more_stats_counts_the_same_messages(scene):
    rows = java.table(out(scene, "clusterList -m"), "Cluster Name")
    mine = scene.ours["clusterList -m"]["brokers"]
    assert [
        (r["Broker Name"], r["InTotalYest"], r["OutTotalYest"], r["InTotalToday"], r["OutTotalToday"]) for r in rows
    ] == [
        (
            b["brokerName"],
            str(b["inTotalYest"]),
            str(b["outTotalYest"]),
            str(b["inTotalToday"]),
            str(b["outTotalToday"]),
        )
        for b in mine
    ]
    assert mine[0]["inTotalToday"] >= FIRST + REST  # the master stored at least this run's messages today


def _stable(table: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in table.items() if not VOLATILE_RUNTIME.fullmatch(k)}


def test_broker_status_reports_the_same_runtime_table(scene):
    """The same keys; the same values except those the broker recomputes on its clock (VOLATILE_RUNTIME)."""
    java_master = java.colon_pairs(out(scene, "brokerStatus -b"))
    mine = scene.ours["brokerStatus -b"][scene.master]
    assert set(java_master) == set(mine)
    assert _stable(java_master) == _stable(mine)
    java_all = java.colon_pairs_by_addr(out(scene, "brokerStatus -c"))
    mine_all = scene.ours["brokerStatus -c"]
    assert set(java_all) == set(mine_all) == {scene.master, scene.slave}
    for addr, table in java_all.items():
        assert set(table) == set(mine_all[addr])
        assert _stable(table) == _stable(mine_all[addr])


def test_broker_and_name_server_configs_are_the_same(scene):
    by_title = java.properties(out(scene, "getBrokerConfig -b"))
    (only,) = scene.ours["getBrokerConfig -b"]
    assert by_title == {scene.slave: only["config"]}
    by_title = java.properties(out(scene, "getBrokerConfig -c"))
    mine = {
        f"Master: {c['addr']}"
        if c["masterAddr"] is None
        else f"My Master: {c['masterAddr']}=====Slave: {c['addr']}": c["config"]
        for c in scene.ours["getBrokerConfig -c"]
    }
    assert by_title == mine
    assert by_title[f"Master: {scene.master}"]["brokerRole"] == "ASYNC_MASTER"
    assert java.properties(out(scene, "getNamesrvConfig")) == scene.ours["getNamesrvConfig"]
    assert scene.cluster.namesrv_addr in scene.ours["getNamesrvConfig"]


# --- topics ---------------------------------------------------------------------------------------------------------


def test_topic_list_names_the_same_topics_clusters_and_groups(scene):
    names = out(scene, "topicList").split()
    assert sorted(names) == sorted(scene.ours["topicList"])
    assert {scene.topic, scene.name("Ours", "topic")} <= set(names)
    rows = java.table(out(scene, "topicList -c"), "Cluster Name")
    mine = {
        (r["cluster"] or "", r["topic"], group)
        for r in scene.ours["topicList -c"]
        for group in r["consumerGroups"] or [""]
    }
    assert {(r["Cluster Name"], r["Topic"], r["Consumer Group"]) for r in rows} == mine
    assert (CLUSTER, scene.topic, scene.group) in mine


def test_topic_route_is_the_same_route(scene):
    """The route with both members of broker-a; on 5.x with its enableActingMaster flag."""
    route = route_json(java.java_json(out(scene, "topicRoute")))
    assert route == no_nulls(scene.ours["topicRoute"])
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": scene.master, "1": scene.slave}
    assert ("enableActingMaster" in route["brokerDatas"][0]) == (scene.line == "5")


def test_topic_status_has_the_same_queues_and_offsets(scene):
    rows = java.table(out(scene, "topicStatus"), "Broker Name")
    mine = scene.ours["topicStatus"]
    assert [(r["Broker Name"], r["QID"], r["Min Offset"], r["Max Offset"], r["Last Updated"]) for r in rows] == [
        (
            q["brokerName"],
            str(q["queueId"]),
            str(q["minOffset"]),
            str(q["maxOffset"]),
            human_millis(q["lastUpdateTimestamp"]),
        )
        for q in mine["queues"]
    ]
    assert sum(q["maxOffset"] for q in mine["queues"]) == FIRST + REST
    put_tps = re.search(r"Topic Put TPS: (\S+)", out(scene, "topicStatus"))
    if scene.line == "5":
        assert float(put_tps.group(1)) == pytest.approx(mine["topicPutTps"], abs=TPS_MARGIN)
    else:
        assert put_tps is None and mine["topicPutTps"] is None


# --- consumers and producers ----------------------------------------------------------------------------------------


def _progress_rows(text: str) -> list[tuple]:
    return [
        (r["Topic"], r["Broker Name"], r["QID"], r["Broker Offset"], r["Consumer Offset"], r["Diff"], r["LastTime"])
        for r in java.table(text, "Topic")
    ]


def _our_progress_rows(progress: dict) -> list[tuple]:
    def last(ms: int) -> str:
        return "N/A" if ms == 0 else format_date(ms)

    return [
        (q["topic"], q["brokerName"], str(q["queueId"]), str(q["brokerOffset"]), str(q["consumerOffset"]),
         str(q["diff"]), last(q["lastTimestamp"]))
        for q in progress["queues"]
    ]  # fmt: skip


def _groups(text: str) -> dict[str, dict[str, str]]:
    """consumerProgress's group rows by group. An offline group has blank Type and Model cells, which whitespace
    cannot show: ``cg  0  OFFLINE  0  5``."""
    groups = {}
    for row in java.table(text, "Group"):
        if row["Version"] == "OFFLINE":
            row = dict(
                zip(row, [row["Group"], row["Count"], "OFFLINE", "", "", row["Type"], row["Model"]], strict=True)
            )
        groups[row["Group"]] = row
    return groups


def test_consumer_progress_of_the_group_and_of_every_group(scene):
    """The group's queues after our reset to 0 (all FIRST + REST behind); 5.x adds Inflight per queue. Without -g,
    the same groups with the same client count, version, kind and total lag."""
    text = out(scene, "consumerProgress -g")
    mine = scene.ours["consumerProgress -g"]
    assert _progress_rows(text) == _our_progress_rows(mine)
    assert f"Diff Total: {mine['diffTotal']}" in text and mine["diffTotal"] == FIRST + REST
    if scene.line == "5":
        assert [int(r["Inflight"]) for r in java.table(text, "Topic")] == [q["inflight"] for q in mine["queues"]]
        assert f"Consume Inflight Total: {mine['inflightTotal']}" in text
    else:
        assert mine["inflightTotal"] is None
    with_ips = java.table(out(scene, "consumerProgress -s"), "Topic")
    ips = [q["clientIp"] for q in scene.ours["consumerProgress -s"]["queues"] if q["topic"] == scene.topic]
    assert ips == [scene.client_id.split("@")[0]] * QUEUES
    if scene.line == "4":
        assert [r["Client IP"] for r in with_ips] == [
            q["clientIp"] for q in scene.ours["consumerProgress -s"]["queues"]
        ]
    else:  # mqadmin 5.5.0 cannot read the C++ client's running info, so it knows no allocation (DIFFERENCES)
        assert {r["Client IP"] for r in with_ips} == {"N/A"}

    every = _groups(out(scene, "consumerProgress"))
    kinds = {"CONSUME_PASSIVELY": "PUSH", "CONSUME_ACTIVELY": "PULL", None: ""}
    assert {group: {k: v for k, v in row.items() if k != "TPS"} for group, row in every.items()} == {
        g["group"]: {
            "Group": g["group"], "Count": str(g["count"]), "Version": g["version"] or "OFFLINE",
            "Type": kinds[g["consumeType"]], "Model": g["messageModel"] or "", "Diff Total": str(g["diffTotal"]),
        }
        for g in scene.ours["consumerProgress"]
    }  # fmt: skip
    for g in scene.ours["consumerProgress"]:  # the brokers' consume TPS, over their last minute
        assert int(every[g["group"]]["TPS"]) == pytest.approx(g["consumeTps"], abs=TPS_MARGIN)
    assert every[scene.group]["Count"] == "1" and every[scene.group]["Type"] == "PUSH"


def test_consumer_connection_shows_the_same_client_and_subscription(scene):
    text = out(scene, "consumerConnection")
    mine = scene.ours["consumerConnection"]
    assert [(r["ClientId"], r["ClientAddr"], r["Language"], r["Version"]) for r in java.table(text, "ClientId")] == [
        (c["clientId"], c["clientAddr"], c["language"], c["versionDesc"]) for c in mine["connections"]
    ]
    assert mine["connections"][0]["language"] == "CPP"
    subscriptions = {(r["Topic"], r["SubExpression"]) for r in java.table(text, "Topic")}
    assert subscriptions == {(s["topic"], s["subExpression"]) for s in mine["subscriptions"]}
    assert (scene.topic, "*") in subscriptions
    for name in ("consumeType", "messageModel", "consumeFromWhere"):
        assert f"{name[0].upper()}{name[1:]}: {mine[name]}" in text


def test_consumer_status_lists_the_client_and_its_running_info(scene):
    """4.9.4: the same client, the same analysis, and the client's running info (properties, subscriptions,
    offsets) as mqadmin prints it with -i. 5.5.0: mqadmin cannot read the C++ client's running info (DIFFERENCES);
    ours reads it, with the client's unsigned -1 offsets as -1.

    The client's own offsets: a 4.9.4 broker passed our reset to 0 on to it; a 5.5.0 broker resets on its side
    (useServerSideResetOffset) and refuses the client's commits until it pulls again, so the client still holds
    what it consumed."""
    mine = scene.ours["consumerStatus"]
    (client,) = mine["clients"]
    assert (client["clientId"], client["versionDesc"], client["error"]) == (scene.client_id, "V3_1_8", None)
    info = scene.ours["consumerStatus -i"]
    offsets = {(e["key"]["topic"], e["key"]["queueId"]): e["value"]["commitOffset"] for e in info["mqTable"]}
    held = dict.fromkeys(range(QUEUES), 0) if scene.line == "4" else scene.traffic.consumed_per_queue()
    assert {q: o for (t, q), o in offsets.items() if t == scene.topic} == held
    assert all(offset >= -1 for offset in offsets.values())
    if scene.line == "5":
        for key in ("consumerStatus", "consumerStatus -i"):
            assert "JSONException" in scene.java[key].stderr
        return
    text = out(scene, "consumerStatus")
    (row,) = java.table(text, "Index")
    assert (row["ClientId"], row["Version"]) == (client["clientId"], client["versionDesc"])
    assert mine["sameSubscription"] and "Same subscription in the same group of consumer" in text
    assert mine["warnings"] == [] and "Rebalance OK" in text

    text = out(scene, "consumerStatus -i")
    properties = java.colon_pairs(text.split("#Consumer Subscription#")[0])
    assert properties == info["properties"]
    subscriptions = set(re.findall(r"Topic: (\S+)\s+ClassFilter: (\S+)\s+SubExpression: (\S+)", text))
    assert subscriptions == {
        (sd["topic"], str(sd["classFilterMode"]).lower(), sd["subString"]) for sd in info["subscriptionSet"]
    }
    section = text.split("#Consumer Offset#")[1]
    assert {(r["Topic"], int(r["QID"])): int(r["Consumer Offset"]) for r in java.table(section, "Topic")} == offsets


def test_producer_connection_shows_the_same_producer(scene):
    rows = [java.cells(line) for line in out(scene, "producerConnection").splitlines() if re.match(r"\d{4}\s", line)]
    mine = scene.ours["producerConnection"]
    assert [row[1:] for row in rows] == [
        [c["clientId"], c["clientAddr"], c["language"], c["versionDesc"]] for c in mine
    ]
    assert mine[0]["clientId"] == scene.client_id  # one C++ client instance runs both the producer and the consumer


# --- throughput and backlog -----------------------------------------------------------------------------------------


def _stats_rows(text: str) -> dict[tuple[str, str], dict[str, str]]:
    """statsAll's rows by (topic, group). A topic without consumer has blank group and OutTPS cells, which
    whitespace cannot show: ``topic  0  0.00  17  NO_CONSUMER`` reads as if NO_CONSUMER were the OutTPS."""
    rows = {}
    for row in java.table(text, "Topic"):
        if row["OutTPS"] == "NO_CONSUMER":
            row = dict(zip(row, [row["Topic"], "", row["Consumer Group"], row["Accumulation"], "", row["InTPS"],
                                 "NO_CONSUMER"], strict=True))  # fmt: skip
        rows[(row["Topic"], row["Consumer Group"])] = row
    return rows


def _our_stats_rows(result: list[dict]) -> dict[tuple[str, str], dict]:
    rows = {}
    for t in result:
        for g in t["groups"] or [{"group": "", "accumulation": 0, "outTps": None, "outMsg24Hour": None}]:
            rows[(t["topic"], g["group"])] = {"topic": t, "group": g}
    return rows


def test_stats_all_lists_the_same_topics_groups_and_backlogs(scene):
    """The same (topic, group) rows with the same backlog. TPS and the 24-hour counts come from the brokers' stats
    windows, which move on the brokers' clock (other tests' traffic too), so they are compared for this run's topic
    only, within what the run can move them. A topic without consumer reads NO_CONSUMER in mqadmin's table and has
    no groups in ours. mqadmin 4.9.4 finds a group's brokers only through its retry topic and prints 0 for a group
    without one; ours falls back to the topic's brokers, as mqadmin 5 does (DIFFERENCES)."""
    topics = set(scene.ours["topicList"])
    for key in ("statsAll", "statsAll -t"):
        java_rows, mine = _stats_rows(out(scene, key)), _our_stats_rows(scene.ours[key])
        assert set(java_rows) == set(mine)
        for row_key, row in java_rows.items():
            topic, group = mine[row_key]["topic"], mine[row_key]["group"]
            backlog = group["accumulation"] or 0  # DIFFERENCES: None ("-") where mqadmin prints 0
            if scene.line == "4" and group["group"] and retry_topic(group["group"]) not in topics:
                backlog = 0
            assert row["Accumulation"] == str(backlog)
            if not group["group"]:
                assert row["OutMsg24Hour"] == "NO_CONSUMER"
            elif topic["topic"] == scene.topic:
                assert float(row["InTPS"]) == pytest.approx(topic["inTps"], abs=TPS_MARGIN)
                assert float(row["OutTPS"]) == pytest.approx(group["outTps"], abs=TPS_MARGIN)
                assert 0 <= int(row["OutMsg24Hour"]) <= FIRST and 0 <= group["outMsg24Hour"] <= FIRST
    groups = {g["group"]: g["accumulation"] for g in scene.ours["statsAll -t"][0]["groups"]}
    assert groups[scene.group] == FIRST + REST  # reset to 0 by us
    assert groups[scene.name("Ours", "Offline")] == FIRST + REST - sum(_offline_offsets(scene).values())


def test_broker_consume_stats_has_the_same_queues(scene):
    text = out(scene, "brokerConsumeStats")
    mine = scene.ours["brokerConsumeStats"]
    rows = [
        (
            r["Topic"],
            r["Group"],
            r["Broker Name"],
            r["QID"],
            r["Broker Offset"],
            r["Consumer Offset"],
            r["Diff"],
            r["LastTime"],
        )
        for r in java.table(text, "Topic")
    ]
    assert rows == [
        (q["topic"], q["group"], q["brokerName"], str(q["queueId"]), str(q["brokerOffset"]), str(q["consumerOffset"]),
         str(q["diff"]), format_date(q["lastTimestamp"]))
        for q in mine["queues"]
    ]  # fmt: skip
    assert f"Diff Total: {mine['diffTotal']}" in text


# --- messages -------------------------------------------------------------------------------------------------------


def test_query_msg_by_key_finds_the_same_message(scene):
    rows = java.table(out(scene, "queryMsgByKey"), "Message ID")
    mine = scene.ours["queryMsgByKey"]
    assert [(r["Message ID"], r["QID"], r["Offset"]) for r in rows] == [
        (m["msgId"], str(m["queueId"]), str(m["queueOffset"])) for m in mine
    ]
    first = scene.traffic.received[0]
    assert [(m["queueId"], m["queueOffset"]) for m in mine] == [(first["queue"], first["offset"])]
    assert mine[0]["offsetMsgId"] == create_offset_msg_id(scene.master, first["commit_log_offset"])


def _same_message(text: str, view: dict) -> None:
    fields = java.message(text)
    assert fields["OffsetID"] == view["offsetMsgId"]
    assert (fields["Topic"], fields["Tags"], fields["Keys"]) == (
        view["topic"],
        f"[{view['tags']}]",
        f"[{view['keys']}]",
    )
    assert (fields["Queue ID"], fields["Queue Offset"], fields["CommitLog Offset"]) == (
        str(view["queueId"]), str(view["queueOffset"]), str(view["commitLogOffset"])
    )  # fmt: skip
    assert (fields["Born Timestamp"], fields["Store Timestamp"]) == (
        human_millis(view["bornTimestamp"]), human_millis(view["storeTimestamp"])
    )  # fmt: skip
    assert (fields["Born Host"], fields["Store Host"]) == (view["bornHost"], view["storeHost"])
    assert (fields["Reconsume Times"], fields["System Flag"]) == (str(view["reconsumeTimes"]), str(view["sysFlag"]))
    properties = java.java_map(fields["Properties"])
    properties.pop("MIN_OFFSET", None), properties.pop("MAX_OFFSET", None)  # DIFFERENCES: Java's pull adds them
    assert properties == view["properties"]
    assert fields["Message Body Path"].endswith(view["msgId"])  # DIFFERENCES: ours shows the body itself
    tracks = [(t["consumerGroup"], t["trackType"], t["exceptionDesc"] or "null") for t in view["tracks"]]
    assert java.tracks(text) == tracks


def test_query_msg_by_id_and_by_offset_show_the_same_message(scene):
    (view,) = scene.ours["queryMsgById"]
    _same_message(out(scene, "queryMsgById"), view)
    first = scene.traffic.received[0]
    assert (view["keys"], view["bodyText"]) == (first["key"], first["body"])
    # Our reset put the group back to 0, so no message is consumed any more; the offline groups are not online.
    assert {t["consumerGroup"]: t["trackType"] for t in view["tracks"]} == {
        scene.group: "NOT_CONSUME_YET",
        scene.name("Ours", "Offline"): "NOT_ONLINE",
        scene.name("Java", "Offline"): "NOT_ONLINE",
    }

    (view,) = scene.ours_after["queryMsgByOffset"]
    _same_message(out(scene, "queryMsgByOffset"), view)
    assert "MIN_OFFSET" in out(scene, "queryMsgByOffset") and "MIN_OFFSET" not in view["properties"]
    expected = next(r for r in scene.traffic.received if (r["queue"], r["offset"]) == (0, 1))
    assert (view["keys"], view["bodyText"]) == (expected["key"], expected["body"])


# --- changes, compared by their effect ------------------------------------------------------------------------------


def test_update_topic_has_the_same_effect_either_way(scene):
    """Both tools' -c -r 3 -w 5 -o true make the same route (read by the other tool): 3 read and 5 write queues on
    broker-a, RW; and the same order configuration in the name server's KV store (routes carry it only when the
    name server has orderMessageEnable, and mqadmin has no subcommand that reads the KV store)."""
    theirs = route_json(java.java_json(out(scene, "topicRoute ours")))
    mine = no_nulls(scene.ours_after["topicRoute java"])
    assert theirs == mine  # the two routes are equal, names aside (routes do not name their topic)
    (queues,) = mine["queueDatas"]
    assert (queues["readQueueNums"], queues["writeQueueNums"], queues["perm"]) == (3, 5, 6)
    assert scene.ours["updateTopic"]["brokers"] == [scene.master]
    for tool in ("Ours", "Java"):
        assert scene.admin.get_kv_config(ORDER_TOPIC_NAMESPACE, scene.name(tool, "topic")) == "broker-a:5"


def test_delete_topic_removes_the_topic_either_way(scene):
    """Ours: gone from the master and the name server, as mqadmin reads it. mqadmin 5.5.0: the same. mqadmin 4.9.4
    asks the slave too (before or after the master: a hash set's order), which refuses, and stops before the name
    server: the topic stays routed (DIFFERENCES)."""
    gone = scene.name("Ours", "topicGone")
    assert "No topic route info" in scene.java["topicRoute ours gone"].stderr
    assert gone not in out(scene, "topicList").split()
    gone = scene.name("Java", "topicGone")
    if scene.line == "4":
        assert "Can't modify topic or subscription group from slave broker" in scene.java["deleteTopic"].stderr
        assert gone in scene.ours_after["topicList"]
    else:
        out(scene, "deleteTopic")
        assert gone not in scene.admin.get_all_topic_config(scene.master).topic_config_table
        assert gone not in scene.ours_after["topicList"]


def _config(group: dict) -> dict[str, str]:
    return {
        "groupName": group["groupName"],
        "consumeEnable": str(group["consumeEnable"]).lower(),
        "consumeFromMinEnable": str(group["consumeFromMinEnable"]).lower(),
        "consumeBroadcastEnable": str(group["consumeBroadcastEnable"]).lower(),
        "retryQueueNums": str(group["retryQueueNums"]),
        "retryMaxTimes": str(group["retryMaxTimes"]),
        "brokerId": str(group["brokerId"]),
        "whichBrokerWhenConsumeSlowly": str(group["whichBrokerWhenConsumeSlowly"]),
        "notifyConsumerIdsChangedEnable": str(group["notifyConsumerIdsChangedEnable"]).lower(),
    }


def test_update_sub_group_has_the_same_effect_either_way(scene):
    """Every option set away from its default by both tools; mqadmin's getConsumerConfig reads our group, our client
    reads mqadmin's, and both hold what was asked."""
    (theirs,) = java.properties(out(scene, "getConsumerConfig ours")).values()
    mine = scene.admin.get_all_subscription_group(scene.master).subscription_group_table[scene.name("Java", "")]
    asked = {
        "consumeEnable": "false", "consumeFromMinEnable": "true", "consumeBroadcastEnable": "true",
        "retryQueueNums": "2", "retryMaxTimes": "3", "brokerId": "1", "whichBrokerWhenConsumeSlowly": "0",
        "notifyConsumerIdsChangedEnable": "false",
    }  # fmt: skip
    assert {k: theirs[k] for k in _config(scene.ours["updateSubGroup"]["config"])} == {
        "groupName": scene.name("Ours", ""),
        **asked,
    }
    assert _config(mine.to_wire()) == {"groupName": scene.name("Java", ""), **asked}


def test_delete_sub_group_removes_the_group_either_way(scene):
    """Each tool's deletion, read by the other: the group is gone from the master, the group next to it is not.
    mqadmin 4.9.4 then fails to delete the group's retry and DLQ topics as deleteTopic fails (DIFFERENCES).

    A 5.5.0 broker deletes the group and at once creates it again with the defaults (autoCreateSubscriptionGroup;
    its log says "delete subscription group OK" then "auto create a subscription group" on the same request), so
    there each tool finds the other's group back with the defaults instead of the settings it was created with."""
    gone = java.properties(scene.java["getConsumerConfig ours gone"].stdout)
    if scene.line == "4":
        assert gone == {}
    else:
        ((_, config),) = gone.items()
        assert (config["groupName"], config["consumeEnable"]) == (scene.name("Ours", "Gone"), "true")
    assert scene.name("Ours", "") in out(scene, "getConsumerConfig ours")
    groups = scene.admin.get_all_subscription_group(scene.master).subscription_group_table
    assert scene.name("Java", "") in groups
    if scene.line == "4":
        assert scene.name("Java", "Gone") not in groups
    else:
        assert groups[scene.name("Java", "Gone")].consume_enable  # created with -s false, back with the default
    assert scene.ours["deleteSubGroup"]["brokers"] == [scene.master]
    if scene.line == "4":
        assert "Can't modify topic or subscription group from slave broker" in scene.java["deleteSubGroup"].stderr
    else:
        out(scene, "deleteSubGroup")


def _reset_rows(text: str) -> dict[int, int]:
    rows = java.table(text, "brokerName")
    column = next(c for c in ("offset", "rollbackOffset", "resetOffset") if c in rows[0])
    return {int(r["queueId"]): int(r[column]) for r in rows}


def test_reset_offset_by_time_moves_the_online_cpp_group_either_way(scene):
    """Ours to 0 (C++ layout implied): mqadmin then reads every queue at 0. mqadmin's -c to now: ours then reads
    every queue at its end, as mqadmin printed it."""
    mine = scene.ours["reset online"]
    assert (mine["method"], mine["cplus"]) == ("broker", True)
    assert {q["queueId"]: q["offset"] for q in mine["queues"]} == dict.fromkeys(range(QUEUES), 0)
    assert [r[4] for r in _progress_rows(out(scene, "consumerProgress -g")) if r[0] == scene.topic] == ["0"] * QUEUES
    theirs = _reset_rows(out(scene, "reset online"))
    after = scene.ours_after["consumerProgress java online"]["queues"]
    ends = {q["queueId"]: q["brokerOffset"] for q in after if q["topic"] == scene.topic}
    assert theirs == ends == {q["queueId"]: q["consumerOffset"] for q in after if q["topic"] == scene.topic}


def _offline_offsets(scene) -> dict[int, int]:
    """Where the offline groups' resets put them: the brokers' offsets for the reset time."""
    return {q: scene.admin.search_offset(scene.master, scene.topic, q, scene.reset_time) for q in range(QUEUES)}


def test_reset_offset_by_time_of_an_offline_group_rewrites_its_offsets_either_way(scene):
    """4.9.4: both fall back to rewriting the committed offsets (no consumer online) to the offsets the brokers
    find for the time; 5.5.0 brokers reset groups on their side, online or not. Either way each tool reads the
    other's group back at those offsets."""
    expected = _offline_offsets(scene)
    mine = scene.ours["reset offline"]
    assert mine["method"] == ("offsets" if scene.line == "4" else "broker")
    assert {q["queueId"]: q["offset"] for q in mine["queues"]} == expected
    assert _reset_rows(out(scene, "reset offline")) == expected
    theirs = {int(r[2]): int(r[4]) for r in _progress_rows(out(scene, "consumerProgress ours offline"))}
    assert theirs == expected
    back = scene.ours_after["consumerProgress java offline"]["queues"]
    assert {q["queueId"]: q["consumerOffset"] for q in back} == expected
    assert 0 < sum(expected.values()) < FIRST  # part-way: the time lies between the first messages


def test_each_deliberate_difference_is_documented():
    """docs/mqadmin.md names every difference this module accepts, under its subcommand."""
    doc = (ROOT / "docs" / "mqadmin.md").read_text()
    for subcommands, what, _why in DIFFERENCES:
        for name in subcommands.split(", "):
            assert f"`{name}`" in doc, name
        assert what.split(";")[0].split(" (")[0][:40] in doc, what
