"""Who is connected to the sandbox broker: consumers by group (ConsumerManager), producers by group
(ProducerManager) and the queue locks of orderly consumers (RebalanceLockManager), as 4.9.4 keeps them.

Clients are known by their connection, as the Java broker knows them by their Netty channel: a heartbeat registers
the connection it came on, and a closed connection (or one silent for two minutes) removes the client everywhere.
Whenever a group's membership or subscriptions change, every member gets NOTIFY_CONSUMER_IDS_CHANGED (oneway) so
it rebalances at once; that is what makes a second consumer take over half the queues within moments.

Everything here lives on the broker's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from monitor.remoting.body import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    MessageModel,
    MessageQueue,
    SubscriptionData,
    WireBean,
)
from monitor.remoting.body._wire import wire
from monitor.sandbox.broker._common import now_ms
from monitor.sandbox.connection import Connection

log = logging.getLogger(__name__)

# ClientHousekeepingService: a client that has not sent a heartbeat for this long is dropped.
CHANNEL_EXPIRED_MS = 120_000
# RebalanceLockManager.REBALANCE_LOCK_MAX_LIVE_TIME (rocketmq.broker.rebalance.lockMaxLiveTime).
LOCK_MAX_LIVE_MS = 60_000


@dataclass
class ClientChannelInfo:
    """One client connection: its id, the language and version from its request headers, its last heartbeat."""

    connection: Connection
    client_id: str
    language: str
    version: int
    last_update: int = field(default_factory=now_ms)


@dataclass
class ConsumerGroupInfo:
    group_name: str
    consume_type: ConsumeType | None
    message_model: MessageModel | None
    consume_from_where: ConsumeFromWhere | None
    channels: dict[Connection, ClientChannelInfo] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        return next((info for info in self.channels.values() if info.client_id == client_id), None)

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]

    def update_channel(self, info: ClientChannelInfo, data: ConsumerData) -> bool:
        """updateChannel: True when this connection is new to the group."""
        self.consume_type, self.message_model = data.consume_type, data.message_model
        self.consume_from_where = data.consume_from_where
        old = self.channels.get(info.connection)
        if old is None or old.client_id != info.client_id:
            self.channels[info.connection] = info
            return old is None
        old.last_update = now_ms()
        return False

    def update_subscription(self, subscriptions: list[SubscriptionData]) -> bool:
        """updateSubscription: new topics and dropped topics are a change; a newer version of a known topic
        replaces it silently."""
        updated = False
        for sub in subscriptions:
            old = self.subscriptions.get(sub.topic)
            if old is None:
                self.subscriptions[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscriptions[sub.topic] = sub
        wanted = {sub.topic for sub in subscriptions}
        for topic in [topic for topic in self.subscriptions if topic not in wanted]:
            del self.subscriptions[topic]
            updated = True
        return updated


Notify = Callable[[str, list[Connection]], None]


class ConsumerManager:
    """Consumer groups by name; ``notify(group, connections)`` sends NOTIFY_CONSUMER_IDS_CHANGED."""

    def __init__(self, notify: Notify):
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self._notify = notify

    def get(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self.groups.get(group)
        return info.find_channel(client_id) if info is not None else None

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.groups.get(group)
        return info.subscriptions.get(topic) if info is not None else None

    def subscription_count(self, group: str) -> int:
        info = self.groups.get(group)
        return len(info.subscriptions) if info is not None else 0

    def register(self, channel: ClientChannelInfo, data: ConsumerData, notify_enabled: bool) -> bool:
        info = self.groups.get(data.group_name)
        if info is None:
            info = self.groups[data.group_name] = ConsumerGroupInfo(
                data.group_name, data.consume_type, data.message_model, data.consume_from_where
            )
        new_channel = info.update_channel(channel, data)
        new_subscription = info.update_subscription(data.subscription_data_set)
        if (new_channel or new_subscription) and notify_enabled:
            self._notify(data.group_name, list(info.channels))
        return new_channel or new_subscription

    def unregister(self, group: str, connection: Connection, notify_enabled: bool) -> None:
        info = self.groups.get(group)
        if info is None:
            return
        info.channels.pop(connection, None)
        if not info.channels:
            del self.groups[group]
        if notify_enabled:
            self._notify(group, list(info.channels))

    def channel_closed(self, connection: Connection) -> None:
        """doChannelCloseEvent: drop the connection from every group and tell the remaining members."""
        for group, info in list(self.groups.items()):
            if info.channels.pop(connection, None) is None:
                continue
            if not info.channels:
                del self.groups[group]
            self._notify(group, list(info.channels))

    def expired_connections(self, now: int) -> list[Connection]:
        """scanNotActiveChannel: connections whose last heartbeat is older than two minutes."""
        return [
            connection
            for info in self.groups.values()
            for connection, channel in info.channels.items()
            if now - channel.last_update > CHANNEL_EXPIRED_MS
        ]

    def groups_of_topic(self, topic: str) -> list[str]:
        """queryTopicConsumeByWho: the online groups subscribed to the topic."""
        return [group for group, info in self.groups.items() if topic in info.subscriptions]


class ProducerManager:
    def __init__(self):
        self.groups: dict[str, dict[Connection, ClientChannelInfo]] = {}

    def register(self, group: str, channel: ClientChannelInfo) -> None:
        channels = self.groups.setdefault(group, {})
        known = channels.get(channel.connection)
        if known is None:
            channels[channel.connection] = channel
        else:
            known.last_update = now_ms()

    def unregister(self, group: str, connection: Connection) -> None:
        channels = self.groups.get(group)
        if channels:
            channels.pop(connection, None)
            if not channels:
                del self.groups[group]

    def channel_closed(self, connection: Connection) -> None:
        for channels in self.groups.values():
            channels.pop(connection, None)

    def expired_connections(self, now: int) -> list[Connection]:
        return [
            connection
            for channels in self.groups.values()
            for connection, channel in channels.items()
            if now - channel.last_update > CHANNEL_EXPIRED_MS
        ]


@dataclass
class LockBatchRequestBody(WireBean):
    """LOCK_BATCH_MQ request (org.apache.rocketmq.common.protocol.body.LockBatchRequestBody)."""

    consumer_group: str = ""
    client_id: str = ""
    mq_set: list[MessageQueue] = field(default_factory=list)


@dataclass
class LockBatchResponseBody(WireBean):
    lock_ok_mq_set: list[MessageQueue] = wire("lockOKMQSet", default_factory=list)  # noqa: RUF009 - a field()


@dataclass
class UnlockBatchRequestBody(WireBean):
    consumer_group: str = ""
    client_id: str = ""
    mq_set: list[MessageQueue] = field(default_factory=list)


@dataclass
class _LockEntry:
    client_id: str
    last_update: int = field(default_factory=now_ms)

    def held_by(self, client_id: str) -> bool:
        return self.client_id == client_id and not self.expired()

    def expired(self) -> bool:
        return now_ms() - self.last_update > LOCK_MAX_LIVE_MS


class RebalanceLockManager:
    """Which client of a group holds which queue, for orderly consumers: a lock lasts 60 s unless renewed (the
    clients renew every 20 s) and a queue another live client holds cannot be taken."""

    def __init__(self):
        self.locks: dict[str, dict[MessageQueue, _LockEntry]] = {}

    def try_lock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> list[MessageQueue]:
        table = self.locks.setdefault(group, {})
        locked = []
        for mq in queues:
            entry = table.get(mq)
            if entry is None:
                entry = table[mq] = _LockEntry(client_id)
            if entry.held_by(client_id) or entry.expired():
                entry.client_id, entry.last_update = client_id, now_ms()
                locked.append(mq)
        return locked

    def unlock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> None:
        table = self.locks.get(group, {})
        for mq in queues:
            entry = table.get(mq)
            if entry is not None and entry.client_id == client_id:
                del table[mq]
