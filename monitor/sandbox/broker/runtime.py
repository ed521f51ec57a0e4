"""What a 4.9.4 broker's StoreStatsService counts, for the live figures of GET_BROKER_RUNTIME_INFO.

The monitor's broker page reads putTps, getTotalTps, msgPutTotalTodayNow and the rest from that table, so the
sandbox keeps the same counters and samples them the same way: once a second into lists of 601 snapshots, from
which each rate is the change over the last 10, 60 and 600 samples (an empty string while the list is shorter,
hence the captured "9.79 1.63 " with a trailing space right after boot). A slave counts the records it replicates
as puts, as the real slave's dispatcher does.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import NamedTuple

from monitor.remoting import fastjson

_MAX_SAMPLES = 601  # MAX_RECORDS_OF_SAMPLING + 1
_WINDOWS = (10, 60, 600)
# StoreStatsService.PUT_MESSAGE_ENTIRE_TIME_MAX_DESC and the upper bound (ms) of each bucket.
_BUCKETS = (
    ("[<=0ms]", 0),
    ("[0~10ms]", 10),
    ("[10~50ms]", 50),
    ("[50~100ms]", 100),
    ("[100~200ms]", 200),
    ("[200~500ms]", 500),
    ("[500ms~1s]", 1000),
    ("[1~2s]", 2000),
    ("[2~3s]", 3000),
    ("[3~4s]", 4000),
    ("[4~5s]", 5000),
    ("[5~10s]", 10000),
    ("[10s~]", None),
)


class _Snapshot(NamedTuple):
    timestamp: int
    value: int


def _tps(before: _Snapshot, last: _Snapshot) -> float:
    """CallSnapshot.getTPS: (value change) * 1000 / (time change), in doubles."""
    elapsed = last.timestamp - before.timestamp
    return float(last.value - before.value) * 1000.0 / float(elapsed) if elapsed else 0.0


def java_double(value: float) -> str:
    """String.valueOf(double): fastjson writes doubles the same way."""
    return fastjson.dumps(value)


def _bucket(latency_ms: int) -> int:
    for index, (_, bound) in enumerate(_BUCKETS):
        if bound is None or latency_ms <= bound:
            return index
    return len(_BUCKETS) - 1


class StoreStats:
    """Counters and samples of one broker's store; every method is thread-safe (the pull and send paths run on
    the broker's loop, sampling on a timer, reads from admin requests)."""

    def __init__(self, clock_ms=lambda: time.time_ns() // 1_000_000):
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self.boot_timestamp = clock_ms()
        self.put_times = 0
        self.put_size = 0
        self.put_failed = 0
        self.put_time_max = 0
        self.get_time_max = 0
        self.get_found = 0
        self.get_miss = 0
        self.get_transferred = 0
        self._series = {name: collections.deque(maxlen=_MAX_SAMPLES) for name in ("put", "found", "miss", "moved")}
        self._minute_latencies: list[int] = [0] * len(_BUCKETS)
        self._last_latencies: list[int] = [0] * len(_BUCKETS)
        self._minute_started = self.boot_timestamp
        self.sample()

    def record_put(self, count: int, size: int, latency_ms: int) -> None:
        with self._lock:
            self.put_times += count
            self.put_size += size
            self.put_time_max = max(self.put_time_max, latency_ms)
            self._minute_latencies[_bucket(latency_ms)] += 1

    def record_put_failed(self) -> None:
        with self._lock:
            self.put_failed += 1

    def record_get(self, found: bool, messages: int, latency_ms: int) -> None:
        with self._lock:
            if found:
                self.get_found += 1
            else:
                self.get_miss += 1
            self.get_transferred += messages
            self.get_time_max = max(self.get_time_max, latency_ms)

    def sample(self) -> None:
        """StoreStatsService.sampling, run once a second; also rolls the put-latency distribution each minute."""
        now = self._clock_ms()
        with self._lock:
            for name, value in (
                ("put", self.put_times),
                ("found", self.get_found),
                ("miss", self.get_miss),
                ("moved", self.get_transferred),
            ):
                self._series[name].append(_Snapshot(now, value))
            if now - self._minute_started >= 60_000:
                self._last_latencies, self._minute_latencies = self._minute_latencies, [0] * len(_BUCKETS)
                self._minute_started = now

    def _rate(self, name: str, window: int) -> float | None:
        series = self._series[name]
        if len(series) <= window:
            return None
        return _tps(series[-(window + 1)], series[-1])

    def _rates(self, name: str) -> str:
        return " ".join("" if (rate := self._rate(name, window)) is None else java_double(rate) for window in _WINDOWS)

    def _total_rates(self) -> str:
        return " ".join(
            java_double((self._rate("found", window) or 0.0) + (self._rate("miss", window) or 0.0))
            for window in _WINDOWS
        )

    def _percentile(self, fraction: float) -> float:
        """findPutMessageEntireTimePX over the last full minute: interpolated within the bucket it falls in."""
        counts = self._last_latencies
        wanted = int(sum(counts) * fraction)
        passed = 0
        lower = 0
        for (_, bound), count in zip(_BUCKETS, counts, strict=True):
            upper = bound if bound is not None else lower
            if wanted <= passed + count:
                return lower + ((upper - lower) * (wanted - passed) / count if count else 0.0)
            passed += count
            lower = upper
        return 0.0

    def runtime_info(self) -> dict[str, str]:
        """StoreStatsService.getRuntimeInfo's entries, in its insertion order."""
        with self._lock:
            total = self.put_times or 1
            elapsed = self._clock_ms() - self.boot_timestamp
            days, rest = divmod(elapsed, 86_400_000)
            hours, rest = divmod(rest, 3_600_000)
            minutes, rest = divmod(rest, 60_000)
            distribution = "".join(
                f"{name}:{count} " for (name, _), count in zip(_BUCKETS, self._last_latencies, strict=True)
            )
            return {
                "bootTimestamp": str(self.boot_timestamp),
                "runtime": f"[ {days} days, {hours} hours, {minutes} minutes, {rest // 1000} seconds ]",
                "putMessageEntireTimeMax": str(self.put_time_max),
                "putMessageTimesTotal": str(total),
                "putMessageFailedTimes": str(self.put_failed),
                "putMessageSizeTotal": str(self.put_size),
                "putMessageDistributeTime": distribution,
                "putMessageAverageSize": java_double(self.put_size / total),
                "dispatchMaxBuffer": "0",
                "getMessageEntireTimeMax": str(self.get_time_max),
                "putTps": self._rates("put"),
                "getFoundTps": self._rates("found"),
                "getMissTps": self._rates("miss"),
                "getTotalTps": self._total_rates(),
                "getTransferedTps": self._rates("moved"),
                "putLatency99": f"{self._percentile(0.99):.2f}",
                "putLatency999": f"{self._percentile(0.999):.2f}",
            }
