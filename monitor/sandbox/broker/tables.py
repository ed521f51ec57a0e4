"""The broker's metadata tables: topics (TopicConfigManager), subscription groups (SubscriptionGroupManager) and
committed consumer offsets (ConsumerOffsetManager), with 4.9.4's built-in entries and auto-creation rules.

Each table is a dict in insertion order standing in for the Java ConcurrentHashMap, and is turned into that map's
iteration order when a body is built, so GET_ALL_TOPIC_CONFIG, REGISTER_BROKER and GET_ALL_SUBSCRIPTIONGROUP_CONFIG
list entries as the real broker does. Every change bumps the table's DataVersion as Java's nextVersion() does:
slaves and name servers compare versions to decide whether anything changed. Nothing is persisted.

A broker may hold 10,000 topics and as many groups, so nothing a request asks for scans a whole table: the
whole-table bodies are cached until the table changes (each table counts its changes, ``revision``), and committed
offsets are indexed by group and by topic.

The tables are only touched from the broker's event loop, so they need no locks. Table entries are never changed
in place, only replaced, so a shallow copy of a table is a snapshot a worker thread may encode.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace

from monitor.remoting.body import (
    ConsumerOffsetSerializeWrapper,
    DataVersion,
    PermName,
    RegisterBrokerBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from monitor.remoting.javahash import java_hashmap_order
from monitor.sandbox.broker._common import (
    GROUP_TABLE_CAPACITY,
    OFFSET_QUEUE_CAPACITY,
    OFFSET_TABLE_CAPACITY,
    TOPIC_TABLE_CAPACITY,
    EncodedBodies,
    next_version,
    ordered,
)
from monitor.sandbox.broker.config import BrokerConfig

# TopicValidator / MixAll names.
AUTO_CREATE_TOPIC = "TBW102"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
SCHEDULE_TOPIC_QUEUE_NUM = 18
TOPIC_GROUP_SEPARATOR = "@"
_SYS_GROUP_PREFIX = "CID_RMQ_SYS_"
_SYSTEM_TOPIC_PREFIX = "rmq_sys_"
# TopicValidator's static sets; the broker adds its cluster, broker-name, trace and reply topics at boot.
_STATIC_SYSTEM_TOPICS = frozenset(
    {
        AUTO_CREATE_TOPIC,
        SCHEDULE_TOPIC,
        BENCHMARK_TOPIC,
        TRANS_HALF_TOPIC,
        TRACE_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)
_TOPIC_PATTERN_CHARS = frozenset("%|-_") | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_TOPIC_MAX_LENGTH = 127
_READ_WRITE = PermName.PERM_READ | PermName.PERM_WRITE

# SubscriptionGroupManager.init: the groups every 4.9.4 broker starts with, all with default settings.
_SYSTEM_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def topic_problem(topic: str) -> str | None:
    """TopicValidator.validateTopic: the remark a bad topic name gets, None for a good one."""
    if not topic.strip():
        return "The specified topic is blank."
    if any(char not in _TOPIC_PATTERN_CHARS for char in topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > _TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def _topic_table_wrapper(
    table: dict[str, TopicConfig], version: DataVersion, permission: int
) -> TopicConfigSerializeWrapper:
    """buildTopicConfigSerializeWrapper / encode(): the table in ConcurrentHashMap order and the version.

    With a brokerPermission that is not read-write, every topic is registered with that permission instead
    (registerBrokerAll), so clients stop writing to (or reading from) this broker."""
    table = ordered(table, TOPIC_TABLE_CAPACITY)
    if not (PermName.is_writeable(permission) and PermName.is_readable(permission)):
        table = {name: replace(config, perm=permission) for name, config in table.items()}
    return TopicConfigSerializeWrapper(topic_config_table=table, data_version=version)


def _register_body(wrapper: TopicConfigSerializeWrapper) -> bytes:
    return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[]).encode()


def _all_topics_body(wrapper: TopicConfigSerializeWrapper) -> bytes:
    return wrapper.encode()


class TopicConfigManager:
    """Topics this broker serves, starting with the system topics a 4.9.4 broker creates at boot.

    RMQ_SYS_TRANS_HALF_TOPIC is among them: a real broker's transaction check service creates it within its first
    minute, and every captured table already has it. That creation is a change (createTopicInSendMessageBackMethod
    steps the version), so the table starts at version 1, as a real broker's does once it is a minute old."""

    def __init__(self, config: BrokerConfig):
        self.config = config
        self.data_version = DataVersion(counter=0)
        self.table: dict[str, TopicConfig] = {}
        self._changes = 0
        self._bodies = EncodedBodies()
        cluster, broker_name = config["brokerClusterName"], config["brokerName"]
        queue_nums = config["defaultTopicQueueNums"]
        self._add_system(SELF_TEST_TOPIC, 1)
        if config["autoCreateTopicEnable"]:
            self._add_system(AUTO_CREATE_TOPIC, queue_nums, PermName.PERM_INHERIT | _READ_WRITE)
        self._add_system(BENCHMARK_TOPIC, 1024)
        self._add_system(cluster, 16, PermName.PERM_INHERIT | (_READ_WRITE if config["clusterTopicEnable"] else 0))
        self._add_system(broker_name, 1, PermName.PERM_INHERIT | (_READ_WRITE if config["brokerTopicEnable"] else 0))
        self._add_system(OFFSET_MOVED_EVENT, 1)
        self._add_system(SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM)
        if config["traceTopicEnable"]:
            self._add_system(config["msgTraceTopicName"], 1)
        self._add_system(f"{cluster}_{REPLY_TOPIC_POSTFIX}", 1)
        self._add_system(TRANS_HALF_TOPIC, 1)
        next_version(self.data_version)
        self.system_topics = _STATIC_SYSTEM_TOPICS | frozenset(self.table)

    def _add_system(self, topic: str, queue_nums: int, perm: int = _READ_WRITE) -> None:
        self.table[topic] = TopicConfig(
            topic_name=topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums, perm=perm
        )

    @property
    def revision(self) -> tuple[int, int, int]:
        """Changes whenever the table or its version does (some changes keep the version, as in Java)."""
        return self._changes, self.data_version.timestamp, self.data_version.counter

    def _changed(self) -> None:
        self._changes += 1
        next_version(self.data_version)

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        """TopicValidator.isSystemTopic: admins may neither create nor delete these."""
        return topic in self.system_topics or topic.startswith(_SYSTEM_TOPIC_PREFIX)

    def update(self, config: TopicConfig) -> None:
        """updateTopicConfig (admin create/update): replace, and a new version."""
        self.table.pop(config.topic_name, None)
        self.table[config.topic_name] = config
        self._changed()

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self._changed()
        return True

    def create_in_send(
        self, topic: str, default_topic: str, client_queue_nums: int, topic_sys_flag: int
    ) -> TopicConfig | None:
        """createTopicInSendMessageMethod: a new topic shaped like an inheritable default topic (TBW102 when
        autoCreateTopicEnable), with at most the client's queue count; None when the default cannot be inherited."""
        if topic in self.table:
            return self.table[topic]
        default = self.table.get(default_topic)
        if default is None:
            return None
        reset = default_topic == AUTO_CREATE_TOPIC and not self.config["autoCreateTopicEnable"]
        if reset and default.perm != _READ_WRITE:
            # Java sets the perm in place without a new version; replacing the entry keeps its place in the table.
            default = self.table[default_topic] = replace(default, perm=_READ_WRITE)
            self._changes += 1
        if not PermName.is_inherited(default.perm):
            return None
        queue_nums = max(min(client_queue_nums, default.write_queue_nums), 0)
        created = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=default.perm & ~PermName.PERM_INHERIT,
            topic_filter_type=default.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        self.table[topic] = created
        self._changed()
        return created

    def create_in_send_back(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int
    ) -> tuple[TopicConfig, bool]:
        """createTopicInSendMessageBackMethod (retry and DLQ topics); also says whether it was created now."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing, False
        created = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_sys_flag=topic_sys_flag,
        )
        self.table[topic] = created
        self._changed()
        return created, True

    def update_order_config(self, order_topics: Collection[str]) -> bool:
        """updateOrderTopicConfig, with the ORDER_TOPIC_CONFIG keys a name server answered a registration with:
        those topics become ordered and every other stops being so; any change is a new version. Says whether
        anything changed."""
        changed = False
        for name, config in self.table.items():
            if config.order != (name in order_topics):
                self.table[name] = replace(config, order=name in order_topics)
                changed = True
        if changed:
            self._changed()
        return changed

    async def register_body(self) -> bytes:
        """The registerBrokerAll body (RegisterBrokerBody, no filter servers) of the whole table."""
        return await self._body("register", _register_body)

    async def all_topics_body(self) -> bytes:
        """The GET_ALL_TOPIC_CONFIG body."""
        return await self._body("all", _all_topics_body)

    async def _body(self, kind: str, encode: Callable[[TopicConfigSerializeWrapper], bytes]) -> bytes:
        permission = int(self.config["brokerPermission"])

        def prepare() -> Callable[[], bytes]:
            table, version = dict(self.table), replace(self.data_version)
            return lambda: encode(_topic_table_wrapper(table, version, permission))

        return await self._bodies.get((self.revision, permission), kind, prepare)

    def replace_all(self, wrapper: TopicConfigSerializeWrapper) -> bool:
        """SlaveSynchronize.syncTopicConfig: take the master's table when its version differs."""
        return _take_master_table(self, wrapper.topic_config_table, wrapper.data_version)


def _take_master_table(manager, table: dict, version: DataVersion) -> bool:
    """A slave's copy of one of its master's tables: replaced when the master's DataVersion differs (whatever
    changed there), left alone otherwise; says whether it was replaced."""
    if version == manager.data_version:
        return False
    manager.table = dict(table)
    manager.data_version = replace(version)
    manager._changes += 1
    return True


class SubscriptionGroupManager:
    """Consumer groups: the built-in ones, the ones admins create, and (autoCreateSubscriptionGroup) any group a
    client names, which is why a C++ producer's UNREGISTER_CLIENT with consumerGroup "" leaves a group "" behind."""

    def __init__(self, config: BrokerConfig):
        self.config = config
        self.data_version = DataVersion(counter=0)
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self._changes = 0
        self._bodies = EncodedBodies()
        for name in _SYSTEM_GROUPS:
            self.table[name] = SubscriptionGroupConfig(group_name=name)

    @property
    def revision(self) -> tuple[int, int, int]:
        """Changes whenever the table or its version does."""
        return self._changes, self.data_version.timestamp, self.data_version.counter

    def _changed(self) -> None:
        self._changes += 1
        next_version(self.data_version)

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """findSubscriptionGroupConfig, creating the group when auto-creation is on or it is a system group."""
        found = self.table.get(group)
        if found is None and (self.config["autoCreateSubscriptionGroup"] or group.startswith(_SYS_GROUP_PREFIX)):
            found = self.table[group] = SubscriptionGroupConfig(group_name=group)
            self._changed()
        return found

    def update(self, config: SubscriptionGroupConfig) -> None:
        self.table[config.group_name] = config
        self._changed()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self._changed()
        return True

    def names(self) -> list[str]:
        """The group names in the table's ConcurrentHashMap order."""
        return java_hashmap_order(self.table, initial_capacity=GROUP_TABLE_CAPACITY)

    async def all_groups_body(self) -> bytes:
        """The GET_ALL_SUBSCRIPTIONGROUP_CONFIG body."""

        def prepare() -> Callable[[], bytes]:
            table, version = dict(self.table), replace(self.data_version)
            return lambda: SubscriptionGroupWrapper(
                subscription_group_table=ordered(table, GROUP_TABLE_CAPACITY), data_version=version
            ).encode()

        return await self._bodies.get(self.revision, "all", prepare)

    def replace_all(self, wrapper: SubscriptionGroupWrapper) -> bool:
        """SlaveSynchronize.syncSubscriptionGroupConfig: take the master's groups when its version differs."""
        return _take_master_table(self, wrapper.subscription_group_table, wrapper.data_version)


class ConsumerOffsetManager:
    """Committed offsets by "topic@group" and queue id (clients commit them; slaves copy the master's).

    whichTopicByConsumer and whichGroupByTopic walk the whole table in Java; here the "topic@group" keys (those with
    exactly one separator, the only ones they match) are also indexed by group and by topic, each index keeping
    the table's insertion order, so GET_CONSUME_STATS of one group does not scan every group's offsets."""

    def __init__(self):
        self.table: dict[str, dict[int, int]] = {}
        self._changes = 0
        self._bodies = EncodedBodies()
        self._by_group: dict[str, dict[str, str]] = {}  # group -> key -> topic, in the table's order
        self._by_topic: dict[str, dict[str, str]] = {}  # topic -> key -> group, in the table's order

    def _added(self, key: str) -> None:
        parts = key.split(TOPIC_GROUP_SEPARATOR)
        if len(parts) == 2:
            topic, group = parts
            self._by_group.setdefault(group, {})[key] = topic
            self._by_topic.setdefault(topic, {})[key] = group

    def _removed(self, key: str) -> None:
        parts = key.split(TOPIC_GROUP_SEPARATOR)
        if len(parts) == 2:
            topic, group = parts
            for index, name in ((self._by_group, group), (self._by_topic, topic)):
                keys = index[name]
                del keys[key]
                if not keys:
                    del index[name]

    @property
    def revision(self) -> int:
        """Changes whenever the table does (it has no version: commits change it all the time)."""
        return self._changes

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        queues = self.table.get(key)
        if queues is None:
            queues = self.table[key] = {}
            self._added(key)
        queues[queue_id] = offset
        self._changes += 1

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, -1 when the group never committed one for the queue."""
        return self.table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id, -1)

    def _in_table_order(self, keys: dict[str, str]) -> list[str]:
        """The values of some keys of the table, in the order the whole table iterates: the keys are given in
        insertion order and sorted into the buckets of a map the table's size (see javahash)."""
        if len(keys) < 2:
            return list(keys.values())
        order = java_hashmap_order(keys, initial_capacity=OFFSET_TABLE_CAPACITY, peak_size=len(self.table))
        return [keys[key] for key in order]

    def topics_of_group(self, group: str) -> list[str]:
        """whichTopicByConsumer."""
        return self._in_table_order(self._by_group.get(group, {}))

    def groups_of_topic(self, topic: str) -> list[str]:
        """whichGroupByTopic."""
        return self._in_table_order(self._by_topic.get(topic, {}))

    def remove_group(self, group: str) -> None:
        """removeOffset: forget every topic's offsets of a group (DELETE_SUBSCRIPTIONGROUP with removeOffset)."""
        for key in [key for key in self.table if key.split(TOPIC_GROUP_SEPARATOR)[-1] == group]:
            del self.table[key]
            self._removed(key)
            self._changes += 1

    async def all_offsets_body(self) -> bytes:
        """The GET_ALL_CONSUMER_OFFSET body, in the ConcurrentHashMaps' order."""

        def prepare() -> Callable[[], bytes]:
            table = {key: dict(queues) for key, queues in self.table.items()}  # commits change the queues in place
            return lambda: ConsumerOffsetSerializeWrapper(
                offset_table={
                    key: ordered(queues, OFFSET_QUEUE_CAPACITY)
                    for key, queues in ordered(table, OFFSET_TABLE_CAPACITY).items()
                }
            ).encode()

        return await self._bodies.get(self.revision, "all", prepare)

    def merge(self, wrapper: ConsumerOffsetSerializeWrapper) -> None:
        """SlaveSynchronize.syncConsumerOffset: putAll of the master's table (whole "topic@group" entries)."""
        for key, queues in wrapper.offset_table.items():
            if self.table.pop(key, None) is not None:
                self._removed(key)
            self.table[key] = dict(queues)
            self._added(key)
        self._changes += 1
