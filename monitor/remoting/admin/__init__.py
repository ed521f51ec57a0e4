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

from monitor.remoting.admin.base import (
    DEFAULT_TOPIC,
    MAX_TIMESTAMP,
    ORDER_TOPIC_NAMESPACE,
    RESET_TO_NOW,
    TOOLS_CONSUMER_GROUP,
    retry_topic,
)
from monitor.remoting.admin.brokers import BrokerAdmin
from monitor.remoting.admin.consumers import ConsumerAdmin, RollbackStats
from monitor.remoting.admin.messages import MessageAdmin, PullResult, PullStatus
from monitor.remoting.admin.namesrv import NamesrvAdmin
from monitor.remoting.admin.producer import ProducerAdmin
from monitor.remoting.admin.topics import TopicAdmin
from monitor.remoting.sync import run_sync

__all__ = [
    "DEFAULT_TOPIC",
    "MAX_TIMESTAMP",
    "ORDER_TOPIC_NAMESPACE",
    "RESET_TO_NOW",
    "TOOLS_CONSUMER_GROUP",
    "AsyncMQAdmin",
    "MQAdmin",
    "PullResult",
    "PullStatus",
    "RollbackStats",
    "retry_topic",
]


class AsyncMQAdmin(NamesrvAdmin, TopicAdmin, BrokerAdmin, ConsumerAdmin, MessageAdmin, ProducerAdmin):
    """Admin calls against one cluster, reached through its name servers (one mixin per family of calls)."""


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
