"""The brownfield sync: make the registry agree with what a cluster really has.

Clusters predate the portal and admins still use mqadmin, so topics and subscription groups appear on a cluster
without an application. The sync imports those as unowned entries (a portal admin adopts them by giving them a
team) and flags registry entries that vanished from the cluster as ``missing`` instead of deleting them, so
ownership and history survive until someone decides; an entry that comes back is restored.

What counts as "on the cluster" is what the masters' own tables say (GET_ALL_TOPIC_CONFIG and
GET_ALL_SUBSCRIPTIONGROUP_CONFIG of every master), minus what RocketMQ creates for itself. Absence is only judged
when every master answered: a broker that cannot be read says nothing about what it holds, and flagging a whole
cluster as missing because one broker was down would be worse than flagging nothing. Producer groups exist only
in clients, never on brokers, so the sync never touches them.

A consumer group's subscriptions live in its clients too. For an imported group with nothing registered, the sync
registers what its clients report in the latest collected minute (``portal.services.subscriptions.importable``:
TAG subscriptions to registered topics, when every online client answered and they subscribe alike); it never
changes a registered subscription: a difference is shown on the group's page instead.

One cluster is synced by one process at a time: a sync claims the cluster's lease (``Cluster.sync_started_at``)
with a conditional UPDATE and gives it back when done; a second sync finds it taken and does nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from portal.models import Broker, Cluster, ConsumerGroup, Origin, RegistryState, Subscription, Topic
from portal.models.validation import is_system_group, is_system_topic
from portal.services import audit, cluster_ops, subscriptions
from stats.queries.clients import latest_clients

logger = logging.getLogger(__name__)

# Longer than any sync takes; a lease older than this belongs to a sync whose process died, and is taken over.
SYNC_LEASE = timedelta(minutes=15)
# Rows per bulk statement: well under SQLite's bound-parameter limit, few round trips for 10,000 entries.
BATCH_SIZE = 500
# Topics a broker creates at boot besides the fixed system names (TopicConfigManager): one named like its cluster,
# one like its broker name, and the cluster's request/reply topic.
REPLY_TOPIC_SUFFIX = "_REPLY_TOPIC"


@dataclass
class SyncReport:
    """What one sync did. ``ran`` is False when another sync of the cluster held the lease (nothing was done);
    ``errors`` lists what could not be read (then nothing was flagged missing)."""

    cluster: str
    ran: bool = True
    brokers: int = 0
    imported_topics: list[str] = field(default_factory=list)
    imported_groups: list[str] = field(default_factory=list)
    missing_topics: list[str] = field(default_factory=list)
    missing_groups: list[str] = field(default_factory=list)
    restored_topics: list[str] = field(default_factory=list)
    restored_groups: list[str] = field(default_factory=list)
    # Imported groups whose subscriptions were registered from what their clients report.
    subscribed_groups: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every master answered, so the registry now matches the cluster in both directions."""
        return self.ran and not self.errors

    def counts(self) -> dict[str, int]:
        """Sizes of each list, for logs and task results (the lists may hold thousands of names)."""
        return {
            "brokers": self.brokers,
            "imported_topics": len(self.imported_topics),
            "imported_groups": len(self.imported_groups),
            "missing_topics": len(self.missing_topics),
            "missing_groups": len(self.missing_groups),
            "restored_topics": len(self.restored_topics),
            "restored_groups": len(self.restored_groups),
            "subscribed_groups": len(self.subscribed_groups),
            "errors": len(self.errors),
        }

    def summary(self) -> str:
        """What the sync did, in one sentence for the user who asked for it (in the active language)."""
        return _(
            "Sync of %(name)s: %(brokers)d brokers; imported %(imported_topics)d topics and %(imported_groups)d "
            "consumer groups; flagged %(missing_topics)d topics and %(missing_groups)d consumer groups missing; "
            "restored %(restored_topics)d topics and %(restored_groups)d consumer groups."
        ) % {"name": self.cluster, **self.counts()}


@dataclass
class _Seen:
    """What the masters that answered hold: topic name -> import fields, and subscription group names."""

    topics: dict[str, dict] = field(default_factory=dict)
    groups: set[str] = field(default_factory=set)


def sync_cluster(cluster: Cluster) -> SyncReport:
    """Rediscover the cluster's brokers, import unknown topics and groups as unowned, flag vanished entries missing
    and restore those that reappeared; record the outcome on the cluster (``last_synced_at`` only when complete,
    ``last_sync_error`` otherwise). Does nothing, with ``ran=False``, if the cluster is being synced already."""
    report = SyncReport(cluster=cluster.name)
    lease = _claim(cluster)
    if lease is None:
        report.ran = False
        logger.info("sync of cluster %s skipped: another sync is running", cluster.name)
        return report
    try:
        _sync(cluster, report)
    except BaseException as exc:
        report.errors.append(_("The sync stopped on an internal error: %(error)s") % {"error": exc})
        raise
    finally:
        _release(cluster, lease, report)
    if report.errors:
        logger.warning("sync of cluster %s incomplete: %s", cluster.name, "; ".join(report.errors))
    logger.info("sync of cluster %s: %s", cluster.name, report.counts())
    return report


def _claim(cluster: Cluster) -> datetime | None:
    """Take the cluster's sync lease with one conditional UPDATE; the claim time is the lease's token."""
    now = timezone.now()
    free = Q(sync_started_at__isnull=True) | Q(sync_started_at__lt=now - SYNC_LEASE)
    claimed = Cluster.objects.filter(free, pk=cluster.pk).update(sync_started_at=now)
    return now if claimed else None


def _release(cluster: Cluster, lease: datetime, report: SyncReport) -> None:
    fields = {"sync_started_at": None, "last_sync_error": "\n".join(report.errors)}
    if report.complete:
        fields["last_synced_at"] = timezone.now()
    # Only while the lease is still ours: had it expired and been taken over, the newer sync reports instead.
    if Cluster.objects.filter(pk=cluster.pk, sync_started_at=lease).update(**fields):
        for name, value in fields.items():
            setattr(cluster, name, value)


def _sync(cluster: Cluster, report: SyncReport) -> None:
    had_master = set(cluster.brokers.filter(present=True, broker_id=0).values_list("broker_name", flat=True))
    try:
        brokers = cluster_ops.discover_brokers(cluster)
    except cluster_ops.ClusterOperationError as exc:
        report.errors.append(str(exc))
        return
    brokers = [broker for broker in brokers if broker.present]
    report.brokers = len(brokers)
    masters = [broker for broker in brokers if broker.is_master]
    if not masters:  # a cluster whose brokers are all down has not lost its topics
        report.errors.append(_("The name servers list no master broker; nothing can be read."))
    headless = (had_master | {broker.broker_name for broker in brokers}) - {master.broker_name for master in masters}
    for broker_name in sorted(headless):
        report.errors.append(
            _("%(broker)s has no master listed by the name server; its topics and groups could not be read.")
            % {"broker": broker_name}
        )
    # The registry is read before the cluster: an entry an approval adds meanwhile is then neither flagged
    # (it is not in this snapshot) nor imported twice (the import ignores names that appeared since).
    registered_topics = _registered(Topic, cluster)
    registered_groups = _registered(ConsumerGroup, cluster)
    seen = _read_masters(cluster, masters, report)
    own_topics = _rocketmq_own_topics(cluster)
    topics = {name: fields for name, fields in seen.topics.items() if name not in own_topics}
    groups = {name: {} for name in seen.groups}
    _reconcile(Topic, cluster, registered_topics, topics, report, "topic")
    _reconcile(ConsumerGroup, cluster, registered_groups, groups, report, "group")
    report.subscribed_groups.extend(_import_subscriptions(cluster))


def _read_masters(cluster: Cluster, masters: list[Broker], report: SyncReport) -> _Seen:
    """Topic configs and subscription groups of every master; a master that fails is an error, not an empty one."""
    seen = _Seen()
    tables = cluster_ops.read_registry_tables(cluster, masters)
    if tables.ordered_error is not None:
        report.errors.append(
            _("The name servers' list of ordered topics could not be read: %(error)s") % {"error": tables.ordered_error}
        )
    for master in tables.masters:
        if master.error is not None:
            report.errors.append(
                _("%(broker)s (%(address)s) could not be read: %(error)s")
                % {"broker": master.broker.broker_name, "address": master.broker.address, "error": master.error}
            )
            continue
        for name, config in master.topics.items():
            if is_system_topic(name):
                continue
            queue_nums = max(config.read_queue_nums, config.write_queue_nums)
            known = seen.topics.setdefault(name, {"queue_nums": queue_nums, "ordered": name in tables.ordered_topics})
            known["queue_nums"] = max(known["queue_nums"], queue_nums)
            known["ordered"] = known["ordered"] or config.order
        seen.groups.update(name for name in master.groups if not is_system_group(name))
    return seen


def _rocketmq_own_topics(cluster: Cluster) -> set[str]:
    """Topics every broker creates for its cluster and broker names, and the cluster's trace topic."""
    names = {cluster.trace_topic}
    for cluster_name, broker_name in cluster.brokers.values_list("cluster_name", "broker_name"):
        names.update((cluster_name, broker_name, cluster_name + REPLY_TOPIC_SUFFIX))
    return names


def _registered(model, cluster: Cluster) -> dict[str, tuple[int, str]]:
    """name -> (pk, state) of every entry of this kind on the cluster, in one query."""
    rows = model.objects.filter(cluster=cluster).values_list("name", "pk", "state")
    return {name: (pk, state) for name, pk, state in rows}


def _reconcile(model, cluster, registered, found: dict[str, dict], report: SyncReport, kind: str) -> None:
    unknown = {name: fields for name, fields in found.items() if name not in registered}
    back = [pk for name, (pk, state) in registered.items() if state == RegistryState.MISSING and name in found]
    gone = [pk for name, (pk, state) in registered.items() if state == RegistryState.ACTIVE and name not in found]
    getattr(report, f"imported_{kind}s").extend(_import(model, cluster, unknown))
    getattr(report, f"restored_{kind}s").extend(_set_state(model, back, RegistryState.ACTIVE, cluster))
    if report.errors:
        return
    getattr(report, f"missing_{kind}s").extend(_set_state(model, gone, RegistryState.MISSING, cluster))


def _import(model, cluster: Cluster, unknown: dict[str, dict]) -> list[str]:
    """Create unowned entries for ``unknown`` (name -> fields) and audit each; returns the names imported."""
    if not unknown:
        return []
    names = sorted(unknown)
    action = f"{model._meta.model_name}.imported"
    with transaction.atomic():
        model.objects.bulk_create(
            [model(cluster=cluster, team=None, origin=Origin.IMPORTED, name=name, **unknown[name]) for name in names],
            batch_size=BATCH_SIZE,
            ignore_conflicts=True,  # a name an approval registered since the registry was read keeps that entry
        )
        imported = []
        for start in range(0, len(names), BATCH_SIZE):
            batch = audit.for_snapshots(
                model.objects.filter(
                    cluster=cluster, origin=Origin.IMPORTED, name__in=names[start : start + BATCH_SIZE]
                ).order_by("name")
            )
            audit.record_many(
                [audit.entry_for(None, action, entry, after=audit.snapshot(entry), cluster=cluster) for entry in batch]
            )
            imported.extend(entry.name for entry in batch)
    return imported


def _import_subscriptions(cluster: Cluster) -> list[str]:
    """Register, for each active imported group with no subscription, what its clients report they subscribe;
    audit each group changed. Returns the names of those groups."""
    groups = {
        group.name: group
        for group in ConsumerGroup.objects.filter(
            cluster=cluster, origin=Origin.IMPORTED, state=RegistryState.ACTIVE, subscriptions__isnull=True
        )
    }
    if not groups:
        return []
    minute, clients = latest_clients(cluster.pk, groups, timezone.now())
    topics = subscriptions.active_topics(cluster)
    found = {
        name: subscriptions.importable(subscriptions.compare({}, members, minute), topics)
        for name, members in clients.items()
    }
    imported = []
    names = sorted(name for name, subs in found.items() if subs)
    for start in range(0, len(names), BATCH_SIZE):
        pks = [groups[name].pk for name in names[start : start + BATCH_SIZE]]
        with transaction.atomic():
            # Locked, then checked again: a group given a subscription meanwhile keeps what it has.
            locked = set(ConsumerGroup.objects.select_for_update().filter(pk__in=pks).values_list("pk", flat=True))
            locked -= set(
                Subscription.objects.filter(consumer_group_id__in=locked).values_list("consumer_group_id", flat=True)
            )
            batch = [name for name in names[start : start + BATCH_SIZE] if groups[name].pk in locked]
            Subscription.objects.bulk_create(
                [
                    Subscription(consumer_group=groups[name], topic_id=topic_id, tag_expression=expression)
                    for name in batch
                    for topic_id, expression in sorted(found[name].items())
                ]
            )
            entries = audit.for_snapshots(ConsumerGroup.objects.filter(pk__in=locked).order_by("name"))
            audit.record_many(
                [
                    audit.entry_for(
                        None,
                        "consumergroup.subscriptions_imported",
                        entry,
                        before={**audit.snapshot(entry), "subscriptions": {}},
                        after=audit.snapshot(entry),
                        cluster=cluster,
                        note=_("Registered from what the group's clients report."),
                    )
                    for entry in entries
                ]
            )
            imported.extend(batch)
    return imported


def _set_state(model, pks: list[int], state: str, cluster: Cluster) -> list[str]:
    """Flag entries missing (since now) or restore them to active, auditing each; returns the names changed."""
    verb = "flagged_missing" if state == RegistryState.MISSING else "restored"
    action = f"{model._meta.model_name}.{verb}"
    now = timezone.now()
    changed = []
    for start in range(0, len(pks), BATCH_SIZE):
        with transaction.atomic():
            entries = list(
                audit.for_snapshots(
                    model.objects.select_for_update()
                    .filter(pk__in=pks[start : start + BATCH_SIZE])
                    .exclude(state=state)
                )
            )
            befores = [audit.snapshot(entry) for entry in entries]
            model.objects.filter(pk__in=[entry.pk for entry in entries]).update(
                state=state, missing_since=now if state == RegistryState.MISSING else None, updated_at=now
            )
            for entry in entries:
                entry.state = state
                entry.missing_since = now if state == RegistryState.MISSING else None
                entry.updated_at = now
            audit.record_many(
                [
                    audit.entry_for(None, action, entry, before=before, after=audit.snapshot(entry), cluster=cluster)
                    for entry, before in zip(entries, befores, strict=True)
                ]
            )
            changed.extend(entry.name for entry in entries)
    return sorted(changed)
