"""What checking the SDK's per-minute reports has in common, for producers (:mod:`portal.services.producer_reports`)
and consumers (:mod:`portal.services.consumer_reports`): the batch envelope, and per report its fields and types
(unknown fields too), the group (the token's own: a report for another group of the cluster is refused whole with
:class:`PermissionDenied`, an unknown one is a field error), the minute (a whole UTC minute, at most
:data:`FUTURE_TOLERANCE` ahead, not older than ``MINUTE_RETENTION_DAYS``), the client's address, names (printable,
:func:`portal.inputs.is_printable`: PostgreSQL stores no NUL), counts that fit a ``bigint``
(:data:`stats.histogram.MAX_COUNT`), exceptions by class, and a histogram (:meth:`Histogram.from_dict`) whose count
is the report's. A batch is checked whole before anything is stored; errors are keyed by report index and field
(:class:`ReportsRejected`). The trace counts a report may carry (``trace``: written, dropped, failed) are checked
here too and kept as :class:`stats.models.TraceClientMinute` rows beside the report's own.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.inputs import is_printable
from stats.histogram import MAX_COUNT, Histogram
from stats.models import TraceClientMinute

MAX_REPORTS = 1000
# The largest body the endpoints read: 1000 reports of 8 brokers with wide latency spreads are about 30 MB.
MAX_BATCH_BYTES = 64 * 1024 * 1024
MAX_NAME = 255
MAX_EXCEPTION_NAME = 255
FUTURE_TOLERANCE = dt.timedelta(minutes=2)
MISSING = object()  # a field left out, already reported as required (unlike an explicit null, which is malformed)
NAME_EXPECTED = gettext_lazy(
    "Expected a non-empty name of at most %(max)d printable characters, without spaces around it."
)


class ReportsRejected(Exception):
    """The batch is malformed; ``errors`` is the JSON-able answer: ``{"reports": [...]}`` for the batch itself, or
    ``{"reports": {"<index>": {"<field>": [...], ...}}}``."""

    def __init__(self, errors: dict):
        super().__init__(errors)
        self.errors = errors


def reports_of(body: Any) -> list:
    """The list of reports of a batch ``{"reports": [...]}``, or :class:`ReportsRejected` for any other body."""
    if not isinstance(body, dict) or set(body) != {"reports"}:
        raise ReportsRejected({"reports": [_('The body must be a JSON object {"reports": [...]} and nothing else.')]})
    reports = body["reports"]
    if not isinstance(reports, list) or not reports or len(reports) > MAX_REPORTS:
        raise ReportsRejected({"reports": [_("Send a list of 1 to %(max)d reports.") % {"max": MAX_REPORTS}]})
    return reports


class ReportChecker:
    """Checks the reports of one batch sent with a token of ``group`` (a ProducerGroup or ConsumerGroup, whose
    model also answers whether a name is a group of the cluster). Subclasses check their own fields with the
    helpers below and call :meth:`check_group` with the report's group name."""

    group_field = ""  # the report's field naming the group
    # The words of the errors that name the kind of group or of count (translatable, with the placeholders shown).
    unknown_group = gettext_lazy("Unknown group %(name)s.")
    foreign_group = gettext_lazy("This token reports for group %(group)s only, not for %(others)s.")
    count_mismatch = gettext_lazy("count is %(count)d but the histogram holds %(recorded)d values.")
    too_many_failures = gettext_lazy("More failures than the count.")
    failures_expected = gettext_lazy(
        "Expected an object of exception class name (printable) -> number from 1 to %(max)d."
    )

    def __init__(self, group, now: dt.datetime):
        self.group = group
        self.cluster_id = group.cluster_id
        self.now = now
        self.oldest = now - dt.timedelta(days=settings.MINUTE_RETENTION_DAYS)
        self.errors: dict[str, dict] = {}
        self.foreign: dict[int, str] = {}  # report index -> a group other than the token's
        self._known: dict[tuple[type, str], bool] = {}

    def raise_problems(self) -> None:
        if self.foreign:
            group_model = type(self.group)
            known = {index: name for index, name in self.foreign.items() if self.exists(group_model, name)}
            for index, name in self.foreign.items():
                if index not in known:
                    self.error(index, self.group_field, self.unknown_group % {"name": name})
            if known:
                raise PermissionDenied(
                    self.foreign_group % {"group": self.group.name, "others": ", ".join(sorted(set(known.values())))}
                )
        if self.errors:
            raise ReportsRejected({"reports": self.errors})

    def rejected(self, index: int) -> bool:
        return str(index) in self.errors or index in self.foreign

    # --- fields ---------------------------------------------------------------------------------------------------

    def fields(self, index: int, report: dict, expected: frozenset[str], broker: int | None = None) -> bool:
        """Whether ``report`` has exactly the ``expected`` fields (errors recorded otherwise)."""
        ok = True
        for field in sorted(expected - set(report)):
            self.error(index, field, _("This field is required."), broker)
            ok = False
        for field in sorted(set(report) - expected):
            self.error(index, field, _("Unknown field."), broker)
            ok = False
        return ok

    def error(self, index: int, field: str, message: str, broker: int | None = None) -> None:
        errors = self.errors.setdefault(str(index), {})
        if broker is not None:
            errors = errors.setdefault("brokers", {}).setdefault(str(broker), {})
        errors.setdefault(field, []).append(message)

    def exists(self, model: type, name: str) -> bool:
        key = (model, name)
        if key not in self._known:
            self._known[key] = model.objects.filter(cluster_id=self.cluster_id, name=name).exists()
        return self._known[key]

    def check_group(self, index: int, value: Any) -> str | None:
        group = self.name(index, self.group_field, value)
        if group is not None and group != self.group.name:
            self.foreign[index] = group
        return group

    def name(self, index: int, field: str, value: Any, broker: int | None = None) -> str | None:
        if value is MISSING:
            return None
        if not is_name(value):
            self.error(index, field, NAME_EXPECTED % {"max": MAX_NAME}, broker)
            return None
        return value

    def minute(self, index: int, value: Any) -> dt.datetime | None:
        if value is MISSING:
            return None
        try:
            if not isinstance(value, str):
                raise ValueError
            minute = dt.datetime.fromisoformat(value)
        except ValueError:
            self.error(index, "minute", _("Expected a UTC time such as 2026-11-22T07:15:00Z."))
            return None
        if minute.tzinfo is None or minute.second or minute.microsecond:
            self.error(index, "minute", _("Expected a whole minute with its time zone, such as 2026-11-22T07:15:00Z."))
            return None
        # Compared before it is converted: year 9999 at UTC-14 or year 1 at UTC+14 has no UTC datetime.
        if minute > self.now + FUTURE_TOLERANCE:
            self.error(index, "minute", _("This minute is in the future."))
            return None
        if minute < self.oldest:
            self.error(
                index,
                "minute",
                _("This minute is older than the %(days)d days minute data is kept.")
                % {"days": settings.MINUTE_RETENTION_DAYS},
            )
            return None
        return minute.astimezone(dt.UTC)

    def address(self, index: int, value: Any) -> str | None:
        if value is MISSING:
            return None
        try:
            if not isinstance(value, str):
                raise ValueError
            return str(ipaddress.ip_address(value))
        except ValueError:
            self.error(index, "client_addr", _("Expected the client's IP address."))
            return None

    def count(self, index: int, value: Any, broker: int | None = None) -> int | None:
        if value is MISSING:
            return None
        if not is_count(value):
            self.error(index, "count", _("Expected a whole number from 0 to %(max)d.") % {"max": MAX_COUNT}, broker)
            return None
        return value

    def exceptions(self, index: int, field: str, value: Any, broker: int | None = None) -> dict[str, int] | None:
        if value is MISSING:
            return None
        if not isinstance(value, dict) or not all(
            is_name(name, MAX_EXCEPTION_NAME) and is_count(n) and n > 0 for name, n in value.items()
        ):
            self.error(
                index,
                field,
                self.failures_expected % {"max": MAX_COUNT},
                broker,
            )
            return None
        return value

    def histogram(
        self, index: int, entry: dict, count: int | None, exceptions: dict | None, field: str, broker: int | None = None
    ) -> tuple[dict, float | None] | None:
        """The entry's histogram as sent and its maximum (None without any), once it is proved well formed, holding
        ``count`` values and no fewer than the ``exceptions`` (reported under ``field``)."""
        try:
            histogram = Histogram.from_dict(entry["histogram"]) if "histogram" in entry else None
        except ValueError as error:
            self.error(index, "histogram", str(error), broker)
            return None
        if histogram is None or count is None or exceptions is None:
            return None
        if histogram.count != count:
            self.error(
                index,
                "count",
                self.count_mismatch % {"count": count, "recorded": histogram.count},
                broker,
            )
            return None
        if sum(exceptions.values()) > count:
            self.error(index, field, str(self.too_many_failures), broker)
            return None
        # The histogram is stored as sent: from_dict proved it is exactly the serialized form.
        return entry["histogram"], histogram.max_ms if histogram.count else None


TRACE_FIELD = "trace"
TRACE_COUNTS = frozenset({"written", "dropped", "failed"})


def fields_of(report: dict, required: frozenset[str]) -> frozenset[str]:
    """The fields a report must have: ``required``, and ``trace`` when it has one (SDK 1.2 adds it to the minutes
    a client traced the topic in; older clients leave it out)."""
    return required | {TRACE_FIELD} if TRACE_FIELD in report else required


def trace_row(checker: ReportChecker, role: str, counts: dict[str, int] | None, **key) -> list[TraceClientMinute]:
    """A checked report's trace counts as the :class:`TraceClientMinute` of ``role`` (a one-item list; none without
    trace counts); ``key`` holds the report's checked group, topic, client_id, client_addr and minute."""
    if counts is None:
        return []
    return [TraceClientMinute(cluster_id=checker.cluster_id, role=role, updated_at=checker.now, **key, **counts)]


def check_trace(checker: ReportChecker, index: int, value: Any) -> dict[str, int] | None:
    """A report's trace counts: an object of exactly written, dropped and failed, each a count; None if absent."""
    if value is MISSING:
        return None
    if not isinstance(value, dict) or set(value) != TRACE_COUNTS or not all(is_count(n) for n in value.values()):
        checker.error(
            index,
            TRACE_FIELD,
            _("Expected an object of written, dropped and failed, each a whole number from 0 to %(max)d.")
            % {"max": MAX_COUNT},
        )
        return None
    return value


def is_name(value: Any, max_length: int = MAX_NAME) -> bool:
    """Whether a reported name (or a query's topic) is one the tables can store and show."""
    return isinstance(value, str) and 0 < len(value) <= max_length and value == value.strip() and is_printable(value)


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
