"""What every fuzzed request must satisfy, whatever it sent: an answer below 500, no error or traceback in the logs,
and, when the answer is a refusal (4xx), not one row of the registry, the statistics or the accounts changed -
but for two records kept by design: when a credential was last used, and a failed approval's error and audit entry."""

import logging
import traceback
from contextlib import contextmanager
from dataclasses import dataclass

from django.apps import apps
from django.db import connection

# The tables a refused request must leave as they were: the portal's, the statistics', users and API tokens.
WATCHED_APPS = ("portal", "stats", "auth", "authtoken")


def watched_models() -> list:
    return [
        model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.app_label in WATCHED_APPS and not model._meta.proxy
    ]


def fingerprint() -> dict[str, tuple]:
    """Every row of the watched tables (the fixture world is small): a refused write must leave this unchanged."""
    return {model._meta.label: _judged_rows(model) for model in watched_models()}


# When a credential was last used is written when it authenticates, before the request it came with is judged: a
# refused request may move it (a producer token's last use, a user's last login).
CREDENTIAL_USE_COLUMNS = frozenset({"last_used_at", "last_login"})


# A refusal that is recorded by design: an approval the cluster or a re-check refused keeps its error on the
# application and audits the attempt (portal/services/applications/workflow.py), so the next try knows why.
FAILURE_RECORD_COLUMNS = {"portal.Application": frozenset({"last_error", "updated_at"})}
FAILURE_RECORD_ACTIONS = ("application.approval_failed",)


def _judged_rows(model) -> tuple:
    skipped = CREDENTIAL_USE_COLUMNS | FAILURE_RECORD_COLUMNS.get(model._meta.label, frozenset())
    rows = model._base_manager.order_by("pk")
    if model._meta.label == "portal.AuditEntry":
        rows = rows.exclude(action__in=FAILURE_RECORD_ACTIONS)
    return tuple(rows.values_list(*[f.attname for f in model._meta.concrete_fields if f.attname not in skipped]))


def row_counts() -> dict[str, int]:
    """How many rows each watched table holds, in one query (a refused read is checked with this, cheaply)."""
    models = watched_models()
    quote = connection.ops.quote_name
    union = " UNION ALL ".join(f"SELECT %s, COUNT(*) FROM {quote(model._meta.db_table)}" for model in models)
    with connection.cursor() as cursor:
        cursor.execute(union, [model._meta.label for model in models])
        return dict(cursor.fetchall())


@dataclass(frozen=True)
class Baseline:
    """The world as every example starts from it (each example is rolled back)."""

    rows: dict[str, tuple]
    counts: dict[str, int]

    @classmethod
    def now(cls) -> "Baseline":
        return cls(fingerprint(), row_counts())


def changed_tables(before: dict[str, tuple], after: dict[str, tuple]) -> dict[str, str]:
    return {
        label: f"{len(before[label])} -> {len(after[label])} rows" for label in before if before[label] != after[label]
    }


class _Collector(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


@contextmanager
def logged_errors():
    """Collects the ERROR records and the records with a traceback logged meanwhile (``django.request``'s 500
    included: it propagates to the root logger)."""
    collector = _Collector()
    root = logging.getLogger()
    root.addHandler(collector)
    try:
        yield collector.records
    finally:
        root.removeHandler(collector)


def is_django_note_of_a_refusal(record: logging.LogRecord, status: int) -> bool:
    """Django's own record of a request it refused: ``django.request`` logs every 4xx as a WARNING (a 403 and an
    unparseable body with the exception it answered), ``django.security`` a suspicious request answered 400. These
    are the refusals working, not tracebacks of the project's code."""
    if not 400 <= status < 500:
        return False
    if record.name == "django.request":
        return record.levelno < logging.ERROR
    return record.name.startswith("django.security.") and status == 400


def describe_log(record: logging.LogRecord) -> str:
    text = f"{record.name} {record.levelname}: {record.getMessage()[:300]}"
    if record.exc_info:
        text += "\n" + "".join(traceback.format_exception(*record.exc_info)[-6:])
    return text


UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def problems(method: str, response, errors: list[logging.LogRecord], before: Baseline) -> list[str]:
    """What is wrong with one answer (empty: nothing). A refused write is compared row by row with the world, a
    refused read by row counts."""
    found = []
    if not 200 <= response.status_code < 500:
        found.append(f"status {response.status_code}")
        if getattr(response, "exc_info", None):
            found.append("".join(traceback.format_exception(*response.exc_info)[-8:]))
    found.extend(
        describe_log(record) for record in errors if not is_django_note_of_a_refusal(record, response.status_code)
    )
    if 400 <= response.status_code < 500:
        if method in UNSAFE_METHODS:
            changed = changed_tables(before.rows, fingerprint())
        else:
            counts = row_counts()
            changed = {
                table: f"{before.counts[table]} -> {n} rows" for table, n in counts.items() if n != before.counts[table]
            }
        if changed:
            found.append(f"a refused request ({response.status_code}) changed rows: {changed}")
    return found
