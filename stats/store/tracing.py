"""Writing the trace counts of the SDK's reports: one upsert per batch, keyed by (cluster_id, role, group, topic,
client_id, minute), so a report sent again replaces its row instead of adding to it. Retention deletes these rows
with the other minute tables (:data:`stats.store.traffic.MINUTE_TABLES`)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from stats.models import TraceClientMinute

KEY = ["cluster_id", "role", "group", "topic", "client_id", "minute"]
VALUES = ["client_addr", "written", "dropped", "failed", "updated_at"]
BATCH_SIZE = 500  # 11 columns: well under SQLite's bound-parameter limit


def store_trace_minutes(rows: Iterable[TraceClientMinute]) -> int:
    """Upsert the rows (unsaved, ``updated_at`` set) all or nothing; of rows with the same key the last wins.
    Returns how many distinct rows were written."""
    unique = {tuple(getattr(row, name) for name in KEY): row for row in rows}
    with transaction.atomic():
        TraceClientMinute.objects.bulk_create(
            list(unique.values()),
            update_conflicts=True,
            unique_fields=KEY,
            update_fields=VALUES,
            batch_size=BATCH_SIZE,
        )
    return len(unique)
