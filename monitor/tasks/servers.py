"""Thin tasks for server stats: take ids, call :mod:`monitor.collect.servers`; running one twice in a slot rewrites
the slot's samples with the newer reading and adds nothing."""

import datetime as dt

from celery import shared_task
from django.utils import timezone

from monitor.collect import servers as server_stats
from monitor.models import ServerAccess
from portal.models import Cluster
from stats.models import SERVER_SLOT, slot_start


@shared_task
def collect_server_stats(cluster_id: int, slot: str | None = None) -> dict[str, int] | None:
    """Read the server stats of one cluster's broker hosts into ``slot`` (ISO time; default: the current slot).
    None: the cluster or its server access is gone."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return None
    at = dt.datetime.fromisoformat(slot) if slot else timezone.now()
    run = server_stats.collect_server_stats(cluster, at)
    if run is None:
        return None
    return {"collected": len(run.collected), "errors": len(run.errors)}


@shared_task
def collect_all_server_stats() -> int:
    """The periodic entry point: one task per cluster with server access, so a slow cluster delays no other. Each
    carries the slot it is for, and one still queued when that slot is over is dropped (the next run replaces it)."""
    slot = slot_start(timezone.now())
    cluster_ids = list(ServerAccess.objects.values_list("cluster_id", flat=True))
    for cluster_id in cluster_ids:
        collect_server_stats.apply_async((cluster_id, slot.isoformat()), expires=slot + SERVER_SLOT)
    return len(cluster_ids)
