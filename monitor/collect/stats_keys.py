"""The stats keys of one collection cycle (VIEW_BROKER_STATS_DATA), each read from its broker unless proved idle.

A key whose broker counter and whose topic's or pair's figures have not moved for longer than the broker's minute
window is ZERO without asking, and a key proved missing stays missing until something could have created it
(:mod:`monitor.collect.memory`). A key that did not exist at the last look, or whose topic or group is new, is asked,
and its empty minute window is a gap: the broker has not sampled its first messages yet. A size is asked only where
its count moved. The windows land in the cycle's :class:`~monitor.collect.rows.Readings`.
"""

from __future__ import annotations

import logging
import math

from monitor.collect.memory import Memory
from monitor.collect.requests import FAILED, Requests
from monitor.collect.rows import ZERO, Readings, Target, Window
from monitor.remoting import body as b
from monitor.remoting.admin import AsyncMQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError
from stats import keys

logger = logging.getLogger(__name__)


def _window(data: b.BrokerStatsData) -> Window:
    tps = data.stats_minute.tps
    return Window(data.stats_minute.sum, tps if tps is not None and math.isfinite(tps) else 0.0)


def _earliest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


class KeyReader:
    """Reads one cycle's stats keys into ``readings.windows``. ``counters``: each broker's cumulative put and get
    counters, by label, as the cycle's first wave read them (the proof that a whole broker is idle)."""

    def __init__(
        self,
        readings: Readings,
        memory: Memory,
        requests: Requests,
        admin: AsyncMQAdmin,
        *,
        timeout: float,
        counters: dict[str, dict[str, int | None]],
    ):
        self.readings = readings
        self.memory = memory
        self.requests = requests
        self.admin = admin
        self.timeout = timeout
        self.counters = counters

    # --- the keys a cycle reads --------------------------------------------------------------------------------

    async def topic_put(self, target: Target, topic: str) -> None:
        """TOPIC_PUT_NUMS and TOPIC_PUT_SIZE of a topic on a master."""
        await self._count_and_size(
            target,
            keys.TOPIC_PUT_NUMS,
            keys.TOPIC_PUT_SIZE,
            keys.topic_key(topic),
            self._counter_since(target, "put"),
            self._topic_since(target.broker_name, topic),
            new=self._is_new(target, topic),
        )

    async def group_get(self, target: Target, topic: str, group: str) -> None:
        """GROUP_GET_NUMS and GROUP_GET_SIZE of a topic@group on a master or a slave."""
        name = target.broker_name
        key = keys.group_key(topic, group)
        tables = self.readings.masters.get(name)
        new = self._is_new(target, topic, group)
        if (
            target.is_master
            and tables is not None
            and tables.tps.get((topic, group)) == 0.0
            and not new
            and not self.memory.was_missing(self._missing_key(target, keys.GROUP_GET_NUMS, key))
        ):
            # The master's own pull rate for the pair over its minute window, from the bulk answer: zero pulled
            # (a key created since the broker last sampled also reads 0: hence not for a new or missing key).
            self.readings.windows[target.label, keys.GROUP_GET_NUMS, key] = ZERO
            self.readings.windows[target.label, keys.GROUP_GET_SIZE, key] = ZERO
            return
        await self._count_and_size(
            target,
            keys.GROUP_GET_NUMS,
            keys.GROUP_GET_SIZE,
            key,
            self._counter_since(target, "get"),
            self._pair_since(name, topic, group),
            new=new,
        )

    async def send_backs(self, target: Target, topic: str, group: str) -> Window | None:
        """SNDBCK_PUT_NUMS of a topic@group on a master: the messages it sent back for retry this minute."""
        key = keys.group_key(topic, group)
        window = await self._stat(
            target,
            keys.SNDBCK_PUT_NUMS,
            key,
            self._counter_since(target, "put"),
            self._pair_since(target.broker_name, topic, group),
            new=self._is_new(target, topic, group),
        )
        self.readings.windows[target.label, keys.SNDBCK_PUT_NUMS, key] = window
        return window

    # --- proving keys idle -------------------------------------------------------------------------------------

    def _counter_since(self, target: Target, direction: str) -> float | None:
        """Since when the broker's put or get counter is unchanged (0: it never counted anything)."""
        counters = self.counters.get(target.label)
        if counters is None or counters[direction] is None:
            return None
        since = self.memory.observe(self.memory.key("b", target.label, direction), counters[direction])
        return 0.0 if counters[direction] == 0 else since

    def _topic_since(self, broker_name: str, topic: str) -> float | None:
        """Since when the topic's queue ends on this broker name are unchanged (known for topics a group reads)."""
        ends = self.readings.masters[broker_name].ends.get(topic)
        if ends is None:
            return None
        return self.memory.observe(self.memory.key("t", broker_name, topic), sum(ends.values()))

    def _pair_since(self, broker_name: str, topic: str, group: str) -> float | None:
        """Since when the group's committed offsets and the queue ends are unchanged, if it has no backlog."""
        tables = self.readings.masters.get(broker_name)
        queues = tables.queues.get((topic, group)) if tables is not None else None
        if queues is None:
            return None
        consumed = sum(o.consumer_offset for o in queues.values())
        stored = sum(o.broker_offset for o in queues.values())
        since = self.memory.observe(self.memory.key("p", broker_name, topic, group), [consumed, stored])
        return since if consumed >= stored else None

    def _missing_key(self, target: Target, stat: str, key: str) -> str:
        return self.memory.key("m", target.label, stat, key)

    def _is_new(self, target: Target, topic: str, group: str | None = None) -> bool:
        return self.readings.is_new(target.broker_name, topic, group)

    # --- reading a key -----------------------------------------------------------------------------------------

    async def _stat(
        self,
        target: Target,
        stat: str,
        key: str,
        broker_since: float | None,
        entity_since: float | None,
        *,
        new: bool = False,
    ) -> Window | None:
        """One stats key's minute on one broker, or ZERO without asking when proved idle (``broker_since`` and
        ``entity_since``: since when the broker's counter and the topic's or pair's figures show nothing moved)
        or proved still missing. ``new``: its topic or pair appeared since the last cycle (proved idle, nothing
        has created its key yet)."""
        missing = self._missing_key(target, stat, key)
        quiet_since = _earliest(broker_since, entity_since)
        if quiet_since is not None and self.memory.quiet(quiet_since):
            if new:
                self.memory.mark_missing(missing)
            else:
                self.memory.keep_missing(missing)
            return ZERO
        if self.memory.skip_missing(missing, broker_since, entity_since):
            self.memory.keep_missing(missing)
            return ZERO
        return await self._ask(target, stat, key, missing, new=new)

    async def _ask(self, target: Target, stat: str, key: str, missing: str, *, new: bool = False) -> Window | None:
        """The key's minute as its broker answers it: ZERO if the key does not exist (nothing counted since the
        broker started); None if it cannot be read, or if it was created since the last look (``new``, or missing
        then) and its window is still empty: its first messages are not in it until the broker samples it."""
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
        except FAILED:
            return None
        window = _window(data)
        if window.sum == 0 and (new or self.memory.was_missing(missing)):
            return None
        return window

    async def _count_and_size(
        self,
        target: Target,
        nums: str,
        size: str,
        key: str,
        broker_since: float | None,
        entity_since: float | None,
        *,
        new: bool,
    ) -> None:
        """A count and, only where the count moved, its size."""
        windows = self.readings.windows
        count = await self._stat(target, nums, key, broker_since, entity_since, new=new)
        windows[target.label, nums, key] = count
        if count is None:
            windows[target.label, size, key] = None
        elif count.sum == 0:
            windows[target.label, size, key] = ZERO
        else:
            windows[target.label, size, key] = await self._ask(target, size, key, self._missing_key(target, size, key))
