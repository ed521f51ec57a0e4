"""What a job is, and what it gets to run with."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from sparkjobs.extract.lake import Lake

# Spark jobs submitted at once by materialize().
PARALLEL_ACTIONS = 3

# progress(done, total, what): a stage reports its own steps; the context maps them onto the run's 0..1.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Outcome:
    rows_read: int
    rows_written: int


@dataclass(frozen=True)
class JobContext:
    spark: SparkSession
    lake: Lake
    start: dt.datetime
    end: dt.datetime
    now: dt.datetime
    refresh: bool
    report: Callable[[float, str], None]

    def stage(self, low: float, high: float) -> Progress:
        """A progress callback for a stage spanning ``low`` .. ``high`` of the run."""

        def progress(done: int, total: int, what: str) -> None:
            self.report(low + (high - low) * (done / total if total else 1.0), what)

        return progress


@dataclass(frozen=True)
class Job:
    name: str
    period: dt.timedelta
    run: Callable[[JobContext], Outcome]
    description: str

    def window_of(self, start: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
        """The window starting at ``start`` (which must be aligned on the job's period, in UTC)."""
        start = start.astimezone(dt.UTC)
        if start.timestamp() % self.period.total_seconds():
            raise ValueError(
                f"a {self.name} window starts on a whole {_period_name(self.period)}, not {start:%Y-%m-%d %H:%M}"
            )
        return start, start + self.period

    def last_closed(self, closed_until: dt.datetime) -> dt.datetime:
        """The start of the latest window ending at or before ``closed_until``."""
        seconds = self.period.total_seconds()
        end = dt.datetime.fromtimestamp(closed_until.timestamp() // seconds * seconds, tz=dt.UTC)
        return end - self.period


def _period_name(period: dt.timedelta) -> str:
    return "day" if period >= dt.timedelta(days=1) else "hour"


def materialize(frames: Iterable[tuple[str, DataFrame]], progress: Progress) -> list[pa.Table]:
    """Compute each (label, DataFrame) and collect it as an Arrow table, in the given order (results are one row per
    subject and window, small enough for the driver). A few are computed at once: each Spark job has a fixed cost
    on the driver (planning, scheduling) that overlaps another's work on the executors."""
    frames = list(frames)
    tables: list[pa.Table | None] = [None] * len(frames)
    progress(0, len(frames), "transform")
    with ThreadPoolExecutor(max_workers=PARALLEL_ACTIONS, thread_name_prefix="materialize") as pool:
        pending = {pool.submit(frame.toArrow): index for index, (_, frame) in enumerate(frames)}
        try:
            for done, future in enumerate(as_completed(pending), start=1):
                index = pending[future]
                tables[index] = future.result()
                progress(done, len(frames), f"transformed {frames[index][0]}")
        finally:
            for future in pending:
                future.cancel()
    return tables
