"""Writing producers' reports: one upsert per batch, keyed by (cluster_id, producer_group, topic, client_id,
broker_name, minute), so a report sent again replaces its rows instead of adding to them. Retention deletes these
rows with the other minute tables (:data:`stats.store.traffic.MINUTE_TABLES`)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from stats.models import ProducerMinute

KEY = ["cluster_id", "producer_group", "topic", "client_id", "broker_name", "minute"]
VALUES = ["client_addr", "count", "exception_count", "exceptions", "histogram", "max_ms", "updated_at"]
# Rows per INSERT: 13 columns stay well under SQLite's bound-parameter limit.
BATCH_SIZE = 500


def store_producer_minutes(rows: Iterable[ProducerMinute]) -> int:
    """Upsert the rows (unsaved, ``updated_at`` set) all or nothing; of rows with the same key the last wins.
    Returns how many distinct rows were written."""
    unique = {tuple(getattr(row, name) for name in KEY): row for row in rows}
    with transaction.atomic():
        ProducerMinute.objects.bulk_create(
            list(unique.values()),
            update_conflicts=True,
            unique_fields=KEY,
            update_fields=VALUES,
            batch_size=BATCH_SIZE,
        )
    return len(unique)
