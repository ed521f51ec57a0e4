"""The sandbox answers like a real RocketMQ 4.9.4: the same scenario on both (tests/real/differential.py), then
every request the collector, the mqadmin CLI and the portal send through monitor/remoting/admin/, compared field
by field: response code, remark, extFields and body, keys in the same order, of the same types, with the same values
wherever the value is deterministic.

What legitimately differs is normalised, each field for a reason (differential.KINDS). What the sandbox knowingly
does otherwise is listed once, in EXCEPTIONS, and explained in docs/sandbox-vs-real.md.
"""

from __future__ import annotations

import concurrent.futures
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from monitor.remoting import headers as h
from monitor.remoting.admin.base import (
    DEFAULT_TOPIC,
    MAX_TIMESTAMP,
    ORDER_TOPIC_NAMESPACE,
    PULL_FLAG_SUBSCRIPTION,
    REQ_T_STREAM,
    RESET_TO_NOW,
    TOOLS_CONSUMER_GROUP,
    retry_topic,
)
from monitor.remoting.body import SubscriptionGroupConfig
from monitor.remoting.codes import RequestCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import RemotingError
from monitor.sandbox.cluster import SandboxCluster
from tests.real import differential as d
from tests.real.differential import Rule, Side, rules
from tests.support.waiting import wait_for

ADMIN_SOURCES = sorted((Path(d.__file__).resolve().parents[2] / "monitor" / "remoting" / "admin").glob("*.py"))
NO_TOPIC = "DiffNoSuchTopic"
NO_GROUP = "DiffNoSuchGroup"
TEMP_TOPIC = "DiffTempTopic"
TEMP_GROUP = "DiffTempGroup"
READY_SECONDS = 10.0

# What the sandbox knowingly answers otherwise: case -> "step/path" pattern -> why (docs/sandbox-vs-real.md).
EXCEPTIONS: dict[str, dict[str, str]] = {
    "runtime info": {
        "*/body/table/remainHowManyDataToFlush": "the sandbox has no disk: nothing is ever waiting to be flushed, "
        "where a real ASYNC_FLUSH broker holds up to 16 KiB back for 10 s",
    },
}

Header = h.CommandHeader | Callable[[Side], h.CommandHeader] | None


@dataclass(frozen=True)
class Step:
    """One request of a case: where it goes, what it is (a header of its own per side when the header is a
    function of the side), what of its answer is normalised, and what it waits for."""

    label: str
    target: str
    code: RequestCode
    header: Header = None
    body: bytes = b""
    extra: tuple[tuple[str, str], ...] = ()
    language: str = "PYTHON"
    normalised: tuple[Rule, ...] = ()
    ready: Callable[[Side], bool] | None = None  # what to wait for on a side before sending

    def request(self, side: Side) -> RemotingCommand:
        header = self.header(side) if callable(self.header) else self.header
        cmd = d.request(self.code, header, self.body, **dict(self.extra))
        cmd.language = self.language
        return cmd


# --- name server -------------------------------------------------------------------------------------------------

# Topic lists hold what other tests left on the real cluster, and the half topic of a broker older than a minute.
TOPIC_LIST = (Rule("body/topicList", "foreign set"), Rule("body/topicList", "young"))


def route(label: str, topic: str, ready: Callable[[Side], bool] | None = None) -> Step:
    header = h.GetRouteInfoRequestHeader(topic=topic)
    return Step(label, "namesrv", RequestCode.GET_ROUTEINFO_BY_TOPIC, header, ready=ready)


KV_HEADERS = {
    RequestCode.PUT_KV_CONFIG: h.PutKVConfigRequestHeader,
    RequestCode.GET_KV_CONFIG: h.GetKVConfigRequestHeader,
    RequestCode.DELETE_KV_CONFIG: h.DeleteKVConfigRequestHeader,
}


def kv(label: str, code: RequestCode, key: str, **value: str) -> Step:
    """A request on one ORDER_TOPIC_CONFIG entry (``value=`` for a put)."""
    return Step(label, "namesrv", code, KV_HEADERS[code](namespace=ORDER_TOPIC_NAMESPACE, key=key, **value))


def kv_list(label: str, namespace: str) -> Step:
    header = h.GetKVListByNamespaceRequestHeader(namespace=namespace)
    return Step(
        label, "namesrv", RequestCode.GET_KVLIST_BY_NAMESPACE, header, normalised=(Rule("body/table", "foreign"),)
    )


NAME_SERVER = {
    "cluster info": (Step("cluster", "namesrv", RequestCode.GET_BROKER_CLUSTER_INFO),),
    "topic list": (Step("topics", "namesrv", RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, normalised=TOPIC_LIST),),
    "topics by cluster": (
        Step(
            "topics",
            "namesrv",
            RequestCode.GET_TOPICS_BY_CLUSTER,
            h.GetTopicsByClusterRequestHeader(cluster="DefaultCluster"),
            normalised=TOPIC_LIST,
        ),
    ),
    "routes": (
        route("topic", d.TOPIC),
        route("ordered topic", d.ORDER_TOPIC),
        route("retry topic", retry_topic(d.GROUP)),
        route("unknown topic", NO_TOPIC),
    ),
    "name server config": (
        Step(
            "config",
            "namesrv",
            RequestCode.GET_NAMESRV_CONFIG,
            normalised=(
                *rules("path", "body/kvConfigPath", "body/configStorePath", "body/rocketmqHome"),
                *rules("port", "body/listenPort"),
            ),
        ),
    ),
    "kv config": (
        kv("get", RequestCode.GET_KV_CONFIG, d.ORDER_TOPIC),
        kv("get unknown", RequestCode.GET_KV_CONFIG, NO_TOPIC),
        kv_list("list", ORDER_TOPIC_NAMESPACE),
        kv_list("list unknown", "DiffNoSuchNamespace"),
    ),
}

# --- broker tables and figures -----------------------------------------------------------------------------------

RUNTIME = (
    *rules("traffic", *(f"body/table/{key}" for key in d.TRAFFIC_COUNTERS)),
    *rules("time", "body/table/bootTimestamp"),
    *rules("shared", "body/table/scheduleMessageOffset_*"),
    *rules(
        "runtime",
        "body/table/runtime",
        "body/table/*Tps",
        "body/table/*EntireTimeMax",
        "body/table/putMessageAverageSize",
        "body/table/putMessageDistributeTime",
        "body/table/putLatency99*",
        "body/table/commitLogDirCapacity",
    ),
    *rules("percent", "body/table/commitLogDiskRatio*", "body/table/consumeQueueDiskRatio"),
    Rule("body/table/commitLogDiskRatio_*", "path key"),
)
BROKER_CONFIG = (
    *rules("time", "extFields/version/timestamp"),
    Rule("extFields/version/counter", "traffic", "config version"),
    *rules("path", "body/storePathRootDir", "body/storePathCommitLog", "body/rocketmqHome"),
    *rules("port", "body/listenPort", "body/haListenPort"),
)
TOPIC_TABLE = (
    *rules("time", "body/dataVersion/timestamp"),
    Rule("body/dataVersion/counter", "traffic", "topic table version"),
    Rule("body/topicConfigTable", "foreign"),
    Rule("body/topicConfigTable", "young"),
)
GROUP_TABLE = (
    *rules("time", "body/dataVersion/timestamp"),
    Rule("body/dataVersion/counter", "traffic", "group table version"),
    Rule("body/subscriptionGroupTable", "foreign"),
)


def on_both(label: str, code: RequestCode, normalised: tuple[Rule, ...]) -> tuple[Step, Step]:
    """The same request to the master and to its slave."""
    return tuple(Step(f"{label} {target}", target, code, normalised=normalised) for target in ("master", "slave"))


def queue_offset(label: str, code: RequestCode, topic: str, queue_id: int) -> Step:
    return Step(
        f"{label} {topic} {queue_id}", "master", code, h.TopicQueueRequestHeader(topic=topic, queue_id=queue_id)
    )


def search(label: str, timestamp: Callable[[Side], int]) -> Step:
    """SEARCH_OFFSET_BY_TIMESTAMP in the first queue, at a time of each side's own."""

    def header(side: Side) -> h.SearchOffsetRequestHeader:
        return h.SearchOffsetRequestHeader(topic=d.TOPIC, queue_id=0, timestamp=timestamp(side))

    return Step(label, "master", RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)


def stats(name: str, key: str) -> Step:
    return Step(
        f"{name} {key}",
        "master",
        RequestCode.VIEW_BROKER_STATS_DATA,
        h.ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key),
        normalised=rules("runtime", "body/*/sum", "body/*/tps", "body/*/avgpt"),
    )


BROKER = {
    "runtime info": on_both("runtime", RequestCode.GET_BROKER_RUNTIME_INFO, RUNTIME),
    "broker config": on_both("config", RequestCode.GET_BROKER_CONFIG, BROKER_CONFIG),
    "topic config": on_both("topics", RequestCode.GET_ALL_TOPIC_CONFIG, TOPIC_TABLE),
    "subscription groups": on_both("groups", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GROUP_TABLE),
    "topic stats": (
        Step(
            "topic",
            "master",
            RequestCode.GET_TOPIC_STATS_INFO,
            h.GetTopicStatsInfoRequestHeader(topic=d.TOPIC),
            normalised=rules("time", "body/offsetTable/*/lastUpdateTimestamp"),
        ),
        Step(
            "unknown topic",
            "master",
            RequestCode.GET_TOPIC_STATS_INFO,
            h.GetTopicStatsInfoRequestHeader(topic=NO_TOPIC),
        ),
    ),
    "queue offsets": tuple(
        queue_offset(label, code, topic, queue_id)
        for label, code in (("min", RequestCode.GET_MIN_OFFSET), ("max", RequestCode.GET_MAX_OFFSET))
        for topic, queue_id in ((d.TOPIC, 0), (d.ORDER_TOPIC, 1), (NO_TOPIC, 0))
    ),
    "earliest store time": tuple(
        Step(
            f"{topic} {queue_id}",
            "master",
            RequestCode.GET_EARLIEST_MSG_STORETIME,
            h.TopicQueueRequestHeader(topic=topic, queue_id=queue_id),
            normalised=rules("time", "extFields/timestamp") if topic == d.TOPIC else (),
        )
        for topic, queue_id in ((d.TOPIC, 0), (d.ORDER_TOPIC, 1), (NO_TOPIC, 0))
    ),
    "search offset by time": (
        search("before the first", lambda side: 0),
        search("at the second", lambda side: side.facts["stored"][1].store_timestamp),
        search("after the last", lambda side: MAX_TIMESTAMP),
    ),
    "stats data": (
        stats("TOPIC_PUT_NUMS", d.TOPIC),
        stats("TOPIC_PUT_NUMS", NO_TOPIC),
        stats("GROUP_GET_NUMS", f"{d.TOPIC}@{d.GROUP}"),
        stats("GROUP_GET_NUMS", f"{d.GROUP}@{d.TOPIC}"),
    ),
}

# --- consumers ---------------------------------------------------------------------------------------------------

SUBSCRIPTIONS = rules("time", "body/subscriptionTable/*/subVersion")
RUNNING_INFO = rules(
    "client",
    "extFields/Signature",
    "body/mqTable/*/last*Timestamp",
    "body/properties/PROP_CONSUMER_START_TIMESTAMP",
    "body/subscriptionSet/*/subVersion",
)


def consume_stats(label: str, group: str, topic: str | None = None) -> Step:
    return Step(
        label,
        "master",
        RequestCode.GET_CONSUME_STATS,
        h.GetConsumeStatsRequestHeader(consumer_group=group, topic=topic),
        normalised=(*rules("time", "body/offsetTable/*/lastTimestamp"), *rules("runtime", "body/consumeTps")),
    )


def broker_consume_stats(is_order: bool) -> Step:
    return Step(
        f"order {is_order}",
        "master",
        RequestCode.GET_BROKER_CONSUME_STATS,
        h.GetConsumeStatsInBrokerHeader(is_order=is_order),
        normalised=(
            *rules("time", "body/consumeStatsList/*/*/*/offsetTable/*/lastTimestamp"),
            *rules("runtime", "body/consumeStatsList/*/*/*/consumeTps"),
            Rule("body/consumeStatsList", "foreign"),
        ),
    )


def connections(label: str, target: str, group: str, *normalised: Rule) -> Step:
    header = h.GetConsumerConnectionListRequestHeader(consumer_group=group)
    return Step(label, target, RequestCode.GET_CONSUMER_CONNECTION_LIST, header, normalised=normalised)


def consumer_offset(group: str, topic: str, queue_id: int) -> Step:
    header = h.QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id)
    return Step(f"{group} {topic} {queue_id}", "master", RequestCode.QUERY_CONSUMER_OFFSET, header)


def running_info(label: str, client_id: Callable[[Side], str], jstack: bool = False) -> Step:
    """GET_CONSUMER_RUNNING_INFO, which the broker relays to the client (each side's own consumer); with jstack,
    the client adds its thread stacks (the C++ client an empty text)."""

    def header(side: Side) -> h.GetConsumerRunningInfoRequestHeader:
        return h.GetConsumerRunningInfoRequestHeader(
            consumer_group=d.GROUP, client_id=client_id(side), jstack_enable=jstack
        )

    return Step(label, "master", RequestCode.GET_CONSUMER_RUNNING_INFO, header, normalised=RUNNING_INFO)


CONSUMERS = {
    "consume stats": (
        consume_stats("online group", d.GROUP),
        consume_stats("online group, one topic", d.GROUP, d.TOPIC),
        consume_stats("offline group", d.OFFLINE_GROUP),
        consume_stats("unknown group", NO_GROUP),
    ),
    "broker consume stats": (broker_consume_stats(False), broker_consume_stats(True)),
    "connections": (
        connections("online group", "master", d.GROUP, *SUBSCRIPTIONS),
        connections(
            "online group on the slave", "slave", d.GROUP, *SUBSCRIPTIONS, *rules("client", "body/*/*/clientAddr")
        ),
        connections("offline group", "master", d.OFFLINE_GROUP),
        Step(
            "producer gone",
            "master",
            RequestCode.GET_PRODUCER_CONNECTION_LIST,
            h.GetProducerConnectionListRequestHeader(producer_group=d.PRODUCER_GROUP),
        ),
    ),
    "consumer ids": tuple(
        Step(
            label,
            "master",
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            h.GetConsumerListByGroupRequestHeader(consumer_group=group),
        )
        for label, group in (("online group", d.GROUP), ("offline group", d.OFFLINE_GROUP))
    ),
    "running info": (
        running_info("online client", lambda side: side.facts["client_id"]),
        running_info("unknown client", lambda side: "127.0.0.1@DiffNoSuchClient"),
        running_info("online client with its stacks", lambda side: side.facts["client_id"], jstack=True),
    ),
    "consumer offsets": (
        consumer_offset(d.GROUP, d.TOPIC, 0),
        consumer_offset(d.OFFLINE_GROUP, d.TOPIC, 0),
        consumer_offset(d.OFFLINE_GROUP, d.TOPIC, 1),
        consumer_offset(d.OFFLINE_GROUP, d.ORDER_TOPIC, 1),
    ),
    "consumed by": tuple(
        Step(
            topic, "master", RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, h.QueryTopicConsumeByWhoRequestHeader(topic=topic)
        )
        for topic in (d.TOPIC, d.ORDER_TOPIC, NO_TOPIC)
    ),
}

# --- messages ----------------------------------------------------------------------------------------------------

WRITTEN = (
    *rules("time", "body/*/bornTimestamp", "body/*/storeTimestamp"),
    *rules("commitlog", "body/*/commitLogOffset"),
)
STORED = (*WRITTEN, *rules("client", "body/*/bornHost", "body/*/properties/UNIQ_KEY"))
INDEX = (
    *rules("time", "extFields/indexLastUpdateTimestamp"),
    *rules("commitlog", "extFields/indexLastUpdatePhyoffset"),
)


def query(label: str, key: str, *normalised: Rule) -> Step:
    """QUERY_MESSAGE as mqadmin queryMsgByKey sends it, over the time since the scenario began (a real index may
    hold an earlier run's messages under the same key). An index entry reads back its store time truncated to
    whole seconds after its index file began, hence the second of slack."""

    def header(side: Side) -> h.QueryMessageRequestHeader:
        begin = side.baseline["time"] - 1000
        return h.QueryMessageRequestHeader(
            topic=d.TOPIC, key=key, max_num=64, begin_timestamp=begin, end_timestamp=MAX_TIMESTAMP
        )

    extra = (("_UNIQUE_KEY_QUERY", "false"),)
    return Step(label, "master", RequestCode.QUERY_MESSAGE, header, extra=extra, normalised=normalised)


def pull(
    label: str,
    topic: str,
    offset: Callable[[Side], int],
    *normalised: Rule,
    ready: Callable[[Side], bool] | None = None,
    group: str = TOOLS_CONSUMER_GROUP,
) -> Step:
    """A one-shot pull of queue 0 as mqadmin's pull consumer sends it (AsyncMQAdmin.pull_message)."""

    def header(side: Side) -> h.PullMessageRequestHeader:
        return h.PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=0,
            queue_offset=offset(side),
            max_msg_nums=32,
            sys_flag=PULL_FLAG_SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_millis=20000,
            subscription="*",
            sub_version=0,
            expression_type="TAG",
        )

    extra = tuple(REQ_T_STREAM.items())
    return Step(label, "master", RequestCode.PULL_MESSAGE, header, extra=extra, normalised=normalised, ready=ready)


def event_dispatched(side: Side) -> bool:
    """The offset-moved event is in its queue: a real broker writes it to the commit log and its dispatcher adds
    it to the consume queue a moment later (the sandbox does both at once)."""
    return side.admin.get_max_offset(side.master, d.OFFSET_MOVED_EVENT, 0) > side.baseline["events"]


def view(side: Side) -> h.ViewMessageRequestHeader:
    return h.ViewMessageRequestHeader(offset=side.facts["stored"][1].commit_log_offset)


MESSAGES = {
    "query by key": (query("key", "DiffKey_4", *STORED, *INDEX), query("unknown key", "DiffNoSuchKey")),
    "view by id": (Step("stored", "master", RequestCode.VIEW_MESSAGE_BY_ID, view, normalised=STORED),),
    "pull": (
        pull("found", d.TOPIC, lambda side: 0, *STORED),
        pull("at the end", d.TOPIC, lambda side: 2),
        pull("beyond the end", d.TOPIC, lambda side: 100),
        pull(
            "offset moved event",
            d.OFFSET_MOVED_EVENT,
            lambda side: side.baseline["events"],
            *WRITTEN,  # the broker writes the event itself: born at its own address, no client id
            *rules("events", "extFields/nextBeginOffset", "extFields/maxOffset", "body/*/queueOffset"),
            ready=event_dispatched,
        ),
    ),
}

# --- changes -----------------------------------------------------------------------------------------------------


def create_topic(label: str, target: str, topic: str, perm: int = 6) -> Step:
    """UPDATE_AND_CREATE_TOPIC as AsyncMQAdmin.create_and_update_topic_config sends it."""
    header = h.CreateTopicRequestHeader(
        topic=topic,
        default_topic=DEFAULT_TOPIC,
        read_queue_nums=2,
        write_queue_nums=2,
        perm=perm,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    return Step(label, target, RequestCode.UPDATE_AND_CREATE_TOPIC, header)


def create_group(label: str, target: str, group: str = TEMP_GROUP, **settings) -> Step:
    body = SubscriptionGroupConfig(group_name=group, **settings).encode()
    return Step(label, target, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)


def delete_group(label: str, group: str) -> Step:
    header = h.DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=True)
    return Step(label, "master", RequestCode.DELETE_SUBSCRIPTIONGROUP, header)


def update_config(label: str, target: str, text: str) -> Step:
    code = RequestCode.UPDATE_BROKER_CONFIG if target == "master" else RequestCode.UPDATE_NAMESRV_CONFIG
    return Step(label, target, code, body=text.encode("utf-8"))


def commit(group: str, topic: str, queue_id: int, offset: int) -> Step:
    header = h.UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
    )
    return Step(f"commit {group} {topic} {queue_id}", "master", RequestCode.UPDATE_CONSUMER_OFFSET, header)


def reset(label: str, group: str, topic: str, language: str = "PYTHON") -> Step:
    """INVOKE_BROKER_TO_RESET_OFFSET to the end ("now": the consumer's offsets do not move), as the admin asks it
    or, in C++'s language, as mqadmin -c does."""
    header = h.ResetOffsetRequestHeader(topic=topic, group=group, timestamp=RESET_TO_NOW, is_force=True)
    return Step(label, "master", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header, language=language)


CHANGES = {
    "topic lifecycle": (
        create_topic("create", "master", TEMP_TOPIC),
        create_topic("create on the slave", "slave", TEMP_TOPIC),
        create_topic("create a system topic", "master", "SCHEDULE_TOPIC_XXXX"),
        route("route", TEMP_TOPIC),
        Step("delete", "master", RequestCode.DELETE_TOPIC_IN_BROKER, h.DeleteTopicRequestHeader(topic=TEMP_TOPIC)),
        Step(
            "delete the route",
            "namesrv",
            RequestCode.DELETE_TOPIC_IN_NAMESRV,
            h.DeleteTopicFromNamesrvRequestHeader(topic=TEMP_TOPIC),
        ),
        route("route once deleted", TEMP_TOPIC),
    ),
    "group lifecycle": (
        create_group("create", "master"),
        create_group("create on the slave", "slave"),
        delete_group("delete", TEMP_GROUP),
        delete_group("delete an unknown group", NO_GROUP),
    ),
    "kv lifecycle": (
        kv("put", RequestCode.PUT_KV_CONFIG, TEMP_TOPIC, value=d.ORDER_CONF),
        kv("get", RequestCode.GET_KV_CONFIG, TEMP_TOPIC),
        kv("delete", RequestCode.DELETE_KV_CONFIG, TEMP_TOPIC),
        kv("get once deleted", RequestCode.GET_KV_CONFIG, TEMP_TOPIC),
        kv("delete again", RequestCode.DELETE_KV_CONFIG, TEMP_TOPIC),
    ),
    "config updates": (
        update_config("broker", "master", "commercialBaseCount=2\n"),
        Step("broker config", "master", RequestCode.GET_BROKER_CONFIG, normalised=BROKER_CONFIG),
        update_config("broker back", "master", "commercialBaseCount=1\n"),
        update_config("broker unknown key", "master", "DiffNoSuchKey=1\n"),
        Step("broker config after", "master", RequestCode.GET_BROKER_CONFIG, normalised=BROKER_CONFIG),
        update_config("name server", "namesrv", "serverChannelMaxIdleTimeSeconds=120\nDiffNoSuchKey=1\n"),
    ),
    "offset commits": (
        commit(d.OFFLINE_GROUP, d.TOPIC, 2, 1),
        consumer_offset(d.OFFLINE_GROUP, d.TOPIC, 2),
    ),
    "offset resets": (
        commit(d.OFFLINE_GROUP, d.ORDER_TOPIC, 1, 0),
        reset("offline group", d.OFFLINE_GROUP, d.ORDER_TOPIC),
        reset("group without offsets", d.OFFLINE_GROUP, d.TOPIC),
        reset("unknown topic", d.GROUP, NO_TOPIC),
        reset("online group", d.GROUP, d.TOPIC),
        reset("online group, for C++", d.GROUP, d.TOPIC, "CPP"),
    ),
}
# --- sends, send-backs and paused groups ---------------------------------------------------------------------------

SEND_TOPIC = "DiffSendTopic"
READ_ONLY_TOPIC = "DiffReadOnlyTopic"
SEND_GROUP = "DiffSendGroup"  # the admin sends to its retry topic
BACK_GROUP = "DiffBackGroup"  # messages of TOPIC are sent back for it
PAUSED_GROUP = "DiffPausedGroup"
ADMIN_PRODUCER_GROUP = "DiffAdminProducer"
# Above 4 KiB a client compresses the body (zlib, level 5) and says so in sysFlag; the broker stores it as it came.
BIG_BODY = ("compressed body " * 400).encode()
COMPRESSED = 0x1
SENT = rules("offset id", "extFields/msgId")
SENT_STORED = (*WRITTEN, *rules("client", "body/*/bornHost"))  # the admin's own UNIQ_KEY is compared
RETRIED = (*STORED, *rules("offset id", "body/*/properties/ORIGIN_MESSAGE_ID"))


def dlq_topic(group: str) -> str:
    return f"%DLQ%{group}"


def properties(**values: str) -> str:
    """A send header's properties, as a client writes them (MessageDecoder.messageProperties2String)."""
    return "".join(f"{name}\x01{value}\x02" for name, value in values.items())


def send(
    label: str,
    topic: str,
    body: bytes = b"sent by the admin",
    *,
    queue_id: int = 0,
    sys_flag: int = 0,
    reconsume_times: int | None = None,
    default_topic: str = DEFAULT_TOPIC,
) -> Step:
    """SEND_MESSAGE_V2 as the admin client's send_message sends it: a fixed UNIQ_KEY (the caller's own id, so the
    same on both sides), keys and tags, WAIT=true."""

    def header(side: Side) -> h.SendMessageRequestHeaderV2:
        return h.SendMessageRequestHeaderV2(
            a=ADMIN_PRODUCER_GROUP,
            b=topic,
            c=default_topic,
            d=4,
            e=queue_id,
            f=sys_flag,
            g=side.baseline["time"],
            h=0,
            i=properties(KEYS="DiffSentKey", UNIQ_KEY=f"DiffUniq-{label.replace(' ', '-')}", WAIT="true", TAGS="TagS"),
            j=reconsume_times,
        )

    return Step(label, "master", RequestCode.SEND_MESSAGE_V2, header, body=body, normalised=SENT)


def stored_at(topic: str, offset: int) -> Callable[[Side], int]:
    """The commit-log offset of a message a side stored (in queue 0 of topic)."""

    def at(side: Side) -> int:
        return side.admin.pull_message(side.master, topic, 0, offset).messages[0].commit_log_offset

    return at


def send_back(label: str, group: str, offset: Callable[[Side], int], delay_level: int) -> Step:
    """CONSUMER_SEND_MSG_BACK as a consumer sends a message it failed to consume."""

    def header(side: Side) -> h.ConsumerSendMsgBackRequestHeader:
        return h.ConsumerSendMsgBackRequestHeader(
            offset=offset(side), group=group, delay_level=delay_level, origin_topic=d.TOPIC
        )

    return Step(label, "master", RequestCode.CONSUMER_SEND_MSG_BACK, header)


def stored_in(topic: str, count: int) -> Callable[[Side], bool]:
    """Queue 0 of the topic holds count messages (a retry is written when its delay level's time is up)."""

    def ready(side: Side) -> bool:
        try:
            return side.admin.get_max_offset(side.master, topic, 0) >= count
        except RemotingError:
            return False

    return ready


def registered(topic: str) -> Callable[[Side], bool]:
    """The name server has the topic: a broker registers the retry and dead-letter topics it creates oneway
    (registerBrokerAll(false, true, true)), so its answer can come before the name server has it."""

    def ready(side: Side) -> bool:
        try:
            side.admin.examine_topic_route_info(topic)
        except RemotingError:
            return False
        return True

    return ready


def delete_topic(label: str, topic: str) -> tuple[Step, Step]:
    return (
        Step(label, "master", RequestCode.DELETE_TOPIC_IN_BROKER, h.DeleteTopicRequestHeader(topic=topic)),
        Step(
            f"{label}, route",
            "namesrv",
            RequestCode.DELETE_TOPIC_IN_NAMESRV,
            h.DeleteTopicFromNamesrvRequestHeader(topic=topic),
        ),
    )


SENDS = {
    "admin sends": (
        create_topic("create", "master", SEND_TOPIC),
        create_topic("create read-only", "master", READ_ONLY_TOPIC, perm=4),
        send("to a queue", SEND_TOPIC),
        send("compressed", SEND_TOPIC, zlib.compress(BIG_BODY, 5), sys_flag=COMPRESSED),
        pull("stored", SEND_TOPIC, lambda side: 0, *SENT_STORED, ready=stored_in(SEND_TOPIC, 2)),
        send("to a read-only topic", READ_ONLY_TOPIC),
        send("to an unknown topic", NO_TOPIC, default_topic="DiffNoSuchDefaultTopic"),
        route("unknown topic not created", NO_TOPIC),
        *delete_topic("delete", SEND_TOPIC),
        *delete_topic("delete read-only", READ_ONLY_TOPIC),
    ),
    "sends to a retry topic": (
        create_group("group", "master", SEND_GROUP, retry_max_times=2),
        create_topic("its retry topic", "master", retry_topic(SEND_GROUP)),
        send("retried less than allowed", retry_topic(SEND_GROUP), queue_id=1, reconsume_times=1),
        send("retried as often as allowed", retry_topic(SEND_GROUP), queue_id=1, reconsume_times=2),
        route("dead-letter topic", dlq_topic(SEND_GROUP), registered(dlq_topic(SEND_GROUP))),
        pull(
            "dead letter",
            dlq_topic(SEND_GROUP),
            lambda side: 0,
            *SENT_STORED,
            ready=stored_in(dlq_topic(SEND_GROUP), 1),
        ),
        *delete_topic("delete retry topic", retry_topic(SEND_GROUP)),
        *delete_topic("delete dead-letter topic", dlq_topic(SEND_GROUP)),
        delete_group("delete group", SEND_GROUP),
    ),
    "send back": (
        create_group("group", "master", BACK_GROUP, retry_max_times=1),
        send_back("first failure", BACK_GROUP, lambda side: side.facts["stored"][0].commit_log_offset, 1),
        route("retry topic", retry_topic(BACK_GROUP), registered(retry_topic(BACK_GROUP))),
        pull("retried", retry_topic(BACK_GROUP), lambda side: 0, *RETRIED, ready=stored_in(retry_topic(BACK_GROUP), 1)),
        send_back("failed as often as allowed", BACK_GROUP, stored_at(retry_topic(BACK_GROUP), 0), 0),
        route("dead-letter topic", dlq_topic(BACK_GROUP), registered(dlq_topic(BACK_GROUP))),
        pull("dead letter", dlq_topic(BACK_GROUP), lambda side: 0, *RETRIED, ready=stored_in(dlq_topic(BACK_GROUP), 1)),
        send_back("given up at once", BACK_GROUP, lambda side: side.facts["stored"][1].commit_log_offset, -1),
        pull("given up", dlq_topic(BACK_GROUP), lambda side: 1, *RETRIED, ready=stored_in(dlq_topic(BACK_GROUP), 2)),
        send_back("unknown offset", BACK_GROUP, lambda side: 2**40, 0),
        *delete_topic("delete retry topic", retry_topic(BACK_GROUP)),
        *delete_topic("delete dead-letter topic", dlq_topic(BACK_GROUP)),
        delete_group("delete group", BACK_GROUP),
    ),
    "paused group": (
        create_group("pause", "master", PAUSED_GROUP, consume_enable=False),
        pull("while paused", d.TOPIC, lambda side: 0, *STORED, group=PAUSED_GROUP),
        create_group("resume without retry queues", "master", PAUSED_GROUP, retry_queue_nums=0),
        pull("once resumed", d.TOPIC, lambda side: 0, *STORED, group=PAUSED_GROUP),
        send_back("without retry queues", PAUSED_GROUP, lambda side: side.facts["stored"][0].commit_log_offset, 0),
        route("no retry topic", retry_topic(PAUSED_GROUP)),
        update_config("slave reads on", "master", "slaveReadEnable=true\n"),
        create_group("read from the slave", "master", PAUSED_GROUP, broker_id=1),
        pull("told to read from the slave", d.TOPIC, lambda side: 0, *STORED, group=PAUSED_GROUP),
        update_config("slave reads off", "master", "slaveReadEnable=false\n"),
        delete_group("delete group", PAUSED_GROUP),
    ),
}
CASES = {**NAME_SERVER, **BROKER, **CONSUMERS, **MESSAGES, **CHANGES, **SENDS}

# --- running them ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sides(rocketmq4, tmp_path_factory):
    """The scenario on the real 4.9.4 cluster and on a sandbox configured like it, set up side by side."""
    with SandboxCluster(brokers=1, slaves=True, broker_config=d.REAL_BROKER_CONFIG) as sandbox:
        real, fake = pair = (Side.of("real", rocketmq4), Side.of("sandbox", sandbox))
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            preparing = []
            try:
                list(pool.map(d.take_baseline, pair))
                preparing = [pool.submit(d.prepare, side, tmp_path_factory.mktemp(side.label)) for side in pair]
                for future in preparing:
                    future.result()
                list(pool.map(d.settle, pair))
                d.mark_foreign(real, fake)
                yield pair
            finally:
                concurrent.futures.wait(preparing)
                consumers = [future.result() for future in preparing if future.exception() is None]
                list(pool.map(d.stop_consumer, consumers))
                d.clean_up(real)
                for side in pair:
                    side.admin.close()


def differences(name: str, sides: tuple[Side, Side]) -> list[str]:
    """Each step of the case sent to both sides in turn; the differences left after normalising, by step."""
    found = []
    for item in CASES[name]:
        trees = []
        for side in sides:
            if item.ready is not None:
                wait_for(partial(item.ready, side), READY_SECONDS, f"{side.label}: {name}, {item.label}")
            cmd = item.request(side)
            tree = d.answer_tree(cmd, side.send(item.target, cmd))
            trees.append(d.normalise(tree, side, item.target, item.normalised))
        found += d.differences(*trees, EXCEPTIONS.get(name, {}), path=(item.label,))
    return found


def check(name: str, sides: tuple[Side, Side]) -> None:
    found = differences(name, sides)
    assert not found, f"{name}: the sandbox answers otherwise:\n" + "\n".join(found)


@pytest.mark.parametrize("name", NAME_SERVER)
def test_name_server_answers_as_a_real_one(name, sides):
    """Clients and the monitor find everything through the name server: its clusters, topic lists, routes,
    configuration and KV entries are what a real 4.9.4 name server holds after the same operations."""
    check(name, sides)


@pytest.mark.parametrize("name", BROKER)
def test_broker_tables_and_figures_are_as_on_a_real_one(name, sides):
    """The collector and the portal's sync read whole tables, runtime figures, offsets and stats counters, from
    masters and slaves alike."""
    check(name, sides)


@pytest.mark.parametrize("name", CONSUMERS)
def test_consumer_views_are_as_on_a_real_one(name, sides):
    """Consumer pages and lag warnings come from consume stats, connections, offsets and the running info the
    broker relays from the C++ client itself."""
    check(name, sides)


@pytest.mark.parametrize("name", MESSAGES)
def test_message_reads_are_as_on_a_real_one(name, sides):
    """mqadmin's message commands and the offset-event collector read store records, byte layout included."""
    check(name, sides)


@pytest.mark.parametrize("name", CHANGES)
def test_changes_are_answered_as_by_a_real_one(name, sides):
    """The portal's approvals create and delete topics, groups and order configs, and mqadmin commits and resets
    offsets: each change is answered or refused, and seen afterwards, as on a real cluster."""
    check(name, sides)


@pytest.mark.parametrize("name", SENDS)
def test_sends_and_send_backs_are_answered_and_stored_as_by_a_real_one(name, sides):
    """The portal sends test messages and resends dead letters, consumers send failed messages back until they go
    to the dead-letter topic, and a paused group is refused its pulls: answers and what was stored are as on a
    real cluster, compressed bodies and the properties a retry carries included."""
    check(name, sides)


def test_every_request_the_admin_client_sends_is_compared():
    """A request the admin client gains (monitor/remoting/admin/, which the collector, the CLI and the portal go
    through) needs a case here, or the sandbox could answer it wrongly unnoticed."""
    sent = {code for path in ADMIN_SOURCES for code in re.findall(r"RequestCode\.([A-Z_0-9]+)", path.read_text())}
    compared = {item.code.name for steps in CASES.values() for item in steps}
    assert sent - compared == set()


def test_every_exception_names_a_case():
    """A documented exception whose case is gone (or misspelt) would excuse nothing and mislead the reader."""
    assert set(EXCEPTIONS) <= set(CASES)
