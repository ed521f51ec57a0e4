"""The sandbox broker: one RocketMQ 4.9.4 broker (master or slave) on the sandbox RemotingServer.

It puts together what BrokerController wires up: the message store, the metadata tables, client tracking, the
request processors, statistics, and the broker's own calls out: REGISTER_BROKER to every name server at start,
every registerNameServerPeriod (30 s) and whenever its topics change, UNREGISTER_BROKER when it stops. A slave
learns its master's address from the name server's answer to that registration, as a real slave does, then copies
topics, consumer offsets, delay offsets and subscription groups from it over the wire (SlaveSynchronize, every
``slave_sync_interval`` seconds) and replicates its commit log. The replication is the one in-process shortcut:
there is no HA protocol, the slave copies the master's store records directly, byte for byte, so both hold the
same records at the same commit-log offsets.

Registrations are sent one at a time, and whatever asks for one while another is on its way joins the next: topics
created meanwhile travel together in one increment, and any number of whole-table requests become one. A broker
with 10,000 topics and a client creating them concurrently would otherwise wait on a name-server round trip per
topic, in turn. Everyone still waits until the registration carrying their change has been answered, as the Java
processor does, so a route exists once UPDATE_AND_CREATE_TOPIC has been answered.

Stopping and starting again keeps the store and tables (a restarted broker keeps its disk) and the port.
Everything runs on the server's event loop; the store is thread-safe, so tests may read it from other threads.
Whole-table bodies are built, and the slave's copies of them decoded, on worker threads (see
:class:`~monitor.sandbox.broker._common.EncodedBodies`).

The registrations with the name servers are in ``registration``, the slave's copies from its master in ``slave`` (both
mixed into Broker), the ACL check in ``acl`` and the request processors in their own modules.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Awaitable, Hashable, Iterable, Mapping
from typing import Self

from monitor.remoting import headers as h
from monitor.remoting.acl import AclCredentials
from monitor.remoting.client import RemotingClient
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import RemotingError
from monitor.sandbox.broker._common import InnerMessage, next_version, now_ms
from monitor.sandbox.broker.acl import acl_problem
from monitor.sandbox.broker.admin import AdminProcessor, earliest_message_time, human_bytes
from monitor.sandbox.broker.client_manage import ClientManageProcessor
from monitor.sandbox.broker.clients import ConsumerManager, ProducerManager, RebalanceLockManager
from monitor.sandbox.broker.config import BrokerConfig, parse_delay_levels
from monitor.sandbox.broker.consumer_admin import ConsumerAdminProcessor
from monitor.sandbox.broker.pull import PullProcessor
from monitor.sandbox.broker.registration import NameServerRegistration, PendingRegistration
from monitor.sandbox.broker.runtime import StoreStats, java_double
from monitor.sandbox.broker.schedule import DELAY, REAL_QUEUE_ID, REAL_TOPIC, ScheduleMessageService
from monitor.sandbox.broker.send import SendProcessor
from monitor.sandbox.broker.slave import SlaveSynchronization
from monitor.sandbox.broker.tables import (
    SCHEDULE_TOPIC,
    ConsumerOffsetManager,
    SubscriptionGroupManager,
    TopicConfigManager,
)
from monitor.sandbox.connection import Connection
from monitor.sandbox.dispatch import Handler
from monitor.sandbox.server import RemotingServer
from monitor.sandbox.stats import BrokerStatsManager, StatsSampler
from monitor.sandbox.store import DEFAULT_MAX_BYTES, MessageStore, PutMessageError, PutResult, java_properties_string

log = logging.getLogger(__name__)

MASTER_ID = 0
# The sandbox's default for ScheduleMessageService: delays (and so consumer retries) 100 times shorter.
DEFAULT_DELAY_TIME_SCALE = 0.01
# SlaveSynchronize runs every 10 s in 4.9.4.
DEFAULT_SLAVE_SYNC_INTERVAL = 10.0
CLIENT_SCAN_INTERVAL = 10.0
_TRANSACTION_MASK = 0xC
_TRANSACTION_COMMIT = 0x8


class Broker(NameServerRegistration, SlaveSynchronization, RemotingServer):
    """``Broker("DefaultCluster", "broker-a", 0, ["127.0.0.1:9876"]).start()``; a slave takes ``broker_id`` 1 (or
    more) and its master's Broker object, whose store it replicates.

    ``config`` overrides broker.properties entries (``{"autoCreateTopicEnable": False}``). ``delay_time_scale``
    shortens delay levels, ``slave_sync_interval`` is SlaveSynchronize's period, ``store_max_bytes`` bounds the
    in-memory commit log, and ``suggest_slave_behind_bytes`` is how far (in commit-log bytes) a pull may lag the
    newest message before the master tells the consumer to read from the slave; 4.9.4 uses 40% of the machine's
    RAM (accessMessageInMemoryMaxRatio), which no sandbox consumer would ever lag."""

    def __init__(
        self,
        cluster_name: str = "DefaultCluster",
        broker_name: str = "broker-a",
        broker_id: int = MASTER_ID,
        namesrv_addrs: Iterable[str] | str = (),
        port: int = 0,
        master: Broker | None = None,
        *,
        host: str = "127.0.0.1",
        config: Mapping[str, str | int | bool] | None = None,
        delay_time_scale: float = DEFAULT_DELAY_TIME_SCALE,
        slave_sync_interval: float = DEFAULT_SLAVE_SYNC_INTERVAL,
        store_max_bytes: int = DEFAULT_MAX_BYTES,
        suggest_slave_behind_bytes: int = 64 * 1024 * 1024,
        acl: Mapping[str, str] | None = None,
    ):
        super().__init__(host=host, port=port, name=f"broker {broker_name}/{broker_id}")
        if isinstance(namesrv_addrs, str):
            namesrv_addrs = [addr.strip() for addr in namesrv_addrs.split(";") if addr.strip()]
        if (broker_id == MASTER_ID) != (master is None):
            raise ValueError("a slave (broker_id > 0) needs its master, and a master has none")
        self.cluster_name = cluster_name
        self.broker_name = broker_name
        self.broker_id = broker_id
        self.namesrv_addrs = list(namesrv_addrs)
        self.master = master
        self.acl = dict(acl) if acl else None
        overrides = {**(config or {}), **({"aclEnable": True} if self.acl else {})}
        self.config = BrokerConfig(cluster_name, broker_name, broker_id, self.namesrv_addrs, overrides)
        self.slave_sync_interval = slave_sync_interval
        self.store_max_bytes = store_max_bytes
        self.suggest_slave_behind_bytes = suggest_slave_behind_bytes
        self.topics = TopicConfigManager(self.config)
        self.groups = SubscriptionGroupManager(self.config)
        self.offsets = ConsumerOffsetManager()
        self.stats = BrokerStatsManager(cluster_name, enable_queue_stat=bool(self.config["enableDetailStat"]))
        self.store_stats = StoreStats()
        self.store: MessageStore | None = None
        self.master_addr: str | None = None
        self.schedule = ScheduleMessageService(
            self, parse_delay_levels(str(self.config["messageDelayLevel"])), delay_time_scale
        )
        self._day = datetime.date.today()
        self._morning = {"put_yesterday": 0, "get_yesterday": 0, "put_today": 0, "get_today": 0}
        self._client: RemotingClient | None = None
        self._sampler: StatsSampler | None = None
        self._background: list[asyncio.Task] = []
        self._register_lock: asyncio.Lock | None = None
        self._next_registration: PendingRegistration | None = None
        # The master's last body of each whole table this slave applied, and the table's revision after it.
        self._synchronized: dict[RequestCode, tuple[bytes, Hashable]] = {}
        self._replication_stalled = False
        self.consumers = ConsumerManager(self._notify_consumer_ids_changed)
        self.producers = ProducerManager()
        self.locks = RebalanceLockManager()
        self.pull = PullProcessor(self)
        processors = (
            AdminProcessor(self),
            ConsumerAdminProcessor(self),
            ClientManageProcessor(self),
            SendProcessor(self),
            self.pull,
        )
        for processor in processors:
            for code, handler in processor.handlers().items():
                self.register(code, self._checked(handler) if self.acl else handler)
        self.on_close(self._connection_closed)

    def _checked(self, handler: Handler) -> Handler:
        """The ACL hook (PlainAccessValidator) in front of a processor: a request whose AccessKey is unknown or
        whose Signature does not match is answered SYSTEM_ERROR with AclException's description, as the remoting
        layer answers any exception thrown before the processor. Every configured account is an admin allowed to
        publish and subscribe everything: the sandbox checks who signs, not what they may touch."""

        async def checked(conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
            problem = acl_problem(cmd, self.acl)
            if problem is not None:
                log.info("%s: refused code %s from %s: %s", self.name, cmd.code, conn.remote_addr, problem)
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, problem)
            return await handler(conn, cmd)

        return checked

    @property
    def is_slave(self) -> bool:
        return self.broker_id != MASTER_ID

    @property
    def ha_server_addr(self) -> str:
        return f"{self.host}:{self.config['haListenPort']}"

    # --- lifecycle -------------------------------------------------------------------------------------------------

    async def start_async(self) -> Self:
        await super().start_async()
        self.config.set("listenPort", self.port)
        self.config.set("haListenPort", self.port + 1)
        if self.store is None:
            self.store = MessageStore(
                self.addr,
                max_bytes=self.store_max_bytes,
                max_message_size=int(self.config["maxMessageSize"]),
                slave=self.is_slave,
                offset_check_in_slave=bool(self.config["offsetCheckInSlave"]),
            )
        # A real cluster would whitelist its brokers' addresses; the sandbox slave signs its calls to the master.
        credentials = AclCredentials(*next(iter(self.acl.items()))) if self.acl else None
        self._client = RemotingClient(timeout=self.config["registerBrokerTimeoutMills"] / 1000, acl=credentials)
        self._register_lock = asyncio.Lock()
        self._next_registration = None  # one left by a stop belongs to the old loop
        self._sampler = StatsSampler(self.stats).start()
        await self.register_broker_all()
        loop = asyncio.get_running_loop()
        tasks = [self._register_periodically(), self._sample_store_stats(), self._scan_clients()]
        if self.is_slave:
            tasks += [self._synchronize_periodically(), self._replicate()]
        else:
            tasks.append(self.schedule.run())
        self._background = [loop.create_task(task) for task in tasks]
        return self

    async def stop_async(self) -> None:
        if self._client is None:
            return
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background = []
        await self._unregister_broker_all()
        await self._client.close()
        self._client = None
        self._sampler.stop()
        self._sampler = None
        await super().stop_async()

    # --- name servers ----------------------------------------------------------------------------------------------

    def _request(self, code: RequestCode, header: h.CommandHeader | None = None, body: bytes = b"") -> RemotingCommand:
        """A request as the broker's Java client side writes it."""
        ext = header.to_ext_fields() if header is not None else None
        return RemotingCommand.request(code, ext, body, language="JAVA")

    # --- clients ---------------------------------------------------------------------------------------------------

    def _notify_consumer_ids_changed(self, group: str, connections: list[Connection]) -> None:
        """Broker2Client.notifyConsumerIdsChanged to each member (oneway), when notifyConsumerIdsChangedEnable."""
        if not self.config["notifyConsumerIdsChangedEnable"]:
            return
        for connection in connections:
            if connection.closed:  # the broker is stopping: every connection is going away
                continue
            header = h.NotifyConsumerIdsChangedRequestHeader(consumer_group=group)
            request = self._request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header)
            self._spawn(_quietly(connection.oneway(request), f"notify {connection.remote_addr} of {group}"))

    def _connection_closed(self, connection: Connection) -> None:
        """ClientHousekeepingService.onChannelClose: forget the clients of a closed connection."""
        self.producers.channel_closed(connection)
        self.consumers.channel_closed(connection)

    async def _scan_clients(self) -> None:
        """ClientHousekeepingService.scanExceptionChannel every 10 s: close connections that stopped sending
        heartbeats two minutes ago (closing them removes their clients)."""
        while True:
            await asyncio.sleep(CLIENT_SCAN_INTERVAL)
            now = now_ms()
            for connection in self.consumers.expired_connections(now) + self.producers.expired_connections(now):
                log.warning("%s: closing %s, no heartbeat for 120 s", self.name, connection.remote_addr)
                connection.close()

    # --- configuration ---------------------------------------------------------------------------------------------

    async def update_config(self, properties: Mapping[str, str]) -> None:
        """UPDATE_BROKER_CONFIG: apply, hand the store its new limits, and re-register when the permission changed
        (the name server then shows the new perm on every topic)."""
        self.config.update(properties)
        self.store.max_message_size = int(self.config["maxMessageSize"])
        self.store.offset_check_in_slave = bool(self.config["offsetCheckInSlave"])
        if "brokerPermission" in properties:
            next_version(self.topics.data_version)
            await self.register_broker_all()

    # --- the store -------------------------------------------------------------------------------------------------

    def put_message(self, message: InnerMessage) -> PutResult:
        """CommitLog.asyncPutMessage for one message: a delayed one (DELAY > 0, not a transaction half) goes to
        SCHEDULE_TOPIC_XXXX queue level-1 with REAL_TOPIC/REAL_QID, and its properties are written again from the
        map. Updates ``message`` to where it was stored and counts the put; raises PutMessageError."""
        properties_string = message.properties_string
        transaction = message.sys_flag & _TRANSACTION_MASK
        level = _int_or_zero(message.properties.get(DELAY))
        if level > 0 and transaction in (0, _TRANSACTION_COMMIT):
            level = min(level, self.schedule.max_level)
            message.properties[DELAY] = str(level)
            message.properties[REAL_TOPIC] = message.topic
            message.properties[REAL_QUEUE_ID] = str(message.queue_id)
            properties_string = java_properties_string(message.properties)
            message.topic, message.queue_id = SCHEDULE_TOPIC, level - 1
        if properties_string is None:
            properties_string = java_properties_string(message.properties)
        started = time.monotonic()
        try:
            result = self.store.put_message(
                message.topic,
                message.queue_id,
                message.body,
                properties_string,
                message.flag,
                message.sys_flag,
                message.born_timestamp,
                message.born_host,
                message.reconsume_times,
            )
        except PutMessageError:
            self.store_stats.record_put_failed()
            raise
        self.messages_stored(message.topic, message.queue_id, result.msg_num, result.wrote_bytes, started)
        return result

    def messages_stored(self, topic: str, queue_id: int, count: int, size: int, started: float) -> None:
        """Bookkeeping after a put: store statistics, and waking the pulls held on the queue (or the schedule
        service, for a delayed message)."""
        self.store_stats.record_put(count, size, int((time.monotonic() - started) * 1000))
        self.pull.hold_service.notify(topic, queue_id, self.store.max_offset(topic, queue_id))
        if topic == SCHEDULE_TOPIC:
            self.schedule.wake()

    def disk_ratio(self) -> float:
        """The share of ``store_max_bytes`` the commit log holds, the sandbox's disk usage, in the form
        UtilAll.getDiskPartitionSpaceUsedPercent gives a disk's: whole percent, rounded up, as a fraction."""
        used = self.store.commit_log_max_offset - self.store.commit_log_min_offset
        return -(-used * 100 // self.store_max_bytes) / 100

    def runtime_info(self) -> dict[str, str]:
        """The GET_BROKER_RUNTIME_INFO table in the order its Java HashMap is filled. The sandbox's "disk" is its
        in-memory commit log: the disk ratios are its share of ``store_max_bytes`` and the directory capacity is
        that budget."""
        store, config, stats = self.store, self.config, self.store_stats
        used = store.commit_log_max_offset - store.commit_log_min_offset
        ratio = self.disk_ratio()
        info = stats.runtime_info()
        info[f"commitLogDiskRatio_{config['storePathCommitLog']}"] = java_double(ratio)
        info["commitLogDiskRatio"] = java_double(ratio)
        info["consumeQueueDiskRatio"] = java_double(ratio)
        info.update(self.schedule.running_stats())
        info["commitLogMinOffset"] = str(store.commit_log_min_offset)
        info["commitLogMaxOffset"] = str(store.commit_log_max_offset)
        self._roll_day()
        info.update(
            {
                "brokerVersionDesc": "V4_9_4",
                "brokerVersion": "401",
                "msgPutTotalYesterdayMorning": str(self._morning["put_yesterday"]),
                "msgPutTotalTodayMorning": str(self._morning["put_today"]),
                "msgPutTotalTodayNow": str(stats.put_times),
                "msgGetTotalYesterdayMorning": str(self._morning["get_yesterday"]),
                "msgGetTotalTodayMorning": str(self._morning["get_today"]),
                "msgGetTotalTodayNow": str(stats.get_transferred),
                "sendThreadPoolQueueSize": "0",
                "sendThreadPoolQueueCapacity": str(config["sendThreadPoolQueueCapacity"]),
                "pullThreadPoolQueueSize": "0",
                "pullThreadPoolQueueCapacity": str(config["pullThreadPoolQueueCapacity"]),
                "queryThreadPoolQueueSize": "0",
                "queryThreadPoolQueueCapacity": str(config["queryThreadPoolQueueCapacity"]),
                "EndTransactionQueueSize": "0",
                "EndTransactionThreadPoolQueueCapacity": str(config["endTransactionPoolQueueCapacity"]),
                "dispatchBehindBytes": "0",
                "pageCacheLockTimeMills": "0",
                "sendThreadPoolQueueHeadWaitTimeMills": "0",
                "pullThreadPoolQueueHeadWaitTimeMills": "0",
                "queryThreadPoolQueueHeadWaitTimeMills": "0",
                "earliestMessageTimeStamp": str(earliest_message_time(self)),
                "startAcceptSendRequestTimeStamp": str(config["startAcceptSendRequestTimeStamp"]),
                "remainTransientStoreBufferNumbs": str(2**31 - 1),
                "remainHowManyDataToFlush": human_bytes(0),
                "commitLogDirCapacity": (
                    f"Total : {human_bytes(self.store_max_bytes)}, Free : {human_bytes(self.store_max_bytes - used)}."
                ),
            }
        )
        return info

    def _roll_day(self) -> None:
        """BrokerStats.record at midnight: today's morning totals become yesterday's."""
        today = datetime.date.today()
        if today != self._day:
            self._day = today
            self._morning["put_yesterday"] = self._morning["put_today"]
            self._morning["get_yesterday"] = self._morning["get_today"]
            self._morning["put_today"] = self.store_stats.put_times
            self._morning["get_today"] = self.store_stats.get_transferred

    async def _sample_store_stats(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.store_stats.sample()
            self._roll_day()


async def _quietly(call: Awaitable[None], what: str) -> None:
    """Run a oneway call to a client whose failure (the client is gone) only deserves a log line."""
    try:
        await call
    except RemotingError as exc:
        log.info("%s failed: %s", what, exc)


def _int_or_zero(text: str | None) -> int:
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 0
