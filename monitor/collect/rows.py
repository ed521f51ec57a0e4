"""What one collection cycle read, and the minute's rows made from it.

The rows follow :mod:`stats.models.traffic`: an entity gets a row when it has something to report (traffic, a
backlog, an online client, dead letters) or when a figure of it could not be read (NULL, a gap); one of its brokers
being down makes its sums gaps, never partial sums. Every broker and the cluster get a row each minute.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from monitor.collect.consumers import GroupClients, blocked_rows, broadcast_progress, client_rows
from monitor.collect.memory import Memory
from monitor.remoting import body as b
from stats import keys
from stats.models import (
    BrokerMinute,
    ClientQueueLagMinute,
    ClusterMinute,
    ConsumeMinute,
    GroupMinute,
    OffsetMovedEvent,
    QueueLagMinute,
    TopicMinute,
)
from stats.store.traffic import MinuteSamples

MASTER_ID = 0


@dataclass(frozen=True)
class Window:
    """A stats key's last minute on one broker: the count (or bytes) and the broker's per-second rate."""

    sum: int
    tps: float


ZERO = Window(0, 0.0)


def total(windows: Iterable[Window | None]) -> Window | None:
    """The sum of windows, or None (a gap) if any is unknown."""
    count, tps = 0, 0.0
    for window in windows:
        if window is None:
            return None
        count += window.sum
        tps += window.tps
    return Window(count, tps)


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
    """What a master's two whole-table answers say: its topics and subscription groups; each group's queues,
    (topic, group) -> queue id -> offsets, and its pull rate on the master; each topic's queue ends."""

    topics: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    queues: dict[tuple[str, str], dict[int, b.OffsetWrapper]] = field(default_factory=dict)
    tps: dict[tuple[str, str], float | None] = field(default_factory=dict)
    ends: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass
class Readings:
    """Everything one cycle read. ``windows`` maps (broker label, stats name, key) to the key's minute (None:
    could not be read; a key not in it was proved zero without asking)."""

    cluster_id: int
    minute: dt.datetime
    now_ms: int
    memory: Memory
    targets: list[Target] = field(default_factory=list)
    down: set[str] = field(default_factory=set)
    masters: dict[str, MasterTables] = field(default_factory=dict)
    layouts: dict[str, dict[str, list]] = field(default_factory=dict)
    windows: dict[tuple[str, str, str], Window | None] = field(default_factory=dict)
    clients: dict[str, GroupClients] = field(default_factory=dict)
    events: list[OffsetMovedEvent] = field(default_factory=list)
    dlq_totals: dict[tuple[str, str], int | None] = field(default_factory=dict)
    extra_ends: dict[tuple[str, str, int], int] = field(default_factory=dict)
    requests: int = 0
    # Per broker name, the (topic, None) and (topic, group) entries of the last cycle's layout.
    known: dict[str, set[tuple[str, str | None]]] = field(default_factory=dict)

    def members(self, broker_name: str) -> list[Target]:
        """The broker name's master (first) and slaves."""
        return [t for t in self.targets if t.broker_name == broker_name]

    def master(self, broker_name: str) -> Target | None:
        return next((t for t in self.members(broker_name) if t.is_master), None)

    def layout_from_masters(self, is_system_topic: Callable[[str], bool]) -> None:
        """The user topics and (topic, group) pairs of each broker name: from its master now, else as last seen
        (so a master that is down shows its topics and groups as gaps). What was known before is kept in ``known``
        (pairs a group subscribes to without offsets there, added by :meth:`subscribed`, included)."""
        for broker_name, layout in self.memory.layout.items():
            self.known[broker_name] = {(topic, None) for topic in layout["topics"]} | {
                (topic, group) for topic, group in (*layout["pairs"], *layout.get("subscribed", []))
            }
        for broker_name in sorted({t.broker_name for t in self.targets}):
            tables = self.masters.get(broker_name)
            if tables is None:
                self.layouts[broker_name] = self.memory.layout.get(broker_name, {"topics": [], "pairs": []})
                continue
            layout = {
                "topics": sorted(t for t in tables.topics if not is_system_topic(t)),
                "pairs": sorted([topic, group] for topic, group in tables.queues),
            }
            self.layouts[broker_name] = self.memory.layout[broker_name] = layout

    def subscribed(self, broker_name: str, topic: str, group: str) -> None:
        """Remember that the group subscribes to the topic on this broker name without offsets there."""
        self.memory.layout[broker_name].setdefault("subscribed", []).append([topic, group])

    def is_new(self, broker_name: str, topic: str, group: str | None = None) -> bool:
        """Whether the topic, or the group's reading of it, appeared on this broker name since the last cycle; on a
        broker name the collector had never read, everything is new, except in its first cycle of the cluster (then
        nothing is known to be new)."""
        if not self.known:
            return False
        return (topic, group) not in self.known.get(broker_name, ())

    def value(self, target: Target | None, stat: str, key: str) -> Window | None:
        """A key's window; a key not asked on a broker that was read was proved zero."""
        if target is None or target.label in self.down:
            return None
        return self.windows.get((target.label, stat, key), ZERO if target.broker_name in self.masters else None)


def minute_samples(readings: Readings, *, blocked_ms: int) -> MinuteSamples:
    samples = MinuteSamples(
        cluster=ClusterMinute(cluster_id=readings.cluster_id, minute=readings.minute), events=readings.events
    )
    put_windows = _topic_rows(readings, samples)
    get_windows = _consume_rows(readings, samples)
    _group_rows(readings, samples, blocked_ms)
    _broker_rows(readings, samples, put_windows, get_windows)
    return samples


def _topic_rows(readings: Readings, samples: MinuteSamples) -> dict[str, list]:
    """Topic rows; returns each master's (count, size) windows, for its broker totals."""
    holders: dict[str, list[str]] = {}
    for broker_name, layout in readings.layouts.items():
        for topic in layout["topics"]:
            if not keys.is_group_topic(topic):
                holders.setdefault(topic, []).append(broker_name)
    per_broker: dict[str, list] = {}
    for topic, broker_names in sorted(holders.items()):
        counts, sizes = [], []
        for broker_name in broker_names:
            master = readings.master(broker_name)
            count = readings.value(master, keys.TOPIC_PUT_NUMS, topic)
            size = readings.value(master, keys.TOPIC_PUT_SIZE, topic)
            counts.append(count)
            sizes.append(size)
            if master is not None:
                per_broker.setdefault(master.label, []).append((count, size))
        count, size = total(counts), total(sizes)
        if count is None or size is None or count.sum or size.sum:
            samples.topics.append(
                TopicMinute(
                    cluster_id=readings.cluster_id,
                    topic=topic,
                    minute=readings.minute,
                    put_nums=count.sum if count else None,
                    put_size=size.sum if size else None,
                )
            )
    return per_broker


def _pairs(readings: Readings) -> dict[tuple[str, str], list[str]]:
    """Every (topic, group) the cycle knows of, with the broker names it lives on."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for broker_name, layout in readings.layouts.items():
        for topic, group in layout["pairs"]:
            pairs.setdefault((topic, group), []).append(broker_name)
    for label, stat, key in readings.windows:
        if stat == keys.GROUP_GET_NUMS:
            topic, _, group = key.rpartition("@")
            broker_name = label.rpartition(":")[0]
            names = pairs.setdefault((topic, group), [])
            if broker_name not in names:
                names.append(broker_name)
    return pairs


def _consume_rows(readings: Readings, samples: MinuteSamples) -> dict[str, list]:
    """Consumption, lag and per-queue lag rows; returns each broker's (count, size) get windows, for its totals."""
    per_broker: dict[str, list] = {}
    for (topic, group), broker_names in sorted(_pairs(readings).items()):
        key = keys.group_key(topic, group)
        gets, sizes, slave_gets, sendbacks = [], [], [], []
        for broker_name in broker_names:
            members = readings.members(broker_name)
            for target in members:
                count = readings.value(target, keys.GROUP_GET_NUMS, key)
                size = readings.value(target, keys.GROUP_GET_SIZE, key)
                gets.append(count)
                sizes.append(size)
                per_broker.setdefault(target.label, []).append((count, size))
                if not target.is_master:
                    slave_gets.append(count)
            if not any(t.is_master for t in members):
                gets.append(None)
            if not keys.is_group_topic(topic):
                sendbacks.append(readings.value(readings.master(broker_name), keys.SNDBCK_PUT_NUMS, key))
        get, size, slave, sendback = total(gets), total(sizes), total(slave_gets), total(sendbacks)
        lag, lag_seconds = _lag(readings, samples, topic, group, broker_names)
        if None in (get, size, sendback, lag) or get.sum or sendback.sum or lag:
            samples.consumes.append(
                ConsumeMinute(
                    cluster_id=readings.cluster_id,
                    group=group,
                    topic=topic,
                    minute=readings.minute,
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
    readings: Readings, samples: MinuteSamples, topic: str, group: str, broker_names: list[str]
) -> tuple[int | None, float | None]:
    """Messages and seconds behind, adding the lagging queues' rows; None when a master holding the pair was not
    read. Seconds: since the store time of the last message consumed, in the lagging queue furthest back."""
    clients = readings.clients.get(group)
    if clients is not None and clients.broadcasting:
        return _broadcast_lag(readings, samples, topic, group, clients)
    lag, oldest = 0, None
    for broker_name in broker_names:
        tables = readings.masters.get(broker_name)
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
                    cluster_id=readings.cluster_id,
                    group=group,
                    topic=topic,
                    broker_name=broker_name,
                    queue_id=queue_id,
                    minute=readings.minute,
                    broker_offset=offsets.broker_offset,
                    consumer_offset=offsets.consumer_offset,
                    lag=behind,
                    last_consumed_stored_at=stored_at,
                )
            )
    if not lag:
        return 0, 0.0
    return lag, None if oldest is None else max(0.0, (readings.now_ms - oldest) / 1000)


def _broadcast_lag(
    readings: Readings, samples: MinuteSamples, topic: str, group: str, clients: GroupClients
) -> tuple[int | None, float | None]:
    """A broadcasting group's lag is its furthest-behind client's, from the clients' own offsets (the brokers
    keep none); how long it waited is not known. Each client's own lagging queues are kept besides."""
    ends = dict(readings.extra_ends)
    for broker_name, tables in readings.masters.items():
        for queue_id, end in tables.ends.get(topic, {}).items():
            ends.setdefault((topic, broker_name, queue_id), end)
    progress = broadcast_progress(clients, topic, ends)
    if not progress:
        return None, None
    lag = 0
    at = {"cluster_id": readings.cluster_id, "group": group, "topic": topic, "minute": readings.minute}
    for (_, broker_name, queue_id), positions in sorted(progress.items()):
        for client_id, (end, position) in positions.items():
            if end > position:
                samples.client_queue_lags.append(
                    ClientQueueLagMinute(
                        **at,
                        broker_name=broker_name,
                        queue_id=queue_id,
                        client_id=client_id,
                        broker_offset=end,
                        consumer_offset=position,
                        lag=end - position,
                    )
                )
        client_id, (end, committed) = max(positions.items(), key=lambda item: item[1][0] - item[1][1])
        behind = end - committed
        if behind <= 0:
            continue
        lag += behind
        samples.queue_lags.append(
            QueueLagMinute(
                **at,
                broker_name=broker_name,
                queue_id=queue_id,
                broker_offset=end,
                consumer_offset=committed,
                lag=behind,
                client_id=client_id,
            )
        )
    return lag, None if lag else 0.0


def _dead_letters(readings: Readings) -> dict[str, tuple[int | None, int | None]]:
    """group -> (dead letters ever, new this minute), for groups with a dead-letter queue; both unknown while a
    master holding some of them is down, and the new ones unknown the first time a queue is seen. The memory keeps
    each total with the minute it was read for and the total before it, so a minute read again counts the same."""
    memory = readings.memory
    totals = dict(readings.dlq_totals)
    for key in memory.dlq:
        broker_name, group = key.split("\t")
        if broker_name not in readings.masters:
            totals.setdefault((broker_name, group), None)
    minute = readings.minute.timestamp()
    per_group: dict[str, list[tuple[int | None, int | None]]] = {}
    for (broker_name, group), dlq in totals.items():
        key = memory.key(broker_name, group)
        base = None
        if dlq is not None:
            remembered = memory.dlq.get(key)
            if remembered is not None:
                base = remembered[2] if remembered[1] == minute else remembered[0]
            memory.dlq[key] = [dlq, minute, base]
        per_group.setdefault(group, []).append((dlq, base))
    result = {}
    for group, parts in per_group.items():
        if any(dlq is None for dlq, _ in parts):
            result[group] = (None, None)
            continue
        dlq = sum(d for d, _ in parts)
        result[group] = (dlq, None if any(base is None for _, base in parts) else dlq - sum(b for _, b in parts))
    return result


def _group_rows(readings: Readings, samples: MinuteSamples, blocked_ms: int) -> None:
    lags: dict[str, dict[tuple[str, str, int], int]] = {}
    for row in samples.queue_lags:
        lags.setdefault(row.group, {})[row.topic, row.broker_name, row.queue_id] = row.lag
    dead = _dead_letters(readings)
    for group in sorted(set(readings.clients) | set(dead)):
        clients = readings.clients.get(group, GroupClients(group, online=False))
        group_lags = lags.get(group, {})
        blocked = blocked_rows(
            readings.cluster_id, readings.minute, clients, group_lags, now_ms=readings.now_ms, threshold_ms=blocked_ms
        )
        samples.blocked += blocked
        samples.clients += client_rows(readings.cluster_id, readings.minute, clients)
        dlq_total, dlq_nums = dead.get(group, (None, 0))
        if clients.online is False and dlq_nums == 0:
            continue
        connection = clients.connection
        answered = bool(clients.infos) and all(isinstance(i, b.ConsumerRunningInfo) for i in clients.infos.values())
        online_clients = len(connection.connection_set) if connection else (0 if clients.online is False else None)
        samples.groups.append(
            GroupMinute(
                cluster_id=readings.cluster_id,
                group=group,
                minute=readings.minute,
                clients=online_clients,
                message_model=connection.message_model.name if connection and connection.message_model else "",
                consume_type=connection.consume_type.name if connection and connection.consume_type else "",
                subscription_consistent=clients.consistent(),
                blocked_queues=len(blocked) if answered else None,
                dlq_nums=dlq_nums,
                dlq_total=dlq_total,
            )
        )


def _broker_rows(readings: Readings, samples: MinuteSamples, put_windows: dict, get_windows: dict) -> None:
    cluster = samples.cluster
    totals: dict[str, list] = {"put_nums": [], "put_size": [], "get_nums": [], "get_size": []}
    for target in readings.targets:
        up = target.label not in readings.down
        puts = put_windows.get(target.label, []) if target.is_master else None
        gets = get_windows.get(target.label, [])
        figures = {
            "put_nums": total(c for c, _ in puts) if puts is not None else None,
            "put_size": total(s for _, s in puts) if puts is not None else None,
            "get_nums": total(c for c, _ in gets),
            "get_size": total(s for _, s in gets),
        }
        if not up:
            figures = dict.fromkeys(figures)
        samples.brokers.append(
            BrokerMinute(
                cluster_id=readings.cluster_id,
                broker_name=target.broker_name,
                broker_id=target.broker_id,
                minute=readings.minute,
                up=up,
                **{name: (w.sum if w else None) for name, w in figures.items()},
            )
        )
        for name in totals:
            if name.startswith("get") or target.is_master:
                totals[name].append(figures[name])
    for name, windows in totals.items():
        window = total(windows)
        setattr(cluster, name, window.sum if window else None)
    cluster.brokers = len(readings.targets)
    cluster.brokers_down = len(readings.down)
    cluster.requests = readings.requests
