"""One collection cycle of a cluster: what it reads, in waves that each depend on the one before.

One cycle reads the whole cluster with few requests, all at once, a bounded number per broker
(:mod:`monitor.collect.requests`):

1. each broker's runtime info (its cumulative put/get counters; a broker that does not answer is down for the
   cycle and its figures are gaps), the brokers being those the name servers list plus those the registry knows;
2. each master's topic table and GET_BROKER_CONSUME_STATS: every group's queues on that master with the queues'
   ends, the group's committed offsets, the store time of the last message it consumed, and its pull rate over the
   master's last minute, in one request;
3. VIEW_BROKER_STATS_DATA for the stats keys that may have moved: TOPIC_PUT_NUMS per topic on each master,
   GROUP_GET_NUMS per topic@group on each master AND slave (a consumer far behind is served by the slave, whose
   counts the master never sees), each _SIZE figure only where its count is not zero; with them, each group's
   connections and its clients' running info, and the new OFFSET_MOVED_EVENT messages;
4. SNDBCK_PUT_NUMS of the groups that consumed or are behind (only they can have sent messages back), the stats
   keys of subscriptions no master had offsets for, and the queue ends of topics broadcasting groups read;
5. the dead-letter totals of groups that sent messages back (the others' are remembered).

The stats keys are read by :mod:`monitor.collect.stats_keys`, which leaves out those proved idle or still missing;
the cycle returns its :class:`~monitor.collect.rows.Readings`, which :mod:`monitor.collect.traffic` turns into the
minute's rows.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
import zlib

from django.conf import settings

from monitor.collect.consumers import read_group_clients
from monitor.collect.memory import Memory
from monitor.collect.offset_events import EVENT_QUEUE_ID, read_events
from monitor.collect.requests import FAILED, Requests
from monitor.collect.rows import MasterTables, Readings, Target
from monitor.collect.stats_keys import KeyReader
from monitor.remoting import body as b
from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import AsyncMQAdmin
from monitor.remoting.errors import RemotingError
from portal.models import Cluster
from portal.models.validation import is_system_group, is_system_topic
from stats import keys

logger = logging.getLogger(__name__)

# Connection-level failures in a row after which a broker is treated as down for the rest of the cycle.
TRIP_AFTER = 3
RUNTIME_ATTEMPTS = 2


class Cycle:
    """One collection of one cluster at ``now``; :meth:`run` reads it and returns the readings."""

    def __init__(self, cluster: Cluster, memory: Memory, now: dt.datetime):
        self.memory = memory
        self.readings = Readings(
            cluster_id=cluster.pk,
            minute=now.astimezone(dt.UTC).replace(second=0, microsecond=0),
            now_ms=int(now.timestamp() * 1000),
            memory=memory,
        )
        self.namesrv_addrs = cluster.namesrv_addr
        self.acl = AclCredentials(cluster.acl_access_key, cluster.acl_secret_key) if cluster.acl_enabled else None
        self.timeout = settings.COLLECT_REQUEST_TIMEOUT
        self.requests = Requests(per_address=settings.COLLECT_CONCURRENCY_PER_BROKER, trip_after=TRIP_AFTER)
        self.counters: dict[str, dict[str, int | None]] = {}
        self.hosts: dict[str, str] = {}
        self.dlq_refresh: set[tuple[str, str]] = set()
        self.admin: AsyncMQAdmin | None = None
        self.stats: KeyReader | None = None

    # --- reading -----------------------------------------------------------------------------------------------

    async def run(self, registered: list[Target]) -> Readings:
        self.admin = AsyncMQAdmin(
            self.namesrv_addrs,
            acl=self.acl,
            timeout=settings.COLLECT_BULK_TIMEOUT,
            connect_timeout=min(self.timeout, 3.0),
            max_inflight=settings.COLLECT_CONCURRENCY_PER_BROKER,
        )
        self.stats = KeyReader(
            self.readings, self.memory, self.requests, self.admin, timeout=self.timeout, counters=self.counters
        )
        readings = self.readings
        try:
            readings.targets = await self._all_targets(registered)
            await asyncio.gather(*(self._runtime(target) for target in readings.targets))
            await asyncio.gather(*(self._master_tables(t) for t in readings.targets if t.is_master and self._up(t)))
            self._note_down()
            readings.layout_from_masters(is_system_topic)
            await asyncio.gather(*self._keys_and_clients())
            await asyncio.gather(*self._follow_ups())
            await asyncio.gather(*self._dead_letters())
        finally:
            await self.admin.close()
        self._note_down()
        for target in readings.targets:
            if target.label in readings.down:  # keep what proves its keys idle for when it is back
                self.memory.carry_over(self.memory.key("b", target.label, ""))
                self.memory.carry_over(self.memory.key("t", target.broker_name, ""))
                self.memory.carry_over(self.memory.key("p", target.broker_name, ""))
                self.memory.carry_over(self.memory.key("m", target.label, ""))
        readings.requests = self.requests.count
        return readings

    def _up(self, target: Target) -> bool:
        return target.addr not in self.requests.down

    def _note_down(self) -> None:
        self.readings.down = {t.label for t in self.readings.targets if not self._up(t)}

    async def _all_targets(self, registered: list[Target]) -> list[Target]:
        """The registry's brokers, with the addresses and any brokers the name servers list besides."""
        targets = {(t.broker_name, t.broker_id): t for t in registered}
        try:
            info = await self.requests.send("namesrv", self.admin.examine_broker_cluster_info, timeout=self.timeout)
        except FAILED as exc:
            logger.warning("cluster %s: no name server answered (%s); reading registered brokers", self.cluster_id, exc)
        else:
            for name, data in info.broker_addr_table.items():
                for broker_id, addr in data.broker_addrs.items():
                    targets[name, broker_id] = Target(name, broker_id, addr)
        return sorted(targets.values(), key=lambda t: (t.broker_name, t.broker_id))

    @property
    def cluster_id(self) -> int:
        return self.readings.cluster_id

    async def _runtime(self, target: Target) -> None:
        """The broker's cumulative counters; a broker that does not answer is down for this cycle. One that answers
        with an error code is up, its counters unknown (nothing of it is proved idle): a 4.9.4 broker answers
        SYSTEM_ERROR (NoSuchElementException) for about a second after it boots, before its store has sampled."""
        for attempt in range(RUNTIME_ATTEMPTS):
            try:
                table = await self.requests.send(
                    target.addr,
                    lambda: self.admin.fetch_broker_runtime_stats(target.addr),
                    timeout=self.timeout,
                    strike=False,
                )
            except RemotingError as exc:
                logger.info("runtime info of %s not read: %s", target.label, exc)
                return
            except FAILED as exc:
                if attempt + 1 == RUNTIME_ATTEMPTS:
                    self.requests.mark_down(target.addr, str(exc) or type(exc).__name__)
                continue
            info = b.BrokerRuntimeInfo.from_kvtable(table)
            self.counters[target.label] = {"put": info.msg_put_total_today_now, "get": info.msg_get_total_today_now}
            return

    async def _master_tables(self, target: Target) -> None:
        try:
            topics, consume = await asyncio.gather(
                self.requests.send(target.addr, lambda: self.admin.get_all_topic_config(target.addr)),
                self.requests.send(target.addr, lambda: self.admin.fetch_consume_stats_in_broker(target.addr)),
            )
        except FAILED as exc:
            self.requests.mark_down(target.addr, str(exc) or type(exc).__name__)
            return
        tables = MasterTables(topics=set(topics.topic_config_table))
        for group, per_topic in consume.by_group().items():
            if not group or is_system_group(group):
                continue
            tables.groups.add(group)
            for stats in per_topic:
                for mq, offsets in stats.offset_table.items():
                    tables.queues.setdefault((mq.topic, group), {})[mq.queue_id] = offsets
                    tables.ends.setdefault(mq.topic, {})[mq.queue_id] = offsets.broker_offset
                    tps = stats.consume_tps
                    tables.tps[mq.topic, group] = tps if tps is not None and math.isfinite(tps) else None
        self.readings.masters[target.broker_name] = tables

    # --- the waves ---------------------------------------------------------------------------------------------

    def _keys_and_clients(self) -> list:
        readings = self.readings
        work = []
        for target in readings.targets:
            if not self._up(target) or target.broker_name not in readings.masters:
                continue
            layout = readings.layouts[target.broker_name]
            jobs = [("get", topic, group) for topic, group in layout["pairs"]]
            if target.is_master:
                jobs += [("put", topic, None) for topic in layout["topics"] if not keys.is_group_topic(topic)]
            work.append(self.requests.map(target.addr, jobs, lambda job, t=target: self._key_job(t, *job)))
        for group in sorted({g for tables in readings.masters.values() for g in tables.groups}):
            names = sorted(name for name, tables in readings.masters.items() if group in tables.groups)
            self.hosts[group] = names[zlib.crc32(group.encode()) % len(names)]
        for broker_name in readings.masters:
            master = readings.master(broker_name)
            hosted = [group for group, host in self.hosts.items() if host == broker_name]
            work.append(self.requests.map(master.addr, hosted, self._clients_job))
            work.append(self._events_job(master))
        return work

    async def _key_job(self, target: Target, kind: str, topic: str, group: str | None) -> None:
        if kind == "put":
            await self.stats.topic_put(target, topic)
        else:
            await self.stats.group_get(target, topic, group)

    async def _clients_job(self, group: str) -> None:
        master = self.readings.master(self.hosts[group])
        self.readings.clients[group] = await read_group_clients(
            self.admin, self.requests, group, master.addr, running_info_timeout=self.timeout
        )

    async def _events_job(self, master: Target) -> None:
        cursor = self.memory.key(master.broker_name, EVENT_QUEUE_ID)
        events, position = await read_events(
            self.admin, self.requests, self.cluster_id, master.broker_name, master.addr, self.memory.cursors.get(cursor)
        )
        self.readings.events += events
        if position is not None:
            self.memory.cursors[cursor] = position

    def _follow_ups(self) -> list:
        """Send-backs of groups that consumed or are behind, keys of subscriptions without offsets, and the queue
        ends broadcasting groups need."""
        readings = self.readings
        work = []
        sendbacks: dict[str, list] = {}
        for broker_name, tables in readings.masters.items():
            for (topic, group), queues in tables.queues.items():
                if keys.is_group_topic(topic):
                    continue
                behind = any(o.broker_offset > o.consumer_offset for o in queues.values())
                key = keys.group_key(topic, group)
                gets = [readings.value(t, keys.GROUP_GET_NUMS, key) for t in readings.members(broker_name)]
                if behind or any(w is None or w.sum for w in gets):
                    sendbacks.setdefault(broker_name, []).append(("sndbck", topic, group))
        extra: dict[str, list] = {}
        for group, clients in readings.clients.items():
            if clients.connection is None:
                continue
            for topic in clients.connection.subscription_table:
                for broker_name, tables in readings.masters.items():
                    if topic in tables.topics and (topic, group) not in tables.queues:
                        extra.setdefault(broker_name, []).append(("get", topic, group))
                        readings.subscribed(broker_name, topic, group)
                        if clients.broadcasting and topic not in tables.ends:
                            work.append(self._ends_job(broker_name, topic))
        for target in readings.targets:
            if not self._up(target):
                continue
            jobs = list(extra.get(target.broker_name, []))
            if target.is_master:
                jobs += sendbacks.get(target.broker_name, [])
            if jobs:
                work.append(self.requests.map(target.addr, jobs, lambda job, t=target: self._follow_up_job(t, *job)))
        return work

    async def _follow_up_job(self, target: Target, kind: str, topic: str, group: str) -> None:
        if kind == "get":
            await self._key_job(target, kind, topic, group)
            return
        window = await self.stats.send_backs(target, topic, group)
        if window is None or window.sum:
            self.dlq_refresh.add((target.broker_name, group))

    async def _ends_job(self, broker_name: str, topic: str) -> None:
        master = self.readings.master(broker_name)
        try:
            table = await self.requests.send(
                master.addr, lambda: self.admin.get_topic_stats_info(master.addr, topic), timeout=self.timeout
            )
        except FAILED as exc:
            logger.warning("queue ends of %s on %s: %s", topic, broker_name, exc)
            return
        for mq, offsets in table.offset_table.items():
            self.readings.extra_ends[mq.topic, mq.broker_name, mq.queue_id] = offsets.max_offset

    def _dead_letters(self) -> list:
        work = []
        for broker_name, tables in self.readings.masters.items():
            for topic in tables.topics:
                if topic.startswith(keys.DLQ_PREFIX):
                    work.append(self._dlq_job(broker_name, topic[len(keys.DLQ_PREFIX) :]))
        return work

    async def _dlq_job(self, broker_name: str, group: str) -> None:
        """The group's dead letters on this broker name: read again only if it sent messages back this minute (or
        was never read); otherwise the remembered total stands."""
        remembered = self.memory.dlq.get(self.memory.key(broker_name, group))
        if remembered is not None and (broker_name, group) not in self.dlq_refresh:
            self.readings.dlq_totals[broker_name, group] = remembered[0]
            return
        master = self.readings.master(broker_name)
        topic = keys.dlq_topic(group)
        try:
            table = await self.requests.send(
                master.addr, lambda: self.admin.get_topic_stats_info(master.addr, topic), timeout=self.timeout
            )
        except FAILED as exc:
            logger.warning("dead letters of %s on %s: %s", group, broker_name, exc)
            self.readings.dlq_totals[broker_name, group] = None
            return
        self.readings.dlq_totals[broker_name, group] = sum(o.max_offset for o in table.offset_table.values())
