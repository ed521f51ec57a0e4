"""Load: THE one writer of Spark results into the database.

A job's results replace its window as a whole: within one transaction, every row of the window is deleted from
each result table and the new rows are inserted. A re-run of a window therefore changes nothing (or corrects it),
never doubles it, and a run that dies while loading leaves the previous rows untouched (the transaction rolls
back). Results arrive already computed (Arrow tables collected from Spark), so the transaction holds the database
only for the writing itself, never while Spark computes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction

# Rows per executemany() call.
BATCH_ROWS = 2000

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Replacement:
    """The rows ``window`` selects in ``model`` are replaced by ``rows`` (columns named as the model's fields)."""

    model: type[models.Model]
    window: models.Q
    rows: pa.Table


def replace_windows(replacements: Sequence[Replacement], *, progress: Progress | None = None) -> int:
    """Apply the replacements in one transaction; returns the rows inserted."""
    total = sum(replacement.rows.num_rows for replacement in replacements)
    written = 0
    with transaction.atomic():
        for replacement in replacements:
            replacement.model.objects.filter(replacement.window).delete()
        for replacement in replacements:
            insert, columns = _insert(replacement.model, replacement.rows.schema.names)
            with connection.cursor() as cursor:
                for batch in replacement.rows.to_batches(max_chunksize=BATCH_ROWS):
                    if progress is not None:
                        progress(written, total, f"load {replacement.model._meta.db_table}")
                    values = [
                        _prepared(prepare, batch.column(name).to_pylist(maps_as_pydicts="strict"))
                        for prepare, name in zip(columns, batch.schema.names, strict=True)
                    ]
                    cursor.executemany(insert, list(zip(*values, strict=True)))
                    written += batch.num_rows
    return written


def _insert(model: type[models.Model], names: list[str]) -> tuple[str, list[Callable | None]]:
    """The INSERT statement for the columns ``names`` (model field names), and per column how an Arrow value
    becomes what the database stores (None: as it is). Values go through the same conversions ``Model.save`` uses
    (aware datetimes, JSON), without building model instances, which would cost more than the writing itself."""
    fields = [model._meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    statement = (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    return statement, [_preparer(field) for field in fields]


def _preparer(field: models.Field) -> Callable | None:
    database = connections[DEFAULT_DB_ALIAS]
    if isinstance(field, models.JSONField):
        return lambda value: field.get_db_prep_save(json.loads(value) if isinstance(value, str) else value, database)
    if isinstance(field, models.DateTimeField):
        return database.ops.adapt_datetimefield_value
    # Numbers, strings and booleans arrive as the Python values the database driver takes.
    return None


def _prepared(prepare: Callable | None, values: list) -> list:
    return values if prepare is None else [None if value is None else prepare(value) for value in values]
