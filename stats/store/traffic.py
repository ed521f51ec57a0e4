"""Writing one collected minute of a cluster, and deleting minutes (probes and offset events included) past
retention.

A minute is written whole: the cluster's and brokers' rows are upserted on (entity..., minute), and the per-entity
tables, which hold rows only for entities with something to report (see :mod:`stats.models.traffic`), have the
minute's earlier rows replaced by the new reading. Re-running a minute therefore leaves exactly one reading (the
latest) and never duplicates a row; offset events are keyed by where they are stored and kept once. The demo's
generated history (:func:`store_demo_history`) only fills minutes nothing was stored for.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db import models, transaction

from stats.models import (
    BlockedQueueMinute,
    BrokerMinute,
    BrokerProbe,
    ClientMinute,
    ClientQueueLagMinute,
    ClusterMinute,
    ConsumeMinute,
    ConsumerClientMinute,
    GroupMinute,
    NameServerProbe,
    OffsetMovedEvent,
    ProducerMinute,
    QueueLagMinute,
    TopicMinute,
    TraceClientMinute,
)
from stats.store.retention import delete_in_batches

# Rows per INSERT: few round trips, well under SQLite's bound-parameter limit for the widest table.
BATCH_SIZE = 500
_FIGURES = ["put_nums", "put_size", "get_nums", "get_size"]
# Every per-minute table (by the column retention goes by), the SDK's reports (stats.store.producers, consumers and
# tracing) included.
MINUTE_TABLES: tuple[tuple[type[models.Model], str], ...] = (
    (ClusterMinute, "minute"),
    (BrokerMinute, "minute"),
    (TopicMinute, "minute"),
    (ConsumeMinute, "minute"),
    (QueueLagMinute, "minute"),
    (ClientQueueLagMinute, "minute"),
    (GroupMinute, "minute"),
    (ClientMinute, "minute"),
    (BlockedQueueMinute, "minute"),
    (NameServerProbe, "minute"),
    (BrokerProbe, "minute"),
    (ProducerMinute, "minute"),
    (ConsumerClientMinute, "minute"),
    (TraceClientMinute, "minute"),
    (OffsetMovedEvent, "stored_at"),
)


@dataclass
class MinuteSamples:
    """Everything one collection of a cluster read, as unsaved rows of its minute."""

    cluster: ClusterMinute
    brokers: list[BrokerMinute] = field(default_factory=list)
    topics: list[TopicMinute] = field(default_factory=list)
    consumes: list[ConsumeMinute] = field(default_factory=list)
    queue_lags: list[QueueLagMinute] = field(default_factory=list)
    client_queue_lags: list[ClientQueueLagMinute] = field(default_factory=list)
    groups: list[GroupMinute] = field(default_factory=list)
    clients: list[ClientMinute] = field(default_factory=list)
    blocked: list[BlockedQueueMinute] = field(default_factory=list)
    events: list[OffsetMovedEvent] = field(default_factory=list)


def store_minute(samples: MinuteSamples) -> None:
    """Write one measured minute. Over a minute of the demo's generated history it replaces that minute whole (its
    broker rows too, which an upsert would otherwise keep beside the measured ones), so the two never mix."""
    cluster_id, minute = samples.cluster.cluster_id, samples.cluster.minute
    with transaction.atomic():
        if ClusterMinute.objects.filter(cluster_id=cluster_id, minute=minute, demo_history=True).exists():
            BrokerMinute.objects.filter(cluster_id=cluster_id, minute=minute).delete()
        ClusterMinute.objects.bulk_create(
            [samples.cluster],
            update_conflicts=True,
            unique_fields=["cluster_id", "minute"],
            update_fields=[*_FIGURES, "brokers", "brokers_down", "requests", "seconds", "demo_history"],
        )
        BrokerMinute.objects.bulk_create(
            samples.brokers,
            update_conflicts=True,
            unique_fields=["cluster_id", "broker_name", "broker_id", "minute"],
            update_fields=["up", *_FIGURES],
            batch_size=BATCH_SIZE,
        )
        for model, rows in (
            (TopicMinute, samples.topics),
            (ConsumeMinute, samples.consumes),
            (QueueLagMinute, samples.queue_lags),
            (ClientQueueLagMinute, samples.client_queue_lags),
            (GroupMinute, samples.groups),
            (ClientMinute, samples.clients),
            (BlockedQueueMinute, samples.blocked),
        ):
            model.objects.filter(cluster_id=cluster_id, minute=minute).delete()
            model.objects.bulk_create(rows, batch_size=BATCH_SIZE)
        OffsetMovedEvent.objects.bulk_create(samples.events, ignore_conflicts=True, batch_size=BATCH_SIZE)


def store_demo_history(batch: list[MinuteSamples]) -> int:
    """Insert minutes of the demo's generated history (``cluster.demo_history`` set; their cluster, broker, topic and
    consume rows: the rest of a minute is not generated), skipping every minute of a
    cluster that is already stored, measured or generated: generated history never overwrites, nor adds rows to,
    a stored minute, and writing the same history again adds nothing. Returns the minutes written."""
    if not batch:
        return 0
    with transaction.atomic():
        stored = set(
            ClusterMinute.objects.filter(
                cluster_id__in={samples.cluster.cluster_id for samples in batch},
                minute__gte=min(samples.cluster.minute for samples in batch),
                minute__lte=max(samples.cluster.minute for samples in batch),
            ).values_list("cluster_id", "minute")
        )
        new = [samples for samples in batch if (samples.cluster.cluster_id, samples.cluster.minute) not in stored]
        for samples in new:
            if not samples.cluster.demo_history:
                raise ValueError(f"{samples.cluster} is not marked as demo history")
            measured = (samples.queue_lags, samples.client_queue_lags, samples.groups, samples.clients)
            if any((*measured, samples.blocked, samples.events)):
                raise ValueError(f"{samples.cluster}: only cluster, broker, topic and consume rows are generated")
        ClusterMinute.objects.bulk_create([samples.cluster for samples in new], batch_size=BATCH_SIZE)
        for model, rows in (
            (BrokerMinute, [row for samples in new for row in samples.brokers]),
            (TopicMinute, [row for samples in new for row in samples.topics]),
            (ConsumeMinute, [row for samples in new for row in samples.consumes]),
        ):
            model.objects.bulk_create(rows, batch_size=BATCH_SIZE)
    return len(new)


def delete_expired(cutoff: dt.datetime, *, batch_size: int, max_batches: int) -> int:
    """Delete per-minute rows older than ``cutoff`` in bounded batches (see
    :func:`stats.store.retention.delete_in_batches`); returns the number of rows deleted."""
    expired = (model.objects.filter(**{f"{column}__lt": cutoff}) for model, column in MINUTE_TABLES)
    return delete_in_batches(expired, batch_size=batch_size, max_batches=max_batches)
