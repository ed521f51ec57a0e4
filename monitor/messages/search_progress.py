"""How a long message search reports how far it got and learns that it should stop.

A search over a time range or a busy key can take minutes; the portal shows its progress like any other long job
and offers a cancel button. The search calls back with a :class:`Progress` and polls a cancel function between
two broker requests (never in the middle of one), so a cancel takes effect within one request's time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

# Progress is reported at most this often (seconds), and always when a broker or queue is finished: a caller that
# writes it to a database row must not write once per pull of 32 messages.
REPORT_INTERVAL = 0.25


@dataclass(frozen=True)
class Progress:
    done: float  # 0.0 .. 1.0
    found: int  # messages yielded so far
    note: str = ""  # what is being searched now, e.g. "broker-a queue 3"


ProgressFn = Callable[[Progress], None] | None
CancelFn = Callable[[], bool] | None


class SearchCancelled(Exception):
    """The caller's cancel function said stop; what was yielded before stays valid."""


class Tracker:
    """The search's side of progress and cancel: counts what was yielded and throttles the reports."""

    def __init__(self, progress: ProgressFn, cancelled: CancelFn):
        self._progress = progress
        self._cancelled = cancelled
        self._last_report = 0.0
        self.found = 0
        self.wants_progress = progress is not None

    def check(self) -> None:
        """Raise SearchCancelled if the caller asked to stop; called before each broker request."""
        if self._cancelled is not None and self._cancelled():
            raise SearchCancelled("message search cancelled")

    def report(self, done: float, note: str = "", *, force: bool = False) -> None:
        if self._progress is None:
            return
        now = time.monotonic()
        if force or now - self._last_report >= REPORT_INTERVAL:
            self._last_report = now
            self._progress(Progress(min(max(done, 0.0), 1.0), self.found, note))
