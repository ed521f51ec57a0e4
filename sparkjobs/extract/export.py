"""Export closed hours of the minute tables into the lake, one partition per table and hour.

Only closed hours are exported (their last minute collected, with a margin), because an exported partition is
final: a job re-run finds it and goes on with the next one, so a run that died half-way resumes where it stopped.
``refresh`` exports again what is already there (after a late correction of minute data, or producer reports that
arrived after their hour was exported), except hours whose minute data retention has already deleted.

An hour whose partitions the lake's retention deleted (before the lake's recorded cutoff) is exported again only
while the database still holds its minute data; once both are gone the window cannot be computed again, and the
export refuses it (:class:`PastRetention`) rather than export it empty, which would replace the window's results
with nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db.models import QuerySet

from sparkjobs.extract.lake import Lake
from sparkjobs.extract.tables import TableSpec

HOUR = dt.timedelta(hours=1)
# The collection of a minute ends well within the next minute; server samples are taken at a slot's start.
CLOSE_GRACE = dt.timedelta(minutes=3)

Progress = Callable[[int, int, str], None]


class WindowNotClosed(ValueError):
    pass


class PastRetention(RuntimeError):
    """The window's minute data is gone from the lake and the database: its results are kept as they are."""


@dataclass(frozen=True)
class Exported:
    table: str
    hour: dt.datetime
    rows: int | None  # None: the partition was already in the lake


def hours(start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    if start.minute or start.second or start.microsecond or end.minute or end.second or end.microsecond:
        raise ValueError(f"an export window is whole hours, not {start.isoformat()} .. {end.isoformat()}")
    return [start + i * HOUR for i in range(int((end - start) / HOUR))]


def check_closed(end: dt.datetime, now: dt.datetime) -> None:
    if end > now - CLOSE_GRACE:
        raise WindowNotClosed(
            f"the window ending {end.isoformat()} is not closed yet (its minute data is final "
            f"{int(CLOSE_GRACE.total_seconds() // 60)} minutes after it ends)"
        )


def _hour_rows(spec: TableSpec, hour: dt.datetime) -> QuerySet:
    return spec.model.objects.filter(**{f"{spec.time_field}__gte": hour, f"{spec.time_field}__lt": hour + HOUR})


def export_partition(lake: Lake, spec: TableSpec, hour: dt.datetime, *, refresh: bool = False) -> Exported:
    """Export one table's hour, unless it is in the lake already. A refresh never replaces an exported hour with an
    empty one: the database holding nothing for it means retention has deleted it, not that it had no data."""
    relative = lake.partition(spec.name, hour)
    rows = _hour_rows(spec, hour)
    if lake.exists(relative) and (not refresh or not rows.exists()):
        return Exported(spec.name, hour, None)
    return Exported(spec.name, hour, lake.write(relative, spec.schema, spec.batches(rows)))


def check_retained(lake: Lake, tables: list[TableSpec], start: dt.datetime, end: dt.datetime) -> None:
    """Raise PastRetention if an hour of the window lost partitions to the lake's retention and the database no
    longer holds any of its minute data (then nothing could export it again)."""
    deleted_before = lake.deleted_before()
    if deleted_before is None:
        return
    for hour in hours(start, end):
        if hour >= deleted_before:
            break
        if all(lake.exists(lake.partition(spec.name, hour)) for spec in tables):
            continue
        if not any(_hour_rows(spec, hour).exists() for spec in tables):
            raise PastRetention(
                f"the minute data of {hour:%Y-%m-%d %H:00} is past retention: its lake partitions were deleted "
                "(LAKE_RETENTION_DAYS) and the database no longer holds it (MINUTE_RETENTION_DAYS), so its window "
                "cannot be computed again; its results are kept as they are"
            )


def export_window(
    lake: Lake,
    tables: Iterable[TableSpec],
    start: dt.datetime,
    end: dt.datetime,
    *,
    now: dt.datetime,
    refresh: bool = False,
    progress: Progress | None = None,
) -> list[Exported]:
    """Every (table, hour) partition of the window, in hour order; raises WindowNotClosed for an open window and
    PastRetention (before exporting anything) for one retention has deleted."""
    check_closed(end, now)
    tables = list(tables)
    check_retained(lake, tables, start, end)
    work = [(spec, hour) for hour in hours(start, end) for spec in tables]
    done: list[Exported] = []
    for spec, hour in work:
        if progress is not None:
            progress(len(done), len(work), f"extract {spec.name} {hour:%Y-%m-%d %H:00}")
        done.append(export_partition(lake, spec, hour, refresh=refresh))
    return done
