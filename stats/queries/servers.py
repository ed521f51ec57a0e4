"""Server stats of one host as series for charts: one point per five-minute slot of the range, None where nothing
was read."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from stats.charts import Point
from stats.models import SERVER_SLOT, ServerDiskSample, ServerSample, slot_start
from stats.store.servers import SERVER_METRICS


@dataclass(frozen=True)
class ServerSeries:
    """``metrics``: every :data:`~stats.store.servers.SERVER_METRICS` column by name; ``disk_used_percent``: each
    file system seen in the range by mount point (used share of what is usable, as ``df`` computes it);
    ``errors``: (slot, error) of the slots whose latest attempt failed."""

    metrics: dict[str, list[Point]]
    disk_used_percent: dict[str, list[Point]]
    errors: list[tuple[dt.datetime, str]]


def slots(since: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
    """The starts of the slots from ``since`` to ``until`` (both included)."""
    first = slot_start(since)
    if first < since:
        first += SERVER_SLOT
    count = int((until - first) / SERVER_SLOT) + 1 if until >= first else 0
    return [first + i * SERVER_SLOT for i in range(count)]


def server_series(host: str, since: dt.datetime, until: dt.datetime) -> ServerSeries:
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
