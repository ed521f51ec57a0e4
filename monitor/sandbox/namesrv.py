"""The sandbox name server: RocketMQ 4.9.4's name server, in memory, on the sandbox RemotingServer.

Clients find brokers only through the name server, so the admin client and the C++ client must get exactly what a
real 4.9.4 name server sends. This module ports its behaviour, not just its message shapes:

* DefaultRequestProcessor: every request code the real one handles, with the same response headers (an empty
  ``extFields`` where Java builds a response from a header class whose fields are all null), remarks and error
  codes; GET_ROUTEINFO_BY_TOPIC answers standard JSON to requests of version >= 401 (V4_9_4) or with
  acceptStandardJsonOnly=true and plain fastjson, with unquoted integer map keys, to older clients (the C++ client
  sends 63); any other code gets no answer at all, so the client times out.
* RouteInfoManager: queue data per broker name comes from the topic configs a master registers (slaves only add
  their address); a slave learns its master's address and HA address from the registration response; a broker is
  removed the moment its connection closes, when it unregisters, or once it has not registered for 120 s. Its
  quirks are kept too: topics a master stops registering stay until DELETE_TOPIC_IN_NAMESRV, and a broker name
  disappears only when its last member does.
* KVConfigManager: namespaced key/value config; ORDER_TOPIC_CONFIG entries travel in REGISTER_BROKER responses
  and, with orderMessageEnable, as a route's orderTopicConf. Nothing is written to disk.
* Configuration: GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG Properties text with the real key set and order;
  listenPort is the port actually bound, serverChannelMaxIdleTimeSeconds closes idle connections accepted after it
  is set, orderMessageEnable switches orderTopicConf; values that do not parse are ignored, as MixAll does.

Bodies list map entries in the order the Java HashMaps behind them iterate (javahash.java_hashmap_order), so even
the bytes match a real name server holding the same data.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import struct
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from monitor.remoting import fastjson
from monitor.remoting import headers as h
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE
from monitor.remoting.body import (
    MASTER_ID,
    BrokerData,
    ClusterInfo,
    DataVersion,
    KVTable,
    PermName,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicRouteData,
    format_properties,
    parse_properties,
)
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import ProtocolError
from monitor.remoting.javahash import java_hashmap_order
from monitor.sandbox.server import Connection, RemotingServer

log = logging.getLogger(__name__)

# RouteInfoManager.BROKER_CHANNEL_EXPIRED_TIME and NamesrvController's scan period.
BROKER_CHANNEL_EXPIRED_SECONDS = 120.0
SCAN_NOT_ACTIVE_BROKER_SECONDS = 10.0
# MQVersion.Version ordinals: brokers older than V3_0_11 register a bare TopicConfigSerializeWrapper; clients of
# V4_9_4 and later get standard JSON routes.
_V3_0_11 = 37
_V4_9_4 = 401
# FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL).
_APPLY_TOPIC_HINT = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
# TopicSysFlag bits.
_FLAG_UNIT = 0x1
_FLAG_UNIT_SUB = 0x2
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


# --- Java HashMap iteration order ------------------------------------------------------------------------------------


def _clone_capacity(size: int) -> int:
    """Table size of a HashMap.clone() of ``size`` entries (putMapEntries into an empty map)."""
    return int(size / 0.75 + 1.0)


def _ordered(mapping: Mapping, initial_capacity: int = 16) -> dict:
    return {key: mapping[key] for key in java_hashmap_order(mapping, initial_capacity=initial_capacity)}


def _broker_data_copy(data: BrokerData, capacity: int = 16) -> BrokerData:
    return BrokerData(
        cluster=data.cluster, broker_name=data.broker_name, broker_addrs=_ordered(data.broker_addrs, capacity)
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
        brokers = _ordered(self.broker_addr_table, 128)
        clusters = _ordered(self.cluster_addr_table, 32)
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
        for cluster, names in _ordered(self.cluster_addr_table, 32).items():
            topics.setdefault(cluster)
            for name in java_hashmap_order(names):
                topics.setdefault(name)
        broker_addr = None
        for data in _ordered(self.broker_addr_table, 128).values():
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
            filter_server_table=_ordered(filter_servers),
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
        for name, data in _ordered(self.broker_addr_table, 128).items():
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
            for cluster, names in _ordered(self.cluster_addr_table, 32).items():
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


# --- KVConfigManager -------------------------------------------------------------------------------------------------


class KVConfigManager:
    """Namespaced key/value configuration (ORDER_TOPIC_CONFIG and whatever admins put there), in memory only."""

    def __init__(self):
        self.config_table: dict[str, dict[str, str]] = {}

    def put(self, namespace: str, key: str, value: str) -> None:
        self.config_table.setdefault(namespace, {})[key] = value

    def get(self, namespace: str, key: str) -> str | None:
        return self.config_table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        """Remove a key; the namespace stays, even empty, as in Java."""
        self.config_table.get(namespace, {}).pop(key, None)

    def kv_list(self, namespace: str) -> bytes | None:
        """The namespace as a KVTable body, None when the namespace was never written."""
        table = self.config_table.get(namespace)
        return KVTable(table=_ordered(table)).encode() if table is not None else None


# --- configuration ---------------------------------------------------------------------------------------------------


def _default_config() -> dict[str, str | int | bool]:
    """NamesrvConfig + NettyServerConfig defaults, in the order GET_NAMESRV_CONFIG lists them (the hash order of
    the 4.9.4 name server's Properties, which depends only on this key set). Paths are the Java defaults:
    rocketmqHome from ROCKETMQ_HOME (else this package, the sandbox's installation), the rest under the home
    directory, where a real name server would keep them; the sandbox itself writes nothing there."""
    user_home = os.path.expanduser("~")
    return {
        "serverSocketBacklog": 1024,
        "writeBufferHighWaterMark": 0,
        "serverWorkerThreads": 8,
        "serverSelectorThreads": 3,
        "serverChannelMaxIdleTimeSeconds": 120,
        "writeBufferLowWaterMark": 0,
        "serverSocketRcvBufSize": 0,
        "serverAsyncSemaphoreValue": 64,
        "kvConfigPath": os.path.join(user_home, "namesrv", "kvConfig.json"),
        "configStorePath": os.path.join(user_home, "namesrv", "namesrv.properties"),
        "clusterTest": False,
        "orderMessageEnable": False,
        "serverSocketSndBufSize": 0,
        "serverOnewaySemaphoreValue": 256,
        "serverCallbackExecutorThreads": 0,
        "listenPort": 9876,
        "rocketmqHome": os.environ.get("ROCKETMQ_HOME") or str(Path(__file__).resolve().parent),
        "productEnvName": "center",
        "useEpollNativeSelector": False,
        "serverPooledByteBufAllocatorEnable": True,
    }


def _java_text(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_like(current: str | int | bool, text: str) -> str | int | bool | None:
    """MixAll.properties2Object's conversion for a field of ``current``'s type; None where Java's parse throws."""
    if isinstance(current, bool):
        return text.lower() == "true"  # Boolean.parseBoolean
    if isinstance(current, int):
        if not _JAVA_INT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
            return None
        return int(text)
    return text


# --- the server ------------------------------------------------------------------------------------------------------


class NameServer(RemotingServer):
    """A 4.9.4 name server on 127.0.0.1: ``NameServer(port=0).start()``, then ``.addr``, ``.stop()``.

    ``config`` overrides NamesrvConfig/NettyServerConfig entries as a ``-c namesrv.properties`` file would;
    ``broker_expiry`` and ``scan_interval`` shorten the 120 s / 10 s broker expiry for tests."""

    def __init__(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        config: Mapping[str, str] | None = None,
        broker_expiry: float = BROKER_CHANNEL_EXPIRED_SECONDS,
        scan_interval: float = SCAN_NOT_ACTIVE_BROKER_SECONDS,
    ):
        super().__init__(host=host, port=port, answer_unknown_codes=False, name="namesrv")
        self.routes = RouteInfoManager()
        self.kv = KVConfigManager()
        self.config = _default_config()
        self.broker_expiry = broker_expiry
        self.scan_interval = scan_interval
        self._scan_task: asyncio.Task | None = None
        if config:
            self._update_config(config)
        self.on_close(lambda conn: self.routes.on_channel_destroy(conn.remote_addr, conn))
        handlers = {
            RequestCode.PUT_KV_CONFIG: self._put_kv_config,
            RequestCode.GET_KV_CONFIG: self._get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self._delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self._query_data_version,
            RequestCode.REGISTER_BROKER: self._register_broker,
            RequestCode.UNREGISTER_BROKER: self._unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self._get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self._get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self._wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self._add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self._topic_list(self.routes.get_all_topic_list),
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self._delete_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self._get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self._get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self._topic_list(self.routes.get_system_topic_list),
            RequestCode.GET_UNIT_TOPIC_LIST: self._topic_list(self.routes.get_unit_topics),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self._topic_list(self.routes.get_has_unit_sub_topic_list),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self._topic_list(
                self.routes.get_has_unit_sub_un_unit_topic_list
            ),
            RequestCode.UPDATE_NAMESRV_CONFIG: self._update_namesrv_config,
            RequestCode.GET_NAMESRV_CONFIG: self._get_namesrv_config,
        }
        for code, handler in handlers.items():
            self.register(code, handler)

    # --- lifecycle -------------------------------------------------------------------------------------------------

    async def start_async(self) -> Self:
        await super().start_async()
        self.config["listenPort"] = self.port
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_not_active_brokers())
        return self

    async def stop_async(self) -> None:
        if self._scan_task is not None:
            self._scan_task.cancel()
            await asyncio.gather(self._scan_task, return_exceptions=True)
            self._scan_task = None
        await super().stop_async()

    async def _scan_not_active_brokers(self) -> None:
        while True:
            await asyncio.sleep(self.scan_interval)
            self.routes.scan_not_active_broker(self.broker_expiry)

    # --- KV config -------------------------------------------------------------------------------------------------

    async def _put_kv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.PutKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        self.kv.put(header.namespace, header.key, header.value)
        return cmd.make_response()

    async def _get_kv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        value = self.kv.get(header.namespace, header.key)
        if value is not None:
            return cmd.make_response(ext_fields={"value": value})
        remark = f"No config item, Namespace: {header.namespace} Key: {header.key}"
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, remark, ext_fields={})

    async def _delete_kv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.DeleteKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        self.kv.delete(header.namespace, header.key)
        return cmd.make_response()

    async def _get_kv_list_by_namespace(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetKVListByNamespaceRequestHeader.from_ext_fields(cmd.ext_fields)
        body = self.kv.kv_list(header.namespace)
        if body is not None:
            return cmd.make_response(body=body)
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}")

    # --- brokers ---------------------------------------------------------------------------------------------------

    async def _register_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.RegisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        if header.body_crc32 != 0 and zlib.crc32(cmd.body) & 0x7FFFFFFF != header.body_crc32:
            log.warning("receive registerBroker request,crc32 not match,from %s", conn.remote_addr)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, "crc32 not match", ext_fields={})
        empty_version = DataVersion(timestamp=0, counter=0)
        filter_servers: list[str] | None
        if cmd.version >= _V3_0_11:
            if cmd.body:
                body = decode_register_broker_body(cmd.body, header.compressed)
            else:
                body = RegisterBrokerBody(TopicConfigSerializeWrapper(data_version=empty_version))
            wrapper, filter_servers = body.topic_config_serialize_wrapper, body.filter_server_list
        else:
            if cmd.body:
                wrapper = TopicConfigSerializeWrapper.decode(cmd.body)
            else:
                wrapper = TopicConfigSerializeWrapper(data_version=empty_version)
            filter_servers = None
        result = self.routes.register_broker(
            header.cluster_name,
            header.broker_addr,
            header.broker_name,
            header.broker_id,
            header.ha_server_addr,
            wrapper,
            filter_servers,
            conn,
        )
        response_header = h.RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        )
        return cmd.make_response(
            ext_fields=response_header.to_ext_fields(), body=self.kv.kv_list(ORDER_TOPIC_NAMESPACE) or b""
        )

    async def _unregister_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.UnRegisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        self.routes.unregister_broker(header.cluster_name, header.broker_addr, header.broker_name, header.broker_id)
        return cmd.make_response()

    async def _query_data_version(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """A broker asking whether its topic config version is the one registered (brokers with
        forceRegister=false ask before re-registering); an unchanged answer counts as a heartbeat."""
        header = _QueryDataVersionRequestHeader.from_ext_fields(cmd.ext_fields)
        data_version = DataVersion.decode(cmd.body)
        changed = self.routes.is_broker_topic_config_changed(header.broker_addr, data_version)
        if not changed:
            self.routes.update_broker_info_update_timestamp(header.broker_addr)
        registered = self.routes.query_broker_topic_config(header.broker_addr)
        return cmd.make_response(
            ext_fields={"changed": "true" if changed else "false"},
            body=registered.encode() if registered is not None else b"",
        )

    async def _wipe_write_perm_of_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = _BrokerNameRequestHeader.from_ext_fields(cmd.ext_fields)
        count = self.routes.change_write_perm(header.broker_name, wipe=True)
        log.info("wipe write perm of broker[%s], client: %s, %s", header.broker_name, conn.remote_addr, count)
        return cmd.make_response(ext_fields={"wipeTopicCount": str(count)})

    async def _add_write_perm_of_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = _BrokerNameRequestHeader.from_ext_fields(cmd.ext_fields)
        count = self.routes.change_write_perm(header.broker_name, wipe=False)
        log.info("add write perm of broker[%s], client: %s, %s", header.broker_name, conn.remote_addr, count)
        return cmd.make_response(ext_fields={"addTopicCount": str(count)})

    # --- topics and routes -----------------------------------------------------------------------------------------

    async def _get_route_info_by_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetRouteInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        route = self.routes.pickup_topic_route_data(header.topic)
        if route is None:
            remark = f"No topic route info in name server for the topic: {header.topic}{_APPLY_TOPIC_HINT}"
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, remark)
        if self.config["orderMessageEnable"]:
            route.order_topic_conf = self.kv.get(ORDER_TOPIC_NAMESPACE, header.topic)
        standard_json = cmd.version >= _V4_9_4 or bool(header.accept_standard_json_only)
        return cmd.make_response(body=route.encode(standard_json=standard_json))

    async def _get_broker_cluster_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=self.routes.get_all_cluster_info().encode())

    def _topic_list(
        self, build: Callable[[], TopicList]
    ) -> Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand]]:
        """A handler answering with a TopicList body, for the codes that differ only in which list."""

        async def handler(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            return cmd.make_response(body=build().encode())

        return handler

    async def _get_topics_by_cluster(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetTopicsByClusterRequestHeader.from_ext_fields(cmd.ext_fields)
        return cmd.make_response(body=self.routes.get_topics_by_cluster(header.cluster).encode())

    async def _delete_topic_in_namesrv(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.DeleteTopicFromNamesrvRequestHeader.from_ext_fields(cmd.ext_fields)
        self.routes.delete_topic(header.topic, header.cluster_name)
        return cmd.make_response()

    # --- configuration ---------------------------------------------------------------------------------------------

    async def _get_namesrv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        text = format_properties({key: _java_text(value) for key, value in self.config.items()})
        return cmd.make_response(body=text.encode("utf-8"))

    async def _update_namesrv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        log.info("updateConfig called by %s", conn.remote_addr)
        if cmd.body:
            try:
                properties = parse_properties(cmd.body)
            except ProtocolError:
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
            self._update_config(properties)
        return cmd.make_response()

    def _update_config(self, properties: Mapping[str, str]) -> None:
        """Configuration.update: only existing keys, each parsed like its field; unparsable values are ignored."""
        for key, text in properties.items():
            if key in self.config:
                value = _parse_like(self.config[key], text)
                if value is not None:
                    self.config[key] = value
        self.idle_timeout = float(self.config["serverChannelMaxIdleTimeSeconds"]) or None


@h.header
class _QueryDataVersionRequestHeader(h.CommandHeader):
    broker_name: str = h.wire(required=True)
    broker_addr: str = h.wire(required=True)
    cluster_name: str = h.wire(required=True)
    broker_id: int = h.wire(required=True)


@h.header
class _BrokerNameRequestHeader(h.CommandHeader):
    """WipeWritePermOfBrokerRequestHeader and AddWritePermOfBrokerRequestHeader."""

    broker_name: str = h.wire(required=True)
