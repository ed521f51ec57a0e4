"""Admin operations the portal and the monitor need, named after RocketMQ's MQAdminExt.

`AsyncMQAdmin` runs on an event loop and is what the collectors use to issue many requests at once;
`MQAdmin` is the same API made synchronous for Celery tasks, views and the mqadmin command. Name-server calls
try each configured name server in turn (a name server that is down is skipped, an answer is final); broker
calls take a broker address. Each method builds the request the way the real mqadmin does (same code, same
header fields) and returns RocketMQ's own body types.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.acl import AclCredentials
from monitor.remoting.client import RemotingClient, ServerRequestHandler, expect_success
from monitor.remoting.codes import RequestCode, ResponseCode, SerializeType
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import (
    ProtocolError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
)
from monitor.remoting.message import MessageExt, decode_messages, decode_offset_msg_id, parse_host
from monitor.remoting.sync import run_sync

MIXALL_RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DEFAULT_TOPIC = "TBW102"
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
# The name-server KV namespace holding ordered topics' queue layout (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"
MAX_TIMESTAMP = 9223372036854775807
# PullSysFlag bits.
PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4
# MixAll.REQ_T with RequestType.STREAM: what mqadmin's pull consumer adds to its pulls.
REQ_T_STREAM = {"ReqT": "0"}
# The timestamp mqadmin sends for "-s now": reset to each queue's max offset.
RESET_TO_NOW = -1


class PullStatus(Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    messages: list[MessageExt] = field(default_factory=list)


@dataclass
class RollbackStats:
    """One queue of a direct offset reset, named as RocketMQ's admin RollbackStats: where the queue ends, where
    the group was, the offset found for the time, and where the group is now."""

    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    timestamp_offset: int
    rollback_offset: int


def retry_topic(group: str) -> str:
    return MIXALL_RETRY_GROUP_TOPIC_PREFIX + group


def _config_properties(response: RemotingCommand, addr: str) -> dict[str, str]:
    """The Properties text of a GET_BROKER_CONFIG / GET_NAMESRV_CONFIG answer. A body that is not such text (not
    UTF-8, a broken escape) is a ProtocolError naming the server, so a caller probing many servers can say which."""
    try:
        return b.parse_properties(response.body)
    except ProtocolError as exc:
        raise ProtocolError(f"configuration from {addr} is unreadable: {exc}") from None


class AsyncMQAdmin:
    """Admin calls against one cluster, reached through its name servers."""

    def __init__(
        self,
        namesrv_addrs: Iterable[str] | str = (),
        *,
        acl: AclCredentials | None = None,
        timeout: float = 5.0,
        connect_timeout: float = 3.0,
        max_inflight: int = 64,
        serialize_type: SerializeType = SerializeType.JSON,
        request_handler: ServerRequestHandler | None = None,
    ):
        if isinstance(namesrv_addrs, str):
            namesrv_addrs = [a.strip() for a in namesrv_addrs.split(";") if a.strip()]
        self.namesrv_addrs = list(namesrv_addrs)
        self.serialize_type = serialize_type
        self.client = RemotingClient(
            acl=acl,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_inflight=max_inflight,
            request_handler=request_handler,
        )

    # --- plumbing ------------------------------------------------------------------------------------------------

    def _command(self, code: RequestCode, header: h.CommandHeader | None = None, body: bytes = b"", **extra):
        ext = header.to_ext_fields() if header is not None else None
        if extra:
            ext = {**(ext or {}), **extra}
        return RemotingCommand.request(code, ext, body, serialize_type=self.serialize_type)

    async def call(self, addr: str, cmd: RemotingCommand, *ok_codes: int, timeout: float | None = None):
        """Send to one address; a non-success code (other than ok_codes) raises RemotingError."""
        response = await self.client.invoke(addr, cmd, timeout=timeout)
        return expect_success(response, cmd, addr, *ok_codes)

    async def call_namesrv(self, make_cmd, *ok_codes: int, timeout: float | None = None) -> RemotingCommand:
        """Ask the name servers in turn; the first that answers decides (unreachable ones are skipped)."""
        if not self.namesrv_addrs:
            raise RemotingConnectError("(no name server)", "no name server address configured")
        last: Exception | None = None
        for addr in self.namesrv_addrs:
            try:
                return await self.call(addr, make_cmd(), *ok_codes, timeout=timeout)
            except (RemotingConnectError, RemotingTimeoutError, RemotingClosedError) as exc:
                last = exc
        raise last

    async def close(self) -> None:
        await self.client.close()

    # --- name server -----------------------------------------------------------------------------------------------

    async def examine_broker_cluster_info(self) -> b.ClusterInfo:
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_BROKER_CLUSTER_INFO))
        return b.ClusterInfo.decode(response.body)

    async def fetch_all_topic_list(self) -> b.TopicList:
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
        return b.TopicList.decode(response.body)

    async def fetch_topics_by_cluster(self, cluster: str) -> b.TopicList:
        header = h.GetTopicsByClusterRequestHeader(cluster=cluster)
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_TOPICS_BY_CLUSTER, header))
        return b.TopicList.decode(response.body)

    async def examine_topic_route_info(self, topic: str) -> b.TopicRouteData:
        header = h.GetRouteInfoRequestHeader(topic=topic)
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_ROUTEINFO_BY_TOPIC, header))
        return b.TopicRouteData.decode(response.body)

    async def get_name_server_config(self, addrs: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
        configs = {}
        for addr in addrs or self.namesrv_addrs:
            response = await self.call(addr, self._command(RequestCode.GET_NAMESRV_CONFIG))
            configs[addr] = _config_properties(response, addr)
        return configs

    async def update_name_server_config(self, properties: dict[str, str], addrs: Iterable[str] | None = None) -> None:
        body = b.format_properties(properties).encode("utf-8")
        for addr in addrs or self.namesrv_addrs:
            await self.call(addr, self._command(RequestCode.UPDATE_NAMESRV_CONFIG, body=body))

    async def delete_topic_in_name_server(self, topic: str, cluster_name: str | None = None) -> None:
        header = h.DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster_name)
        for addr in self.namesrv_addrs:
            await self.call(addr, self._command(RequestCode.DELETE_TOPIC_IN_NAMESRV, header))

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        header = h.GetKVConfigRequestHeader(namespace=namespace, key=key)
        response = await self.call_namesrv(
            lambda: self._command(RequestCode.GET_KV_CONFIG, header), ResponseCode.QUERY_NOT_FOUND
        )
        return response.ext("value") if response.code == ResponseCode.SUCCESS else None

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        header = h.PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
        for addr in self.namesrv_addrs:
            await self.call(addr, self._command(RequestCode.PUT_KV_CONFIG, header))

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        header = h.DeleteKVConfigRequestHeader(namespace=namespace, key=key)
        for addr in self.namesrv_addrs:
            await self.call(addr, self._command(RequestCode.DELETE_KV_CONFIG, header))

    async def get_kv_list_by_namespace(self, namespace: str) -> b.KVTable:
        header = h.GetKVListByNamespaceRequestHeader(namespace=namespace)
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_KVLIST_BY_NAMESPACE, header))
        return b.KVTable.decode(response.body)

    # --- topics ----------------------------------------------------------------------------------------------------

    async def create_and_update_topic_config(self, broker_addr: str, config: b.TopicConfig) -> None:
        header = h.CreateTopicRequestHeader(
            topic=config.topic_name,
            default_topic=DEFAULT_TOPIC,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_filter_type=config.topic_filter_type,
            topic_sys_flag=config.topic_sys_flag,
            order=config.order,
        )
        await self.call(broker_addr, self._command(RequestCode.UPDATE_AND_CREATE_TOPIC, header))

    async def delete_topic_in_broker(self, broker_addrs: Iterable[str], topic: str) -> None:
        header = h.DeleteTopicRequestHeader(topic=topic)
        for addr in broker_addrs:
            await self.call(addr, self._command(RequestCode.DELETE_TOPIC_IN_BROKER, header))

    async def get_all_topic_config(self, broker_addr: str) -> b.TopicConfigSerializeWrapper:
        response = await self.call(broker_addr, self._command(RequestCode.GET_ALL_TOPIC_CONFIG))
        return b.TopicConfigSerializeWrapper.decode(response.body)

    async def get_topic_stats_info(self, broker_addr: str, topic: str) -> b.TopicStatsTable:
        """Per-queue min/max offsets of the topic on one broker."""
        header = h.GetTopicStatsInfoRequestHeader(topic=topic)
        response = await self.call(broker_addr, self._command(RequestCode.GET_TOPIC_STATS_INFO, header))
        return b.TopicStatsTable.decode(response.body)

    async def examine_topic_stats(self, topic: str) -> b.TopicStatsTable:
        """Per-queue min/max offsets from every master that serves the topic, merged."""
        route = await self.examine_topic_route_info(topic)
        masters = [addr for addr in (bd.master_addr for bd in route.broker_datas) if addr]
        results = await asyncio.gather(*(self.get_topic_stats_info(addr, topic) for addr in masters))
        merged = b.TopicStatsTable()
        for table in results:
            merged.offset_table.update(table.offset_table)
            if table.topic_put_tps is not None:  # RocketMQ 5: each master's put TPS of the topic
                merged.topic_put_tps = (merged.topic_put_tps or 0.0) + table.topic_put_tps
        return merged

    async def query_topic_consume_by_who(self, broker_addr: str, topic: str) -> b.GroupList:
        header = h.QueryTopicConsumeByWhoRequestHeader(topic=topic)
        response = await self.call(broker_addr, self._command(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header))
        return b.GroupList.decode(response.body)

    async def get_max_offset(self, broker_addr: str, topic: str, queue_id: int) -> int:
        header = h.TopicQueueRequestHeader(topic=topic, queue_id=queue_id)
        response = await self.call(broker_addr, self._command(RequestCode.GET_MAX_OFFSET, header))
        return h.OffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def get_min_offset(self, broker_addr: str, topic: str, queue_id: int) -> int:
        header = h.TopicQueueRequestHeader(topic=topic, queue_id=queue_id)
        response = await self.call(broker_addr, self._command(RequestCode.GET_MIN_OFFSET, header))
        return h.OffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def search_offset(self, broker_addr: str, topic: str, queue_id: int, timestamp: int) -> int:
        header = h.SearchOffsetRequestHeader(topic=topic, queue_id=queue_id, timestamp=timestamp)
        response = await self.call(broker_addr, self._command(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header))
        return h.OffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    # --- subscription groups ---------------------------------------------------------------------------------------

    async def create_and_update_subscription_group_config(
        self, broker_addr: str, config: b.SubscriptionGroupConfig
    ) -> None:
        cmd = self._command(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode())
        await self.call(broker_addr, cmd)

    async def delete_subscription_group(self, broker_addr: str, group: str, remove_offset: bool = False) -> None:
        """Delete the group's config on one broker, with ``remove_offset`` its committed offsets too (asked under
        both names: 4.x reads removeOffset, 5.x cleanOffset)."""
        header = h.DeleteSubscriptionGroupRequestHeader(
            group_name=group, remove_offset=remove_offset, clean_offset=remove_offset or None
        )
        await self.call(broker_addr, self._command(RequestCode.DELETE_SUBSCRIPTIONGROUP, header))

    async def get_all_subscription_group(self, broker_addr: str) -> b.SubscriptionGroupWrapper:
        response = await self.call(broker_addr, self._command(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        return b.SubscriptionGroupWrapper.decode(response.body)

    # --- brokers ---------------------------------------------------------------------------------------------------

    async def fetch_broker_runtime_stats(self, broker_addr: str, *, timeout: float | None = None) -> b.KVTable:
        cmd = self._command(RequestCode.GET_BROKER_RUNTIME_INFO)
        response = await self.call(broker_addr, cmd, timeout=timeout)
        return b.KVTable.decode(response.body)

    async def get_broker_config(self, broker_addr: str) -> dict[str, str]:
        response = await self.call(broker_addr, self._command(RequestCode.GET_BROKER_CONFIG))
        return _config_properties(response, broker_addr)

    async def update_broker_config(self, broker_addr: str, properties: dict[str, str]) -> None:
        body = b.format_properties(properties).encode("utf-8")
        await self.call(broker_addr, self._command(RequestCode.UPDATE_BROKER_CONFIG, body=body))

    async def view_broker_stats_data(self, broker_addr: str, stats_name: str, stats_key: str) -> b.BrokerStatsData:
        """One BrokerStatsManager counter (TOPIC_PUT_NUMS: key topic; GROUP_GET_NUMS: key topic@group, ...).
        An unknown key is RocketMQ's SYSTEM_ERROR "The stats <NAME> <KEY> not exist", raised as RemotingError."""
        header = h.ViewBrokerStatsDataRequestHeader(stats_name=stats_name, stats_key=stats_key)
        response = await self.call(broker_addr, self._command(RequestCode.VIEW_BROKER_STATS_DATA, header))
        return b.BrokerStatsData.decode(response.body)

    async def fetch_consume_stats_in_broker(self, broker_addr: str, is_order: bool = False) -> b.ConsumeStatsList:
        header = h.GetConsumeStatsInBrokerHeader(is_order=is_order)
        response = await self.call(broker_addr, self._command(RequestCode.GET_BROKER_CONSUME_STATS, header))
        return b.ConsumeStatsList.decode(response.body)

    # --- consumers -------------------------------------------------------------------------------------------------

    async def _group_broker_addrs(self, group: str, topic: str | None = None) -> list[str]:
        """The masters serving the group's retry topic; with ``topic``, those serving the topic when the group has
        no retry topic (a group that never had a push consumer), as RocketMQ 5's admin does."""
        try:
            route = await self.examine_topic_route_info(retry_topic(group))
        except RemotingError as exc:
            if topic is None or exc.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            route = await self.examine_topic_route_info(topic)
        return [addr for addr in (bd.master_addr for bd in route.broker_datas) if addr]

    async def get_consume_stats(self, broker_addr: str, group: str, topic: str | None = None) -> b.ConsumeStats:
        header = h.GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
        response = await self.call(broker_addr, self._command(RequestCode.GET_CONSUME_STATS, header))
        return b.ConsumeStats.decode(response.body)

    async def examine_consume_stats(self, group: str, topic: str | None = None) -> b.ConsumeStats:
        """Consume stats of a group from every master serving its retry topic (or ``topic``), merged (what
        consumerProgress shows). Consume TPS read from masters alone misses reads served by slaves; the collectors add
        those."""
        addrs = await self._group_broker_addrs(group, topic)
        parts = await asyncio.gather(*(self.get_consume_stats(addr, group, topic) for addr in addrs))
        merged = b.ConsumeStats()
        for part in parts:
            merged.offset_table.update(part.offset_table)
            merged.consume_tps += part.consume_tps
        return merged

    async def get_consumer_connection_list(self, broker_addr: str, group: str) -> b.ConsumerConnection:
        """The group's clients connected to one broker (every client connects to every broker it uses). A group
        without any is RemotingError CONSUMER_NOT_ONLINE."""
        header = h.GetConsumerConnectionListRequestHeader(consumer_group=group)
        response = await self.call(broker_addr, self._command(RequestCode.GET_CONSUMER_CONNECTION_LIST, header))
        return b.ConsumerConnection.decode(response.body)

    async def examine_consumer_connection_info(self, group: str) -> b.ConsumerConnection:
        addrs = await self._group_broker_addrs(group)
        if not addrs:
            raise RemotingError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        return await self.get_consumer_connection_list(addrs[0], group)

    async def examine_producer_connection_info(self, group: str, topic: str) -> b.ProducerConnection:
        route = await self.examine_topic_route_info(topic)
        header = h.GetProducerConnectionListRequestHeader(producer_group=group)
        merged = b.ProducerConnection()
        for addr in (bd.master_addr for bd in route.broker_datas):
            if addr:
                response = await self.call(addr, self._command(RequestCode.GET_PRODUCER_CONNECTION_LIST, header))
                merged.connection_set.extend(b.ProducerConnection.decode(response.body).connection_set)
        return merged

    async def get_consumer_id_list_by_group(self, broker_addr: str, group: str) -> list[str]:
        header = h.GetConsumerListByGroupRequestHeader(consumer_group=group)
        response = await self.call(broker_addr, self._command(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header))
        return b.GetConsumerListByGroupResponseBody.decode(response.body).consumer_id_list

    async def get_consumer_running_info(
        self, group: str, client_id: str, jstack: bool = False, broker_addr: str | None = None
    ) -> b.ConsumerRunningInfo:
        """The broker relays this to the client's own connection and returns the client's answer."""
        header = h.GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id, jstack_enable=jstack)
        addr = broker_addr or (await self._group_broker_addrs(group) or [None])[0]
        if addr is None:
            raise RemotingError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        response = await self.call(addr, self._command(RequestCode.GET_CONSUMER_RUNNING_INFO, header))
        return b.ConsumerRunningInfo.decode(response.body)

    async def query_consumer_offset(self, broker_addr: str, group: str, topic: str, queue_id: int) -> int:
        header = h.QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id)
        response = await self.call(broker_addr, self._command(RequestCode.QUERY_CONSUMER_OFFSET, header))
        return h.QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def update_consumer_offset(self, broker_addr: str, group: str, topic: str, queue_id: int, offset: int):
        header = h.UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
        )
        await self.call(broker_addr, self._command(RequestCode.UPDATE_CONSUMER_OFFSET, header))

    async def reset_offset_by_timestamp(
        self, topic: str, group: str, timestamp: int, is_force: bool = True, *, cplus: bool = False
    ) -> dict[b.MessageQueue, int]:
        """Ask each master to reset the group's offsets and notify its online consumers (INVOKE_BROKER_TO_RESET_OFFSET).
        Raises RemotingError CONSUMER_NOT_ONLINE when no consumer is online; see reset_offset_by_timestamp_old.

        The broker tells the clients in the layout the request's language asks for: ``cplus`` sends it as C++ (as
        mqadmin's ``-c`` does), for C++ clients, which cannot read the Java layout and keep their old offsets."""
        route = await self.examine_topic_route_info(topic)
        header = h.ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=is_force)
        table: dict[b.MessageQueue, int] = {}
        for addr in (bd.master_addr for bd in route.broker_datas):
            if addr:
                cmd = self._command(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
                if cplus:
                    cmd.language = "CPP"
                response = await self.call(addr, cmd)
                if response.body:
                    table.update(b.ResetOffsetBody.decode(response.body).offset_table)
        return table

    async def reset_offset_by_timestamp_old(
        self, group: str, topic: str, timestamp: int, force: bool = True
    ) -> list[RollbackStats]:
        """mqadmin's resetOffsetByTimestampOld, for a group with no consumer online: on each master of the topic,
        find the offset for the time (the max offset for -1, "now") in every queue the group has consumed (every
        readable queue if it has consumed none there) and commit it, unless it lies ahead of the committed offset
        and force is off."""
        route = await self.examine_topic_route_info(topic)
        read_queues = {qd.broker_name: qd.read_queue_nums for qd in route.queue_datas}
        rollbacks = []
        for bd in route.broker_datas:
            addr = bd.master_addr
            if addr is None:
                continue
            stats = await self.get_consume_stats(addr, group)
            queues = {mq: off for mq, off in stats.offset_table.items() if mq.topic == topic}
            if not queues:
                topic_offsets = (await self.examine_topic_stats(topic)).offset_table
                for queue_id in range(read_queues.get(bd.broker_name, 0)):
                    mq = b.MessageQueue(topic, bd.broker_name, queue_id)
                    known = topic_offsets.get(mq, b.TopicOffset())
                    queues[mq] = b.OffsetWrapper(broker_offset=known.max_offset, consumer_offset=known.min_offset)
            for mq, off in sorted(queues.items()):
                if timestamp == RESET_TO_NOW:
                    target = await self.get_max_offset(addr, topic, mq.queue_id)
                else:
                    target = await self.search_offset(addr, topic, mq.queue_id, timestamp)
                offset = off.consumer_offset
                if force or target <= off.consumer_offset:
                    await self.update_consumer_offset(addr, group, topic, mq.queue_id, target)
                    offset = target
                rollbacks.append(
                    RollbackStats(mq.broker_name, mq.queue_id, off.broker_offset, off.consumer_offset, target, offset)
                )
        return rollbacks

    # --- messages --------------------------------------------------------------------------------------------------

    async def query_message(
        self, topic: str, key: str, max_num: int = 64, begin: int = 0, end: int = MAX_TIMESTAMP
    ) -> list[MessageExt]:
        """Messages whose KEYS contain `key`, from every broker of the topic (master, else any replica)."""
        found = await self._query_index(topic, key, max_num, begin, end, unique_key=False)
        return [m for m in found if key in m.keys]

    async def query_message_by_uniq_key(
        self, topic: str, uniq_key: str, max_num: int = 32, begin: int = 0, end: int = MAX_TIMESTAMP
    ) -> list[MessageExt]:
        """Messages of `topic` whose producer id (UNIQ_KEY: the msgId a client's send returns) is `uniq_key`
        (MQAdminImpl.queryMessageByUniqKey). More than one when a producer's retry stored the message again."""
        found = await self._query_index(topic, uniq_key, max_num, begin, end, unique_key=True)
        return [m for m in found if m.uniq_key == uniq_key]

    async def _query_index(
        self, topic: str, key: str, max_num: int, begin: int, end: int, *, unique_key: bool
    ) -> list[MessageExt]:
        """QUERY_MESSAGE to every broker of the topic (master, else any replica). The index matches a hash of the
        key, so callers keep only the messages that really carry it."""
        route = await self.examine_topic_route_info(topic)
        header = h.QueryMessageRequestHeader(
            topic=topic, key=key, max_num=max_num, begin_timestamp=begin, end_timestamp=end
        )
        flag = "true" if unique_key else "false"
        messages: list[MessageExt] = []
        for bd in route.broker_datas:
            addr = bd.master_addr or next(iter(bd.broker_addrs.values()), None)
            if not addr:
                continue
            cmd = self._command(RequestCode.QUERY_MESSAGE, header, _UNIQUE_KEY_QUERY=flag)
            response = await self.call(addr, cmd, ResponseCode.QUERY_NOT_FOUND)
            if response.code == ResponseCode.SUCCESS:
                messages.extend(decode_messages(response.body))
        return messages

    async def is_cluster_broker(self, addr: str) -> bool:
        """Whether the name servers list `addr` ("ip:port") as a broker of the cluster, master or slave; spellings
        of the same address ("[::1]:10911", "::1:10911") are the same broker."""
        wanted = parse_host(addr)
        info = await self.examine_broker_cluster_info()
        for bd in info.broker_addr_table.values():
            for known in bd.broker_addrs.values():
                try:
                    if parse_host(known) == wanted:
                        return True
                except ValueError:  # a host name: an offset id never holds one
                    continue
        return False

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """A message by its offset id (store host + commit-log offset), read from that broker.

        The store host comes out of the id, which is user input: it is connected to only when it is a broker of
        the cluster. Connecting wherever an id points would let whoever types one (in the CLI or the portal) send
        requests to any host and port (request forgery); a producer's id (UNIQ_KEY) read as an offset id points
        at such a made-up address."""
        addr, offset = decode_offset_msg_id(offset_msg_id)
        if not await self.is_cluster_broker(addr):
            raise ValueError(
                f"{offset_msg_id!r} is not an offset message id of this cluster: the store host it names, {addr},"
                " is not one of its brokers"
            )
        header = h.ViewMessageRequestHeader(offset=offset)
        response = await self.call(addr, self._command(RequestCode.VIEW_MESSAGE_BY_ID, header))
        messages = decode_messages(response.body)
        if not messages:
            raise RemotingError(ResponseCode.SYSTEM_ERROR, f"no message at offset {offset}", addr=addr)
        return messages[0]

    async def pull_message(
        self,
        broker_addr: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = 32,
        *,
        group: str = TOOLS_CONSUMER_GROUP,
        subscription: str = "*",
        timeout: float | None = None,
    ) -> PullResult:
        """A one-shot pull, as mqadmin's pull consumer does it (no offset commit, no long polling)."""
        header = h.PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=PULL_FLAG_SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_millis=20000,
            subscription=subscription,
            sub_version=0,
            expression_type="TAG",
        )
        cmd = self._command(RequestCode.PULL_MESSAGE, header, **REQ_T_STREAM)
        response = await self.call(broker_addr, cmd, *(code for code in _PULL_STATUS), timeout=timeout)
        result = h.PullMessageResponseHeader.from_ext_fields(response.ext_fields)
        status = _PULL_STATUS[ResponseCode(response.code)]
        messages = decode_messages(response.body) if status is PullStatus.FOUND else []
        return PullResult(
            status=status,
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
            suggest_which_broker_id=result.suggest_which_broker_id,
            messages=messages,
        )


class MQAdmin:
    """The synchronous face of AsyncMQAdmin: the same methods, each run to completion on the remoting loop."""

    def __init__(self, namesrv_addrs: Iterable[str] | str = (), **kwargs):
        self._async = AsyncMQAdmin(namesrv_addrs, **kwargs)

    @property
    def namesrv_addrs(self) -> list[str]:
        return self._async.namesrv_addrs

    @property
    def aio(self) -> AsyncMQAdmin:
        return self._async

    def __getattr__(self, name: str):
        attr = getattr(self._async, name)
        if not asyncio.iscoroutinefunction(attr):
            return attr

        def call(*args, **kwargs):
            return run_sync(attr(*args, **kwargs))

        call.__name__ = name
        call.__doc__ = attr.__doc__
        return call

    def close(self) -> None:
        run_sync(self._async.close())

    def __enter__(self) -> MQAdmin:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
