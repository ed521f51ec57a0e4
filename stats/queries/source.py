"""Where a chart's points come from: the minute data for ranges up to six hours, the rollups (``sparkjobs``) for
longer ones, at the finest resolution that draws the range in at most :data:`MAX_POINTS` points (a day per 10
minutes, a week per hour), so a chart's size and cost are bounded whatever its range, and charts keep working after
the minute data's retention. Callers do not choose: the readers of :mod:`stats.queries` ask :func:`resolution_for`.

A long range is cut into buckets of the rollup resolution (aligned on UTC, as the rollups are), one point per
bucket at its start. A bucket the rollup jobs have written (its cluster has a :class:`~stats.models.ClusterRollup`
row) is read from the rollups; every other bucket, the open tail since the last rolled-up hour, or an hour whose
job has not run yet, is aggregated from the minute data exactly as the rollup transforms aggregate it
(:mod:`sparkjobs.transforms.rollups`: sums skip NULLs, ``minutes`` is the cluster's collected minutes of the
bucket), so a bucket reads the same from either source. That aggregation is one GROUP BY in the database
(:func:`by_bucket`), never a loop over the minute rows here: with no rollup job run yet, the whole range is such a
tail. A bucket without a collected minute is a gap.

The time-series API reads through the same readers and may name the resolution itself (its ``step``): each reader
takes ``resolution`` (:data:`AS_CHARTS`, the default, is :func:`resolution_for`'s choice; None the minute data), so
a series reads the same on a chart and from the API at the same resolution.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import ExtractMinute, Floor, TruncDay, TruncHour

from stats.models import RESOLUTION_LENGTH, ClusterMinute, ClusterRollup, Resolution

# Ranges up to this long are drawn from the minute data (six hours are 361 points).
MINUTE_DATA_UP_TO = dt.timedelta(hours=6)
# Longer ranges use the finest rollup that draws them in at most this many points: up to about three days per 10
# minutes (433 points), a week per hour (169). A plotly point costs about 30 bytes of HTML per line.
MAX_POINTS = 500
# Beyond this many separate runs of buckets to read from the minute data, read one range from the first of them.
MAX_TAIL_RANGES = 20
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class Pick(enum.Enum):
    AS_CHARTS = "as charts"


# A reader's default resolution: what a chart of its range reads at (:func:`resolution_for`).
AS_CHARTS = Pick.AS_CHARTS


def resolution_for(since: dt.datetime, until: dt.datetime) -> Resolution | None:
    """The rollup resolution a chart of this range reads, or None for the minute data."""
    span = until - since
    if span <= MINUTE_DATA_UP_TO:
        return None
    for resolution in (Resolution.TEN_MINUTES, Resolution.HOUR, Resolution.DAY):
        if span / RESOLUTION_LENGTH[resolution] + 1 <= MAX_POINTS:
            return resolution
    return Resolution.DAY


def chosen(since: dt.datetime, until: dt.datetime, resolution: Resolution | Pick | None) -> Resolution | None:
    """The resolution a reader reads at: ``resolution`` as asked (None: the minute data), or for
    :data:`AS_CHARTS` the charts' choice for the range."""
    return resolution_for(since, until) if resolution is AS_CHARTS else resolution


def bucket_starts(since: dt.datetime, until: dt.datetime, resolution: Resolution) -> list[dt.datetime]:
    """The start of every bucket from the one ``since`` falls in to the one ``until`` falls in."""
    length = RESOLUTION_LENGTH[resolution]
    first, last = bucket_start(since, resolution), bucket_start(until, resolution)
    return [first + i * length for i in range(int((last - first) / length) + 1)]


def _bucket_columns(resolution: Resolution, column: str) -> dict:
    """SQL expressions that together name the bucket a row's ``column`` falls in (UTC, as :func:`bucket_start`)."""
    if resolution == Resolution.DAY:
        return {"bucket_day": TruncDay(column, tzinfo=dt.UTC)}
    hour = {"bucket_hour": TruncHour(column, tzinfo=dt.UTC)}
    if resolution == Resolution.HOUR:
        return hour
    return {**hour, "bucket_tens": Floor(ExtractMinute(column, tzinfo=dt.UTC) / 10)}


def by_bucket(
    queryset: QuerySet, resolution: Resolution, *, key: Iterable[str] = (), column: str = "minute", **aggregates
) -> dict[tuple, dict]:
    """``aggregates`` (Django aggregate expressions) of ``queryset``'s rows per (``key`` columns..., bucket start),
    grouped in the database."""
    key = tuple(key)
    columns = _bucket_columns(resolution, column)
    rows = queryset.order_by().annotate(**columns).values(*key, *columns).annotate(**aggregates)
    grouped: dict[tuple, dict] = {}
    for row in rows:
        start = row.pop("bucket_day", None) or row.pop("bucket_hour")
        tens = row.pop("bucket_tens", None)
        if tens:
            start += int(tens) * RESOLUTION_LENGTH[Resolution.TEN_MINUTES]
        grouped[(*(row.pop(name) for name in key), start.astimezone(dt.UTC))] = row
    return grouped


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

    @property
    def length(self) -> dt.timedelta:
        return RESOLUTION_LENGTH[self.resolution]

    def rollups(self, queryset: QuerySet) -> QuerySet:
        """A rollup table's rows of the rolled-up buckets."""
        return queryset.filter(resolution=self.resolution, start__in=sorted(self.rolled))

    def minutes(self, queryset: QuerySet) -> QuerySet:
        """A minute table's rows of the buckets not rolled up."""
        return queryset.filter(self.minute_filter) if self.minute_filter is not None else queryset.none()

    def tail(self, queryset: QuerySet, key: Iterable[str] = (), **aggregates) -> dict[tuple, dict]:
        """``aggregates`` of a minute table's rows in the buckets not rolled up, per (``key`` columns..., bucket
        start), computed in the database (:func:`by_bucket`)."""
        if self.minute_filter is None:
            return {}
        grouped = by_bucket(self.minutes(queryset), self.resolution, key=key, **aggregates)
        return {group: row for group, row in grouped.items() if group[-1] not in self.rolled}

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
    starts = bucket_starts(since, until, resolution)
    first, last = starts[0], starts[-1]
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
    cover = Coverage(resolution, starts, collected, rolled, minute_filter)
    for (start,), row in cover.tail(ClusterMinute.objects.filter(cluster_id=cluster_id), minutes=Count("id")).items():
        collected[start] = row["minutes"]
    return cover


def _runs(starts: list[dt.datetime], length: dt.timedelta) -> list[tuple[dt.datetime, dt.datetime]]:
    """Consecutive buckets joined: (start of the first, end of the last) per run."""
    runs: list[tuple[dt.datetime, dt.datetime]] = []
    for start in starts:
        if runs and runs[-1][1] == start:
            runs[-1] = (runs[-1][0], start + length)
        else:
            runs.append((start, start + length))
    return runs


def ratio(value: float | None, divisor: float | None) -> float | None:
    return None if value is None or not divisor else value / divisor
