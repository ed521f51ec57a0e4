"""Helpers of the collection tests (their fixtures are in :mod:`tests.monitor.fixtures_traffic`): real C++ client
traffic whose own counts the tests compare with what the collector stored, and the brokers' stats sampled by hand.

The brokers' stats windows are sampled on a clock of the tests' own (:class:`ManualStats`): one sampling a day
ahead when the cluster starts, which also keeps the brokers' wall-clock samplers quiet for the rest of the run, then
one 10-second step whenever a test has finished its traffic. A stats key created by a test's traffic then reports
exactly that traffic in its minute window, whenever the test collects.

Every wait polls a condition with a deadline; nothing sleeps a fixed time.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path

from monitor.collect.traffic import CollectReport, collect_cluster
from monitor.remoting.body import MessageQueue
from monitor.remoting.codes import RequestCode
from monitor.remoting.message import decode_messages
from monitor.sandbox.broker._common import now_ms
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.stats import DAY_SAMPLE_PERIOD_MS, MINUTE_SAMPLE_PERIOD_MS
from monitor.sandbox.traffic import Plan, Traffic, TrafficClient, TrafficOptions
from monitor.sandbox.traffic.profiles import consumer, producer
from portal.models import Cluster
from tests.support.waiting import wait_for

WAIT = 60.0
OPTIONS = TrafficOptions(rate=20.0, amplitude=0.0, backlog=0, status_interval=0.2)
# A consumer this many bytes behind the commit log's end is sent to the slave (4.9.4: 40% of RAM).
SLAVE_BEHIND_BYTES = 16 * 1024


class ManualStats:
    """Every broker's BrokerStatsManager, sampled on the tests' clock."""

    def __init__(self, sandbox: SandboxCluster):
        self.sandbox = sandbox
        self.clock_ms = now_ms() + DAY_SAMPLE_PERIOD_MS * 24
        self._tick()

    def _tick(self) -> None:
        for broker in self.sandbox.brokers.values():
            broker.stats.tick(self.clock_ms)

    def sample(self) -> None:
        """One 10-second sampling on every broker (masters and slaves)."""
        self.clock_ms += MINUTE_SAMPLE_PERIOD_MS
        self._tick()


def collect(cluster: Cluster, at: dt.datetime | None = None) -> CollectReport:
    report = collect_cluster(cluster, now=at)
    assert report.ran
    return report


def plan(
    topic: str, group: str | None = None, *, queues: int = 4, backlog: int = 0, rate: float = 20.0, **consumer_extra
) -> Plan:
    """A topic with ``queues`` queues on each master, a producer writing ``backlog`` messages then ``rate`` a second,
    and (with ``group``) a push consumer."""
    clients = [producer(f"pg_{topic}", topic, rate, OPTIONS, backlog=backlog, body_bytes=1024)]
    groups = {}
    if group is not None:
        clients.append(consumer(group, topic, **consumer_extra))
        groups[group] = 16
    return Plan(topics={topic: queues}, groups=groups, clients=clients)


class Run:
    """A traffic run whose clients are stopped in order: the producers first (their final counts are what was
    stored), then, once they have caught up, the consumers."""

    def __init__(self, sandbox: SandboxCluster, traffic_plan: Plan, workdir: Path):
        self.traffic = Traffic(sandbox.namesrv_addr, traffic_plan, options=OPTIONS, workdir=workdir)
        self.clients: list[TrafficClient] = []

    def start(self) -> Run:
        self.traffic.start()
        self.clients = list(self.traffic.clients)
        return self

    def client(self, name: str) -> TrafficClient:
        return next(c for c in self.clients if c.name == name)

    def status(self, name: str) -> dict:
        return self.client(name).status()

    def stop_producers(self, at_least: int) -> int:
        """Once every producer has stored ``at_least`` messages, stop them; returns how many they stored."""
        producers = [c for c in self.clients if c.spec["role"] == "producer"]
        wait_for(
            lambda: all(c.status().get("sent", 0) >= at_least for c in producers),
            what="producers sending",
            timeout=WAIT,
        )
        for c in producers:
            c.terminate()
        deadline = time.monotonic() + 10
        for c in producers:
            c.reap(deadline)
        return sum(c.status().get("sent", 0) for c in producers)

    def stop(self) -> None:
        self.traffic.stop()


@contextlib.contextmanager
def running(sandbox: SandboxCluster, traffic_plan: Plan, workdir: Path) -> Iterator[Run]:
    run = Run(sandbox, traffic_plan, workdir).start()
    try:
        yield run
    finally:
        run.stop()


def stored(sandbox: SandboxCluster, topic: str) -> tuple[int, int]:
    """(messages, bytes) the masters hold for ``topic``, read from their stores."""
    count = size = 0
    for name in sandbox.broker_names:
        master = sandbox.broker(name)
        for queue_id in master.store.queue_ids(topic):
            for message in decode_messages(master.store.get_message(topic, queue_id, 0, 100_000).body):
                count += 1
                size += message.store_size
    return count, size


@contextlib.contextmanager
def stats_requests(sandbox: SandboxCluster) -> Iterator[list[tuple[str, str, str]]]:
    """Record the VIEW_BROKER_STATS_DATA requests every broker receives: (broker label, stats name, key)."""
    seen: list[tuple[str, str, str]] = []
    originals = {}
    for (name, broker_id), broker in sandbox.brokers.items():
        original = originals[name, broker_id] = broker._handlers[RequestCode.VIEW_BROKER_STATS_DATA]

        async def recording(conn, cmd, original=original, label=f"{name}:{broker_id}"):
            seen.append((label, cmd.ext_fields["statsName"], cmd.ext_fields["statsKey"]))
            return await original(conn, cmd)

        broker.register(RequestCode.VIEW_BROKER_STATS_DATA, recording)
    try:
        yield seen
    finally:
        for (name, broker_id), broker in sandbox.brokers.items():
            broker.register(RequestCode.VIEW_BROKER_STATS_DATA, originals[name, broker_id])


def queue(topic: str, broker_name: str, queue_id: int) -> MessageQueue:
    return MessageQueue(topic, broker_name, queue_id)
