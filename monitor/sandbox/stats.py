"""Broker statistics as RocketMQ 4.9.4 keeps them, so VIEW_BROKER_STATS_DATA answers exactly as a real broker.

A real broker counts every put, pull and send-back in ``BrokerStatsManager``: one ``StatsItemSet`` per stats name,
one ``StatsItem`` per stats key (``topic``, ``topic@group``, ``topic@queueId``, ...), each a pair of running counters
(``value``, ``times``). Scheduled tasks copy the counters into three short lists of ``CallSnapshot``: every 10 s into
the minute list (7 kept, so about the last 60 s), every 10 min into the hour list (7 kept) and every hour into the
day list (25 kept). A window's figures are computed from the first and last snapshot of its list only, which is why
a key can exist and still answer zeros: the list is empty until its first sampling, and that first sampling adds a
made-up zero snapshot one period back, so afterwards the window reports everything since the key was created.

The numbers must come out bit for bit like Java's: ``tps = sum * 1000.0 / (last.timestamp - first.timestamp)`` and
``avgpt = sum * 1.0 / timesDiff`` in doubles (each operand converted to double first, not Python's exact int
division), zero when the list is empty, ``avgpt`` zero when no calls were counted. fastjson then writes them with
``Double.toString``, which ``BrokerStatsData.encode()`` already does.

Time is injected: every sampling takes ``now_ms``, and :meth:`BrokerStatsManager.tick` runs whichever samplings are
due on Java's fixed-rate schedule (first run at once, then every period from that first run), so tests drive time
by hand and :class:`StatsSampler` drives it from the wall clock on a thread.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from monitor.remoting.body import BrokerStatsData, BrokerStatsItem
from monitor.remoting.codes import ResponseCode

logger = logging.getLogger(__name__)

# Stats names (org.apache.rocketmq.common.stats.Stats, 4.9.4).
QUEUE_PUT_NUMS = "QUEUE_PUT_NUMS"
QUEUE_PUT_SIZE = "QUEUE_PUT_SIZE"
QUEUE_GET_NUMS = "QUEUE_GET_NUMS"
QUEUE_GET_SIZE = "QUEUE_GET_SIZE"
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
GROUP_GET_LATENCY = "GROUP_GET_LATENCY"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
GROUP_GET_FROM_DISK_NUMS = "GROUP_GET_FROM_DISK_NUMS"
GROUP_GET_FROM_DISK_SIZE = "GROUP_GET_FROM_DISK_SIZE"
BROKER_GET_FROM_DISK_NUMS = "BROKER_GET_FROM_DISK_NUMS"
BROKER_GET_FROM_DISK_SIZE = "BROKER_GET_FROM_DISK_SIZE"
COMMERCIAL_SEND_TIMES = "COMMERCIAL_SEND_TIMES"
COMMERCIAL_SNDBCK_TIMES = "COMMERCIAL_SNDBCK_TIMES"
COMMERCIAL_RCV_TIMES = "COMMERCIAL_RCV_TIMES"
COMMERCIAL_RCV_EPOLLS = "COMMERCIAL_RCV_EPOLLS"
COMMERCIAL_SEND_SIZE = "COMMERCIAL_SEND_SIZE"
COMMERCIAL_RCV_SIZE = "COMMERCIAL_RCV_SIZE"
COMMERCIAL_PERM_FAILURES = "COMMERCIAL_PERM_FAILURES"

_QUEUE_STATS = (QUEUE_PUT_NUMS, QUEUE_PUT_SIZE, QUEUE_GET_NUMS, QUEUE_GET_SIZE)
# Every set a 4.9.4 BrokerStatsManager puts in its stats table, in its constructor's order. The disk and
# commercial sets are never fed by the open-source 4.9.4 broker, so their keys never exist, but their names are
# known. The fall-behind "moment" stats (GROUP_GET_FALL_SIZE/TIME) live outside this table, so VIEW_BROKER_STATS_DATA
# answers "not exist" for them.
_ALWAYS_STATS = (
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    GROUP_GET_LATENCY,
    SNDBCK_PUT_NUMS,
    BROKER_PUT_NUMS,
    BROKER_GET_NUMS,
    GROUP_GET_FROM_DISK_NUMS,
    GROUP_GET_FROM_DISK_SIZE,
    BROKER_GET_FROM_DISK_NUMS,
    BROKER_GET_FROM_DISK_SIZE,
    COMMERCIAL_SEND_TIMES,
    COMMERCIAL_RCV_TIMES,
    COMMERCIAL_SEND_SIZE,
    COMMERCIAL_RCV_SIZE,
    COMMERCIAL_RCV_EPOLLS,
    COMMERCIAL_SNDBCK_TIMES,
    COMMERCIAL_PERM_FAILURES,
)

# Sampling periods and how many snapshots each list keeps (StatsItem.samplingInSeconds/InMinutes/InHour).
MINUTE_SAMPLE_PERIOD_MS = 10 * 1000
HOUR_SAMPLE_PERIOD_MS = 10 * 60 * 1000
DAY_SAMPLE_PERIOD_MS = 60 * 60 * 1000
_MINUTE_KEEP = 7
_HOUR_KEEP = 7
_DAY_KEEP = 25


class StatsNotFound(LookupError):
    """No stats item under this name and key; a broker answers SYSTEM_ERROR with this message as the remark."""

    response_code = ResponseCode.SYSTEM_ERROR

    def __init__(self, stats_name: str, stats_key: str):
        self.stats_name = stats_name
        self.stats_key = stats_key
        super().__init__(f"The stats <{stats_name}> <{stats_key}> not exist")


class CallSnapshot(NamedTuple):
    """The counters of one item at one sampling instant."""

    timestamp: int
    times: int
    value: int


class StatsSnapshot(NamedTuple):
    """One window's figures: ``sum`` of values, ``tps`` per second, ``avgpt`` value per call, ``times`` calls."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0
    times: int = 0

    def to_broker_stats_item(self) -> BrokerStatsItem:
        return BrokerStatsItem(sum=self.sum, tps=self.tps, avgpt=self.avgpt)


def build_stats_key(*parts: str | int) -> str:
    """Java's ``buildStatsKey`` overloads: the parts joined by ``@`` in the order given.

    The broker's orders are ``(topic, group)`` for GROUP_GET_* and SNDBCK_PUT_NUMS (topic FIRST), ``(topic, queueId)``
    for QUEUE_PUT_*, ``(topic, queueId, group)`` for QUEUE_GET_* and ``(queueId, topic, group)`` for
    GROUP_GET_LATENCY with queue stats on.
    """
    return "@".join(str(part) for part in parts)


def _java_divide(numerator: float, denominator: float) -> float:
    """IEEE double division as Java does it: dividing by zero gives an infinity or NaN (fastjson writes null)."""
    if denominator:
        return numerator / denominator
    if numerator == 0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator)


def _window(samples: list[CallSnapshot]) -> StatsSnapshot:
    if not samples:
        return StatsSnapshot()
    first, last = samples[0], samples[-1]
    total = last.value - first.value
    tps = _java_divide(float(total) * 1000.0, float(last.timestamp - first.timestamp))
    times = last.times - first.times
    avgpt = float(total) / float(times) if times > 0 else 0.0
    return StatsSnapshot(total, tps, avgpt, times)


class StatsItem:
    """Running ``value``/``times`` counters of one stats key and their minute, hour and day snapshot lists.

    One small lock guards everything: an increment is two additions under it (Java uses LongAdders; in CPython
    ``+=`` on an attribute is not atomic across threads), and a sampling or a window computation holds it for a
    handful of list operations, so it never sees a half-updated pair or list.
    """

    __slots__ = ("_day", "_hour", "_lock", "_minute", "_times", "_value", "stats_key", "stats_name")

    def __init__(self, stats_name: str, stats_key: str):
        self.stats_name = stats_name
        self.stats_key = stats_key
        self._lock = threading.Lock()
        self._value = 0
        self._times = 0
        self._minute: list[CallSnapshot] = []
        self._hour: list[CallSnapshot] = []
        self._day: list[CallSnapshot] = []

    @property
    def value(self) -> int:
        return self._value

    @property
    def times(self) -> int:
        return self._times

    def add(self, inc_value: int, inc_times: int) -> None:
        with self._lock:
            self._value += inc_value
            self._times += inc_times

    def _sample(self, samples: list[CallSnapshot], now_ms: int, period_ms: int, keep: int) -> None:
        with self._lock:
            if not samples:
                samples.append(CallSnapshot(now_ms - period_ms, 0, 0))
            samples.append(CallSnapshot(now_ms, self._times, self._value))
            if len(samples) > keep:
                del samples[0]

    def sample_minute(self, now_ms: int) -> None:
        """Java ``samplingInSeconds``: feeds the minute window, run every 10 s."""
        self._sample(self._minute, now_ms, MINUTE_SAMPLE_PERIOD_MS, _MINUTE_KEEP)

    def sample_hour(self, now_ms: int) -> None:
        """Java ``samplingInMinutes``: feeds the hour window, run every 10 min."""
        self._sample(self._hour, now_ms, HOUR_SAMPLE_PERIOD_MS, _HOUR_KEEP)

    def sample_day(self, now_ms: int) -> None:
        """Java ``samplingInHour``: feeds the day window, run every hour."""
        self._sample(self._day, now_ms, DAY_SAMPLE_PERIOD_MS, _DAY_KEEP)

    def get_stats_data_in_minute(self) -> StatsSnapshot:
        with self._lock:
            return _window(self._minute)

    def get_stats_data_in_hour(self) -> StatsSnapshot:
        with self._lock:
            return _window(self._hour)

    def get_stats_data_in_day(self) -> StatsSnapshot:
        with self._lock:
            return _window(self._day)


class StatsItemSet:
    """All items of one stats name, keyed by stats key, created on first increment.

    The table is a plain dict: ``get``/``setdefault`` with str keys and ``list(dict.values())`` are single atomic steps
    in CPython, so recording never takes a table lock and a sampling pass works on a copy that a concurrent new key
    cannot invalidate (it is simply sampled next time, as with Java's weakly consistent ConcurrentHashMap iterator).
    """

    def __init__(self, stats_name: str):
        self.stats_name = stats_name
        self._items: dict[str, StatsItem] = {}

    def get_and_create_stats_item(self, stats_key: str) -> StatsItem:
        item = self._items.get(stats_key)
        if item is None:
            item = self._items.setdefault(stats_key, StatsItem(self.stats_name, stats_key))
        return item

    def add_value(self, stats_key: str, inc_value: int, inc_times: int) -> None:
        self.get_and_create_stats_item(stats_key).add(inc_value, inc_times)

    def get_stats_item(self, stats_key: str) -> StatsItem | None:
        return self._items.get(stats_key)

    def get_stats_data_in_minute(self, stats_key: str) -> StatsSnapshot:
        item = self._items.get(stats_key)
        return item.get_stats_data_in_minute() if item is not None else StatsSnapshot()

    def del_value(self, stats_key: str) -> None:
        self._items.pop(stats_key, None)

    def _delete_where(self, doomed: Callable[[str], bool]) -> None:
        for key in [key for key in list(self._items) if doomed(key)]:
            self._items.pop(key, None)

    def del_value_by_prefix_key(self, stats_key: str, separator: str) -> None:
        self._delete_where(lambda key: key.startswith(stats_key + separator))

    def del_value_by_infix_key(self, stats_key: str, separator: str) -> None:
        self._delete_where(lambda key: separator + stats_key + separator in key)

    def del_value_by_suffix_key(self, stats_key: str, separator: str) -> None:
        self._delete_where(lambda key: key.endswith(separator + stats_key))

    def sample_minute(self, now_ms: int) -> None:
        for item in list(self._items.values()):
            item.sample_minute(now_ms)

    def sample_hour(self, now_ms: int) -> None:
        for item in list(self._items.values()):
            item.sample_hour(now_ms)

    def sample_day(self, now_ms: int) -> None:
        for item in list(self._items.values()):
            item.sample_day(now_ms)


class BrokerStatsManager:
    """The broker's stats table (store.stats.BrokerStatsManager, 4.9.4) with its increment methods and key formats.

    ``enable_queue_stat`` is the broker's ``enableDetailStat`` (default true): it adds the QUEUE_* sets and makes the
    GROUP_GET_LATENCY key ``queueId@topic@group`` instead of ``topic@group``. Increments are named after Java's and
    take the same arguments in the same order (note ``group`` before ``topic`` while the key puts the topic first).
    """

    def __init__(self, cluster_name: str, enable_queue_stat: bool = True):
        self.cluster_name = cluster_name
        self.enable_queue_stat = enable_queue_stat
        names = (_QUEUE_STATS if enable_queue_stat else ()) + _ALWAYS_STATS
        self._sets = {name: StatsItemSet(name) for name in names}
        self._schedule_lock = threading.Lock()
        self._anchor_ms: int | None = None
        self._due_ms = [0, 0, 0]

    # ---------------------------------------------------------------------------------------------------- recording

    def inc_queue_put_nums(self, topic: str, queue_id: int, num: int = 1, times: int = 1) -> None:
        if self.enable_queue_stat:
            self._sets[QUEUE_PUT_NUMS].add_value(build_stats_key(topic, queue_id), num, times)

    def inc_queue_put_size(self, topic: str, queue_id: int, size: int) -> None:
        if self.enable_queue_stat:
            self._sets[QUEUE_PUT_SIZE].add_value(build_stats_key(topic, queue_id), size, 1)

    def inc_queue_get_nums(self, group: str, topic: str, queue_id: int, inc_value: int) -> None:
        if self.enable_queue_stat:
            self._sets[QUEUE_GET_NUMS].add_value(build_stats_key(topic, queue_id, group), inc_value, 1)

    def inc_queue_get_size(self, group: str, topic: str, queue_id: int, inc_value: int) -> None:
        if self.enable_queue_stat:
            self._sets[QUEUE_GET_SIZE].add_value(build_stats_key(topic, queue_id, group), inc_value, 1)

    def inc_topic_put_nums(self, topic: str, num: int = 1, times: int = 1) -> None:
        """One put of ``num`` messages (a batch counts as one time, hence avgpt = messages per send)."""
        self._sets[TOPIC_PUT_NUMS].add_value(topic, num, times)

    def inc_topic_put_size(self, topic: str, size: int) -> None:
        """``size`` is the bytes written to the commit log (the stored record, not just the body)."""
        self._sets[TOPIC_PUT_SIZE].add_value(topic, size, 1)

    def inc_group_get_nums(self, group: str, topic: str, inc_value: int) -> None:
        """One successful pull returning ``inc_value`` messages (avgpt = messages per pull)."""
        self._sets[GROUP_GET_NUMS].add_value(build_stats_key(topic, group), inc_value, 1)

    def inc_group_get_size(self, group: str, topic: str, inc_value: int) -> None:
        self._sets[GROUP_GET_SIZE].add_value(build_stats_key(topic, group), inc_value, 1)

    def inc_group_get_latency(self, group: str, topic: str, queue_id: int, inc_value: int) -> None:
        """A pull's latency in ms (Java's RTStatsItem, which differs from StatsItem only in its log line)."""
        if self.enable_queue_stat:
            key = build_stats_key(queue_id, topic, group)
        else:
            key = build_stats_key(topic, group)
        self._sets[GROUP_GET_LATENCY].add_value(key, inc_value, 1)

    def inc_send_back_nums(self, group: str, topic: str) -> None:
        self._sets[SNDBCK_PUT_NUMS].add_value(build_stats_key(topic, group), 1, 1)

    def inc_broker_put_nums(self, inc_value: int = 1) -> None:
        """Broker-wide puts, keyed by the cluster name; only the value grows (times stays 0, so avgpt is 0)."""
        self._sets[BROKER_PUT_NUMS].get_and_create_stats_item(self.cluster_name).add(inc_value, 0)

    def inc_broker_get_nums(self, inc_value: int) -> None:
        self._sets[BROKER_GET_NUMS].get_and_create_stats_item(self.cluster_name).add(inc_value, 0)

    def on_topic_deleted(self, topic: str) -> None:
        """Forget a deleted topic's keys, as DELETE_TOPIC_IN_BROKER does."""
        self._sets[TOPIC_PUT_NUMS].del_value(topic)
        self._sets[TOPIC_PUT_SIZE].del_value(topic)
        if self.enable_queue_stat:
            for name in _QUEUE_STATS:
                self._sets[name].del_value_by_prefix_key(topic, "@")
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS):
            self._sets[name].del_value_by_prefix_key(topic, "@")
        self._sets[GROUP_GET_LATENCY].del_value_by_infix_key(topic, "@")

    def on_group_deleted(self, group: str) -> None:
        """Forget a deleted subscription group's keys, as DELETE_SUBSCRIPTIONGROUP does."""
        names = [GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, GROUP_GET_LATENCY]
        if self.enable_queue_stat:
            names += [QUEUE_GET_NUMS, QUEUE_GET_SIZE]
        for name in names:
            self._sets[name].del_value_by_suffix_key(group, "@")

    # ------------------------------------------------------------------------------------------------------ reading

    def get_stats_item(self, stats_name: str, stats_key: str) -> StatsItem | None:
        stats = self._sets.get(stats_name)
        return stats.get_stats_item(stats_key) if stats is not None else None

    def view_stats_data(self, stats_name: str, stats_key: str) -> BrokerStatsData:
        """The VIEW_BROKER_STATS_DATA body; raises :class:`StatsNotFound` for an unknown name or key."""
        item = self.get_stats_item(stats_name, stats_key)
        if item is None:
            raise StatsNotFound(stats_name, stats_key)
        return BrokerStatsData(
            stats_minute=item.get_stats_data_in_minute().to_broker_stats_item(),
            stats_hour=item.get_stats_data_in_hour().to_broker_stats_item(),
            stats_day=item.get_stats_data_in_day().to_broker_stats_item(),
        )

    def tps_group_get_nums(self, group: str, topic: str) -> float:
        """A group's pull TPS over the last minute: the ``consumeTps`` of GET_CONSUME_STATS."""
        return self._sets[GROUP_GET_NUMS].get_stats_data_in_minute(build_stats_key(topic, group)).tps

    # ----------------------------------------------------------------------------------------------------- sampling

    def sample_minute(self, now_ms: int) -> None:
        for stats in self._sets.values():
            stats.sample_minute(now_ms)

    def sample_hour(self, now_ms: int) -> None:
        for stats in self._sets.values():
            stats.sample_hour(now_ms)

    def sample_day(self, now_ms: int) -> None:
        for stats in self._sets.values():
            stats.sample_day(now_ms)

    def tick(self, now_ms: int) -> None:
        """Run the samplings due at ``now_ms`` on Java's fixed-rate schedule.

        The first tick anchors the schedule and runs all three samplings (Java schedules them with delay 0 when the
        sets are created); after that each runs every period counted from the anchor. Slots missed because ticks came
        late are folded into one run: Java would replay them back to back with nearly identical timestamps, which
        only degrades the windows.
        """
        with self._schedule_lock:
            if self._anchor_ms is None:
                self._anchor_ms = now_ms
                self._due_ms = [now_ms, now_ms, now_ms]
            tasks = (
                (MINUTE_SAMPLE_PERIOD_MS, self.sample_minute),
                (HOUR_SAMPLE_PERIOD_MS, self.sample_hour),
                (DAY_SAMPLE_PERIOD_MS, self.sample_day),
            )
            for index, (period_ms, sample) in enumerate(tasks):
                if now_ms >= self._due_ms[index]:
                    sample(now_ms)
                    slots_passed = (now_ms - self._anchor_ms) // period_ms + 1
                    self._due_ms[index] = self._anchor_ms + slots_passed * period_ms

    def next_tick_ms(self) -> int | None:
        """When the next sampling is due, or None before the first tick."""
        with self._schedule_lock:
            return None if self._anchor_ms is None else min(self._due_ms)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class StatsSampler:
    """Drives :meth:`BrokerStatsManager.tick` from the wall clock on a daemon thread, at the real cadence.

    A thread rather than an asyncio task so a sampling pass over many keys never stalls a server's event loop.
    ``stop()`` wakes the thread at once and joins it. A failing pass is logged and the next one still runs.
    """

    def __init__(self, manager: BrokerStatsManager, clock_ms: Callable[[], int] = _wall_clock_ms):
        self._manager = manager
        self._clock_ms = clock_ms
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="BrokerStatsThread", daemon=True)

    def start(self) -> StatsSampler:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def __enter__(self) -> StatsSampler:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._manager.tick(self._clock_ms())
            except Exception:
                logger.exception("broker stats sampling failed")
            next_ms = self._manager.next_tick_ms()
            delay_ms = MINUTE_SAMPLE_PERIOD_MS if next_ms is None else next_ms - self._clock_ms()
            self._stopping.wait(max(delay_ms, 0) / 1000)
