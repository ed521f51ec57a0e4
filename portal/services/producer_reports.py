"""Accepting producers' reports of their sends (the SDK's per-minute reports, ``monitor/sdk``), and answering the
SDK's startup question "is my producer group registered for this topic?".

A batch is checked whole before anything is stored, as every client report is (:mod:`portal.services.client_reports`:
the envelope, the group against the token's, minute, address, names, counts, exceptions, histograms); here: the
topic (registered on the cluster, and for the token's group) and the list of brokers, each with its count,
exceptions and latency histogram. A valid batch is stored in one transaction of upserts, so a batch sent again
changes nothing (:mod:`stats.store.producers`, and :mod:`stats.store.tracing` for the reports' trace counts).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.models import ProducerToken, Topic
from portal.services.client_reports import (
    MAX_BATCH_BYTES,
    MAX_NAME,
    MAX_REPORTS,
    MISSING,
    NAME_EXPECTED,
    ReportChecker,
    ReportsRejected,
    check_trace,
    fields_of,
    is_name,
    reports_of,
    trace_row,
)
from stats.models import ProducerMinute, TraceClientMinute
from stats.models.tracing import PRODUCER
from stats.store.producers import store_producer_minutes
from stats.store.tracing import store_trace_minutes

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_NAME",
    "MAX_REPORTS",
    "NAME_EXPECTED",
    "ReportsRejected",
    "accept",
    "is_name",
    "registration",
]

MAX_BROKERS = 256
REPORT_FIELDS = frozenset({"minute", "client_id", "client_addr", "producer_group", "topic", "brokers"})
BROKER_FIELDS = frozenset({"broker_name", "count", "exceptions", "histogram"})

# A checked broker entry: name, count, exceptions, histogram (serialized), max_ms (None without sends).
_Broker = tuple[str, int, dict[str, int], dict, float | None]


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
    reports = reports_of(body)
    checker = _BatchChecker(token.producer_group, now or timezone.now())
    rows = []
    for index, report in enumerate(reports):
        rows.extend(checker.check(index, report))
    checker.raise_problems()
    with transaction.atomic():
        store_producer_minutes(row for row in rows if isinstance(row, ProducerMinute))
        store_trace_minutes(row for row in rows if isinstance(row, TraceClientMinute))
    return len(reports)


class _BatchChecker(ReportChecker):
    group_field = "producer_group"
    unknown_group = gettext_lazy("Unknown producer group %(name)s.")
    foreign_group = gettext_lazy("This token reports for producer group %(group)s only, not for %(others)s.")
    count_mismatch = gettext_lazy("count is %(count)d but the histogram holds %(recorded)d sends.")
    too_many_failures = gettext_lazy("More exceptions than sends.")
    failures_expected = gettext_lazy(
        "Expected an object of exception class name (printable) -> number of sends from 1 to %(max)d."
    )

    def __init__(self, group, now: dt.datetime):
        super().__init__(group, now)
        self.group_topics = set(group.topics.values_list("name", flat=True))

    def check(self, index: int, report: Any) -> list[ProducerMinute | TraceClientMinute]:
        if not isinstance(report, dict):
            self.error(index, "non_field_errors", _("A report must be an object."))
            return []
        self.fields(index, report, fields_of(report, REPORT_FIELDS))
        minute = self.minute(index, report.get("minute", MISSING))
        client_id = self.name(index, "client_id", report.get("client_id", MISSING))
        client_addr = self.address(index, report.get("client_addr", MISSING))
        group = self.check_group(index, report.get("producer_group", MISSING))
        topic = self._topic(index, report.get("topic", MISSING))
        trace = check_trace(self, index, report.get("trace", MISSING))
        brokers = self._brokers(index, report.get("brokers", MISSING), allow_empty=trace is not None)
        if self.rejected(index):
            return []
        key = {"group": group, "topic": topic, "client_id": client_id, "client_addr": client_addr, "minute": minute}
        return trace_row(self, PRODUCER, trace, **key) + [
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

    def _topic(self, index: int, value: Any) -> str | None:
        topic = self.name(index, "topic", value)
        if topic is None or topic in self.group_topics:
            return topic
        if self.exists(Topic, topic):
            message = _("Topic %(topic)s is not registered for producer group %(group)s.")
        else:
            message = _("Unknown topic %(topic)s.")
        self.error(index, "topic", message % {"topic": topic, "group": self.group.name})
        return None

    def _brokers(self, index: int, value: Any, *, allow_empty: bool = False) -> list[_Broker]:
        """The broker entries; none only in a minute the client traced the topic without sending (the trace
        writer counted records of earlier sends)."""
        if value is MISSING:
            return []
        if not isinstance(value, list) or not (value or allow_empty) or len(value) > MAX_BROKERS:
            self.error(index, "brokers", _("Expected a list of 1 to %(max)d brokers.") % {"max": MAX_BROKERS})
            return []
        checked, names = [], set()
        for position, entry in enumerate(value):
            broker = self._broker(index, position, entry)
            if broker is None:
                continue
            if broker[0] in names:
                self.error(index, "broker_name", _("This broker is listed twice in the report."), position)
                continue
            names.add(broker[0])
            checked.append(broker)
        return checked

    def _broker(self, index: int, position: int, entry: Any) -> _Broker | None:
        if not isinstance(entry, dict):
            self.error(index, "non_field_errors", _("A broker entry must be an object."), position)
            return None
        ok = self.fields(index, entry, BROKER_FIELDS, position)
        name = self.name(index, "broker_name", entry.get("broker_name", MISSING), position)
        count = self.count(index, entry.get("count", MISSING), position)
        exceptions = self.exceptions(index, "exceptions", entry.get("exceptions", MISSING), position)
        checked = self.histogram(index, entry, count, exceptions, "exceptions", position)
        if not ok or name is None or checked is None:
            return None
        return name, count, exceptions, *checked
