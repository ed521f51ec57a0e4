"""Which broker each queue index of a topic is on, in the order the C++ client (rocketmq 0.4.4) numbers them.

The C++ client's send result names no queue and no broker, so the SDK picks every send's queue itself (through
the client's queue selector) and must therefore know the client's queue list. librocketmq 1.2.x builds it in
``MQClientFactory::topicRouteData2TopicPublishInfo``: from the route's ``orderTopicConf`` ("broker-a:8;broker-b:8",
in that order) when the name server has one for the topic, otherwise from its queue datas sorted by broker name
(``TopicRouteData::Decode`` sorts them), keeping writable ones whose broker has a master in the route, queue ids
0..writeQueueNums-1 each. A topic unknown to the name server is sent on the default topic's (TBW102) route with at
most 4 queues per broker, as the client's auto-creation does. :func:`queue_brokers` is that rule;
tests/sdk/test_routes.py checks it against where the real client's messages land.

:class:`RouteTable` caches the lists per topic, reads a new topic's route on its first send (bounded by the admin
client's timeout) and refreshes known topics every :data:`REFRESH_INTERVAL` seconds in a background thread, as the
C++ client refreshes its own. It keeps the previous lists too, because around a route change the client may still
use the older one: a selector only learns the client's queue count, and picks the list of that length.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import DEFAULT_TOPIC, MQAdmin
from monitor.remoting.body import MASTER_ID, PermName, TopicRouteData
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingClientError, RemotingError

log = logging.getLogger("monitor.sdk")

# The C++ client refreshes its routes every 30 s (MQClientFactory's updateTopicRouteInfo timer).
REFRESH_INTERVAL = 30.0
# A topic unknown to the name server gets at most this many queues per broker from the default topic's route.
DEFAULT_TOPIC_QUEUE_NUMS = 4
# Earlier queue lists kept per topic, for sends while the client still uses an older route.
HISTORY = 3
URGENT_REFRESH_PAUSE = 1.0

QueueBrokers = tuple[str, ...]


class NoRoute(Exception):
    """The name servers have no route for the topic (nor the default topic), or could not be asked."""


def queue_brokers(route: TopicRouteData, *, default: bool = False) -> QueueBrokers:
    """The broker name of each queue index, as the C++ client lists the topic's queues for sending.

    ``default``: ``route`` is the default topic's, used for a topic the name server does not know yet."""
    if route.order_topic_conf and not default:
        brokers: list[str] = []
        for entry in route.order_topic_conf.split(";"):
            name, _, nums = entry.partition(":")
            brokers.extend([name] * int(nums))
        return tuple(brokers)
    masters = {data.broker_name for data in route.broker_datas if data.broker_addrs.get(MASTER_ID)}
    brokers = []
    for queue in sorted(route.queue_datas, key=lambda data: data.broker_name.encode()):
        if not PermName.is_writeable(queue.perm) or queue.broker_name not in masters:
            continue
        nums = min(DEFAULT_TOPIC_QUEUE_NUMS, queue.read_queue_nums) if default else queue.write_queue_nums
        brokers.extend([queue.broker_name] * nums)
    return tuple(brokers)


class RouteTable:
    """Queue lists per topic, read through :class:`~monitor.remoting.admin.MQAdmin` from the name servers."""

    def __init__(self, namesrv_addrs: str, *, acl: AclCredentials | None = None, timeout: float = 3.0):
        self._admin = MQAdmin(namesrv_addrs, acl=acl, timeout=timeout, connect_timeout=timeout)
        self._lock = threading.Lock()
        self._current: dict[str, QueueBrokers] = {}
        self._history: dict[str, tuple[QueueBrokers, ...]] = {}  # replaced whole, so readers need no lock
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._stale: set[str] = set()
        self._addrs: dict[str, str] = {}  # broker name -> master address
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._refresh_loop, name="mqcloud-sdk-routes", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self._admin.close()

    def queues(self, topic: str) -> QueueBrokers:
        """The topic's current queue list; read from the name servers on first use. NoRoute if there is none."""
        current = self._current.get(topic)
        if current:
            return current
        return self.refresh(topic)

    def brokers_for_size(self, topic: str, size: int) -> QueueBrokers | None:
        """The current or a recent queue list of ``size`` queues (the client's list as its selector sees it)."""
        current = self._current.get(topic)
        if current is not None and len(current) == size:
            return current
        for older in self._history.get(topic, ()):
            if len(older) == size:
                return older
        return None

    def refresh(self, topic: str) -> QueueBrokers:
        """Read the topic's route now (NoRoute if the name servers have none or do not answer)."""
        try:
            brokers = self._read(topic)
        except (RemotingClientError, ValueError) as error:  # ValueError: an orderTopicConf that makes no sense
            raise NoRoute(f"No route info of this topic: {topic} ({error})") from error
        if not brokers:
            raise NoRoute(f"No route info of this topic: {topic} (no writable queue on a broker with a master)")
        with self._lock:
            previous = self._current.get(topic)
            if previous != brokers:
                self._current[topic] = brokers
                if previous:
                    self._history[topic] = (previous, *self._history.get(topic, ()))[:HISTORY]
        return brokers

    def topics(self) -> Iterable[str]:
        return list(self._current)

    def broker_addr(self, broker_name: str) -> str:
        """The master's address of a broker of a route read (a traced send's store host); empty if unknown."""
        return self._addrs.get(broker_name, "")

    def _read(self, topic: str) -> QueueBrokers:
        try:
            route = self._admin.examine_topic_route_info(topic)
            default = False
        except RemotingError as error:
            if error.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            route = self._admin.examine_topic_route_info(DEFAULT_TOPIC)
            default = True
        for data in route.broker_datas:
            if data.broker_addrs.get(MASTER_ID):
                self._addrs[data.broker_name] = data.broker_addrs[MASTER_ID]
        return queue_brokers(route, default=default)

    def request_refresh(self, topic: str) -> None:
        """Read the topic's route again soon (a selector saw a queue count matching none of the known lists)."""
        self._stale.add(topic)
        self._wake.set()

    def _refresh_loop(self) -> None:
        next_full = time.monotonic() + REFRESH_INTERVAL
        while True:
            self._wake.wait(max(0.0, next_full - time.monotonic()))
            if self._stopped.is_set():
                return
            self._wake.clear()
            if time.monotonic() >= next_full:
                next_full = time.monotonic() + REFRESH_INTERVAL
                topics = self.topics()
            else:
                topics = list(self._stale)
            self._stale.difference_update(topics)
            for topic in topics:
                if self._stopped.is_set():
                    return
                try:
                    self.refresh(topic)
                except NoRoute as error:  # keep the last known list: the client keeps its route too
                    log.warning("refreshing the route of %s failed: %s", topic, error)
                except Exception:  # a bug here must not end the refreshes for the life of the application
                    log.exception("refreshing the route of %s failed", topic)
            # At most one urgent round per second, however many sends see an unknown queue count.
            if self._stopped.wait(URGENT_REFRESH_PAUSE):
                return
