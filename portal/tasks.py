"""Celery tasks of the portal: thin wrappers that take ids and call a service; running one twice is harmless."""

import datetime as dt

from celery import shared_task
from django.utils import timezone

from monitor.tasks.traffic import collect_cluster, probe_cluster
from portal.models import Cluster
from portal.models.warnings import WarningEvent
from portal.services.applications.messages import run_operation
from portal.services.messages.searches import run_search
from portal.services.sync import sync_cluster
from portal.services.warnings import rules
from portal.services.warnings.delivery import deliver
from portal.services.warnings.lifecycle import reconcile

# Transient delivery failures (a webhook timing out, a mail server down) are retried this many times, after
# DELIVERY_RETRY_SECONDS, doubling each time; deliveries already made are not repeated.
DELIVERY_RETRIES = 4
DELIVERY_RETRY_SECONDS = 60
# A collection's warning evaluation is dropped when it waited longer than a minute: the next cycle's replaces it.
EVALUATION_EXPIRES_SECONDS = 60.0


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
def collect_all_clusters() -> int:
    """The per-minute entry point: for every cluster, a probe and a collection chained with the warning evaluation
    that judges it (monitor collects, the portal judges), so warnings follow the data within the minute it was
    collected in and a slow cluster delays no other. The probe and the collection expire when their minute ends."""
    now = timezone.now()
    expires = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    cluster_ids = list(Cluster.objects.values_list("pk", flat=True))
    for cluster_id in cluster_ids:
        probe_cluster.apply_async((cluster_id,), expires=expires)
        collection = collect_cluster.si(cluster_id).set(expires=expires)
        evaluation = evaluate_collected_minute.s(cluster_id).set(expires=EVALUATION_EXPIRES_SECONDS)
        (collection | evaluation).apply_async()
    return len(cluster_ids)


@shared_task
def evaluate_collected_minute(collection: dict | None, cluster_id: int) -> dict[str, int] | None:
    """The second link of a collection chain: given the collection's report, evaluate the cluster's warnings when the
    collection ran (None when it did not: the cluster is gone, or another worker was collecting it and its own
    chain evaluates)."""
    if not collection or not collection.get("ran"):
        return None
    return evaluate_warnings(cluster_id)


@shared_task
def evaluate_warnings(cluster_id: int) -> dict[str, int] | None:
    """Evaluate every warning rule for one cluster (after its collection cycle) and record the transitions; each
    event's delivery is queued when its transaction commits. ``rule_errors`` counts the rules that raised for a
    subject, a kind or a family (each logged; the others were still judged)."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return None
    now = timezone.now()
    evaluation = rules.evaluate(cluster, now)
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


@shared_task
def run_message_search(search_id: int) -> dict | None:
    """Run one message search to its end (its failure is recorded on the search, never raised here)."""
    search = run_search(search_id)
    return None if search is None else {"state": search.state, "found": search.found}


@shared_task
def run_message_operation(application_id: int) -> dict | None:
    """Send what an approved message operation (resend, re-delivery) has not sent yet; safe to run again."""
    progress = run_operation(application_id)
    return None if progress is None else {"total": progress.total, "sent": progress.sent, "failed": progress.failed}
