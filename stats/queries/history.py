"""Where a cluster's stored minutes are the demo's generated history (``ClusterMinute.demo_history``), for charts to
draw those points apart and rankings to say they were computed from it."""

from __future__ import annotations

import datetime as dt

from stats.models import ClusterMinute
from stats.queries.source import bucket_start, resolution_for


def demo_history_points(cluster_id: int, since: dt.datetime, until: dt.datetime) -> frozenset[dt.datetime]:
    """The points of a chart of ``since`` .. ``until`` that hold generated history: its minutes, or for a range
    drawn per rollup bucket (:func:`stats.queries.source.resolution_for`) the starts of the buckets holding any
    generated minute (such a bucket is labelled whole, though the demo's first measured minutes may share it)."""
    resolution = resolution_for(since, until)
    lower = since if resolution is None else bucket_start(since, resolution)
    generated = ClusterMinute.objects.filter(
        cluster_id=cluster_id, demo_history=True, minute__gte=lower, minute__lte=until
    ).values_list("minute", flat=True)
    if resolution is None:
        return frozenset(generated)
    return frozenset(bucket_start(minute, resolution) for minute in generated)


def has_demo_history(cluster_id: int, since: dt.datetime, until: dt.datetime) -> bool:
    """Whether any minute of ``since`` (included) .. ``until`` (excluded) is generated history."""
    return ClusterMinute.objects.filter(
        cluster_id=cluster_id, demo_history=True, minute__gte=since, minute__lt=until
    ).exists()
