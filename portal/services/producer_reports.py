"""Accepting producers' reports of their sends (the SDK's per-minute reports, ``monitor/sdk``), and answering the
SDK's startup question "is my producer group registered for this topic?".

A batch is checked whole before anything is stored: a report for another producer group than the token's is
refused (:class:`PermissionDenied`, or a field error when no such group exists on the token's cluster), and any
malformed report refuses the whole batch with errors keyed by report index and field (:class:`ReportsRejected`).
What is checked: the fields and their types (unknown fields too), the topic (registered on the cluster, and for the
token's group), the minute (a whole UTC minute, at most :data:`FUTURE_TOLERANCE` ahead, not older than
``MINUTE_RETENTION_DAYS``), and per broker the histogram (:meth:`stats.histogram.Histogram.from_dict`), its count
against the report's ``count``, and the exceptions against that count. Names (client id, group, topic, broker,
exception classes) must be printable (:func:`portal.inputs.is_printable`: PostgreSQL stores no NUL) and counts fit
the tables' ``bigint`` (:data:`stats.histogram.MAX_COUNT`). A valid batch is stored in one upsert, so a batch sent
again changes nothing (:mod:`stats.store.producers`).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.inputs import is_printable
from portal.models import ProducerGroup, ProducerToken, Topic
from stats.histogram import MAX_COUNT, Histogram
from stats.models import ProducerMinute
from stats.store.producers import store_producer_minutes

MAX_REPORTS = 1000
# The largest body the endpoint reads: 1000 reports of 8 brokers with wide latency spreads are about 30 MB.
MAX_BATCH_BYTES = 64 * 1024 * 1024
MAX_BROKERS = 256
MAX_NAME = 255
MAX_EXCEPTION_NAME = 255
FUTURE_TOLERANCE = dt.timedelta(minutes=2)
REPORT_FIELDS = frozenset({"minute", "client_id", "client_addr", "producer_group", "topic", "brokers"})
BROKER_FIELDS = frozenset({"broker_name", "count", "exceptions", "histogram"})
MISSING = object()  # a field left out, already reported as required (unlike an explicit null, which is malformed)
NAME_EXPECTED = gettext_lazy(
    "Expected a non-empty name of at most %(max)d printable characters, without spaces around it."
)


# A checked broker entry: name, count, exceptions, histogram (serialized), max_ms (None without sends).
_Broker = tuple[str, int, dict[str, int], dict, float | None]


class ReportsRejected(Exception):
    """The batch is malformed; ``errors`` is the JSON-able answer: ``{"reports": [...]}`` for the batch itself, or
    ``{"reports": {"<index>": {"<field>": [...], "brokers": {"<index>": {"<field>": [...]}}}}}``."""

    def __init__(self, errors: dict):
        super().__init__(errors)
        self.errors = errors


def registration(token: ProducerToken, topic: str) -> dict:
    """Whether the token's producer group is registered for ``topic`` (the SDK warns at startup if not)."""
    group = token.producer_group
    return {
        "registered": group.topics.filter(name=topic).exists(),
        "producer_group": group.name,
        "topic": topic,
    }


def accept(token: ProducerToken, body: Any, *, now: dt.datetime | None = None) -> int:
    """Validate a batch ``{"reports": [...]}`` sent with ``token`` and store it; returns the number of reports."""
    now = now or timezone.now()
    if not isinstance(body, dict) or set(body) != {"reports"}:
        raise ReportsRejected({"reports": [_('The body must be a JSON object {"reports": [...]} and nothing else.')]})
    reports = body["reports"]
    if not isinstance(reports, list) or not reports or len(reports) > MAX_REPORTS:
        raise ReportsRejected({"reports": [_("Send a list of 1 to %(max)d reports.") % {"max": MAX_REPORTS}]})
    checker = _BatchChecker(token, now)
    rows = []
    for index, report in enumerate(reports):
        rows.extend(checker.check(index, report))
    checker.raise_problems()
    store_producer_minutes(rows)
    return len(reports)


class _BatchChecker:
    def __init__(self, token: ProducerToken, now: dt.datetime):
        self.group = token.producer_group
        self.cluster_id = self.group.cluster_id
        self.now = now
        self.oldest = now - dt.timedelta(days=settings.MINUTE_RETENTION_DAYS)
        self.group_topics = set(self.group.topics.values_list("name", flat=True))
        self.errors: dict[str, dict] = {}
        self.foreign: dict[int, str] = {}  # report index -> a group other than the token's
        self._known: dict[tuple[type, str], bool] = {}

    def raise_problems(self) -> None:
        if self.foreign:
            known = {index: name for index, name in self.foreign.items() if self._exists(ProducerGroup, name)}
            for index, name in self.foreign.items():
                if index not in known:
                    self._error(index, "producer_group", _("Unknown producer group %(name)s.") % {"name": name})
            if known:
                raise PermissionDenied(
                    _("This token reports for producer group %(group)s only, not for %(others)s.")
                    % {"group": self.group.name, "others": ", ".join(sorted(set(known.values())))}
                )
        if self.errors:
            raise ReportsRejected({"reports": self.errors})

    def check(self, index: int, report: Any) -> list[ProducerMinute]:
        if not isinstance(report, dict):
            self._error(index, "non_field_errors", _("A report must be an object."))
            return []
        for field in sorted(REPORT_FIELDS - set(report)):
            self._error(index, field, _("This field is required."))
        for field in sorted(set(report) - REPORT_FIELDS):
            self._error(index, field, _("Unknown field."))
        minute = self._minute(index, report.get("minute", MISSING))
        client_id = self._name(index, "client_id", report.get("client_id", MISSING))
        client_addr = self._address(index, report.get("client_addr", MISSING))
        group = self._name(index, "producer_group", report.get("producer_group", MISSING))
        if group is not None and group != self.group.name:
            self.foreign[index] = group
        topic = self._topic(index, report.get("topic", MISSING))
        brokers = self._brokers(index, report.get("brokers", MISSING))
        if str(index) in self.errors or index in self.foreign:
            return []
        return [
            ProducerMinute(
                cluster_id=self.cluster_id,
                producer_group=group,
                topic=topic,
                client_id=client_id,
                client_addr=client_addr,
                broker_name=name,
                minute=minute,
                count=count,
                exception_count=sum(exceptions.values()),
                exceptions=exceptions,
                histogram=histogram,
                max_ms=max_ms,
                updated_at=self.now,
            )
            for name, count, exceptions, histogram, max_ms in brokers
        ]

    # --- fields ---------------------------------------------------------------------------------------------------

    def _error(self, index: int, field: str, message: str, broker: int | None = None) -> None:
        errors = self.errors.setdefault(str(index), {})
        if broker is not None:
            errors = errors.setdefault("brokers", {}).setdefault(str(broker), {})
        errors.setdefault(field, []).append(message)

    def _exists(self, model: type, name: str) -> bool:
        key = (model, name)
        if key not in self._known:
            self._known[key] = model.objects.filter(cluster_id=self.cluster_id, name=name).exists()
        return self._known[key]

    def _name(self, index: int, field: str, value: Any, broker: int | None = None) -> str | None:
        if value is MISSING:
            return None
        if not is_name(value):
            self._error(index, field, NAME_EXPECTED % {"max": MAX_NAME}, broker)
            return None
        return value

    def _minute(self, index: int, value: Any) -> dt.datetime | None:
        if value is MISSING:
            return None
        try:
            if not isinstance(value, str):
                raise ValueError
            minute = dt.datetime.fromisoformat(value)
        except ValueError:
            self._error(index, "minute", _("Expected a UTC time such as 2026-11-22T07:15:00Z."))
            return None
        if minute.tzinfo is None or minute.second or minute.microsecond:
            self._error(index, "minute", _("Expected a whole minute with its time zone, such as 2026-11-22T07:15:00Z."))
            return None
        # Compared before it is converted: year 9999 at UTC-14 or year 1 at UTC+14 has no UTC datetime.
        if minute > self.now + FUTURE_TOLERANCE:
            self._error(index, "minute", _("This minute is in the future."))
            return None
        if minute < self.oldest:
            self._error(
                index,
                "minute",
                _("This minute is older than the %(days)d days minute data is kept.")
                % {"days": settings.MINUTE_RETENTION_DAYS},
            )
            return None
        return minute.astimezone(dt.UTC)

    def _address(self, index: int, value: Any) -> str | None:
        if value is MISSING:
            return None
        try:
            if not isinstance(value, str):
                raise ValueError
            return str(ipaddress.ip_address(value))
        except ValueError:
            self._error(index, "client_addr", _("Expected the client's IP address."))
            return None

    def _topic(self, index: int, value: Any) -> str | None:
        topic = self._name(index, "topic", value)
        if topic is None or topic in self.group_topics:
            return topic
        if self._exists(Topic, topic):
            message = _("Topic %(topic)s is not registered for producer group %(group)s.")
        else:
            message = _("Unknown topic %(topic)s.")
        self._error(index, "topic", message % {"topic": topic, "group": self.group.name})
        return None

    def _brokers(self, index: int, value: Any) -> list[_Broker]:
        if value is MISSING:
            return []
        if not isinstance(value, list) or not value or len(value) > MAX_BROKERS:
            self._error(index, "brokers", _("Expected a list of 1 to %(max)d brokers.") % {"max": MAX_BROKERS})
            return []
        checked, names = [], set()
        for position, entry in enumerate(value):
            broker = self._broker(index, position, entry)
            if broker is None:
                continue
            if broker[0] in names:
                self._error(index, "broker_name", _("This broker is listed twice in the report."), position)
                continue
            names.add(broker[0])
            checked.append(broker)
        return checked

    def _broker(self, index: int, position: int, entry: Any) -> _Broker | None:
        if not isinstance(entry, dict):
            self._error(index, "non_field_errors", _("A broker entry must be an object."), position)
            return None
        ok = True
        for field in sorted(BROKER_FIELDS - set(entry)):
            self._error(index, field, _("This field is required."), position)
            ok = False
        for field in sorted(set(entry) - BROKER_FIELDS):
            self._error(index, field, _("Unknown field."), position)
            ok = False
        name = self._name(index, "broker_name", entry.get("broker_name", MISSING), position)
        count = entry.get("count", MISSING)
        if count is MISSING:
            count = None
        elif not _is_count(count):
            self._error(index, "count", _("Expected a whole number from 0 to %(max)d.") % {"max": MAX_COUNT}, position)
            count = None
        exceptions = self._exceptions(index, position, entry.get("exceptions", MISSING))
        try:
            histogram = Histogram.from_dict(entry["histogram"]) if "histogram" in entry else None
        except ValueError as error:
            self._error(index, "histogram", str(error), position)
            histogram = None
        if not ok or name is None or count is None or exceptions is None or histogram is None:
            return None
        if histogram.count != count:
            self._error(
                index,
                "count",
                _("count is %(count)d but the histogram holds %(recorded)d sends.")
                % {"count": count, "recorded": histogram.count},
                position,
            )
            return None
        if sum(exceptions.values()) > count:
            self._error(index, "exceptions", _("More exceptions than sends."), position)
            return None
        # The histogram is stored as sent: from_dict proved it is exactly the serialized form.
        return name, count, exceptions, entry["histogram"], histogram.max_ms if histogram.count else None

    def _exceptions(self, index: int, position: int, value: Any) -> dict[str, int] | None:
        if value is MISSING:
            return None
        if not isinstance(value, dict) or not all(
            is_name(name, MAX_EXCEPTION_NAME) and _is_count(n) and n > 0 for name, n in value.items()
        ):
            self._error(
                index,
                "exceptions",
                _("Expected an object of exception class name (printable) -> number of sends from 1 to %(max)d.")
                % {"max": MAX_COUNT},
                position,
            )
            return None
        return value


def is_name(value: Any, max_length: int = MAX_NAME) -> bool:
    """Whether a reported name (or the registration check's topic) is one the tables can store and show."""
    return isinstance(value, str) and 0 < len(value) <= max_length and value == value.strip() and is_printable(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
