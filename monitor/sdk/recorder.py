"""Per-minute send statistics of one producer: per (topic, broker) a count, exceptions by class and a latency
histogram (:class:`stats.histogram.Histogram`), kept until the reporter takes the minute.

Recording takes one uncontended lock for a few hundred nanoseconds (``make bench ONLY=sdk`` prints
``sdk_record_ns``); the minute is read inside the lock, so a minute the reporter has taken never gets another
send: a clock that steps back records into the next open minute instead. Memory is fixed per (topic, broker)
and minute, and at most :data:`MAX_OPEN_MINUTES` minutes are held (if the reporter fell that far behind, the
oldest minute is dropped and counted in :attr:`Recorder.dropped_minutes`).

Message trace (monitor.sdk.tracing) counts its records per topic in the same minutes (:meth:`Recorder.count_trace`:
written, dropped, failed), so a minute's report of a topic says whether the client traced it and lost records.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from stats.histogram import Histogram

MAX_OPEN_MINUTES = 10


@dataclass
class Cell:
    """One (minute, topic, broker): every send counted, its cost in the histogram, failures by exception class."""

    histogram: Histogram = field(default_factory=Histogram)
    exceptions: dict[str, int] = field(default_factory=dict)

    def to_report(self, broker_name: str) -> dict:
        return {
            "broker_name": broker_name,
            "count": self.histogram.count,
            "exceptions": dict(self.exceptions),
            "histogram": self.histogram.to_dict(),
        }


@dataclass(frozen=True)
class MinuteStats:
    """What a producer recorded for one topic in one minute (``minute``: seconds since the epoch, whole minute)."""

    minute: int
    topic: str
    brokers: dict[str, Cell]
    trace: dict[str, int] | None = None  # trace records written, dropped, failed; None: not traced this minute


class Recorder:
    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._lock = threading.Lock()
        # epoch minute -> (topic, broker name) -> Cell
        self._minutes: dict[int, dict[tuple[str, str], Cell]] = {}
        # epoch minute -> topic -> trace record counts
        self._trace: dict[int, dict[str, dict[str, int]]] = {}
        self._floor = 0  # the first minute not taken yet
        self._minute = -1  # the minute sends are being counted in, and its cells
        self._cells: dict[tuple[str, str], Cell] = {}
        self.dropped_minutes = 0

    def record(self, topic: str, broker_name: str, cost_ms: float, exception: str | None = None) -> int:
        """Count one send; returns the minute (epoch seconds) it was counted in."""
        with self._lock:
            minute = int(self._clock() // 60)
            if minute != self._minute:
                cells = self._open(minute)
            else:
                cells = self._cells
            cell = cells.get((topic, broker_name))
            if cell is None:
                cell = cells[topic, broker_name] = Cell()
            cell.histogram.record(cost_ms)
            if exception is not None:
                cell.exceptions[exception] = cell.exceptions.get(exception, 0) + 1
            return self._minute * 60

    def count_trace(self, topic: str, field: str, n: int = 1) -> None:
        """Count ``n`` trace records of ``topic`` as ``field`` (written, dropped, failed) in the current minute."""
        with self._lock:
            minute = int(self._clock() // 60)
            if minute != self._minute:
                self._open(minute)
            counts = self._trace.setdefault(self._minute, {}).setdefault(
                topic, {"written": 0, "dropped": 0, "failed": 0}
            )
            counts[field] += n

    def _open(self, minute: int) -> dict[tuple[str, str], Cell]:
        """Make ``minute`` (or the first minute not taken yet, if the clock is behind it) the current one."""
        minute = max(minute, self._floor)
        cells = self._minutes.get(minute)
        if cells is None:
            cells = self._minutes[minute] = {}
            if len(self._minutes) > MAX_OPEN_MINUTES:
                oldest = min(self._minutes)
                del self._minutes[oldest]
                self._trace.pop(oldest, None)
                self.dropped_minutes += 1
        self._minute, self._cells = minute, cells
        return cells

    def take(self, *, everything: bool = False) -> list[MinuteStats]:
        """Remove and return the finished minutes (all minutes with ``everything``, when the producer stops)."""
        with self._lock:
            now = max(int(self._clock() // 60), self._floor)
            end = now + 1 if everything else now
            taken = sorted(minute for minute in self._minutes if minute < end)
            minutes = [(minute, self._minutes.pop(minute), self._trace.pop(minute, {})) for minute in taken]
            self._floor = max(self._floor, end)
            self._minute = -1
        result = []
        for minute, cells, trace in minutes:
            by_topic: dict[str, dict[str, Cell]] = {topic: {} for topic in trace}
            for (topic, broker_name), cell in cells.items():
                by_topic.setdefault(topic, {})[broker_name] = cell
            result.extend(
                MinuteStats(minute * 60, topic, brokers, trace.get(topic))
                for topic, brokers in sorted(by_topic.items())
            )
        return result
