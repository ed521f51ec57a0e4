"""Celery tasks of the portal: thin wrappers that take ids and call a service; running one twice is harmless."""

from celery import shared_task
from django.utils import timezone

from monitor import warnings as warning_rules
from portal.models import Cluster
from portal.models.warnings import WarningEvent
from portal.services.sync import sync_cluster
from portal.services.warnings.delivery import deliver
from portal.services.warnings.lifecycle import reconcile

# Transient delivery failures (a webhook timing out, a mail server down) are retried this many times, after
# DELIVERY_RETRY_SECONDS, doubling each time; deliveries already made are not repeated.
DELIVERY_RETRIES = 4
DELIVERY_RETRY_SECONDS = 60


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


@shared_task
def evaluate_warnings(cluster_id: int) -> dict[str, int] | None:
    """Evaluate every warning rule for one cluster (after its collection cycle) and record the transitions; each
    event's delivery is queued when its transaction commits. ``rule_errors`` counts the rules that raised for a
    subject, a kind or a family (each logged; the others were still judged)."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return None
    now = timezone.now()
    evaluation = warning_rules.evaluate(cluster, now)
    return {**reconcile(cluster, evaluation, now).counts(), "rule_errors": len(evaluation.failures)}


@shared_task(bind=True, max_retries=DELIVERY_RETRIES)
def deliver_warning_event(self, event_id: int) -> dict[str, int] | None:
    """Tell everyone who should hear of one warning event; retried while transient failures remain."""
    event = WarningEvent.objects.select_related("warning__cluster").filter(pk=event_id).first()
    if event is None:  # the warning was deleted since
        return None
    report = deliver(event)
    if report.retryable and self.request.retries < DELIVERY_RETRIES:
        raise self.retry(countdown=DELIVERY_RETRY_SECONDS * 2**self.request.retries)
    return report.counts()
