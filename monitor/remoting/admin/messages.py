"""Message calls: queries through the brokers' index, a message by offset id, and one-shot pulls."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from monitor.remoting import headers as h
from monitor.remoting.admin.base import (
    MAX_TIMESTAMP,
    PULL_FLAG_SUBSCRIPTION,
    REQ_T_STREAM,
    TOOLS_CONSUMER_GROUP,
    AdminBase,
)
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.errors import (
    RemotingError,
)
from monitor.remoting.message import MessageExt, decode_messages, decode_offset_msg_id, parse_host


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


class MessageAdmin(AdminBase):
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
        messages: list[MessageExt] = []
        for bd in route.broker_datas:
            addr = bd.master_addr or next(iter(bd.broker_addrs.values()), None)
            if addr:
                messages.extend(
                    await self.query_message_on_broker(addr, topic, key, max_num, begin, end, unique_key=unique_key)
                )
        return messages

    async def query_message_on_broker(
        self,
        broker_addr: str,
        topic: str,
        key: str,
        max_num: int = 64,
        begin: int = 0,
        end: int = MAX_TIMESTAMP,
        *,
        unique_key: bool = False,
    ) -> list[MessageExt]:
        """One broker's QUERY_MESSAGE answer as it came, oldest first: at most min(max_num, maxMsgsNumBatch) records
        (defaultQueryMaxNum instead of max_num with `unique_key`), the newest indexed under the key's hash in
        [begin, end] of index time. Nothing is filtered out, so a caller can tell a full answer from a complete
        one (monitor.messages.search slices the time range on a full one)."""
        header = h.QueryMessageRequestHeader(
            topic=topic, key=key, max_num=max_num, begin_timestamp=begin, end_timestamp=end
        )
        cmd = self._command(RequestCode.QUERY_MESSAGE, header, _UNIQUE_KEY_QUERY="true" if unique_key else "false")
        response = await self.call(broker_addr, cmd, ResponseCode.QUERY_NOT_FOUND)
        return decode_messages(response.body) if response.code == ResponseCode.SUCCESS else []

    async def get_earliest_msg_store_time(self, broker_addr: str, topic: str, queue_id: int) -> int:
        """GET_EARLIEST_MSG_STORETIME: the store time of the queue's oldest message (-1 or 0 when it has none)."""
        header = h.TopicQueueRequestHeader(topic=topic, queue_id=queue_id)
        response = await self.call(broker_addr, self._command(RequestCode.GET_EARLIEST_MSG_STORETIME, header))
        return int(response.ext_fields.get("timestamp", -1))

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
