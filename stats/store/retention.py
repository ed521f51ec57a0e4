"""Deleting rows past retention in bounded batches: the one helper every retention task uses (minute data in
:mod:`stats.store.traffic`, the Spark pipeline's outputs in :mod:`sparkjobs.retention`)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet


def delete_in_batches(querysets: Iterable[QuerySet], *, batch_size: int, max_batches: int) -> int:
    """Delete the rows each queryset selects, in turn, ``batch_size`` rows per statement and at most
    ``max_batches`` statements in all (a long backlog is worked off over several runs without holding a long
    lock). Returns the number of rows deleted; fewer than ``batch_size * max_batches`` means none is left."""
    deleted = 0
    batches = 0
    for queryset in querysets:
        while batches < max_batches:
            ids = list(queryset.values_list("pk", flat=True)[:batch_size])
            if not ids:
                break
            batches += 1
            deleted += queryset.model.objects.filter(pk__in=ids).delete()[0]
            if len(ids) < batch_size:
                break
    return deleted
