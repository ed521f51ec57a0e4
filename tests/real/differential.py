"""The machinery of the differential tests (test_differential.py): one scenario set up alike on a real RocketMQ
4.9.4 and on the sandbox, raw requests sent to both through the project's client, and their answers turned into
trees that can be compared field by field.

An answer becomes ``{"code", "language", "version", "flag", "remark", "extFields", "body"}``, the body parsed as
what it is (fastjson, Properties text, store records, plain text), every map in the order it came. :func:`normalise`
then replaces what legitimately differs between two clusters doing the same things, each replacement for a reason
named in :data:`KINDS`, and :func:`differences` lists whatever is left: missing or extra keys, key order, types and
values.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.remoting import fastjson
from monitor.remoting import headers as h
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, MQAdmin, retry_topic
from monitor.remoting.body import (
    KVTable,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    parse_properties,
)
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import ProtocolError, RemotingError
from monitor.remoting.message import MessageExt, decode_messages, decode_offset_msg_id
from monitor.remoting.sync import run_sync
from tests.sandbox.test_broker_messaging import client_process
from tests.support.waiting import wait_for

# --- the scenario ------------------------------------------------------------------------------------------------

TOPIC = "DiffTopic"  # 4 queues, 2 messages in each, all consumed by GROUP
ORDER_TOPIC = "DiffOrderTopic"  # 2 queues, ordered, 3 messages in queue 0 that nobody consumes
GROUP = "DiffGroup"  # the C++ push consumer, online while the requests are made
OFFLINE_GROUP = "DiffOfflineGroup"  # no consumer; offsets committed by hand
PRODUCER_GROUP = "DiffProducerGroup"
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
QUEUES = 4
ORDER_QUEUES = 2
ORDER_CONF = f"broker-a:{ORDER_QUEUES}"
MESSAGES = 8
ORDER_MESSAGES = 3
TAGS = ("TagA", "TagB")
# The offline group's commits: (topic, queue, offset).
OFFLINE_COMMITS = ((TOPIC, 0, 1), (ORDER_TOPIC, 0, 2))
CLIENT_SECONDS = 40  # how long the C++ consumer waits for its messages before the test fails
SETTLE_SECONDS = 60  # commits and slave synchronisation (a real slave copies its master every 10 s)
# Broker properties the launcher gives the real brokers (monitor.launcher.cluster.SMALL_STORE plus the 4.9.4
# defaults the sandbox departs from to look like the captured cluster, started with the distribution's broker.conf):
# the sandbox gets the same.
REAL_BROKER_CONFIG = {
    "mappedFileSizeCommitLog": 64 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 30_000 * 20,
    "flushDiskType": "ASYNC_FLUSH",
    "diskMaxUsedSpaceRatio": 95,
    "traceTopicEnable": False,
    "slaveReadEnable": False,
    "fileReservedTime": 72,
}


def scenario_messages() -> list[dict]:
    """Sends with the orderly selector (queue = arg % queue count), so both clusters hold each message at the
    same queue and offset."""
    sends = [
        {
            "topic": TOPIC,
            "body": f"body {n}",
            "keys": f"DiffKey_{n}",
            "tags": TAGS[n % 2],
            "props": {"p": str(n)},
            "mode": "orderly",
            "arg": n,
        }
        for n in range(MESSAGES)
    ]
    return sends + [
        {
            "topic": ORDER_TOPIC,
            "body": f"order {n}",
            "keys": f"DiffOrderKey_{n}",
            "tags": "TagO",
            "mode": "orderly",
            "arg": 0,
        }
        for n in range(ORDER_MESSAGES)
    ]


@dataclass
class Side:
    """One cluster under test: its addresses, its admin client, its figures from before the scenario
    (``baseline``: runtime counters, config versions and queue ends; ``names``: its topics and groups), what the
    scenario left (``facts``: the consumer's id and address, the stored messages of the first queue), and on the
    shared real cluster the names other tests left there (``foreign``)."""

    label: str
    namesrv: str
    master: str
    slave: str
    admin: MQAdmin
    baseline: dict[str, int] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    foreign: frozenset[str] = frozenset()
    foreign_topics: bool = False  # whether the real name server holds foreign topics (see KINDS["foreign set"])

    @classmethod
    def of(cls, label: str, cluster) -> Side:
        """A RealCluster or a SandboxCluster (the same attribute names)."""
        return cls(
            label,
            cluster.namesrv_addr,
            cluster.brokers["broker-a", 0].addr,
            cluster.brokers["broker-a", 1].addr,
            MQAdmin(cluster.namesrv_addr, timeout=10.0),
        )

    def address(self, target: str) -> str:
        return {"namesrv": self.namesrv, "master": self.master, "slave": self.slave}[target]

    def send(self, target: str, cmd: RemotingCommand) -> RemotingCommand:
        """The raw answer, whatever its code."""
        return run_sync(self.admin.aio.client.invoke(self.address(target), cmd))

    def ask(self, target: str, code: RequestCode) -> RemotingCommand:
        """A successful answer to a request without header (else RemotingError, naming the code and remark)."""
        return run_sync(self.admin.aio.call(self.address(target), request(code)))

    def roles(self) -> dict[str, str]:
        """Addresses (and the consumer's id) by what they are, longest first, so that none is replaced inside a
        longer one."""
        roles = {self.namesrv: "<namesrv>", self.master: "<master>", self.slave: "<slave>"}
        for name in ("client_id", "client_addr"):
            if name in self.facts:
                roles[self.facts[name]] = f"<{name}>"
        return dict(sorted(roles.items(), key=lambda item: -len(item[0])))


def request(code: RequestCode, header: h.CommandHeader | None = None, body: bytes = b"", **extra) -> RemotingCommand:
    """A request built as the admin client builds it (AsyncMQAdmin._command)."""
    ext = header.to_ext_fields() if header is not None else None
    if extra:
        ext = {**(ext or {}), **extra}
    return RemotingCommand.request(code, ext, body)


def take_baseline(side: Side) -> None:
    """What the scenario will move, before it starts (the real cluster is shared and booted earlier): runtime
    counters, the versions of the broker's config and tables and whether the half topic is there yet (see
    KINDS["young"]), the end of the OFFSET_MOVED_EVENT queue, and the names of topics and groups."""
    # A C++ producer's shutdown names consumer group "" (UNREGISTER_CLIENT), which creates that group: the shared
    # real cluster has it once any test ran a producer. It is made on both first, so the scenario makes it on neither.
    side.admin.create_and_update_subscription_group_config(side.master, SubscriptionGroupConfig(group_name=""))
    side.baseline["time"] = int(time.time() * 1000)
    for target in ("master", "slave"):
        table = runtime_table(side, target)
        for key, source in TRAFFIC_COUNTERS.items():
            side.baseline[f"{target}.{key}"] = int(table[source])
        version = side.ask(target, RequestCode.GET_BROKER_CONFIG).ext("version")
        side.baseline[f"{target}.config version"] = fastjson.loads(version)["counter"]
    # A slave's topic and group tables, versions included, are copies of its master's (once it has synchronised).
    topics = TopicConfigSerializeWrapper.decode(side.ask("master", RequestCode.GET_ALL_TOPIC_CONFIG).body)
    groups = SubscriptionGroupWrapper.decode(side.ask("master", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)
    for target in ("master", "slave"):
        side.baseline[f"{target}.topic table version"] = topics.data_version.counter
        side.baseline[f"{target}.half topic"] = HALF_TOPIC in topics.topic_config_table
        side.baseline[f"{target}.group table version"] = groups.data_version.counter
    side.baseline["events"] = side.admin.get_max_offset(side.master, OFFSET_MOVED_EVENT, 0)
    side.names = names(side)


def runtime_table(side: Side, target: str) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO's table, once the broker gives it: in its first second a real 4.9.4 broker answers
    SYSTEM_ERROR NoSuchElementException (StoreStatsService has no sample yet), the sandbox answers at once."""
    answers: list[RemotingCommand] = []

    def answered() -> bool:
        try:
            answers.append(side.ask(target, RequestCode.GET_BROKER_RUNTIME_INFO))
        except RemotingError as exc:
            if exc.code != ResponseCode.SYSTEM_ERROR:
                raise
        return bool(answers)

    wait_for(answered, SETTLE_SECONDS, f"{side.label}: runtime info of the {target}")
    return KVTable.decode(answers[0].body).table


def names(side: Side) -> set[str]:
    """The topics the name server knows, the topics it has an order config for, and the master's groups."""
    groups = side.admin.get_all_subscription_group(side.master).subscription_group_table
    try:
        ordered = side.admin.get_kv_list_by_namespace(ORDER_TOPIC_NAMESPACE).table
    except RemotingError:  # QUERY_NOT_FOUND: no order config was ever put
        ordered = {}
    return {*side.admin.fetch_all_topic_list().topic_list, *ordered, *groups}


def mark_foreign(real: Side, sandbox: Side) -> None:
    """What other tests left on the shared real cluster: the names it had before the scenario that the sandbox
    does not have after it (see KINDS["foreign"]), and whether topics are among them, for both sides."""
    real.foreign = frozenset(real.names - names(sandbox))
    real.foreign_topics = sandbox.foreign_topics = bool(
        real.foreign & set(real.admin.fetch_all_topic_list().topic_list)
    )


def prepare(side: Side, home: Path) -> subprocess.Popen:
    """Topics, groups, the order config, the messages and an online consumer (returned: the test ends it)."""
    admin, master = side.admin, side.master
    admin.create_and_update_topic_config(
        master, TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    )
    # The order config first: the creation's registration then marks the topic ordered at once, where otherwise
    # the next periodic registration (within 30 s) would, at a moment of its own on each cluster.
    admin.put_kv_config(ORDER_TOPIC_NAMESPACE, ORDER_TOPIC, ORDER_CONF)
    admin.create_and_update_topic_config(
        master,
        TopicConfig(topic_name=ORDER_TOPIC, read_queue_nums=ORDER_QUEUES, write_queue_nums=ORDER_QUEUES, order=True),
    )
    for group in (GROUP, OFFLINE_GROUP):
        admin.create_and_update_subscription_group_config(master, SubscriptionGroupConfig(group_name=group))
    plan = {
        "namesrv": side.namesrv,
        "produce": {"group": PRODUCER_GROUP, "messages": scenario_messages()},
        "consume": {"group": GROUP, "topic": TOPIC, "expect": MESSAGES, "hold": True, "seconds": CLIENT_SECONDS},
    }
    process = client_process(plan, home)
    for line in process.stdout:
        if line.strip() == "CONSUMED":
            break
    else:
        raise AssertionError(f"{side.label}: the C++ client ended early: {process.stderr.read()[-3000:]}")
    for topic, queue_id, offset in OFFLINE_COMMITS:
        admin.update_consumer_offset(master, OFFLINE_GROUP, topic, queue_id, offset)
    return process


def settle(side: Side) -> None:
    """Wait until the consumer has committed its offsets (everything it consumed, and its retry queue's) and the
    slave has copied the master's topics and groups; then note the facts requests are built from."""
    admin = side.admin
    wanted_topics = {TOPIC, ORDER_TOPIC, retry_topic(GROUP)}

    def settled() -> bool:
        offsets = admin.get_consume_stats(side.master, GROUP).offset_table
        consumed = sum(wrapper.consumer_offset for queue, wrapper in offsets.items() if queue.topic == TOPIC)
        # The client commits its retry queue's offset too (0, read from the broker at its first rebalance).
        committed = consumed == MESSAGES and any(queue.topic == retry_topic(GROUP) for queue in offsets)
        slave_topics = side.admin.get_all_topic_config(side.slave).topic_config_table
        slave_groups = side.admin.get_all_subscription_group(side.slave).subscription_group_table
        return committed and wanted_topics <= set(slave_topics) and {GROUP, OFFLINE_GROUP} <= set(slave_groups)

    wait_for(settled, SETTLE_SECONDS, f"{side.label}: commits and slave synchronisation")
    (client_id,) = admin.get_consumer_id_list_by_group(side.master, GROUP)
    connection = admin.get_consumer_connection_list(side.master, GROUP).connection_set[0]
    side.facts.update(
        client_id=client_id,
        client_addr=connection.client_addr,
        stored=admin.pull_message(side.master, TOPIC, 0, 0).messages,
    )


def clean_up(side: Side) -> None:
    """Remove what the scenario created (the real cluster outlives this module)."""
    admin = side.admin
    for topic in (TOPIC, ORDER_TOPIC, retry_topic(GROUP)):
        admin.delete_topic_in_broker([side.master], topic)
        admin.delete_topic_in_name_server(topic)
    admin.delete_kv_config(ORDER_TOPIC_NAMESPACE, ORDER_TOPIC)
    for group in (GROUP, OFFLINE_GROUP):
        admin.delete_subscription_group(side.master, group, remove_offset=True)


def stop_consumer(process: subprocess.Popen) -> None:
    """Let the online consumer go (it waits on its stdin) and wait for it; its results are not needed, and a C++
    client that crashes on shutdown must not hide what the tests found."""
    try:
        process.communicate(timeout=CLIENT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


# --- answers as trees --------------------------------------------------------------------------------------------

PROPERTIES_BODIES = frozenset({RequestCode.GET_BROKER_CONFIG, RequestCode.GET_NAMESRV_CONFIG})
MESSAGE_BODIES = frozenset({RequestCode.PULL_MESSAGE, RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID})
# The runtime counters a baseline is taken of (see KINDS["traffic"]), each from the entry holding its true value:
# putMessageTimesTotal says 1 while nothing was put (StoreStatsService avoids dividing by 0), msgPutTotalTodayNow
# is the same counter without that.
TRAFFIC_COUNTERS = {
    "msgPutTotalTodayNow": "msgPutTotalTodayNow",
    "msgGetTotalTodayNow": "msgGetTotalTodayNow",
    "putMessageTimesTotal": "msgPutTotalTodayNow",
    "putMessageSizeTotal": "putMessageSizeTotal",
    "commitLogMaxOffset": "commitLogMaxOffset",
}


def answer_tree(cmd: RemotingCommand, response: RemotingCommand) -> dict[str, Any]:
    return {
        "code": response.code,
        "language": response.language,
        "version": response.version,
        "flag": response.flag,
        "remark": response.remark,
        "extFields": _ext_fields(response.ext_fields),
        "body": _body(cmd, response),
    }


def _ext_fields(fields: dict[str, Any] | None) -> dict[str, Any] | None:
    """extFields, with a value that is a JSON object (GET_BROKER_CONFIG's DataVersion) parsed."""
    if fields is None:
        return None
    return {k: _plain(fastjson.loads(v)) if str(v).startswith("{") else v for k, v in fields.items()}


def _body(cmd: RemotingCommand, response: RemotingCommand) -> Any:
    if not response.body:
        return None
    if cmd.code in MESSAGE_BODIES and response.code == ResponseCode.SUCCESS:
        return [_message(message) for message in decode_messages(response.body)]
    if cmd.code in PROPERTIES_BODIES:
        return parse_properties(response.body)
    try:
        return _plain(fastjson.loads(response.body))
    except ProtocolError:
        return response.body.decode("utf-8", errors="replace")


def _message(message: MessageExt) -> dict[str, Any]:
    """A store record's fields in the order of the record layout."""
    return {
        "storeSize": message.store_size,
        "bodyCRC": message.body_crc,
        "queueId": message.queue_id,
        "flag": message.flag,
        "queueOffset": message.queue_offset,
        "commitLogOffset": message.commit_log_offset,
        "sysFlag": message.sys_flag,
        "bornTimestamp": message.born_timestamp,
        "bornHost": message.born_host,
        "storeTimestamp": message.store_timestamp,
        "storeHost": message.store_host,
        "reconsumeTimes": message.reconsume_times,
        "preparedTransactionOffset": message.prepared_transaction_offset,
        "body": _plain(_message_body(message.body)),
        "topic": message.topic,
        "properties": dict(message.properties),
    }


def _message_body(body: bytes) -> Any:
    """A message body as text, or parsed when it is fastjson (OFFSET_MOVED_EVENT's OffsetMovedEvent)."""
    text = body.decode("utf-8", errors="replace")
    if text.startswith("{"):
        try:
            return fastjson.loads(text)
        except ProtocolError:
            return text
    return text


def _plain(value: Any) -> Any:
    """Plain dicts and lists; a map key that is an object (fastjson's MessageQueue keys) becomes its text."""
    if isinstance(value, Mapping):
        return {_key(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _key(key: Any) -> str | int:
    if isinstance(key, Mapping):
        return "{" + ",".join(f"{name}={key[name]}" for name in key) + "}"
    return key


# --- normalising -------------------------------------------------------------------------------------------------

# Why a field is normalised: every rule names one of these.
KINDS = {
    "time": "a wall-clock time or a version stamped with one: the two clusters did the same things at different "
    "moments",
    "runtime": "a figure of the running process (rates over its own sampling windows, latencies, uptime, disk "
    "use): no two runs, real or sandbox, share it",
    "traffic": "a count of everything the broker handled or changed since it booted; the real cluster is shared "
    "by the session's tests and booted earlier, so the scenario's share is compared: the value minus the one "
    "before the scenario",
    "commitlog": "a commit-log offset: the real broker's log already holds what earlier tests stored, so the "
    "offset minus the log's end before the scenario is compared",
    "offset id": "an offset message id (the store host and a commit-log offset, in hex): the host becomes its role "
    "and the offset is compared minus the log's end before the scenario (see commitlog)",
    "events": "an OFFSET_MOVED_EVENT queue offset: the real queue already holds the events of earlier tests, so "
    "the offset minus the queue's end before the scenario is compared",
    "path": "a store path: the launcher puts the real broker's store in the session's folder, the sandbox "
    "reports Java's default under the home directory",
    "path key": "a map key holding a store path (see path), moved to the end as its place in the HashMap depends "
    "on the path's hash",
    "client": "made by the C++ client from its process (its instance's unique message ids, its own "
    "timestamps and the signature over them, its thread and JVM-like figures)",
    "port": "a port number: both clusters listen on free ports picked at start",
    "percent": "disk use, the real machine's disk against the sandbox's memory cap: compared by form, a whole "
    "percentage as a Java double (UtilAll.getDiskPartitionSpaceUsedPercent rounds up to one)",
    "foreign": "an entry other tests left on the shared real cluster (a name it had before the scenario that the "
    "sandbox lacks after it), dropped with its share of any total",
    "foreign set": "foreign entries of a topic list (a HashSet sized by its entries): dropped, and while the real "
    "cluster holds any, the order of the rest is not compared, since they made the real set's table larger",
    "shared": "state the session's other tests left on the shared real broker that no baseline can subtract (a "
    "delay level's scheduleMessageOffset appears once any test's retry waited at that level): dropped on both "
    "sides, and the order of that map is not compared (the real map's depends on how many keys it held); "
    "tests/sandbox/test_broker_consumers.py checks the sandbox's own",
    "young": "RMQ_SYS_TRANS_HALF_TOPIC and the topic-table version step of its creation: a real broker's "
    "transaction check service creates it a minute after boot, the sandbox has it from the start, and the real "
    "cluster may be younger than a minute",
}
_WHOLE_PERCENT = re.compile(r"(0|1)\.[0-9]{1,2}")


@dataclass(frozen=True)
class Rule:
    """Normalise what is at ``pattern`` (the values; for "path key" the map keys; for "foreign", "foreign set" and
    "young" the entries of a list or map): path parts joined by "/", each an fnmatch pattern (``*``: any key or
    list index)."""

    pattern: str
    kind: str
    of: str = ""  # for "traffic": the baseline entry (default: the last path part)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}")

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.pattern.split("/"))


def rules(kind: str, *patterns: str) -> tuple[Rule, ...]:
    return tuple(Rule(pattern, kind) for pattern in patterns)


def matches(parts: tuple[str, ...], path: tuple[str, ...]) -> bool:
    return len(parts) == len(path) and all(fnmatch.fnmatchcase(p, q) for p, q in zip(path, parts, strict=True))


def normalise(tree: Any, side: Side, target: str, applied: Iterable[Rule]) -> Any:
    """Addresses (and the consumer's id and address) become their roles everywhere, in keys and text alike;
    then each rule replaces what it covers."""
    tree = _substitute(tree, _role_pattern(side.roles()), side.roles())
    for rule in applied:
        if rule.kind == "foreign":
            _drop(tree, rule, side.foreign)
        elif rule.kind == "foreign set":
            _drop(tree, rule, side.foreign, ordered=not side.foreign_topics)
        elif rule.kind == "shared":
            _drop_shared(tree, rule)
        elif rule.kind == "young":
            _drop(tree, rule, {HALF_TOPIC}, counted=not side.baseline.get(f"{target}.half topic", True))
        else:
            tree = _apply(tree, (), rule, side, target)
    return tree


def _drop_shared(tree: dict, rule: Rule) -> None:
    """Remove the keys the rule's last part matches from the map above it, and sort that map: the real map's
    iteration order depends on how many keys it held (HashMap capacity), so its order is not compared."""
    *parents, last = rule.parts
    container = tree
    for part in parents:
        container = container.get(part) if isinstance(container, dict) else None
    if not isinstance(container, dict):
        return
    kept = {key: value for key, value in container.items() if not fnmatch.fnmatchcase(str(key), last)}
    container.clear()
    container.update(sorted(kept.items()))


def _drop(tree: dict, rule: Rule, names: Collection[str], counted: bool = False, ordered: bool = True) -> None:
    """Remove ``names`` from the list or map at the rule's (plain) path: list items that are one of them or a
    one-entry map keyed by one (GET_BROKER_CONSUME_STATS), map keys; a list not ``ordered`` is sorted. What is
    removed also leaves the body's totals: its lag leaves totalDiff and, when ``counted`` (created since the
    baseline), its creation leaves the table's version counter."""
    *parents, last = rule.parts
    container = tree
    for part in parents:
        container = container.get(part) if isinstance(container, dict) else None
    entries = container.get(last) if isinstance(container, dict) else None
    if isinstance(entries, dict):
        gone = [entries.pop(name) for name in names if name in entries]
    elif isinstance(entries, list):
        gone = [item for item in entries if _named(item) in names]
        entries[:] = [item for item in entries if _named(item) not in names]
        if not ordered:
            entries.sort(key=str)
    else:
        return
    body = tree.get("body") or {}
    if gone and counted and "dataVersion" in body:
        body["dataVersion"]["counter"] -= 1
    if gone and "totalDiff" in body:
        body["totalDiff"] -= sum(_lag(stats) for item in gone for stats in item.values())


def _named(item: Any) -> Any:
    return next(iter(item)) if isinstance(item, dict) and len(item) == 1 else item


def _lag(consume_stats: list[dict]) -> int:
    return sum(
        queue["brokerOffset"] - queue["consumerOffset"]
        for stats in consume_stats
        for queue in stats["offsetTable"].values()
    )


def _role_pattern(roles: Mapping[str, str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(addr) + r"(?!\d)" for addr in roles))


def _substitute(value: Any, pattern: re.Pattern[str], roles: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(lambda match: roles[match.group(0)], value)
    if isinstance(value, dict):
        return {_substitute(k, pattern, roles): _substitute(v, pattern, roles) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(item, pattern, roles) for item in value]
    return value


def _apply(value: Any, path: tuple[str, ...], rule: Rule, side: Side, target: str) -> Any:
    parts = rule.parts
    if len(path) >= len(parts):
        return value
    if isinstance(value, dict):
        if rule.kind == "path key" and len(path) == len(parts) - 1:
            return _move_path_keys(value, path, parts)
        children = value.items()
    elif isinstance(value, list):
        children = enumerate(value)
    else:
        return value
    result = {}
    for key, item in children:
        child = (*path, str(key))
        if rule.kind != "path key" and matches(parts, child):
            result[key] = _replace(item, rule, side, target)
        else:
            result[key] = _apply(item, child, rule, side, target)
    return list(result.values()) if isinstance(value, list) else result


def _move_path_keys(value: dict, path: tuple[str, ...], parts: tuple[str, ...]) -> dict:
    moved = {k: v for k, v in value.items() if not matches(parts, (*path, str(k)))}
    for key, item in value.items():
        if matches(parts, (*path, str(key))):
            moved[parts[-1].rstrip("*") + "<path>"] = item
    return moved


def _replace(value: Any, rule: Rule, side: Side, target: str) -> Any:
    if rule.kind == "traffic":
        return _minus(value, side.baseline[f"{target}.{rule.of or rule.parts[-1]}"])
    if rule.kind == "commitlog":
        return _minus(value, side.baseline[f"{target}.commitLogMaxOffset"])
    if rule.kind == "events":
        return _minus(value, side.baseline["events"])
    if rule.kind == "offset id":
        host, offset = decode_offset_msg_id(value)
        return f"{side.roles().get(host, host)}@{offset - side.baseline[f'{target}.commitLogMaxOffset']}"
    if rule.kind == "percent" and not (isinstance(value, str) and _WHOLE_PERCENT.fullmatch(value)):
        return value
    return f"<{rule.kind}: {type(value).__name__}>"


def _minus(value: Any, base: int) -> Any:
    """``value - base``, of value's type (brokers write some counters as strings)."""
    return str(int(value) - base) if isinstance(value, str) else value - base


# --- comparing ---------------------------------------------------------------------------------------------------


def differences(real: Any, sandbox: Any, ignored: Iterable[str] = (), path: tuple[str, ...] = ()) -> list[str]:
    """What differs, one line each: keys (missing, extra, order), types, values. Paths matching one of
    ``ignored`` (patterns as in :class:`Rule`) are skipped."""
    skipped = [tuple(pattern.split("/")) for pattern in ignored]
    found: list[str] = []
    _compare(real, sandbox, path, skipped, found)
    return found


def _compare(real: Any, sandbox: Any, path: tuple[str, ...], skipped: list, found: list[str]) -> None:
    if any(matches(parts, path) for parts in skipped):
        return
    where = "/".join(path) or "(answer)"
    if type(real) is not type(sandbox):
        found.append(f"{where}: real {real!r} ({type(real).__name__}), sandbox {sandbox!r} ({type(sandbox).__name__})")
        return
    if isinstance(real, dict):
        kept = [k for k in real if not any(matches(p, (*path, str(k))) for p in skipped)]
        other = [k for k in sandbox if not any(matches(p, (*path, str(k))) for p in skipped)]
        if kept != other:
            missing = [k for k in kept if k not in sandbox]
            extra = [k for k in other if k not in real]
            found.append(f"{where}: keys differ: real only {missing}, sandbox only {extra}, real order {kept}")
        for key in kept:
            if key in sandbox:
                _compare(real[key], sandbox[key], (*path, str(key)), skipped, found)
    elif isinstance(real, list):
        if len(real) != len(sandbox):
            found.append(f"{where}: real has {len(real)} items {real!r}, sandbox {len(sandbox)} {sandbox!r}")
            return
        for index, (left, right) in enumerate(zip(real, sandbox, strict=True)):
            _compare(left, right, (*path, str(index)), skipped, found)
    elif real != sandbox:
        found.append(f"{where}: real {real!r}, sandbox {sandbox!r}")
