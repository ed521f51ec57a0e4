"""The broker's registrations with its name servers (BrokerController.registerBrokerAll and BrokerOuterAPI):
REGISTER_BROKER at start, periodically and whenever topics change, joined so that one registration carries every
change asked for while the previous one was on its way, and UNREGISTER_BROKER when the broker stops."""

from __future__ import annotations

import asyncio
import logging
import zlib
from dataclasses import dataclass, field, replace

from monitor.remoting import headers as h
from monitor.remoting.body import KVTable, PermName, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.errors import RemotingError

log = logging.getLogger(__name__)

# BrokerOuterAPI.unregisterBroker's timeout: a name server that does not answer must not hold up a stop.
UNREGISTER_TIMEOUT = 3.0
_REGISTER_PERIOD_MIN_MS, _REGISTER_PERIOD_MAX_MS = 10_000, 60_000


@dataclass
class PendingRegistration:
    """The registration the broker sends next: the whole table (``full``) or the topics changed since the last
    one was sent; everyone who joined it waits on ``sent``."""

    sent: asyncio.Future[None]
    full: bool = False
    topics: dict[str, TopicConfig] = field(default_factory=dict)
    check_order_config: bool = False


class NameServerRegistration:
    """Mixed into :class:`~monitor.sandbox.broker.core.Broker`, whose name servers, topic table, client and
    registration lock it uses; a slave learns its master's address from the answers."""

    async def register_broker_all(self, check_order_config: bool = True) -> None:
        """registerBrokerAll: the whole topic table to every name server. With ``check_order_config`` (at start,
        periodically, after a permission change; not after a topic made by a send or a consumer's retry topic)
        the ORDER_TOPIC_CONFIG entries in the answer then mark which topics are ordered."""
        await self._join_registration(full=True, check_order_config=check_order_config)

    async def register_topic(self, config: TopicConfig) -> None:
        """registerIncrementBrokerData: one changed topic, with the table's current version (and, like every
        registration it makes, the order config applied from the answer)."""
        permission = int(self.config["brokerPermission"])
        if not (PermName.is_writeable(permission) and PermName.is_readable(permission)):
            config = replace(config, perm=permission)
        await self._join_registration(topic=config, check_order_config=True)

    async def _join_registration(
        self, *, full: bool = False, topic: TopicConfig | None = None, check_order_config: bool
    ) -> None:
        """Add the whole table or one topic to the next registration and wait until it has been sent."""
        pending = self._next_registration
        if pending is None:
            pending = self._next_registration = PendingRegistration(asyncio.get_running_loop().create_future())
            self._spawn(self._send_registration(pending))
        if full:
            pending.full = True
        else:
            pending.topics[topic.topic_name] = topic
        pending.check_order_config |= check_order_config
        await asyncio.shield(pending.sent)

    async def _send_registration(self, pending: PendingRegistration) -> None:
        """Send ``pending`` once the registration before it is done. It is closed to newcomers and its body built
        only then, after the lock, so registrations reach the name servers with ever newer versions: the name
        server ignores the topics of a registration whose version it already has."""
        try:
            async with self._register_lock:
                self._next_registration = None
                if pending.full:
                    body = await self.topics.register_body()
                else:
                    wrapper = TopicConfigSerializeWrapper(
                        topic_config_table=pending.topics, data_version=replace(self.topics.data_version)
                    )
                    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[]).encode()
                await self._register(body, pending.check_order_config)
        except asyncio.CancelledError:  # the broker is stopping
            if self._next_registration is pending:
                self._next_registration = None
            pending.sent.cancel()
            raise
        except Exception as exc:  # handed to everyone waiting for this registration
            pending.sent.set_exception(exc)
        else:
            pending.sent.set_result(None)

    async def _register(self, body: bytes, check_order_config: bool) -> None:
        """REGISTER_BROKER with ``body`` to every name server (the caller holds the registration lock); a slave
        learns its master from the answers, and with ``check_order_config`` the first answer's ORDER_TOPIC_CONFIG
        table (doRegisterBrokerAll's updateOrderTopicConfig; no table at all changes nothing)."""
        header = h.RegisterBrokerRequestHeader(
            broker_name=self.broker_name,
            broker_addr=self.addr,
            cluster_name=self.cluster_name,
            ha_server_addr=self.ha_server_addr,
            broker_id=self.broker_id,
            compressed=False,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
        )
        answers = await asyncio.gather(
            *(
                self._client.invoke(addr, self._request(RequestCode.REGISTER_BROKER, header, body))
                for addr in self.namesrv_addrs
            ),
            return_exceptions=True,
        )
        accepted = []
        for addr, answer in zip(self.namesrv_addrs, answers, strict=True):
            if isinstance(answer, BaseException):
                log.warning("%s: registering with name server %s failed: %s", self.name, addr, answer)
            elif answer.code != ResponseCode.SUCCESS:
                log.warning("%s: name server %s refused the registration: %s", self.name, addr, answer.remark)
            else:
                accepted.append(answer)
                if self.is_slave:
                    result = h.RegisterBrokerResponseHeader.from_ext_fields(answer.ext_fields)
                    if result.master_addr:
                        self.master_addr = result.master_addr
        if check_order_config and accepted and accepted[0].body:
            self.topics.update_order_config(KVTable.decode(accepted[0].body).table)

    async def _unregister_broker_all(self) -> None:
        header = h.UnRegisterBrokerRequestHeader(
            broker_name=self.broker_name,
            broker_addr=self.addr,
            cluster_name=self.cluster_name,
            broker_id=self.broker_id,
        )
        answers = await asyncio.gather(
            *(
                self._client.invoke(
                    addr, self._request(RequestCode.UNREGISTER_BROKER, header), timeout=UNREGISTER_TIMEOUT
                )
                for addr in self.namesrv_addrs
            ),
            return_exceptions=True,
        )
        for addr, answer in zip(self.namesrv_addrs, answers, strict=True):
            if isinstance(answer, RemotingError):
                log.info("%s: unregistering from %s failed: %s", self.name, addr, answer)

    async def _register_periodically(self) -> None:
        while True:
            period = min(
                max(int(self.config["registerNameServerPeriod"]), _REGISTER_PERIOD_MIN_MS), _REGISTER_PERIOD_MAX_MS
            )
            await asyncio.sleep(period / 1000)
            await self.register_broker_all()
