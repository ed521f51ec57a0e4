"""The name server's route tables (4.9.4's RouteInfoManager) and the registration body a broker sends: queue data
per broker name from the topic configs its master registers, broker addresses, live brokers and their expiry. Dict
insertion order stands in for the Java HashMaps' and is turned into their iteration order when a body is built."""

from __future__ import annotations

import logging
import re
import struct
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from monitor.remoting import fastjson
from monitor.remoting.body import (
    MASTER_ID,
    BrokerData,
    ClusterInfo,
    DataVersion,
    PermName,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicRouteData,
)
from monitor.remoting.errors import ProtocolError
from monitor.remoting.javahash import java_hashmap_order
from monitor.sandbox.connection import Connection

log = logging.getLogger(__name__)

# TopicSysFlag bits.
_FLAG_UNIT = 0x1
_FLAG_UNIT_SUB = 0x2
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


# --- Java HashMap iteration order ------------------------------------------------------------------------------------


def _clone_capacity(size: int) -> int:
    """Table size of a HashMap.clone() of ``size`` entries (putMapEntries into an empty map)."""
    return int(size / 0.75 + 1.0)


def java_ordered(mapping: Mapping, initial_capacity: int = 16) -> dict:
    return {key: mapping[key] for key in java_hashmap_order(mapping, initial_capacity=initial_capacity)}


def _broker_data_copy(data: BrokerData, capacity: int = 16) -> BrokerData:
    return BrokerData(
        cluster=data.cluster, broker_name=data.broker_name, broker_addrs=java_ordered(data.broker_addrs, capacity)
    )


# --- RouteInfoManager ------------------------------------------------------------------------------------------------


@dataclass
class BrokerLiveInfo:
    last_update: float
    data_version: DataVersion
    connection: Connection | None
    ha_server_addr: str


@dataclass
class RegisterBrokerResult:
    ha_server_addr: str | None = None
    master_addr: str | None = None


class RouteInfoManager:
    """The name server's route tables, RouteInfoManager's semantics; dict insertion order stands in for the Java
    HashMaps' insertion order and is turned into their iteration order when a body is built.

    Not thread-safe: the name server only touches it from its loop, so no lock is needed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, dict[str, None]] = {}  # cluster -> set of broker names
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}

    # reading

    def get_all_cluster_info(self) -> ClusterInfo:
        brokers = java_ordered(self.broker_addr_table, 128)
        clusters = java_ordered(self.cluster_addr_table, 32)
        return ClusterInfo(
            broker_addr_table={name: _broker_data_copy(data) for name, data in brokers.items()},
            cluster_addr_table={cluster: java_hashmap_order(names) for cluster, names in clusters.items()},
        )

    def _topics(self) -> list[str]:
        return java_hashmap_order(self.topic_queue_table, initial_capacity=1024)

    def get_all_topic_list(self) -> TopicList:
        return TopicList(topic_list=java_hashmap_order(self._topics()))

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        """Topics with queues on any broker of the cluster (an unknown cluster gives an empty list: Java's
        NullPointerException there is caught and logged)."""
        found: dict[str, None] = {}
        for broker_name in java_hashmap_order(self.cluster_addr_table.get(cluster, {})):
            for topic in self._topics():
                if broker_name in self.topic_queue_table[topic]:
                    found.setdefault(topic)
        return TopicList(topic_list=java_hashmap_order(found))

    def get_system_topic_list(self) -> TopicList:
        """Cluster names and broker names (they are topics too), plus the address of some broker."""
        topics: dict[str, None] = {}
        for cluster, names in java_ordered(self.cluster_addr_table, 32).items():
            topics.setdefault(cluster)
            for name in java_hashmap_order(names):
                topics.setdefault(name)
        broker_addr = None
        for data in java_ordered(self.broker_addr_table, 128).values():
            if data.broker_addrs:
                broker_addr = data.broker_addrs[java_hashmap_order(data.broker_addrs)[0]]
                break
        return TopicList(topic_list=java_hashmap_order(topics), broker_addr=broker_addr)

    def _topics_by_first_queue(self, pick: Callable[[int], bool]) -> TopicList:
        """Topics whose first queue data (in iteration order) has a sys flag that ``pick`` accepts."""
        found: dict[str, None] = {}
        for topic in self._topics():
            queue_datas = self.topic_queue_table[topic]
            if queue_datas and pick(queue_datas[java_hashmap_order(queue_datas)[0]].topic_sys_flag):
                found.setdefault(topic)
        return TopicList(topic_list=java_hashmap_order(found))

    def get_unit_topics(self) -> TopicList:
        return self._topics_by_first_queue(lambda flag: flag & _FLAG_UNIT == _FLAG_UNIT)

    def get_has_unit_sub_topic_list(self) -> TopicList:
        return self._topics_by_first_queue(lambda flag: flag & _FLAG_UNIT_SUB == _FLAG_UNIT_SUB)

    def get_has_unit_sub_un_unit_topic_list(self) -> TopicList:
        return self._topics_by_first_queue(
            lambda flag: flag & _FLAG_UNIT != _FLAG_UNIT and flag & _FLAG_UNIT_SUB == _FLAG_UNIT_SUB
        )

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The topic's queues and the brokers that hold them; None when either is missing."""
        queue_datas = self.topic_queue_table.get(topic)
        if queue_datas is None:
            return None
        broker_names = java_hashmap_order(java_hashmap_order(queue_datas))
        broker_datas = []
        filter_servers: dict[str, list[str]] = {}
        for name in broker_names:
            data = self.broker_addr_table.get(name)
            if data is None:
                continue
            clone = _broker_data_copy(data, _clone_capacity(len(data.broker_addrs)))
            broker_datas.append(clone)
            if self.filter_server_table:
                for addr in clone.broker_addrs.values():
                    if addr in self.filter_server_table:
                        filter_servers[addr] = self.filter_server_table[addr]
        if not broker_datas:
            return None
        return TopicRouteData(
            queue_datas=[_copy_queue_data(queue_datas[name]) for name in java_hashmap_order(queue_datas)],
            broker_datas=broker_datas,
            filter_server_table=java_ordered(filter_servers),
        )

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live is not None else None

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        return self.query_broker_topic_config(broker_addr) != data_version

    # changing

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        wrapper: TopicConfigSerializeWrapper,
        filter_server_list: list[str] | None,
        connection: Connection | None,
    ) -> RegisterBrokerResult:
        self.cluster_addr_table.setdefault(cluster_name, {}).setdefault(broker_name)
        data = self.broker_addr_table.get(broker_name)
        register_first = data is None
        if data is None:
            data = self.broker_addr_table[broker_name] = BrokerData(cluster=cluster_name, broker_name=broker_name)
        # One address has one role: a slave promoted to master is re-registered under id 0, not kept under both.
        for other_id in [i for i, addr in data.broker_addrs.items() if addr == broker_addr and i != broker_id]:
            del data.broker_addrs[other_id]
        old_addr = data.broker_addrs.get(broker_id)
        data.broker_addrs[broker_id] = broker_addr
        register_first = register_first or old_addr is None

        if broker_id == MASTER_ID and (
            register_first or self.is_broker_topic_config_changed(broker_addr, wrapper.data_version)
        ):
            for config in wrapper.topic_config_table.values():
                self._create_and_update_queue_data(broker_name, config)

        if broker_addr not in self.broker_live_table:
            log.info("new broker registered, %s HAServer: %s", broker_addr, ha_server_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(
            self.clock(), wrapper.data_version, connection, ha_server_addr
        )
        if filter_server_list is not None:
            if filter_server_list:
                self.filter_server_table[broker_addr] = filter_server_list
            else:
                self.filter_server_table.pop(broker_addr, None)

        result = RegisterBrokerResult()
        if broker_id != MASTER_ID:
            master_addr = data.broker_addrs.get(MASTER_ID)
            master_live = self.broker_live_table.get(master_addr) if master_addr is not None else None
            if master_live is not None:
                result.ha_server_addr = master_live.ha_server_addr
                result.master_addr = master_addr
        return result

    def _create_and_update_queue_data(self, broker_name: str, config: TopicConfig) -> None:
        queue_data = QueueData(
            broker_name=broker_name,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_sys_flag=config.topic_sys_flag,
        )
        queue_datas = self.topic_queue_table.setdefault(config.topic_name, {})
        if not queue_datas:
            log.info("new topic registered, %s %s", config.topic_name, queue_data)
        queue_datas[broker_name] = queue_data

    def update_broker_info_update_timestamp(self, broker_addr: str) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update = self.clock()

    def change_write_perm(self, broker_name: str, *, wipe: bool) -> int:
        """WIPE_WRITE_PERM_OF_BROKER (drop the write bit) or ADD_WRITE_PERM_OF_BROKER (set perm to RW) on every
        queue data of the broker; returns how many topics were touched."""
        count = 0
        for queue_datas in self.topic_queue_table.values():
            queue_data = queue_datas.get(broker_name)
            if queue_data is not None:
                if wipe:
                    queue_data.perm &= ~PermName.PERM_WRITE
                else:
                    queue_data.perm = PermName.PERM_READ | PermName.PERM_WRITE
                count += 1
        return count

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Forget the topic, or with a cluster name only its queues on that cluster's brokers."""
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        queue_datas = self.topic_queue_table.get(topic)
        broker_names = self.cluster_addr_table.get(cluster_name)
        if not broker_names or queue_datas is None:
            return
        for name in broker_names:
            queue_datas.pop(name, None)
        if not queue_datas:
            del self.topic_queue_table[topic]

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        data = self.broker_addr_table.get(broker_name)
        if data is None:
            return
        data.broker_addrs.pop(broker_id, None)
        if data.broker_addrs:
            return
        del self.broker_addr_table[broker_name]
        names = self.cluster_addr_table.get(cluster_name)
        if names is not None:
            names.pop(broker_name, None)
            if not names:
                del self.cluster_addr_table[cluster_name]
        self._remove_topics_of(broker_name)

    def _remove_topics_of(self, broker_name: str | None) -> None:
        for topic in list(self.topic_queue_table):
            queue_datas = self.topic_queue_table[topic]
            queue_datas.pop(broker_name, None)
            if not queue_datas:
                del self.topic_queue_table[topic]

    def on_channel_destroy(self, remote_addr: str, connection: Connection | None) -> None:
        """A connection closed: if a broker registered over it, remove that broker at once (BrokerHousekeeping).

        As in Java, a connection no broker registered over is looked up by its remote address, which matches a
        broker address only when the scan of inactive brokers passes the broker address itself."""
        found = None
        if connection is not None:
            found = next((addr for addr, live in self.broker_live_table.items() if live.connection is connection), None)
        if found is None:
            found = remote_addr
        else:
            log.info("the broker's channel destroyed, %s, clean it's data structure at once", found)
        if not found:
            return
        self.broker_live_table.pop(found, None)
        self.filter_server_table.pop(found, None)
        name_found = None
        remove_name = False
        for name, data in java_ordered(self.broker_addr_table, 128).items():
            match = next((i for i, addr in data.broker_addrs.items() if addr == found), None)
            if match is not None:
                name_found = data.broker_name
                del data.broker_addrs[match]
            if not data.broker_addrs:
                remove_name = True
                del self.broker_addr_table[name]
            if name_found is not None:
                break
        if name_found is not None and remove_name:
            for cluster, names in java_ordered(self.cluster_addr_table, 32).items():
                if name_found in names:
                    del names[name_found]
                    if not names:
                        del self.cluster_addr_table[cluster]
                    break
        if remove_name:
            self._remove_topics_of(name_found)

    def scan_not_active_broker(self, expiry: float) -> int:
        """Close and remove brokers that have not registered for ``expiry`` seconds; returns how many."""
        now = self.clock()
        expired = [(addr, live) for addr, live in self.broker_live_table.items() if live.last_update + expiry < now]
        for addr, live in expired:
            log.warning("The broker channel expired, %s %gs", addr, expiry)
            if live.connection is not None:
                live.connection.close()
            self.broker_live_table.pop(addr, None)
            self.on_channel_destroy(addr, live.connection)
        return len(expired)


def _copy_queue_data(queue_data: QueueData) -> QueueData:
    return QueueData(
        broker_name=queue_data.broker_name,
        read_queue_nums=queue_data.read_queue_nums,
        write_queue_nums=queue_data.write_queue_nums,
        perm=queue_data.perm,
        topic_sys_flag=queue_data.topic_sys_flag,
    )


def decode_register_broker_body(data: bytes, compressed: bool) -> RegisterBrokerBody:
    """RegisterBrokerBody.decode: fastjson, or with ``compressed`` (brokers with compressedRegister=true) a zlib
    stream of int-length-prefixed parts: the DataVersion JSON, a topic count, each topic as TopicConfig.encode()'s
    "name read write perm filterType" text, then the filter server list JSON."""
    if not compressed:
        return RegisterBrokerBody.decode(data)
    try:
        raw = zlib.decompressobj().decompress(data)
    except zlib.error as exc:
        raise ProtocolError(f"compressed RegisterBrokerBody is not zlib data: {exc}") from None
    pos = 0

    def chunk() -> bytes:
        nonlocal pos
        if pos + 4 > len(raw):
            raise ProtocolError("compressed RegisterBrokerBody is truncated")
        (length,) = struct.unpack_from(">i", raw, pos)
        if length < 0 or pos + 4 + length > len(raw):
            raise ProtocolError(f"compressed RegisterBrokerBody part of {length} bytes is out of bounds")
        pos += 4 + length
        return raw[pos - length : pos]

    data_version = DataVersion.decode(chunk())
    if pos + 4 > len(raw):
        raise ProtocolError("compressed RegisterBrokerBody is truncated before the topic count")
    (count,) = struct.unpack_from(">i", raw, pos)
    pos += 4
    table = {}
    for _ in range(count):
        config = _decode_topic_config_text(chunk().decode("utf-8", "replace"))
        table[config.topic_name] = config
    try:
        filters = [str(item) for item in fastjson.loads(chunk())]
    except (ProtocolError, TypeError):  # Java logs a bad filter server list and registers none
        filters = []
    return RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(topic_config_table=table, data_version=data_version),
        filter_server_list=filters,
    )


def _decode_topic_config_text(text: str) -> TopicConfig:
    parts = text.split(" ")
    if (
        len(parts) != 5
        or not all(_JAVA_INT.fullmatch(p) for p in parts[1:4])
        or parts[4] not in TopicFilterType.__members__
    ):
        raise ProtocolError(f"bad topic config entry in compressed RegisterBrokerBody: {text!r}")
    return TopicConfig(
        topic_name=parts[0],
        read_queue_nums=int(parts[1]),
        write_queue_nums=int(parts[2]),
        perm=int(parts[3]),
        topic_filter_type=TopicFilterType[parts[4]],
    )
