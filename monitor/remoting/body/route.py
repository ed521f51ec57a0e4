"""Routing bodies: what name servers know about clusters, brokers, topics and queues, and what brokers register.

Names and defaults follow org.apache.rocketmq.common (4.9.x): ``protocol/route``, ``protocol/body``,
``TopicConfig``, ``DataVersion``, ``constant/PermName``, ``message/MessageQueue``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from monitor.remoting.body._wire import WireBean, browser_compatible_json, now_millis

MASTER_ID = 0


class PermName:
    """Topic/queue permission bits (``perm``) and RocketMQ's text form of them (``PermName.perm2String``)."""

    PERM_PRIORITY = 0x8
    PERM_READ = 0x4
    PERM_WRITE = 0x2
    PERM_INHERIT = 0x1

    @staticmethod
    def is_readable(perm: int) -> bool:
        return bool(perm & PermName.PERM_READ)

    @staticmethod
    def is_writeable(perm: int) -> bool:
        return bool(perm & PermName.PERM_WRITE)

    @staticmethod
    def is_inherited(perm: int) -> bool:
        return bool(perm & PermName.PERM_INHERIT)

    @staticmethod
    def perm_to_string(perm: int) -> str:
        """``"RW-"`` for 6, ``"RWX"`` for 7, ``"R--"`` for 4: read, write, inherit."""
        return (
            ("R" if PermName.is_readable(perm) else "-")
            + ("W" if PermName.is_writeable(perm) else "-")
            + ("X" if PermName.is_inherited(perm) else "-")
        )


class TopicFilterType(enum.Enum):
    SINGLE_TAG = 0
    MULTI_TAG = 1


@dataclass
class DataVersion(WireBean):
    """Version stamp of a broker's topic or subscription table; name servers compare it to skip re-registration."""

    timestamp: int = field(default_factory=now_millis)
    counter: int = 0


@dataclass(frozen=True, order=True)
class MessageQueue(WireBean):
    """One queue of a topic on a broker; ordered like Java's compareTo (topic, broker name, queue id)."""

    topic: str
    broker_name: str
    queue_id: int


@dataclass
class BrokerData(WireBean):
    """A broker name (master/slave set) and the address of each member by broker id (0 = master)."""

    cluster: str = ""
    broker_name: str = ""
    broker_addrs: dict[int, str] = field(default_factory=dict)
    enable_acting_master: bool | None = None  # RocketMQ 5: a slave may act as master while none is up

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)


@dataclass
class QueueData(WireBean):
    broker_name: str = ""
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0


@dataclass
class TopicRouteData(WireBean):
    """GET_ROUTEINFO_BY_TOPIC answer: which brokers serve a topic and how many queues each has."""

    order_topic_conf: str | None = None
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    def encode(self, *, standard_json: bool = False) -> bytes:
        """Plain fastjson, or with ``standard_json`` what a 4.9.4 name server sends to a request of version >= 401
        (or with acceptStandardJsonOnly): string map keys, maps sorted, browser-compatible escapes."""
        if standard_json:
            return browser_compatible_json(self.to_wire()).encode()
        return super().encode()


@dataclass
class ClusterInfo(WireBean):
    """GET_BROKER_CLUSTER_INFO answer: broker names to their members, cluster names to their broker names."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class TopicList(WireBean):
    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None


@dataclass
class TopicConfig(WireBean):
    """A topic as a broker stores it (UPDATE_AND_CREATE_TOPIC, GET_ALL_TOPIC_CONFIG, REGISTER_BROKER)."""

    topic_name: str = ""
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PermName.PERM_READ | PermName.PERM_WRITE
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    @property
    def readable(self) -> bool:
        return PermName.is_readable(self.perm)

    @property
    def writeable(self) -> bool:
        return PermName.is_writeable(self.perm)

    @property
    def perm_text(self) -> str:
        return PermName.perm_to_string(self.perm)


@dataclass
class TopicConfigSerializeWrapper(WireBean):
    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass
class RegisterBrokerBody(WireBean):
    """REGISTER_BROKER request body (uncompressed form; ``compressed=false`` in the header)."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(default_factory=TopicConfigSerializeWrapper)
    filter_server_list: list[str] = field(default_factory=list)


__all__ = [
    "MASTER_ID",
    "BrokerData",
    "ClusterInfo",
    "DataVersion",
    "MessageQueue",
    "PermName",
    "QueueData",
    "RegisterBrokerBody",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicRouteData",
]
