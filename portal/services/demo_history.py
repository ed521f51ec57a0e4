"""A week of generated minute history for the demo's topics and consumer groups, so its charts over a week, the Spark
rollups and the rankings have something to show from the first minutes of ``manage.py demo``.

The rows are real rows of the minute tables, written through :func:`stats.store.traffic.store_demo_history`, and
every generated minute is marked ``ClusterMinute.demo_history``: charts draw it as "demo history" and the rankings
say when they were computed from it. It only fills minutes nothing was stored for (a measured minute is never
overwritten nor added to), so writing it again on every start of the demo adds only the minutes missed since.

The shapes are plausible and deterministic (the same minute always gets the same figures): the demo traffic's own
daily curve (its rate swinging half of it either way, lowest at 03:00 and highest at 15:00 local time, as the
sandbox's traffic workers send), a trend over the week that ends at today's rate (so the live traffic carries on
from it; it gives the growth rankings something to rank), and some noise. Each consumer group has the behaviour
it plays in the demo traffic: keeping up, falling behind at the daily peak and catching up at night, failing a
share of its messages (sent back for a retry), or hanging for a while once a day.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from portal.models import Broker, Cluster
from stats.models import BrokerMinute, ClusterMinute, ConsumeMinute, TopicMinute
from stats.store.traffic import MinuteSamples, store_demo_history

MINUTE = dt.timedelta(minutes=1)
DAYS = 7
# The generated history stops this long before now: the minutes the demo is collecting are measured ones.
MEASURED_MARGIN = dt.timedelta(minutes=2)
# Minutes written per transaction: a batch stays well under a second, and memory stays small.
MINUTES_PER_BATCH = 720
# As the sandbox's traffic workers' daily curve (monitor/sandbox/traffic/worker.py).
AMPLITUDE = 0.5
PEAK_HOUR = 15.0
NOISE = 0.1  # up to 10% either way, minute by minute


class Behaviour(enum.Enum):
    """What a consumer group does in the demo traffic (monitor/sandbox/traffic/profiles.py's ``demo``)."""

    KEEPS_UP = "keeps up"
    FALLS_BEHIND = "falls behind at the peak"  # a slow callback: consumes what it can, catches up at night
    FAILS_SOME = "fails some"  # sends about one message in five back for a retry
    HANGS = "hangs once a day"  # its callback stops for an hour a day; the backlog is consumed afterwards


@dataclass(frozen=True)
class DemoTopic:
    """A demo topic: its producers' mean rate (messages a second), message size, and how much its traffic changed
    over the week (``weekly_growth`` 0.2: today's rate is 20% above the rate a week ago)."""

    rate: float
    body_bytes: int
    weekly_growth: float = 0.0


@dataclass(frozen=True)
class DemoGroup:
    topic: str
    behaviour: Behaviour


@dataclass(frozen=True)
class DemoTraffic:
    topics: Mapping[str, DemoTopic]
    groups: Mapping[str, DemoGroup]


def backfill(cluster: Cluster, traffic: DemoTraffic, now: dt.datetime, *, days: int = DAYS) -> int:
    """Write the generated history of ``cluster`` for the ``days`` before ``now`` (up to
    :data:`MEASURED_MARGIN` before it) into every minute nothing was stored for; returns the minutes written."""
    end = now.astimezone(dt.UTC).replace(second=0, microsecond=0) - MEASURED_MARGIN
    start = end - dt.timedelta(days=days)
    brokers = list(Broker.objects.filter(cluster=cluster, present=True).order_by("broker_name", "broker_id"))
    written = 0
    batch: list[MinuteSamples] = []
    for samples in _minutes(cluster.pk, traffic, brokers, start, end):
        batch.append(samples)
        if len(batch) == MINUTES_PER_BATCH:
            written += store_demo_history(batch)
            batch = []
    return written + store_demo_history(batch)


def _minutes(
    cluster_id: int, traffic: DemoTraffic, brokers: list[Broker], start: dt.datetime, end: dt.datetime
) -> Iterator[MinuteSamples]:
    masters = sum(broker.is_master for broker in brokers)
    week = (end - start).total_seconds()
    minute = start
    while minute < end:
        ago = (end - minute).total_seconds() / week  # 1 a week ago, 0 now
        curve = _daily_curve(minute)
        topics = [
            TopicMinute(cluster_id=cluster_id, topic=name, minute=minute, put_nums=put, put_size=put * topic.body_bytes)
            for name, topic in sorted(traffic.topics.items())
            if (put := _messages(topic, curve, ago, _noise(name, minute)))
        ]
        produced = {row.topic: row.put_nums for row in topics}
        consumes = [
            _consume(cluster_id, name, group, minute, produced.get(group.topic, 0), _size(traffic, group.topic))
            for name, group in sorted(traffic.groups.items())
        ]
        cluster = ClusterMinute(
            cluster_id=cluster_id,
            minute=minute,
            put_nums=sum(produced.values()),
            put_size=sum(row.put_size for row in topics),
            get_nums=sum(row.get_nums for row in consumes),
            get_size=sum(row.get_size for row in consumes),
            brokers=len(brokers),
            demo_history=True,
        )
        yield MinuteSamples(
            cluster=cluster,
            brokers=[_broker(cluster, broker, masters) for broker in brokers],
            topics=topics,
            consumes=[row for row in consumes if row.get_nums or row.lag],
        )
        minute += MINUTE


def _size(traffic: DemoTraffic, topic: str) -> int:
    return traffic.topics[topic].body_bytes if topic in traffic.topics else 0


def _daily_curve(minute: dt.datetime) -> float:
    """1 +- AMPLITUDE over the local day, as the traffic workers' ``rate_at`` (lowest at 03:00, highest at 15:00)."""
    local = time.localtime(minute.timestamp())
    day_fraction = (local.tm_hour * 60 + local.tm_min) / 1440
    return 1 + AMPLITUDE * math.sin(2 * math.pi * (day_fraction - (PEAK_HOUR - 6) / 24))


def _noise(name: str, minute: dt.datetime) -> float:
    """A deterministic value in [-1, 1) for this series and minute."""
    return zlib.crc32(f"{name}@{minute.timestamp():.0f}".encode()) / 2**31 - 1


def _messages(topic: DemoTopic, curve: float, ago: float, noise: float) -> int:
    trend = 1 / (1 + topic.weekly_growth * ago)
    return max(0, round(topic.rate * 60 * curve * trend * (1 + NOISE * noise)))


def _consume(cluster_id: int, name: str, group: DemoGroup, minute: dt.datetime, produced: int, size: int):
    """What the group consumed of the ``produced`` messages (of ``size`` bytes) and how far behind it is, by its
    behaviour; it consumes what it produced less what its backlog grew by since the minute before."""
    behind = _minutes_behind(group.behaviour, minute)
    got = max(0, round(produced * (1 - (behind - _minutes_behind(group.behaviour, minute - MINUTE)))))
    lag = round(produced * behind)
    return ConsumeMinute(
        cluster_id=cluster_id,
        group=name,
        topic=group.topic,
        minute=minute,
        get_nums=got,
        get_size=got * size,
        slave_get_nums=0,
        consume_tps=got / 60,
        sndbck_nums=round(got / 5) if group.behaviour is Behaviour.FAILS_SOME else 0,
        lag=lag,
        lag_seconds=round(behind * 60, 1) if lag else 0.0,
    )


def _minutes_behind(behaviour: Behaviour, minute: dt.datetime) -> float:
    """How many minutes of traffic the group is behind at ``minute`` (about a second when it keeps up)."""
    local = time.localtime(minute.timestamp())
    hour = local.tm_hour + local.tm_min / 60
    if behaviour is Behaviour.FALLS_BEHIND and 9 <= hour < 21:  # behind from 09:00, worst at 15:00, caught up at 21:00
        return 1 / 60 + 30 * math.sin(math.pi * (hour - 9) / 12)
    if behaviour is Behaviour.HANGS and 11 <= hour < 13:  # stopped from 11:00; the backlog goes from 12:00 to 13:00
        return 1 / 60 + (60 * (hour - 11) if hour < 12 else 60 * (13 - hour))
    return 1 / 60


def _broker(cluster: ClusterMinute, broker: Broker, masters: int) -> BrokerMinute:
    """Masters share the cluster's traffic evenly; slaves store nothing of their own (NULL put) and serve none."""

    def share(total: int) -> int:
        return total // masters if broker.is_master else 0

    return BrokerMinute(
        cluster_id=cluster.cluster_id,
        broker_name=broker.broker_name,
        broker_id=broker.broker_id,
        minute=cluster.minute,
        up=True,
        put_nums=share(cluster.put_nums) if broker.is_master else None,
        put_size=share(cluster.put_size) if broker.is_master else None,
        get_nums=share(cluster.get_nums),
        get_size=share(cluster.get_size),
    )
