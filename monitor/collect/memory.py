"""What the per-minute collector remembers from one cycle to the next, and the rule that lets it skip requests.

Asking every broker for every stats key of every topic and group each minute is what makes dashboards time out on
large clusters. Most keys of a large cluster are idle in any given minute, and an idle key can be *proved* idle
from figures the collector reads anyway, in one request per broker:

* a broker's cumulative counters (GET_BROKER_RUNTIME_INFO: messages stored, messages served to pulls);
* a topic's stored-message total on a broker, and a group's committed total and backlog on a topic
  (GET_BROKER_CONSUME_STATS: every group's queues on the broker, with their ends).

A stats key's minute window covers at most the last :data:`HORIZON` seconds. If a counter that every increment of
the key would also move has not changed since a reading at least that long ago (or is still 0: the broker never
counted anything), the window holds nothing, and the key reads zero without being asked. A group key needs its
group to have had no backlog as well (a consumer with messages waiting may pull without committing, e.g. when its
callbacks hang). Each remembered figure is kept with ``since``, the time of the first reading that showed its
current value. (One proof needs little memory: GET_BROKER_CONSUME_STATS also gives each group's pull rate over the
master's own minute window, GROUP_GET_NUMS's rate, so a rate of zero is a master's GROUP_GET_NUMS reading zero, except
for a key created since its broker last sampled: it is not trusted for a pair new since the last cycle or whose key
was missing.)

The memory also keeps the stats keys a broker said do not exist: a key that does not exist has counted nothing
since its broker started (a true zero), and it stays missing while a figure proves nothing happened since it was
found missing (any activity would have created it). Nothing else proves it: a missing key that no figure covers is
asked again every minute, or a new topic's first messages would be read as zeros. A key found missing and then
created answers an empty minute window until its broker's first 10-second sampling of it: that minute is a gap
(:meth:`was_missing`). The memory also keeps the read position in each OFFSET_MOVED_EVENT queue, the dead-letter
totals and where each topic and group lived (so a broker that is down can be shown as a gap for them, and a topic or
group new since the last cycle is known as such).

Everything is plain JSON (times are epoch seconds) stored in ``CollectionState.memory``; figures of brokers that
answered are replaced each cycle, so topics and groups deleted from the cluster are forgotten.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

# Longest a broker's minute window reaches back: its last sampling (every 10 s) and six before it, plus margin.
HORIZON = 75.0


class Memory:
    """The collector's memory for one cluster during one cycle at time ``now``.

    :meth:`observe` records a figure and tells since when it has had its value; :meth:`quiet` says whether a time
    is old enough to prove a stats window empty. Observations are collected into a new memory that :meth:`dump`
    returns; :meth:`carry_over` keeps an unreachable broker's old figures. Missing keys are remembered while
    they are not asked again (:meth:`keep_missing`), and forgotten with their topic or group."""

    def __init__(self, data: dict[str, Any] | None, now: float):
        data = data or {}
        self.now = now
        self._figures: dict[str, list] = data.get("figures", {})
        self._missing: dict[str, float] = data.get("missing", {})
        self.cursors: dict[str, int] = dict(data.get("cursors", {}))
        self.dlq: dict[str, int] = dict(data.get("dlq", {}))
        self.layout: dict[str, dict[str, list]] = dict(data.get("layout", {}))
        self._new_figures: dict[str, list] = {}
        self._new_missing: dict[str, float] = {}

    @staticmethod
    def key(*parts: Hashable) -> str:
        return "\t".join(str(part) for part in parts)

    def observe(self, key: str, value: Any) -> float:
        """Record ``value`` for ``key`` now; return since when it has had that value (now, if it changed or is
        new)."""
        old = self._figures.get(key)
        since = old[1] if old is not None and old[0] == value else self.now
        self._new_figures[key] = [value, since]
        return since

    def quiet(self, since: float) -> bool:
        """Whether nothing that changes a figure seen unchanged since ``since`` can be in a stats window now."""
        return since <= self.now - HORIZON

    def was_missing(self, key: str) -> bool:
        """Whether the stats key did not exist when last asked (or when its topic or group appeared)."""
        return key in self._missing

    def mark_missing(self, key: str) -> None:
        """The key does not exist now: the broker said so, or nothing has counted since its topic appeared."""
        self._new_missing[key] = self.now

    def keep_missing(self, key: str) -> None:
        """The key was not asked this cycle: whatever was known of its existence still stands."""
        if key in self._missing:
            self._new_missing[key] = self._missing[key]

    def skip_missing(self, key: str, broker_since: float | None, entity_since: float | None) -> bool:
        """Whether a stats key the broker said is missing still is, proved by figures: nothing that would have
        created it happened since (the broker's counter, or the topic's or pair's figures, unchanged since before it
        was marked). Without such a proof it must be asked: it may have been created a second later."""
        marked = self._missing.get(key)
        if marked is None:
            return False
        return any(since is not None and since <= marked for since in (broker_since, entity_since))

    def carry_over(self, prefix: str) -> None:
        """Keep the old figures and missing keys under ``prefix`` (a broker that did not answer this cycle)."""
        for key, figure in self._figures.items():
            if key.startswith(prefix):
                self._new_figures.setdefault(key, figure)
        for key, marked in self._missing.items():
            if key.startswith(prefix):
                self._new_missing.setdefault(key, marked)

    def dump(self) -> dict[str, Any]:
        return {
            "figures": self._new_figures,
            "missing": self._new_missing,
            "cursors": self.cursors,
            "dlq": self.dlq,
            "layout": self.layout,
        }
