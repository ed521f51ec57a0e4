"""Thin tasks for the per-minute collection and probes of clusters: take ids, call :mod:`monitor.collect`.

Running a task twice is harmless: a minute's rows are replaced, never duplicated, and a collection finds a cluster
already being collected and does nothing. The fan-out gives each task the end of its minute as expiry, so a
backlog of queued runs is dropped instead of collecting late minutes in a burst.
"""

import datetime as dt
import functools

from celery import current_app, shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from monitor.collect import probe, traffic
from portal.models import Cluster
from stats.store.traffic import delete_expired

# Rows deleted per statement, and statements per run of the retention task (every 15 minutes): up to 2,000,000 rows
# a run, more than a 10,000-topic cluster writes in that time, each statement short; a backlog is worked off over
# runs.
RETENTION_BATCH_SIZE = 5000
RETENTION_MAX_BATCHES = 400


# The portal's warning evaluation, queued by name after each collection cycle (monitor does not import portal's
# tasks): warnings follow the data within the minute it was collected in.
EVALUATE_WARNINGS_TASK = "portal.tasks.evaluate_warnings"
EVALUATION_EXPIRES_SECONDS = 60.0


@shared_task
def collect_cluster(cluster_id: int) -> dict | None:
    """Collect the current minute of one cluster (None: the cluster is gone), then queue its warning evaluation."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return None
    report = traffic.collect_cluster(cluster)
    if report.ran:
        transaction.on_commit(functools.partial(_queue_evaluation, cluster_id))
    return report.counts()


def _queue_evaluation(cluster_id: int) -> None:
    current_app.signature(EVALUATE_WARNINGS_TASK, args=(cluster_id,)).apply_async(expires=EVALUATION_EXPIRES_SECONDS)


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
def collect_all_clusters() -> int:
    """The periodic entry point: a probe and a collection task per cluster, so a slow cluster delays no other;
    each expires when its minute ends."""
    now = timezone.now()
    expires = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    cluster_ids = list(Cluster.objects.values_list("pk", flat=True))
    for cluster_id in cluster_ids:
        probe_cluster.apply_async((cluster_id,), expires=expires)
        collect_cluster.apply_async((cluster_id,), expires=expires)
    return len(cluster_ids)


@shared_task
def delete_expired_minutes() -> int:
    """Delete minute data older than MINUTE_RETENTION_DAYS, in bounded batches."""
    cutoff = timezone.now() - dt.timedelta(days=settings.MINUTE_RETENTION_DAYS)
    return delete_expired(cutoff, batch_size=RETENTION_BATCH_SIZE, max_batches=RETENTION_MAX_BATCHES)
