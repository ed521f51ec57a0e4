"""The per-minute collection of a cluster: production, consumption, consumer progress, clients and offset errors.

One cycle reads the whole cluster with few requests, all at once, a bounded number per broker
(:mod:`monitor.collect.requests`):

1. each broker's runtime info (its cumulative put/get counters; a broker that does not answer is down for the
   cycle and its figures are gaps), the brokers being those the name servers list plus those the registry knows;
2. each master's topic table and GET_BROKER_CONSUME_STATS: every group's queues on that master, with the queues'
   ends, the group's committed offsets and the store time of the last message it consumed, in one request;
3. then, concurrently: VIEW_BROKER_STATS_DATA for the stats keys that may have moved (TOPIC_PUT_NUMS per topic on
   each master; GROUP_GET_NUMS per topic@group on each master AND slave, since a consumer far behind is served by
   the slave; SNDBCK_PUT_NUMS on masters; the _SIZE figures only where the count is not zero), each group's
   connections and its clients' running info, and the new OFFSET_MOVED_EVENT messages;
4. last, what those answers call for: the dead-letter queues of groups that sent messages back, the queue ends
   of topics broadcasting groups read, and the stats keys of subscriptions no master had offsets for.

Keys proved idle, or said not to exist, are not asked (:mod:`monitor.collect.memory`). The rows, the collector's
memory and the lease are written at the end, in one transaction.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from monitor.collect import lease
from monitor.collect.consumers import GroupClients, blocked_rows, broadcast_progress, client_rows, read_group_clients
from monitor.collect.memory import Memory
from monitor.collect.offset_events import EVENT_QUEUE_ID, read_events
from monitor.collect.requests import UNREACHABLE, BrokerDown, Requests
from monitor.remoting import body as b
from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import AsyncMQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import ProtocolError, RemotingError
from portal.models import Cluster
from portal.validation import is_system_group, is_system_topic
from stats import keys
from stats.models import BrokerMinute, ClusterMinute, ConsumeMinute, GroupMinute, QueueLagMinute, TopicMinute
from stats.store.traffic import MinuteSamples, store_minute

logger = logging.getLogger(__name__)

MASTER_ID = 0
# Connection-level failures in a row after which a broker is treated as down for the rest of the cycle.
TRIP_AFTER = 3
RUNTIME_ATTEMPTS = 2


@dataclass(frozen=True)
class Window:
    """A stats key's last minute on one broker: the count (or bytes) and the broker's per-second rate."""

    sum: int
    tps: float


ZERO = Window(0, 0.0)


@dataclass(frozen=True)
class Target:
    """A broker the cycle reads."""

    broker_name: str
    broker_id: int
    addr: str

    @property
    def is_master(self) -> bool:
        return self.broker_id == MASTER_ID

    @property
    def label(self) -> str:
        return f"{self.broker_name}:{self.broker_id}"


@dataclass
class MasterTables:
    """What a master's two whole-table answers say: its topics, its subscription groups, and each group's queues
    (topic, group) -> queue id -> offsets."""

    topics: set[str] = field(default_factory=set)
    groups: list[str] = field(default_factory=list)
    queues: dict[tuple[str, str], dict[int, b.OffsetWrapper]] = field(default_factory=dict)
    ends: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass
class CollectReport:
    """What one collection did. ``ran`` is False when another collection of the cluster held the lease."""

    cluster: str
    minute: dt.datetime | None = None
    ran: bool = True
    brokers: int = 0
    brokers_down: list[str] = field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0
    rows: int = 0

    def counts(self) -> dict[str, int | float]:
        return {
            "ran": int(self.ran),
            "brokers": self.brokers,
            "brokers_down": len(self.brokers_down),
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "rows": self.rows,
        }


def collect_cluster(cluster: Cluster, *, now: dt.datetime | None = None) -> CollectReport:
    """Collect one minute of ``cluster`` (the minute ``now`` falls in, default the current one) and store it.
    Does nothing, with ``ran=False``, while another collection of the cluster holds the lease."""
    report = CollectReport(cluster=cluster.name)
    claimed = lease.claim(cluster)
    if claimed is None:
        report.ran = False
        logger.info("collection of cluster %s skipped: another collection is running", cluster.name)
        return report
    token, memory_data = claimed
    new_memory = None
    error = ""
    try:
        now = now or timezone.now()
        started = time.perf_counter()
        cycle = Cycle(cluster, Memory(memory_data, now.timestamp()), now)
        samples = asyncio.run(cycle.run(_targets(cluster)))
        report.minute = cycle.minute
        report.brokers = len(cycle.targets)
        report.brokers_down = sorted(cycle.down_labels())
        report.requests = cycle.requests.count
        report.seconds = samples.cluster.seconds = time.perf_counter() - started
        report.rows = _row_count(samples)
        with transaction.atomic():
            store_minute(samples)
        new_memory = cycle.memory.dump()
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        lease.release(cluster, token, memory=new_memory, error=error)
    logger.info("collection of cluster %s: %s", cluster.name, report.counts())
    return report


def _row_count(samples: MinuteSamples) -> int:
    kinds = (samples.brokers, samples.topics, samples.consumes, samples.queue_lags, samples.groups, samples.clients)
    return 1 + sum(len(rows) for rows in kinds) + len(samples.blocked) + len(samples.events)


def _targets(cluster: Cluster) -> list[Target]:
    """The brokers the registry knows are present; the cycle adds those the name servers list besides."""
    return [
        Target(broker.broker_name, broker.broker_id, broker.address)
        for broker in cluster.brokers.filter(present=True).order_by("broker_name", "broker_id")
    ]


def _window(data: b.BrokerStatsData) -> Window:
    tps = data.stats_minute.tps
    return Window(data.stats_minute.sum, tps if tps is not None and math.isfinite(tps) else 0.0)


def _total(windows: Iterable[Window | None]) -> Window | None:
    """The sum of windows, or None (a gap) if any is unknown."""
    total, tps = 0, 0.0
    for window in windows:
        if window is None:
            return None
        total += window.sum
        tps += window.tps
    return Window(total, tps)


def _earliest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


class Cycle:
    """One collection of one cluster at ``now``; :meth:`run` reads and returns the minute's rows."""

    def __init__(self, cluster: Cluster, memory: Memory, now: dt.datetime):
        self.cluster_id = cluster.pk
        self.namesrv_addrs = cluster.namesrv_addr
        self.acl = AclCredentials(cluster.acl_access_key, cluster.acl_secret_key) if cluster.acl_enabled else None
        self.memory = memory
        self.now = now
        self.now_ms = int(now.timestamp() * 1000)
        self.minute = now.astimezone(dt.UTC).replace(second=0, microsecond=0)
        self.timeout = settings.COLLECT_REQUEST_TIMEOUT
        self.requests = Requests(per_address=settings.COLLECT_CONCURRENCY_PER_BROKER, trip_after=TRIP_AFTER)
        self.targets: list[Target] = []
        self.counters: dict[str, dict[str, int | None]] = {}
        self.masters: dict[str, MasterTables] = {}
        self.windows: dict[tuple[str, str, str], Window | None] = {}
        self.clients: dict[str, GroupClients] = {}
        self.events: list = []
        self.dlq_totals: dict[tuple[str, str], int | None] = {}
        self.extra_ends: dict[tuple[str, str, int], int] = {}
        self.admin: AsyncMQAdmin | None = None

    # --- reading -----------------------------------------------------------------------------------------------

    async def run(self, registered: list[Target]) -> MinuteSamples:
        self.admin = AsyncMQAdmin(
            self.namesrv_addrs,
            acl=self.acl,
            timeout=settings.COLLECT_BULK_TIMEOUT,
            connect_timeout=min(self.timeout, 3.0),
            max_inflight=settings.COLLECT_CONCURRENCY_PER_BROKER,
        )
        try:
            self.targets = await self._all_targets(registered)
            await asyncio.gather(*(self._runtime(target) for target in self.targets))
            await asyncio.gather(*(self._master_tables(t) for t in self.targets if t.is_master and self._up(t)))
            await asyncio.gather(*self._first_wave())
            await asyncio.gather(*self._second_wave())
        finally:
            await self.admin.close()
        return self._samples()

    async def _all_targets(self, registered: list[Target]) -> list[Target]:
        """The registry's brokers, with the addresses and any brokers the name servers list besides."""
        targets = {(t.broker_name, t.broker_id): t for t in registered}
        try:
            info = await self.requests.send("namesrv", self.admin.examine_broker_cluster_info, timeout=self.timeout)
        except (RemotingError, ProtocolError, BrokerDown, *UNREACHABLE) as exc:
            logger.warning(
                "cluster %s: no name server answered (%s); reading the registered brokers", self.cluster_id, exc
            )
        else:
            for name, data in info.broker_addr_table.items():
                for broker_id, addr in data.broker_addrs.items():
                    targets[name, broker_id] = Target(name, broker_id, addr)
        return sorted(targets.values(), key=lambda t: (t.broker_name, t.broker_id))

    def _up(self, target: Target) -> bool:
        return target.addr not in self.requests.down

    def down_labels(self) -> list[str]:
        return [t.label for t in self.targets if not self._up(t)]

    async def _runtime(self, target: Target) -> None:
        """The broker's cumulative counters; a broker that does not answer is down for this cycle."""
        for attempt in range(RUNTIME_ATTEMPTS):
            try:
                table = await self.requests.send(
                    target.addr,
                    lambda: self.admin.fetch_broker_runtime_stats(target.addr),
                    timeout=self.timeout,
                    strike=False,
                )
            except (RemotingError, ProtocolError, BrokerDown, *UNREACHABLE) as exc:
                if attempt + 1 == RUNTIME_ATTEMPTS:
                    self.requests.mark_down(target.addr, str(exc) or type(exc).__name__)
                continue
            info = b.BrokerRuntimeInfo.from_kvtable(table)
            self.counters[target.label] = {
                "put": info.msg_put_total_today_now,
                "get": info.msg_get_total_today_now,
            }
            return

    async def _master_tables(self, target: Target) -> None:
        try:
            topics, consume = await asyncio.gather(
                self.requests.send(target.addr, lambda: self.admin.get_all_topic_config(target.addr)),
                self.requests.send(target.addr, lambda: self.admin.fetch_consume_stats_in_broker(target.addr)),
            )
        except (RemotingError, ProtocolError, BrokerDown, *UNREACHABLE) as exc:
            self.requests.mark_down(target.addr, str(exc) or type(exc).__name__)
            return
        tables = MasterTables(topics=set(topics.topic_config_table))
        for group, per_topic in consume.by_group().items():
            if is_system_group(group):
                continue
            tables.groups.append(group)
            for stats in per_topic:
                for mq, offsets in stats.offset_table.items():
                    tables.queues.setdefault((mq.topic, group), {})[mq.queue_id] = offsets
                    tables.ends.setdefault(mq.topic, {})[mq.queue_id] = offsets.broker_offset
        self.masters[target.broker_name] = tables

    # --- what each broker holds --------------------------------------------------------------------------------

    def _layout(self, broker_name: str) -> dict[str, list]:
        """The user topics and (topic, group) pairs of a broker name: from its master now, else as last seen."""
        tables = self.masters.get(broker_name)
        if tables is None:
            return self.memory.layout.get(broker_name, {"topics": [], "pairs": []})
        layout = {
            "topics": sorted(t for t in tables.topics if not is_system_topic(t)),
            "pairs": sorted([topic, group] for topic, group in tables.queues),
        }
        self.memory.layout[broker_name] = layout
        return layout

    def _slaves(self, broker_name: str) -> list[Target]:
        return [t for t in self.targets if t.broker_name == broker_name and not t.is_master]

    def _master(self, broker_name: str) -> Target | None:
        return next((t for t in self.targets if t.broker_name == broker_name and t.is_master), None)

    # --- proving keys idle -------------------------------------------------------------------------------------

    def _counter_since(self, target: Target, direction: str) -> float | None:
        counters = self.counters.get(target.label)
        if counters is None or counters[direction] is None:
            return None
        return self.memory.observe(self.memory.key("b", target.label, direction), counters[direction])

    def _topic_since(self, broker_name: str, topic: str) -> float | None:
        ends = self.masters[broker_name].ends.get(topic)
        if ends is None:
            return None
        return self.memory.observe(self.memory.key("t", broker_name, topic), sum(ends.values()))

    def _pair_since(self, broker_name: str, topic: str, group: str) -> float | None:
        """Since when the group's committed offsets and the queue ends are unchanged, if it has no backlog."""
        tables = self.masters.get(broker_name)
        queues = tables.queues.get((topic, group)) if tables is not None else None
        if queues is None:
            return None
        consumed = sum(o.consumer_offset for o in queues.values())
        stored = sum(o.broker_offset for o in queues.values())
        since = self.memory.observe(self.memory.key("p", broker_name, topic, group), [consumed, stored])
        return since if consumed >= stored else None

    async def _stat(self, target: Target, stat: str, key: str, quiet_since: float | None) -> Window | None:
        """One stats key's minute on one broker: ZERO without asking when proved idle or known missing."""
        missing = self.memory.key("m", target.label, stat, key)
        if quiet_since is not None and self.memory.quiet(quiet_since):
            return ZERO
        if self.memory.skip_missing(missing, quiet_since):
            return ZERO
        try:
            data = await self.requests.send(
                target.addr, lambda: self.admin.view_broker_stats_data(target.addr, stat, key), timeout=self.timeout
            )
        except RemotingError as exc:
            if exc.code == ResponseCode.SYSTEM_ERROR and keys.is_missing_stats_remark(exc.remark):
                self.memory.mark_missing(missing)
                return ZERO
            logger.warning("%s %s on %s: %s", stat, key, target.label, exc)
            return None
        except (ProtocolError, BrokerDown, *UNREACHABLE):
            return None
        self.memory.unmark_missing(missing)
        return _window(data)

    async def _stat_pair(self, target: Target, nums: str, size: str, key: str, quiet_since: float | None) -> None:
        """A count and, only where the count moved, its size."""
        count = await self._stat(target, nums, key, quiet_since)
        self.windows[target.label, nums, key] = count
        if count is None:
            self.windows[target.label, size, key] = None
        elif count.sum == 0:
            self.windows[target.label, size, key] = ZERO
        else:
            self.windows[target.label, size, key] = await self._stat(target, size, key, None)

    # --- the waves of requests ---------------------------------------------------------------------------------

    def _first_wave(self) -> list:
        work = []
        for target in self.targets:
            if not self._up(target):
                continue
            layout = self._layout(target.broker_name)
            jobs: list = []
            if target.is_master and target.broker_name in self.masters:
                jobs += [("topic", topic) for topic in layout["topics"] if not keys.is_group_topic(topic)]
            if target.broker_name in self.masters:
                jobs += [("pair", topic, group) for topic, group in layout["pairs"]]
            work.append(self.requests.map(target.addr, jobs, lambda job, t=target: self._key_job(t, job)))
        for broker_name, tables in self.masters.items():
            master = self._master(broker_name)
            hosted = [g for g in tables.groups if self._host(g) == broker_name]
            work.append(self.requests.map(master.addr, hosted, self._clients_job))
            position = self.memory.cursors.get(self.memory.key(broker_name, EVENT_QUEUE_ID))
            work.append(self._events_job(master, position))
        return work

    def _second_wave(self) -> list:
        """Dead-letter totals, queue ends for broadcasting groups, and the keys of subscriptions without offsets."""
        work = []
        extra: dict[str, list] = {}
        for group, clients in self.clients.items():
            if clients.connection is None:
                continue
            for topic in clients.connection.subscription_table:
                for broker_name, tables in self.masters.items():
                    if topic in tables.topics and (topic, group) not in tables.queues:
                        extra.setdefault(broker_name, []).append(("pair", topic, group))
                        if clients.broadcasting and topic not in tables.ends:
                            work.append(self._ends_job(broker_name, topic))
        for target in self.targets:
            jobs = extra.get(target.broker_name)
            if jobs and self._up(target):
                work.append(self.requests.map(target.addr, jobs, lambda job, t=target: self._key_job(t, job)))
        for broker_name, tables in self.masters.items():
            for topic in sorted(tables.topics):
                if topic.startswith(keys.DLQ_PREFIX):
                    work.append(self._dlq_job(broker_name, topic[len(keys.DLQ_PREFIX) :]))
        return work

    def _host(self, group: str) -> str:
        """The broker name whose master is asked about the group's clients (spread evenly, stable per group)."""
        names = sorted(name for name, tables in self.masters.items() if group in tables.groups)
        return names[zlib.crc32(group.encode()) % len(names)]

    async def _key_job(self, target: Target, job: tuple) -> None:
        name = target.broker_name
        if job[0] == "topic":
            topic = job[1]
            since = _earliest(self._counter_since(target, "put"), self._topic_since(name, topic))
            await self._stat_pair(target, keys.TOPIC_PUT_NUMS, keys.TOPIC_PUT_SIZE, keys.topic_key(topic), since)
            return
        _, topic, group = job
        key = keys.group_key(topic, group)
        pair_since = self._pair_since(name, topic, group)
        since = _earliest(self._counter_since(target, "get"), pair_since)
        await self._stat_pair(target, keys.GROUP_GET_NUMS, keys.GROUP_GET_SIZE, key, since)
        if target.is_master and not keys.is_group_topic(topic):
            since = _earliest(self._counter_since(target, "put"), pair_since)
            self.windows[target.label, keys.SNDBCK_PUT_NUMS, key] = await self._stat(
                target, keys.SNDBCK_PUT_NUMS, key, since
            )

    async def _clients_job(self, group: str) -> None:
        master = self._master(self._host(group))
        self.clients[group] = await read_group_clients(
            self.admin, self.requests, group, master.addr, running_info_timeout=self.timeout
        )

    async def _events_job(self, master: Target, position: int | None) -> None:
        events, position = await read_events(
            self.admin, self.requests, self.cluster_id, master.broker_name, master.addr, position
        )
        self.events += events
        if position is not None:
            self.memory.cursors[self.memory.key(master.broker_name, EVENT_QUEUE_ID)] = position

    async def _ends_job(self, broker_name: str, topic: str) -> None:
        master = self._master(broker_name)
        try:
            table = await self.requests.send(
                master.addr, lambda: self.admin.get_topic_stats_info(master.addr, topic), timeout=self.timeout
            )
        except (RemotingError, ProtocolError, BrokerDown, *UNREACHABLE) as exc:
            logger.warning("queue ends of %s on %s: %s", topic, broker_name, exc)
            return
        for mq, offsets in table.offset_table.items():
            self.extra_ends[mq.topic, mq.broker_name, mq.queue_id] = offsets.max_offset

    async def _dlq_job(self, broker_name: str, group: str) -> None:
        """The group's dead letters on this broker name: read again only if it sent messages back this minute (or
        was never read); otherwise the remembered total stands."""
        remembered = self.memory.dlq.get(self.memory.key(broker_name, group))
        sent_back = [
            window
            for (label, stat, key), window in self.windows.items()
            if stat == keys.SNDBCK_PUT_NUMS and label == f"{broker_name}:{MASTER_ID}" and key.endswith("@" + group)
        ]
        if remembered is not None and all(w is not None and w.sum == 0 for w in sent_back):
            self.dlq_totals[broker_name, group] = remembered[0]
            return
        master = self._master(broker_name)
        topic = keys.dlq_topic(group)
        try:
            table = await self.requests.send(
                master.addr, lambda: self.admin.get_topic_stats_info(master.addr, topic), timeout=self.timeout
            )
        except (RemotingError, ProtocolError, BrokerDown, *UNREACHABLE) as exc:
            logger.warning("dead letters of %s on %s: %s", group, broker_name, exc)
            self.dlq_totals[broker_name, group] = None
            return
        self.dlq_totals[broker_name, group] = sum(offsets.max_offset for offsets in table.offset_table.values())

    # --- the minute's rows -------------------------------------------------------------------------------------

    def _samples(self) -> MinuteSamples:
        down = set(self.down_labels())
        for target in self.targets:
            if target.label in down:
                self.memory.carry_over(self.memory.key("b", target.label, ""))
                self.memory.carry_over(self.memory.key("t", target.broker_name, ""))
                self.memory.carry_over(self.memory.key("p", target.broker_name, ""))
        samples = MinuteSamples(
            cluster=ClusterMinute(cluster_id=self.cluster_id, minute=self.minute),
            events=self.events,
        )
        topic_totals = self._topic_rows(samples)
        pair_totals = self._consume_rows(samples)
        self._group_rows(samples)
        self._broker_rows(samples, topic_totals, pair_totals)
        return samples

    def _value(self, target: Target | None, stat: str, key: str) -> Window | None:
        if target is None or not self._up(target):
            return None
        return self.windows.get((target.label, stat, key), ZERO if target.broker_name in self.masters else None)

    def _topic_rows(self, samples: MinuteSamples) -> dict[str, list]:
        """Topic rows; returns each master's windows, for its broker totals."""
        holders: dict[str, list[str]] = {}
        for broker_name in {t.broker_name for t in self.targets}:
            for topic in self._layout(broker_name)["topics"]:
                if not keys.is_group_topic(topic):
                    holders.setdefault(topic, []).append(broker_name)
        per_broker: dict[str, list] = {}
        for topic, broker_names in sorted(holders.items()):
            counts, sizes = [], []
            for broker_name in broker_names:
                master = self._master(broker_name)
                count = self._value(master, keys.TOPIC_PUT_NUMS, topic)
                size = self._value(master, keys.TOPIC_PUT_SIZE, topic)
                counts.append(count)
                sizes.append(size)
                if master is not None:
                    per_broker.setdefault(master.label, []).append((count, size))
            count, size = _total(counts), _total(sizes)
            if count is None or size is None or count.sum or size.sum:
                samples.topics.append(
                    TopicMinute(
                        cluster_id=self.cluster_id,
                        topic=topic,
                        minute=self.minute,
                        put_nums=count.sum if count else None,
                        put_size=size.sum if size else None,
                    )
                )
        return per_broker

    def _pairs(self) -> dict[tuple[str, str], list[str]]:
        """Every (topic, group) the cycle knows of, with the broker names it lives on."""
        pairs: dict[tuple[str, str], list[str]] = {}
        for broker_name in sorted({t.broker_name for t in self.targets}):
            for topic, group in self._layout(broker_name)["pairs"]:
                pairs.setdefault((topic, group), []).append(broker_name)
        for label, stat, key in self.windows:
            if stat == keys.GROUP_GET_NUMS:
                topic, _, group = key.rpartition("@")
                broker_name = label.rpartition(":")[0]
                names = pairs.setdefault((topic, group), [])
                if broker_name not in names:
                    names.append(broker_name)
        return pairs

    def _consume_rows(self, samples: MinuteSamples) -> dict[str, list]:
        """Consumption, lag and per-queue lag rows; returns each broker's get windows, for its totals."""
        per_broker: dict[str, list] = {}
        for (topic, group), broker_names in sorted(self._pairs().items()):
            key = keys.group_key(topic, group)
            gets, sizes, slave_gets, sendbacks = [], [], [], []
            for broker_name in broker_names:
                for target in [self._master(broker_name), *self._slaves(broker_name)]:
                    count = self._value(target, keys.GROUP_GET_NUMS, key)
                    size = self._value(target, keys.GROUP_GET_SIZE, key)
                    gets.append(count)
                    sizes.append(size)
                    if target is not None:
                        per_broker.setdefault(target.label, []).append((count, size))
                        if not target.is_master:
                            slave_gets.append(count)
                if not keys.is_group_topic(topic):
                    sendbacks.append(self._value(self._master(broker_name), keys.SNDBCK_PUT_NUMS, key))
            get, size, slave, sendback = _total(gets), _total(sizes), _total(slave_gets), _total(sendbacks)
            lag, lag_seconds = self._lag(samples, topic, group, broker_names)
            figures = (get, size, sendback, lag)
            if any(f is None for f in figures) or get.sum or sendback.sum or lag:
                samples.consumes.append(
                    ConsumeMinute(
                        cluster_id=self.cluster_id,
                        group=group,
                        topic=topic,
                        minute=self.minute,
                        get_nums=get.sum if get else None,
                        get_size=size.sum if size else None,
                        slave_get_nums=slave.sum if slave else None,
                        consume_tps=get.tps if get else None,
                        sndbck_nums=sendback.sum if sendback else None,
                        lag=lag,
                        lag_seconds=lag_seconds,
                    )
                )
        return per_broker

    def _lag(
        self, samples: MinuteSamples, topic: str, group: str, broker_names: list[str]
    ) -> tuple[int | None, float | None]:
        """Messages behind and seconds behind, adding the lagging queues' rows; None when a master holding the
        pair could not be read."""
        clients = self.clients.get(group)
        if clients is not None and clients.broadcasting:
            return self._broadcast_lag(samples, topic, group, clients)
        lag, oldest = 0, None
        for broker_name in broker_names:
            tables = self.masters.get(broker_name)
            if tables is None:
                return None, None
            for queue_id, offsets in sorted(tables.queues.get((topic, group), {}).items()):
                behind = offsets.broker_offset - offsets.consumer_offset
                if behind <= 0:
                    continue
                lag += behind
                stored_at = None
                if offsets.last_timestamp > 0:
                    stored_at = dt.datetime.fromtimestamp(offsets.last_timestamp / 1000, tz=dt.UTC)
                    oldest = offsets.last_timestamp if oldest is None else min(oldest, offsets.last_timestamp)
                samples.queue_lags.append(
                    QueueLagMinute(
                        cluster_id=self.cluster_id,
                        group=group,
                        topic=topic,
                        broker_name=broker_name,
                        queue_id=queue_id,
                        minute=self.minute,
                        broker_offset=offsets.broker_offset,
                        consumer_offset=offsets.consumer_offset,
                        lag=behind,
                        last_consumed_stored_at=stored_at,
                    )
                )
        if not lag:
            return 0, 0.0
        return lag, None if oldest is None else max(0.0, (self.now_ms - oldest) / 1000)

    def _broadcast_lag(
        self, samples: MinuteSamples, topic: str, group: str, clients: GroupClients
    ) -> tuple[int | None, float | None]:
        ends = dict(self.extra_ends)
        for tables in self.masters.values():
            for queue_topic, queues in tables.ends.items():
                for queue_id, end in queues.items():
                    ends.setdefault((queue_topic, self._name_of(tables), queue_id), end)
        progress = {where: p for where, p in broadcast_progress(clients, ends).items() if where[0] == topic}
        if not progress:
            return None, None
        lag = 0
        for (_, broker_name, queue_id), (end, committed, client_id) in sorted(progress.items()):
            behind = end - committed
            if behind <= 0:
                continue
            lag += behind
            samples.queue_lags.append(
                QueueLagMinute(
                    cluster_id=self.cluster_id,
                    group=group,
                    topic=topic,
                    broker_name=broker_name,
                    queue_id=queue_id,
                    minute=self.minute,
                    broker_offset=end,
                    consumer_offset=committed,
                    lag=behind,
                    client_id=client_id,
                )
            )
        return lag, None if lag else 0.0

    def _name_of(self, tables: MasterTables) -> str:
        return next(name for name, t in self.masters.items() if t is tables)

    def _group_rows(self, samples: MinuteSamples) -> None:
        threshold_ms = int(settings.CONSUMER_BLOCKED_SECONDS * 1000)
        lags: dict[str, dict[tuple[str, str, int], int]] = {}
        for row in samples.queue_lags:
            lags.setdefault(row.group, {})[row.topic, row.broker_name, row.queue_id] = row.lag
        dlq = self._dlq()
        for group in sorted(set(self.clients) | set(dlq)):
            clients = self.clients.get(group, GroupClients(group, online=False))
            blocked = blocked_rows(
                self.cluster_id,
                self.minute,
                clients,
                lags.get(group, {}),
                now_ms=self.now_ms,
                threshold_ms=threshold_ms,
            )
            samples.blocked += blocked
            samples.clients += client_rows(self.cluster_id, self.minute, clients)
            dlq_total, dlq_nums = dlq.get(group, (None, 0))
            if not clients.online and clients.online is not None and dlq_nums == 0:
                continue
            connection = clients.connection
            answered = clients.infos and all(isinstance(i, b.ConsumerRunningInfo) for i in clients.infos.values())
            samples.groups.append(
                GroupMinute(
                    cluster_id=self.cluster_id,
                    group=group,
                    minute=self.minute,
                    clients=len(connection.connection_set) if connection else (0 if clients.online is False else None),
                    message_model=connection.message_model.name if connection and connection.message_model else "",
                    consume_type=connection.consume_type.name if connection and connection.consume_type else "",
                    subscription_consistent=clients.consistent(),
                    blocked_queues=len(blocked) if answered else None,
                    dlq_nums=dlq_nums,
                    dlq_total=dlq_total,
                )
            )

    def _dlq(self) -> dict[str, tuple[int | None, int | None]]:
        """group -> (dead letters ever, dead letters new this minute), for groups with a dead-letter queue; both
        unknown while a master that holds some of them is down."""
        for key in self.memory.dlq:
            broker_name, group = key.split("\t")
            if broker_name not in self.masters:
                self.dlq_totals.setdefault((broker_name, group), None)
        per_group: dict[str, list[int | None]] = {}
        for (broker_name, group), total in self.dlq_totals.items():
            per_group.setdefault(group, []).append(total)
            if total is None:
                continue
            key = self.memory.key(broker_name, group)
            remembered = self.memory.dlq.get(key)
            minute = self.minute.timestamp()
            if remembered is None:
                base = None
            elif remembered[1] == minute:
                base = remembered[2]
            else:
                base = remembered[0]
            self.memory.dlq[key] = [total, minute, base]
        result = {}
        for group, totals in per_group.items():
            if any(t is None for t in totals):
                result[group] = (None, None)
                continue
            bases = [self.memory.dlq[self.memory.key(n, g)][2] for (n, g) in self.dlq_totals if g == group]
            total = sum(totals)
            result[group] = (total, None if any(x is None for x in bases) else total - sum(bases))
        return result

    def _broker_rows(
        self, samples: MinuteSamples, topic_windows: dict[str, list], pair_windows: dict[str, list]
    ) -> None:
        cluster = samples.cluster
        totals = {"put_nums": [], "put_size": [], "get_nums": [], "get_size": []}
        for target in self.targets:
            up = self._up(target)
            puts = topic_windows.get(target.label, []) if target.is_master else None
            gets = pair_windows.get(target.label, [])
            figures = {
                "put_nums": _total(c for c, _ in puts) if puts is not None else None,
                "put_size": _total(s for _, s in puts) if puts is not None else None,
                "get_nums": _total(c for c, _ in gets),
                "get_size": _total(s for _, s in gets),
            }
            if not up:
                figures = dict.fromkeys(figures)
            row = BrokerMinute(
                cluster_id=self.cluster_id,
                broker_name=target.broker_name,
                broker_id=target.broker_id,
                minute=self.minute,
                up=up,
                **{name: (w.sum if w else None) for name, w in figures.items()},
            )
            samples.brokers.append(row)
            for name in totals:
                if name.startswith("get") or target.is_master:
                    totals[name].append(figures[name])
        for name, windows in totals.items():
            total = _total(windows)
            setattr(cluster, name, total.sum if total else None)
        cluster.brokers = len(self.targets)
        cluster.brokers_down = len(self.down_labels())
        cluster.requests = self.requests.count
