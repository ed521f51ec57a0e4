"""The producer wrapper: ``rocketmq.client.Producer`` (rocketmq 0.4.4, librocketmq 1.2.x) with every send recorded.

The C++ client's send result names neither queue nor broker, so the wrapper picks each send's queue itself and
hands it to the client through the queue selector of its orderly calls (``send_orderly`` with no retry,
``send_oneway_orderly``, and the library's ``SendMessageOrderlyAsync``, which the binding does not wrap). Queue
indexes are those of the client's own list (:mod:`monitor.sdk.routes`). Queues are taken round-robin per topic and
a failed attempt is retried on the next queue of another broker, up to :data:`ATTEMPTS` attempts, as the client's
``send_sync``/``send_oneway`` do; ``send_orderly`` keeps its caller's selector and ``retry_times``. Each attempt is
recorded (like MQCloud's send hook): its cost in milliseconds, its broker, and the class name of the exception the
call raises on failure. The application gets the same results and exception classes as from the plain client.

Guards: a topic's route is read by the SDK before the client first sends to it (a name server that does not
answer makes the send fail after the SDK's route timeout instead of hanging); the first call into the client per
topic, which is when the client fetches the route itself and could block a minute on a hung name server, runs
under a deadline. Recording and listeners never raise into the application.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import os
import time
from collections.abc import Callable, Iterable
from ctypes import c_void_p
from dataclasses import dataclass
from pathlib import Path

from rocketmq import client as rmq
from rocketmq.exceptions import (
    ProducerSendAsyncFailed,
    ProducerSendOnewayFailed,
    ProducerSendOrderlyFailed,
    ProducerSendSyncFailed,
    RocketMQException,
    ffi_check,
)
from rocketmq.ffi import QUEUE_SELECTOR_CALLBACK, SEND_EXCEPTION_CALLBACK, SEND_SUCCESS_CALLBACK, _CStatus, dll

from monitor.remoting.acl import AclCredentials
from monitor.sdk.bootstrap import Bootstrap, BootstrapFailed
from monitor.sdk.first_send import FirstSendGuard, Selection, Stuck, make_selector, other_broker
from monitor.sdk.portal_client import PortalClient
from monitor.sdk.recorder import Recorder
from monitor.sdk.reporter import DEFAULT_MAX_BACKLOG, Reporter, client_address
from monitor.sdk.routes import NoRoute, QueueBrokers, RouteTable
from monitor.sdk.tracing import DEFAULT_BUFFER, ClientTracing, TraceSwitch, pub_record

log = logging.getLogger("monitor.sdk")

# The C++ client's send_sync and send_oneway try up to 5 queues, each on another broker than the last.
ATTEMPTS = 5
DEFAULT_SEND_TIMEOUT_MS = 3000
# Where a send is recorded when its broker is not known: no route, or the client's queue list changed under us.
UNKNOWN_BROKER = "(unknown)"
PORTAL_URL_ENV = "MQCLOUD_PORTAL_URL"
TOKEN_ENV = "MQCLOUD_PRODUCER_TOKEN"
TOKEN_FILE_ENV = "MQCLOUD_PRODUCER_TOKEN_FILE"

# In librocketmq since 1.2.x, not declared by the 0.4.4 binding: an async send through a queue selector.
dll.SendMessageOrderlyAsync.argtypes = [
    c_void_p,
    c_void_p,
    QUEUE_SELECTOR_CALLBACK,
    c_void_p,
    SEND_SUCCESS_CALLBACK,
    SEND_EXCEPTION_CALLBACK,
]
dll.SendMessageOrderlyAsync.restype = _CStatus


@dataclass(frozen=True)
class SendRecord:
    """One recorded send attempt, as listeners (:meth:`Producer.add_listener`) see it. ``minute``: the epoch
    seconds of the minute it was counted in; ``exception``: the class name, None on success."""

    topic: str
    broker_name: str
    cost_ms: float
    exception: str | None
    minute: int


def _topic_of(message: rmq.Message) -> str:
    # CreateMessage keeps the topic on the MQMessage; GetMessageTopic reads it (the binding's own queue selectors
    # read it the same way from the message they are given).
    return dll.GetMessageTopic(message._handle).decode()


class Producer(rmq.Producer):
    """A drop-in ``rocketmq.client.Producer`` that records every send and reports to the portal every minute.

    The constructor takes the client's arguments, then: ``portal_url`` and ``token`` or ``token_file`` (a file
    holding the token, read at every report; default: the MQCLOUD_PORTAL_URL, MQCLOUD_PRODUCER_TOKEN and
    MQCLOUD_PRODUCER_TOKEN_FILE environment variables; without a URL and a token nothing is reported, sends are
    still recorded for listeners; with them and no name server address, start() asks the portal for the
    cluster's), ``topics`` (checked for registration and routed at start), ``max_backlog`` (reports kept while the
    portal is unreachable), ``flush_timeout`` (seconds shutdown() spends reporting the last minute),
    ``route_timeout`` (seconds for reading a route from the name servers), ``refresh`` (seconds between reads of
    the portal's settings; default: the portal's, one minute), and message trace (:mod:`monitor.sdk.tracing`):
    ``trace`` (True or topic names: traced whatever the portal says; the portal's traced topics are traced too),
    ``trace_topic`` (default: the portal's for the cluster, else RMQ_SYS_TRACE_TOPIC) and ``trace_buffer``
    (records waiting to be written; more are dropped and counted). Oneway sends are not traced, as in Java."""

    def __init__(
        self,
        group_id: str,
        timeout: int | None = None,
        compress_level: int | None = None,
        max_message_size: int | None = None,
        *,
        portal_url: str | None = None,
        token: str | None = None,
        token_file: str | os.PathLike | None = None,
        topics: Iterable[str] = (),
        max_backlog: int = DEFAULT_MAX_BACKLOG,
        flush_timeout: float = 5.0,
        route_timeout: float = 3.0,
        refresh: float | None = None,
        trace: bool | Iterable[str] = False,
        trace_topic: str | None = None,
        trace_buffer: int = DEFAULT_BUFFER,
    ):
        self._sdk_started = False
        super().__init__(group_id, timeout, compress_level, max_message_size)
        self._group = group_id
        self._timeout_ms = timeout or DEFAULT_SEND_TIMEOUT_MS
        self._namesrv_addrs = os.environ.get("NAMESRV_ADDR", "")
        self._acl: AclCredentials | None = None
        self._portal_url = portal_url if portal_url is not None else os.environ.get(PORTAL_URL_ENV, "")
        self._token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        token_file = token_file if token_file is not None else os.environ.get(TOKEN_FILE_ENV) or None
        self._token_file = Path(token_file) if token_file is not None and self._token is None else None
        self._topics = list(topics)
        self._max_backlog = max_backlog
        self._flush_timeout = flush_timeout
        self._route_timeout = route_timeout
        self.recorder = Recorder()
        self.reporter: Reporter | None = None
        self.client_id: str | None = None  # ip@pid, as reported; set by start()
        self._routes: RouteTable | None = None
        self._listeners: list[Callable[[SendRecord], None]] = []
        self._counters: dict[str, itertools.count] = {}
        # As long as the SDK's own route read may take, plus the send: the client's route requests have a fixed 5 s
        # timeout each (and two of them for a new topic), far longer than a name server that answers needs.
        self._guard = FirstSendGuard(lambda: self._route_timeout + self._timeout_ms / 1000)
        self._async_refs: dict[int, tuple] = {}
        self._refresh = refresh
        self._credentials: tuple[str, str, str] | None = None
        self.bootstrap: Bootstrap | None = None
        self.tracing = ClientTracing(
            group_id, TraceSwitch(trace, trace_topic), count=self.recorder.count_trace, capacity=trace_buffer
        )

    # --- configuration the SDK needs too ----------------------------------------------------------------------------

    def set_group(self, group_name: str) -> None:
        super().set_group(group_name)
        self._group = group_name

    def set_namesrv_addr(self, addr: str) -> None:
        super().set_namesrv_addr(addr)
        self._namesrv_addrs = addr

    def set_namesrv_domain(self, domain: str) -> None:
        raise NotImplementedError(
            "the producer SDK reads topic routes from the name servers themselves: use set_namesrv_addr()"
        )

    def set_session_credentials(self, access_key: str, access_secret: str, channel: str) -> None:
        super().set_session_credentials(access_key, access_secret, channel)
        self._acl = AclCredentials(access_key, access_secret)
        self._credentials = (access_key, access_secret, channel)

    def set_timeout(self, timeout: int) -> None:
        super().set_timeout(timeout)
        self._timeout_ms = timeout

    def add_listener(self, listener: Callable[[SendRecord], None]) -> None:
        """Call ``listener(SendRecord)`` after each recorded attempt (on the sending thread, or the client's thread
        for send_async). Its exceptions are logged, never raised into the send."""
        self._listeners.append(listener)

    # --- lifecycle -------------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._portal_url and (self._token or self._token_file):
            portal = PortalClient(self._portal_url, scheme="Producer", token=self._token, token_file=self._token_file)
            self.bootstrap = Bootstrap(portal, refresh=self._refresh)
            try:
                settings = self.bootstrap.fetch()
            except BootstrapFailed as error:
                if not self._namesrv_addrs:
                    raise
                log.warning("producer %s: %s; following the portal's settings once it answers", self._group, error)
                settings = {}
            if not self._namesrv_addrs:
                self.set_namesrv_addr(settings["namesrv_addr"])
            self.tracing.switch.apply(settings)
        if not self._namesrv_addrs:
            raise ValueError(
                "set the name server addresses (set_namesrv_addr, NAMESRV_ADDR) or the portal's URL and a token "
                "before starting the producer"
            )
        super().start()
        self._routes = RouteTable(self._namesrv_addrs, acl=self._acl, timeout=self._route_timeout)
        self._routes.start()
        address = client_address(self._namesrv_addrs)
        self.client_id = f"{address}@{os.getpid()}"
        self.tracing.start(self._namesrv_addrs, self._credentials)
        if self.bootstrap is not None:
            self.bootstrap.follow(lambda _old, new: self.tracing.apply(new), self.client_id)
        if self._portal_url and (self._token or self._token_file):
            self.reporter = Reporter(
                self.recorder,
                portal_url=self._portal_url,
                token=self._token,
                token_file=self._token_file,
                group=lambda: self._group,
                client_id=self.client_id,
                client_addr=address,
                max_backlog=self._max_backlog,
            )
            self.reporter.start(self._topics)
        else:
            log.info("producer %s: no portal URL and token, send statistics are not reported", self._group)
        for topic in self._topics:
            try:
                self._routes.queues(topic)
            except NoRoute as error:
                log.warning("producer %s: %s", self._group, error)
        self._sdk_started = True

    def shutdown(self) -> None:
        """Shut the client down, then report what was recorded, the current minute included (bounded wait)."""
        super().shutdown()
        self._stop_sdk(flush=True)

    def __enter__(self) -> Producer:
        self.start()
        return self

    def __del__(self) -> None:
        if getattr(self, "_sdk_started", False):
            self._stop_sdk(flush=False)
        super().__del__()

    def _stop_sdk(self, *, flush: bool) -> None:
        if not self._sdk_started:
            return
        self._sdk_started = False
        try:
            if self.bootstrap is not None:
                self.bootstrap.stop()
            self.tracing.stop(self._flush_timeout if flush else 0.0)
            if self.reporter is not None:
                self.reporter.stop(self._flush_timeout if flush else 0.0)
            if self._routes is not None:
                self._routes.stop()
        except Exception:  # stopping the statistics must not fail the application's shutdown
            log.exception("stopping the producer SDK of %s failed", self._group)

    # --- sends -----------------------------------------------------------------------------------------------------

    def send_sync(self, msg: rmq.Message) -> rmq.SendResult:
        if not self._sdk_started:
            return super().send_sync(msg)
        return self._send_with_retries(msg, ProducerSendSyncFailed, self._orderly_call)

    def send_oneway(self, msg: rmq.Message) -> None:
        if not self._sdk_started:
            return super().send_oneway(msg)
        self._send_with_retries(msg, ProducerSendOnewayFailed, self._oneway_call)
        return None

    def send_orderly(
        self,
        msg: rmq.Message,
        arg: int,
        retry_times: int = 3,
        queue_selector: Callable = rmq.hashing_queue_selector,
    ) -> rmq.SendResult:
        if not self._sdk_started:
            return super().send_orderly(msg, arg, retry_times, queue_selector)
        topic = _topic_of(msg)
        brokers = self._queues(topic, ProducerSendOrderlyFailed)
        result, index = self._attempt(msg, topic, ProducerSendOrderlyFailed, self._orderly_call, queue_selector, arg)
        for _ in range(retry_times):
            if not isinstance(result, Exception) or index is None:
                break
            index = other_broker(brokers, index)
            if index is None:
                break
            result, index = self._attempt(msg, topic, ProducerSendOrderlyFailed, self._orderly_call, index, 0)
        if isinstance(result, Exception):
            raise result
        return result

    def send_oneway_orderly(
        self, msg: rmq.Message, arg: int, queue_selector: Callable = rmq.hashing_queue_selector
    ) -> None:
        if not self._sdk_started:
            return super().send_oneway_orderly(msg, arg, queue_selector)
        topic = _topic_of(msg)
        self._queues(topic, ProducerSendOnewayFailed)
        result, _ = self._attempt(msg, topic, ProducerSendOnewayFailed, self._oneway_call, queue_selector, arg)
        if isinstance(result, Exception):
            raise result
        return None

    def send_async(self, msg: rmq.Message, success_callback: Callable, exception_callback: Callable) -> None:
        if not self._sdk_started:
            return super().send_async(msg, success_callback, exception_callback)
        topic = _topic_of(msg)
        brokers = self._queues(topic, RocketMQException)
        index: int | None = next(self._counter(topic)) % len(brokers)
        for _ in range(ATTEMPTS):
            error = self._async_attempt(msg, topic, index, success_callback, exception_callback)
            if error is None:
                return None
            index = other_broker(brokers, index)
            if index is None:
                break
        raise error

    # --- the attempts ----------------------------------------------------------------------------------------------

    def _send_with_retries(self, msg: rmq.Message, error_class: type[Exception], call: Callable):
        topic = _topic_of(msg)
        brokers = self._queues(topic, error_class)
        index: int | None = next(self._counter(topic)) % len(brokers)
        for _ in range(ATTEMPTS):
            result, chosen = self._attempt(msg, topic, error_class, call, index, 0)
            if not isinstance(result, Exception):
                return result
            if chosen is None:  # failed before choosing a queue (a bad message, no route): no broker to avoid
                break
            index = other_broker(brokers, index)
            if index is None:
                break
        raise result

    def _attempt(self, msg, topic: str, error_class: type[Exception], call: Callable, pick, arg: int):
        """One call into the client on the queue ``pick`` (an index, or the caller's selector function). Returns
        (result or the exception to raise, the chosen index or None) and records the attempt."""
        selection = Selection()
        sent_at = time.time()
        started = time.perf_counter()
        try:
            result = self._guard.run(topic, lambda: call(msg, arg, make_selector(selection, pick)), selection)
        except (RocketMQException, Stuck) as error:
            result = error if isinstance(error, error_class) else error_class(str(error))
            result.__cause__ = error
        cost_ms = (time.perf_counter() - started) * 1000
        failure = type(result).__name__ if isinstance(result, Exception) else None
        broker_name = self._broker_of(topic, selection)
        self._record(topic, broker_name, cost_ms, failure)
        if isinstance(result, rmq.SendResult):  # oneway sends have none: not traced (as Java's hook)
            self._trace(msg, topic, result, sent_at, cost_ms, broker_name)
        return result, selection.index if selection.size is not None else None

    def _orderly_call(self, msg, arg: int, selector: Callable):
        return rmq.Producer.send_orderly(self, msg, arg, 0, selector)

    def _oneway_call(self, msg, arg: int, selector: Callable) -> None:
        rmq.Producer.send_oneway_orderly(self, msg, arg, selector)

    def _async_attempt(self, msg, topic: str, index: int, success_callback, exception_callback) -> Exception | None:
        """Start one async send on queue ``index``; the callbacks record it. Returns the error if it did not start."""
        selection = Selection()
        sent_at = time.time()
        started = time.perf_counter()
        key = id(selection)

        def finish(failure: str | None) -> tuple[str, float]:
            self._async_refs.pop(key, None)
            broker_name, cost_ms = self._broker_of(topic, selection), (time.perf_counter() - started) * 1000
            self._record(topic, broker_name, cost_ms, failure)
            return broker_name, cost_ms

        def on_success(result_pointer) -> None:
            broker_name, cost_ms = finish(None)
            c_result = result_pointer.contents
            result = rmq.SendResult(rmq.SendStatus(c_result.sendStatus), c_result.msgId.decode(), c_result.offset)
            self._trace(msg, topic, result, sent_at, cost_ms, broker_name)
            if success_callback:
                success_callback(result)

        def on_exception(c_error) -> None:
            finish(ProducerSendAsyncFailed.__name__)
            error = ProducerSendAsyncFailed(c_error.msg, c_error.error, c_error.file, c_error.line, c_error.type)
            if exception_callback:
                exception_callback(error)
            else:
                log.error("async send to %s failed and no exception callback was given: %s", topic, error)

        callbacks = (
            QUEUE_SELECTOR_CALLBACK(make_selector(selection, index)),
            SEND_SUCCESS_CALLBACK(on_success),
            SEND_EXCEPTION_CALLBACK(on_exception),
        )
        self._async_refs[key] = callbacks
        arg = ctypes.c_int(0)

        def call() -> None:
            ffi_check(
                dll.SendMessageOrderlyAsync(
                    self._handle, msg, callbacks[0], ctypes.cast(ctypes.pointer(arg), c_void_p), *callbacks[1:]
                )
            )

        try:
            self._guard.run(topic, call, selection)
        except (RocketMQException, Stuck) as error:
            finish(RocketMQException.__name__)
            return error if isinstance(error, RocketMQException) else RocketMQException(str(error))
        return None

    # --- queues, brokers, guards -----------------------------------------------------------------------------------

    def _queues(self, topic: str, error_class: type[Exception]) -> QueueBrokers:
        """The topic's queue list, read before the client first sends to it; a failure is a recorded failed send."""
        started = time.perf_counter()
        try:
            return self._routes.queues(topic)
        except NoRoute as error:
            self._record(topic, UNKNOWN_BROKER, (time.perf_counter() - started) * 1000, error_class.__name__)
            raise error_class(str(error)) from error
        finally:
            if self.reporter is not None:
                self.reporter.check_registration(topic)

    def _counter(self, topic: str) -> itertools.count:
        counter = self._counters.get(topic)
        if counter is None:
            counter = self._counters.setdefault(topic, itertools.count())
        return counter

    def _broker_of(self, topic: str, selection: Selection) -> str:
        if selection.size is None:
            return UNKNOWN_BROKER
        brokers = self._routes.brokers_for_size(topic, selection.size)
        if brokers is None:
            self._routes.request_refresh(topic)
            return UNKNOWN_BROKER
        return brokers[selection.index % selection.size]

    def _record(self, topic: str, broker_name: str, cost_ms: float, exception: str | None) -> None:
        try:
            minute = self.recorder.record(topic, broker_name, cost_ms, exception)
            if self._listeners:
                record = SendRecord(topic, broker_name, cost_ms, exception, minute)
                for listener in self._listeners:
                    listener(record)
        except Exception:  # statistics must never break a send
            log.exception("recording a send to %s failed", topic)

    def _trace(self, msg, topic: str, result, sent_at: float, cost_ms: float, broker_name: str) -> None:
        """Buffer the send's Pub record when its topic is traced (never raises, never blocks)."""
        if not self.tracing.traced(topic):
            return
        try:
            store_host = self._routes.broker_addr(broker_name)
            record = pub_record(
                msg, self._group, topic, result, sent_at=sent_at, cost_ms=cost_ms, store_host=store_host
            )
            self.tracing.append(topic, record)
        except Exception:  # tracing must never break a send
            log.exception("tracing a send to %s failed", topic)
