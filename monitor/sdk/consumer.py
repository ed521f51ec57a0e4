"""The consumer: ``rocketmq.client.PushConsumer`` (rocketmq 0.4.4, librocketmq 1.2.x) with every message's
consumption recorded and reported, the portal's consumption throttle applied, and the name servers read from the
portal.

Each message handed to a listener is timed (milliseconds, the same mergeable :class:`stats.histogram.Histogram` as
producers' sends) and counted per topic and minute, failures by the class name of the exception the listener raised;
every minute one report per topic goes to the portal's ``POST /api/v1/consumer-reports/`` with the consumer
group's token (``Authorization: Consumer``), through the producers' reporter. A listener that raises asks for the
message again later (concurrent mode: the broker redelivers it through the group's retry topic; orderly mode: the
client suspends the queue a moment and retries it), as the C++ client does.

The C++ client's C API has no setting for the maximum reconsume times: the broker applies the subscription group's
``retryMaxTimes`` (16 by default) before it moves a message to the dead-letter topic. ``max_reconsume_times`` given
to :meth:`Consumer.subscribe` therefore stops earlier on the client side: a message that fails again after that many
redeliveries is acknowledged, counted in :attr:`Consumer.given_up` and logged with its message id at ERROR (it does
not reach the dead-letter topic).

The binding's own ``subscribe`` turns a listener's exception into success (its callback re-raises from a
``finally``, and ctypes then returns 0, CONSUME_SUCCESS); this class registers its own callback instead.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from rocketmq import client as rmq
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import MessageModel, _CConsumeStatus, dll

from monitor.sdk.bootstrap import Bootstrap
from monitor.sdk.portal_client import PortalClient
from monitor.sdk.recorder import Cell, MinuteStats, Recorder
from monitor.sdk.reporter import DEFAULT_MAX_BACKLOG, Reporter, ReportKind, client_address, minute_text, with_trace
from monitor.sdk.throttle import RateLimiter
from monitor.sdk.tracing import (
    DEFAULT_BUFFER,
    ClientTracing,
    TraceSwitch,
    request_id,
    sub_after_record,
    sub_before_record,
)

log = logging.getLogger("monitor.sdk")

PORTAL_URL_ENV = "MQCLOUD_PORTAL_URL"
TOKEN_ENV = "MQCLOUD_CONSUMER_TOKEN"
TOKEN_FILE_ENV = "MQCLOUD_CONSUMER_TOKEN_FILE"
# The recorder keeps cells per (topic, broker); a consumer reports per topic only.
_ALL = ""


def _consumer_report(stats: MinuteStats, group: str, client_id: str, client_addr: str) -> dict:
    cell = stats.brokers.get(_ALL) or Cell()  # a minute with trace counts only
    report = {
        "minute": minute_text(stats.minute),
        "client_id": client_id,
        "client_addr": client_addr,
        "consumer_group": group,
        "topic": stats.topic,
        "count": cell.histogram.count,
        "failures": dict(cell.exceptions),
        "histogram": cell.histogram.to_dict(),
    }
    return with_trace(report, stats)


CONSUMER_REPORTS = ReportKind("consumer", "Consumer", "/api/v1/consumer-reports/", None, _consumer_report)


@dataclass(frozen=True)
class ConsumeRecord:
    """One message handed to a listener, as :meth:`Consumer.add_listener` callbacks see it: ``exception`` is the
    class name of what the listener raised (None on success), ``minute`` the epoch seconds it was counted in."""

    topic: str
    msg_id: str
    reconsume_times: int
    cost_ms: float
    exception: str | None
    minute: int


@dataclass(frozen=True)
class _Subscription:
    topic: str
    expression: str
    listener: Callable[[rmq.RecvMessage], object]
    max_reconsume_times: int | None


class Consumer(rmq.PushConsumer):
    """A drop-in ``rocketmq.client.PushConsumer`` that records and reports every message's consumption.

    Keyword arguments after the client's: ``portal_url`` and ``token`` or ``token_file`` (default: the
    MQCLOUD_PORTAL_URL, MQCLOUD_CONSUMER_TOKEN and MQCLOUD_CONSUMER_TOKEN_FILE environment variables; without them
    nothing is reported and nothing is read from the portal), ``namesrv_addr`` (default: the portal's answer, or
    NAMESRV_ADDR), ``thread_count``, ``max_backlog`` and ``flush_timeout`` (as the producer's), ``refresh`` (seconds
    between reads of the portal's settings; default: the portal's, one minute), and message trace as the producer's
    (``trace``, ``trace_topic``, ``trace_buffer``): a SubBefore and a SubAfter record per message of a traced topic."""

    def __init__(
        self,
        group_id: str,
        orderly: bool = False,
        message_model=MessageModel.CLUSTERING,
        *,
        portal_url: str | None = None,
        token: str | None = None,
        token_file: str | os.PathLike | None = None,
        namesrv_addr: str | None = None,
        thread_count: int | None = None,
        max_backlog: int = DEFAULT_MAX_BACKLOG,
        flush_timeout: float = 5.0,
        refresh: float | None = None,
        trace: bool | Iterable[str] = False,
        trace_topic: str | None = None,
        trace_buffer: int = DEFAULT_BUFFER,
    ):
        self._sdk_started = False
        super().__init__(group_id, orderly, message_model)
        self.group = group_id
        self.orderly = orderly
        self._namesrv_addrs = namesrv_addr or os.environ.get("NAMESRV_ADDR", "")
        if namesrv_addr:
            super().set_namesrv_addr(namesrv_addr)
        if thread_count:
            self.set_thread_count(thread_count)
        portal_url = portal_url if portal_url is not None else os.environ.get(PORTAL_URL_ENV, "")
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        token_file = token_file if token_file is not None else os.environ.get(TOKEN_FILE_ENV) or None
        self._token = token
        self._token_file = None if token or not token_file else Path(token_file)
        self._portal: PortalClient | None = None
        if portal_url and (self._token or self._token_file):
            self._portal = PortalClient(portal_url, scheme="Consumer", token=self._token, token_file=self._token_file)
        self._max_backlog = max_backlog
        self._flush_timeout = flush_timeout
        self._refresh = refresh
        self._subscriptions: dict[str, _Subscription] = {}
        self._listeners: list[Callable[[ConsumeRecord], None]] = []
        self._stop_lock = threading.Lock()
        self.recorder = Recorder()
        self.throttle = RateLimiter()
        self.reporter: Reporter | None = None
        self.bootstrap: Bootstrap | None = None
        self.client_id: str | None = None
        self.given_up = 0  # messages acknowledged after max_reconsume_times failed redeliveries
        self.tracing = ClientTracing(
            group_id, TraceSwitch(trace, trace_topic), count=self.recorder.count_trace, capacity=trace_buffer
        )

    # --- configuration ---------------------------------------------------------------------------------------------

    def set_namesrv_addr(self, addr: str) -> None:
        super().set_namesrv_addr(addr)
        self._namesrv_addrs = addr

    def subscribe(
        self,
        topic: str,
        callback: Callable[[rmq.RecvMessage], object],
        expression: str = "*",
        *,
        max_reconsume_times: int | None = None,
    ) -> None:
        """Consume ``topic``'s messages matching the tag ``expression`` with ``callback(message)``; an exception it
        raises asks for the message again later (up to ``max_reconsume_times`` redeliveries, see the module)."""
        if topic in self._subscriptions:
            raise ValueError(f"topic {topic} is already subscribed by consumer group {self.group}")
        ffi_check(dll.Subscribe(self._handle, topic.encode(), expression.encode()))
        self._subscriptions[topic] = _Subscription(topic, expression, callback, max_reconsume_times)
        if not self._callback_refs:  # one callback for every topic (the client keeps only the last registered)
            self._register_callback(self._on_message)

    def add_listener(self, listener: Callable[[ConsumeRecord], None]) -> None:
        """Call ``listener(ConsumeRecord)`` after each message (on the consume thread); exceptions are logged."""
        self._listeners.append(listener)

    # --- lifecycle -------------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._portal is not None:
            self.bootstrap = Bootstrap(self._portal, refresh=self._refresh)
            settings = self.bootstrap.fetch()
            if not self._namesrv_addrs:
                self.set_namesrv_addr(settings["namesrv_addr"])
            self._apply(settings)
        if not self._namesrv_addrs:
            raise ValueError("give the name server addresses (namesrv_addr, NAMESRV_ADDR) or the portal and a token")
        address = client_address(self._namesrv_addrs)
        self.client_id = f"{address}@{os.getpid()}"
        self.tracing.start(self._namesrv_addrs)
        super().start()
        if self._portal is not None:
            self.reporter = Reporter(
                self.recorder,
                portal_url=self._portal.base,
                token=self._token,
                token_file=self._token_file,
                group=lambda: self.group,
                client_id=self.client_id,
                client_addr=address,
                max_backlog=self._max_backlog,
                kind=CONSUMER_REPORTS,
            )
            self.reporter.start()
            self.bootstrap.follow(self._changed, self.client_id)
        else:
            log.info("consumer %s: no portal URL and token, consumption is not reported", self.group)
        self._sdk_started = True

    def shutdown(self) -> None:
        """Stop consuming (messages waiting for a throttle slot are let through), then report the last minute."""
        with self._stop_lock:
            self.throttle.stop()
            super().shutdown()
            if not self._sdk_started:
                return
            self._sdk_started = False
            try:
                if self.bootstrap is not None:
                    self.bootstrap.stop()
                self.tracing.stop(self._flush_timeout)
                if self.reporter is not None:
                    self.reporter.stop(self._flush_timeout)
            except Exception:  # stopping the statistics must not fail the application's shutdown
                log.exception("stopping the consumer SDK of %s failed", self.group)

    def __enter__(self) -> Consumer:
        self.start()
        return self

    def __del__(self) -> None:
        if getattr(self, "_sdk_started", False):
            self._sdk_started = False
            self.throttle.stop()
            if self.reporter is not None:
                self.reporter.stop(0.0)
            if self.bootstrap is not None:
                self.bootstrap.stop()
            self.tracing.stop(0.0)
        super().__del__()

    # --- settings from the portal ----------------------------------------------------------------------------------

    def _apply(self, settings: dict) -> None:
        rate = settings.get("client_throttle_tps")
        if rate != self.throttle.rate:
            log.info("consumer %s: consumption throttle %s", self.group, f"{rate} msg/s" if rate else "off")
        self.throttle.set_rate(rate)
        self.tracing.apply(settings)
        registered = {entry["topic"] for entry in settings.get("subscriptions", ())}
        for topic in sorted(set(self._subscriptions) - registered):
            log.warning(
                "consumer group %s is not registered as subscribed to topic %s on the portal: its consume reports "
                "for this topic will be refused. Apply for the subscription in the portal.",
                self.group,
                topic,
            )

    def _changed(self, old: dict, new: dict) -> None:
        if old.get("namesrv_addr") != new.get("namesrv_addr"):
            log.warning(
                "consumer %s: the portal lists other name servers now (%s); the client keeps %s until it restarts",
                self.group,
                new.get("namesrv_addr"),
                self._namesrv_addrs,
            )
        self._apply(new)

    # --- consumption -----------------------------------------------------------------------------------------------

    def _on_message(self, _consumer, handle) -> int:
        message = rmq.RecvMessage(handle)
        try:
            topic = message.topic
            subscription = self._subscriptions.get(topic)
            if subscription is None and len(self._subscriptions) == 1:
                (subscription,) = self._subscriptions.values()
            if subscription is None:
                log.error("consumer %s got a message of topic %s it has no listener for", self.group, topic)
                return _CConsumeStatus.RECONSUME_LATER.value
            self.throttle.acquire()
            return self._consume(subscription, message)
        except BaseException:  # nothing may escape into the C++ client's thread
            log.exception("consumer %s: handling a message failed", self.group)
            return _CConsumeStatus.RECONSUME_LATER.value

    def _consume(self, subscription: _Subscription, message: rmq.RecvMessage) -> int:
        before = self._trace_before(subscription.topic, message)
        started = time.perf_counter()
        failure = None
        try:
            subscription.listener(message)
        except Exception as error:
            failure = type(error).__name__
            log.warning("consumer %s: listener of %s failed on message %s: %r", self.group, subscription.topic,
                        message.id, error)  # fmt: skip
        cost_ms = (time.perf_counter() - started) * 1000
        if before is not None:
            self.tracing.append(subscription.topic, sub_after_record(before, cost_ms=cost_ms, failed=bool(failure)))
        reconsume_times = message.reconsume_times
        self._record(subscription.topic, message.id, reconsume_times, cost_ms, failure)
        if failure is None:
            return _CConsumeStatus.CONSUME_SUCCESS.value
        limit = subscription.max_reconsume_times
        if limit is not None and reconsume_times >= limit:
            self.given_up += 1
            log.error(
                "consumer %s: giving up message %s of %s after %d redeliveries (max_reconsume_times)",
                self.group,
                message.id,
                subscription.topic,
                reconsume_times,
            )
            return _CConsumeStatus.CONSUME_SUCCESS.value
        return _CConsumeStatus.RECONSUME_LATER.value

    def _trace_before(self, topic: str, message: rmq.RecvMessage):
        """Buffer the message's SubBefore record when its topic is traced; the record, for its SubAfter."""
        if not self.tracing.traced(topic):
            return None
        try:
            before = sub_before_record(message, self.group, request_id(), time.time())
        except Exception:  # tracing must never break consumption
            log.exception("tracing a message of %s failed", topic)
            return None
        self.tracing.append(topic, before)
        return before

    def _record(self, topic: str, msg_id: str, reconsume_times: int, cost_ms: float, failure: str | None) -> None:
        try:
            minute = self.recorder.record(topic, _ALL, cost_ms, failure)
            if self._listeners:
                record = ConsumeRecord(topic, msg_id, reconsume_times, cost_ms, failure, minute)
                for listener in self._listeners:
                    listener(record)
        except Exception:  # statistics must never break consumption
            log.exception("recording a message of %s failed", topic)
