"""Consumption throttling: at most N messages a second through a consumer's listeners, N set in the portal and
changed while the consumer runs (:mod:`monitor.sdk.bootstrap` re-reads it every minute).

Each message waits for its slot before its listener runs, on the client's consume thread, as MQCloud's rate-limited
consumers do (the client then pulls no further while its cache is full): slots are 1/N s apart, shared by all the
consumer's threads, with no burst, so the rate holds over any second. A new rate takes effect for the next message;
stopping the limiter releases every waiting thread at once, so shutdown never waits for a slot.
"""

from __future__ import annotations

import threading
import time


class RateLimiter:
    def __init__(self, rate: float | None = None, clock=time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._rate: float | None = None
        self._next = 0.0  # the clock value of the next free slot
        self._stopped = threading.Event()
        self.waited_s = 0.0  # how long messages waited for their slots, in all
        self.set_rate(rate)

    @property
    def rate(self) -> float | None:
        return self._rate

    def set_rate(self, rate: float | None) -> None:
        """Messages per second (None or 0: no limit)."""
        with self._lock:
            self._rate = float(rate) if rate else None
            if self._rate is not None:  # a slot booked under a slower rate must not hold the next message back
                self._next = min(self._next, self._clock() + 1 / self._rate)

    def acquire(self) -> None:
        """Wait for the next slot (at once without a limit)."""
        if self._rate is None:
            return
        with self._lock:
            rate = self._rate
            if rate is None:
                return
            now = self._clock()
            slot = max(self._next, now)
            self._next = slot + 1 / rate
        wait = slot - now
        if wait > 0:
            self.waited_s += wait
            self._stopped.wait(wait)

    def stop(self) -> None:
        self._stopped.set()
