"""Server stats of one host as series for charts: one point per five-minute slot of the range, None where nothing
was read. Ranges longer than six hours (:func:`stats.queries.source.resolution_for`) have one point per bucket of
the rollup resolution instead, each the average of the bucket's readings computed in SQL, and a failed slot is
shaded as its whole bucket (the first error of the bucket), so a week is 169 points per line."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Avg, F, FloatField, Min
from django.db.models.functions import Cast, NullIf

from stats.charts import Point
from stats.models import RESOLUTION_LENGTH, SERVER_SLOT, Resolution, ServerDiskSample, ServerSample, slot_start
from stats.queries.source import AS_CHARTS, Pick, bucket_starts, by_bucket, chosen
from stats.store.servers import SERVER_METRICS


@dataclass(frozen=True)
class ServerSeries:
    """``metrics``: every :data:`~stats.store.servers.SERVER_METRICS` column by name; ``disk_used_percent``: each
    file system seen in the range by mount point (used share of what is usable, as ``df`` computes it);
    ``errors``: (slot, error) of the slots whose latest attempt failed; ``step``: how long a point and an error's
    slot last."""

    metrics: dict[str, list[Point]]
    disk_used_percent: dict[str, list[Point]]
    errors: list[tuple[dt.datetime, str]]
    step: dt.timedelta = SERVER_SLOT


def slots(since: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
    """The starts of the slots from ``since`` to ``until`` (both included)."""
    first = slot_start(since)
    if first < since:
        first += SERVER_SLOT
    count = int((until - first) / SERVER_SLOT) + 1 if until >= first else 0
    return [first + i * SERVER_SLOT for i in range(count)]


def server_series(
    host: str, since: dt.datetime, until: dt.datetime, *, resolution: Resolution | Pick | None = AS_CHARTS
) -> ServerSeries:
    if resolution := chosen(since, until, resolution):
        return _bucketed(host, since, until, resolution)
    times = slots(since, until)
    samples = {
        row["minute"]: row
        for row in ServerSample.objects.filter(host=host, minute__gte=since, minute__lte=until).values(
            "minute", "error", *SERVER_METRICS
        )
    }
    used: dict[str, dict[dt.datetime, float | None]] = {}
    for disk in ServerDiskSample.objects.filter(host=host, minute__gte=since, minute__lte=until).order_by("mount"):
        usable = disk.used + disk.available
        used.setdefault(disk.mount, {})[disk.minute] = 100.0 * disk.used / usable if usable else None
    rows = [samples.get(moment) for moment in times]
    return ServerSeries(
        metrics={
            name: [(moment, row[name] if row else None) for moment, row in zip(times, rows, strict=True)]
            for name in SERVER_METRICS
        },
        disk_used_percent={mount: [(moment, values.get(moment)) for moment in times] for mount, values in used.items()},
        errors=[(moment, row["error"]) for moment, row in zip(times, rows, strict=True) if row and row["error"]],
    )


def _bucketed(host: str, since: dt.datetime, until: dt.datetime, resolution: Resolution) -> ServerSeries:
    starts = bucket_starts(since, until, resolution)
    samples = ServerSample.objects.filter(host=host, minute__gte=since, minute__lte=until)
    averages = by_bucket(samples, resolution, **{name: Avg(name) for name in SERVER_METRICS})
    used = by_bucket(
        ServerDiskSample.objects.filter(host=host, minute__gte=since, minute__lte=until),
        resolution,
        key=("mount",),
        used_percent=Avg(100.0 * Cast("used", FloatField()) / NullIf(F("used") + F("available"), 0)),
    )
    disks: dict[str, dict[dt.datetime, float | None]] = {}
    for (mount, start), row in sorted(used.items()):
        disks.setdefault(mount, {})[start] = row["used_percent"]
    failed = by_bucket(samples.exclude(error=""), resolution, first=Min("minute"))
    first_errors = dict(
        samples.filter(minute__in=[row["first"] for row in failed.values()]).values_list("minute", "error")
    )
    return ServerSeries(
        metrics={
            name: [(start, averages[(start,)][name] if (start,) in averages else None) for start in starts]
            for name in SERVER_METRICS
        },
        disk_used_percent={mount: [(start, values.get(start)) for start in starts] for mount, values in disks.items()},
        errors=[(start, first_errors[row["first"]]) for (start,), row in sorted(failed.items())],
        step=RESOLUTION_LENGTH[resolution],
    )
