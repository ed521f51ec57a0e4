"""Where a chart's points come from: the minute data for ranges up to a day, the rollups (``sparkjobs``) for longer
ranges, so a week is about a thousand points instead of ten thousand and charts keep working after the minute
data's retention. Callers do not choose: the readers of :mod:`stats.queries.traffic` ask :func:`resolution_for`.

A long range is cut into buckets of the rollup resolution (aligned on UTC, as the rollups are), one point per
bucket at its start. A bucket the rollup jobs have written (its cluster has a :class:`~stats.models.ClusterRollup`
row) is read from the rollups; every other bucket, the open tail since the last rolled-up hour, or an hour whose
job has not run yet, is aggregated here from the minute data exactly as the rollup transforms aggregate it
(:mod:`sparkjobs.transforms.rollups`: sums skip NULLs, ``minutes`` is the cluster's collected minutes of the
bucket), so a bucket reads the same from either source. A bucket without a collected minute is a gap.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from stats.models import RESOLUTION_LENGTH, ClusterMinute, ClusterRollup, Resolution

# Ranges up to this long are drawn from the minute data (a day is 1,440 points).
MINUTE_DATA_UP_TO = dt.timedelta(days=1)
# Longer ranges use the finest rollup that draws them in at most this many points (7 days of 10 minutes: 1,008).
MAX_POINTS = 1500
# Beyond this many separate runs of buckets to read from the minute data, read one range from the first of them.
MAX_TAIL_RANGES = 20
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def resolution_for(since: dt.datetime, until: dt.datetime) -> Resolution | None:
    """The rollup resolution a chart of this range reads, or None for the minute data."""
    span = until - since
    if span <= MINUTE_DATA_UP_TO:
        return None
    for resolution in (Resolution.TEN_MINUTES, Resolution.HOUR, Resolution.DAY):
        if span / RESOLUTION_LENGTH[resolution] <= MAX_POINTS:
            return resolution
    return Resolution.DAY


def bucket_start(moment: dt.datetime, resolution: Resolution) -> dt.datetime:
    """The start of the bucket ``moment`` falls in (buckets are aligned on the Unix epoch, i.e. on UTC)."""
    length = RESOLUTION_LENGTH[resolution]
    return EPOCH + ((moment - EPOCH) // length) * length


@dataclass(frozen=True)
class Coverage:
    """The buckets of one cluster's chart range: ``starts`` every bucket (from the one ``since`` falls in to the
    one ``until`` falls in), ``collected`` the cluster's collected minutes in each bucket (absent: none),
    ``rolled`` the buckets to read from the rollups, and ``minute_filter`` what selects the other buckets' minutes
    in a minute table (None: none to read)."""

    resolution: Resolution
    starts: list[dt.datetime]
    collected: dict[dt.datetime, int]
    rolled: frozenset[dt.datetime]
    minute_filter: Q | None

    def rollups(self, queryset: QuerySet) -> QuerySet:
        """A rollup table's rows of the rolled-up buckets."""
        return queryset.filter(resolution=self.resolution, start__in=sorted(self.rolled))

    def minutes(self, queryset: QuerySet) -> QuerySet:
        """A minute table's rows of the buckets not rolled up."""
        return queryset.filter(self.minute_filter) if self.minute_filter is not None else queryset.none()

    def tail(self, queryset: QuerySet, fields: Iterable[str], key: Iterable[str] = ()) -> dict[tuple, list[dict]]:
        """A minute table's rows (``fields``) of the buckets not rolled up, grouped by (``key`` columns...,
        bucket start)."""
        key = tuple(key)
        groups: dict[tuple, list[dict]] = {}
        for row in self.minutes(queryset).values("minute", *key, *fields):
            start = bucket_start(row["minute"], self.resolution)
            if start not in self.rolled:
                groups.setdefault((*(row[name] for name in key), start), []).append(row)
        return groups

    def points(self, rows: dict[dt.datetime, dict], value, *, absent: float | None = 0) -> list:
        """One point per bucket: None where nothing was collected, ``absent`` where the bucket has no row (zero
        for an entity with nothing to report; None for one that always has a row when collected), else
        ``value(row)``."""
        return [
            (start, None if not self.collected.get(start) else value(rows[start]) if start in rows else absent)
            for start in self.starts
        ]


def coverage(cluster_id: int, since: dt.datetime, until: dt.datetime, resolution: Resolution) -> Coverage:
    length = RESOLUTION_LENGTH[resolution]
    first, last = bucket_start(since, resolution), bucket_start(until, resolution)
    starts = [first + i * length for i in range(int((last - first) / length) + 1)]
    collected = dict(
        ClusterRollup.objects.filter(
            cluster_id=cluster_id, resolution=resolution, start__gte=first, start__lte=last
        ).values_list("start", "collected_minutes")
    )
    rolled = frozenset(collected)
    runs = _runs([start for start in starts if start not in rolled], length)
    if len(runs) > MAX_TAIL_RANGES:
        runs = [(runs[0][0], runs[-1][1])]
    minute_filter = None
    for begin, end in runs:
        one = Q(minute__gte=begin, minute__lt=end)
        minute_filter = one if minute_filter is None else minute_filter | one
    if minute_filter is not None:
        for minute in ClusterMinute.objects.filter(minute_filter, cluster_id=cluster_id).values_list(
            "minute", flat=True
        ):
            start = bucket_start(minute, resolution)
            if start not in rolled:
                collected[start] = collected.get(start, 0) + 1
    return Coverage(resolution, starts, collected, rolled, minute_filter)


def _runs(starts: list[dt.datetime], length: dt.timedelta) -> list[tuple[dt.datetime, dt.datetime]]:
    """Consecutive buckets joined: (start of the first, end of the last) per run."""
    runs: list[tuple[dt.datetime, dt.datetime]] = []
    for start in starts:
        if runs and runs[-1][1] == start:
            runs[-1] = (runs[-1][0], start + length)
        else:
            runs.append((start, start + length))
    return runs


def total(values: Iterable[float | None]) -> float | None:
    """A sum that skips NULLs, NULL when every value is (as SQL's and Spark's ``sum``)."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def peak(values: Iterable[float | None]) -> float | None:
    """A maximum that skips NULLs, NULL when every value is."""
    return max((value for value in values if value is not None), default=None)


def ratio(value: float | None, divisor: float | None) -> float | None:
    return None if value is None or not divisor else value / divisor
