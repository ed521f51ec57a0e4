"""Thin tasks for the per-minute collection and probes of clusters: take ids, call :mod:`monitor.collect`.

Running a task twice is harmless: a minute's rows are replaced, never duplicated, and a collection finds a cluster
already being collected and does nothing. The per-minute fan-out is the portal's (``portal/tasks.py``), which
chains each collection with the warning evaluation that judges it and gives each task the end of its minute as
expiry, so a backlog of queued runs is dropped instead of collecting late minutes in a burst.
"""

import datetime as dt

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from monitor.collect import probe, traffic
from portal.models import Cluster
from stats.store.traffic import delete_expired

# Rows deleted per statement, and statements per run of the retention task (every 15 minutes): up to 2,000,000 rows
# a run, more than a 10,000-topic cluster writes in that time, each statement short; a backlog is worked off over
# runs.
RETENTION_BATCH_SIZE = 5000
RETENTION_MAX_BATCHES = 400


@shared_task
def collect_cluster(cluster_id: int) -> dict | None:
    """Collect the current minute of one cluster (None: the cluster is gone); ``ran`` is 0 when another worker was
    already collecting it."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return None
    return traffic.collect_cluster(cluster).counts()


@shared_task
def probe_cluster(cluster_id: int) -> dict | None:
    """Probe one cluster's name servers and brokers (None: the cluster is gone)."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return None
    name_servers, brokers = probe.probe_cluster(cluster)
    return {
        "name_servers_down": sum(not row.ok for row in name_servers),
        "brokers_down": sum(not row.ok for row in brokers),
    }


@shared_task
def delete_expired_minutes() -> int:
    """Delete minute data older than MINUTE_RETENTION_DAYS, in bounded batches."""
    cutoff = timezone.now() - dt.timedelta(days=settings.MINUTE_RETENTION_DAYS)
    return delete_expired(cutoff, batch_size=RETENTION_BATCH_SIZE, max_batches=RETENTION_MAX_BATCHES)
