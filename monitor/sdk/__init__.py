"""The producer SDK for business teams: a drop-in ``rocketmq.client.Producer`` that records every send (cost,
broker, exception) in per-minute latency histograms and reports them to the portal. See docs/sdk.md.

Django-free on purpose: it imports only the C++ client binding (``rocketmq``), ``stats.histogram`` and
``monitor.remoting``."""

from rocketmq.client import Message, SendResult, SendStatus

from monitor.sdk.producer import UNKNOWN_BROKER, Producer, SendRecord

__all__ = ["UNKNOWN_BROKER", "Message", "Producer", "SendRecord", "SendResult", "SendStatus"]
