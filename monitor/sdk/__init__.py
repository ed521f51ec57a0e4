"""The client SDK for business teams (docs/sdk.md): a drop-in ``rocketmq.client.Producer`` that records every send
(cost, broker, exception) in per-minute latency histograms and reports them to the portal, a send template, and a
drop-in ``PushConsumer`` with a listener container that records and reports consumption and applies the portal's
consumption throttle.

Django-free on purpose: it imports only the C++ client binding (``rocketmq``), ``stats.histogram`` and
``monitor.remoting``."""

from rocketmq.client import Message, RecvMessage, SendResult, SendStatus

from monitor.sdk.consumer import Consumer, ConsumeRecord
from monitor.sdk.listeners import ListenerContainer, Settings, listener
from monitor.sdk.producer import UNKNOWN_BROKER, Producer, SendRecord
from monitor.sdk.template import ProducerTemplate

__all__ = [
    "UNKNOWN_BROKER",
    "ConsumeRecord",
    "Consumer",
    "ListenerContainer",
    "Message",
    "Producer",
    "ProducerTemplate",
    "RecvMessage",
    "SendRecord",
    "SendResult",
    "SendStatus",
    "Settings",
    "listener",
]
