"""The per-minute collector's lease on a cluster (``CollectionState.started_at``), taken and given back with
conditional UPDATEs as the registry sync does with its own: a second collection of a cluster that is still being
collected finds the lease taken and does nothing."""

from __future__ import annotations

import datetime as dt

from django.db.models import Q
from django.utils import timezone

from monitor.models import CollectionState
from portal.models import Cluster

# Longer than any collection takes (each request has a deadline); a lease older than this belongs to a collector
# that died, and is taken over.
LEASE = dt.timedelta(minutes=5)


def claim(cluster: Cluster) -> tuple[dt.datetime, dict] | None:
    """Take the lease; returns its token (the claim time) and the collector's memory, or None if it is taken."""
    CollectionState.objects.get_or_create(cluster=cluster)
    now = timezone.now()
    free = Q(started_at__isnull=True) | Q(started_at__lt=now - LEASE)
    if not CollectionState.objects.filter(free, cluster=cluster).update(started_at=now):
        return None
    memory = CollectionState.objects.filter(cluster=cluster).values_list("memory", flat=True).get()
    return now, memory


def release(cluster: Cluster, token: dt.datetime, *, memory: dict | None, error: str = "") -> bool:
    """Give the lease back, saving the new memory (None: keep the old one, e.g. after a failed cycle). False if
    the lease had expired and was taken over meanwhile: then the newer collector's memory stands."""
    fields: dict = {"started_at": None, "finished_at": timezone.now(), "last_error": error}
    if memory is not None:
        fields["memory"] = memory
    return bool(CollectionState.objects.filter(cluster=cluster, started_at=token).update(**fields))
