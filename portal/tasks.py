"""Celery tasks of the portal: thin wrappers that take ids and call a service; running one twice is harmless."""

from celery import shared_task

from portal.models import Cluster
from portal.services.sync import sync_cluster


@shared_task
def sync_registry(cluster_id: int) -> dict[str, int] | None:
    """Sync one cluster's registry with the cluster (a sync already running for it makes this one a no-op)."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:  # deleted since the task was queued
        return None
    return sync_cluster(cluster).counts()


@shared_task
def sync_all_registries() -> int:
    """The periodic entry point: one sync task per registered cluster, so a slow cluster delays no other."""
    cluster_ids = list(Cluster.objects.values_list("pk", flat=True))
    for cluster_id in cluster_ids:
        sync_registry.delay(cluster_id)
    return len(cluster_ids)
